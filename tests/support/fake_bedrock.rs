//! A fake Amazon Bedrock Runtime speaking the Converse REST JSON protocol
//! (`POST /model/{modelId}/converse`), so the real `aws-sdk-bedrockruntime`
//! client is what the tests exercise. Each test scripts the replies in
//! order and reads back the requests the client sent.
//!
//! Errors are sent as AWS's restJson1 protocol sends them: the HTTP status,
//! an `x-amzn-ErrorType` header and a `{"message": …}` body.

use crate::local_server::LocalServer;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

pub const TEXT_REPLY: &str = include_str!("../fixtures/bedrock/converse-text.json");
pub const TOOL_USE_REPLY: &str = include_str!("../fixtures/bedrock/converse-tool-use.json");
pub const GUARDRAIL_REPLY: &str = include_str!("../fixtures/bedrock/converse-guardrail.json");

/// One scripted answer to one Converse call.
#[derive(Debug, Clone)]
pub enum Scripted {
    /// 200 with this Converse response body.
    Reply(Value),
    /// An AWS error: status, `x-amzn-ErrorType`, message.
    Error { status: u16, error_type: &'static str, message: &'static str },
    /// Whatever bytes, with this status (malformed output).
    Raw { status: u16, body: &'static str },
}

impl Scripted {
    pub fn fixture(json: &str) -> Self {
        Scripted::Reply(serde_json::from_str(json).expect("fixture is JSON"))
    }

    /// The captured text reply, saying `text` instead.
    pub fn text(text: &str) -> Self {
        let mut reply: Value = serde_json::from_str(TEXT_REPLY).expect("fixture is JSON");
        reply["output"]["message"]["content"] = serde_json::json!([{ "text": text }]);
        Scripted::Reply(reply)
    }

    pub fn throttling() -> Self {
        Scripted::Error { status: 429, error_type: "ThrottlingException", message: "Too many requests, please wait." }
    }
}

/// A request the client sent.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub model_id: String,
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Scripted>>,
    requests: Mutex<Vec<Recorded>>,
    /// Every call is throttled until then, whatever the script says.
    throttled_until: Mutex<Option<std::time::Instant>>,
}

pub struct FakeBedrock {
    server: LocalServer,
    shared: Arc<Shared>,
}

impl FakeBedrock {
    /// Listens on a free loopback port.
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new().route("/model/{model_id}/converse", post(converse)).with_state(shared.clone());
        Self { server: LocalServer::start(app).await, shared }
    }

    pub fn url(&self) -> &str {
        &self.server.base_url
    }

    /// Queues the answers to the next calls, in order.
    pub fn script(&self, replies: impl IntoIterator<Item = Scripted>) {
        self.shared.script.lock().expect("script lock").extend(replies);
    }

    /// Throttles every call until `until` (as Bedrock does under a quota),
    /// then answers from the script again.
    pub fn throttle_until(&self, until: std::time::Instant) {
        *self.shared.throttled_until.lock().expect("throttle lock") = Some(until);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("requests lock").clone()
    }

    /// A Bedrock client pointed here, with the given retry policy.
    pub fn client(
        &self,
        aws: &aws_config::SdkConfig,
        retry: aws_config::retry::RetryConfig,
    ) -> aws_sdk_bedrockruntime::Client {
        let config =
            aws_sdk_bedrockruntime::config::Builder::from(aws).endpoint_url(self.url()).retry_config(retry).build();
        aws_sdk_bedrockruntime::Client::from_conf(config)
    }
}

async fn converse(State(shared): State<Arc<Shared>>, Path(model_id): Path<String>, body: String) -> Response {
    let body = serde_json::from_str(&body).unwrap_or(Value::String(body));
    shared.requests.lock().expect("requests lock").push(Recorded { model_id, body });
    let throttled =
        shared.throttled_until.lock().expect("throttle lock").is_some_and(|until| std::time::Instant::now() < until);
    let next =
        if throttled { Some(Scripted::throttling()) } else { shared.script.lock().expect("script lock").pop_front() };
    match next {
        Some(Scripted::Reply(reply)) => axum::Json(reply).into_response(),
        Some(Scripted::Error { status, error_type, message }) => {
            let mut headers = HeaderMap::new();
            headers.insert("x-amzn-errortype", HeaderValue::from_static(error_type));
            let status = StatusCode::from_u16(status).expect("valid status");
            (status, headers, axum::Json(serde_json::json!({ "message": message }))).into_response()
        }
        Some(Scripted::Raw { status, body }) => {
            (StatusCode::from_u16(status).expect("valid status"), body).into_response()
        }
        None => {
            let mut headers = HeaderMap::new();
            headers.insert("x-amzn-errortype", HeaderValue::from_static("ValidationException"));
            let body = serde_json::json!({ "message": "fake Bedrock: no scripted reply left for this call" });
            (StatusCode::BAD_REQUEST, headers, axum::Json(body)).into_response()
        }
    }
}
