//! What the scheduled invocation sweeps: approval deadlines that passed
//! (each becomes a timeout message) and schedules that are due.

use crate::{Worker, WorkerError};
use assistant_core::messages::{ApprovalTimeout, WorkMessage};
use tracing::info;

impl Worker {
    /// Finds the approval deadlines that are due and puts a timeout for each
    /// on the work queue (ordered with the thread's clicks), then forgets
    /// them. A crash in between puts one on the queue twice; the second
    /// finds nothing waiting. Returns how many were due.
    pub async fn sweep_approvals(&self) -> Result<usize, WorkerError> {
        const SWEEP_BATCH: usize = 100;
        let due = self.timers.due(self.clock.now_unix(), SWEEP_BATCH).await.map_err(WorkerError::Timers)?;
        for timer in &due {
            let timeout = ApprovalTimeout {
                turn_id: timer.turn_id.clone(),
                thread: timer.thread.clone(),
                tool_use_id: timer.tool_use_id.clone(),
            };
            self.work.enqueue(&WorkMessage::ApprovalTimeout(timeout)).await.map_err(WorkerError::Queue)?;
            self.timers.clear(timer).await.map_err(WorkerError::Timers)?;
        }
        if !due.is_empty() {
            info!(due = due.len(), "approval timeouts queued");
        }
        Ok(due.len())
    }

    /// Queues the configured schedules due now ([`crate::schedules`]).
    pub async fn sweep_schedules(&self) -> Result<usize, WorkerError> {
        match &self.incidents {
            Some(desk) => desk.sweep_schedules().await.map_err(WorkerError::Incident),
            None => Ok(0),
        }
    }
}
