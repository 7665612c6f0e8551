//! A fault-injecting HTTP proxy between the functions and what they call:
//! the local AWS emulator, the fake Slack, the fake Bedrock. It forwards
//! every request and fails a share of them the ways networks and services
//! fail, including the one that matters most for exactly-once: the call
//! is applied upstream and its answer never reaches the caller.
//!
//! Faults are decided by a seed: the `n`-th call of an operation (DynamoDB
//! `PutItem`, SQS `SendMessage`, Slack `chat.postMessage`, …) gets the
//! same fault at the same seed on every run. Tests can also script the
//! next fault of one operation.
//!
//! What the emulator does not do but AWS guarantees, the proxy provides,
//! so a test blames the product only for its own faults:
//! - DynamoDB `TransactWriteItems` with a `ClientRequestToken` seen in the
//!   last ten minutes answers as the first call did, without applying it
//!   again (the SDK sets the token once per operation, so its retries
//!   carry it).
//! - SQS FIFO `SendMessage` with a deduplication id sent to the same queue
//!   in the last five minutes is accepted and not delivered again (the
//!   emulator forgets an id once its message is deleted).

use crate::local_server::LocalServer;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// 500 before the call reaches the service: nothing applied.
    ServerError,
    /// Throttled (the service's own throttling answer): nothing applied.
    Throttled,
    /// The connection breaks before the call is sent on: nothing applied.
    Reset,
    /// Applied upstream, then a 500 instead of its answer.
    AppliedThenServerError,
    /// Applied upstream, then the connection breaks mid-answer.
    AppliedThenReset,
}

/// The two ways a write's answer is lost, each with the SDK attempts that
/// meet it: applied then a 5xx the SDK retries (its retry meets the write
/// its first attempt applied), and applied then a reset with no retry (the
/// writer reads to find out, or its message is redelivered).
pub const LOST_ANSWERS: [(u32, Fault); 2] = [(2, Fault::AppliedThenServerError), (1, Fault::AppliedThenReset)];

impl Fault {
    pub const ALL: [Fault; 5] =
        [Fault::ServerError, Fault::Throttled, Fault::Reset, Fault::AppliedThenServerError, Fault::AppliedThenReset];
    /// Nothing is applied: what a service that cannot have acted answers.
    pub const BEFORE: [Fault; 3] = [Fault::ServerError, Fault::Throttled, Fault::Reset];

    pub fn as_str(self) -> &'static str {
        match self {
            Fault::ServerError => "5xx",
            Fault::Throttled => "throttled",
            Fault::Reset => "reset",
            Fault::AppliedThenServerError => "applied, then 5xx",
            Fault::AppliedThenReset => "applied, then reset",
        }
    }

    fn applies(self) -> bool {
        matches!(self, Fault::AppliedThenServerError | Fault::AppliedThenReset)
    }
}

/// Which service the proxy stands in front of: how it names operations and
/// how the service says "throttled".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    /// DynamoDB, SQS (JSON protocols, `X-Amz-Target`), S3 (REST).
    Aws,
    Slack,
    Bedrock,
}

/// Which calls fail, and how: about one call in `one_in`, with a kind from
/// those `kinds` gives for its operation, decided by `seed`.
#[derive(Clone, Copy)]
pub struct Plan {
    pub seed: u64,
    pub one_in: u64,
    pub kinds: fn(&str) -> &'static [Fault],
}

impl Plan {
    /// No fault unless scripted.
    pub fn none() -> Self {
        Self { seed: 0, one_in: 0, kinds: |_| &[] }
    }

    /// Every kind of fault on every operation.
    pub fn every_fault(seed: u64, one_in: u64) -> Self {
        Self { seed, one_in, kinds: |_| &Fault::ALL }
    }
}

struct Shared {
    upstream_kind: Upstream,
    upstream: String,
    client: reqwest::Client,
    plan: Plan,
    /// Calls per operation so far: the `n` a seeded fault is decided on.
    calls: Mutex<HashMap<String, u64>>,
    /// (operation, text the request must contain, fault).
    scripted: Mutex<VecDeque<(String, Option<String>, Fault)>>,
    injected: Mutex<BTreeMap<(String, Fault), u32>>,
    transactions: Mutex<HashMap<String, (Instant, StatusCode, Bytes)>>,
    fifo_sends: Mutex<HashMap<(String, String), (Instant, Bytes)>>,
}

pub struct FaultProxy {
    server: LocalServer,
    shared: Arc<Shared>,
}

const TRANSACTION_TOKEN_WINDOW: Duration = Duration::from_secs(600);
const FIFO_DEDUPLICATION_WINDOW: Duration = Duration::from_secs(300);

impl FaultProxy {
    /// Listens on a free loopback port and forwards to `upstream`
    /// (`http://127.0.0.1:PORT`, with any path prefix the caller's URLs
    /// carry left to them).
    pub async fn start(upstream_kind: Upstream, upstream: &str, plan: Plan) -> Self {
        let shared = Arc::new(Shared {
            upstream_kind,
            upstream: origin(upstream),
            client: reqwest::Client::builder().no_proxy().build().expect("a client"),
            plan,
            calls: Mutex::default(),
            scripted: Mutex::default(),
            injected: Mutex::default(),
            transactions: Mutex::default(),
            fifo_sends: Mutex::default(),
        });
        let app = Router::new().fallback(forward).with_state(shared.clone());
        Self { server: LocalServer::start(app).await, shared }
    }

    /// `http://127.0.0.1:PORT` of the proxy.
    pub fn url(&self) -> &str {
        &self.server.base_url
    }

    /// `url` (the upstream's, possibly with a path) as reached through the
    /// proxy.
    pub fn reach(&self, url: &str) -> String {
        url.replacen(&self.shared.upstream, self.url(), 1)
    }

    /// The next call of `operation` fails with `fault`, whatever the plan.
    pub fn script(&self, operation: &str, fault: Fault) {
        self.shared.scripted.lock().expect("script lock").push_back((operation.to_owned(), None, fault));
    }

    /// The next call of `operation` whose request contains `needle` (a
    /// DynamoDB key, say) fails with `fault`.
    pub fn script_when(&self, operation: &str, needle: &str, fault: Fault) {
        let entry = (operation.to_owned(), Some(needle.to_owned()), fault);
        self.shared.scripted.lock().expect("script lock").push_back(entry);
    }

    /// Faults injected so far, by operation and kind.
    pub fn injected(&self) -> BTreeMap<(String, Fault), u32> {
        self.shared.injected.lock().expect("injected lock").clone()
    }

    /// Faults injected so far, by kind.
    pub fn injected_by_kind(&self) -> BTreeMap<Fault, u32> {
        let mut by_kind = BTreeMap::new();
        for ((_, fault), n) in self.injected() {
            *by_kind.entry(fault).or_default() += n;
        }
        by_kind
    }

    /// Calls of `operation` (`DynamoDB_20120810.GetItem`, `S3 GET`, …) so
    /// far.
    pub fn calls_of(&self, operation: &str) -> u64 {
        self.shared.calls.lock().expect("calls lock").get(operation).copied().unwrap_or_default()
    }

    /// Calls so far, by operation.
    pub fn calls_by_operation(&self) -> HashMap<String, u64> {
        self.shared.calls.lock().expect("calls lock").clone()
    }

    /// Calls forwarded or failed so far.
    pub fn calls(&self) -> u64 {
        self.shared.calls.lock().expect("calls lock").values().sum()
    }
}

/// `scheme://host:port` of `url`.
fn origin(url: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |at| at + 3);
    let end = url[after_scheme..].find('/').map_or(url.len(), |at| after_scheme + at);
    url[..end].to_owned()
}

/// SplitMix64: a fault decision from (seed, operation, n), the same on
/// every run.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn hash_str(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

impl Shared {
    fn operation(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> String {
        match self.upstream_kind {
            Upstream::Aws => match headers.get("x-amz-target").and_then(|v| v.to_str().ok()) {
                Some(target) => target.to_owned(),
                None => format!("S3 {method}"),
            },
            Upstream::Slack => uri.path().rsplit('/').next().unwrap_or_default().to_owned(),
            Upstream::Bedrock => uri.path().rsplit('/').next().unwrap_or_default().to_owned(),
        }
    }

    fn fault_for(&self, operation: &str, body: &[u8]) -> Option<Fault> {
        let n = {
            let mut calls = self.calls.lock().expect("calls lock");
            let n = calls.entry(operation.to_owned()).or_default();
            *n += 1;
            *n
        };
        {
            let mut scripted = self.scripted.lock().expect("script lock");
            let body = String::from_utf8_lossy(body);
            let matches = |(op, needle, _): &(String, Option<String>, Fault)| {
                op == operation && needle.as_ref().is_none_or(|needle| body.contains(needle.as_str()))
            };
            if let Some(index) = scripted.iter().position(matches) {
                return scripted.remove(index).map(|(_, _, fault)| fault);
            }
        }
        let kinds = (self.plan.kinds)(operation);
        if self.plan.one_in == 0 || kinds.is_empty() {
            return None;
        }
        let roll = mix(self.plan.seed ^ mix(hash_str(operation) ^ mix(n)));
        roll.is_multiple_of(self.plan.one_in).then(|| kinds[((roll >> 32) % kinds.len() as u64) as usize])
    }

    fn count(&self, operation: &str, fault: Fault) {
        *self.injected.lock().expect("injected lock").entry((operation.to_owned(), fault)).or_default() += 1;
    }

    /// The service's "slow down", as its clients classify it.
    fn throttled(&self) -> Response {
        match self.upstream_kind {
            Upstream::Aws => aws_error(StatusCode::BAD_REQUEST, "ThrottlingException", "Rate exceeded"),
            Upstream::Slack => {
                let mut headers = HeaderMap::new();
                headers.insert("retry-after", HeaderValue::from_static("0"));
                (StatusCode::TOO_MANY_REQUESTS, headers, "").into_response()
            }
            Upstream::Bedrock => {
                aws_error(StatusCode::TOO_MANY_REQUESTS, "ThrottlingException", "Too many requests, please wait.")
            }
        }
    }

    fn server_error(&self) -> Response {
        match self.upstream_kind {
            Upstream::Slack => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
            Upstream::Aws | Upstream::Bedrock => {
                aws_error(StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError", "injected by the fault proxy")
            }
        }
    }

    /// What AWS answers without the emulator, for a request it has seen.
    fn replay(&self, operation: &str, body: &[u8]) -> Option<Response> {
        let json = || serde_json::from_slice::<serde_json::Value>(body).ok();
        let now = Instant::now();
        match operation {
            "DynamoDB_20120810.TransactWriteItems" => {
                let token = json()?["ClientRequestToken"].as_str()?.to_owned();
                let mut seen = self.transactions.lock().expect("transactions lock");
                seen.retain(|_, (at, _, _)| now.duration_since(*at) < TRANSACTION_TOKEN_WINDOW);
                let (_, status, body) = seen.get(&token)?;
                Some(aws_json(*status, body.clone()))
            }
            "AmazonSQS.SendMessage" => {
                let request = json()?;
                let key =
                    (request["QueueUrl"].as_str()?.to_owned(), request["MessageDeduplicationId"].as_str()?.to_owned());
                let mut seen = self.fifo_sends.lock().expect("fifo lock");
                seen.retain(|_, (at, _)| now.duration_since(*at) < FIFO_DEDUPLICATION_WINDOW);
                let (_, body) = seen.get(&key)?;
                Some(aws_json(StatusCode::OK, body.clone()))
            }
            _ => None,
        }
    }

    /// Keeps what [`Shared::replay`] needs of an answer the emulator gave.
    fn remember(&self, operation: &str, request: &[u8], status: StatusCode, answer: &Bytes) {
        let Ok(json) = serde_json::from_slice::<serde_json::Value>(request) else { return };
        match operation {
            "DynamoDB_20120810.TransactWriteItems" if status.is_success() => {
                if let Some(token) = json["ClientRequestToken"].as_str() {
                    let entry = (Instant::now(), status, answer.clone());
                    self.transactions.lock().expect("transactions lock").insert(token.to_owned(), entry);
                }
            }
            "AmazonSQS.SendMessage" if status.is_success() => {
                if let (Some(queue), Some(id)) = (json["QueueUrl"].as_str(), json["MessageDeduplicationId"].as_str()) {
                    let entry = (Instant::now(), answer.clone());
                    self.fifo_sends.lock().expect("fifo lock").insert((queue.to_owned(), id.to_owned()), entry);
                }
            }
            _ => {}
        }
    }
}

fn aws_json(status: StatusCode, body: Bytes) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/x-amz-json-1.0"));
    (status, headers, body).into_response()
}

fn aws_error(status: StatusCode, code: &'static str, message: &str) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert("x-amzn-errortype", HeaderValue::from_static(code));
    headers.insert("content-type", HeaderValue::from_static("application/x-amz-json-1.0"));
    let body = serde_json::json!({ "__type": code, "message": message }).to_string();
    (status, headers, body).into_response()
}

/// A response whose body breaks after its headers: the caller's read fails
/// as it does when a connection is reset mid-answer.
fn broken_response() -> Response {
    let body = futures_util::stream::iter([
        Ok(Bytes::from_static(b"{")),
        Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "injected reset")),
    ]);
    let mut headers = HeaderMap::new();
    headers.insert("content-length", HeaderValue::from_static("64"));
    (StatusCode::OK, headers, Body::from_stream(body)).into_response()
}

/// Sends a request on to `upstream` (`http://127.0.0.1:PORT`) as it came,
/// but for its `host` and length; the answer's status, its headers but for
/// those of the connection and the length, and the response to read its
/// body from. None when the upstream cannot be reached.
pub async fn send_on(
    client: &reqwest::Client,
    upstream: &str,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Option<(StatusCode, HeaderMap, reqwest::Response)> {
    let target = format!("{upstream}{}", uri.path_and_query().map_or("/", |pq| pq.as_str()));
    let mut request = client.request(method, target).body(body);
    for (name, value) in headers {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    let answer = request.send().await.ok()?;
    let mut answer_headers = HeaderMap::new();
    for (name, value) in answer.headers() {
        if name != "content-length" && name != "transfer-encoding" && name != "connection" {
            answer_headers.insert(name.clone(), value.clone());
        }
    }
    Some((answer.status(), answer_headers, answer))
}

async fn forward(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let operation = shared.operation(&method, &uri, &headers);
    let fault = shared.fault_for(&operation, &body);
    if let Some(fault) = fault {
        shared.count(&operation, fault);
        match fault {
            Fault::ServerError => return shared.server_error(),
            Fault::Throttled => return shared.throttled(),
            Fault::Reset => return broken_response(),
            Fault::AppliedThenServerError | Fault::AppliedThenReset => {}
        }
    }
    if let Some(replayed) = shared.replay(&operation, &body) {
        return match fault {
            Some(Fault::AppliedThenServerError) => shared.server_error(),
            Some(Fault::AppliedThenReset) => broken_response(),
            _ => replayed,
        };
    }

    let Some((status, answer_headers, upstream)) =
        send_on(&shared.client, &shared.upstream, method, &uri, &headers, body.clone()).await
    else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let is_stream =
        answer_headers.get("content-type").is_some_and(|v| v.to_str().unwrap_or_default().contains("eventstream"));
    if is_stream && !fault.is_some_and(Fault::applies) {
        // A model's stream goes through as it comes, so a cut stream
        // reaches the caller cut.
        let stream = upstream.bytes_stream();
        return (status, answer_headers, Body::from_stream(stream)).into_response();
    }
    let Ok(answer) = upstream.bytes().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    shared.remember(&operation, &body, status, &answer);
    match fault {
        Some(Fault::AppliedThenServerError) => shared.server_error(),
        Some(Fault::AppliedThenReset) => broken_response(),
        _ => (status, answer_headers, answer).into_response(),
    }
}
