//! The turn loop: what the worker does with each work message, one saved
//! step at a time.
//!
//! - [`worker`]: the step loop that drives a turn to its answer;
//!   approvals ([`approvals`]: who may decide on a call that changes
//!   things); continuations.
//! - [`context`]: what a turn opens with (the thread so far, the channel);
//!   [`thread_files`]: the files pasted in the thread; [`answer_files`]:
//!   `attach_result`, a tool's result as a file beside the answer;
//!   [`memory`]: what a settled turn leaves in its channel's memory.
//! - [`enhancer`]: the cheap model's reading of the question.
//! - [`budgets`]: spend per person, channel and deployment, charged before
//!   each model call.
//! - [`reading`]: what the model reads of each tool result (a token budget;
//!   the rest kept in S3 for `read_result`), and keeping a turn's item small.
//! - [`streaming`]: the answer streamed into Slack as the model writes it,
//!   through a redactor that never lets out what it may still redact.
//! - [`inspect`]: what the model is offered in a channel, and why not the
//!   rest (`local --tools`).
//!
//! Uses the core, the tool registry (never a tool family: the assembly in
//! `worker-config` hands the loop its tools), identity (acting as the
//! person) and incidents (the alert and schedule messages). Nothing here
//! reads the assistant configuration's file: `worker-config` builds the
//! worker from it.

pub use builder::{Assembly, Ports, Worker, WorkerBuilder, default_prompts};
pub use outcome::{Deadline, FAILURE, Limits, MAX_TOOL_CALLS_PER_STEP, MODEL_CALL_TIME, Outcome, REFUSAL, WorkerError};
pub use step_loop::THINKING;

mod acting_as;
pub mod answer_files;
pub mod approvals;
pub mod budgets;
mod builder;
pub mod context;
pub mod enhancer;
pub mod guarding;
mod handle;
pub mod handlers;
pub mod inspect;
pub mod memory;
pub mod metric_charts;
mod outcome;
pub mod reading;
mod step_loop;
pub mod streaming;
mod sweeps;
mod tasks;
pub mod thread_files;
mod tool_calls;
