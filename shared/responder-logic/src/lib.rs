//! The responder function's logic: everything a person sees from the bot
//! passes through here on its way to Slack.
//!
//! - [`render`]: answers, approval prompts, placeholders and apologies as
//!   Slack messages: redacted; answers in Slack's own [`markdown`] (split
//!   under Slack's limits; tables of numbers charted, long ones as data
//!   tables: [`charts`]), the bot's own words in [`mrkdwn`].
//! - [`responder`]: exactly-once posting, progress, refusals and dead
//!   letters, recorded in the turn's delivery record.
//!
//! Slack itself is behind the core's `SlackPoster` port: the Web API in
//! `shared/adapters/slack`, an in-memory Slack in `testkit`.

pub mod charts;
pub mod markdown;
pub mod mrkdwn;
pub mod render;
pub mod responder;

pub use responder::{DeadLetter, Outcome, Responder, ResponderError, remedy};
