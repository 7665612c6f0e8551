//! The worker's side of tools that act as the person who asked (see
//! [`crate::sign_in`]): the person's tokens for a step, the pause until
//! they connect, the callback's resumption, someone else's click on a
//! Connect button, and the Home tab.
//!
//! Crash points, each safe to repeat:
//! - A step that needs a sign-in is saved as waiting before the Connect
//!   button is asked for. A redelivery finds it waiting and asks again
//!   with a new single-use link (the person may see two buttons; either
//!   works, and an unused link expires in ten minutes).
//! - The callback's message is handled once per state: the code is
//!   exchanged and the tokens sealed into the vault, then the turn goes
//!   on. A redelivery after the vault write finds tokens stored since the
//!   state was opened and does not exchange again (the code is spent).
//!   A crash between the exchange and the vault write loses the tokens:
//!   the provider refuses the spent code on the retry, and the person is
//!   asked to connect once more.
//! - A burned state (someone else's click) stays burned; the owner gets a
//!   new link, once per burn (a repeated click finds the state burned
//!   already and asks nothing).

use super::{Outcome, Worker, WorkerError, in_call_order};
use assistant_core::messages::{ConnectClick, HomeAction, ReplyMessage, SignedIn};
use assistant_core::oauth::STATE_TTL_SECS;
use assistant_core::ports::{ApprovalTimer, StoreError};
use assistant_core::turn::{
    Message, PendingSignIn, Role, SignInReason, SignedCall, ToolOutput, ToolResult, ToolStatus, ToolUse, Turn,
    TurnStatus,
};
use std::collections::BTreeMap;
use tools_registry::{Asker, Credentials};
use tracing::{info, warn};
use worker_identity::sign_in::{Access, Completed};

/// The asker's access for one step's calls: per provider, a token or why
/// not, and whom the provider knows them as.
#[derive(Debug, Default)]
pub(super) struct StepAccess {
    pub credentials: Credentials,
    subjects: BTreeMap<String, Option<String>>,
}

impl StepAccess {
    /// For a call whose sign-in lapsed while it waited for approval.
    pub fn lapsed(provider: &str) -> Self {
        let note = format!(
            "The person's {provider} sign-in expired or was revoked while this call waited, so it did not run. Tell \
             them; when they ask again they will be asked to connect {provider}."
        );
        Self { credentials: BTreeMap::from([(provider.to_owned(), Err(note))]), subjects: BTreeMap::new() }
    }
}

impl Worker {
    /// The asker's tokens for every provider the calls act through (calls
    /// the asker may make, that is). `Err`: the step must wait for them
    /// to sign in to the first provider they lack.
    pub(super) async fn access_for(
        &self,
        turn: &Turn,
        asker: &Asker,
        calls: &[ToolUse],
    ) -> Result<StepAccess, PendingSignIn> {
        let mut access = StepAccess::default();
        let mut providers: Vec<&str> = calls
            .iter()
            .filter(|call| self.tools.effect(asker, &call.name).is_some())
            .filter_map(|call| self.tools.provider_of(&call.name))
            .collect();
        providers.sort_unstable();
        providers.dedup();
        let now = self.clock.now_unix();
        for provider in providers {
            let Some(sign_in) = &self.sign_in else {
                let note =
                    format!("Sign-in to {provider} is not set up for this bot: tell the person to ask an admin.");
                access.credentials.insert(provider.to_owned(), Err(note));
                continue;
            };
            match sign_in.access(&turn.thread.team, &turn.user, provider, now).await {
                Access::Ready { token, subject } => {
                    access.credentials.insert(provider.to_owned(), Ok(token));
                    access.subjects.insert(provider.to_owned(), subject);
                }
                Access::NeedsSignIn(reason) => {
                    return Err(PendingSignIn {
                        provider: provider.to_owned(),
                        calls: calls.to_vec(),
                        asked_at: now,
                        reason,
                    });
                }
                Access::Unavailable(note) => {
                    access.credentials.insert(provider.to_owned(), Err(note));
                }
            }
        }
        Ok(access)
    }

    /// The audit trail of calls made with the person's own token: one log
    /// line and one record in the turn per call, before it is made.
    pub(super) fn record_signed_calls(&self, turn: &mut Turn, calls: &[ToolUse], access: &StepAccess) {
        let at = self.clock.now_unix();
        for call in calls {
            let Some(provider) = self.tools.provider_of(&call.name) else { continue };
            let Some(subject) = access.subjects.get(provider) else { continue };
            info!(
                tool = %call.name,
                tool_use_id = %call.id,
                user = %turn.user,
                provider,
                subject = subject.as_deref(),
                "calling as the person who asked"
            );
            turn.signed_calls.push(SignedCall {
                tool_use_id: call.id.clone(),
                tool: call.name.clone(),
                user: turn.user.clone(),
                provider: provider.to_owned(),
                subject: subject.clone(),
                at,
            });
        }
    }

    /// Sends the asker (only them) a Connect button with a new single-use
    /// link, and starts the wait's clock.
    pub(super) async fn ask_sign_in(&self, turn: &Turn) -> Result<(), WorkerError> {
        let pending = turn.pending_sign_in.as_ref().expect("a turn awaiting sign-in has its step");
        let sign_in = self.sign_in.as_ref().expect("a step waits for a sign-in only where sign-in is set up");
        let first = pending.calls.first().expect("a waiting step has calls");
        let timer = ApprovalTimer {
            due_at: pending.asked_at + STATE_TTL_SECS,
            turn_id: turn.id.clone(),
            thread: turn.thread.clone(),
            tool_use_id: first.id.clone(),
        };
        self.timers.set(&timer).await.map_err(WorkerError::Timers)?;
        let (state, url) = sign_in
            .connect_link(&turn.thread, &turn.user, &turn.id, &pending.provider, self.clock.now_unix())
            .await
            .map_err(WorkerError::SignIn)?;
        let prompt = ReplyMessage::ConnectPrompt {
            turn_id: turn.id.clone(),
            thread: turn.thread.clone(),
            user: turn.user.clone(),
            provider: pending.provider.clone(),
            url: url.to_string(),
            state,
            reason: pending.reason,
        };
        self.replies.send(&prompt).await.map_err(WorkerError::Queue)?;
        info!(provider = %pending.provider, reason = ?pending.reason, "asked the person to connect");
        Ok(())
    }

    /// Asks again with a new link (after a refused code, or a burned
    /// button): saved with its new ask time first, so the prompt is new.
    async fn ask_again(&self, mut turn: Turn, reason: SignInReason) -> Result<Outcome, WorkerError> {
        let pending = turn.pending_sign_in.as_mut().expect("a turn awaiting sign-in has its step");
        pending.asked_at = self.clock.now_unix();
        pending.reason = reason;
        turn.updated_at = pending.asked_at;
        match self.save(&mut turn).await {
            Ok(()) => {}
            Err(StoreError::Conflict { id, .. }) => return Ok(Outcome::Superseded { id }),
            Err(err) => return Err(err.into()),
        }
        self.ask_sign_in(&turn).await?;
        Ok(Outcome::AwaitingSignIn { id: turn.id })
    }

    /// The ingress took a sign-in's state with its code: exchange it, keep
    /// the tokens, and carry the waiting turn on.
    pub(super) async fn signed_in(
        &self,
        signed_in: &SignedIn,
        deadline: &dyn super::Deadline,
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

    /// A click on a Connect button. The person's own arms the sign-in (the
    /// start page their browser opened then sends it on to the provider).
    /// Anyone else's burns the
    /// sign-in, so the link cannot sign them in as the person; they are
    /// told, and the person gets a new link.
    pub(super) async fn connect_clicked(&self, click: &ConnectClick) -> Result<Outcome, WorkerError> {
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

    /// The sign-in did not come in time: the step's calls fail with a note
    /// the model reads, and the turn goes on to answer without them.
    pub(super) async fn sign_in_timed_out(
        &self,
        mut turn: Turn,
        deadline: &dyn super::Deadline,
    ) -> Result<Outcome, WorkerError> {
        let pending = turn.pending_sign_in.take().expect("a turn awaiting sign-in has its step");
        info!(provider = %pending.provider, "no sign-in in time: the step's calls did not run");
        let note = format!(
            "Not run: this step acts as the person who asked through {provider}, and they did not connect \
             {provider} within {minutes} minutes. Answer with what you have, and tell them they can connect when \
             asked next time.",
            provider = pending.provider,
            minutes = STATE_TTL_SECS / 60,
        );
        let results = pending
            .calls
            .iter()
            .map(|call| ToolResult {
                tool_use_id: call.id.clone(),
                status: ToolStatus::Error,
                output: ToolOutput::Text(note.clone()),
            })
            .collect();
        let content = in_call_order(&turn, results);
        turn.transcript.push(Message { role: Role::User, content });
        turn.status = TurnStatus::Running;
        turn.updated_at = self.clock.now_unix();
        match self.save(&mut turn).await {
            Ok(()) => self.run(turn, deadline).await,
            Err(StoreError::Conflict { id, .. }) => Ok(Outcome::Superseded { id }),
            Err(err) => Err(err.into()),
        }
    }

    /// The person's Home tab: their connections, each with Disconnect;
    /// after a Disconnect click, without that one (revoked at the
    /// provider where it offers revocation).
    pub(super) async fn home(&self, home: &HomeAction) -> Result<Outcome, WorkerError> {
        let (connections, providers) = match &self.sign_in {
            Some(sign_in) => {
                if let Some(provider) = &home.disconnect {
                    let removed =
                        sign_in.disconnect(&home.team, &home.user, provider).await.map_err(WorkerError::SignIn)?;
                    info!(provider, user = %home.user, removed, "disconnect asked on the Home tab");
                }
                let connections =
                    sign_in.ports.vault.connections(&home.team, &home.user).await.map_err(WorkerError::SignIn)?;
                (connections, sign_in.providers.keys().cloned().collect())
            }
            None => (Vec::new(), Vec::new()),
        };
        let view = worker_identity::home::view(&connections, &providers);
        self.agent.publish_home(&home.user, &view).await.map_err(WorkerError::Slack)?;
        Ok(Outcome::HomeShown)
    }
}
