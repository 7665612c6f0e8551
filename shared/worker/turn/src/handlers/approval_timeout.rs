//! An approval nobody answered in time: the call not made, and the model
//! told.

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::messages::{ApprovalTimeout, ReplyMessage};
use assistant_core::turn::{ToolOutput, ToolResult, ToolStatus, Turn, TurnStatus};
use tracing::{Span, field, info};

impl Handler for ApprovalTimeout {
    fn name_on(&self, span: &Span) {
        span.record("turn_id", field::display(&self.turn_id));
    }

    async fn apply(&self, worker: &Worker, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.time_out(self, deadline).await
    }
}

impl Worker {
    /// The sweep's notice that a call's time ran out.
    pub(crate) async fn time_out(
        &self,
        timeout: &ApprovalTimeout,
        deadline: &dyn Deadline,
    ) -> Result<Outcome, WorkerError> {
        let Some(turn) = self.store.load(&timeout.turn_id).await? else {
            return Ok(Outcome::Ignored { reason: "unknown_turn" });
        };
        if let Some(pending) = turn.pending_sign_in.as_ref().filter(|_| turn.status == TurnStatus::AwaitingSignIn) {
            if pending.calls.first().is_none_or(|call| call.id != timeout.tool_use_id) {
                return Ok(Outcome::Ignored { reason: "already_decided" });
            }
            if self.clock.now_unix() < pending.asked_at + assistant_core::oauth::STATE_TTL_SECS {
                return Ok(Outcome::Ignored { reason: "not_due" });
            }
            if self.thread_told_failed(&turn.id).await? {
                return Ok(Outcome::Ignored { reason: "thread_told_failed" });
            }
            return self.sign_in_timed_out(turn, deadline).await;
        }
        let Some(pending) = turn.pending_approval.as_ref().filter(|_| turn.status == TurnStatus::AwaitingApproval)
        else {
            return Ok(Outcome::Ignored { reason: "not_awaiting_approval" });
        };
        // Only the call on show has a clock running.
        if pending.waiting.first().is_none_or(|call| call.id != timeout.tool_use_id) {
            return Ok(Outcome::Ignored { reason: "already_decided" });
        }
        if self.clock.now_unix() < pending.asked_at + self.approvals.expires_after_secs() {
            return Ok(Outcome::Ignored { reason: "not_due" });
        }
        if self.thread_told_failed(&turn.id).await? {
            return Ok(Outcome::Ignored { reason: "thread_told_failed" });
        }
        let id = timeout.tool_use_id.clone();
        self.expire(turn, &id, deadline).await
    }

    /// A call that waited too long: the model reads that it was not
    /// approved in time, the prompt says so, and the turn goes on.
    pub(crate) async fn expire(
        &self,
        mut turn: Turn,
        tool_use_id: &str,
        deadline: &dyn Deadline,
    ) -> Result<Outcome, WorkerError> {
        let pending = turn.pending_approval.as_mut().expect("a turn awaiting approval has a pending approval");
        let Some(index) = pending.waiting.iter().position(|call| call.id == tool_use_id) else {
            return Ok(Outcome::Ignored { reason: "already_decided" });
        };
        let call = pending.waiting.remove(index);
        let minutes = self.approvals.expires_after_secs() / 60;
        info!(tool = %call.name, "approval expired: the call did not run");
        pending.completed.push(ToolResult {
            tool_use_id: call.id.clone(),
            status: ToolStatus::Error,
            output: ToolOutput::Text(format!(
                "Not approved in time: nobody approved or denied this call within {minutes} minutes, so it did not \
                 run. Tell the user; do not retry it unless they ask again."
            )),
        });
        let expired =
            ReplyMessage::ApprovalExpired { turn_id: turn.id.clone(), thread: turn.thread.clone(), tool_use: call };
        self.save_decided(turn, Some(expired), deadline).await
    }
}
