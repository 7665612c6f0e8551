//! The queues between the functions (SQS FIFO in AWS; `shared/adapters/aws/src/sqs.rs`):
//! work for the worker, replies for the responder, and the visibility of a
//! received message, which is how a failed one comes back after a backoff.

use super::PortError;
use crate::messages::{ReplyMessage, WorkMessage};
use async_trait::async_trait;

/// The work queue (SQS FIFO in AWS).
#[async_trait]
pub trait WorkQueue: Send + Sync {
    async fn enqueue(&self, message: &WorkMessage) -> Result<(), PortError>;
}

/// The reply queue (SQS FIFO in AWS): what the responder shows in Slack.
#[async_trait]
pub trait ReplyQueue: Send + Sync {
    async fn send(&self, message: &ReplyMessage) -> Result<(), PortError>;
}

/// When a received queue message is handed out again (SQS's visibility):
/// how the functions make a failed message come back after a backoff
/// rather than after the queue's long visibility timeout.
#[async_trait]
pub trait MessageVisibility: Send + Sync {
    /// The message comes back `after` from now. `queue_arn` names its queue
    /// as Lambda's event does.
    async fn set(&self, queue_arn: &str, receipt_handle: &str, after: std::time::Duration) -> Result<(), PortError>;
}
