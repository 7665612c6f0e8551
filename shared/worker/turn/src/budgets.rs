//! The deployment's budgets in the step loop (`assistant_core::budgets`
//! says how spend is counted): before each model call the turn's cost so
//! far is charged and the totals read ([`Worker::charge`]); a spent budget
//! ends the turn with a message saying which budget, until when and whom to
//! ask ([`Worker::over_budget`]); the settled turn's last step is charged
//! before its final save. The deployment's month past `alert_at` is told in
//! the ops channel and counted (`BudgetAlerts`), once a month.

use crate::{Worker, WorkerError};
use assistant_core::alerts::{OpsAlerts, Raised};
use assistant_core::budgets::{BudgetsConfig, Scope, Spender, Spending, Used, first_spent};
use assistant_core::messages::TurnRequest;
use assistant_core::turn::Turn;
use slack::UserId;
use std::sync::Arc;
use tracing::{error, info, warn};

/// The configured budgets, and where the deployment's month is alerted.
#[derive(Clone)]
pub struct Budgeting {
    pub config: BudgetsConfig,
    /// The ops channel's alerts; `None`: the metric alone says it.
    pub ops: Option<Arc<OpsAlerts>>,
}

impl Worker {
    /// Charges the turn's cost since its last charge to every counter the
    /// budgets name, and records the charge on the turn (saved with its
    /// next save). Returns the counters, or none where no budget is set.
    pub(crate) async fn charge(&self, turn: &mut Turn) -> Result<Vec<Used>, WorkerError> {
        let Some(budgets) = &self.budgets else { return Ok(Vec::new()) };
        let cost = turn.cost(self.prices, self.spending.worker_memory_mb());
        let total = (cost.total() * 1e6).round() as u64;
        let now = self.clock.now_unix();
        let who = Spender { turn: &turn.id, team: &turn.thread.team, user: &turn.user, channel: &turn.thread.channel };
        let charged = self
            .spending
            .charge(&budgets.config, who, total, turn.charged_micros, now)
            .await
            .map_err(WorkerError::Budgets)?;
        if charged.complete {
            turn.charged_micros = turn.charged_micros.max(total);
        }
        // One read and at most one write of each counter.
        let counters = charged.used.len() as u64;
        turn.metered.dynamodb_read_units += counters;
        turn.metered.dynamodb_write_units += counters;
        if let Some(month) = &charged.alert {
            self.metrics.budget_alert(month.ratio());
            warn!(
                spent_usd = month.usd(),
                cap_usd = month.cap_usd,
                "the deployment passed its monthly budget's alert share"
            );
            if let Some(ops) = &budgets.ops
                && let Raised::Failed(reason) = self.spending.alert(ops, month, now).await
            {
                error!(reason, "the budget alert was not posted in the ops channel");
            }
        }
        Ok(charged.used)
    }

    /// Charges the turn and, where a budget is spent, what the thread is
    /// told instead of another model call.
    pub(crate) async fn over_budget(&self, turn: &mut Turn) -> Result<Option<String>, WorkerError> {
        let used = self.charge(turn).await?;
        let Some(spent) = first_spent(&used) else { return Ok(None) };
        let budgets = self.budgets.as_ref().expect("counters come from budgets");
        info!(
            budget = spent.scope.as_str(),
            period = spent.period.as_str(),
            spent_usd = spent.usd(),
            cap_usd = spent.cap_usd,
            "budget spent: the turn ends"
        );
        Ok(Some(spent.message(budgets.config.whom_to_ask().as_deref(), turn.steps > 0, self.clock.now_unix())))
    }

    /// Whether a budget of the person asking, their channel's or the
    /// deployment's is already spent, read before a turn's first model call
    /// (the prompt enhancer's): `false` without budgets, or where the
    /// counters cannot be read (the step loop's check then says).
    pub(crate) async fn spent_before_start(&self, request: &TurnRequest) -> bool {
        let Some(budgets) = &self.budgets else { return false };
        let thread = &request.thread;
        let scopes = Spending::scopes_of(&budgets.config, &thread.team, &request.user, &thread.channel);
        match self.spending.usage(&budgets.config, &scopes, self.clock.now_unix()).await {
            Ok(used) => first_spent(&used).is_some(),
            Err(err) => {
                warn!(error = %err, "budgets not read before the turn's start");
                false
            }
        }
    }

    /// The counters `user` sees on their Home tab: their own, and the
    /// deployment's where they are one of the budgets' admins (by id, or
    /// in an admin user group).
    pub(crate) async fn usage_for(&self, team: &slack::TeamId, user: &UserId) -> Vec<Used> {
        let Some(budgets) = &self.budgets else { return Vec::new() };
        let mut scopes = vec![Scope::Person(team.clone(), user.clone())];
        if self.is_budget_admin(&budgets.config, user).await {
            scopes.push(Scope::Deployment);
        }
        match self.spending.usage(&budgets.config, &scopes, self.clock.now_unix()).await {
            Ok(used) => used,
            Err(err) => {
                warn!(error = %err, "usage not read for the Home tab");
                Vec::new()
            }
        }
    }

    async fn is_budget_admin(&self, budgets: &BudgetsConfig, user: &UserId) -> bool {
        if budgets.admins.iter().any(|admin| admin == user.as_str()) {
            return true;
        }
        let now = self.clock.now_unix();
        for group in budgets.admins.iter().filter(|admin| admin.starts_with('S')) {
            if self.approvals.members(self.slack.as_ref(), group, now).await.contains(user) {
                return true;
            }
        }
        false
    }
}
