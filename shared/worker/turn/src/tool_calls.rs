//! A step's tool calls: those that read run at once; those that change
//! things wait for approval, run under a thread's grant, or are made once
//! approved (saved as running first, so a redelivery never makes one
//! twice).

use crate::acting_as::StepAccess;
use crate::answer_files::{self, ATTACH_RESULT};
use crate::metric_charts::CHART_RESULT;
use crate::reading;
use crate::step_loop::running;
use crate::streaming::{self, AnswerStream};
use crate::{MAX_TOOL_CALLS_PER_STEP, Outcome, Worker, WorkerError};
use assistant_core::approval::Approver;
use assistant_core::grants::ThreadGrant;
use assistant_core::messages::{Decision, ReplyMessage};
use assistant_core::ports::StoreError;
use assistant_core::turn::{
    ActionRecord, Content, GrantUse, Message, PendingApproval, Role, ToolOutput, ToolResult, ToolStatus, ToolUse, Turn,
    TurnStatus,
};
use tools_registry::{Asker, Effect};
use tracing::{info, warn};

/// Approved calls recorded as running whose result was never saved: the
/// process stopped between the call and the save. They are never made
/// again; the model is told their outcome is unknown, and so is the audit
/// trail. The calls settled so.
pub(crate) fn settle_unknown_outcomes(turn: &mut Turn) -> Vec<ToolUse> {
    let Some(pending) = turn.pending_approval.as_mut().filter(|pending| !pending.running.is_empty()) else {
        return Vec::new();
    };
    let unknown = std::mem::take(&mut pending.running);
    for call in &unknown {
        warn!(tool = %call.name, tool_use_id = %call.id, "an approved call's outcome is unknown: not making it again");
        pending.completed.push(ToolResult {
            tool_use_id: call.id.clone(),
            status: ToolStatus::Error,
            output: ToolOutput::Text(
                "This approved call was started, but whether it completed is unknown: the worker stopped before \
                 recording its result. Check its effect before trying again; do not repeat it blindly."
                    .into(),
            ),
        });
    }
    for action in turn.actions.iter_mut().filter(|action| unknown.iter().any(|call| call.id == action.tool_use_id)) {
        action.outcome_unknown = true;
    }
    unknown
}

/// The prompt of an approved call as it should now stand, from the audit
/// trail: who approved it, and whether its outcome is unknown. `None` for
/// a call nobody approved by a click (denied, expired, or run under a
/// thread grant, which had no prompt).
pub(crate) fn settled_prompt(turn: &Turn, call: &ToolUse) -> Option<ReplyMessage> {
    let action = turn.actions.iter().find(|action| action.tool_use_id == call.id && action.grant.is_none())?;
    Some(ReplyMessage::ApprovalDecided {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        tool_use: call.clone(),
        decision: if action.gave.is_some() { Decision::ApproveForThread } else { Decision::Approve },
        user: action.approved_by.clone(),
        // The grant it gave, with its Revoke button, stays on the prompt.
        grant: action.gave.clone(),
        outcome_unknown: action.outcome_unknown,
    })
}

/// After a decision: once nothing is left to decide, the step's results
/// go to the model; otherwise the next call's clock starts now.
pub(crate) fn after_decision(turn: &mut Turn, now: i64) {
    let pending = turn.pending_approval.as_mut().expect("a decided turn had a pending approval");
    if pending.is_done() {
        let pending = turn.pending_approval.take().expect("checked above");
        let results = in_call_order(turn, pending.completed);
        turn.transcript.push(Message { role: Role::User, content: results });
        turn.status = TurnStatus::Running;
    } else {
        pending.asked_at = now;
    }
    turn.updated_at = now;
}

/// Tool results ordered as the model asked for them.
pub(crate) fn in_call_order(turn: &Turn, mut results: Vec<ToolResult>) -> Vec<Content> {
    sort_in_call_order(turn, &mut results);
    results.into_iter().map(Content::ToolResult).collect()
}

/// What the model reads for a changing call of a person of another
/// organization that only they could have approved.
pub(crate) const NO_APPROVER_FOR_EXTERNAL: &str = "Not run: the person who asked is from another organization, and no one here \
                                        is set to approve this tool for them. Tell them it needs someone of the team \
                                        that runs this bot.";

/// Who may approve a call of `turn`, as the prompt and a refusal name
/// them: a requester of another organization never approves, so
/// "requester" does not name them.
pub(crate) fn shown_approvers(turn: &Turn, approvers: &[Approver]) -> Vec<Approver> {
    let external = turn.membership.is_external();
    approvers.iter().filter(|approver| !(external && **approver == Approver::Requester)).cloned().collect()
}

/// Cuts a step's calls to [`MAX_TOOL_CALLS_PER_STEP`] (the first ones, in
/// the model's order) and answers each call past it with an error the
/// model reads; none of those runs.
pub(crate) fn over_the_cap(calls: &mut Vec<ToolUse>) -> Vec<ToolResult> {
    if calls.len() <= MAX_TOOL_CALLS_PER_STEP {
        return Vec::new();
    }
    let asked = calls.len();
    warn!(asked, limit = MAX_TOOL_CALLS_PER_STEP, "more tool calls than a step runs: the rest are refused");
    calls
        .split_off(MAX_TOOL_CALLS_PER_STEP)
        .into_iter()
        .map(|call| ToolResult {
            tool_use_id: call.id,
            status: ToolStatus::Error,
            output: ToolOutput::Text(format!(
                "Not run: a step runs at most {MAX_TOOL_CALLS_PER_STEP} tool calls and this one asked for {asked}. \
                 Ask for the calls you still need in your next step, fewer at a time."
            )),
        })
        .collect()
}

/// Results in the order the last message called for them.
pub(crate) fn sort_in_call_order(turn: &Turn, results: &mut [ToolResult]) {
    let order: Vec<&str> = turn
        .transcript
        .last()
        .map(|message| message.tool_uses().map(|call| call.id.as_str()).collect())
        .unwrap_or_default();
    results.sort_by_key(|result| order.iter().position(|id| *id == result.tool_use_id).unwrap_or(usize::MAX));
}

impl Worker {
    /// Runs a step's calls: those that read at once, those that change
    /// things held for approval (their results kept until all are decided).
    pub(crate) async fn dispatch(
        &self,
        turn: &mut Turn,
        calls: Vec<ToolUse>,
        asker: &Asker,
        access: StepAccess,
        stream: &mut AnswerStream<'_>,
    ) -> Result<(), WorkerError> {
        let mut calls = calls;
        let over_the_cap = over_the_cap(&mut calls);
        // `attach_result` reads the turn's own results: the worker runs it.
        let (attaching, calls): (Vec<ToolUse>, Vec<ToolUse>) = calls
            .into_iter()
            .partition(|call| call.name == ATTACH_RESULT && self.tools.effect(asker, ATTACH_RESULT).is_some());
        // `chart_result` too.
        let (charting, calls): (Vec<ToolUse>, Vec<ToolUse>) = calls
            .into_iter()
            .partition(|call| call.name == CHART_RESULT && self.tools.effect(asker, CHART_RESULT).is_some());
        let (held, now): (Vec<&ToolUse>, Vec<&ToolUse>) =
            calls.iter().partition(|call| self.tools.effect(asker, &call.name) == Some(Effect::ChangesThings));
        // A change for a person of another organization that only "the
        // requester" may approve could never be approved: refused now.
        let (held, unapprovable): (Vec<&ToolUse>, Vec<&ToolUse>) = held.into_iter().partition(|call| {
            let approvers = self.approvals.approvers_for(self.tools.approval_rule(asker, &call.name));
            asker.membership.is_home() || approvers.iter().any(|approver| *approver != Approver::Requester)
        });
        let started: Vec<_> = now.iter().map(|call| streaming::started(call)).collect();
        tokio::join!(self.show_progress(turn, running(&calls)), stream.tasks(started));
        turn.metered.sqs_requests += 1;
        let made: Vec<ToolUse> = now.iter().map(|call| (*call).clone()).collect();
        self.record_signed_calls(turn, &made, &access);
        let mut results = self.tools.run_all(&now, asker, &access.credentials).await;
        let ended: Vec<_> = now.iter().zip(&results).map(|(call, result)| streaming::ended(call, result)).collect();
        stream.tasks(ended).await;
        for call in &attaching {
            let (result, file) = answer_files::attach(self.artifacts.as_ref(), self.agent.as_ref(), turn, call).await;
            turn.answer_files.extend(file);
            results.push(result);
        }
        for call in &charting {
            results.push(crate::metric_charts::chart(turn, call));
        }
        results.extend(over_the_cap);
        results.extend(unapprovable.into_iter().map(|call| ToolResult {
            tool_use_id: call.id.clone(),
            status: ToolStatus::Error,
            output: ToolOutput::Text(NO_APPROVER_FOR_EXTERNAL.to_owned()),
        }));
        sort_in_call_order(turn, &mut results);
        self.guard_results(turn, &mut results).await;
        reading::fit(self.artifacts.as_ref(), turn, &mut results, self.limits.reading)
            .await
            .map_err(WorkerError::Artifacts)?;
        if held.is_empty() {
            turn.transcript
                .push(Message { role: Role::User, content: results.into_iter().map(Content::ToolResult).collect() });
        } else {
            turn.status = TurnStatus::AwaitingApproval;
            turn.pending_approval = Some(PendingApproval {
                waiting: held.into_iter().cloned().collect(),
                completed: results,
                asked_at: self.clock.now_unix(),
                running: Vec::new(),
            });
        }
        Ok(())
    }

    /// Makes an approved call at most once: recorded as running (with who
    /// let it run) and saved before it is made, so a delivery that finds it
    /// running never makes it again; its result joins the step's. `Some`:
    /// another worker saved the turn first, and nothing was called.
    pub(crate) async fn make_approved_call(
        &self,
        turn: &mut Turn,
        call: &ToolUse,
        asker: &Asker,
        record: ActionRecord,
    ) -> Result<Option<Outcome>, WorkerError> {
        // A sign-in that lapsed while the call waited fails the call with a
        // note; the next question asks the person to connect again.
        let access = match self.access_for(turn, asker, std::slice::from_ref(call)).await {
            Ok(access) => access,
            Err(lapsed) => StepAccess::lapsed(&lapsed.provider),
        };
        let pending = turn.pending_approval.as_mut().expect("an approved call is pending");
        pending.running.push(call.clone());
        turn.actions.push(record);
        self.record_signed_calls(turn, std::slice::from_ref(call), &access);
        turn.updated_at = self.clock.now_unix();
        match self.save(turn).await {
            Ok(()) => {}
            Err(StoreError::Conflict { id, .. }) => return Ok(Some(Outcome::Superseded { id })),
            Err(err) => return Err(err.into()),
        }
        let key = format!("{}:{}", turn.id, call.id);
        let mut result = self.tools.run_approved(call, asker, &access.credentials, key).await;
        self.guard_results(turn, std::slice::from_mut(&mut result)).await;
        reading::fit(self.artifacts.as_ref(), turn, std::slice::from_mut(&mut result), self.limits.reading)
            .await
            .map_err(WorkerError::Artifacts)?;
        let pending = turn.pending_approval.as_mut().expect("still pending");
        pending.running.retain(|running| running.id != call.id);
        pending.completed.push(result);
        Ok(None)
    }

    /// The thread's grant that lets the next waiting call run without a
    /// prompt, if there is one in force for the person who asked this turn
    /// and the call may still be granted (not destructive, grants not
    /// turned off since). A grant that cannot be read is no grant: the
    /// prompt is shown.
    pub(crate) async fn grant_for_next(&self, turn: &Turn, asker: &Asker) -> Option<(ToolUse, ThreadGrant)> {
        if !self.approvals.config.thread_grants {
            return None;
        }
        let call = turn.pending_approval.as_ref()?.waiting.first()?;
        let scope = self.grant_offered(turn, self.tools.approval_rule(asker, &call.name))?;
        match self.grants.covering(&turn.thread, &call.name, &turn.user, self.clock.now_unix()).await {
            Ok(grant) => grant.filter(|grant| grant.scope == scope).map(|grant| (call.clone(), grant)),
            Err(err) => {
                warn!(error = %err, "thread grants unreadable: asking instead");
                None
            }
        }
    }

    /// Runs the next waiting call under the thread's grant: recorded with
    /// the grant, made at most once like any approved call, and the thread
    /// told. `Some`: another worker saved the turn first.
    pub(crate) async fn run_under_grant(
        &self,
        turn: &mut Turn,
        asker: &Asker,
        call: ToolUse,
        grant: ThreadGrant,
    ) -> Result<Option<Outcome>, WorkerError> {
        info!(
            tool = %call.name,
            granted_by = %grant.granted_by,
            scope = %grant.scope,
            until = grant.until,
            "running under the thread's grant: no prompt"
        );
        let pending = turn.pending_approval.as_mut().expect("a turn awaiting approval has a pending approval");
        pending.waiting.retain(|waiting| waiting.id != call.id);
        let record = ActionRecord {
            tool_use_id: call.id.clone(),
            tool: call.name.clone(),
            approved_by: grant.granted_by.clone(),
            at: self.clock.now_unix(),
            grant: Some(GrantUse { scope: grant.scope.clone(), granted_at: grant.granted_at, until: grant.until }),
            gave: None,
            outcome_unknown: false,
        };
        if let Some(superseded) = self.make_approved_call(turn, &call, asker, record).await? {
            return Ok(Some(superseded));
        }
        after_decision(turn, self.clock.now_unix());
        match self.save(turn).await {
            Ok(()) => {}
            Err(StoreError::Conflict { id, .. }) => return Ok(Some(Outcome::Superseded { id })),
            Err(err) => return Err(err.into()),
        }
        let told = ReplyMessage::RanUnderGrant {
            turn_id: turn.id.clone(),
            thread: turn.thread.clone(),
            tool_use: call,
            grant,
        };
        if let Err(err) = self.replies.send(&told).await {
            warn!(error = %err, "the thread was not told a call ran under its grant");
        }
        Ok(None)
    }
}
