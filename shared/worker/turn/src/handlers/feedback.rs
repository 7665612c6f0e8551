//! 👍 / 👎 under an answer: kept, counted and acknowledged to the clicker.

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::feedback::Rated;
use assistant_core::messages::{FeedbackClick, ReplyMessage};
use tracing::{Span, field, info, warn};

impl Handler for FeedbackClick {
    fn name_on(&self, span: &Span) {
        span.record("turn_id", field::display(&self.turn_id));
    }

    async fn apply(&self, worker: &Worker, _deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.rated(self).await
    }
}

impl Worker {
    /// 👍 / 👎 under an answer: kept by turn (who, which way, when; a
    /// second click replaces the first), counted, and acknowledged to the
    /// clicker alone. Starts no turn. Only an answer the thread got can be
    /// rated.
    pub(crate) async fn rated(&self, click: &FeedbackClick) -> Result<Outcome, WorkerError> {
        let (delivered, streamed) =
            tokio::join!(self.deliveries.load(&click.turn_id), self.streams.load(&click.turn_id));
        if !delivered?.has_answer() && streamed?.ts.is_none() {
            warn!(user = %click.user, "rating of an answer this bot did not give (stale or forged): not kept");
            return Ok(Outcome::Ignored { reason: "no_such_answer" });
        }
        let rated = Rated { rating: click.rating, at: self.clock.now_unix() };
        self.feedback.rate(&click.turn_id, &click.user, rated).await.map_err(WorkerError::Feedback)?;
        self.metrics.feedback(click.rating);
        info!(user = %click.user, rating = click.rating.as_str(), "answer rated");
        if let Some(memory) = &self.memory {
            let thread = &click.thread;
            let rated =
                memory.rate(&thread.team, &thread.channel, &thread.thread_ts, &click.turn_id, click.rating.as_str());
            if let Err(err) = rated.await {
                warn!(error = %err, "the rating is not in the channel's history");
            }
        }
        let noted = ReplyMessage::FeedbackNoted {
            turn_id: click.turn_id.clone(),
            thread: click.thread.clone(),
            user: click.user.clone(),
            rating: click.rating,
        };
        if let Err(err) = self.replies.send(&noted).await {
            warn!(error = %err, "the rater was not thanked");
        }
        Ok(Outcome::FeedbackKept { id: click.turn_id.clone() })
    }
}
