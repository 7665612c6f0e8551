//! Approve / Deny on a waiting call: counted only from who may decide, the
//! call made at most once.

use super::Handler;
use crate::approvals::Verdict;
use crate::step_loop::read_units;
use crate::tool_calls::{after_decision, settle_unknown_outcomes, settled_prompt, shown_approvers};
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::grants::ThreadGrant;
use assistant_core::messages::{ApprovalClick, Decision, ReplyMessage};
use assistant_core::ports::StoreError;
use assistant_core::turn::{ActionRecord, Message, ToolOutput, ToolResult, ToolStatus, Turn, TurnStatus};
use tracing::{Span, field, info, warn};

impl Handler for ApprovalClick {
    fn name_on(&self, span: &Span) {
        span.record("turn_id", field::display(&self.button.turn_id));
    }

    async fn apply(&self, worker: &Worker, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.decide(self, deadline).await
    }
}

impl Worker {
    /// Applies an Approve or Deny click to the call its button names, if
    /// the clicker may decide on it. See the module's approval rules.
    pub(crate) async fn decide(&self, click: &ApprovalClick, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        let Some(mut turn) = self.store.load(&click.button.turn_id).await? else {
            return Ok(Outcome::Ignored { reason: "unknown_turn" });
        };
        turn.metered.dynamodb_read_units += read_units(&turn);
        if self.thread_told_failed(&turn.id).await? {
            info!(user = %click.user, "click on a turn whose thread was told it failed: nothing runs");
            return Ok(Outcome::Ignored { reason: "thread_told_failed" });
        }
        // The team or the asker departed: nothing runs, nobody is told.
        if let Some(stopped) = self.stopped(&mut turn).await? {
            return Ok(stopped);
        }
        match turn.status {
            TurnStatus::Answered | TurnStatus::Failed => {
                info!(user = %click.user, "click on a settled turn: nothing runs");
                self.answer_late_click(&turn, click, true).await;
                return Ok(Outcome::Ignored { reason: "turn_settled" });
            }
            // A decision was saved and the turn went on, then failed: any
            // approval message for it carries it on, as a continuation would
            // (and puts right a prompt the failure left showing buttons).
            TurnStatus::Running => {
                info!(user = %click.user, "approval message for a turn already decided: carrying the turn on");
                self.answer_late_click(&turn, click, false).await;
                return self.run(turn, deadline).await;
            }
            TurnStatus::AwaitingSignIn => {
                info!(user = %click.user, "click on a turn that waits for a sign-in: nothing runs");
                return Ok(Outcome::Ignored { reason: "awaiting_sign_in" });
            }
            TurnStatus::AwaitingApproval => {}
        }
        let unknown = settle_unknown_outcomes(&mut turn);
        if !unknown.is_empty() {
            // The prompt becomes the record: who approved, outcome unknown.
            let updates: Vec<ReplyMessage> = unknown.iter().filter_map(|call| settled_prompt(&turn, call)).collect();
            return self.save_decided(turn, updates, deadline).await;
        }
        let now = self.clock.now_unix();
        let asker = self.asker(&turn).await;
        let pending = turn.pending_approval.as_mut().expect("a turn awaiting approval has a pending approval");
        let Some(index) = pending.waiting.iter().position(|call| click.button.names(call)) else {
            warn!(
                user = %click.user,
                tool_use_id = %click.button.tool_use_id,
                "click on a button that names no waiting call (stale, replayed or forged): nothing runs"
            );
            self.answer_late_click(&turn, click, true).await;
            return Ok(Outcome::Ignored { reason: "stale_button" });
        };
        if now >= pending.asked_at + self.approvals.expires_after_secs() {
            let id = pending.waiting[index].id.clone();
            return self.expire(turn, &id, deadline).await;
        }
        let call = pending.waiting[index].clone();
        let rule = self.tools.approval_rule(&asker, &call.name);
        let approvers = self.approvals.approvers_for(rule);
        let clicker = (&click.user, click.membership);
        let verdict = self.approvals.verdict(self.slack.as_ref(), &turn.user, clicker, approvers, now).await;
        if verdict != Verdict::May {
            let (own_request, reason) = match verdict {
                Verdict::MayNot { own_request } => (own_request, "not_an_approver"),
                _ => (false, "another_organization"),
            };
            warn!(user = %click.user, membership = ?click.membership, requester = %turn.user, tool = %call.name, "click by someone who may not decide: nothing runs");
            let refused = ReplyMessage::ApprovalRefused {
                turn_id: turn.id.clone(),
                thread: turn.thread.clone(),
                user: click.user.clone(),
                tool_name: call.name.clone(),
                requester: turn.user.clone(),
                approvers: shown_approvers(&turn, approvers),
                own_request,
                membership: click.membership,
            };
            if let Err(err) = self.replies.send(&refused).await {
                warn!(error = %err, "the refused clicker was not told why");
            }
            return Ok(Outcome::Ignored { reason });
        }

        // "Approve for this thread" counts only where it was offered: a
        // forged click on a destructive call's prompt grants nothing.
        let grant = match click.decision {
            Decision::ApproveForThread => {
                let Some(scope) = self.grant_offered(&turn, rule) else {
                    warn!(user = %click.user, tool = %call.name, "a thread grant for a call that offers none: nothing runs");
                    return Ok(Outcome::Ignored { reason: "grant_not_offered" });
                };
                let granted_at = click.action_ts.unix_secs().unwrap_or(now);
                // For the person whose call this is: a bystander asking in
                // the thread later is prompted as before.
                let grant = ThreadGrant {
                    scope: scope.to_owned(),
                    for_user: Some(turn.user.clone()),
                    granted_by: click.user.clone(),
                    turn_id: turn.id.clone(),
                    granted_at,
                    until: granted_at + i64::from(self.approvals.config.grant_minutes) * 60,
                    revoked: None,
                };
                // Before the call: a grant whose call never ran is harmless,
                // and a retry writes the same item again.
                self.grants.put(&turn.thread, &grant).await.map_err(WorkerError::Grants)?;
                info!(scope = %grant.scope, for_user = %turn.user, granted_by = %grant.granted_by, until = grant.until, "thread grant given");
                Some(grant)
            }
            Decision::Approve | Decision::Deny => None,
        };
        info!(tool = %call.name, decision = ?click.decision, user = %click.user, requester = %turn.user, "approval decided");
        let decided = ReplyMessage::ApprovalDecided {
            turn_id: turn.id.clone(),
            thread: turn.thread.clone(),
            tool_use: call.clone(),
            decision: click.decision,
            user: click.user.clone(),
            grant: grant.clone(),
            outcome_unknown: false,
        };
        let pending = turn.pending_approval.as_mut().expect("a turn awaiting approval has a pending approval");
        pending.waiting.remove(index);
        if click.decision.approves() {
            let record = ActionRecord {
                tool_use_id: call.id.clone(),
                tool: call.name.clone(),
                approved_by: click.user.clone(),
                at: now,
                grant: None,
                gave: grant,
                outcome_unknown: false,
            };
            if let Some(superseded) = self.make_approved_call(&mut turn, &call, &asker, record).await? {
                return Ok(superseded);
            }
        } else {
            pending.completed.push(ToolResult {
                tool_use_id: call.id.clone(),
                status: ToolStatus::Error,
                output: ToolOutput::Text(format!("<@{}> denied this action; do not retry it.", click.user)),
            });
        }
        self.save_decided(turn, Some(decided), deadline).await
    }

    /// A click on a prompt whose call no longer waits (a second click, a
    /// replay, or a prompt a crash left showing buttons): the prompt is put
    /// right where the audit trail says who approved the call, and, when
    /// `tell`, the clicker is told privately that nothing more runs (unless
    /// they approved it: the prompt's update is their answer). A button
    /// naming no call of the turn's gets nothing. Best effort.
    pub(crate) async fn answer_late_click(&self, turn: &Turn, click: &ApprovalClick, tell: bool) {
        let calls = || turn.transcript.iter().flat_map(Message::tool_uses);
        let Some(call) = calls().find(|call| click.button.names(call)) else { return };
        let update = settled_prompt(turn, call);
        let approved_by = match &update {
            Some(ReplyMessage::ApprovalDecided { user, .. }) => Some(user.clone()),
            _ => None,
        };
        let told = (tell && approved_by.as_ref() != Some(&click.user)).then(|| ReplyMessage::ApprovalAnswered {
            turn_id: turn.id.clone(),
            thread: turn.thread.clone(),
            user: click.user.clone(),
            tool_name: call.name.clone(),
            approved_by,
        });
        for reply in update.into_iter().chain(told) {
            if let Err(err) = self.replies.send(&reply).await {
                warn!(error = %err, "a click on a decided prompt was not answered");
            }
        }
    }

    /// After a decision: once nothing is left to decide, the step's results
    /// go to the model; otherwise the next call's prompt is shown now and
    /// its clock starts. Saved, the prompt's update requested, and the turn
    /// goes on.
    pub(crate) async fn save_decided(
        &self,
        mut turn: Turn,
        updates: impl IntoIterator<Item = ReplyMessage>,
        deadline: &dyn Deadline,
    ) -> Result<Outcome, WorkerError> {
        after_decision(&mut turn, self.clock.now_unix());
        match self.save(&mut turn).await {
            Ok(()) => {
                // The prompt's update is for people; the decision stands
                // without it.
                for update in updates {
                    if let Err(err) = self.replies.send(&update).await {
                        warn!(error = %err, "approval prompt not updated");
                    }
                }
                self.run(turn, deadline).await
            }
            Err(StoreError::Conflict { id, .. }) => Ok(Outcome::Superseded { id }),
            Err(err) => Err(err.into()),
        }
    }
}
