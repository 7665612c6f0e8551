//! The app left a team (or a whole organization, for an org-wide install),
//! or people left it (`forget`): their departure is
//! remembered (so work asked for before it stops, here and at the start of
//! every turn and resumption: [`Worker::stopped`]), then what the bot keeps
//! for them is deleted (`assistant_core::departures`). One structured log
//! line and one metric each.
//!
//! A redelivery (a crash, a lost answer after a delete) does it all again:
//! the departure's put keeps the later time, deleting what is gone
//! succeeds, and the index of a team's records loses an item only after
//! the records it lists, so the second run finishes what the first began
//! and reports what it deleted itself. Nothing is posted in Slack: after an
//! uninstall the token is gone, and a person who left reads nothing.

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::departures::{Departed, Forgotten, organization_team};
use assistant_core::messages::Forget;
use assistant_core::ports::StoreError;
use assistant_core::turn::{Turn, TurnStatus};
use slack::{TeamId, UserId};
use tracing::{Span, field, info, warn};

impl Handler for Forget {
    fn name_on(&self, span: &Span) {
        span.record("event_id", field::display(&self.event_id));
    }

    async fn apply(&self, worker: &Worker, _deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.forget(self).await
    }
}

impl Worker {
    pub(crate) async fn forget(&self, forget: &Forget) -> Result<Outcome, WorkerError> {
        if forget.organization {
            return self.forget_organization(forget).await;
        }
        let departed = Departed { at: forget.at, reason: forget.reason };
        let mut forgotten = Forgotten::default();
        if forget.users.is_empty() {
            self.departures.depart(&forget.team, None, departed).await.map_err(WorkerError::Departures)?;
            forgotten = self.departures.forget_team(&forget.team).await.map_err(WorkerError::Departures)?;
        }
        for user in &forget.users {
            self.departures.depart(&forget.team, Some(user), departed).await.map_err(WorkerError::Departures)?;
            let theirs = self.departures.forget_person(&forget.team, user).await.map_err(WorkerError::Departures)?;
            forgotten.records += theirs.records;
        }
        let scope = if forget.users.is_empty() { "team" } else { "people" };
        info!(
            team = %forget.team,
            reason = forget.reason.as_str(),
            scope,
            people = forget.users.len(),
            records = forgotten.records,
            at = forget.at,
            "forgotten: work asked before this stops"
        );
        self.metrics.forgotten(forget.reason, forgotten.records);
        Ok(Outcome::Forgotten { records: forgotten.records })
    }

    /// An org-wide install left its organization (or people left it): the
    /// organization's departure first (so the work of every workspace of
    /// it stops: `Departures::stopping` reads it), then each workspace
    /// its list names is forgotten. Only this deployment's own
    /// organization: a forget naming another forgets nothing of ours.
    async fn forget_organization(&self, forget: &Forget) -> Result<Outcome, WorkerError> {
        let org = match self.departures.organization() {
            Some(org) if org.as_str() == forget.team.as_str() => org.clone(),
            _ => {
                warn!(team = %forget.team, reason = forget.reason.as_str(), "an organization's forget for no organization of this deployment: nothing forgotten");
                return Ok(Outcome::Ignored { reason: "not_this_organization" });
            }
        };
        let departed = Departed { at: forget.at, reason: forget.reason };
        let team = organization_team(&org);
        if forget.users.is_empty() {
            self.departures.depart(&team, None, departed).await.map_err(WorkerError::Departures)?;
        }
        for user in &forget.users {
            self.departures.depart(&team, Some(user), departed).await.map_err(WorkerError::Departures)?;
        }
        let forgotten =
            self.departures.forget_organization(&org, &forget.users).await.map_err(WorkerError::Departures)?;
        let scope = if forget.users.is_empty() { "organization" } else { "people_of_organization" };
        info!(
            organization = %org,
            reason = forget.reason.as_str(),
            scope,
            people = forget.users.len(),
            records = forgotten.records,
            at = forget.at,
            "forgotten: work asked before this stops, in every workspace of the organization"
        );
        self.metrics.forgotten(forget.reason, forgotten.records);
        Ok(Outcome::Forgotten { records: forgotten.records })
    }

    /// `Ignored { reason: "departed" }` when `user` of `team` (or the
    /// team) departed after `asked_at`: work asked for before then is not
    /// begun (a question, a shortcut, a command, a sign-in), logged as
    /// `what`.
    pub(crate) async fn not_begun(
        &self,
        team: &TeamId,
        user: &UserId,
        asked_at: i64,
        what: &'static str,
    ) -> Result<Option<Outcome>, WorkerError> {
        let stopping = self.departures.stopping(team, user, asked_at);
        let Some(departed) = stopping.await.map_err(WorkerError::Departures)? else { return Ok(None) };
        info!(reason = departed.reason.as_str(), what, "not begun: the team or the person departed");
        Ok(Some(Outcome::Ignored { reason: "departed" }))
    }

    /// Stops `turn` if its team or its asker departed after it was asked:
    /// settled as failed, saved (so a click or a continuation finds it
    /// settled), and told to nobody. `None`: the turn goes on.
    pub(crate) async fn stopped(&self, turn: &mut Turn) -> Result<Option<Outcome>, WorkerError> {
        if !matches!(turn.status, TurnStatus::Running | TurnStatus::AwaitingApproval | TurnStatus::AwaitingSignIn) {
            return Ok(None);
        }
        let asked_at = turn.asked_at();
        let stopping = self.departures.stopping(&turn.thread.team, &turn.user, asked_at);
        let Some(departed) = stopping.await.map_err(WorkerError::Departures)? else { return Ok(None) };
        info!(reason = departed.reason.as_str(), "stopped: the team or the person who asked departed");
        self.cancel_tasks(turn).await;
        turn.pending_approval = None;
        turn.pending_sign_in = None;
        let answer = format!("Stopped: {} (nobody was told in Slack).", departed.reason.as_str().replace('_', " "));
        turn.settle(answer, TurnStatus::Failed, self.clock.now_unix());
        match self.save(turn).await {
            Ok(()) => Ok(Some(Outcome::Ignored { reason: "departed" })),
            Err(StoreError::Conflict { id, .. }) => Ok(Some(Outcome::Superseded { id })),
            Err(err) => Err(err.into()),
        }
    }
}
