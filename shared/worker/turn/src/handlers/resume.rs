//! A continuation: a long turn picked up where its last saved step left it.

use super::Handler;
use crate::step_loop::read_units;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::messages::Continuation;
use tracing::{Span, field, info, warn};

impl Handler for Continuation {
    fn name_on(&self, span: &Span) {
        span.record("turn_id", field::display(&self.turn_id));
    }

    async fn apply(&self, worker: &Worker, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.resume(self, deadline).await
    }
}

impl Worker {
    pub(crate) async fn resume(
        &self,
        continuation: &Continuation,
        deadline: &dyn Deadline,
    ) -> Result<Outcome, WorkerError> {
        let Some(mut turn) = self.store.load(&continuation.turn_id).await? else {
            warn!("continuation for a turn that does not exist");
            return Ok(Outcome::Ignored { reason: "unknown_turn" });
        };
        if self.thread_told_failed(&turn.id).await? {
            // A task it waited for would run on for nobody.
            self.cancel_tasks(&turn).await;
            info!("continuation for a turn whose thread was told it failed: nothing to do");
            return Ok(Outcome::Ignored { reason: "thread_told_failed" });
        }
        turn.metered.dynamodb_read_units += read_units(&turn);
        self.run(turn, deadline).await
    }
}
