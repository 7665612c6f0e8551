//! The assistant's domain, free of AWS SDK types so it can be tested with
//! in-memory ports and run by the local runner without an AWS account.
//!
//! - [`messages`]: the versioned JSON envelopes that travel on the queues.
//! - [`ports`]: what the domain needs from storage and queues; adapters for
//!   DynamoDB and SQS live in `aws-adapters`, in-memory ones in [`memory`].
//! - [`clock`]: time, injected so tests pin it.

pub mod clock;
pub mod memory;
pub mod messages;
pub mod ports;

pub use clock::{Clock, FixedClock, SystemClock};
pub use messages::{ThreadRef, WorkMessage};
