//! What the functions need from the outside world, as small object-safe
//! traits: a function holds `Arc<dyn TurnStore>` and never knows whether
//! DynamoDB (`shared/adapters/aws`), Slack's Web API
//! (`shared/adapters/slack`) or an in-memory double (`testkit`) is behind
//! it. Each call costs one boxed future, nothing next to the I/O it does.
//!
//! One file per outside system (and, for the turns table, per kind of
//! record an adapter of its own writes), all re-exported here so a port is
//! always `assistant_core::ports::Name`:
//!
//! | file | system | ports |
//! |---|---|---|
//! | `claims.rs` | turns table: event and thread claims | [`EventClaims`], [`ActionTokens`] |
//! | `contexts.rs` | turns table: what a person has in view | [`UserContexts`] |
//! | `records.rs` | turns table: versioned records | [`VersionedRecords`] |
//! | `turns.rs` | turns table, on versioned records | [`TurnStore`], [`DeliveryLog`] |
//! | `timers.rs` | turns table: approval deadlines | [`ApprovalTimers`] |
//! | `queues.rs` | SQS | [`WorkQueue`], [`ReplyQueue`], [`MessageVisibility`] |
//! | `artifacts.rs` | S3 | [`ArtifactStore`] |
//! | `secrets.rs` | Secrets Manager | [`SecretStore`] |
//! | `sealing.rs` | KMS | [`KeySealer`] |
//! | `signing.rs` | SigV4 | [`RequestSigner`] |
//! | `slack_reading.rs` | Slack: channels, threads, search | [`SlackReader`] |
//! | `slack_files.rs` | Slack: file downloads | [`SlackFiles`] |
//! | `slack_posting.rs` | Slack: the responder's posts, operator alerts | [`SlackPoster`], [`AlertPoster`] |
//! | `slack_agent.rs` | Slack: the agent surface, streaming | [`AgentSlack`] |
//! | `slack_canvases.rs` | Slack: canvases | [`Canvases`] |
//! | `error.rs` | every port's error | [`PortError`], [`Retryable`] |
//!
//! The model and MCP servers have their ports beside their types, in
//! [`crate::model`] and [`crate::mcp`].

mod artifacts;
mod claims;
mod contexts;
mod error;
mod queues;
mod records;
mod sealing;
mod secrets;
mod signing;
mod slack_agent;
mod slack_canvases;
mod slack_files;
mod slack_posting;
mod slack_reading;
mod timers;
mod turns;

pub use artifacts::{ArtifactStore, Bounded};
pub use claims::{ActionTokens, ClaimOutcome, EventClaim, EventClaims, ThreadRule};
pub use contexts::{UserContext, UserContexts};
pub use error::{PortError, Retryable};
pub use queues::{MessageVisibility, ReplyQueue, WorkQueue};
pub use records::{Put, RecordKey, RecordWrite, StoredRecord, VersionedRecords, WriteToken};
pub use sealing::KeySealer;
pub use secrets::{NoSecrets, SecretStore};
pub use signing::{AwsScope, NoSigner, RequestSigner, UnsignedRequest};
pub use slack_agent::{
    AgentSlack, MAX_SUGGESTED_MESSAGE_CHARS, MAX_SUGGESTED_PROMPTS, MAX_SUGGESTED_TITLE_CHARS, StreamChunk,
    SuggestedPrompt, TaskSource, TaskStatus, TaskUpdate,
};
pub use slack_canvases::{Canvas, Canvases};
pub use slack_files::{DownloadError, Downloaded, SlackFiles};
pub use slack_posting::{AlertPoster, FileUpload, SlackPoster};
pub use slack_reading::{Author, ChannelInfo, FoundMessage, MessageRead, SlackReader, SlackSearch, ThreadMessage};
pub use timers::{ApprovalTimer, ApprovalTimers};
pub use turns::{Created, DeliveryLog, StoreError, TurnStore};

// The claims' and contexts' lifetimes, where their ports' users look for them.
pub use crate::keys::{ACTION_TOKEN_TTL_SECS, BOT_THREAD_TTL_SECS, EVENT_CLAIM_TTL_SECS, USER_CONTEXT_TTL_SECS};
