//! The core every function shares, free of AWS SDK types so that the
//! domain can be tested with in-memory ports and run by the local runner
//! without an AWS account.
//!
//! - [`messages`]: the versioned JSON envelopes that travel on the queues.
//! - [`alerts`]: operator alerts in the ops channel, once and bounded.
//! - [`incidents`]: monitoring alerts (CloudWatch, Alertmanager, PagerDuty)
//!   read from their formats, and the incident each keeps per fingerprint.
//! - [`approval`]: who may approve a call that changes things, and the
//!   button that names that call exactly.
//! - [`turn`]: a turn's durable state (written by the worker only).
//! - [`delivery`]: what the responder showed in a turn's thread (written by
//!   the responder only), the typed keys and metadata of its messages.
//! - [`feedback`]: the 👍 / 👎 under every answer and the ratings kept.
//! - [`files`]: files pasted into a thread, and how each reaches the model.
//! - [`keys`]: every key of the turns table, its writer and its TTL,
//!   spelled once.
//! - [`ports`]: what the functions need from the outside world, as object-safe
//!   traits (`Arc<dyn TurnStore>`); adapters live in `shared/adapters/*`,
//!   in-memory doubles in `testkit`.
//! - [`store`]: the turn store and delivery log on one versioned-record
//!   table port, so every backend writes a record the same way.
//! - [`model`]: the model call, as a port.
//! - [`mcp`]: MCP servers' tools, as a port.
//! - [`clock`]: time, injected so tests pin it.
//! - [`retry`]: the one retry loop and its backoff.
//! - [`pricing`]: what a turn costs (model and AWS list prices).
//! - [`budgets`]: spend a team controls, per person, channel and deployment.
//! - [`reading`]: what the model reads of a tool result, within a token budget.
//! - [`telemetry`]: what a settled turn reports to operators.

pub mod alerts;
pub mod approval;
pub mod budgets;
pub mod catalog;
pub mod clock;
pub mod config_checks;
pub mod deadline;
pub mod delivery;
pub mod departures;
pub mod elicitation;
pub mod feedback;
pub mod files;
pub mod glob;
pub mod grants;
pub mod guardrail;
pub mod incidents;
pub mod keys;
pub mod mcp;
pub mod memory;
pub mod messages;
pub mod model;
pub mod oauth;
pub mod ports;
pub mod pricing;
pub mod reading;
pub mod response_modes;
pub mod response_url;
pub mod retry;
pub mod signals;
pub mod store;
pub mod telemetry;
pub mod turn;

pub use clock::{Clock, SystemClock};
pub use messages::{ThreadRef, WorkMessage};
pub use ports::{PortError, Retryable, StoreError};
pub use turn::TurnId;
