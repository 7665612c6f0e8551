//! Slack's wire protocol, with no I/O: verifying that a request came from
//! Slack, and typed views of what Slack sends (Events API callbacks and
//! interactivity payloads), (feature `web-api`) the Web API client, and
//! (feature `render`) Markdown to mrkdwn and splitting under Slack's limits.
//!
//! Everything here is pure so it can be tested with captured payloads and a
//! pinned clock. The ingress function (via the `intake` crate) is the only
//! caller that sees raw requests; it verifies with [`signature`] before it
//! hands a single byte to [`request::parse`].

pub mod events;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod ids;
pub mod interaction;
#[cfg(feature = "render")]
pub mod mrkdwn;
pub mod request;
pub mod signature;
#[cfg(feature = "render")]
pub mod split;
#[cfg(feature = "web-api")]
pub mod web;

pub use ids::{ChannelId, EventId, TeamId, Ts, UserId};
pub use request::{ParseError, SlackRequest};
pub use signature::{SignatureError, SigningSecret};
