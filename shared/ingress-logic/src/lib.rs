//! The ingress function's logic, kept out of the Lambda binary so it can be
//! tested and benchmarked with in-memory ports:
//!
//! 1. [`service::Intake`] takes the raw request (headers and body bytes),
//!    checks the size, verifies Slack's signature, then parses;
//! 2. [`route`] decides, without I/O, what the request asks for: an answer
//!    (the URL challenge), nothing (bots, edits, unrelated messages) or work;
//! 3. work is claimed once per Slack event (dedupe) and put on the work
//!    queue; the reply tells Slack whether to retry.
//!
//! [`shortcuts`] reads the message shortcut "Investigate with the assistant",
//! [`commands`] the slash command, [`forms`] the forms MCP servers ask
//! people to fill in.
//! [`sign_in`] holds the routes without Slack's signature for people's browsers:
//! the start of a sign-in and the provider's callback (the `state` and a cookie
//! bound to the browser are the proof).
//! [`lifecycle`] turns the app's uninstall, revoked tokens and people
//! leaving into one `forget` work message each.
//! [`alert_webhooks`] takes Alertmanager's and PagerDuty's alerts, verified
//! by their own credentials.

pub mod alert_webhooks;
pub mod commands;
#[cfg(test)]
mod enterprise_tests;
pub mod forms;
pub mod http_body;
pub mod lifecycle;
pub mod route;
pub mod service;
pub mod shortcuts;
pub mod sign_in;

pub use service::{Counted, Intake, Reply, Request};
