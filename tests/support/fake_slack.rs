//! A fake Slack Web API (`POST /api/{method}`, form-encoded, bearer token,
//! JSON with `ok`), so the real `reqwest` client is what the tests exercise.
//! Each method answers from its script, in order, then from its default;
//! every call is recorded.
//!
//! Without a default, it behaves as Slack does for what the bot uses:
//! `chat.postMessage` adds a message (with its metadata) to the thread,
//! `chat.update` replaces one, `conversations.replies` returns the thread,
//! `conversations.history` the channel's top-level messages (newest first),
//! `assistant.threads.setStatus` and `auth.test` answer ok,
//! `canvases.create` makes a canvas id (`canvases.access.set` and
//! `canvases.edit` answer ok),
//! `chat.postEphemeral` records the note (only to a user in the channel's
//! fake membership: any user here), and `usergroups.users.list` answers the
//! groups given with [`FakeSlack::user_group`] (`no_such_subteam` for others),
//! and `conversations.members` the members given with
//! [`FakeSlack::channel_members`] (`channel_not_found` for others).
//!
//! Streams as Slack runs them: `chat.startStream` adds an empty message to
//! the thread, and refuses a stream outside a DM without
//! `recipient_user_id` and `recipient_team_id`; `chat.appendStream` adds
//! markdown and task updates (each call at most 12,000 characters of
//! markdown, `msg_too_long` beyond); after `chat.stopStream` (which adds
//! the final blocks and metadata) both answer
//! `message_not_in_streaming_state`. `assistant.threads.setSuggestedPrompts`
//! takes 1 to 4 prompts, with or without a thread;
//! `assistant.threads.setTitle` needs a thread.
//!
//! With [`FakeSlack::enforce_rate_limits`] it limits calls as Slack does
//! ([`RateLimits`]): per method and workspace by the method's tier, and
//! `chat.postMessage` also per channel, answering HTTP 429 with
//! `Retry-After` (whole seconds) and applying nothing.

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
    /// The call is applied (`chat.postMessage` posts, `files.completeUploadExternal`
    /// shares), but the answer is this HTTP status (the response was lost).
    PostedThenStatus(u16),
    /// The call is applied, then the answer is held for this long: a
    /// caller can be killed while it waits, the call done and unrecorded.
    AppliedThenHeld(std::time::Duration),
}

/// A message in a fake thread.
#[derive(Debug, Clone, PartialEq)]
pub struct Posted {
    pub channel: String,
    pub thread_ts: String,
    pub ts: String,
    pub text: String,
    pub blocks: Option<Value>,
    pub metadata: Option<Value>,
    /// A streamed message still streaming.
    pub streaming: bool,
    /// Task updates appended to a streamed message, in order.
    pub tasks: Vec<Value>,
    /// Files shared in it (`files.completeUploadExternal`): their ids.
    pub files: Vec<String>,
}

impl Posted {
    /// A click by `user` on the `action`-th button of this message (an
    /// approval prompt), as Slack sends it to the ingress: the
    /// interactivity payload, form-encoded and signed, stamped now.
    pub fn click(&self, action: usize, user: &str) -> Value {
        self.click_from(testkit::fixtures::BLOCK_ACTIONS_APPROVE, action, user)
    }

    /// [`Self::click`] on a captured payload of its own (the clicker's team
    /// as it names it, say).
    pub fn click_from(&self, fixture: &str, action: usize, user: &str) -> Value {
        let blocks = self.blocks.as_ref().and_then(Value::as_array).expect("a message with blocks");
        let actions = blocks.iter().find(|block| block["type"] == "actions").expect("an actions block");
        let button = &actions["elements"][action];
        let mut payload: Value = serde_json::from_str(fixture).expect("fixture");
        payload["user"]["id"] = user.into();
        payload["container"]["channel_id"] = self.channel.clone().into();
        payload["channel"]["id"] = self.channel.clone().into();
        for at in ["container", "message"] {
            payload[at]["thread_ts"] = self.thread_ts.clone().into();
        }
        payload["container"]["message_ts"] = self.ts.clone().into();
        payload["message"]["ts"] = self.ts.clone().into();
        payload["actions"][0]["action_id"] = button["action_id"].clone();
        payload["actions"][0]["value"] = button["value"].clone();
        payload["actions"][0]["action_ts"] = crate::events::now_ts().into();
        let form = testkit::fixtures::interaction_form(&payload.to_string());
        crate::events::with_body(&crate::events::parse(crate::events::APPROVAL_CLICK), &form)
    }
}

/// The most markdown one stream call may carry.
pub const STREAM_TEXT_LIMIT: usize = 12_000;

#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub form: HashMap<String, String>,
    pub authorization: Option<String>,
    /// When it arrived.
    pub at: std::time::Instant,
    /// Answered 429 by the rate limits (nothing applied).
    pub rate_limited: bool,
}

/// Slack's Web API rate limits as its documentation states them: each
/// method's tier is a number of calls a minute per workspace ("Tier 2: 20+
/// per minute", "Tier 3: 50+", "Tier 4: 100+"; the `+` says Slack may
/// allow more: these are the floors), with bursts of up to a minute's
/// worth; `chat.postMessage` ("special") allows one message a second per
/// channel with short bursts, here three. Methods of the special tier
/// without a published figure (`assistant.threads.setStatus`,
/// `chat.getPermalink`, `auth.test`) and methods not listed are not limited.
pub struct RateLimits {
    /// (method, calls a minute per workspace).
    pub per_method: &'static [(&'static str, u32)],
    /// `chat.postMessage` per channel: a burst, then one a second.
    pub post_burst: u32,
}

impl RateLimits {
    /// The tiers of the methods the bot calls, as each method's page on
    /// docs.slack.dev gives them (November 2026).
    pub const SLACK: RateLimits = RateLimits {
        per_method: &[
            ("chat.startStream", 20),
            ("chat.stopStream", 20),
            ("chat.update", 50),
            ("chat.delete", 50),
            ("conversations.info", 50),
            ("conversations.replies", 50),
            ("conversations.history", 50),
            ("chat.appendStream", 100),
            ("chat.postEphemeral", 100),
            ("assistant.threads.setTitle", 100),
            ("assistant.threads.setSuggestedPrompts", 100),
            ("conversations.members", 100),
            ("users.info", 100),
        ],
        post_burst: 3,
    };
}

/// A token bucket: `capacity` calls at once, refilled at `per_second`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    capacity: f64,
    per_second: f64,
    at: std::time::Instant,
}

impl Bucket {
    fn new(capacity: f64, per_second: f64) -> Self {
        Self { tokens: capacity, capacity, per_second, at: std::time::Instant::now() }
    }

    /// Takes a call, or says how long until one would be taken.
    fn take(&mut self) -> Result<(), std::time::Duration> {
        let now = std::time::Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * self.per_second).min(self.capacity);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        Err(std::time::Duration::from_secs_f64((1.0 - self.tokens) / self.per_second))
    }
}

/// The rate limits' state: a bucket per method, and per channel for posts.
#[derive(Default)]
struct Limiter {
    buckets: HashMap<String, Bucket>,
}

impl Limiter {
    /// How long to wait before `method` may be called again in `channel`,
    /// or nothing: the call may go on (and is counted).
    fn check(&mut self, limits: &RateLimits, method: &str, channel: &str) -> Option<std::time::Duration> {
        if method == "chat.postMessage" {
            let key = format!("{method} {channel}");
            let burst = f64::from(limits.post_burst);
            return self.buckets.entry(key).or_insert_with(|| Bucket::new(burst, 1.0)).take().err();
        }
        let (_, per_minute) = limits.per_method.iter().find(|(name, _)| *name == method)?;
        let per_minute = f64::from(*per_minute);
        let bucket =
            self.buckets.entry(method.to_owned()).or_insert_with(|| Bucket::new(per_minute, per_minute / 60.0));
        bucket.take().err()
    }
}

#[derive(Default)]
struct Shared {
    scripts: Mutex<HashMap<String, VecDeque<SlackReply>>>,
    defaults: Mutex<HashMap<String, Value>>,
    calls: Mutex<Vec<Call>>,
    posted: Mutex<Vec<Posted>>,
    /// Messages ever posted: a message's `ts` is never reused, even after
    /// another was deleted.
    ever_posted: std::sync::atomic::AtomicUsize,
    ephemerals: Mutex<Vec<(String, String)>>,
    groups: Mutex<HashMap<String, Vec<String>>>,
    /// Channels' members, as `conversations.members` answers.
    members: Mutex<HashMap<String, Vec<String>>>,
    /// Files served at `/files-pri/{id}/download/{name}`: body, type.
    files: Mutex<HashMap<String, (axum::body::Bytes, String)>>,
    /// Every download: (file id, `Authorization` sent).
    downloads: Mutex<Vec<(String, Option<String>)>>,
    /// Uploads (`files.getUploadURLExternal`, then bytes to its URL).
    uploads: Mutex<HashMap<String, Vec<u8>>>,
    /// What was POSTed to commands' `response_url`s: (path, JSON body).
    responses: Mutex<Vec<(String, Value)>>,
    base_url: Mutex<String>,
    /// Slack's rate limits, once enforced.
    limits: Mutex<Option<(&'static RateLimits, Limiter)>>,
}

pub struct FakeSlack {
    url: String,
    shared: Arc<Shared>,
    /// What each record of a request carries besides the request.
    notes: crate::local_server::Notes,
    _server: LocalServer,
}

impl FakeSlack {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/api/{method}", post(call))
            .route("/files-pri/{id}/download/{name}", axum::routing::get(download))
            .route("/upload/{id}", post(upload))
            // A slash command's `response_url` (`https://hooks.slack.com/commands/…`,
            // posted here by path: the functions' Slack base is this server).
            .route("/commands/{*rest}", post(respond))
            .with_state(shared.clone());
        let notes = crate::local_server::Notes::default();
        let server = LocalServer::start_recorded_with(app, "slack", notes.clone()).await;
        *shared.base_url.lock().expect("base lock") = server.base_url.clone();
        Self { url: format!("{}/api", server.base_url), shared, notes, _server: server }
    }

    /// The deployment allows the special mentions `kinds` (`here,subteam`):
    /// the variable to give the functions that post here, and, from now on,
    /// in each record of a request to this fake, so that
    /// `infra/mentions/check.py` takes those kinds for allowed in them.
    pub fn deployment_allows(&self, kinds: &str) -> (&'static str, String) {
        self.notes.lock().expect("notes lock").insert("allowed_special_mentions".into(), kinds.into());
        ("SLACK_ALLOWED_SPECIAL_MENTIONS", kinds.to_owned())
    }

    /// The Web API base URL (`SLACK_API_BASE_URL`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Limits calls as Slack does from now on ([`RateLimits::SLACK`]).
    pub fn enforce_rate_limits(&self) {
        self.enforce_rate_limits_as(&RateLimits::SLACK);
    }

    /// Limits calls by `limits` from now on (a test's tighter ones, say).
    pub fn enforce_rate_limits_as(&self, limits: &'static RateLimits) {
        *self.shared.limits.lock().expect("limits lock") = Some((limits, Limiter::default()));
    }

    /// Every call so far, in order.
    pub fn all_calls(&self) -> Vec<Call> {
        self.shared.calls.lock().expect("calls lock").clone()
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

    /// Each live mass mention in any parameter of any Web API call so far
    /// (message metadata aside, which Slack never shows) of a kind not in
    /// `allowed` (`here`, `channel`, `everyone`, `subteam`), as
    /// `method param: <!mention`. What `infra/mentions/check.py` finds in the
    /// records, for one test.
    pub fn live_mass_mentions(&self, allowed: &[&str]) -> Vec<String> {
        let mut found = Vec::new();
        for call in self.shared.calls.lock().expect("calls lock").iter() {
            for (name, value) in call.form.iter().filter(|(name, _)| name.as_str() != "metadata") {
                let lower = value.to_ascii_lowercase();
                for (at, _) in lower.match_indices("<!") {
                    let word: String = lower[at + 2..].chars().take_while(char::is_ascii_alphabetic).collect();
                    let next = lower[at + 2 + word.len()..].chars().next();
                    let kind = if word == "group" { "channel" } else { word.as_str() };
                    let mass = ["here", "channel", "everyone", "subteam"].contains(&kind)
                        && matches!(next, None | Some('>' | '|' | '^' | ' '));
                    if mass && !allowed.contains(&kind) {
                        found.push(format!("{} {name}: {}", call.method, &value[at..(at + 2 + word.len())]));
                    }
                }
            }
        }
        found
    }

    /// `channel`'s members, as `conversations.members` answers.
    pub fn channel_members(&self, channel: &str, members: &[&str]) {
        self.shared.add_members(channel, members);
    }

    /// Every message the bot posted, in order, as it now stands.
    /// Gives `usergroups.users.list` a group and its members.
    pub fn user_group(&self, group: &str, members: &[&str]) {
        self.shared.add_group(group, members);
    }

    /// Every ephemeral message: (the one user who saw it, its text).
    pub fn ephemerals(&self) -> Vec<(String, String)> {
        self.shared.ephemerals.lock().expect("ephemerals lock").clone()
    }

    /// Serves a file as Slack does (to the bot token only); its
    /// `url_private_download`.
    /// Every POST to a command's `response_url`: (path, JSON body).
    pub fn responses(&self) -> Vec<(String, Value)> {
        self.shared.responses.lock().expect("responses lock").clone()
    }

    pub fn file(&self, id: &str, name: &str, body: impl Into<axum::body::Bytes>, content_type: &str) -> String {
        let entry = (body.into(), content_type.to_owned());
        self.shared.files.lock().expect("files lock").insert(id.to_owned(), entry);
        format!("{}/files-pri/{id}/download/{name}", self.url.trim_end_matches("/api"))
    }

    /// Every upload's bytes, by file id (shared or not).
    pub fn uploads(&self) -> HashMap<String, Vec<u8>> {
        self.shared.uploads.lock().expect("uploads lock").clone()
    }

    /// Every file download: (file id, the `Authorization` it carried).
    pub fn downloads(&self) -> Vec<(String, Option<String>)> {
        self.shared.downloads.lock().expect("downloads lock").clone()
    }

    pub fn posted(&self) -> Vec<Posted> {
        self.shared.posted.lock().expect("posted lock").clone()
    }
}

impl Shared {
    /// `chat.appendStream` / `chat.stopStream` on a streamed message.
    fn stream(&self, method: &str, form: &HashMap<String, String>) -> Value {
        let field = |name: &str| form.get(name).cloned().unwrap_or_default();
        let mut posted = self.posted.lock().expect("posted lock");
        let Some(message) = posted.iter_mut().find(|m| m.channel == field("channel") && m.ts == field("ts")) else {
            return serde_json::json!({"ok": false, "error": "message_not_found"});
        };
        if !message.streaming {
            return serde_json::json!({"ok": false, "error": "message_not_in_streaming_state"});
        }
        let chunks: Vec<Value> = serde_json::from_str(&field("chunks")).unwrap_or_default();
        let mut text = field("markdown_text");
        let mut tasks = Vec::new();
        for chunk in chunks {
            match chunk["type"].as_str() {
                Some("markdown_text") => text.push_str(chunk["text"].as_str().unwrap_or_default()),
                Some("task_update") => tasks.push(chunk),
                _ => return serde_json::json!({"ok": false, "error": "invalid_chunks"}),
            }
        }
        if text.chars().count() > STREAM_TEXT_LIMIT {
            return serde_json::json!({"ok": false, "error": "msg_too_long"});
        }
        message.text.push_str(&text);
        message.tasks.extend(tasks);
        if method == "chat.stopStream" {
            message.streaming = false;
            message.blocks = form.get("blocks").and_then(|v| serde_json::from_str(v).ok());
            message.metadata = form.get("metadata").and_then(|v| serde_json::from_str(v).ok());
        }
        serde_json::json!({"ok": true, "channel": message.channel, "ts": message.ts})
    }

    /// A channel's members, as `conversations.members` answers (one page);
    /// a channel not given answers `channel_not_found`.
    fn add_members(&self, channel: &str, members: &[&str]) {
        let members = members.iter().map(|m| m.to_string()).collect();
        self.members.lock().expect("members lock").insert(channel.to_owned(), members);
    }

    /// A user group and its members, as `usergroups.users.list` answers.
    fn add_group(&self, group: &str, members: &[&str]) {
        let members = members.iter().map(|m| m.to_string()).collect();
        self.groups.lock().expect("groups lock").insert(group.to_owned(), members);
    }

    fn post(&self, form: &HashMap<String, String>) -> Value {
        let mut posted = self.posted.lock().expect("posted lock");
        let n = self.ever_posted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let ts = format!("1763800200.{n:06}");
        let json = |name: &str| form.get(name).and_then(|v| serde_json::from_str::<Value>(v).ok());
        let message = Posted {
            channel: form.get("channel").cloned().unwrap_or_default(),
            thread_ts: form.get("thread_ts").cloned().unwrap_or_else(|| ts.clone()),
            ts: ts.clone(),
            text: form.get("text").cloned().unwrap_or_default(),
            blocks: json("blocks"),
            metadata: json("metadata"),
            streaming: false,
            tasks: Vec::new(),
            files: Vec::new(),
        };
        let channel = message.channel.clone();
        posted.push(message);
        serde_json::json!({"ok": true, "channel": channel, "ts": ts})
    }

    /// What Slack does for `method` when no script or default says otherwise.
    fn behave(&self, method: &str, form: &HashMap<String, String>) -> Value {
        let field = |name: &str| form.get(name).cloned().unwrap_or_default();
        match method {
            "chat.postMessage" => self.post(form),
            "chat.update" => {
                let mut posted = self.posted.lock().expect("posted lock");
                let Some(message) = posted.iter_mut().find(|m| m.channel == field("channel") && m.ts == field("ts"))
                else {
                    return serde_json::json!({"ok": false, "error": "message_not_found"});
                };
                message.text = field("text");
                message.blocks = form.get("blocks").and_then(|v| serde_json::from_str(v).ok());
                message.metadata = form.get("metadata").and_then(|v| serde_json::from_str(v).ok());
                serde_json::json!({"ok": true, "channel": message.channel, "ts": message.ts})
            }
            "chat.delete" => {
                let mut posted = self.posted.lock().expect("posted lock");
                let before = posted.len();
                posted.retain(|m| !(m.channel == field("channel") && m.ts == field("ts")));
                if posted.len() == before {
                    return serde_json::json!({"ok": false, "error": "message_not_found"});
                }
                serde_json::json!({"ok": true, "channel": field("channel"), "ts": field("ts")})
            }
            // The Home tab: Slack answers with the view it shows.
            "views.publish" => {
                let view: serde_json::Value =
                    form.get("view").and_then(|v| serde_json::from_str(v).ok()).unwrap_or_default();
                if view["type"] != "home" {
                    return serde_json::json!({"ok": false, "error": "invalid_arguments"});
                }
                serde_json::json!({"ok": true, "view": {"id": "V0HOME0001", "type": "home", "blocks": view["blocks"]}})
            }
            "conversations.replies" => {
                let with_metadata = field("include_all_metadata") == "true";
                let posted = self.posted.lock().expect("posted lock");
                let messages: Vec<Value> = posted
                    .iter()
                    .filter(|m| m.channel == field("channel") && m.thread_ts == field("ts"))
                    .map(|m| {
                        let mut message = serde_json::json!({
                            "type": "message", "ts": m.ts, "thread_ts": m.thread_ts,
                            "bot_id": "B0LAN0Z89", "user": "U0LAN0Z89", "text": m.text,
                        });
                        if let (true, Some(metadata)) = (with_metadata, &m.metadata) {
                            message["metadata"] = metadata.clone();
                        }
                        if !m.files.is_empty() {
                            let files: Vec<Value> = m.files.iter().map(|id| serde_json::json!({"id": id})).collect();
                            message["files"] = Value::Array(files);
                        }
                        message
                    })
                    .collect();
                serde_json::json!({"ok": true, "messages": messages, "has_more": false})
            }
            // The channel's top-level messages, newest first, as Slack
            // pages them.
            "conversations.history" => {
                let with_metadata = field("include_all_metadata") == "true";
                let limit = field("limit").parse().unwrap_or(100);
                let posted = self.posted.lock().expect("posted lock");
                let messages: Vec<Value> = posted
                    .iter()
                    .rev()
                    .filter(|m| m.channel == field("channel") && m.thread_ts == m.ts)
                    .take(limit)
                    .map(|m| {
                        let mut message = serde_json::json!({
                            "type": "message", "ts": m.ts, "bot_id": "B0LAN0Z89", "user": "U0LAN0Z89", "text": m.text,
                        });
                        if let (true, Some(metadata)) = (with_metadata, &m.metadata) {
                            message["metadata"] = metadata.clone();
                        }
                        message
                    })
                    .collect();
                serde_json::json!({"ok": true, "messages": messages, "has_more": false})
            }
            "files.getUploadURLExternal" => {
                if field("filename").is_empty() || field("length").parse::<usize>().is_err() {
                    return serde_json::json!({"ok": false, "error": "invalid_arguments"});
                }
                let mut uploads = self.uploads.lock().expect("uploads lock");
                let id = format!("F0UP{:06}", uploads.len() + 1);
                uploads.insert(id.clone(), Vec::new());
                let base = self.base_url.lock().expect("base lock").clone();
                serde_json::json!({"ok": true, "upload_url": format!("{base}/upload/{id}"), "file_id": id})
            }
            // Shares uploaded files in the thread as one message from the bot.
            "files.completeUploadExternal" => {
                let files: Vec<Value> = serde_json::from_str(&field("files")).unwrap_or_default();
                let ids: Vec<String> = files.iter().filter_map(|f| f["id"].as_str().map(str::to_owned)).collect();
                let uploads = self.uploads.lock().expect("uploads lock");
                if ids.is_empty() || ids.iter().any(|id| uploads.get(id).is_none_or(Vec::is_empty)) {
                    return serde_json::json!({"ok": false, "error": "file_not_found"});
                }
                drop(uploads);
                let mut share = form.clone();
                share.insert("channel".into(), field("channel_id"));
                self.post(&share);
                let mut posted = self.posted.lock().expect("posted lock");
                posted.last_mut().expect("just shared").files = ids;
                serde_json::json!({"ok": true, "files": files})
            }
            "assistant.threads.setStatus" => serde_json::json!({"ok": true}),
            "assistant.threads.setSuggestedPrompts" => {
                let prompts: Vec<Value> = serde_json::from_str(&field("prompts")).unwrap_or_default();
                let well_formed = prompts.iter().all(|p| p["title"].is_string() && p["message"].is_string());
                if field("channel_id").is_empty() || !(1..=4).contains(&prompts.len()) || !well_formed {
                    return serde_json::json!({"ok": false, "error": "invalid_arguments"});
                }
                serde_json::json!({"ok": true})
            }
            "assistant.threads.setTitle" => {
                if field("channel_id").is_empty() || field("thread_ts").is_empty() || field("title").is_empty() {
                    return serde_json::json!({"ok": false, "error": "invalid_arguments"});
                }
                serde_json::json!({"ok": true})
            }
            "chat.startStream" => {
                let in_dm = field("channel").starts_with('D');
                if field("thread_ts").is_empty()
                    || (!in_dm && (field("recipient_user_id").is_empty() || field("recipient_team_id").is_empty()))
                {
                    return serde_json::json!({"ok": false, "error": "invalid_arguments"});
                }
                let started = self.post(form);
                let mut posted = self.posted.lock().expect("posted lock");
                let message = posted.last_mut().expect("just started");
                message.streaming = true;
                message.text = String::new();
                started
            }
            "chat.appendStream" | "chat.stopStream" => self.stream(method, form),
            "chat.postEphemeral" => {
                if field("user").is_empty() || field("channel").is_empty() {
                    return serde_json::json!({"ok": false, "error": "invalid_arguments"});
                }
                self.ephemerals.lock().expect("ephemerals lock").push((field("user"), field("text")));
                serde_json::json!({"ok": true, "message_ts": "1763800300.000001"})
            }
            "usergroups.users.list" => match self.groups.lock().expect("groups lock").get(&field("usergroup")) {
                Some(users) => serde_json::json!({"ok": true, "users": users}),
                None => serde_json::json!({"ok": false, "error": "no_such_subteam"}),
            },
            "conversations.members" => match self.members.lock().expect("members lock").get(&field("channel")) {
                Some(users) => {
                    serde_json::json!({"ok": true, "members": users, "response_metadata": {"next_cursor": ""}})
                }
                None => serde_json::json!({"ok": false, "error": "channel_not_found"}),
            },
            // The DM with `U…` is `D…` with the same letters after the first.
            "conversations.open" => match field("users").strip_prefix('U') {
                Some(rest) if !rest.is_empty() && !rest.contains(',') => {
                    serde_json::json!({"ok": true, "channel": {"id": format!("D{rest}")}})
                }
                _ => serde_json::json!({"ok": false, "error": "user_not_found"}),
            },
            // A modal opens once per trigger (Slack's live 3 s, and once).
            "views.open" => {
                let used = self
                    .calls
                    .lock()
                    .expect("calls lock")
                    .iter()
                    .filter(|call| call.method == "views.open" && call.form.get("trigger_id") == form.get("trigger_id"))
                    .count();
                match (field("trigger_id").is_empty(), used, serde_json::from_str::<Value>(&field("view"))) {
                    (false, 1, Ok(view)) if view["type"] == "modal" => {
                        serde_json::json!({"ok": true, "view": {"id": "VMHU10V25", "callback_id": view["callback_id"]}})
                    }
                    (false, 1, _) => serde_json::json!({"ok": false, "error": "invalid_arguments"}),
                    _ => serde_json::json!({"ok": false, "error": "expired_trigger_id"}),
                }
            }
            "chat.getPermalink" => serde_json::json!({
                "ok": true,
                "channel": field("channel"),
                "permalink": format!("https://acme.slack.com/archives/{}/p{}", field("channel"), field("message_ts").replace('.', "")),
            }),
            "auth.test" => serde_json::json!({
                "ok": true, "url": "https://acme.slack.com/", "team_id": "T061EG9R6", "user_id": "U0LAN0Z89"
            }),
            // Canvases: made with an id, shared, edited; the calls say what.
            "canvases.create" => {
                let n = self.ever_posted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                serde_json::json!({"ok": true, "canvas_id": format!("F0CANVAS{n:03}")})
            }
            "canvases.access.set" | "canvases.edit" => serde_json::json!({"ok": true}),
            _ => serde_json::json!({"ok": false, "error": "unknown_method"}),
        }
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
    let wait = shared.limits.lock().expect("limits lock").as_mut().and_then(|(limits, limiter)| {
        let channel = form.get("channel").or_else(|| form.get("channel_id")).cloned().unwrap_or_default();
        limiter.check(limits, &method, &channel)
    });
    let at = std::time::Instant::now();
    let call = Call { method: method.clone(), form: form.clone(), authorization, at, rate_limited: wait.is_some() };
    shared.calls.lock().expect("calls lock").push(call);
    if let Some(wait) = wait {
        // Slack's `Retry-After` is in whole seconds, at least one.
        let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
        return (StatusCode::TOO_MANY_REQUESTS, [("retry-after", seconds.to_string())], "").into_response();
    }

    let scripted = shared.scripts.lock().expect("scripts lock").get_mut(&method).and_then(VecDeque::pop_front);
    let reply = scripted.unwrap_or_else(|| {
        let default = shared.defaults.lock().expect("defaults lock").get(&method).cloned();
        SlackReply::Json(default.unwrap_or_else(|| shared.behave(&method, &form)))
    });
    match reply {
        SlackReply::AppliedThenHeld(held) => {
            let applied = shared.behave(&method, &form);
            tokio::time::sleep(held).await;
            axum::Json(applied).into_response()
        }
        SlackReply::PostedThenStatus(status) => {
            shared.behave(&method, &form);
            StatusCode::from_u16(status).expect("valid status").into_response()
        }
        SlackReply::Json(value) => axum::Json(value).into_response(),
        SlackReply::RateLimited { retry_after_secs } => {
            (StatusCode::TOO_MANY_REQUESTS, [("retry-after", retry_after_secs.to_string())], "").into_response()
        }
        SlackReply::Status(status) => StatusCode::from_u16(status).expect("valid status").into_response(),
    }
}

/// A POST to a command's `response_url`: JSON, no token (the URL is the
/// credential); Slack answers `ok`, or 404 for a body that is not JSON.
async fn respond(
    State(shared): State<Arc<Shared>>,
    Path(rest): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let json = headers.get("content-type").and_then(|v| v.to_str().ok()) == Some("application/json");
    match serde_json::from_str::<Value>(&body) {
        Ok(value) if json && headers.get("authorization").is_none() => {
            shared.responses.lock().expect("responses lock").push((format!("/commands/{rest}"), value));
            (StatusCode::OK, "ok").into_response()
        }
        _ => (StatusCode::BAD_REQUEST, "invalid_payload").into_response(),
    }
}

/// A file download: the bot token gets the file; anyone else Slack's
/// sign-in page, by redirect, as Slack answers a request without a token
/// that may read it.
async fn download(
    State(shared): State<Arc<Shared>>,
    Path((id, _name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    shared.downloads.lock().expect("downloads lock").push((id.clone(), authorization.clone()));
    let file = shared.files.lock().expect("files lock").get(&id).cloned();
    match (file, authorization.as_deref()) {
        (Some((body, content_type)), Some("Bearer xoxb-test-token")) => {
            ([("content-type", content_type)], body).into_response()
        }
        _ => (StatusCode::FOUND, [("location", "/?redir=%2Ffiles-pri")], "").into_response(),
    }
}

/// The bytes of an upload, to the URL `files.getUploadURLExternal` gave.
async fn upload(State(shared): State<Arc<Shared>>, Path(id): Path<String>, body: axum::body::Bytes) -> Response {
    let mut uploads = shared.uploads.lock().expect("uploads lock");
    match uploads.get_mut(&id) {
        Some(stored) if !body.is_empty() => {
            *stored = body.to_vec();
            (StatusCode::OK, format!("OK - {}", body.len())).into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}
