//! [`Worker::handle`]: one work message, handed to its handler
//! ([`crate::handlers`]) inside a `turn` span; an error no redelivery can
//! mend settles the turn as failed at once.

use crate::handlers::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::messages::{ReplyMessage, WorkMessage};
use assistant_core::ports::StoreError;
use assistant_core::turn::TurnStatus;
use tracing::{Instrument, Span, field, info_span};

impl Worker {
    /// Handles one work message. An error that no redelivery can mend
    /// settles the turn as failed at once and tells the thread why (one
    /// delivery, not the queue's every receive).
    pub async fn handle(&self, message: &WorkMessage, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        let span = info_span!("turn", turn_id = field::Empty, event_id = field::Empty, step = field::Empty);
        // Boxed: the turn loop's future is tens of kilobytes, too much for
        // the stack of every caller that awaits a message's handling.
        match Box::pin(self.handle_in(message, deadline, span.clone())).await {
            Err(err) if !err.is_retryable() => self.fail_at_once(message, err).instrument(span).await,
            handled => handled,
        }
    }

    /// A turn that cannot succeed: saved as failed with the reason in
    /// words and its reference, and its delivery requested. When even that
    /// is impossible (no turn stored yet, the store refusing), the error
    /// stands and the message goes on to the dead-letter queue, whose
    /// apology the responder posts.
    pub(crate) async fn fail_at_once(&self, message: &WorkMessage, err: WorkerError) -> Result<Outcome, WorkerError> {
        let Some(turn_id) = message.turn_id() else { return Err(err) };
        let Ok(Some(mut turn)) = self.store.load(&turn_id).await else { return Err(err) };
        if !matches!(turn.status, TurnStatus::Running | TurnStatus::AwaitingApproval) {
            return Err(err);
        }
        tracing::error!(error = %err, "the turn cannot succeed: settled as failed");
        let answer = format!(
            "Sorry, I couldn't finish answering this: {}. Asking again won't help until that is fixed; give your \
             admin this reference: `{}`.",
            err.in_words(),
            turn.id.reference()
        );
        turn.pending_approval = None;
        turn.settle(answer, TurnStatus::Failed, self.clock.now_unix());
        match self.save(&mut turn).await {
            Ok(()) => {
                self.report(&turn, None);
                self.remember(&turn).await;
                let reply = ReplyMessage::Deliver { turn_id: turn.id.clone(), thread: turn.thread.clone() };
                self.replies.send(&reply).await.map_err(WorkerError::Queue)?;
                Ok(Outcome::Settled { id: turn.id, status: TurnStatus::Failed, steps: turn.steps })
            }
            Err(StoreError::Conflict { id, .. }) => Ok(Outcome::Superseded { id }),
            Err(_) => Err(err),
        }
    }

    pub(crate) async fn handle_in(
        &self,
        message: &WorkMessage,
        deadline: &dyn Deadline,
        span: Span,
    ) -> Result<Outcome, WorkerError> {
        match message {
            WorkMessage::StartTurn(request) => self.apply(request, deadline, span).await,
            WorkMessage::Continue(continuation) => self.apply(continuation, deadline, span).await,
            WorkMessage::Approval(click) => self.apply(click, deadline, span).await,
            WorkMessage::ApprovalTimeout(timeout) => self.apply(timeout, deadline, span).await,
            WorkMessage::Opened(opened) => self.apply(opened, deadline, span).await,
            WorkMessage::Feedback(click) => self.apply(click, deadline, span).await,
            WorkMessage::RevokeGrant(click) => self.apply(click, deadline, span).await,
            WorkMessage::SignedIn(signed_in) => self.apply(signed_in, deadline, span).await,
            WorkMessage::ConnectClick(click) => self.apply(click, deadline, span).await,
            WorkMessage::Home(home) => self.apply(home, deadline, span).await,
            WorkMessage::Alert(notice) => self.apply(notice, deadline, span).await,
            WorkMessage::CloudwatchAlarm(alarm) => self.apply(alarm, deadline, span).await,
            WorkMessage::InvestigateMessage(shortcut) => self.apply(shortcut, deadline, span).await,
            WorkMessage::SlashCommand(command) => self.apply(command, deadline, span).await,
            WorkMessage::Forget(forget) => self.apply(forget, deadline, span).await,
        }
    }

    /// `message`'s handler, inside the span that names its turn.
    async fn apply(&self, message: &impl Handler, deadline: &dyn Deadline, span: Span) -> Result<Outcome, WorkerError> {
        message.name_on(&span);
        message.apply(self, deadline).instrument(span).await
    }
}
