//! A Connect button clicked: the sign-in armed for the asker's browser, or
//! someone else told it is not theirs.

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::messages::ConnectClick;
use assistant_core::messages::ReplyMessage;
use assistant_core::turn::SignInReason;
use assistant_core::turn::TurnStatus;
use tracing::{info, warn};

impl Handler for ConnectClick {
    async fn apply(&self, worker: &Worker, _deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.connect_clicked(self).await
    }
}

impl Worker {
    /// A click on a Connect button. The person's own arms the sign-in (the
    /// start page their browser opened then sends it on to the provider).
    /// Anyone else's burns the
    /// sign-in, so the link cannot sign them in as the person; they are
    /// told, and the person gets a new link.
    pub(crate) async fn connect_clicked(&self, click: &ConnectClick) -> Result<Outcome, WorkerError> {
        let Some(sign_in) = &self.sign_in else { return Ok(Outcome::Ignored { reason: "no_sign_in" }) };
        let Some(state) = sign_in.ports.states.load(&click.state).await.map_err(WorkerError::SignIn)? else {
            return Ok(Outcome::Ignored { reason: "unknown_state" });
        };
        // A button is clicked where it was posted: a value copied into
        // another channel names nothing there.
        if (&state.thread.team, &state.thread.channel) != (&click.thread.team, &click.thread.channel) {
            warn!(user = %click.user, "a Connect button's state from another channel (forged): nothing changes");
            return Ok(Outcome::Ignored { reason: "other_channel" });
        }
        // The person's own click (Slack signed it): the start page may now
        // let the browser it opened sign in.
        if state.user == click.user {
            // At Slack's stamp of the click: one that waited in the queue
            // opens no fresh window.
            let clicked_at = click.action_ts.unix_secs().unwrap_or_else(|| self.clock.now_unix());
            let armed = sign_in.ports.states.arm(&click.state, clicked_at).await.map_err(WorkerError::SignIn)?;
            info!(provider = %state.provider, armed, "the person clicked their Connect button");
            return Ok(Outcome::Ignored { reason: "own_button" });
        }
        warn!(user = %click.user, owner = %state.user, provider = %state.provider, "someone else clicked a Connect button: burned");
        let burned = sign_in.ports.states.burn(&click.state, &click.user).await.map_err(WorkerError::SignIn)?;
        let refused = ReplyMessage::ConnectRefused {
            turn_id: state.turn_id.clone(),
            thread: click.thread.clone(),
            user: click.user.clone(),
            owner: state.user.clone(),
            provider: state.provider.clone(),
        };
        if let Err(err) = self.replies.send(&refused).await {
            warn!(error = %err, "the clicker was not told the button is not theirs");
        }
        // Burned now (not by an earlier copy of this click): a new link.
        if burned.is_some()
            && let Some(turn) = self.store.load(&state.turn_id).await?
            && turn.status == TurnStatus::AwaitingSignIn
            && turn.pending_sign_in.as_ref().is_some_and(|pending| pending.provider == state.provider)
        {
            let reason = turn.pending_sign_in.as_ref().map_or(SignInReason::NotConnected, |pending| pending.reason);
            return self.ask_again(turn, reason).await;
        }
        Ok(Outcome::ConnectRefused)
    }
}
