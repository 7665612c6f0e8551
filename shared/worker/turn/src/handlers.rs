//! One handler per kind of work message, each in its own file behind
//! [`Handler`] (as mini-redis gives each command its own file behind
//! `Command::apply`): what the worker does with a question, a
//! continuation, a click, an alert. [`Worker::handle`](crate::Worker::handle)
//! picks the handler and runs it inside the message's `turn` span.
//!
//! | message | handler |
//! |---|---|
//! | a question (`StartTurn`) | [`start`] |
//! | a continuation of a long turn | [`resume`] |
//! | Approve / Deny on a waiting call | [`approval`] |
//! | an approval nobody answered in time | [`approval_timeout`] |
//! | a person opened the DM or an assistant thread | [`opened`] |
//! | 👍 / 👎 under an answer | [`feedback`] |
//! | "Revoke" on a thread's grant | [`grant_revoke`] |
//! | a sign-in came back from the provider | [`signed_in`] |
//! | a Connect button clicked | [`connect_click`] |
//! | the Home tab opened, or Disconnect clicked | [`home`] |
//! | an alert, or a CloudWatch alarm's state change | [`alert`] |
//! | "Investigate with the assistant" on a message | [`shortcut`] |
//! | `/assistant <question>` (a slash command) | [`slash_command`] |
//! | the app left a team, or people left (`forget`) | [`forget`] |
//!
//! Where a shortcut or a command cannot be answered where it was used, the
//! answer goes in a thread of the person's DM ([`dm_thread`]).
//!
//! What every turn shares (the step loop, its tool calls, acting as the
//! person) is in [`crate::step_loop`], [`crate::tool_calls`] and
//! [`crate::acting_as`].

use crate::{Deadline, Outcome, Worker, WorkerError};
use tracing::Span;

pub mod alert;
pub mod approval;
pub mod approval_timeout;
pub mod connect_click;
pub mod dm_thread;
pub mod feedback;
pub mod forget;
pub mod grant_revoke;
pub mod home;
pub mod opened;
pub mod resume;
pub mod shortcut;
pub mod signed_in;
pub mod slash_command;
pub mod start;

/// One kind of work message and what the worker does with it.
pub(crate) trait Handler {
    /// Names the message's turn (and event) on the `turn` span, so every
    /// log line of its handling, the adapters' included, can be found by
    /// them. Messages of no turn name nothing.
    fn name_on(&self, _span: &Span) {}

    /// Handles the message. An error no redelivery can mend is settled by
    /// the caller ([`Worker::handle`](crate::Worker::handle)).
    async fn apply(&self, worker: &Worker, deadline: &dyn Deadline) -> Result<Outcome, WorkerError>;
}
