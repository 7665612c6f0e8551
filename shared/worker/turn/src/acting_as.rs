//! The worker's side of tools that act as the person who asked (see
//! [`worker_identity::sign_in`]): the person's tokens for a step, the pause until
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

use crate::tool_calls::in_call_order;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::messages::ReplyMessage;
use assistant_core::oauth::STATE_TTL_SECS;
use assistant_core::ports::{ApprovalTimer, StoreError};
use assistant_core::turn::{Message, Role, ToolOutput, ToolResult, ToolStatus, ToolUse, Turn, TurnStatus};
use assistant_core::turn::{PendingSignIn, SignInReason, SignedCall};
use std::collections::BTreeMap;
use tools_registry::Asker;
use tools_registry::Credentials;
use tracing::info;
use worker_identity::sign_in::Access;

/// The asker's access for one step's calls: per provider, a token or why
/// not, and whom the provider knows them as.
#[derive(Debug, Default)]
pub(crate) struct StepAccess {
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
        Self { credentials: BTreeMap::from([(provider.to_owned(), Err(note.into()))]), subjects: BTreeMap::new() }
    }
}

impl Worker {
    /// The asker's tokens for every provider the calls act through (calls
    /// the asker may make, that is). `Err`: the step must wait for them
    /// to sign in to the first provider they lack.
    pub(crate) async fn access_for(
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
                access.credentials.insert(provider.to_owned(), Err(note.into()));
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
                    access.credentials.insert(provider.to_owned(), Err(note.into()));
                }
            }
        }
        Ok(access)
    }

    /// The audit trail of calls made with the person's own token: one log
    /// line and one record in the turn per call, before it is made.
    pub(crate) fn record_signed_calls(&self, turn: &mut Turn, calls: &[ToolUse], access: &StepAccess) {
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
    pub(crate) async fn ask_sign_in(&self, turn: &Turn) -> Result<(), WorkerError> {
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
    pub(crate) async fn ask_again(&self, mut turn: Turn, reason: SignInReason) -> Result<Outcome, WorkerError> {
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

    /// The sign-in did not come in time: the step's calls fail with a note
    /// the model reads, and the turn goes on to answer without them.
    pub(crate) async fn sign_in_timed_out(
        &self,
        mut turn: Turn,
        deadline: &dyn Deadline,
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
}
