//! What the worker does with a work message: drive a turn to its answer one
//! durable step at a time.
//!
//! A step is one model call, then the tools it asked for (concurrently,
//! each with its own timeout), then one conditional save of the turn. A
//! crash or timeout anywhere inside a step loses only that step: the next
//! delivery resumes from the last save. A redelivery of work already saved
//! does no model call and runs no tool; a settled turn only has its reply
//! requested again (the responder posts exactly once). Of two workers on the
//! same turn, the one whose save conflicts stops at once.
//!
//! Steps continue while the invocation has time for another; otherwise the
//! worker queues a continuation and returns, and any worker picks the turn
//! up from the store.
//!
//! The worker is the turn's one writer. What the responder learned (the
//! thread got an apology, Slack refused the bot) is in the delivery record,
//! which the worker reads before it acts on a click or a continuation.
//!
//! **Approvals.** Calls that change things pause the turn: one prompt at a
//! time, with a deadline. A click counts only if its button names a waiting
//! call exactly (turn, call id, fingerprint of tool and input) and the
//! clicker may decide ([`crate::approvals`], [`crate::tool_calls`]); anyone else is told, only
//! them, who may. An approved call is saved as running before it is made
//! and carries `Idempotency-Key: {turn_id}:{tool_use_id}`; a delivery that
//! finds it running without a result never makes it again (the model is
//! told the outcome is unknown). Any approval message for a turn already
//! decided carries it on, so a failure after Approve is retried like any
//! step. A call nobody decides on expires: the worker's sweep of due
//! deadlines puts a timeout on the work queue. "Approve for this thread"
//! also stores a grant beside the thread ([`assistant_core::grants`]): a
//! later waiting call it covers runs without a prompt, at most once like
//! any approved call, recorded in the turn's `actions` with the grant.
//!
//! Every message is handled inside a `turn` span (`turn_id`, `event_id`,
//! `step`), so every log line of a turn, the adapters' included, can be
//! found by its id.

use crate::reading;
use crate::streaming::{self, AnswerStream};
use crate::tasks::Waited;
use crate::tool_calls::{after_decision, settle_unknown_outcomes, settled_prompt, shown_approvers};
use crate::{Deadline, FAILURE, MAX_TOOL_CALLS_PER_STEP, Outcome, REFUSAL, Worker, WorkerError};
use assistant_core::messages::{Continuation, ReplyMessage, WorkMessage};
use assistant_core::model::{FileBodies, ModelError, ModelRequest, StopReason, TextSink};
use assistant_core::ports::{ApprovalTimer, StoreError};
use assistant_core::pricing::ModelPrices;
use assistant_core::telemetry::{EnhancerReport, LimitHit, TurnReport};
use assistant_core::turn::{Content, Message, Role, ToolOutput, ToolStatus, ToolUse, Turn, TurnId, TurnStatus};
use tools_registry::{ApprovalRule, Asker};
use tracing::{Span, error, info, warn};

/// What an item costs beyond its state: its keys, version, token and TTL.
pub(crate) const ITEM_OVERHEAD_BYTES: u64 = 200;

/// DynamoDB's write units for the turn's last save: one per KB of each
/// item it wrote (the head, and the parts holding the messages it added).
pub(crate) fn write_units(turn: &Turn) -> u64 {
    turn.stored.written.iter().map(|bytes| (bytes + ITEM_OVERHEAD_BYTES).div_ceil(1_024)).sum()
}

/// DynamoDB's read units for loading `turn` (its head, and its parts in one
/// query) and its delivery record: consistent reads, one per 4 KB.
pub(crate) fn read_units(turn: &Turn) -> u64 {
    let items = 1 + turn.stored.parts.len() as u64;
    (turn.stored.bytes + items * ITEM_OVERHEAD_BYTES).div_ceil(4_096) + 1
}

/// Whether the model was shown part of a result it may read on with
/// `read_result`.
fn has_stored_results(turn: &Turn) -> bool {
    turn.transcript.iter().flat_map(|message| &message.content).any(|content| {
        matches!(content, Content::ToolResult(result) if matches!(result.output, ToolOutput::Stored { shown: Some(_), .. }))
    })
}

/// The thread's status line while the first model call runs.
pub const THINKING: &str = "is thinking…";

/// The status line while a step's tools run.
pub(crate) fn running(calls: &[ToolUse]) -> String {
    let mut names: Vec<&str> = calls.iter().map(|call| call.name.as_str()).collect();
    names.dedup();
    format!("is running {}…", names.join(", "))
}

/// An honest answer for a turn stopped before the model finished: what
/// was tried, and the last thing the model said.
pub(crate) fn partial_answer(turn: &Turn, limit: &str) -> String {
    let opening = format!("I stopped before finishing: this question reached {limit} ({} steps).", turn.steps);
    stopped_answer(turn, opening)
}

/// `opening` (why the turn stopped), then what was tried and the last
/// thing the model said.
pub(crate) fn stopped_answer(turn: &Turn, opening: String) -> String {
    let tried: Vec<String> = turn
        .transcript
        .iter()
        .flat_map(|message| message.tool_uses())
        .map(|call| {
            let outcome =
                turn.transcript.iter().flat_map(|message| &message.content).find_map(|content| match content {
                    Content::ToolResult(result) if result.tool_use_id == call.id => Some(result.status),
                    _ => None,
                });
            let outcome = match outcome {
                Some(ToolStatus::Success) => "ok",
                Some(ToolStatus::Error) => "failed",
                None => "not run",
            };
            format!("• `{}` {} ({outcome})", call.name, call.input)
        })
        .collect();
    let last_said = turn
        .transcript
        .iter()
        .rev()
        .filter(|message| message.role == Role::Assistant)
        .map(Message::text)
        .find(|text| !text.trim().is_empty());

    let mut answer = opening;
    if !tried.is_empty() {
        answer.push_str("\n\nWhat I tried:\n");
        answer.push_str(&tried.join("\n"));
    }
    if let Some(said) = last_said {
        answer.push_str("\n\nWhere I got to: ");
        answer.push_str(&said);
    }
    answer
}

impl Worker {
    /// Steps the turn until it settles, waits for a human, or runs out of
    /// time; each step ends in one conditional save.
    pub(crate) async fn run(&self, mut turn: Turn, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        Span::current().record("step", turn.steps);
        // Work the app or the person left behind stops here (a turn just
        // started was checked before its question was read).
        if (turn.steps > 0 || turn.status != TurnStatus::Running)
            && let Some(stopped) = self.stopped(&mut turn).await?
        {
            return Ok(stopped);
        }
        let mut stream = AnswerStream::new(
            self.agent.as_ref(),
            &self.streams,
            self.clock.as_ref(),
            turn.id.clone(),
            turn.thread.clone(),
            turn.user.clone(),
            turn.message_ts.clone(),
        );
        if self.answer_guarded() {
            stream = stream.silent();
        }
        // At least one step per invocation, so the turn always progresses
        // (even if the function's timeout is set shorter than a step).
        let mut stepped_here = false;
        // This message's own requests: its receive, the hold, its delete.
        turn.metered.sqs_requests += 3;
        turn.metered.invocations += 1;
        let mut mark = self.clock.now_millis();
        let (mut settled_here, mut limit) = (false, None);
        // Pasted images and documents, read from the bucket once per invocation.
        let mut bodies = FileBodies::new();
        loop {
            match turn.status {
                TurnStatus::Answered | TurnStatus::Failed => {
                    // Reported once: by the handling whose save settled it,
                    // before the delivery request (whose retry finds it settled).
                    if settled_here {
                        stream.finish().await;
                        // The stream record's small writes, a unit each.
                        turn.metered.dynamodb_write_units += stream.record_writes;
                        self.report(&turn, limit);
                        self.remember(&turn).await;
                    } else {
                        // A redelivery: an unrecorded stream the settling
                        // invocation could not close is closed now.
                        stream.close_left_behind().await;
                    }
                    let reply = ReplyMessage::Deliver { turn_id: turn.id.clone(), thread: turn.thread.clone() };
                    self.replies.send(&reply).await.map_err(WorkerError::Queue)?;
                    return Ok(Outcome::Settled { id: turn.id, status: turn.status, steps: turn.steps });
                }
                TurnStatus::AwaitingApproval => {
                    // A call made under a grant whose result was never saved
                    // (the process died): never made again.
                    let unknown = settle_unknown_outcomes(&mut turn);
                    if !unknown.is_empty() {
                        after_decision(&mut turn, self.clock.now_unix());
                        match self.save(&mut turn).await {
                            Ok(()) => {
                                for update in unknown.iter().filter_map(|call| settled_prompt(&turn, call)) {
                                    if let Err(err) = self.replies.send(&update).await {
                                        warn!(error = %err, "approval prompt not updated");
                                    }
                                }
                                continue;
                            }
                            Err(StoreError::Conflict { id, .. }) => {
                                stream.pause().await;
                                return self.superseded(id).await;
                            }
                            Err(err) => return Err(err.into()),
                        }
                    }
                    let asker = self.asker(&turn).await;
                    if let Some((call, grant)) = self.grant_for_next(&turn, &asker).await {
                        if let Some(superseded) = self.run_under_grant(&mut turn, &asker, call, grant).await? {
                            stream.pause().await;
                            return Ok(superseded);
                        }
                        continue;
                    }
                    stream.pause().await;
                    self.ask(&turn, &asker).await?;
                    return Ok(Outcome::AwaitingApproval { id: turn.id });
                }
                TurnStatus::AwaitingSignIn => {
                    let pending = turn.pending_sign_in.clone().expect("a turn awaiting sign-in has its step");
                    let asker = self.asker(&turn).await;
                    match self.access_for(&turn, &asker, &pending.calls).await {
                        // Signed in since: the step's calls run now.
                        Ok(access) => {
                            info!(provider = %pending.provider, "signed in: the waiting step's calls run");
                            turn.pending_sign_in = None;
                            turn.status = TurnStatus::Running;
                            self.dispatch(&mut turn, pending.calls, &asker, access, &mut stream).await?;
                        }
                        Err(still) => {
                            stream.pause().await;
                            if still.provider != pending.provider {
                                // Connected to one; the step needs another too.
                                turn.pending_sign_in = Some(still);
                                match self.save(&mut turn).await {
                                    Ok(()) => {}
                                    Err(StoreError::Conflict { id, .. }) => return self.superseded(id).await,
                                    Err(err) => return Err(err.into()),
                                }
                            }
                            self.ask_sign_in(&turn).await?;
                            return Ok(Outcome::AwaitingSignIn { id: turn.id });
                        }
                    }
                    match self.save_or_stop(&mut turn, &mut stream).await? {
                        None => continue,
                        Some(superseded) => return Ok(superseded),
                    }
                }
                TurnStatus::Running => {}
            }

            // The last step's calls a server runs as tasks: no model call
            // until each has its result.
            if !turn.running_tasks().is_empty() {
                if let Waited::OutOfTime = self.wait_for_tasks(&mut turn, deadline, &mut stream).await? {
                    turn.task_waits += 1;
                    if let Some(superseded) = self.save_or_stop(&mut turn, &mut stream).await? {
                        return Ok(superseded);
                    }
                    stream.pause().await;
                    let continuation = Continuation {
                        turn_id: turn.id.clone(),
                        thread: turn.thread.clone(),
                        after_step: turn.steps,
                        waits: turn.task_waits,
                    };
                    self.work.enqueue(&WorkMessage::Continue(continuation)).await.map_err(WorkerError::Queue)?;
                    info!(waits = turn.task_waits, "tasks still running: a continuation polls them");
                    return Ok(Outcome::Continued { id: turn.id, after_step: turn.steps });
                }
                match self.save_or_stop(&mut turn, &mut stream).await? {
                    None => continue,
                    Some(superseded) => return Ok(superseded),
                }
            }

            let now = self.clock.now_unix();
            if turn.steps >= self.limits.max_steps {
                info!(limit = "steps", max_steps = self.limits.max_steps, "limit reached: partial answer");
                let partial = partial_answer(&turn, "the step limit");
                let answer = self.guard_answer(&mut turn, partial).await?;
                let answer = crate::metric_charts::finish(&turn, answer);
                turn.settle(answer, TurnStatus::Answered, now);
                limit = Some(LimitHit::Steps);
            } else if turn.usage.input_tokens + turn.usage.output_tokens >= self.limits.max_turn_tokens {
                info!(limit = "tokens", max_turn_tokens = self.limits.max_turn_tokens, "limit reached: partial answer");
                let partial = partial_answer(&turn, "the token budget");
                let answer = self.guard_answer(&mut turn, partial).await?;
                let answer = crate::metric_charts::finish(&turn, answer);
                turn.settle(answer, TurnStatus::Answered, now);
                limit = Some(LimitHit::Tokens);
            } else if stepped_here && deadline.time_left() < self.limits.step_time {
                let continuation = Continuation {
                    turn_id: turn.id.clone(),
                    thread: turn.thread.clone(),
                    after_step: turn.steps,
                    waits: 0,
                };
                stream.pause().await;
                self.work.enqueue(&WorkMessage::Continue(continuation)).await.map_err(WorkerError::Queue)?;
                info!("out of time: continuation queued");
                return Ok(Outcome::Continued { id: turn.id, after_step: turn.steps });
            } else if let Some(spent) = self.over_budget(&mut turn).await? {
                let stopped = stopped_answer(&turn, spent);
                let answer = self.guard_answer(&mut turn, stopped).await?;
                let answer = crate::guarding::with_interventions(&turn, answer);
                turn.settle(answer, TurnStatus::Answered, now);
                limit = Some(LimitHit::Budget);
            } else {
                self.step(&mut turn, &mut stream, &mut bodies).await?;
                stepped_here = true;
                if let (None, Some(at)) = (turn.first_text_ms, stream.first_text_at_ms) {
                    turn.first_text_ms = Some(turn.since_asked_ms(at));
                }
            }
            settled_here = matches!(turn.status, TurnStatus::Answered | TurnStatus::Failed);
            if settled_here {
                turn.metered.sqs_requests += 1; // the delivery request
            }
            let now_ms = self.clock.now_millis();
            turn.metered.busy_ms += u64::try_from(now_ms - mark).unwrap_or(0);
            mark = now_ms;
            if settled_here && limit != Some(LimitHit::Budget) {
                // The last step's cost, counted before the turn is saved settled
                // (a redelivery of a settled turn charges nothing).
                if let Err(err) = self.charge(&mut turn).await {
                    error!(error = %err, "the settled turn's last step was not charged to its budgets");
                }
            }

            match self.save(&mut turn).await {
                Ok(()) => {}
                Err(StoreError::Conflict { id, .. }) => {
                    stream.pause().await;
                    return self.superseded(id).await;
                }
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// Saves `turn`; `Some` when another worker saved it first, and this
    /// one stops (its stream paused).
    async fn save_or_stop(
        &self,
        turn: &mut Turn,
        stream: &mut AnswerStream<'_>,
    ) -> Result<Option<Outcome>, WorkerError> {
        match self.save(turn).await {
            Ok(()) => Ok(None),
            Err(StoreError::Conflict { id, .. }) => {
                stream.pause().await;
                self.superseded(id).await.map(Some)
            }
            Err(err) => Err(err.into()),
        }
    }

    /// Another worker saved the turn first (a redelivery raced this one):
    /// it carries the turn on. So that the turn is never left undelivered
    /// whatever happens to that worker, a turn already settled has its
    /// delivery requested again (the reply queue and the responder drop
    /// the copy); a running one is the winner's, whose message comes back
    /// if it dies.
    pub(crate) async fn superseded(&self, id: TurnId) -> Result<Outcome, WorkerError> {
        warn!("another worker saved this turn first: stopping");
        if let Some(turn) = self.store.load(&id).await?
            && matches!(turn.status, TurnStatus::Answered | TurnStatus::Failed)
        {
            let reply = ReplyMessage::Deliver { turn_id: turn.id.clone(), thread: turn.thread.clone() };
            self.replies.send(&reply).await.map_err(WorkerError::Queue)?;
        }
        Ok(Outcome::Superseded { id })
    }

    /// Shows the first waiting call's prompt and starts its clock (both
    /// idempotent: a redelivery sets the same timer and SQS drops the
    /// repeated prompt request, as does the responder).
    pub(crate) async fn ask(&self, turn: &Turn, asker: &Asker) -> Result<(), WorkerError> {
        let Some(pending) = turn.pending_approval.as_ref() else { return Ok(()) };
        let Some(call) = pending.waiting.first() else { return Ok(()) };
        let expires_at = pending.asked_at + self.approvals.expires_after_secs();
        let timer = ApprovalTimer {
            due_at: expires_at,
            turn_id: turn.id.clone(),
            thread: turn.thread.clone(),
            tool_use_id: call.id.clone(),
        };
        self.timers.set(&timer).await.map_err(WorkerError::Timers)?;
        let rule = self.tools.approval_rule(asker, &call.name);
        let grant_scope = self.grant_offered(turn, rule);
        let prompt = ReplyMessage::ApprovalPrompt {
            turn_id: turn.id.clone(),
            thread: turn.thread.clone(),
            tool_use: call.clone(),
            requester: Some(turn.user.clone()),
            approvers: shown_approvers(turn, self.approvals.approvers_for(rule)),
            expires_at: Some(expires_at),
            destructive: rule.is_some_and(|rule| rule.destructive),
            grant_minutes: grant_scope.map(|_| self.approvals.config.grant_minutes),
            grant_scope: grant_scope.map(str::to_owned),
            origin: Some(crate::approvals::call_origin(turn, call)),
        };
        self.replies.send(&prompt).await.map_err(WorkerError::Queue)
    }

    /// What "Approve for this thread" would grant for a call of `turn`
    /// under `rule`: offered only where a grant could be used, never for
    /// destructive calls (the rule has no scope then), nor where turned
    /// off, nor for a person of another organization (each of their calls
    /// is approved on its own).
    pub(crate) fn grant_offered<'a>(&self, turn: &Turn, rule: Option<ApprovalRule<'a>>) -> Option<&'a str> {
        let offered = self.approvals.config.thread_grants && turn.membership.is_home();
        rule.and_then(|rule| rule.grant_scope).filter(|_| offered)
    }

    /// The settled turn's figures: one "turn settled" log line, and the
    /// report to the metrics port.
    /// Keeps a short, redacted record of a turn settled here in its
    /// channel's memory, unless the thread asked to be forgotten in it. A
    /// record not kept (the store failing, a crash after the turn's save)
    /// is only history missing: it is logged, never retried.
    pub(crate) async fn remember(&self, turn: &Turn) {
        let Some(memory) = &self.memory else { return };
        let calls = || turn.transcript.iter().flat_map(|message| message.tool_uses());
        if calls().any(|call| call.name == tools_registry::FORGET_THREAD) {
            return;
        }
        let record = crate::memory::memory_of(turn);
        if let Err(err) = memory.remember(&turn.thread.team, &turn.thread.channel, &record).await {
            warn!(error = %err, "the turn is not remembered in its channel's history");
        }
    }

    pub(crate) fn report(&self, turn: &Turn, limit: Option<LimitHit>) {
        let tool_uses = turn.transcript.iter().flat_map(|message| message.tool_uses()).count();
        let results = turn.transcript.iter().flat_map(|message| &message.content).filter_map(|content| match content {
            Content::ToolResult(result) => Some(result),
            _ => None,
        });
        let (mut tool_errors, mut stored) = (0, 0);
        for result in results {
            tool_errors += u32::from(result.status == ToolStatus::Error);
            stored += u64::from(matches!(result.output, ToolOutput::Stored { .. }));
        }
        let mut metered = turn.metered;
        metered.s3_puts += stored;
        let report = TurnReport {
            turn_id: turn.id.clone(),
            status: turn.status,
            limit,
            steps: turn.steps,
            tool_calls: tool_uses as u32,
            tool_errors,
            usage: turn.usage,
            metered,
            time_to_first_status_ms: turn.first_status_ms,
            time_to_first_text_ms: turn.first_text_ms,
            time_to_answer_ms: turn.since_asked_ms(self.clock.now_millis()),
            prices: self.prices,
            enhancer: turn.enhancer.as_ref().map(|run| EnhancerReport {
                usage: run.usage,
                prices: ModelPrices::for_model(&run.model_id),
                latency_ms: run.latency_ms,
                used: run.used,
            }),
            guard_units: turn.guard_units,
            guardrail_interventions: turn.guardrail.iter().filter(|intervention| !intervention.unchecked).count()
                as u32,
        };
        info!(
            status = turn.status.as_str(),
            limit = limit.map(LimitHit::as_str),
            steps = report.steps,
            tool_calls = report.tool_calls,
            tool_errors = report.tool_errors,
            input_tokens = report.usage.input_tokens,
            output_tokens = report.usage.output_tokens,
            cache_read_tokens = report.usage.cache_read_tokens,
            cache_write_tokens = report.usage.cache_write_tokens,
            time_to_first_status_ms = report.time_to_first_status_ms,
            time_to_first_text_ms = report.time_to_first_text_ms,
            time_to_answer_ms = report.time_to_answer_ms,
            model_cost_usd = report.prices.map(|prices| prices.cost(&report.usage)),
            "turn settled"
        );
        self.metrics.turn_settled(&report);
    }

    /// Asks the responder to show what the turn is doing. Best effort: a
    /// status line is not worth failing (and repeating) a step for.
    pub(crate) async fn show_progress(&self, turn: &Turn, text: String) {
        let progress =
            ReplyMessage::Progress { turn_id: turn.id.clone(), thread: turn.thread.clone(), step: turn.steps, text };
        if let Err(err) = self.replies.send(&progress).await {
            warn!(error = %err, "progress not sent");
        }
    }

    /// One conditional save. A state grown past the item limit is compacted
    /// (older tool results moved to the artifact store) and saved again, so
    /// the usual save serializes the turn once.
    ///
    /// The write's units are metered once it is done (the store knows the
    /// size), so a save's own units are stored with the next one.
    pub(crate) async fn save(&self, turn: &mut Turn) -> Result<(), StoreError> {
        let saved = match self.store.save(turn).await {
            Err(StoreError::TooLarge { bytes, .. }) => {
                info!(bytes, "turn state over the item limit: compacting");
                reading::compact(self.artifacts.as_ref(), turn).await?;
                self.store.save(turn).await
            }
            other => other,
        };
        if saved.is_ok() {
            turn.metered.dynamodb_write_units += write_units(turn);
        }
        saved
    }

    /// Who asked this turn, where, and which of the policy's user groups
    /// they are in (members read through Slack, cached a few minutes).
    pub(crate) async fn asker(&self, turn: &Turn) -> Asker {
        let mut groups = Vec::new();
        let now = self.clock.now_unix();
        for group in self.tools.policy().named_groups() {
            if self.approvals.members(self.slack.as_ref(), group, now).await.contains(&turn.user) {
                groups.push(group.to_owned());
            }
        }
        Asker {
            channel: turn.thread.channel.clone(),
            user: Some(turn.user.clone()),
            groups,
            turn: Some(turn.id.clone()),
            thread: Some(turn.thread.clone()),
            membership: turn.membership,
        }
    }

    /// One model call and the tools it asks for, applied to `turn` in memory.
    pub(crate) async fn step(
        &self,
        turn: &mut Turn,
        stream: &mut AnswerStream<'_>,
        bodies: &mut FileBodies,
    ) -> Result<(), WorkerError> {
        // The tools this person may use here: a tool outside their rules is
        // neither offered nor run.
        if let Some(answer) = self.guard_question(turn).await? {
            let answer = crate::metric_charts::finish(turn, answer);
            turn.settle(answer, TurnStatus::Answered, self.clock.now_unix());
            return Ok(());
        }
        let asker = self.asker(turn).await;
        crate::thread_files::load_bodies(self.artifacts.as_ref(), &turn.transcript, bodies)
            .await
            .map_err(WorkerError::Artifacts)?;
        let bodies = &*bodies;
        let mut tools = self.tools.advertised(&asker);
        // Offered only to a turn with text files, or results shown in
        // part, to read.
        if turn.text_files.is_empty() {
            tools.retain(|tool| tool.name != tools_registry::READ_ATTACHMENT);
        }
        // Offered with the metrics tool, and charts on.
        if turn.charts_off || !tools.iter().any(|tool| tool.name == tools_registry::METRICS_TOOL) {
            tools.retain(|tool| tool.name != tools_registry::CHART_RESULT);
        }
        if !has_stored_results(turn) {
            tools.retain(|tool| tool.name != tools_registry::READ_RESULT);
        }
        let system = match &turn.channel_context {
            Some(where_) => format!("{}\n\n{where_}", self.system_prompt),
            None => self.system_prompt.clone(),
        };
        let request = ModelRequest {
            system: &system,
            tools: &tools,
            messages: &turn.transcript,
            max_tokens: self.limits.max_output_tokens,
            cache_conversation: turn.steps > 0,
            force_tool: None,
            files: bodies,
        };
        let reply = self.model.converse_streaming(request, stream).await;
        stream.step_done().await;
        let reply = match reply {
            Ok(reply) => reply,
            Err(err) if err.is_retryable() || matches!(err, ModelError::Malformed(_)) => {
                // SQS redelivers; after its maximum receives the message goes
                // to the dead-letter queue and the user is told.
                return Err(WorkerError::Model(err));
            }
            Err(err) => {
                warn!(error = %err, "model refused the request: turn failed");
                turn.settle(FAILURE.to_owned(), TurnStatus::Failed, self.clock.now_unix());
                return Ok(());
            }
        };
        // What the model wrote is redacted before the turn keeps it (the
        // transcript, the answer): a secret it read or made up is stored
        // nowhere, as it is posted nowhere.
        let mut reply = reply;
        for content in &mut reply.message.content {
            if let Content::Text(text) = content
                && let std::borrow::Cow::Owned(redacted) = redact::redact(text)
            {
                *text = redacted;
            }
        }
        turn.steps += 1;
        Span::current().record("step", turn.steps);
        turn.usage += reply.usage;
        turn.updated_at = self.clock.now_unix();
        let calls: Vec<ToolUse> = reply.message.tool_uses().cloned().collect();
        info!(stop = ?reply.stop_reason, tool_calls = calls.len(), "model step");

        match reply.stop_reason {
            StopReason::ToolUse if !calls.is_empty() => {
                turn.transcript.push(reply.message);
                // Only the calls that will run may ask for a sign-in; the
                // waiting step keeps them all (dispatch answers the rest).
                let within = &calls[..calls.len().min(MAX_TOOL_CALLS_PER_STEP)];
                match self.access_for(turn, &asker, within).await {
                    Ok(access) => self.dispatch(turn, calls, &asker, access, stream).await?,
                    Err(mut pending) => {
                        pending.calls = calls;
                        info!(provider = %pending.provider, "the step acts as the person, who must sign in first");
                        turn.status = TurnStatus::AwaitingSignIn;
                        turn.pending_sign_in = Some(pending);
                    }
                }
            }
            StopReason::Refused => {
                let answer = crate::metric_charts::finish(turn, REFUSAL.to_owned());
                turn.settle(answer, TurnStatus::Answered, turn.updated_at);
            }
            StopReason::MaxTokens => {
                let text = turn.with_narration(&reply.message.text());
                let answer = format!("{text}\n\n_(My answer was cut off at the length limit.)_");
                let answer = self.guard_answer(turn, answer.trim_start().to_owned()).await?;
                let answer = crate::metric_charts::finish(turn, answer);
                turn.settle(answer, TurnStatus::Answered, turn.updated_at);
            }
            _ => {
                let text = reply.message.text();
                turn.transcript.push(reply.message);
                let text = if text.trim().is_empty() { String::new() } else { text };
                let mut answer = turn.with_narration(&text);
                if let Some(sources) = streaming::sources_line(&turn.transcript, &answer).filter(|_| !answer.is_empty())
                {
                    // Streamed too, so the stream stays the whole answer.
                    stream.text(&sources).await;
                    stream.step_done().await;
                    answer = format!("{answer}\n\n{sources}");
                }
                let answer = if answer.trim().is_empty() { "I have nothing to add.".to_owned() } else { answer };
                let answer = self.guard_answer(turn, answer).await?;
                let answer = crate::metric_charts::finish(turn, answer);
                turn.settle(answer, TurnStatus::Answered, turn.updated_at);
            }
        }
        Ok(())
    }

    /// Whether the thread was already told the turn failed (an apology, or
    /// Slack refusing the bot): then nothing more is to happen in it.
    pub(crate) async fn thread_told_failed(&self, id: &TurnId) -> Result<bool, WorkerError> {
        let record = self.deliveries.load(id).await?;
        Ok(record.settled.is_some_and(|settled| settled.is_failure()))
    }
}
