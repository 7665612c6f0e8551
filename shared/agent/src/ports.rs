//! What the domain needs from the outside world, as small traits. The AWS
//! adapters (`aws-adapters`) and the in-memory ones ([`crate::memory`])
//! implement them; the domain never sees which.

use crate::messages::{ReplyMessage, ThreadRef, WorkMessage};
use crate::turn::{Turn, TurnId};
use serde::{Deserialize, Serialize};
use slack::{ChannelId, Ts, UserId};
use slack::{EventId, TeamId};
use std::collections::{BTreeMap, BTreeSet};
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;

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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// First delivery: go on and enqueue.
    Claimed,
    /// Seen before (a Slack retry, or a concurrent delivery won).
    Duplicate,
    /// A reply in a thread the bot takes no part in.
    NotABotThread,
}

/// Remembers which Slack events already started work (and which threads the
/// bot takes part in), so Slack's retries never start a second turn.
pub trait EventClaims: Send + Sync {
    /// Atomically records the event if it is new (and, per `claim.rule`,
    /// records or checks the thread).
    fn claim(&self, claim: &EventClaim, now_unix: i64) -> impl Future<Output = Result<ClaimOutcome, PortError>> + Send;

    /// Forgets a claim whose work could not be enqueued, so Slack's retry of
    /// the same event is not mistaken for a duplicate.
    fn release(&self, claim: &EventClaim) -> impl Future<Output = Result<(), PortError>> + Send;
}

/// The work queue (SQS FIFO in AWS).
pub trait WorkQueue: Send + Sync {
    fn enqueue(&self, message: &WorkMessage) -> impl Future<Output = Result<(), PortError>> + Send;
}

/// How long a turn is kept after its last change.
pub const TURN_TTL_SECS: i64 = 30 * 24 * 3600;
/// The largest serialized turn state any store accepts: under DynamoDB's
/// 400 KB item limit with room for the item's other attributes.
pub const MAX_TURN_STATE_BYTES: usize = 380_000;

/// The turn as stored (JSON), refused when over [`MAX_TURN_STATE_BYTES`].
pub fn serialize_turn(turn: &Turn) -> Result<String, StoreError> {
    let state = serde_json::to_string(turn).expect("turn state contains only JSON-safe values");
    if state.len() > MAX_TURN_STATE_BYTES {
        return Err(StoreError::TooLarge { id: turn.id.clone(), bytes: state.len(), limit: MAX_TURN_STATE_BYTES });
    }
    Ok(state)
}

/// A stored state back into a turn at `version`.
pub fn deserialize_turn(state: &str, version: u64) -> Result<Turn, StoreError> {
    let mut turn: Turn = serde_json::from_str(state)
        .map_err(|err| PortError::new("read turn state", format!("stored state does not parse: {err}")))?;
    turn.version = version;
    Ok(turn)
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

/// Durable turn state with optimistic locking.
pub trait TurnStore: Send + Sync {
    /// Stores a new turn (its `version` becomes 1), unless one with the same
    /// id exists.
    fn create(&self, turn: &mut Turn) -> impl Future<Output = Result<Created, StoreError>> + Send;

    /// The stored turn, with its current version.
    fn load(&self, id: &TurnId) -> impl Future<Output = Result<Option<Turn>, StoreError>> + Send;

    /// Saves `turn` if the stored version is still `turn.version`, and then
    /// bumps `turn.version`. Otherwise [`StoreError::Conflict`] and nothing
    /// is written.
    fn save(&self, turn: &mut Turn) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// A store shared between owners (a worker and a test, say).
impl<T: TurnStore> TurnStore for std::sync::Arc<T> {
    fn create(&self, turn: &mut Turn) -> impl Future<Output = Result<Created, StoreError>> + Send {
        (**self).create(turn)
    }

    fn load(&self, id: &TurnId) -> impl Future<Output = Result<Option<Turn>, StoreError>> + Send {
        (**self).load(id)
    }

    fn save(&self, turn: &mut Turn) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).save(turn)
    }
}

/// What the responder showed in a turn's thread, kept beside the turn (and
/// written only by the responder, so it never races the worker's saves).
///
/// Every message the responder posts has a key (`answer 1/2`,
/// `approval tooluse_…`, `apology`, `placeholder`). A key is marked attempted before
/// `chat.postMessage` and posted (with the message's `ts`) after: a key
/// still attempted on a later delivery means the outcome is unknown, and
/// the thread is searched for the message (its metadata carries the turn
/// and the key) before anything is posted again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeliveryRecord {
    /// Owned by the store, as [`Turn::version`]; 0 before the first save.
    #[serde(skip)]
    pub version: u64,
    /// The last progress step shown (a redelivered older one is skipped).
    #[serde(default)]
    pub progress_step: u32,
    /// Keys whose post began and whose outcome was not recorded.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub attempted: BTreeSet<String>,
    /// Keys posted, and where.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub posted: BTreeMap<String, Ts>,
    pub updated_at: i64,
}

impl DeliveryRecord {
    /// The record as stored (JSON).
    pub fn to_state(&self) -> String {
        serde_json::to_string(self).expect("delivery records contain only strings and numbers")
    }

    /// A stored state back into a record at `version`.
    pub fn from_state(state: &str, version: u64) -> Result<Self, StoreError> {
        let mut record: DeliveryRecord = serde_json::from_str(state)
            .map_err(|err| PortError::new("read delivery record", format!("stored state does not parse: {err}")))?;
        record.version = version;
        Ok(record)
    }
}

/// Durable [`DeliveryRecord`]s with optimistic locking, one per turn.
pub trait DeliveryLog: Send + Sync {
    /// The turn's record (a fresh one, version 0, when there is none).
    fn load(&self, id: &TurnId) -> impl Future<Output = Result<DeliveryRecord, StoreError>> + Send;

    /// Saves `record` if the stored version is still `record.version` (or
    /// none is stored and it is 0), then bumps `record.version`. Otherwise
    /// [`StoreError::Conflict`] and nothing is written.
    fn save(&self, id: &TurnId, record: &mut DeliveryRecord) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// Objects too large for a turn's item (large tool results), and
/// configuration (S3 in AWS).
pub trait ArtifactStore: Send + Sync {
    fn put(
        &self,
        key: &str,
        body: Vec<u8>,
        content_type: &'static str,
    ) -> impl Future<Output = Result<(), PortError>> + Send;

    /// The object, `None` when there is none under `key`.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Vec<u8>>, PortError>> + Send;

    /// Keys and sizes under `prefix`, in key order, at most `max`.
    fn list(&self, prefix: &str, max: usize) -> impl Future<Output = Result<Vec<(String, u64)>, PortError>> + Send;
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
}

/// Where a turn takes place (Slack's `conversations.info`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelInfo {
    /// `None` for direct messages.
    pub name: Option<String>,
    pub topic: String,
    pub purpose: String,
}

/// What the worker reads from Slack when a turn starts.
pub trait SlackReader: Send + Sync {
    /// The channel the thread is in.
    fn channel_info(&self, channel: &ChannelId) -> impl Future<Output = Result<ChannelInfo, PortError>> + Send;

    /// The thread's last `limit` messages, oldest first
    /// (`conversations.replies`).
    fn thread_history(
        &self,
        thread: &ThreadRef,
        bot_user: Option<&UserId>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ThreadMessage>, PortError>> + Send;
}

/// The reply queue (SQS FIFO in AWS): what the responder shows in Slack.
pub trait ReplyQueue: Send + Sync {
    fn send(&self, message: &ReplyMessage) -> impl Future<Output = Result<(), PortError>> + Send;
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
