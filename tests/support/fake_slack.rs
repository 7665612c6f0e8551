//! A fake Slack Web API (`POST /api/{method}`, form-encoded, bearer token,
//! JSON with `ok`), so the real `reqwest` client is what the tests exercise.
//! Each method answers from its script, in order, then from its default;
//! every call is recorded.

use crate::local_server::LocalServer;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

pub const CONVERSATIONS_REPLIES: &str = include_str!("../fixtures/slack/conversations-replies.json");
pub const CONVERSATIONS_INFO: &str = include_str!("../fixtures/slack/conversations-info.json");

#[derive(Debug, Clone)]
pub enum SlackReply {
    Json(Value),
    /// HTTP 429 with `Retry-After: secs`.
    RateLimited {
        retry_after_secs: u64,
    },
    Status(u16),
}

#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub form: HashMap<String, String>,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct Shared {
    scripts: Mutex<HashMap<String, VecDeque<SlackReply>>>,
    defaults: Mutex<HashMap<String, Value>>,
    calls: Mutex<Vec<Call>>,
}

pub struct FakeSlack {
    url: String,
    shared: Arc<Shared>,
    _server: LocalServer,
}

impl FakeSlack {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new().route("/api/{method}", post(call)).with_state(shared.clone());
        let server = LocalServer::start(app).await;
        Self { url: format!("{}/api", server.base_url), shared, _server: server }
    }

    /// The Web API base URL (`SLACK_API_BASE_URL`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What `method` answers once its script is used up.
    pub fn default_reply(&self, method: &str, json: &str) {
        let value = serde_json::from_str(json).expect("fixture is JSON");
        self.shared.defaults.lock().expect("defaults lock").insert(method.to_owned(), value);
    }

    /// The next answers of `method`, in order.
    pub fn script(&self, method: &str, replies: impl IntoIterator<Item = SlackReply>) {
        self.shared.scripts.lock().expect("scripts lock").entry(method.to_owned()).or_default().extend(replies);
    }

    pub fn calls(&self, method: &str) -> Vec<Call> {
        self.shared.calls.lock().expect("calls lock").iter().filter(|c| c.method == method).cloned().collect()
    }
}

async fn call(
    State(shared): State<Arc<Shared>>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_str(&body).unwrap_or_default();
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    shared.calls.lock().expect("calls lock").push(Call { method: method.clone(), form, authorization });

    let scripted = shared.scripts.lock().expect("scripts lock").get_mut(&method).and_then(VecDeque::pop_front);
    let reply = scripted.unwrap_or_else(|| {
        let defaults = shared.defaults.lock().expect("defaults lock");
        let fallback = serde_json::json!({"ok": false, "error": "unknown_method"});
        SlackReply::Json(defaults.get(&method).cloned().unwrap_or(fallback))
    });
    match reply {
        SlackReply::Json(value) => axum::Json(value).into_response(),
        SlackReply::RateLimited { retry_after_secs } => {
            (StatusCode::TOO_MANY_REQUESTS, [("retry-after", retry_after_secs.to_string())], "").into_response()
        }
        SlackReply::Status(status) => StatusCode::from_u16(status).expect("valid status").into_response(),
    }
}
