//! What the functions need from the outside world, as small object-safe
//! traits: a function holds `Arc<dyn TurnStore>` and never knows whether
//! DynamoDB (`shared/adapters/aws`), Slack's Web API
//! (`shared/adapters/slack`) or an in-memory double (`testkit`) is behind
//! it. Each call costs one boxed future, nothing next to the I/O it does.

use crate::delivery::{DeliveryRecord, MessageKey, MessageMetadata, Outgoing, PostError};
use crate::messages::{ReplyMessage, ThreadRef, WorkMessage};
use crate::turn::{Turn, TurnId};
use async_trait::async_trait;
use slack::{ChannelId, Ts, UserId};
use slack::{EventId, TeamId};
use std::collections::{BTreeMap, BTreeSet};
use std::error::Error as StdError;
use std::fmt;

/// How long an event id is remembered: Slack retries for about an hour, so
/// a few days is generous.
pub const EVENT_CLAIM_TTL_SECS: i64 = 3 * 24 * 3600;
/// How long a thread counts as one the bot takes part in after its last turn.
pub const BOT_THREAD_TTL_SECS: i64 = 30 * 24 * 3600;

/// Whether a turn may start in a thread the bot has not been part of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadRule {
    /// The event itself addresses the bot (a mention, a DM): the thread
    /// becomes one the bot takes part in.
    Opens,
    /// A plain reply: only in a thread the bot already takes part in.
    MustBeKnown,
}

/// A request to be the one delivery of an event that starts work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventClaim {
    pub team: TeamId,
    pub event_id: EventId,
    pub thread: ThreadRef,
    pub rule: ThreadRule,
    /// The person's action token from the event, kept with the claim (a
    /// few minutes) for the turn's Slack search; never on the queue.
    pub action_token: Option<slack::events::ActionToken>,
}

/// How long an action token is kept: Slack's expire within minutes.
pub const ACTION_TOKEN_TTL_SECS: i64 = 15 * 60;

/// The action tokens the ingress kept with its claims, by the turn their
/// event started.
#[async_trait]
pub trait ActionTokens: Send + Sync {
    async fn action_token(&self, turn: &TurnId, now_unix: i64)
    -> Result<Option<slack::events::ActionToken>, PortError>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// First delivery: go on and enqueue.
    Claimed,
    /// Seen before: a Slack retry, a concurrent delivery that won, or this
    /// delivery's own claim applied by an attempt whose answer was lost.
    /// Its work may or may not be on the queue: enqueue it again.
    Duplicate,
    /// A reply in a thread the bot takes no part in.
    NotABotThread,
}

/// Remembers which Slack events already started work (and which threads the
/// bot takes part in), so Slack's retries never start a second turn.
#[async_trait]
pub trait EventClaims: Send + Sync {
    /// Atomically records the event if it is new (and, per `claim.rule`,
    /// records or checks the thread).
    async fn claim(&self, claim: &EventClaim, now_unix: i64) -> Result<ClaimOutcome, PortError>;
}

/// The work queue (SQS FIFO in AWS).
#[async_trait]
pub trait WorkQueue: Send + Sync {
    async fn enqueue(&self, message: &WorkMessage) -> Result<(), PortError>;
}

/// What [`TurnStore::create`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Created {
    /// Stored at version 1.
    New,
    /// A turn with this id was already stored (a redelivered request): here
    /// it is, as stored.
    Existing(Box<Turn>),
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Someone saved the turn since this copy was read: re-read, never
    /// overwrite.
    #[error("turn {id} changed since version {expected}; re-read it")]
    Conflict { id: TurnId, expected: u64 },
    /// The state would not fit one item. Large tool results belong in the
    /// artifact store before the turn is saved.
    #[error("turn {id} state is {bytes} bytes, over the {limit} byte limit")]
    TooLarge { id: TurnId, bytes: usize, limit: usize },
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Durable turn state with optimistic locking. The worker is its one
/// writer; the responder only reads.
#[async_trait]
pub trait TurnStore: Send + Sync {
    /// Stores a new turn (its `version` becomes 1), unless one with the same
    /// id exists.
    async fn create(&self, turn: &mut Turn) -> Result<Created, StoreError>;

    /// The stored turn, with its current version.
    async fn load(&self, id: &TurnId) -> Result<Option<Turn>, StoreError>;

    /// Saves `turn` if the stored version is still `turn.version`, and then
    /// bumps `turn.version`. Otherwise [`StoreError::Conflict`] and nothing
    /// is written.
    async fn save(&self, turn: &mut Turn) -> Result<(), StoreError>;
}

/// Durable [`DeliveryRecord`]s with optimistic locking, one per turn. The
/// responder is its one writer; the worker only reads.
#[async_trait]
pub trait DeliveryLog: Send + Sync {
    /// The turn's record (a fresh one, version 0, when there is none).
    async fn load(&self, id: &TurnId) -> Result<DeliveryRecord, StoreError>;

    /// Saves `record` if the stored version is still `record.version` (or
    /// none is stored and it is 0), then bumps `record.version`. Otherwise
    /// [`StoreError::Conflict`] and nothing is written.
    async fn save(&self, id: &TurnId, record: &mut DeliveryRecord) -> Result<(), StoreError>;
}

/// A record as stored: its JSON state, the version kept beside it, and
/// the token of the write that stored it (none for records written before
/// writes carried one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRecord {
    pub version: u64,
    pub state: String,
    pub token: Option<WriteToken>,
}

/// Names one write, so its writer can tell its own write from another's
/// when the answer to it was lost (a timeout, a reset, a 5xx after the
/// store committed) and a retry, or a read, finds the record already
/// changed. Unique per write: a process-wide random prefix and a counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WriteToken(String);

impl WriteToken {
    pub fn fresh() -> Self {
        use std::hash::{BuildHasher, Hasher};
        use std::sync::OnceLock;
        use std::sync::atomic::{AtomicU64, Ordering};
        static PROCESS: OnceLock<u64> = OnceLock::new();
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // std's hasher keys come from the OS's randomness: a fresh
        // `RandomState` is a random number without another dependency.
        let process = *PROCESS.get_or_init(|| {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u32(std::process::id());
            hasher.finish()
        });
        Self(format!("{process:016x}{:08x}", COUNTER.fetch_add(1, Ordering::Relaxed)))
    }

    /// A token as a store read it back.
    pub fn from_stored(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A conditional put as its writer sends it: `state` at version
/// `expected + 1`, only where the stored version is `expected` (0: none
/// stored), expiring after `expires_at` (Unix seconds), named by `token`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordWrite {
    pub expected: u64,
    pub state: String,
    pub expires_at: i64,
    pub token: WriteToken,
}

impl RecordWrite {
    /// Whether `stored` is this write, applied.
    pub fn is_applied_in(&self, stored: &StoredRecord) -> bool {
        stored.version == self.expected + 1 && stored.token.as_ref() == Some(&self.token)
    }
}

/// Where a versioned record lives: a partition and a kind within it (a
/// turn's state and its delivery record share the partition).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordKey {
    pub partition: String,
    pub kind: &'static str,
}

/// What a conditional put found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Put {
    Written,
    /// The stored version was not the expected one; nothing was written.
    /// `current` is what is stored, when the store returned it with the
    /// refusal (DynamoDB does, at no extra cost).
    Conflict {
        current: Option<StoredRecord>,
    },
}

/// The one primitive both stores stand on: JSON records with a version and
/// the token of the write that stored them, written only where the stored
/// version is the expected one. DynamoDB (a conditional `PutItem`) and
/// memory implement it; [`crate::store`] builds the turn store and the
/// delivery log on it.
#[async_trait]
pub trait VersionedRecords: Send + Sync {
    /// The record, read consistently.
    async fn get(&self, key: &RecordKey) -> Result<Option<StoredRecord>, PortError>;

    /// The records `keys` name, in their order, read consistently: in one
    /// request where the store can (DynamoDB's `BatchGetItem`), else one
    /// read each, together.
    async fn get_many(&self, keys: &[RecordKey]) -> Result<Vec<Option<StoredRecord>>, PortError> {
        futures_util::future::try_join_all(keys.iter().map(|key| self.get(key))).await
    }

    /// Stores `write` if the stored version is `write.expected`, keeping
    /// its token beside the state. Callers go through
    /// [`crate::store::put_versioned`], which tells a lost answer to this
    /// call from a refusal.
    async fn put(&self, key: &RecordKey, write: &RecordWrite) -> Result<Put, PortError>;

    /// Writes an item beside a record (a part of a turn's transcript) under
    /// a sort key no other write uses, replacing whatever was there: a
    /// retry writes the same bytes again.
    async fn put_part(&self, partition: &str, sort_key: &str, state: String, expires_at: i64) -> Result<(), PortError>;

    /// Deletes an item written by [`Self::put_part`]; deleting what is not
    /// there succeeds, so a retry is harmless.
    async fn delete_part(&self, partition: &str, sort_key: &str) -> Result<(), PortError>;

    /// The items of `partition` whose sort key starts with `prefix`, as
    /// (sort key, state) in sort-key order, read consistently.
    async fn parts(&self, partition: &str, prefix: &str) -> Result<Vec<(String, String)>, PortError>;
}

/// Encrypts a small secret (a person's tokens) bound to a context: it opens
/// only with the same context. KMS envelope encryption in AWS.
#[async_trait]
pub trait KeySealer: Send + Sync {
    async fn seal(&self, plaintext: &[u8], context: &[(&'static str, &str)]) -> Result<String, PortError>;
    async fn open(&self, sealed: &str, context: &[(&'static str, &str)]) -> Result<Vec<u8>, PortError>;
}

/// Objects too large for a turn's item (large tool results), and
/// configuration (S3 in AWS).
#[async_trait]
pub trait ArtifactStore: Send + Sync {
    async fn put(&self, key: &str, body: Vec<u8>, content_type: &'static str) -> Result<(), PortError>;

    /// The object, `None` when there is none under `key`.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, PortError>;

    /// The object when it holds at most `max` bytes. A store that knows an
    /// object's size before its body (S3) does not read a larger one's.
    async fn get_at_most(&self, key: &str, max: u64) -> Result<Bounded, PortError> {
        Ok(match self.get(key).await? {
            None => Bounded::Absent,
            Some(bytes) if bytes.len() as u64 > max => Bounded::TooLarge { bytes: bytes.len() as u64 },
            Some(bytes) => Bounded::Found(bytes),
        })
    }

    /// Keys and sizes under `prefix`, in key order, at most `max`.
    async fn list(&self, prefix: &str, max: usize) -> Result<Vec<(String, u64)>, PortError>;
}

/// An object read with [`ArtifactStore::get_at_most`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bounded {
    Absent,
    Found(Vec<u8>),
    /// Larger than asked for (its size): its body was not read.
    TooLarge {
        bytes: u64,
    },
}

/// Secrets the assistant configuration names (`${secret:NAME}`), read once
/// at start-up (Secrets Manager in AWS). The store decides where `NAME`
/// lives (the deployment's prefix); the configuration never names more.
#[async_trait]
pub trait SecretStore: Send + Sync {
    /// The secret's text, `None` when there is no secret of that name.
    async fn secret(&self, name: &str) -> Result<Option<String>, PortError>;
}

/// A deployment without a secret store: every `${secret:…}` is refused.
pub struct NoSecrets;

#[async_trait]
impl SecretStore for NoSecrets {
    async fn secret(&self, name: &str) -> Result<Option<String>, PortError> {
        Err(PortError::new("reading a secret", format!("no secret store is configured to read {name}")))
    }
}

/// Where a SigV4-signed request goes: AWS's signing name for the service
/// (`execute-api`, `lambda`, `bedrock-agentcore`) and its region (the
/// process's when `None`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwsScope {
    pub service: String,
    #[serde(default)]
    pub region: Option<String>,
}

/// A request to sign, exactly as it will be sent: every header given is
/// signed (and must then be sent unchanged); headers added later are not.
#[derive(Debug, Clone, Copy)]
pub struct UnsignedRequest<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

/// Signs requests as the process's AWS identity (SigV4): the team's APIs
/// behind IAM auth (API Gateway, Lambda function URLs, AgentCore Gateway).
/// One signer for the process: the same credentials the AWS clients use.
#[async_trait]
pub trait RequestSigner: Send + Sync {
    /// The headers to add: `authorization`, `x-amz-date`, and
    /// `x-amz-security-token` with temporary credentials.
    async fn sign(&self, request: UnsignedRequest<'_>, scope: &AwsScope) -> Result<Vec<(String, String)>, PortError>;
}

/// A deployment that signs nothing: an `aws_iam` tool's calls fail.
pub struct NoSigner;

#[async_trait]
impl RequestSigner for NoSigner {
    async fn sign(&self, request: UnsignedRequest<'_>, _: &AwsScope) -> Result<Vec<(String, String)>, PortError> {
        Err(PortError::new("signing a request", format!("no AWS signer is configured for {}", request.url)))
    }
}

/// Who wrote a message in the thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Author {
    /// This bot: its messages are the model's own earlier turns.
    ThisBot,
    Person(UserId),
    /// Another bot or integration (`bot_id`).
    OtherBot(String),
}

/// A message already in the thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadMessage {
    pub ts: Ts,
    pub author: Author,
    pub text: String,
    /// Files attached to it.
    pub files: Vec<crate::files::FileRef>,
}

/// Where a turn takes place (Slack's `conversations.info`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelInfo {
    /// `None` for direct messages.
    pub name: Option<String>,
    pub topic: String,
    pub purpose: String,
}

/// A message Slack's real-time search found (`assistant.search.context`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundMessage {
    pub channel: ChannelId,
    pub ts: Ts,
    pub author: Option<UserId>,
    pub by_bot: bool,
    pub text: String,
    /// Where people open it; what an answer cites.
    pub permalink: String,
}

/// A search as the asking person (their event's action token).
#[derive(Debug, Clone, Copy)]
pub struct SlackSearch<'a> {
    pub action_token: &'a slack::events::ActionToken,
    pub query: &'a str,
    /// `public_channel`, `private_channel`, `mpim`, `im`.
    pub channel_types: &'a [&'static str],
    /// The asking channel, which Slack may rank first.
    pub context_channel: &'a ChannelId,
    pub limit: usize,
}

/// What the worker reads from Slack when a turn starts.
#[async_trait]
pub trait SlackReader: Send + Sync {
    /// The channel the thread is in.
    async fn channel_info(&self, channel: &ChannelId) -> Result<ChannelInfo, PortError>;

    /// The thread's last `limit` messages, oldest first
    /// (`conversations.replies`).
    async fn thread_history(
        &self,
        thread: &ThreadRef,
        bot_user: Option<&UserId>,
        limit: usize,
    ) -> Result<Vec<ThreadMessage>, PortError>;

    /// The members of a user group (`usergroups.users.list`), for approvers
    /// given as a group.
    async fn usergroup_members(&self, group: &str) -> Result<Vec<UserId>, PortError>;

    /// A channel's newest `limit` top-level messages, oldest first
    /// (`conversations.history`; the bot must be in the channel).
    async fn channel_history(&self, channel: &ChannelId, limit: usize) -> Result<Vec<ThreadMessage>, PortError>;

    /// Messages matching `search.query` that the person whose action token
    /// it is can see (`assistant.search.context`), best first.
    async fn search(&self, search: SlackSearch<'_>) -> Result<Vec<FoundMessage>, PortError>;
}

/// Slack's files, downloaded with the bot token (`files:read`).
#[async_trait]
pub trait SlackFiles: Send + Sync {
    /// At most `max_bytes` of the file at `url` (its `url_private_download`).
    async fn download(&self, url: &str, max_bytes: u64) -> Result<Downloaded, DownloadError>;
}

/// A file's bytes: all of it, or its first `max_bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    pub body: Vec<u8>,
    /// The file went on past `max_bytes`; `body` is its start.
    pub cut: bool,
    /// What Slack said it served (`Content-Type`).
    pub content_type: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// Not a Slack file URL: the bot token is never sent there.
    #[error("not a Slack file URL: {0}")]
    NotSlack(String),
    /// Slack answered with its sign-in page or a refusal: the app lacks
    /// `files:read`, or the file is not shared where the bot can see it.
    #[error("Slack would not let the bot read the file ({0})")]
    NoAccess(String),
    #[error(transparent)]
    Failed(#[from] PortError),
}

/// What the responder does in Slack: post in a thread, replace a message,
/// set the thread's status line, and find the messages this bot already
/// posted for a turn.
#[async_trait]
pub trait SlackPoster: Send + Sync {
    /// Posts `message` in the thread, with metadata naming the turn and the
    /// message's key; its `ts`.
    async fn post(&self, thread: &ThreadRef, turn: &TurnId, message: &Outgoing) -> Result<Ts, PostError>;

    /// Puts `message` in place of the bot's message `ts`.
    async fn update(&self, thread: &ThreadRef, ts: &Ts, turn: &TurnId, message: &Outgoing) -> Result<(), PostError>;

    /// Sets the thread's status line ("is thinking…"); empty clears it.
    async fn set_status(&self, thread: &ThreadRef, status: &str) -> Result<(), PostError>;

    /// A message in the thread that only `user` sees (`chat.postEphemeral`);
    /// `blocks` may be empty (plain text).
    async fn post_ephemeral(
        &self,
        thread: &ThreadRef,
        user: &UserId,
        text: &str,
        blocks: &[serde_json::Value],
    ) -> Result<(), PostError>;

    /// Ends a streamed message the worker left open (its invocation
    /// stopped mid-answer), so it can be replaced.
    async fn stop_stream(&self, thread: &ThreadRef, ts: &Ts) -> Result<(), PostError>;

    /// The turn's messages already in the thread: key → `ts`.
    async fn find_posted(&self, thread: &ThreadRef, turn: &TurnId) -> Result<BTreeMap<MessageKey, Ts>, PostError>;

    /// Uploads a file without sharing it anywhere yet
    /// (`files.getUploadURLExternal`, then its bytes): its file id.
    async fn upload(&self, file: &FileUpload) -> Result<String, PostError>;

    /// Shares an uploaded file in the thread (`files.completeUploadExternal`).
    async fn share_upload(&self, thread: &ThreadRef, file_id: &str, title: &str) -> Result<(), PostError>;

    /// The ids of the files shared in the thread (read from
    /// `conversations.replies`, so it needs no `files:read`).
    async fn files_in_thread(&self, thread: &ThreadRef) -> Result<BTreeSet<String>, PostError>;
}

/// A file the responder attaches to a thread: a long answer, in full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileUpload {
    pub filename: String,
    pub title: String,
    pub body: Vec<u8>,
}

/// Posts operator alerts: a message at the top of a channel. Apart from
/// [`SlackPoster`], so a function that only alerts (the worker) links no
/// thread-posting code.
#[async_trait]
pub trait AlertPoster: Send + Sync {
    async fn post_to_channel(&self, channel: &ChannelId, text: &str) -> Result<(), PostError>;
}

/// How long what a person has in view is remembered: a question asked
/// within it gets it as context.
pub const USER_CONTEXT_TTL_SECS: i64 = 3600;

/// What a person had in view beside the bot's DM (`app_context_changed`,
/// or the channel an assistant thread was opened from).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UserContext {
    /// The channel in view; none when nothing in particular is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<ChannelId>,
    /// When it was seen (Unix seconds).
    pub at: i64,
}

/// What people have in view, remembered for [`USER_CONTEXT_TTL_SECS`]: a
/// small item per person, written by the ingress, read by the worker.
#[async_trait]
pub trait UserContexts: Send + Sync {
    async fn remember(&self, team: &TeamId, user: &UserId, context: &UserContext) -> Result<(), PortError>;

    /// The person's context, unless it is older than the TTL at `now_unix`.
    async fn recall(&self, team: &TeamId, user: &UserId, now_unix: i64) -> Result<Option<UserContext>, PortError>;
}

/// A prompt offered when a person opens the bot's DM: a button showing
/// `title` that sends `message`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuggestedPrompt {
    pub title: String,
    pub message: String,
}

/// How far a tool step shown in a streamed answer has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    InProgress,
    Complete,
    Error,
}

/// One piece appended to a streamed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamChunk {
    /// Markdown, already redacted.
    Text(String),
    /// A tool step's card: created on its first update, changed by later
    /// ones with the same `id`.
    Task(TaskUpdate),
}

/// One update of a tool step's card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskUpdate {
    pub id: String,
    pub title: String,
    pub status: TaskStatus,
    /// What the step read (knowledge-base documents, pages).
    pub sources: Vec<TaskSource>,
    /// What it ran with: the key inputs, one line (Slack: 256 characters).
    pub details: Option<String>,
    /// What came of it: one line of the result (Slack: 256 characters).
    pub output: Option<String>,
}

/// A source on a tool step's card: a link with its text (Slack refuses a
/// source without text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSource {
    pub title: String,
    pub url: String,
}

/// What the worker does in Slack's agent surface: the prompts shown when
/// a DM is opened, a DM thread's title, and the answer streamed as the
/// model writes it (`chat.startStream` / `appendStream` / `stopStream`).
#[async_trait]
pub trait AgentSlack: Send + Sync {
    /// Sets the prompts shown in `channel`; in the thread `thread_ts` for
    /// an assistant thread, for the whole DM without one (agent apps, where
    /// a thread would make Slack ignore them).
    async fn set_suggested_prompts(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        prompts: &[SuggestedPrompt],
    ) -> Result<(), PostError>;

    async fn set_title(&self, thread: &ThreadRef, title: &str) -> Result<(), PostError>;

    /// Starts an empty streamed message in the thread; its `ts`. Outside a
    /// DM Slack wants the person it streams to (`recipient`).
    async fn start_stream(&self, thread: &ThreadRef, recipient: Option<&UserId>) -> Result<Ts, PostError>;

    async fn append_stream(&self, thread: &ThreadRef, ts: &Ts, chunks: &[StreamChunk]) -> Result<(), PostError>;

    /// Deletes the bot's message `ts`: a stream started whose `ts` could not
    /// be recorded, which nothing may go into and which must not stay empty
    /// above the answer. A message already gone counts as deleted.
    async fn delete_message(&self, thread: &ThreadRef, ts: &Ts) -> Result<(), PostError>;

    /// The bot's own messages in the thread, posted after `after`, that hold
    /// no text, no files and no metadata: what a stream started and never
    /// recorded looks like (`chat.startStream` takes no metadata, and
    /// nothing was appended to it, for nobody knew its `ts`). Every other
    /// message the bot leaves in a thread carries metadata or files.
    async fn unrecorded_streams(&self, thread: &ThreadRef, after: &Ts) -> Result<Vec<Ts>, PostError>;

    /// Ends the stream, adding `blocks` under the text and the message's
    /// metadata.
    async fn stop_stream(
        &self,
        thread: &ThreadRef,
        ts: &Ts,
        blocks: &[serde_json::Value],
        metadata: &MessageMetadata,
    ) -> Result<(), PostError>;

    /// Shows `view` as the person's Home tab (`views.publish`): the same
    /// view again changes nothing, so it is retried freely.
    async fn publish_home(&self, user: &UserId, view: &serde_json::Value) -> Result<(), PostError>;

    /// Uploads a file without sharing it (the responder shares it with the
    /// answer): its file id. An upload never shared is discarded by Slack.
    async fn upload(&self, file: &FileUpload) -> Result<String, PostError>;

    /// Posts `text` at the top of `channel` (`chat.postMessage`, no link
    /// previews): the message's `ts`. Not retried after a 5xx or a reset:
    /// the message may have been posted.
    async fn post_to_channel(&self, channel: &ChannelId, text: &str) -> Result<Ts, PostError>;

    /// Posts `text` carrying `metadata` (without link previews): at the top
    /// of `channel`, or in `thread_ts`'s thread. Not retried after a 5xx or
    /// a reset: the caller looks for it ([`Self::find_tagged`]) first.
    async fn post_tagged(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        text: &str,
        metadata: &MessageMetadata,
    ) -> Result<Ts, PostError>;

    /// The messages carrying metadata of `owner`, by key: among the
    /// channel's newest top-level messages, or in `thread_ts`'s thread.
    async fn find_tagged(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        owner: &TurnId,
    ) -> Result<BTreeMap<MessageKey, Ts>, PostError>;

    /// The workspace and bot user the token belongs to (`auth.test`, asked
    /// once a process by the Slack adapter).
    async fn identity(&self) -> Result<crate::incidents::BotIdentity, PostError>;
}

/// A canvas the bot made: its file id and where people open it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canvas {
    pub id: String,
    pub url: String,
}

/// Slack canvases (a postmortem's draft).
#[async_trait]
pub trait Canvases: Send + Sync {
    /// Makes a canvas titled `title` holding `markdown`, readable by
    /// `channel`'s members. Not retried after a 5xx or a reset: it may exist.
    async fn create(&self, title: &str, markdown: &str, channel: &ChannelId) -> Result<Canvas, PostError>;

    /// Replaces the canvas's whole content (the same again changes nothing).
    async fn replace(&self, canvas_id: &str, markdown: &str) -> Result<(), PostError>;
}

/// When a call waiting for approval expires: set when the worker asks,
/// found by its sweep once due.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApprovalTimer {
    /// Unix seconds.
    pub due_at: i64,
    pub turn_id: TurnId,
    pub thread: ThreadRef,
    pub tool_use_id: String,
}

/// Approval deadlines, so a call nobody decides on still ends: the worker
/// sets one per waiting call and sweeps the due ones on a schedule (one
/// partition of the turns table in AWS, ordered by due time).
#[async_trait]
pub trait ApprovalTimers: Send + Sync {
    async fn set(&self, timer: &ApprovalTimer) -> Result<(), PortError>;

    /// Timers due at `now` or before, earliest first, at most `max`.
    async fn due(&self, now_unix: i64, max: usize) -> Result<Vec<ApprovalTimer>, PortError>;

    async fn clear(&self, timer: &ApprovalTimer) -> Result<(), PortError>;
}

/// The reply queue (SQS FIFO in AWS): what the responder shows in Slack.
#[async_trait]
pub trait ReplyQueue: Send + Sync {
    async fn send(&self, message: &ReplyMessage) -> Result<(), PortError>;
}

/// When a received queue message is handed out again (SQS's visibility):
/// how the functions make a failed message come back after a backoff
/// rather than after the queue's long visibility timeout.
#[async_trait]
pub trait MessageVisibility: Send + Sync {
    /// The message comes back `after` from now. `queue_arn` names its queue
    /// as Lambda's event does.
    async fn set(&self, queue_arn: &str, receipt_handle: &str, after: std::time::Duration) -> Result<(), PortError>;
}

/// An error that knows whether handling the same message again may
/// succeed: what decides between an SQS retry and the dead-letter queue.
pub trait Retryable: fmt::Display {
    fn is_retryable(&self) -> bool;
}

/// A storage or queue operation failed. Carries the operation and the
/// adapter's error, so logs say what failed and why.
#[derive(Debug)]
pub struct PortError {
    operation: &'static str,
    detail: String,
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl PortError {
    pub fn new(operation: &'static str, detail: impl Into<String>) -> Self {
        Self { operation, detail: detail.into(), source: None }
    }

    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }
}

impl fmt::Display for PortError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.operation, self.detail)
    }
}

impl StdError for PortError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|s| s as &(dyn StdError + 'static))
    }
}
