//! A sign-in came back from the provider: the code exchanged, the tokens
//! sealed, the waiting turn carried on.

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::messages::SignedIn;
use assistant_core::turn::SignInReason;
use assistant_core::turn::TurnStatus;
use tracing::{Span, field, info, warn};
use worker_identity::sign_in::Completed;

impl Handler for SignedIn {
    fn name_on(&self, span: &Span) {
        span.record("turn_id", field::display(&self.turn_id));
    }

    async fn apply(&self, worker: &Worker, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.signed_in(self, deadline).await
    }
}

impl Worker {
    /// The ingress took a sign-in's state with its code: exchange it, keep
    /// the tokens, and carry the waiting turn on.
    pub(crate) async fn signed_in(
        &self,
        signed_in: &SignedIn,
        deadline: &dyn Deadline,
    ) -> Result<Outcome, WorkerError> {
        let Some(sign_in) = &self.sign_in else {
            warn!("a sign-in came back, but sign-in is not set up: nothing to do");
            return Ok(Outcome::Ignored { reason: "no_sign_in" });
        };
        let Some(state) = sign_in.ports.states.load(&signed_in.state).await.map_err(WorkerError::SignIn)? else {
            return Ok(Outcome::Ignored { reason: "unknown_state" });
        };
        if !state.taken || state.code.is_none() || state.burned_by.is_some() || state.turn_id != signed_in.turn_id {
            warn!(provider = %state.provider, "a sign-in message for a state no callback took: nothing to do");
            return Ok(Outcome::Ignored { reason: "state_not_taken" });
        }
        // A sign-in opened before its person (or the app) left keeps no
        // tokens: the code is never exchanged.
        let opened_at = state.expires_at - assistant_core::oauth::STATE_TTL_SECS;
        if let Some(departed) =
            self.not_begun(&state.team, &state.user, opened_at, "sign-in (its tokens not kept)").await?
        {
            return Ok(departed);
        }
        let completed = sign_in.complete(&state, self.clock.now_unix()).await.map_err(WorkerError::SignIn)?;
        // The person's browser waits on this to say how it ended. Lost, the
        // page says "still finishing" until the link expires; the redelivery
        // this error brings writes it again.
        sign_in
            .ports
            .states
            .record_outcome(&signed_in.state, &completed.outcome(), state.expires_at)
            .await
            .map_err(WorkerError::SignIn)?;
        let Some(turn) = self.store.load(&state.turn_id).await? else {
            return Ok(Outcome::Ignored { reason: "unknown_turn" });
        };
        let waits = turn.status == TurnStatus::AwaitingSignIn
            && turn.user == state.user
            && turn.pending_sign_in.as_ref().is_some_and(|pending| pending.provider == state.provider);
        if !waits || self.thread_told_failed(&turn.id).await? {
            info!(provider = %state.provider, "signed in; the turn no longer waits for it");
            return Ok(Outcome::SignedIn { id: turn.id });
        }
        match completed {
            Completed::Connected { .. } => self.run(turn, deadline).await,
            Completed::Refused(_) => self.ask_again(turn, SignInReason::Failed).await,
        }
    }
}
