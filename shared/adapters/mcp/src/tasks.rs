//! MCP tasks (2025-11-25): a long call the server runs on its own while the
//! client polls. `tools/call` with a `task` field answers at once with the
//! task's id; `tasks/get` says how it goes; `tasks/result` gives the call's
//! result once it is done; `tasks/cancel` stops it.
//!
//! rmcp 3.11 speaks the later tasks extension (SEP-2663) and drops a tool's
//! `execution.taskSupport` from `tools/list`, so this module speaks the
//! 2025-11-25 methods itself: plain JSON-RPC over Streamable HTTP, on the
//! process's HTTP client, with a session of its own. A task lives in its
//! session on many servers (the reference server keeps tasks per session),
//! so the session's id travels with the task ([`McpTask::session`]): the
//! worker that polls it from a continuation, in another process, asks in
//! the same session. A server that forgot the session answers 404: the
//! task is gone with it ([`McpError::Server`]).
//!
//! Every answer is bounded ([`super::MAX_MCP_ANSWER_BYTES`]); a server's
//! requests on a task's stream (input it needs) are not answered here: a
//! task that needs input is reported as such and cancelled by its caller.

use assistant_core::mcp::{McpEndpoint, McpError, McpTask, McpTaskState, TaskSupport};
use assistant_core::ports::RequestSigner;
use futures_util::StreamExt;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The protocol version whose tasks this module speaks.
pub(crate) const PROTOCOL: &str = "2025-11-25";
/// How long a server is asked to keep a task and its result.
const TASK_TTL_MS: u64 = 60 * 60 * 1000;
/// The least time between two polls, whatever the server suggests.
pub(crate) const LEAST_POLL: Duration = Duration::from_secs(1);
/// The most time between two polls, whatever the server suggests.
pub(crate) const MOST_POLL: Duration = Duration::from_secs(30);

/// One server's task requests: its own session, opened at the first task.
pub(crate) struct Tasks {
    http: reqwest::Client,
    endpoint: McpEndpoint,
    signer: Arc<dyn RequestSigner>,
    /// The session this process opened, and which tools run as tasks
    /// (from its own `tools/list`, which keeps `execution`).
    opened: tokio::sync::Mutex<Option<Opened>>,
    ids: AtomicU64,
}

struct Opened {
    session: Option<String>,
    support: HashMap<String, TaskSupport>,
}

impl Tasks {
    pub(crate) fn new(http: reqwest::Client, endpoint: McpEndpoint, signer: Arc<dyn RequestSigner>) -> Self {
        Self { http, endpoint, signer, opened: tokio::sync::Mutex::default(), ids: AtomicU64::new(1) }
    }

    /// Whether `tool` runs as a task, as the server lists it.
    pub(crate) async fn support(&self, tool: &str) -> Result<TaskSupport, McpError> {
        self.opened(|opened| opened.support.get(tool).copied().unwrap_or_default()).await
    }

    /// `read` of this process's session, opened first if it is not yet.
    async fn opened<T>(&self, read: impl FnOnce(&Opened) -> T) -> Result<T, McpError> {
        let mut opened = self.opened.lock().await;
        if opened.is_none() {
            *opened = Some(self.open().await?);
        }
        Ok(read(opened.as_ref().expect("opened above")))
    }

    /// `tools/call` as a task: the task the server started.
    pub(crate) async fn start(&self, tool: &str, arguments: Map<String, Value>) -> Result<McpTask, McpError> {
        let session = self.opened(|opened| opened.session.clone()).await?;
        let params = json!({"name": tool, "arguments": arguments, "task": {"ttl": TASK_TTL_MS}});
        let answer = self.request(session.as_deref(), "tools/call", params).await?;
        let task = answer.get("task").ok_or_else(|| {
            McpError::Server("the server answered a task's call with something other than a task".into())
        })?;
        let (state, _) = state(task)?;
        let id = text(task, "taskId").filter(|id| !id.is_empty() && id.len() <= MAX_TASK_ID).ok_or_else(|| {
            McpError::Server(format!("the server's task id is missing or over {MAX_TASK_ID} characters"))
        })?;
        if let McpTaskState::Failed(message) = &state {
            return Err(McpError::Server(format!("the task failed at once: {message}")));
        }
        Ok(McpTask { id, session, poll: poll_interval(task) })
    }

    /// `tasks/get`: how the task goes, and when to ask again.
    pub(crate) async fn state(&self, task: &McpTask) -> Result<(McpTaskState, Duration), McpError> {
        let answer = self.request(task.session.as_deref(), "tasks/get", json!({"taskId": task.id})).await?;
        let (state, poll) = state(&answer)?;
        Ok((state, poll.unwrap_or(task.poll)))
    }

    /// `tasks/result`: the call's result, once the task is done.
    pub(crate) async fn result(&self, task: &McpTask) -> Result<Value, McpError> {
        self.request(task.session.as_deref(), "tasks/result", json!({"taskId": task.id})).await
    }

    /// `tasks/cancel`.
    pub(crate) async fn cancel(&self, task: &McpTask) -> Result<(), McpError> {
        self.request(task.session.as_deref(), "tasks/cancel", json!({"taskId": task.id})).await.map(drop)
    }

    /// `initialize` (tasks offered), `notifications/initialized`, and every
    /// page of `tools/list` as the server sends it.
    async fn open(&self) -> Result<Opened, McpError> {
        let params = json!({
            "protocolVersion": PROTOCOL,
            "capabilities": {"tasks": {"cancel": {}}},
            "clientInfo": {"name": "slack-assistant", "version": env!("CARGO_PKG_VERSION")}
        });
        let (_, session) = self.post(None, &self.message("initialize", params), true).await?;
        let session = session.filter(|id| id.len() <= MAX_SESSION_ID && id.chars().all(|c| c.is_ascii_graphic()));
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(session.as_deref(), &initialized, false).await?;
        let mut support = HashMap::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let params = cursor.as_ref().map_or_else(|| json!({}), |cursor| json!({"cursor": cursor}));
            let page = self.request(session.as_deref(), "tools/list", params).await?;
            for tool in page.get("tools").and_then(Value::as_array).into_iter().flatten() {
                let Some(name) = text(tool, "name") else { continue };
                let support_of = match tool.pointer("/execution/taskSupport").and_then(Value::as_str) {
                    Some("required") => TaskSupport::Required,
                    Some("optional") => TaskSupport::Optional,
                    _ => TaskSupport::Forbidden,
                };
                support.insert(name, support_of);
            }
            cursor = text(&page, "nextCursor");
            if cursor.is_none() {
                break;
            }
        }
        Ok(Opened { session, support })
    }

    fn message(&self, method: &str, params: Value) -> Value {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    /// One request: its result, or the server's error.
    async fn request(&self, session: Option<&str>, method: &str, params: Value) -> Result<Value, McpError> {
        let message = self.message(method, params);
        let (answer, _) = self.post(session, &message, true).await?;
        let answer = answer.ok_or_else(|| McpError::Server(format!("no answer to {method}")))?;
        if let Some(error) = answer.get("error") {
            let words = text(error, "message").unwrap_or_default();
            let words: String = words.chars().take(MAX_ERROR_CHARS).collect();
            return Err(McpError::Server(format!("{method}: {words}")));
        }
        answer.get("result").cloned().ok_or_else(|| McpError::Server(format!("{method} answered without a result")))
    }

    /// POSTs `message`; with `answered`, reads the JSON-RPC answer with its
    /// id (a JSON body, or the event that carries it on an SSE stream).
    async fn post(
        &self,
        session: Option<&str>,
        message: &Value,
        answered: bool,
    ) -> Result<(Option<Value>, Option<String>), McpError> {
        let body = serde_json::to_vec(message).map_err(|err| McpError::Server(err.to_string()))?;
        let mut headers: Vec<(String, String)> = self.endpoint.headers.clone();
        headers.push(("mcp-protocol-version".into(), PROTOCOL.into()));
        if let Some(scope) = &self.endpoint.signing {
            let unsigned = assistant_core::ports::UnsignedRequest {
                method: "POST",
                url: &self.endpoint.url,
                headers: &headers,
                body: &body,
            };
            let signature = self
                .signer
                .sign(unsigned, scope)
                .await
                .map_err(|err| McpError::Server(format!("cannot sign: {err}")))?;
            headers.extend(signature);
        }
        let mut request = self
            .http
            .post(&self.endpoint.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        for (name, value) in &headers {
            request = request.header(name, value);
        }
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let response = request.send().await.map_err(|err| McpError::Unreachable(err.to_string()))?;
        let status = response.status().as_u16();
        match status {
            401 | 403 => return Err(McpError::Unauthorized { status }),
            404 if session.is_some() => {
                return Err(McpError::Server("the server no longer knows the session that started the task".into()));
            }
            200..=299 => {}
            _ => {
                // The server's words, bounded: a JSON-RPC error says why.
                let said = json_answer(response).await.ok();
                let why = said.as_ref().and_then(|answer| answer.pointer("/error/message")).and_then(Value::as_str);
                let why: String = why.unwrap_or("no reason given").chars().take(MAX_ERROR_CHARS).collect();
                return Err(McpError::Server(format!("HTTP {status}: {why}")));
            }
        }
        let session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        if !answered {
            return Ok((None, session));
        }
        let id = message.get("id").cloned();
        let event_stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        let answer = if event_stream { sse_answer(response, &id).await? } else { json_answer(response).await? };
        Ok((Some(answer), session))
    }
}

/// The most of a server's JSON answer read, and of all events on a stream.
const MAX_ANSWER: usize = super::MAX_MCP_ANSWER_BYTES;
/// A task id kept in the turn, at most.
pub const MAX_TASK_ID: usize = 200;
const MAX_SESSION_ID: usize = 200;
const MAX_LIST_PAGES: usize = 20;
const MAX_ERROR_CHARS: usize = 500;

async fn json_answer(response: reqwest::Response) -> Result<Value, McpError> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|err| McpError::Unreachable(err.to_string()))?;
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(McpError::Server("the answer is over the size this client reads".into()));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|_| McpError::Server("the answer is not JSON".into()))
}

/// The message answering `id` on an SSE stream; the server's other
/// messages on it (notifications, its own requests) are passed over.
async fn sse_answer(response: reqwest::Response, id: &Option<Value>) -> Result<Value, McpError> {
    let mut events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
    let mut read = 0;
    while let Some(event) = events.next().await {
        let event = event.map_err(|err| McpError::Unreachable(err.to_string()))?;
        let Some(data) = event.data else { continue };
        read += data.len();
        if read > MAX_ANSWER {
            return Err(McpError::Server("the answer is over the size this client reads".into()));
        }
        let Ok(message) = serde_json::from_str::<Value>(&data) else { continue };
        let answers = message.get("result").is_some() || message.get("error").is_some();
        if answers && message.get("id") == id.as_ref() {
            return Ok(message);
        }
    }
    Err(McpError::Server("the server's stream ended without an answer".into()))
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The server's suggested wait between polls, within our bounds.
fn poll_interval(task: &Value) -> Duration {
    let suggested = task.get("pollInterval").and_then(Value::as_u64).map(Duration::from_millis);
    suggested.unwrap_or(LEAST_POLL).clamp(LEAST_POLL, MOST_POLL)
}

/// A task's state as a `Task` object says it, and the suggested poll.
fn state(task: &Value) -> Result<(McpTaskState, Option<Duration>), McpError> {
    let message = text(task, "statusMessage").map(|m| m.chars().take(MAX_ERROR_CHARS).collect::<String>());
    let state = match task.get("status").and_then(Value::as_str) {
        Some("working") => McpTaskState::Working(message),
        Some("input_required") => McpTaskState::InputRequired(message),
        Some("completed") => McpTaskState::Completed,
        Some("failed") => McpTaskState::Failed(message.unwrap_or_else(|| "no reason given".into())),
        Some("cancelled") => McpTaskState::Cancelled,
        other => {
            let other: String = other.unwrap_or("none").chars().take(40).collect();
            return Err(McpError::Server(format!("a task status this client does not know: {other:?}")));
        }
    };
    let poll = task.get("pollInterval").is_some().then(|| poll_interval(task));
    Ok((state, poll))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tasks_state_and_poll_come_from_its_object_and_unknown_statuses_are_refused() {
        let (working, poll) =
            state(&json!({"status": "working", "statusMessage": "Gathering", "pollInterval": 1500})).unwrap();
        assert_eq!(working, McpTaskState::Working(Some("Gathering".into())));
        assert_eq!(poll, Some(Duration::from_millis(1500)));
        assert_eq!(state(&json!({"status": "completed"})).unwrap(), (McpTaskState::Completed, None));
        assert_eq!(state(&json!({"status": "failed"})).unwrap().0, McpTaskState::Failed("no reason given".into()));
        assert!(state(&json!({"status": "exploded"})).is_err());
        assert!(state(&json!({})).is_err());
        // A server may not make the client poll in a tight loop, nor wait for ever.
        assert_eq!(poll_interval(&json!({"pollInterval": 1})), LEAST_POLL);
        assert_eq!(poll_interval(&json!({"pollInterval": 86_400_000})), MOST_POLL);
        assert_eq!(poll_interval(&json!({})), LEAST_POLL);
    }
}
