//! Approval deadlines, in one partition of the turns table (DynamoDB in AWS;
//! `shared/adapters/aws/src/dynamodb/timers.rs`), swept by the worker.

use super::PortError;
use crate::messages::ThreadRef;
use crate::turn::TurnId;
use async_trait::async_trait;

/// When a call waiting for approval expires: set when the worker asks,
/// found by its sweep once due.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApprovalTimer {
    /// Unix seconds.
    pub due_at: i64,
    pub turn_id: TurnId,
    pub thread: ThreadRef,
    pub tool_use_id: String,
}

/// Approval deadlines, so a call nobody decides on still ends: the worker
/// sets one per waiting call and sweeps the due ones on a schedule (one
/// partition of the turns table in AWS, ordered by due time).
#[async_trait]
pub trait ApprovalTimers: Send + Sync {
    async fn set(&self, timer: &ApprovalTimer) -> Result<(), PortError>;

    /// Timers due at `now` or before, earliest first, at most `max`.
    async fn due(&self, now_unix: i64, max: usize) -> Result<Vec<ApprovalTimer>, PortError>;

    async fn clear(&self, timer: &ApprovalTimer) -> Result<(), PortError>;
}
