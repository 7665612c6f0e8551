//! The responder's domain: everything a person sees from the bot passes
//! through here on its way to Slack.
//!
//! - [`render`]: answers, approval prompts, placeholders and apologies as
//!   Slack messages: redacted, mrkdwn, split under Slack's limits.
//! - [`responder`]: exactly-once posting, progress, refusals and dead
//!   letters.
//! - [`poster`]: what the responder needs from Slack (a port), and its Web
//!   API adapter; [`memory`]: an in-memory Slack for tests and the local
//!   runner.

pub mod memory;
pub mod poster;
pub mod render;
pub mod responder;

pub use poster::{Outgoing, PostError, SlackPoster, WebPoster};
pub use responder::{DeadLetter, Outcome, Responder, ResponderError};
