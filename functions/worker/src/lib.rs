//! The worker function between Lambda and the worker's crates: its
//! configuration, its cold start ([`WorkerStart`]), the AWS and Slack
//! adapters behind the worker's ports, and the mapping of Lambda events (an
//! SQS batch from the work queue, the approval sweep, or the scheduled
//! health check: [`WorkerEvent`]) to calls and back. The worker itself is
//! built by `worker_config::assemble`, as in the local runner.
//!
//! - [`config`]: the runtime contract's variables;
//! - [`start`]: the cold start and the first invocation's read-ahead;
//! - [`event`]: the events it takes, typed;
//! - [`function`]: the worker assembled, each event handled, reassembly.

mod config;
mod event;
mod function;
mod start;

pub use config::Config;
pub use event::{ApprovalSweep, WorkerEvent};
pub use function::{Configured, FIRST_EVENT_GRACE, REASSEMBLE_AFTER, WorkerFunction};
pub use start::{Arrival, AwsClients, Clients, WorkerStart};

pub const FUNCTION_NAME: &str = "worker";

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_support::events::{self, Events, UnsupportedEvent};

    fn read(file: &str) -> Result<WorkerEvent, UnsupportedEvent> {
        events::read(serde_json::from_str(file).expect("an event file is JSON"))
    }

    #[test]
    fn each_event_the_worker_takes_is_read_as_its_kind_and_any_other_is_unsupported() {
        let batch = read(include_str!("../../../tests/events/worker-sqs-start-turn.json"));
        assert!(matches!(batch, Ok(WorkerEvent::Batch(batch)) if batch.records.len() == 1));
        let sweep = read(include_str!("../../../tests/events/worker-approval-sweep.json"));
        assert!(matches!(sweep, Ok(WorkerEvent::ApprovalSweep(_))));
        let health = read(include_str!("../../../tests/events/scheduled-health-check.json"));
        assert!(matches!(health, Ok(WorkerEvent::HealthCheck(_))));
        let request = read(include_str!("../../../tests/events/ingress-app-mention.json")).unwrap_err();
        assert_eq!(request.expected, WorkerEvent::EXPECTED);
    }
}
