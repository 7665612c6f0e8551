//! The Slack Web API client (<https://api.slack.com/web>): form-encoded POSTs
//! to `{base}/{method}` with the bot token, JSON replies with `ok`.
//!
//! Failures are retried a bounded number of times: a 429 after its
//! `Retry-After` when that is short, a 5xx or a transport error after a
//! backoff. What is left is a [`WebError`] that says whether a later retry
//! could succeed. `ok: false` errors (`channel_not_found`, `invalid_auth`…)
//! are never retried: the same call fails the same way. `chat.postMessage`
//! is retried only after a 429: after a 5xx the message may be posted, and
//! only the caller can look (the responder does, by message metadata).

use crate::output_guard::OutputGuard;
use assistant_core::retry::{self, Backoff, Failed, Verdict};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use slack::{ChannelId, Ts, UserId};
use std::fmt;
use std::time::Duration;
use tracing::warn;

pub const DEFAULT_BASE_URL: &str = "https://slack.com/api";
/// One Web API request, connection included, at most.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A bot token (`xoxb-…`). Its `Debug` never prints it.
#[derive(Clone)]
pub struct BotToken(String);

impl BotToken {
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The token itself, for a request's `Authorization` header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for BotToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BotToken(<redacted>)")
    }
}

/// How hard to try before giving up.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub attempts: u32,
    /// The first backoff after a 5xx or transport error; doubles each time.
    pub backoff: Duration,
    /// A 429 whose `Retry-After` is longer than this is returned, not waited
    /// out (the caller's queue retries later instead).
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { attempts: 3, backoff: Duration::from_millis(300), max_wait: Duration::from_secs(5) }
    }
}

/// The process's HTTP client for Slack (and, in the worker, the HTTP
/// tools): built once. Only the connection is bounded here; each use bounds
/// its own requests (Slack calls by [`REQUEST_TIMEOUT`], tools by their
/// declared timeout).
/// Redirects are never followed: Slack's API does not redirect, and an HTTP
/// tool's secret headers must not travel to where a team's API redirects
/// (another host, 127.0.0.1, the instance metadata address). Names that
/// resolve only to internal addresses are refused ([`crate::egress`]).
pub fn http_client() -> reqwest::Client {
    https::client_builder()
        .connect_timeout(Duration::from_secs(3))
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(std::sync::Arc::new(crate::egress::NoInternalAddresses))
        .build()
        .expect("a client with rustls and a connect timeout builds")
}

#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("Slack rate limited {method}; retry after {} s", retry_after.as_secs())]
    RateLimited { method: String, retry_after: Duration },
    #[error("Slack {method} answered ok:false: {error}")]
    Api { method: String, error: String },
    #[error("Slack {method} answered HTTP {status}")]
    Http { method: String, status: u16 },
    #[error("Slack {method} could not be reached: {source}")]
    Transport {
        method: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("Slack {method} answered something unreadable: {source}")]
    Malformed {
        method: String,
        #[source]
        source: serde_json::Error,
    },
}

impl WebError {
    /// Whether the same call may succeed later.
    pub fn is_retryable(&self) -> bool {
        match self {
            WebError::RateLimited { .. } | WebError::Transport { .. } => true,
            WebError::Http { status, .. } => *status >= 500,
            WebError::Api { .. } | WebError::Malformed { .. } => false,
        }
    }
}

/// Which failures a call may be retried after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    Everything,
    /// Only a 429, which Slack answers without doing anything. For calls
    /// that are not idempotent (`chat.postMessage`): after a 5xx or a lost
    /// response the message may be posted, and only the caller can look.
    RateLimitOnly,
    /// Never, not even a 429: the caller hears it at once and decides
    /// (a stream's calls, whose caller keeps the text and goes on rather
    /// than hold a worker for Slack's `Retry-After`).
    Never,
}

#[derive(Debug, Clone)]
pub struct WebClient {
    http: reqwest::Client,
    base_url: String,
    token: BotToken,
    retry: RetryPolicy,
    /// Calls retried so far by this client and its clones (a metric).
    retries: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Who the token is, asked once for this client and its clones.
    identity: std::sync::Arc<tokio::sync::OnceCell<AuthTest>>,
    /// What every request's text goes through (redaction, special mentions).
    guard: OutputGuard,
}

#[derive(Deserialize)]
struct Envelope {
    ok: bool,
    #[serde(default)]
    error: Option<String>,
}

impl WebClient {
    pub fn new(http: reqwest::Client, base_url: impl Into<String>, token: BotToken) -> Self {
        Self {
            http,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            token,
            retry: RetryPolicy::default(),
            retries: Default::default(),
            identity: Default::default(),
            guard: OutputGuard::default(),
        }
    }

    /// This client, sending through `guard` (by default: redaction, and no
    /// special mention may ping).
    pub fn with_guard(mut self, guard: OutputGuard) -> Self {
        self.guard = guard;
        self
    }

    /// How many calls this client (and its clones) retried so far.
    pub fn retries(&self) -> u64 {
        self.retries.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Calls `method` with form parameters; retries as the module says.
    pub async fn call<T: DeserializeOwned>(&self, method: &str, params: &[(&str, &str)]) -> Result<T, WebError> {
        self.call_retrying(method, params, Retry::Everything).await
    }

    pub(crate) async fn call_retrying<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &[(&str, &str)],
        retry: Retry,
    ) -> Result<T, WebError> {
        // Every request, whoever wrote it, through the one output guard.
        let guarded: Vec<(&str, std::borrow::Cow<'_, str>)> =
            params.iter().map(|(name, value)| (*name, self.guard.param(name, value))).collect();
        let params: Vec<(&str, &str)> = guarded.iter().map(|(name, value)| (*name, value.as_ref())).collect();
        let params = params.as_slice();
        let again = |failed: Failed<'_, WebError>| {
            if retry == Retry::Never {
                return Verdict::Stop;
            }
            let wait = match failed.error {
                WebError::RateLimited { retry_after, .. } if *retry_after <= self.retry.max_wait => *retry_after,
                WebError::Transport { .. } | WebError::Http { status: 500.., .. } if retry == Retry::Everything => {
                    failed.wait
                }
                _ => return Verdict::Stop,
            };
            let (attempt, error) = (failed.attempt, failed.error);
            warn!(method, attempt, wait_ms = wait.as_millis() as u64, error = %error, "Slack call failed; retrying");
            self.retries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Verdict::RetryAfter(wait)
        };
        let backoff = Backoff::new(self.retry.attempts, self.retry.backoff);
        retry::retry(&backoff, |_| self.call_once(method, params), again).await
    }

    async fn call_once<T: DeserializeOwned>(&self, method: &str, params: &[(&str, &str)]) -> Result<T, WebError> {
        let transport = |source| WebError::Transport { method: method.to_owned(), source };
        let response = self
            .http
            .post(format!("{}/{method}", self.base_url))
            .bearer_auth(&self.token.0)
            .timeout(REQUEST_TIMEOUT)
            .form(params)
            .send()
            .await
            .map_err(transport)?;
        let status = response.status().as_u16();
        if status == 429 {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse().ok())
                .map(Duration::from_secs)
                .unwrap_or(Duration::from_secs(30));
            return Err(WebError::RateLimited { method: method.to_owned(), retry_after });
        }
        if !(200..300).contains(&status) {
            return Err(WebError::Http { method: method.to_owned(), status });
        }
        let body = response.bytes().await.map_err(transport)?;
        let malformed = |source| WebError::Malformed { method: method.to_owned(), source };
        let envelope: Envelope = serde_json::from_slice(&body).map_err(malformed)?;
        if !envelope.ok {
            let error = envelope.error.unwrap_or_else(|| "unknown_error".to_owned());
            return Err(WebError::Api { method: method.to_owned(), error });
        }
        serde_json::from_slice(&body).map_err(malformed)
    }

    /// The messages of a thread, oldest first, the parent included; at most
    /// the last `limit` of them (pages through long threads).
    pub async fn conversations_replies(
        &self,
        channel: &ChannelId,
        thread_ts: &Ts,
        limit: usize,
    ) -> Result<Vec<HistoryMessage>, WebError> {
        const PAGE: &str = "200";
        const MAX_PAGES: usize = 10;
        let mut messages: Vec<HistoryMessage> = Vec::new();
        let mut cursor = String::new();
        for _ in 0..MAX_PAGES {
            let mut params = vec![
                ("channel", channel.as_str()),
                ("ts", thread_ts.as_str()),
                ("limit", PAGE),
                ("include_all_metadata", "true"),
            ];
            if !cursor.is_empty() {
                params.push(("cursor", cursor.as_str()));
            }
            let page: RepliesPage = self.call("conversations.replies", &params).await?;
            messages.extend(page.messages);
            cursor = page.response_metadata.map(|m| m.next_cursor).unwrap_or_default();
            if !page.has_more || cursor.is_empty() {
                break;
            }
        }
        let skip = messages.len().saturating_sub(limit);
        Ok(messages.split_off(skip))
    }

    /// Slack's real-time search as the person whose action token it is
    /// (`assistant.search.context`, one page of at most 20).
    pub async fn search_context(
        &self,
        action_token: &str,
        query: &str,
        channel_types: &str,
        context_channel: &ChannelId,
        limit: usize,
    ) -> Result<Vec<SearchedMessage>, WebError> {
        let limit = limit.clamp(1, 20).to_string();
        let params = [
            ("action_token", action_token),
            ("query", query),
            ("channel_types", channel_types),
            ("content_types", "messages"),
            ("context_channel_id", context_channel.as_str()),
            ("limit", limit.as_str()),
        ];
        let found: SearchContext = self.call("assistant.search.context", &params).await?;
        Ok(found.results.messages)
    }

    /// The channel's newest `limit` top-level messages (at most 200, one
    /// page of `conversations.history`), oldest first.
    pub async fn conversations_history(
        &self,
        channel: &ChannelId,
        limit: usize,
    ) -> Result<Vec<HistoryMessage>, WebError> {
        let limit = limit.clamp(1, 200).to_string();
        let page: RepliesPage = self
            .call(
                "conversations.history",
                &[("channel", channel.as_str()), ("limit", limit.as_str()), ("include_all_metadata", "true")],
            )
            .await?;
        let mut messages = page.messages;
        messages.reverse();
        Ok(messages)
    }
}

impl WebClient {
    /// Uploads `file` without sharing it: `files.getUploadURLExternal`,
    /// then its bytes to the URL Slack gave (which carries its own
    /// authorization: the bot token is not sent there). Its file id. An
    /// upload never shared is discarded by Slack, so retrying is safe.
    pub async fn upload_file(&self, file: &assistant_core::ports::FileUpload) -> Result<String, WebError> {
        #[derive(Deserialize)]
        struct Target {
            upload_url: String,
            file_id: String,
        }
        const METHOD: &str = "files.getUploadURLExternal";
        let length = file.body.len().to_string();
        let target: Target =
            self.call(METHOD, &[("filename", file.filename.as_str()), ("length", length.as_str())]).await?;
        let transport = |source| WebError::Transport { method: METHOD.to_owned(), source };
        let response = self
            .http
            .post(&target.upload_url)
            .timeout(REQUEST_TIMEOUT)
            .body(file.body.clone())
            .send()
            .await
            .map_err(transport)?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(WebError::Http { method: METHOD.to_owned(), status });
        }
        Ok(target.file_id)
    }

    /// A channel's name, topic and purpose.
    pub async fn conversations_info(&self, channel: &ChannelId) -> Result<ConversationInfo, WebError> {
        #[derive(Deserialize)]
        struct Info {
            channel: ConversationInfo,
        }
        let info: Info = self.call("conversations.info", &[("channel", channel.as_str())]).await?;
        Ok(info.channel)
    }
}

/// A message to post or to put in place of another.
#[derive(Debug, Clone)]
pub struct OutgoingMessage<'a> {
    /// mrkdwn; with blocks, what notifications and screen readers show.
    pub text: &'a str,
    /// A JSON array of blocks, if any.
    pub blocks: Option<&'a str>,
    /// A JSON [`MessageMetadata`] object, if any.
    pub metadata: Option<&'a str>,
    /// Let Slack unfurl links and media in it.
    pub unfurl: bool,
}

impl OutgoingMessage<'_> {
    fn params<'p>(&'p self, params: &mut Vec<(&'p str, &'p str)>) {
        params.push(("text", self.text));
        if let Some(blocks) = self.blocks {
            params.push(("blocks", blocks));
        }
        if let Some(metadata) = self.metadata {
            params.push(("metadata", metadata));
        }
    }
}

#[derive(Deserialize)]
struct Posted {
    ts: Ts,
}

impl WebClient {
    /// Posts in a thread (`chat.postMessage`); the new message's `ts`. A
    /// 5xx or transport error is returned at once, not retried: the message
    /// may have been posted (see the responder's exactly-once delivery).
    pub async fn post_message(
        &self,
        channel: &ChannelId,
        thread_ts: &Ts,
        message: &OutgoingMessage<'_>,
    ) -> Result<Ts, WebError> {
        self.post_message_at(channel, Some(thread_ts), message).await
    }

    /// [`Self::post_message`], in a thread or (without `thread_ts`) at the
    /// top of the channel.
    pub async fn post_message_at(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        message: &OutgoingMessage<'_>,
    ) -> Result<Ts, WebError> {
        let unfurl = if message.unfurl { "true" } else { "false" };
        let mut params = vec![("channel", channel.as_str()), ("unfurl_links", unfurl), ("unfurl_media", unfurl)];
        if let Some(thread_ts) = thread_ts {
            params.push(("thread_ts", thread_ts.as_str()));
        }
        message.params(&mut params);
        let posted: Posted = self.call_retrying("chat.postMessage", &params, Retry::RateLimitOnly).await?;
        Ok(posted.ts)
    }

    /// A plain message at the top of `channel`, without link previews: an
    /// operator alert (`chat.postMessage`).
    pub async fn post_to_channel(&self, channel: &ChannelId, text: &str) -> Result<Ts, WebError> {
        let params =
            [("channel", channel.as_str()), ("text", text), ("unfurl_links", "false"), ("unfurl_media", "false")];
        let posted: Posted = self.call_retrying("chat.postMessage", &params, Retry::RateLimitOnly).await?;
        Ok(posted.ts)
    }

    /// The bot's DM with `user` (`conversations.open`, scope `im:write`):
    /// the same channel every time, so it is retried freely.
    pub async fn open_dm(&self, user: &UserId) -> Result<ChannelId, WebError> {
        #[derive(Deserialize)]
        struct Opened {
            channel: OpenedChannel,
        }
        #[derive(Deserialize)]
        struct OpenedChannel {
            id: ChannelId,
        }
        let opened: Opened = self.call("conversations.open", &[("users", user.as_str())]).await?;
        Ok(opened.channel.id)
    }

    /// A link to message `ts` in `channel` (`chat.getPermalink`, no scope).
    pub async fn permalink(&self, channel: &ChannelId, ts: &Ts) -> Result<String, WebError> {
        #[derive(Deserialize)]
        struct Link {
            permalink: String,
        }
        let params = [("channel", channel.as_str()), ("message_ts", ts.as_str())];
        let link: Link = self.call("chat.getPermalink", &params).await?;
        Ok(link.permalink)
    }

    /// Posts `text` as an ephemeral message through a command's
    /// `response_url` (JSON, no token: the URL is the credential), through
    /// the output guard like every request. Sent once, never retried: each
    /// post is one of the URL's five uses, and after a 5xx it may have been
    /// shown. Where the Web API is a local stand-in (tests), the URL's path
    /// is posted to its origin instead of `hooks.slack.com`.
    pub async fn respond(&self, url: &slack::command::ResponseUrl, text: &str) -> Result<(), WebError> {
        const METHOD: &str = "response_url";
        let target = match reqwest::Url::parse(&self.base_url) {
            Ok(base) if base.host_str() != Some("slack.com") => {
                format!("{}{}", base.origin().ascii_serialization(), url.path())
            }
            _ => url.expose().to_owned(),
        };
        let body = serde_json::json!({
            "response_type": "ephemeral",
            "replace_original": false,
            "text": self.guard.param("text", text),
        });
        let response = self
            .http
            .post(target)
            .timeout(REQUEST_TIMEOUT)
            .json(&body)
            .send()
            .await
            .map_err(|source| WebError::Transport { method: METHOD.to_owned(), source })?;
        match response.status().as_u16() {
            200..300 => Ok(()),
            429 => Err(WebError::RateLimited { method: METHOD.to_owned(), retry_after: Duration::from_secs(30) }),
            status => Err(WebError::Http { method: METHOD.to_owned(), status }),
        }
    }

    /// Replaces a message the bot posted (`chat.update`).
    pub async fn update_message(
        &self,
        channel: &ChannelId,
        ts: &Ts,
        message: &OutgoingMessage<'_>,
    ) -> Result<(), WebError> {
        let mut params = vec![("channel", channel.as_str()), ("ts", ts.as_str())];
        message.params(&mut params);
        // Without blocks, an update must clear the old message's blocks.
        if message.blocks.is_none() {
            params.push(("blocks", "[]"));
        }
        let _: serde_json::Value = self.call("chat.update", &params).await?;
        Ok(())
    }

    /// The "is thinking…" line under a thread (`assistant.threads.setStatus`);
    /// an empty status clears it.
    pub async fn set_thread_status(&self, channel: &ChannelId, thread_ts: &Ts, status: &str) -> Result<(), WebError> {
        let params = [("channel_id", channel.as_str()), ("thread_ts", thread_ts.as_str()), ("status", status)];
        let _: serde_json::Value = self.call("assistant.threads.setStatus", &params).await?;
        Ok(())
    }

    /// A message in a thread that only `user` sees (`chat.postEphemeral`).
    /// Retried only after a 429: after a 5xx it may have been shown, and a
    /// second copy of a private note is worse than none.
    pub async fn post_ephemeral(
        &self,
        channel: &ChannelId,
        thread_ts: &Ts,
        user: &UserId,
        text: &str,
        blocks: &[serde_json::Value],
    ) -> Result<(), WebError> {
        let blocks = serde_json::Value::Array(blocks.to_vec()).to_string();
        let mut params = vec![
            ("channel", channel.as_str()),
            ("thread_ts", thread_ts.as_str()),
            ("user", user.as_str()),
            ("text", text),
        ];
        if blocks != "[]" {
            params.push(("blocks", blocks.as_str()));
        }
        let _: serde_json::Value = self.call_retrying("chat.postEphemeral", &params, Retry::RateLimitOnly).await?;
        Ok(())
    }

    /// The members of a user group (`usergroups.users.list`).
    pub async fn usergroup_members(&self, group: &str) -> Result<Vec<UserId>, WebError> {
        #[derive(Deserialize)]
        struct Members {
            #[serde(default)]
            users: Vec<UserId>,
        }
        let members: Members = self.call("usergroups.users.list", &[("usergroup", group)]).await?;
        Ok(members.users)
    }

    /// Whether `user` is among `channel`'s members (`conversations.members`,
    /// pages of 1,000, at most 10: a channel of more members answers
    /// `false` for those beyond, which the caller treats as not seeing it).
    pub async fn is_member(&self, channel: &ChannelId, user: &UserId) -> Result<bool, WebError> {
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            members: Vec<UserId>,
            #[serde(default)]
            response_metadata: Option<ResponseMetadata>,
        }
        let mut cursor = String::new();
        for _ in 0..10 {
            let mut params = vec![("channel", channel.as_str()), ("limit", "1000")];
            if !cursor.is_empty() {
                params.push(("cursor", cursor.as_str()));
            }
            let page: Page = self.call("conversations.members", &params).await?;
            if page.members.contains(user) {
                return Ok(true);
            }
            cursor = page.response_metadata.map(|m| m.next_cursor).unwrap_or_default();
            if cursor.is_empty() {
                break;
            }
        }
        Ok(false)
    }

    /// Who the token is (workspace, bot user, workspace URL): `auth.test`
    /// once for the process, however many adapters and assemblies ask. A
    /// failed ask is asked again next time.
    pub async fn identity(&self) -> Result<&AuthTest, WebError> {
        self.identity.get_or_try_init(|| self.auth_test()).await
    }

    /// Whether the token works (`auth.test`): the bot user it belongs to.
    pub async fn auth_test(&self) -> Result<AuthTest, WebError> {
        self.call("auth.test", &[]).await
    }
}

/// What `auth.test` says about the token. For an org-wide install's token
/// Slack adds `enterprise_id` and `is_enterprise_install`, and may name no
/// workspace (`team_id` absent or empty: the token is the organization's,
/// not one workspace's); see [`AuthTest::team`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AuthTest {
    /// The workspace's URL (`https://acme.slack.com/`).
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub team_id: Option<String>,
    #[serde(default)]
    pub user_id: Option<UserId>,
    /// The organization (Enterprise Grid), if any.
    #[serde(default)]
    pub enterprise_id: Option<String>,
    /// The token is an org-wide install's.
    #[serde(default)]
    pub is_enterprise_install: bool,
}

impl AuthTest {
    /// The team the token acts for: its workspace, else (an org-wide
    /// install naming none) its organization, as Slack names an
    /// organization in team fields (`E…`). What the bot keeps for work no
    /// Slack event places (an alert's thread) is keyed by it, so an org's
    /// uninstall, keyed by the organization, forgets it too. `None`: Slack
    /// named neither.
    pub fn team(&self) -> Option<&str> {
        fn named(id: &Option<String>) -> Option<&str> {
            id.as_deref().map(str::trim).filter(|id| !id.is_empty())
        }
        named(&self.team_id).or_else(|| named(&self.enterprise_id))
    }
}

#[cfg(test)]
mod auth_test_tests {
    use super::AuthTest;

    fn read(json: &str) -> AuthTest {
        serde_json::from_str(json).expect("auth.test's answer")
    }

    #[test]
    fn a_workspace_token_names_its_workspace() {
        let auth = read(
            r#"{"ok": true, "url": "https://acme.slack.com/", "team": "Acme", "user": "bot", "team_id": "T061EG9R6", "user_id": "U0LAN0Z89", "bot_id": "B0OURBOT01", "is_enterprise_install": false}"#,
        );
        assert_eq!((auth.team(), auth.is_enterprise_install), (Some("T061EG9R6"), false));
    }

    #[test]
    fn an_org_wide_token_naming_no_workspace_stands_for_its_organization() {
        for team in [r#""#, r#""team_id": "","#, r#""team_id": null,"#] {
            let auth = read(&format!(
                r#"{{"ok": true, "url": "https://grid.enterprise.slack.com/", {team} "user_id": "W0BOT0001", "enterprise_id": "E0GRIDORG1", "is_enterprise_install": true}}"#
            ));
            assert_eq!((auth.team(), auth.is_enterprise_install), (Some("E0GRIDORG1"), true), "{team}");
            assert_eq!(auth.user_id.as_ref().map(|u| u.as_str()), Some("W0BOT0001"));
        }
        // Naming a workspace too: the workspace.
        let auth = read(
            r#"{"ok": true, "team_id": "T0SISTER1", "enterprise_id": "E0GRIDORG1", "is_enterprise_install": true}"#,
        );
        assert_eq!(auth.team(), Some("T0SISTER1"));
        assert_eq!(read(r#"{"ok": true, "team_id": " ", "enterprise_id": ""}"#).team(), None);
    }
}

/// App-defined data attached to a message
/// (<https://docs.slack.dev/messaging/message-metadata>).
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct MessageMetadata {
    pub event_type: String,
    #[serde(default)]
    pub event_payload: serde_json::Value,
}

/// A channel as `conversations.info` returns it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ConversationInfo {
    pub id: ChannelId,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub is_im: bool,
    #[serde(default)]
    pub is_mpim: bool,
    #[serde(default)]
    pub is_private: bool,
    #[serde(default)]
    pub topic: Option<TextValue>,
    #[serde(default)]
    pub purpose: Option<TextValue>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TextValue {
    #[serde(default)]
    pub value: String,
}

/// A message as `conversations.replies` returns it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HistoryMessage {
    pub ts: Ts,
    #[serde(default)]
    pub user: Option<UserId>,
    #[serde(default)]
    pub bot_id: Option<String>,
    #[serde(default)]
    pub subtype: Option<String>,
    #[serde(default)]
    pub text: String,
    /// Present when the poster attached some (and it was asked for).
    #[serde(default)]
    pub metadata: Option<MessageMetadata>,
    #[serde(default)]
    pub files: Vec<slack::events::SlackFile>,
    /// Its layout blocks and legacy attachments as Slack sent them, any
    /// JSON at all: read leniently by [`slack::readable`], so a piece
    /// Slack (or another app) got wrong never fails the thread's read.
    #[serde(default)]
    pub blocks: serde_json::Value,
    #[serde(default)]
    pub attachments: serde_json::Value,
}

/// A message `assistant.search.context` found.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SearchedMessage {
    pub channel_id: ChannelId,
    pub message_ts: Ts,
    #[serde(default)]
    pub author_user_id: Option<UserId>,
    #[serde(default)]
    pub is_author_bot: bool,
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub permalink: String,
}

#[derive(Deserialize)]
struct SearchContext {
    #[serde(default)]
    results: SearchResults,
}

#[derive(Default, Deserialize)]
struct SearchResults {
    #[serde(default)]
    messages: Vec<SearchedMessage>,
}

#[derive(Deserialize)]
struct RepliesPage {
    #[serde(default)]
    messages: Vec<HistoryMessage>,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    response_metadata: Option<ResponseMetadata>,
}

#[derive(Deserialize)]
struct ResponseMetadata {
    #[serde(default)]
    next_cursor: String,
}
