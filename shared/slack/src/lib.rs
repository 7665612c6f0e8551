//! Slack's wire protocol, with no I/O: verifying that a request came from
//! Slack, typed views of what Slack sends (Events API callbacks and
//! interactivity payloads), escaping text for it ([`text`]), which mass
//! mentions may ping ([`mentions`]), and a message's text, blocks and
//! attachments as a person reads them ([`readable`]). Rendering
//! for Slack (Markdown to mrkdwn,
//! splitting under Slack's limits) is the responder's, in
//! `shared/responder-logic`, so the ingress links no regex engine.
//!
//! Everything here is pure so it can be tested with captured payloads and a
//! pinned clock. The ingress function (via `ingress-logic`) is the only
//! caller that sees raw requests; it verifies with [`signature`] before it
//! hands a single byte to [`request::parse`]. The Web API client lives with
//! the other Slack adapters in `shared/adapters/slack`.

pub mod ask_modal;
pub mod command;
pub mod events;
pub mod ids;
pub mod interaction;
pub mod membership;
pub mod mentions;
pub mod readable;
pub mod request;
pub mod shortcut;
pub mod signature;
pub mod text;

pub use ids::{ChannelId, EnterpriseId, EventId, TeamId, Ts, UserId};
pub use membership::{Home, Membership};
pub use request::{ParseError, SlackRequest};
pub use signature::{SignatureError, SigningSecret};
