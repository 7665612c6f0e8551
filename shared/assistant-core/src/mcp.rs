//! MCP (Model Context Protocol) servers as a port: the worker discovers a
//! server's tools and calls them through [`McpConnector`] and
//! [`McpSession`], never knowing the wire (`shared/adapters/mcp` speaks
//! Streamable HTTP with the official SDK; `testkit` has an in-memory double).
//!
//! What a server says is untrusted: its names, descriptions, schemas,
//! annotations and results are data the worker checks, caps and redacts.

use async_trait::async_trait;
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Where a server is and what to send it. `headers` hold resolved secrets
/// (`Authorization: Bearer …`): `Debug` shows their names only.
#[derive(Clone, PartialEq, Eq)]
pub struct McpEndpoint {
    /// The configuration's name for the server (logs and errors).
    pub name: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// Each request signed with SigV4 for this scope (`"auth": "aws_iam"`).
    pub signing: Option<crate::ports::AwsScope>,
    /// The server may ask the person who asked to open links (elicitation
    /// in URL mode, offered at `initialize`; `elicitation` in the
    /// configuration).
    pub elicitation: bool,
    /// Tools the server runs as tasks are called as tasks (`tasks` in the
    /// configuration).
    pub tasks: bool,
}

impl fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("McpEndpoint")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("headers", &names)
            .field("elicitation", &self.elicitation)
            .field("tasks", &self.tasks)
            .finish()
    }
}

/// One tool as the server lists it (kept as JSON where a server's list
/// is cached).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct McpToolInfo {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// `readOnlyHint`; `None` when the server gives no annotation.
    pub read_only: Option<bool>,
    /// `destructiveHint`; `None` when the server gives no annotation.
    pub destructive: Option<bool>,
}

/// One piece of a tool's result.
#[derive(Debug, Clone, PartialEq)]
pub enum McpContent {
    Text(String),
    /// An image or audio clip: kind (`image`, `audio`), MIME type and the
    /// decoded size; the data itself is never kept.
    Media {
        kind: &'static str,
        mime_type: String,
        bytes: usize,
    },
    /// An embedded resource: its URI, MIME type and size (text or blob).
    Resource {
        uri: String,
        mime_type: Option<String>,
        bytes: usize,
    },
    /// A link to a resource the server holds.
    Link {
        uri: String,
        name: String,
        mime_type: Option<String>,
    },
}

/// A `tools/call` result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpCallResult {
    pub content: Vec<McpContent>,
    /// `structuredContent`, as sent.
    pub structured: Option<Value>,
    /// `isError: true`: the tool ran and failed; the content says why.
    pub is_error: bool,
}

/// One prompt as the server lists it (`prompts/list`; kept with the
/// server's tool list).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct McpPromptInfo {
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// It has an argument it cannot be used without.
    #[serde(default)]
    pub needs_arguments: bool,
}

/// One part of a `resources/read` result: text is kept, a blob only
/// named and sized (its data is never kept).
#[derive(Debug, Clone, PartialEq)]
pub enum McpResourcePart {
    Text { uri: String, mime_type: Option<String>, text: String },
    Blob { uri: String, mime_type: Option<String>, bytes: usize },
}

/// Whether a tool runs as a task (MCP's `execution.taskSupport`): a long
/// call the server runs on its own while the client polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    #[default]
    Forbidden,
    Optional,
    Required,
}

/// A task a server started for a call: its id, and the session that knows
/// it (a task may live only in its session, so whoever polls it asks in
/// that one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpTask {
    pub id: String,
    pub session: Option<String>,
    /// How long to wait before asking how it goes.
    pub poll: Duration,
}

/// How a task goes (`tasks/get`); what the server says of it is its own
/// words, untrusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTaskState {
    Working(Option<String>),
    /// It waits for input from the person, which this client gives only
    /// while a call runs.
    InputRequired(Option<String>),
    Completed,
    Failed(String),
    Cancelled,
}

/// Why a server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// HTTP 401 or 403: the configured credentials are missing, wrong or
    /// revoked.
    #[error("the server refused our credentials (HTTP {status})")]
    Unauthorized { status: u16 },
    #[error("the server could not be reached: {0}")]
    Unreachable(String),
    #[error("the server did not answer within {} s", .0.as_secs_f64())]
    TimedOut(Duration),
    /// A JSON-RPC error or an answer that is not MCP.
    #[error("the server answered with an error: {0}")]
    Server(String),
    /// The call needs the person to open these links first (JSON-RPC error
    /// -32042, `URLElicitationRequiredError`): shown to them where the
    /// server may elicit, then the call can be made again.
    #[error("the server needs the person to open a link first")]
    LinkRequired(Vec<LinkRequest>),
}

/// A server's request that the person who asked open a link (MCP
/// elicitation in URL mode): to sign in somewhere, pay, or consent, out of
/// the bot's sight. What the server says is untrusted: the link must be
/// `https`, the message is shown as plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkRequest {
    pub url: String,
    pub message: String,
    /// The server's id for it, echoed in its completion notice.
    pub elicitation_id: String,
}

/// The longest link a server may ask the person to open (Slack's limit on
/// a button's `url` is 3,000).
pub const MAX_LINK_URL: usize = 2_000;

impl LinkRequest {
    /// Why the link may not be shown, if it may not: not `https`, a
    /// userinfo part (`https://good.example@evil.example`), too long, or
    /// characters Slack's link syntax would read.
    pub fn refused(&self) -> Option<&'static str> {
        let Some(rest) = self.url.strip_prefix("https://") else { return Some("not an https link") };
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if host.is_empty() || host.contains('@') {
            return Some("no host, or a user name before it");
        }
        if self.url.len() > MAX_LINK_URL {
            return Some("longer than a link may be");
        }
        if self.url.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | '|' | '"')) {
            return Some("characters a link may not hold");
        }
        None
    }
}

/// How the person answered a server's form.
#[derive(Debug, Clone, PartialEq)]
pub enum FormAnswer {
    Accepted(Map<String, Value>),
    /// They said no.
    Declined,
    /// Nobody answered in time, or the form could not be put to them.
    Cancelled,
}

/// What a server asks of the person who asked, while a call runs: to open
/// a link, or to fill in a form.
#[async_trait]
pub trait Elicitor: Send + Sync {
    /// `server` asks the person to open `request.url`: `true` once it is
    /// shown to them (only them), `false` where it may not be (the link is
    /// refused, or could not be handed on).
    async fn show_link(&self, server: &str, request: &LinkRequest) -> bool;

    /// `server` asks the person to fill in the form `schema` describes
    /// (MCP's `requestedSchema`), saying `message`; they have `wait` to
    /// answer. By default no form is put to anyone: declined.
    async fn ask_form(&self, server: &str, message: &str, schema: &Value, wait: Duration) -> FormAnswer {
        let _ = (server, message, schema, wait);
        FormAnswer::Declined
    }
}

/// The person who asked a turn, as a server's requests reach them: links
/// and forms in an ephemeral message in their thread, only they see
/// ([`crate::messages::ReplyMessage::OpenLink`],
/// [`crate::messages::ReplyMessage::FormPrompt`]); a form's answer comes
/// back through the table ([`crate::elicitation::Forms`]), kept by the
/// ingress from their modal.
pub struct AskingPerson {
    pub replies: Arc<dyn crate::ports::ReplyQueue>,
    /// Where forms wait for answers; `None`: forms are declined.
    pub forms: Option<crate::elicitation::Forms>,
    pub clock: Arc<dyn crate::Clock>,
    pub turn: crate::turn::TurnId,
    pub thread: crate::messages::ThreadRef,
    pub user: slack::UserId,
}

/// The least time worth putting a form to a person; with less left in the
/// call, the server is told `cancel` at once.
pub const LEAST_FORM_WAIT: Duration = Duration::from_secs(10);
/// How often a waiting form is looked at, at most.
pub const FORM_POLL: Duration = Duration::from_secs(2);

#[async_trait]
impl Elicitor for AskingPerson {
    async fn show_link(&self, server: &str, request: &LinkRequest) -> bool {
        if let Some(reason) = request.refused() {
            tracing::warn!(server, reason, "a server's link was not shown");
            return false;
        }
        let message: String = request.message.chars().take(MAX_LINK_MESSAGE).collect();
        let open = crate::messages::ReplyMessage::OpenLink {
            turn_id: self.turn.clone(),
            thread: self.thread.clone(),
            user: self.user.clone(),
            server: server.to_owned(),
            message,
            url: request.url.clone(),
            elicitation_id: request.elicitation_id.chars().take(MAX_ELICITATION_ID).collect(),
        };
        match self.replies.send(&open).await {
            Ok(()) => true,
            Err(err) => {
                tracing::warn!(server, error = %err, "a server's link could not be handed to the responder");
                false
            }
        }
    }

    async fn ask_form(&self, server: &str, message: &str, schema: &Value, wait: Duration) -> FormAnswer {
        use crate::elicitation::{Form, FormState, PendingForm};
        let Some(forms) = &self.forms else { return FormAnswer::Declined };
        let form = match Form::read(schema) {
            Ok(form) => form,
            Err(reason) => {
                tracing::warn!(server, reason, "a server's form is not one this client fills in: declined");
                return FormAnswer::Declined;
            }
        };
        if wait < LEAST_FORM_WAIT {
            tracing::warn!(server, "a form asked for with too little of the call left: cancelled");
            return FormAnswer::Cancelled;
        }
        let now = self.clock.now_unix();
        let pending = PendingForm {
            id: crate::ports::WriteToken::fresh().as_str().to_owned(),
            team: self.thread.team.clone(),
            user: self.user.clone(),
            server: server.to_owned(),
            message: message.chars().take(MAX_LINK_MESSAGE).collect(),
            form,
            expires_at: now + i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
            state: FormState::Open,
        };
        if let Err(err) = forms.open(&pending).await {
            tracing::warn!(server, error = %err, "a server's form could not be kept: cancelled");
            return FormAnswer::Cancelled;
        }
        let prompt = crate::messages::ReplyMessage::FormPrompt {
            turn_id: self.turn.clone(),
            thread: self.thread.clone(),
            user: self.user.clone(),
            server: server.to_owned(),
            message: pending.message.clone(),
            form_id: pending.id.clone(),
            expires_at: pending.expires_at,
        };
        if let Err(err) = self.replies.send(&prompt).await {
            tracing::warn!(server, error = %err, "a server's form could not be handed to the responder: cancelled");
            return FormAnswer::Cancelled;
        }
        tracing::info!(server, form = %pending.id, wait_secs = wait.as_secs(), "a server's form put to the person who asked");
        self.await_answer(forms, &pending).await
    }
}

impl AskingPerson {
    /// The person's answer to `pending`, looked for every [`FORM_POLL`]
    /// until it expires; then it is closed (a late answer is refused) and
    /// the server told `cancel`.
    async fn await_answer(
        &self,
        forms: &crate::elicitation::Forms,
        pending: &crate::elicitation::PendingForm,
    ) -> FormAnswer {
        use crate::elicitation::FormState;
        loop {
            let now = self.clock.now_unix();
            let state = match forms.get(&pending.id).await {
                Ok(Some((_, form))) => form.state,
                Ok(None) => FormState::Expired,
                Err(err) => {
                    tracing::warn!(form = %pending.id, error = %err, "a waiting form could not be read");
                    FormState::Open
                }
            };
            match state {
                FormState::Answered { content } => return FormAnswer::Accepted(content),
                FormState::Declined => return FormAnswer::Declined,
                FormState::Expired => return FormAnswer::Cancelled,
                FormState::Open if now >= pending.expires_at => {
                    match forms.settle(&pending.id, &pending.team, &pending.user, FormState::Expired, now).await {
                        // Answered or declined at the last moment: read it.
                        Ok(Err(crate::elicitation::NotTaken::Settled)) => continue,
                        _ => {
                            tracing::info!(form = %pending.id, "nobody answered a server's form in time: cancelled");
                            return FormAnswer::Cancelled;
                        }
                    }
                }
                FormState::Open => {
                    let left = Duration::from_secs(u64::try_from(pending.expires_at - now).unwrap_or(0));
                    tokio::time::sleep(FORM_POLL.min(left.max(Duration::from_millis(200)))).await;
                }
            }
        }
    }
}

/// The most of a server's message about a link that is kept.
pub const MAX_LINK_MESSAGE: usize = 1_000;
/// The most of a server's id for a link that is kept (in a queue message's
/// deduplication id).
pub const MAX_ELICITATION_ID: usize = 40;

/// An initialized session with one server. Implementations re-initialize
/// an expired session themselves and retry the request once.
#[async_trait]
pub trait McpSession: Send + Sync {
    /// Every tool the server offers (all pages of `tools/list`).
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError>;

    /// Calls `name`; past `timeout` the request is cancelled (the server is
    /// told) and the answer is [`McpError::TimedOut`].
    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<McpCallResult, McpError>;

    /// [`Self::call_tool`] for a person: what the server asks of them while
    /// the call runs (links to open) goes to `elicitor`. By default, as
    /// `call_tool` (a session that offers no elicitation).
    async fn call_tool_eliciting(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
        elicitor: Arc<dyn Elicitor>,
    ) -> Result<McpCallResult, McpError> {
        let _ = elicitor;
        self.call_tool(name, arguments, timeout).await
    }

    /// Reads the resource `uri` from this server (`resources/read`): the
    /// URI goes to the server as it is, and nothing else ever fetches it.
    /// Past `timeout` the request is cancelled. A session that offers no
    /// resources answers [`McpError::Server`].
    async fn read_resource(&self, uri: &str, timeout: Duration) -> Result<Vec<McpResourcePart>, McpError> {
        let _ = (uri, timeout);
        Err(McpError::Server("this server offers no resources".into()))
    }
    /// Every prompt the server offers (all pages of `prompts/list`). A
    /// session that offers none answers [`McpError::Server`].
    async fn list_prompts(&self) -> Result<Vec<McpPromptInfo>, McpError> {
        Err(McpError::Server("this server offers no prompts".into()))
    }

    /// Whether `tool` runs as a task. A session that offers no tasks: never.
    async fn task_support(&self, tool: &str) -> Result<TaskSupport, McpError> {
        let _ = tool;
        Ok(TaskSupport::Forbidden)
    }

    /// Calls `name` as a task (MCP tasks): the task, at once.
    async fn start_task(&self, name: &str, arguments: Map<String, Value>) -> Result<McpTask, McpError> {
        let _ = (name, arguments);
        Err(McpError::Server("this server runs no tasks".into()))
    }

    /// How `task` goes, and how long to wait before asking again.
    async fn task_state(&self, task: &McpTask) -> Result<(McpTaskState, Duration), McpError> {
        let _ = task;
        Err(McpError::Server("this server runs no tasks".into()))
    }

    /// The result of `task`, once it completed.
    async fn task_result(&self, task: &McpTask) -> Result<McpCallResult, McpError> {
        let _ = task;
        Err(McpError::Server("this server runs no tasks".into()))
    }

    /// Asks the server to stop `task`.
    async fn cancel_task(&self, task: &McpTask) -> Result<(), McpError> {
        let _ = task;
        Err(McpError::Server("this server runs no tasks".into()))
    }

    /// How many `notifications/tools/list_changed` the server has sent this
    /// session: when it rises, what `list_tools` said is out of date.
    fn tool_list_changes(&self) -> u64 {
        0
    }
}

/// Opens sessions (`initialize`).
#[async_trait]
pub trait McpConnector: Send + Sync {
    async fn connect(&self, endpoint: &McpEndpoint) -> Result<Arc<dyn McpSession>, McpError>;
}

/// For deployments and tests with no MCP servers: every connection fails.
pub struct NoMcpServers;

#[async_trait]
impl McpConnector for NoMcpServers {
    async fn connect(&self, endpoint: &McpEndpoint) -> Result<Arc<dyn McpSession>, McpError> {
        Err(McpError::Unreachable(format!("no MCP client in this build ({})", endpoint.name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_links_to_a_named_host_without_a_user_name_or_link_syntax_are_shown() {
        let link = |url: &str| LinkRequest { url: url.into(), message: String::new(), elicitation_id: String::new() };
        for good in
            ["https://example.com", "https://idp.example.com/authorize?state=a&x=1#frag", "https://[::1]:8443/x"]
        {
            assert_eq!(link(good).refused(), None, "{good}");
        }
        for bad in [
            "http://example.com/",
            "javascript:alert(1)",
            "HTTPS://example.com",
            "https://",
            "https:///path",
            "https://good.example@evil.example/",
            "https://example.com/a b",
            "https://example.com/<!channel>",
            "https://example.com/x|label",
        ] {
            assert!(link(bad).refused().is_some(), "{bad}");
        }
        assert!(link(&format!("https://example.com/{}", "a".repeat(MAX_LINK_URL))).refused().is_some());
    }
}
