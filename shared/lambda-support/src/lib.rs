//! What every function binary shares, whatever it does:
//!
//! - [`env`]: reading the runtime contract's environment variables once at
//!   start-up, failing fast with the name of what is missing;
//! - [`health`]: recognising the scheduled EventBridge health event and
//!   building the health report `docs/runtime-contract.md` specifies;
//! - [`sqs_batch`]: handling an SQS batch in FIFO order with partial
//!   failures (`ReportBatchItemFailures`);
//! - [`deferred`]: start-up work (AWS clients) built beside the runtime's
//!   start instead of before it;
//! - [`logging`]: the subscriber every function installs first;
//! - [`metrics`]: CloudWatch metrics as Embedded Metric Format lines;
//! - [`tls`]: root certificates read from one file, not a directory;
//! - [`UnsupportedEvent`]: the error for an event a function does not take.

pub mod deferred;
pub mod env;
pub mod health;
pub mod logging;
pub mod metrics;
pub mod sqs_batch;
pub mod tls;

/// An invocation whose event this function does not take (a misconfigured
/// trigger): the invocation fails with this, and nothing else happens.
#[derive(Debug, thiserror::Error)]
#[error("event is neither {expected} nor a scheduled health check: {source}")]
pub struct UnsupportedEvent {
    pub expected: &'static str,
    #[source]
    pub source: serde_json::Error,
}

impl From<UnsupportedEvent> for lambda_runtime::Diagnostic {
    fn from(err: UnsupportedEvent) -> Self {
        Self { error_type: "UnsupportedEvent".to_owned(), error_message: err.to_string() }
    }
}
