//! A fake Amazon Bedrock Runtime speaking the Converse REST JSON protocol
//! (`POST /model/{modelId}/converse`) and ConverseStream
//! (`POST /model/{modelId}/converse-stream`: AWS's binary event-stream
//! frames, `messageStart`, `contentBlockStart`/`Delta`/`Stop`,
//! `messageStop`, `metadata`), so the real `aws-sdk-bedrockruntime` client
//! is what the tests exercise. Each test scripts the replies in order (one
//! script for both calls: a streamed call plays the same reply as events)
//! and reads back the requests the client sent. A streamed reply's text is
//! cut into deltas at the points a test chooses, a pause apart.
//!
//! Errors are sent as AWS's restJson1 protocol sends them: the HTTP status,
//! an `x-amzn-ErrorType` header and a `{"message": …}` body; a stream that
//! breaks sends an `exception` frame after some deltas; one that stalls
//! sends nothing more and holds the connection open.
//!
//! For load tests it can behave like Bedrock under load ([`Realism`]):
//! each answer waits a time to first token and comes at a rate of tokens a
//! second, both drawn from a seeded log-normal distribution; the account's
//! tokens-per-minute quota is enforced (a call that would pass it is
//! answered `ThrottlingException`, as Bedrock answers it); and a share of
//! calls fail with a 503 `ServiceUnavailableException`. Token counts are
//! estimated as Bedrock's tokenizers roughly count English: four bytes a
//! token.

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
    /// Streamed only: this reply's first `deltas` text deltas, then the
    /// stream breaks (a `modelStreamErrorException` frame).
    BreaksAfter { reply: Value, deltas: usize },
    /// Streamed only: this reply's first `deltas` text deltas, then
    /// nothing: the connection stays open and silent (a model that stalls
    /// mid-stream) until the client hangs up.
    StallsAfter { reply: Value, deltas: usize },
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

    /// A step that calls these tools (`(id, name, input)`), in one reply.
    pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Self {
        let mut reply: Value = serde_json::from_str(TOOL_USE_REPLY).expect("fixture is JSON");
        let content: Vec<Value> = calls
            .iter()
            .map(|(id, name, input)| serde_json::json!({"toolUse": {"toolUseId": id, "name": name, "input": input}}))
            .collect();
        reply["output"]["message"]["content"] = Value::Array(content);
        Scripted::Reply(reply)
    }

    pub fn throttling() -> Self {
        Scripted::Error { status: 429, error_type: "ThrottlingException", message: "Too many requests, please wait." }
    }

    /// Bedrock's 503, as it answers when it cannot serve the call now.
    pub fn unavailable() -> Self {
        Scripted::Error {
            status: 503,
            error_type: "ServiceUnavailableException",
            message: "Bedrock is unable to process your request.",
        }
    }
}

/// A request the client sent.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub model_id: String,
    pub body: Value,
    /// When it arrived, and how it was answered.
    pub at: std::time::Instant,
    pub outcome: Outcome,
}

/// How the fake answered a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Whatever the script or the answerer said (a scripted error included).
    AsScripted,
    /// `ThrottlingException`: a throttle set by a test, or the quota.
    Throttled,
    /// A 503 drawn by [`Realism::server_error_one_in`].
    ServerError,
}

/// How Bedrock behaves under load, seeded: the same request gets the same
/// draws at the same seed (its `n`-th sending included, so a retried call
/// is a new draw).
#[derive(Debug, Clone, Copy)]
pub struct Realism {
    pub seed: u64,
    /// Time to first token: the median, and the log-normal's sigma.
    pub first_token_median_ms: f64,
    pub first_token_sigma: f64,
    /// Output tokens a second: the median, and the log-normal's sigma.
    pub tokens_per_second_median: f64,
    pub tokens_per_second_sigma: f64,
    /// Input and output tokens the account may use in any `quota_window`
    /// (Bedrock's quota is a minute's; a short test scales both down).
    pub quota_tokens: u64,
    pub quota_window: std::time::Duration,
    /// About one call in this many answers a 503 (0: none).
    pub server_error_one_in: u64,
}

impl Realism {
    /// Figures like Claude Sonnet's on Bedrock on an ordinary day: first
    /// token after about 0.8 s, about 60 tokens a second, a quota of
    /// 200,000 tokens a minute, one call in 200 failing.
    pub fn sonnet_like(seed: u64) -> Self {
        Self {
            seed,
            first_token_median_ms: 800.0,
            first_token_sigma: 0.4,
            tokens_per_second_median: 60.0,
            tokens_per_second_sigma: 0.3,
            quota_tokens: 200_000,
            quota_window: std::time::Duration::from_secs(60),
            server_error_one_in: 200,
        }
    }
}

/// Roughly how many tokens `bytes` of English make.
pub fn tokens_in(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// The draws for one call.
#[derive(Debug, Clone, Copy)]
struct Pacing {
    first_token: std::time::Duration,
    per_token: std::time::Duration,
}

/// The quota's ledger: tokens charged, when, over the last minute.
#[derive(Default)]
struct Quota {
    charged: VecDeque<(std::time::Instant, u64)>,
}

impl Quota {
    /// Charges `tokens` now if the window's charges leave room.
    fn charge(&mut self, tokens: u64, quota: u64, window: std::time::Duration) -> bool {
        let now = std::time::Instant::now();
        while self.charged.front().is_some_and(|(at, _)| now.duration_since(*at) >= window) {
            self.charged.pop_front();
        }
        let used: u64 = self.charged.iter().map(|(_, n)| n).sum();
        if used + tokens > quota {
            return false;
        }
        self.charged.push_back((now, tokens));
        true
    }
}

/// SplitMix64, for the seeded draws.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A uniform draw in (0, 1) from `key`.
fn uniform(key: u64) -> f64 {
    ((mix(key) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A log-normal draw with this median and sigma (Box–Muller).
fn log_normal(key: u64, median: f64, sigma: f64) -> f64 {
    let normal = (-2.0 * uniform(key).ln()).sqrt() * (std::f64::consts::TAU * uniform(key ^ 0x5eed)).cos();
    median * (sigma * normal).exp()
}

fn hash_text(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// Makes a reply from a request's body.
type Answerer = fn(&Value) -> Scripted;

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Scripted>>,
    /// Where streamed text is cut into deltas (byte offsets in each text
    /// block); none: one delta per 24 bytes.
    cuts: Mutex<Option<Vec<usize>>>,
    /// The pause before each delta.
    pause: Mutex<std::time::Duration>,
    requests: Mutex<Vec<Recorded>>,
    /// Every call is throttled until then, whatever the script says.
    throttled_until: Mutex<Option<std::time::Instant>>,
    /// Behaviour under load, once set.
    realism: Mutex<Option<Realism>>,
    quota: Mutex<Quota>,
    /// How often each request body was sent: a retry is a new draw.
    sendings: Mutex<std::collections::HashMap<u64, u64>>,
    /// Once the script is used up: answers made from each request.
    answerer: Mutex<Option<Answerer>>,
    /// Bedrock Agent Runtime's `Retrieve`: what each knowledge base
    /// answers, and the requests it got (signature checked).
    knowledge: Mutex<std::collections::HashMap<String, Value>>,
    retrieves: Mutex<Vec<Result<Value, String>>>,
    /// The model call's budget the clients made here are built with.
    call_budget: Mutex<Option<std::time::Duration>>,
    /// `ApplyGuardrail`'s requests: the guardrail, its version, the source
    /// and the text (signature checked).
    guarded: Mutex<Vec<Result<Guarded, String>>>,
}

/// One `ApplyGuardrail` request as the fake read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Guarded {
    pub guardrail: String,
    pub version: String,
    pub source: String,
    pub text: String,
    /// The images' formats and sizes (bytes, decoded).
    pub images: Vec<(String, usize)>,
}

pub struct FakeBedrock {
    server: LocalServer,
    shared: Arc<Shared>,
}

impl FakeBedrock {
    /// Listens on a free loopback port.
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/model/{model_id}/converse", post(converse))
            .route("/model/{model_id}/converse-stream", post(converse_stream))
            .route("/knowledgebases/{id}/retrieve", post(retrieve))
            .route("/guardrail/{id}/version/{version}/apply", post(apply_guardrail))
            .with_state(shared.clone());
        Self { server: LocalServer::start_recorded(app, "bedrock").await, shared }
    }

    pub fn url(&self) -> &str {
        &self.server.base_url
    }

    /// Queues the answers to the next calls, in order.
    pub fn script(&self, replies: impl IntoIterator<Item = Scripted>) {
        self.shared.script.lock().expect("script lock").extend(replies);
    }

    /// Answers every call the script does not with `answer(request body)`:
    /// for tests that run many turns at once, whose calls come in no fixed
    /// order.
    pub fn answer_with(&self, answer: fn(&Value) -> Scripted) {
        *self.shared.answerer.lock().expect("answerer lock") = Some(answer);
    }

    /// Throttles every call until `until` (as Bedrock does under a quota),
    /// then answers from the script again.
    pub fn throttle_until(&self, until: std::time::Instant) {
        *self.shared.throttled_until.lock().expect("throttle lock") = Some(until);
    }

    /// Behaves like Bedrock under load from now on (see [`Realism`]).
    pub fn behave_realistically(&self, realism: Realism) {
        *self.shared.realism.lock().expect("realism lock") = Some(realism);
    }

    /// Streamed text is cut at these byte offsets of each text block.
    pub fn cut_deltas_at(&self, cuts: &[usize]) {
        *self.shared.cuts.lock().expect("cuts lock") = Some(cuts.to_vec());
    }

    /// Each streamed delta comes this long after the one before.
    pub fn pause_between_deltas(&self, pause: std::time::Duration) {
        *self.shared.pause.lock().expect("pause lock") = pause;
    }

    /// Clients made from now on ([`FakeBedrock::client`]) time a model call
    /// as the worker's does (`adapters_bedrock::timeout_config`), with
    /// `budget` instead of the worker's: streams included.
    pub fn time_calls_to(&self, budget: std::time::Duration) {
        *self.shared.call_budget.lock().expect("budget lock") = Some(budget);
    }

    /// What `Retrieve` on knowledge base `id` answers (its wire format:
    /// `{"retrievalResults": [...]}`); Bedrock Agent Runtime's endpoint
    /// variable (`AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME`) points here.
    pub fn knowledge_base(&self, id: &str, answer: Value) {
        self.shared.knowledge.lock().expect("knowledge lock").insert(id.to_owned(), answer);
    }

    /// Every `Retrieve` request's body, or why its signature failed the
    /// check (SigV4 for `bedrock`, with the test command's secret key).
    /// The `ApplyGuardrail` requests this fake got, in order.
    pub fn guarded(&self) -> Vec<Result<Guarded, String>> {
        self.shared.guarded.lock().expect("guarded lock").clone()
    }

    pub fn retrieves(&self) -> Vec<Result<Value, String>> {
        self.shared.retrieves.lock().expect("retrieves lock").clone()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("requests lock").clone()
    }

    /// A Bedrock client pointed here, with the given retry policy (and the
    /// timeouts of [`FakeBedrock::time_calls_to`], once set).
    pub fn client(
        &self,
        aws: &aws_config::SdkConfig,
        retry: aws_config::retry::RetryConfig,
    ) -> aws_sdk_bedrockruntime::Client {
        let mut config =
            aws_sdk_bedrockruntime::config::Builder::from(aws).endpoint_url(self.url()).retry_config(retry);
        if let Some(budget) = *self.shared.call_budget.lock().expect("budget lock") {
            config = config.timeout_config(adapters_bedrock::timeout_config(budget));
        }
        aws_sdk_bedrockruntime::Client::from_conf(config.build())
    }
}

impl Shared {
    /// Records the request; the scripted answer (throttling while
    /// throttled, or over the quota; a drawn 503), and how fast to send it.
    fn next(&self, model_id: String, body: String) -> (Option<Scripted>, Option<Pacing>) {
        let body_text = body;
        let body = serde_json::from_str(&body_text).unwrap_or(Value::String(body_text.clone()));
        let answerer = *self.answerer.lock().expect("answerer lock");
        let made = answerer.map(|answer| answer(&body));
        let throttled =
            self.throttled_until.lock().expect("throttle lock").is_some_and(|until| std::time::Instant::now() < until);
        let (mut outcome, mut pacing) = (Outcome::AsScripted, None);
        let mut answer;
        if throttled {
            (outcome, answer) = (Outcome::Throttled, Some(Scripted::throttling()));
        } else {
            answer = self.script.lock().expect("script lock").pop_front().or(made);
            let realism = *self.realism.lock().expect("realism lock");
            if let (Some(realism), Some(Scripted::Reply(reply))) = (realism, answer.as_mut()) {
                let drawn = self.under_load(&realism, &body_text, reply);
                (outcome, pacing) = (drawn.0, Some(drawn.1));
                match outcome {
                    Outcome::Throttled => answer = Some(Scripted::throttling()),
                    Outcome::ServerError => answer = Some(Scripted::unavailable()),
                    Outcome::AsScripted => {}
                }
            }
        }
        let recorded = Recorded { model_id, body, at: std::time::Instant::now(), outcome };
        self.requests.lock().expect("requests lock").push(recorded);
        (answer, pacing)
    }

    /// Bedrock under load for one call: a drawn 503, the quota, then the
    /// reply's usage set to the tokens it carries and its pace drawn.
    fn under_load(&self, realism: &Realism, body: &str, reply: &mut Value) -> (Outcome, Pacing) {
        let request = hash_text(body);
        let sending = {
            let mut sendings = self.sendings.lock().expect("sendings lock");
            let n = sendings.entry(request).or_default();
            *n += 1;
            *n
        };
        let key = mix(realism.seed ^ mix(request ^ mix(sending)));
        let pacing = Pacing {
            first_token: std::time::Duration::from_secs_f64(
                log_normal(key, realism.first_token_median_ms, realism.first_token_sigma) / 1_000.0,
            ),
            per_token: std::time::Duration::from_secs_f64(
                1.0 / log_normal(key ^ 0x7095, realism.tokens_per_second_median, realism.tokens_per_second_sigma)
                    .max(1.0),
            ),
        };
        if realism.server_error_one_in > 0 && mix(key ^ 0x5e7).is_multiple_of(realism.server_error_one_in) {
            return (Outcome::ServerError, pacing);
        }
        let output_bytes: usize = reply["output"]["message"]["content"]
            .as_array()
            .map(|blocks| blocks.iter().map(|block| block.to_string().len()).sum())
            .unwrap_or_default();
        let (input, output) = (tokens_in(body.len()), tokens_in(output_bytes));
        if !self.quota.lock().expect("quota lock").charge(input + output, realism.quota_tokens, realism.quota_window) {
            return (Outcome::Throttled, pacing);
        }
        reply["usage"] =
            serde_json::json!({"inputTokens": input, "outputTokens": output, "totalTokens": input + output});
        (Outcome::AsScripted, pacing)
    }
}

async fn converse(State(shared): State<Arc<Shared>>, Path(model_id): Path<String>, body: String) -> Response {
    let (answer, pacing) = shared.next(model_id, body);
    match answer {
        Some(Scripted::Reply(reply)) => {
            if let Some(pacing) = pacing {
                // The whole answer is written before a Converse call returns.
                let output = tokens_in(reply["output"]["message"]["content"].to_string().len());
                tokio::time::sleep(pacing.first_token + pacing.per_token * output as u32).await;
            }
            axum::Json(reply).into_response()
        }
        Some(Scripted::BreaksAfter { .. } | Scripted::StallsAfter { .. }) => {
            panic!("a broken or stalled stream is scripted for a call that does not stream")
        }
        other => error_response(other),
    }
}

/// The scripted reply as ConverseStream sends it.
async fn converse_stream(State(shared): State<Arc<Shared>>, Path(model_id): Path<String>, body: String) -> Response {
    let (answer, pacing) = shared.next(model_id, body);
    let (reply, breaks_after, stalls_after) = match answer {
        Some(Scripted::Reply(reply)) => (reply, None, None),
        Some(Scripted::BreaksAfter { reply, deltas }) => (reply, Some(deltas), None),
        Some(Scripted::StallsAfter { reply, deltas }) => (reply, None, Some(deltas)),
        other => return error_response(other),
    };
    let cuts = shared.cuts.lock().expect("cuts lock").clone();
    let pause = *shared.pause.lock().expect("pause lock");
    let mut frames = stream_frames(&reply, cuts.as_deref(), breaks_after);
    if let Some(deltas) = stalls_after {
        // What the model sent before it stalled: up to its `deltas`th delta.
        let mut seen = 0;
        let stalled_at = frames.iter().position(|(_, is_delta)| {
            seen += usize::from(*is_delta);
            seen > deltas
        });
        frames.truncate(stalled_at.unwrap_or(frames.len()));
    }
    let stalls = stalls_after.is_some();
    let first_token = pacing.map(|p| p.first_token).unwrap_or_default();
    let per_token = pacing.map(|p| p.per_token).unwrap_or_default();
    let frames = frames.into_iter().enumerate();
    let body = futures_util::stream::unfold(frames, move |mut frames| async move {
        let Some((index, (frame, is_delta))) = frames.next() else {
            if stalls {
                // Open and silent until the client hangs up (which drops this).
                std::future::pending::<()>().await;
            }
            return None;
        };
        if index == 1 && !first_token.is_zero() {
            tokio::time::sleep(first_token).await;
        }
        if is_delta && !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        if is_delta && !per_token.is_zero() {
            // A delta's tokens, at the drawn rate (its frame is mostly text).
            tokio::time::sleep(per_token * tokens_in(frame.len().saturating_sub(120)) as u32).await;
        }
        Some((Ok::<_, std::io::Error>(frame), frames))
    });
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/vnd.amazon.eventstream"));
    (StatusCode::OK, headers, axum::body::Body::from_stream(body)).into_response()
}

/// One event-stream frame.
fn frame(message_type: &'static str, type_header: (&'static str, &str), payload: &Value) -> bytes::Bytes {
    use aws_smithy_types::event_stream::{Header, HeaderValue as Value_, Message};
    let message = Message::new(payload.to_string().into_bytes())
        .add_header(Header::new(type_header.0, Value_::String(type_header.1.to_owned().into())))
        .add_header(Header::new(":content-type", Value_::String("application/json".into())))
        .add_header(Header::new(":message-type", Value_::String(message_type.into())));
    let mut buffer = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut buffer).expect("a frame encodes");
    buffer.into()
}

fn event(name: &str, payload: Value) -> bytes::Bytes {
    frame("event", (":event-type", name), &payload)
}

/// A Converse reply as the frames ConverseStream sends, each with whether
/// it is a text delta (the ones that come a pause apart).
fn stream_frames(reply: &Value, cuts: Option<&[usize]>, breaks_after: Option<usize>) -> Vec<(bytes::Bytes, bool)> {
    let mut frames = vec![(event("messageStart", serde_json::json!({"role": "assistant"})), false)];
    let mut deltas = 0;
    let empty = Vec::new();
    let blocks = reply["output"]["message"]["content"].as_array().unwrap_or(&empty);
    for (index, block) in blocks.iter().enumerate() {
        if let Some(text) = block["text"].as_str() {
            for piece in cut(text, cuts) {
                if breaks_after == Some(deltas) {
                    let broken = serde_json::json!({"message": "The model's stream was interrupted."});
                    frames.push((frame("exception", (":exception-type", "modelStreamErrorException"), &broken), true));
                    return frames;
                }
                let delta = serde_json::json!({"contentBlockIndex": index, "delta": {"text": piece}});
                frames.push((event("contentBlockDelta", delta), true));
                deltas += 1;
            }
        } else if let Some(call) = block.get("toolUse") {
            let start = serde_json::json!({"contentBlockIndex": index, "start": {"toolUse": {
                "toolUseId": call["toolUseId"], "name": call["name"]}}});
            frames.push((event("contentBlockStart", start), false));
            let input = serde_json::json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": call["input"].to_string()}}});
            frames.push((event("contentBlockDelta", input), false));
        }
        frames.push((event("contentBlockStop", serde_json::json!({"contentBlockIndex": index})), false));
    }
    if let Some(reason) = reply["stopReason"].as_str() {
        frames.push((event("messageStop", serde_json::json!({"stopReason": reason})), false));
    }
    let metadata = serde_json::json!({"usage": reply["usage"], "metrics": {"latencyMs": 1}});
    frames.push((event("metadata", metadata), false));
    frames
}

/// `text` cut at `cuts` (byte offsets, moved to char boundaries), or every
/// 24 bytes.
fn cut<'a>(text: &'a str, cuts: Option<&[usize]>) -> Vec<&'a str> {
    let mut bounds: Vec<usize> = match cuts {
        Some(cuts) => cuts.iter().copied().filter(|&at| at > 0 && at < text.len()).collect(),
        None => (1..).map(|n| n * 24).take_while(|&at| at < text.len()).collect(),
    };
    for bound in &mut bounds {
        while !text.is_char_boundary(*bound) {
            *bound += 1;
        }
    }
    bounds.push(text.len());
    bounds.dedup();
    let mut pieces = Vec::new();
    let mut from = 0;
    for to in bounds {
        if to > from {
            pieces.push(&text[from..to]);
            from = to;
        }
    }
    pieces
}

/// An error (or the end of the script) as Bedrock's restJson1 sends it.
fn error_response(next: Option<Scripted>) -> Response {
    match next {
        Some(Scripted::Reply(_) | Scripted::BreaksAfter { .. } | Scripted::StallsAfter { .. }) => {
            unreachable!("replies are answered by the caller")
        }
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

/// Bedrock Runtime's `ApplyGuardrail`, signed for `bedrock` or refused: a
/// guardrail whose content filter blocks [`testkit::memory::ATTACK`] (a
/// prompt attack) in a text or written in an image, and passes anything
/// else, billing content units per started 1,000 characters and one image
/// unit per image, as Bedrock does. Content Bedrock's model refuses (a
/// block that is neither or both of `text` and `image`, an image format
/// other than `png` and `jpeg`, image bytes that are not base64 or empty)
/// is refused with a `ValidationException`, as Bedrock refuses it.
async fn apply_guardrail(
    State(shared): State<Arc<Shared>>,
    Path((id, version)): Path<(String, String)>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let secret_key = std::env::var("AWS_SECRET_ACCESS_KEY").unwrap_or_default();
    let signed = testkit::sigv4_check::verify_received(&parts, &body, &secret_key)
        .and_then(
            |signed| if signed.service == "bedrock" { Ok(()) } else { Err(format!("signed for {}", signed.service)) },
        )
        .and_then(|()| serde_json::from_slice::<Value>(&body).map_err(|err| err.to_string()));
    let request = match signed {
        Ok(request) => request,
        Err(err) => {
            shared.guarded.lock().expect("guarded lock").push(Err(err));
            let body = serde_json::json!({"message": "The request signature we calculated does not match"});
            return (StatusCode::FORBIDDEN, [("x-amzn-errortype", "InvalidSignatureException")], axum::Json(body))
                .into_response();
        }
    };
    let (texts, images) = match guardrail_content(&request["content"]) {
        Ok(read) => read,
        Err(why) => {
            shared.guarded.lock().expect("guarded lock").push(Err(format!("refused: {why}")));
            let body = serde_json::json!({"message": why});
            return (StatusCode::BAD_REQUEST, [("x-amzn-errortype", "ValidationException")], axum::Json(body))
                .into_response();
        }
    };
    let guarded = Guarded {
        guardrail: id.clone(),
        version: version.clone(),
        source: request["source"].as_str().unwrap_or_default().to_owned(),
        text: texts.join("\n"),
        images: images.iter().map(|(format, bytes)| (format.clone(), bytes.len())).collect(),
    };
    shared.guarded.lock().expect("guarded lock").push(Ok(guarded.clone()));
    let chars = guarded.text.chars().count();
    let units = chars.div_ceil(1_000);
    let usage = serde_json::json!({
        "topicPolicyUnits": 0, "contentPolicyUnits": units, "wordPolicyUnits": 0,
        "sensitiveInformationPolicyUnits": 0, "sensitiveInformationPolicyFreeUnits": 0,
        "contextualGroundingPolicyUnits": 0, "contentPolicyImageUnits": images.len(),
    });
    let mut coverage = serde_json::json!({"textCharacters": {"guarded": chars, "total": chars}});
    if !images.is_empty() {
        coverage["images"] = serde_json::json!({"guarded": images.len(), "total": images.len()});
    }
    let blocked = guarded.text.to_ascii_uppercase().contains(testkit::memory::ATTACK)
        || images.iter().any(|(_, bytes)| testkit::memory::image_carries_attack(bytes));
    let reply = if blocked {
        serde_json::json!({
            "action": "GUARDRAIL_INTERVENED",
            "actionReason": "Guardrail blocked.",
            "outputs": [{"text": testkit::memory::BLOCKED_MESSAGE}],
            "assessments": [{"contentPolicy": {"filters": [
                {"type": "PROMPT_ATTACK", "confidence": "HIGH", "filterStrength": "HIGH", "action": "BLOCKED", "detected": true}
            ]}}],
            "usage": usage,
            "guardrailCoverage": coverage,
        })
    } else {
        serde_json::json!({"action": "NONE", "outputs": [], "assessments": [{}], "usage": usage, "guardrailCoverage": coverage})
    };
    axum::Json(reply).into_response()
}

/// The texts and images (format, decoded bytes) of `ApplyGuardrail`'s
/// `content`, or why Bedrock's model refuses it (`GuardrailContentBlock` is
/// a union of `text` and `image`; `GuardrailImageFormat` is `png` or
/// `jpeg`; the image source is a union with its one member `bytes`, a blob
/// of at least one byte).
#[allow(clippy::type_complexity)]
fn guardrail_content(content: &Value) -> Result<(Vec<String>, Vec<(String, Vec<u8>)>), String> {
    use base64::Engine;
    let blocks = content.as_array().ok_or("content is not a list")?;
    let (mut texts, mut images) = (Vec::new(), Vec::new());
    for block in blocks {
        match (block.get("text"), block.get("image")) {
            (Some(text), None) => texts.push(text["text"].as_str().ok_or("text.text is not a string")?.to_owned()),
            (None, Some(image)) => {
                let format = image["format"].as_str().unwrap_or_default();
                if !["png", "jpeg"].contains(&format) {
                    return Err(format!("image.format {format:?} is not png or jpeg"));
                }
                let encoded = image["source"]["bytes"].as_str().ok_or("image.source.bytes is missing")?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .map_err(|err| format!("image.source.bytes: {err}"))?;
                if bytes.is_empty() {
                    return Err("image.source.bytes is empty".into());
                }
                images.push((format.to_owned(), bytes));
            }
            _ => return Err("a content block is not exactly one of text and image".into()),
        }
    }
    Ok((texts, images))
}

/// Bedrock Agent Runtime's `Retrieve`, signed for `bedrock` or refused.
async fn retrieve(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let secret_key = std::env::var("AWS_SECRET_ACCESS_KEY").unwrap_or_default();
    let checked = testkit::sigv4_check::verify_received(&parts, &body, &secret_key)
        .and_then(
            |signed| if signed.service == "bedrock" { Ok(()) } else { Err(format!("signed for {}", signed.service)) },
        )
        .and_then(|()| serde_json::from_slice::<Value>(&body).map_err(|err| err.to_string()));
    let refused = checked.is_err();
    shared.retrieves.lock().expect("retrieves lock").push(checked);
    if refused {
        let body = serde_json::json!({"message": "The request signature we calculated does not match"});
        return (StatusCode::FORBIDDEN, [("x-amzn-errortype", "InvalidSignatureException")], axum::Json(body))
            .into_response();
    }
    match shared.knowledge.lock().expect("knowledge lock").get(&id) {
        Some(answer) => axum::Json(answer.clone()).into_response(),
        None => {
            let body = serde_json::json!({"message": format!("Knowledge base {id} does not exist")});
            (StatusCode::NOT_FOUND, [("x-amzn-errortype", "ResourceNotFoundException")], axum::Json(body))
                .into_response()
        }
    }
}
