//! What every function binary shares, whatever it does:
//!
//! - [`startup`]: `main`'s two calls, and the cold-start overlap behind
//!   them (clients built on helper threads beside the runtime's
//!   registration, the function assembled beside it, an event's read-ahead);
//! - [`events`]: an invocation's payload read into the function's typed
//!   events, or the [`UnsupportedEvent`] it fails with;
//! - [`env`]: reading the runtime contract's environment variables once at
//!   start-up, failing fast with the name of what is missing;
//! - [`health`]: the scheduled EventBridge health event and the health
//!   report `docs/src/runtime-contract.md` specifies;
//! - [`sqs_batch`]: handling an SQS batch in FIFO order with partial
//!   failures (`ReportBatchItemFailures`);
//! - [`logging`]: the subscriber every function installs first;
//! - [`metrics`]: CloudWatch metrics as Embedded Metric Format lines;
//! - [`name_services`]: host and user lookups kept to glibc's built-in
//!   modules in the statically linked builds that ship;

pub mod env;
pub mod events;
pub mod health;
pub mod logging;
pub mod metrics;
pub mod name_services;
pub mod sqs_batch;
pub mod startup;

pub use events::UnsupportedEvent;
