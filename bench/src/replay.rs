//! AWS answering at once, for the start-up figures: a proxy in front of the
//! local AWS emulator that answers a read it has answered before (the same
//! operation on the same path with the same body: DynamoDB `GetItem`,
//! `BatchGetItem`, `Query`, an S3 `GET`) from memory, without asking the
//! emulator again. Everything else goes through as it comes. A JSON body
//! is the same whatever the order of its keys: the SDK writes a key's
//! attributes (`pk`, `sk`) in its maps' order, which each process picks at
//! random.
//!
//! The emulator is Python and takes 2–3 ms a request on this machine,
//! about as long as the floor's whole first invoke: through it, a first
//! invoke that makes one read measures the emulator as much as the
//! binary. Through this proxy the functions' first reads are answered in
//! tens of microseconds (DynamoDB's own latency from Lambda is a few
//! milliseconds; the figure is the binary's part of a cold start). The
//! first of each read in a run still goes to the emulator: the medians of
//! [`crate::COLD_RUNS`] fresh processes leave it out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// The proxy, on a thread and a runtime of its own (the benchmark's
/// current-thread runtime awaits the invocations meanwhile).
pub struct Replay {
    pub url: String,
}

/// What a read was answered.
#[derive(Clone)]
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

struct Shared {
    upstream: String,
    client: reqwest::Client,
    answers: Mutex<HashMap<(String, String, Bytes), Answer>>,
}

impl Replay {
    /// Listens on a free loopback port, in front of `upstream`
    /// (`http://127.0.0.1:PORT`).
    pub fn start(upstream: &str) -> anyhow::Result<Self> {
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::builder().no_proxy().build()?,
            answers: Mutex::default(),
        });
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            runtime.block_on(async move {
                let server =
                    ::tests::local_server::LocalServer::start(Router::new().fallback(forward).with_state(shared)).await;
                sender.send(server.base_url.clone()).expect("the benchmark waits for the address");
                std::future::pending::<()>().await;
            });
        });
        Ok(Self { url: receiver.recv()? })
    }
}

/// The key of a read this proxy may answer from memory: none for a write.
fn read_key(method: &Method, uri: &Uri, headers: &HeaderMap, body: &Bytes) -> Option<(String, String, Bytes)> {
    let target = headers.get("x-amz-target").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let read = match target.rsplit_once('.') {
        Some((_, operation)) => ["GetItem", "BatchGetItem", "Query"].contains(&operation),
        None => method == Method::GET,
    };
    read.then(|| (target.to_owned(), uri.to_string(), canonical(body)))
}

/// `body` with its JSON objects' keys in order (`serde_json`'s maps are
/// sorted); as it is when it is not JSON.
fn canonical(body: &Bytes) -> Bytes {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(json) => Bytes::from(serde_json::to_vec(&json).expect("a JSON value serializes")),
        Err(_) => body.clone(),
    }
}

async fn forward(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let key = read_key(&method, &uri, &headers, &body);
    if let Some(answer) = key.as_ref().and_then(|key| shared.answers.lock().expect("answers lock").get(key).cloned()) {
        return (answer.status, answer.headers, answer.body).into_response();
    }
    let sent = ::tests::fault_proxy::send_on(&shared.client, &shared.upstream, method, &uri, &headers, body).await;
    let Some((status, answer_headers, upstream)) = sent else { return StatusCode::BAD_GATEWAY.into_response() };
    let Ok(answer) = upstream.bytes().await else { return StatusCode::BAD_GATEWAY.into_response() };
    if let Some(key) = key.filter(|_| status.is_success()) {
        let kept = Answer { status, headers: answer_headers.clone(), body: answer.clone() };
        shared.answers.lock().expect("answers lock").insert(key, kept);
    }
    (status, answer_headers, answer).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_are_answered_from_memory() {
        let target = |operation: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("x-amz-target", format!("DynamoDB_20120810.{operation}").parse().unwrap());
            headers
        };
        let (uri, body) = ("/".parse::<Uri>().unwrap(), Bytes::from_static(b"{}"));
        for read in ["GetItem", "BatchGetItem", "Query"] {
            assert!(read_key(&Method::POST, &uri, &target(read), &body).is_some(), "{read}");
        }
        for write in ["PutItem", "UpdateItem", "TransactWriteItems", "DeleteItem"] {
            assert!(read_key(&Method::POST, &uri, &target(write), &body).is_none(), "{write}");
        }
        let object = "/bucket/config/assistant.json?x-id=GetObject".parse::<Uri>().unwrap();
        assert!(read_key(&Method::GET, &object, &HeaderMap::new(), &Bytes::new()).is_some(), "an S3 GET");
        assert!(read_key(&Method::PUT, &object, &HeaderMap::new(), &body).is_none(), "an S3 PUT");
        let sqs = {
            let mut headers = HeaderMap::new();
            headers.insert("x-amz-target", "AmazonSQS.SendMessage".parse().unwrap());
            headers
        };
        assert!(read_key(&Method::POST, &uri, &sqs, &body).is_none(), "a queue's send");
    }

    #[test]
    fn a_read_is_the_same_whatever_order_its_json_keys_come_in() {
        let mut headers = HeaderMap::new();
        headers.insert("x-amz-target", "DynamoDB_20120810.GetItem".parse().unwrap());
        let uri = "/".parse::<Uri>().unwrap();
        let key = |body: &'static str| read_key(&Method::POST, &uri, &headers, &Bytes::from_static(body.as_bytes()));
        let pk_first = key(r#"{"TableName":"t","Key":{"pk":{"S":"A"},"sk":{"S":"B"}}}"#);
        assert_eq!(pk_first, key(r#"{"Key":{"sk":{"S":"B"},"pk":{"S":"A"}},"TableName":"t"}"#));
        assert_ne!(pk_first, key(r#"{"TableName":"t","Key":{"pk":{"S":"A"},"sk":{"S":"C"}}}"#), "another item");
        assert!(key("not json").is_some(), "a body that is not JSON is its own key");
    }
}
