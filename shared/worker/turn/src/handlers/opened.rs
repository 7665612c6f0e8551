//! A person opened the DM or an assistant thread: the suggested prompts.

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::messages::Opened;
use tracing::{Span, field, info, warn};

impl Handler for Opened {
    fn name_on(&self, span: &Span) {
        span.record("event_id", field::display(&self.event_id));
    }

    async fn apply(&self, worker: &Worker, _deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.opened(self).await
    }
}

impl Worker {
    /// A person opened the DM (or an assistant thread): the suggested
    /// prompts, and no model call. Slack failing is retried by SQS; a
    /// refusal is logged.
    pub(crate) async fn opened(&self, opened: &Opened) -> Result<Outcome, WorkerError> {
        match self
            .agent
            .set_suggested_prompts(&opened.channel, opened.thread_ts.as_ref(), &self.suggested_prompts)
            .await
        {
            Ok(()) => {
                info!(user = %opened.user, prompts = self.suggested_prompts.len(), "suggested prompts set");
                Ok(Outcome::PromptsSet)
            }
            Err(assistant_core::delivery::PostError::Rejected { code }) => {
                warn!(code, "Slack refused the suggested prompts (is assistant:write granted?)");
                Ok(Outcome::Ignored { reason: "prompts_refused" })
            }
            Err(err) => Err(WorkerError::Slack(err)),
        }
    }
}
