//! Remembering which Slack events already started work, in the turns table
//! (DynamoDB in AWS; `shared/adapters/aws/src/dynamodb/claims.rs`): the
//! ingress's conditional claim of an event id and of the thread, and the
//! person's action token kept beside the claim for the worker.

use super::PortError;
use crate::messages::ThreadRef;
use crate::turn::TurnId;
use async_trait::async_trait;
use slack::{EventId, TeamId};

/// Whether a turn may start in a thread the bot has not been part of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadRule {
    /// The event itself addresses the bot (a mention, a DM): the thread
    /// becomes one the bot takes part in.
    Opens,
    /// A plain reply: only in a thread the bot already takes part in.
    MustBeKnown,
    /// The work opens its thread itself (a slash command: the worker
    /// posts the thread's first message, which makes it the bot's): only
    /// the event is claimed, `thread` names just the channel.
    OpensLater,
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
