//! The assistant's domain, free of AWS SDK types so it can be tested with
//! in-memory ports and run by the local runner without an AWS account.
//!
//! - [`messages`]: the versioned JSON envelopes that travel on the queues.
//! - [`turn`]: a turn's durable state, saved after every step.
//! - [`model`]: the model call the turn loop makes, as a port.
//! - [`tools`]: the tool registry, allow-lists and safe execution of calls.
//! - [`worker`]: the durable step loop that drives a turn to its answer.
//! - [`offload`]: keeping a turn's item small (large results in S3).
//! - [`config`], [`context`], [`builtin_tools`], [`docs_tools`]: what the
//!   worker starts a turn with.
//! - [`ports`]: what the domain needs from storage and queues; adapters for
//!   DynamoDB and SQS live in `aws-adapters`, in-memory ones in [`memory`].
//! - [`clock`]: time, injected so tests pin it.

#[cfg(feature = "worker")]
pub mod builtin_tools;
pub mod clock;
#[cfg(feature = "worker")]
pub mod config;
#[cfg(feature = "worker")]
pub mod context;
#[cfg(feature = "worker")]
pub mod docs_tools;
pub mod memory;
pub mod messages;
pub mod model;
#[cfg(feature = "worker")]
pub mod offload;
pub mod ports;
#[cfg(feature = "worker")]
pub mod schema;
#[cfg(any(test, feature = "contract-tests"))]
pub mod store_contract;
#[cfg(feature = "worker")]
pub mod tools;
pub mod turn;
#[cfg(feature = "worker")]
pub mod worker;

pub use clock::{Clock, FixedClock, SystemClock};
pub use messages::{ThreadRef, WorkMessage};

/// The system prompt used when the deployment configures none.
pub const DEFAULT_SYSTEM_PROMPT: &str = include_str!("prompts/system.md");
pub use ports::Created;
