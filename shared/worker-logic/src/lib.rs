//! The worker function's logic: the durable tool loop and its tools.
//!
//! - [`worker`]: the step loop that drives a turn to its answer, one saved
//!   step at a time; approvals; continuations. [`approvals`]: who may
//!   decide on a call that changes things.
//! - [`assembly`]: building the worker from its ports and the assistant
//!   configuration; `functions/worker` and the local runner both call it.
//! - [`incidents`]: alerts (CloudWatch, Alertmanager, PagerDuty) open a
//!   thread in their channel and the investigation starts there;
//!   [`schedules`]: questions the bot asks itself on a cron schedule, in a
//!   thread it opens the same way.
//! - [`config`]: the assistant configuration (S3 JSON, or the runner's
//!   `--config` file); [`kept_config`]: the copy of it a cold worker
//!   reads with its first turns; [`config_fallback`]: a broken upload
//!   never takes the bot down (the last good configuration, reported).
//! - [`tools`]: the registry, per-channel allow-lists, schema-checked input,
//!   timeouts, redaction of every result; [`schema`] is its JSON Schema
//!   checker.
//! - The tools themselves: [`builtin_tools`], [`docs_tools`] (runbooks in
//!   the artifact bucket), [`http_tools`] (a team's APIs, declared),
//!   [`mcp_tools`] (MCP servers' tools, discovered at start-up),
//!   [`aws_tools`] (the account's alarms, metrics and logs),
//!   [`knowledge_tools`] (Bedrock knowledge bases), [`slack_tools`] (other
//!   channels' messages).
//! - [`auth`] and [`sign_in`]: how a tool's calls prove who calls (SigV4
//!   as the worker's role, or the asking person's own token from a
//!   provider they connect), and the sign-in that gets that token.
//! - [`inspect`]: what the model is offered in a channel, and why not the
//!   rest (`local --tools`).
//! - [`context`]: what a turn opens with (the thread so far, the channel);
//!   [`attachments`]: the files pasted in the thread, and `read_attachment`;
//!   [`answer_files`]: `attach_result`, a tool's result as a file beside the answer;
//!   [`memory_tools`]: the channel's memory of past turns (`recall`, `forget_thread`);
//!   [`postmortem`]: an incident thread's postmortem as a canvas;
//!   [`enhancer`]: the cheap model's reading of the question.
//! - [`offload`]: keeping a turn's item small (large results in S3);
//!   [`background`]: start-up work no answer waits for.
//! - [`streaming`]: the answer streamed into Slack as the model writes it,
//!   through a redactor that never lets out what it may still redact.

pub mod answer_files;
pub mod approvals;
pub mod assembly;
pub mod attachments;
pub mod auth;
pub mod aws_tools;
pub mod background;
pub mod builtin_tools;
pub mod config;
pub mod config_fallback;
pub mod context;
pub mod docs_tools;
pub mod enhancer;
pub mod home;
pub mod http_tools;
pub mod incidents;
pub mod inspect;
pub mod kept_config;
pub mod knowledge_tools;
pub mod mcp_tools;
pub mod memory_tools;
pub mod offload;
pub mod postmortem;
pub mod references;
pub mod schedules;
pub mod schema;
pub mod sign_in;
pub mod slack_tools;
pub mod streaming;
pub mod tools;
pub mod worker;

pub use assembly::{StartupError, WorkerPorts, assemble};
pub use worker::{Deadline, Limits, MODEL_CALL_TIME, Outcome, Worker, WorkerError};
