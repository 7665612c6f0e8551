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

use crate::context;
use crate::messages::{ApprovalClick, Continuation, Decision, ReplyMessage, TurnRequest, WorkMessage};
use crate::model::{Model, ModelError, ModelRequest, StopReason};
use crate::offload;
use crate::ports::{ArtifactStore, PortError, ReplyQueue, SlackReader, StoreError, TurnStore, WorkQueue};
use crate::tools::{Effect, ToolRegistry};
use crate::turn::{
    Content, Message, PendingApproval, Role, ToolOutput, ToolResult, ToolStatus, ToolUse, Turn, TurnId, TurnStatus,
};
use crate::{Clock, Created};
use std::time::Duration;
use tracing::{info, warn};

/// What one turn may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Model calls per turn; at the limit the turn ends with a partial
    /// answer that says so.
    pub max_steps: u32,
    /// Output tokens per model call.
    pub max_output_tokens: u32,
    /// Input + output tokens over the whole turn.
    pub max_turn_tokens: u64,
    /// Time one step may need (a model call and the slowest tool); with less
    /// left in the invocation the turn continues in the next one.
    pub step_time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_steps: 10, max_output_tokens: 4096, max_turn_tokens: 400_000, step_time: Duration::from_secs(90) }
    }
}

/// How long the current invocation has left (the Lambda context's deadline).
pub trait Deadline: Send + Sync {
    fn time_left(&self) -> Duration;
}

/// How a message was handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The turn is settled (answered or failed) and its delivery requested.
    Settled { id: TurnId, status: TurnStatus, steps: u32 },
    /// Waiting for a human to approve a tool call; the prompt is requested.
    AwaitingApproval { id: TurnId },
    /// Out of time: a continuation is queued.
    Continued { id: TurnId, after_step: u32 },
    /// Another worker saved this turn first; it carries on from there.
    Superseded { id: TurnId },
    /// Nothing to do: a click or continuation for a turn that is not
    /// waiting for it (stale, duplicate or unknown).
    Ignored { reason: &'static str },
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The model is throttled or down: retry the message later.
    #[error(transparent)]
    Model(ModelError),
    #[error(transparent)]
    Store(StoreError),
    #[error(transparent)]
    Queue(PortError),
    #[error(transparent)]
    Artifacts(PortError),
}

impl WorkerError {
    /// Whether redelivering the message may succeed (otherwise it belongs in
    /// the dead-letter queue).
    pub fn is_retryable(&self) -> bool {
        match self {
            WorkerError::Model(err) => err.is_retryable(),
            WorkerError::Store(StoreError::TooLarge { .. }) => false,
            WorkerError::Store(_) | WorkerError::Queue(_) | WorkerError::Artifacts(_) => true,
        }
    }
}

impl From<StoreError> for WorkerError {
    fn from(err: StoreError) -> Self {
        WorkerError::Store(err)
    }
}

pub const REFUSAL: &str = "Sorry, I can't help with that request.";
pub const FAILURE: &str = "Sorry, I couldn't answer this: the model refused the request. Please rephrase it or ask an admin to check the bot's configuration.";

pub struct Worker<S, M, W, R, A, H, K> {
    pub store: S,
    pub model: M,
    pub work: W,
    pub replies: R,
    pub artifacts: A,
    pub slack: H,
    pub tools: ToolRegistry,
    pub clock: K,
    pub system_prompt: String,
    pub limits: Limits,
}

impl<S, M, W, R, A, H, K> Worker<S, M, W, R, A, H, K>
where
    S: TurnStore,
    M: Model,
    W: WorkQueue,
    R: ReplyQueue,
    A: ArtifactStore,
    H: SlackReader,
    K: Clock,
{
    pub async fn handle(&self, message: &WorkMessage, deadline: &impl Deadline) -> Result<Outcome, WorkerError> {
        match message {
            WorkMessage::StartTurn(request) => self.start(request, deadline).await,
            WorkMessage::Continue(continuation) => self.resume(continuation, deadline).await,
            WorkMessage::Approval(click) => self.decide(click, deadline).await,
        }
    }

    async fn start(&self, request: &TurnRequest, deadline: &impl Deadline) -> Result<Outcome, WorkerError> {
        // On a redelivery this history read is wasted: `create` then returns
        // the stored turn. Rare, and cheaper than a read before every create.
        let (channel, history) = tokio::join!(
            self.slack.channel_info(&request.thread.channel),
            self.slack.thread_history(&request.thread, request.bot_user.as_ref(), context::HISTORY_LIMIT),
        );
        let history = history.unwrap_or_else(|err| {
            warn!(event_id = %request.event_id, error = %err, "thread history unavailable: answering from the question alone");
            Vec::new()
        });
        let mut turn = Turn::start(request, self.clock.now_unix());
        turn.transcript = context::opening(&history, request);
        match channel {
            Ok(info) => turn.channel_context = Some(context::channel_context(&info)),
            Err(err) => warn!(event_id = %request.event_id, error = %err, "channel info unavailable"),
        }
        match self.store.create(&mut turn).await? {
            Created::New => {
                info!(turn_id = %turn.id, event_id = %turn.event_id, "turn started");
                self.show_progress(&turn, THINKING.to_owned()).await;
            }
            Created::Existing(stored) => {
                info!(turn_id = %stored.id, step = stored.steps, "turn already stored: resuming");
                turn = *stored;
            }
        }
        self.run(turn, deadline).await
    }

    async fn resume(&self, continuation: &Continuation, deadline: &impl Deadline) -> Result<Outcome, WorkerError> {
        match self.store.load(&continuation.turn_id).await? {
            Some(turn) => self.run(turn, deadline).await,
            None => {
                warn!(turn_id = %continuation.turn_id, "continuation for a turn that does not exist");
                Ok(Outcome::Ignored { reason: "unknown_turn" })
            }
        }
    }

    /// Applies an Approve or Deny click to the call it was for.
    async fn decide(&self, click: &ApprovalClick, deadline: &impl Deadline) -> Result<Outcome, WorkerError> {
        let Some((turn_id, tool_use_id)) = click.target() else {
            warn!(value = %click.value, "approval click with an unreadable value");
            return Ok(Outcome::Ignored { reason: "unreadable_approval" });
        };
        let Some(mut turn) = self.store.load(&turn_id).await? else {
            return Ok(Outcome::Ignored { reason: "unknown_turn" });
        };
        let Some(pending) = turn.pending_approval.as_mut() else {
            return Ok(Outcome::Ignored { reason: "not_awaiting_approval" });
        };
        let Some(index) = pending.waiting.iter().position(|call| call.id == tool_use_id) else {
            return Ok(Outcome::Ignored { reason: "already_decided" });
        };
        let call = pending.waiting.remove(index);
        info!(turn_id = %turn.id, tool = %call.name, decision = ?click.decision, user = %click.user, "approval decided");
        let decided = ReplyMessage::ApprovalDecided {
            turn_id: turn.id.clone(),
            thread: turn.thread.clone(),
            tool_use: call.clone(),
            decision: click.decision,
            user: click.user.clone(),
        };

        let mut result = match click.decision {
            Decision::Approve => self.tools.run(&call, &turn.thread.channel).await,
            Decision::Deny => ToolResult {
                tool_use_id: call.id.clone(),
                status: ToolStatus::Error,
                output: ToolOutput::Text(format!("{} denied this action; do not retry it.", click.user)),
            },
        };
        offload::offload_large(&self.artifacts, &turn.id, std::slice::from_mut(&mut result))
            .await
            .map_err(WorkerError::Artifacts)?;
        let pending = turn.pending_approval.as_mut().expect("checked above");
        pending.completed.push(result);
        if pending.waiting.is_empty() {
            let pending = turn.pending_approval.take().expect("checked above");
            let results = in_call_order(&turn, pending.completed);
            turn.transcript.push(Message { role: Role::User, content: results });
            turn.status = TurnStatus::Running;
        }
        turn.updated_at = self.clock.now_unix();
        match self.save(&mut turn).await {
            Ok(()) => {
                // The prompt's update is for people; the decision stands
                // without it.
                if let Err(err) = self.replies.send(&decided).await {
                    warn!(turn_id = %turn.id, error = %err, "approval prompt not updated");
                }
                self.run(turn, deadline).await
            }
            Err(StoreError::Conflict { id, .. }) => Ok(Outcome::Superseded { id }),
            Err(err) => Err(err.into()),
        }
    }

    /// Steps the turn until it settles, waits for a human, or runs out of
    /// time; each step ends in one conditional save.
    async fn run(&self, mut turn: Turn, deadline: &impl Deadline) -> Result<Outcome, WorkerError> {
        // At least one step per invocation, so the turn always progresses
        // (even if the function's timeout is set shorter than a step).
        let mut stepped_here = false;
        loop {
            match turn.status {
                TurnStatus::Answered | TurnStatus::Failed => {
                    let reply = ReplyMessage::Deliver { turn_id: turn.id.clone(), thread: turn.thread.clone() };
                    self.replies.send(&reply).await.map_err(WorkerError::Queue)?;
                    return Ok(Outcome::Settled { id: turn.id, status: turn.status, steps: turn.steps });
                }
                TurnStatus::Delivered => {
                    return Ok(Outcome::Settled { id: turn.id, status: turn.status, steps: turn.steps });
                }
                TurnStatus::AwaitingApproval => {
                    let waiting = turn.pending_approval.as_ref().and_then(|pending| pending.waiting.first());
                    if let Some(call) = waiting {
                        let prompt = ReplyMessage::ApprovalPrompt {
                            turn_id: turn.id.clone(),
                            thread: turn.thread.clone(),
                            tool_use: call.clone(),
                        };
                        self.replies.send(&prompt).await.map_err(WorkerError::Queue)?;
                    }
                    return Ok(Outcome::AwaitingApproval { id: turn.id });
                }
                TurnStatus::Running => {}
            }

            let now = self.clock.now_unix();
            if turn.steps >= self.limits.max_steps {
                let answer = partial_answer(&turn, "the step limit");
                turn.settle(answer, TurnStatus::Answered, now);
            } else if turn.usage.input_tokens + turn.usage.output_tokens >= self.limits.max_turn_tokens {
                let answer = partial_answer(&turn, "the token budget");
                turn.settle(answer, TurnStatus::Answered, now);
            } else if stepped_here && deadline.time_left() < self.limits.step_time {
                let continuation =
                    Continuation { turn_id: turn.id.clone(), thread: turn.thread.clone(), after_step: turn.steps };
                self.work.enqueue(&WorkMessage::Continue(continuation)).await.map_err(WorkerError::Queue)?;
                info!(turn_id = %turn.id, step = turn.steps, "out of time: continuation queued");
                return Ok(Outcome::Continued { id: turn.id, after_step: turn.steps });
            } else {
                self.step(&mut turn).await?;
                stepped_here = true;
            }

            match self.save(&mut turn).await {
                Ok(()) => {}
                Err(StoreError::Conflict { id, .. }) => {
                    warn!(turn_id = %id, "another worker saved this turn first: stopping");
                    return Ok(Outcome::Superseded { id });
                }
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// Asks the responder to show what the turn is doing. Best effort: a
    /// status line is not worth failing (and repeating) a step for.
    async fn show_progress(&self, turn: &Turn, text: String) {
        let progress =
            ReplyMessage::Progress { turn_id: turn.id.clone(), thread: turn.thread.clone(), step: turn.steps, text };
        if let Err(err) = self.replies.send(&progress).await {
            warn!(turn_id = %turn.id, step = turn.steps, error = %err, "progress not sent");
        }
    }

    /// One conditional save. A state grown past the item limit is compacted
    /// (older tool results moved to the artifact store) and saved again, so
    /// the usual save serializes the turn once.
    async fn save(&self, turn: &mut Turn) -> Result<(), StoreError> {
        match self.store.save(turn).await {
            Err(StoreError::TooLarge { bytes, .. }) => {
                info!(turn_id = %turn.id, bytes, "turn state over the item limit: compacting");
                offload::compact(&self.artifacts, turn).await?;
                self.store.save(turn).await
            }
            other => other,
        }
    }

    /// One model call and the tools it asks for, applied to `turn` in memory.
    async fn step(&self, turn: &mut Turn) -> Result<(), WorkerError> {
        let channel = turn.thread.channel.clone();
        let tools = self.tools.advertised(&channel);
        let system = match &turn.channel_context {
            Some(where_) => format!("{}\n\n{where_}", self.system_prompt),
            None => self.system_prompt.clone(),
        };
        let request = ModelRequest {
            system: &system,
            tools: &tools,
            messages: &turn.transcript,
            max_tokens: self.limits.max_output_tokens,
        };
        let reply = match self.model.converse(request).await {
            Ok(reply) => reply,
            Err(err) if err.is_retryable() || matches!(err, ModelError::Malformed(_)) => {
                // SQS redelivers; after its maximum receives the message goes
                // to the dead-letter queue and the user is told.
                return Err(WorkerError::Model(err));
            }
            Err(err) => {
                warn!(turn_id = %turn.id, error = %err, "model refused the request: turn failed");
                turn.settle(FAILURE.to_owned(), TurnStatus::Failed, self.clock.now_unix());
                return Ok(());
            }
        };
        turn.steps += 1;
        turn.usage += reply.usage;
        turn.updated_at = self.clock.now_unix();
        let calls: Vec<ToolUse> = reply.message.tool_uses().cloned().collect();
        info!(turn_id = %turn.id, step = turn.steps, stop = ?reply.stop_reason, tool_calls = calls.len(), "model step");

        match reply.stop_reason {
            StopReason::ToolUse if !calls.is_empty() => {
                self.show_progress(turn, running(&calls)).await;
                turn.transcript.push(reply.message);
                let (held, now): (Vec<&ToolUse>, Vec<&ToolUse>) = calls
                    .iter()
                    .partition(|call| self.tools.effect(&channel, &call.name) == Some(Effect::ChangesThings));
                let mut results = self.tools.run_all(&now, &channel).await;
                offload::offload_large(&self.artifacts, &turn.id, &mut results)
                    .await
                    .map_err(WorkerError::Artifacts)?;
                if held.is_empty() {
                    turn.transcript.push(Message {
                        role: Role::User,
                        content: results.into_iter().map(Content::ToolResult).collect(),
                    });
                } else {
                    turn.status = TurnStatus::AwaitingApproval;
                    turn.pending_approval = Some(PendingApproval {
                        waiting: held.into_iter().cloned().collect(),
                        completed: results,
                        asked_at: self.clock.now_unix(),
                    });
                }
            }
            StopReason::Refused => turn.settle(REFUSAL.to_owned(), TurnStatus::Answered, turn.updated_at),
            StopReason::MaxTokens => {
                let text = reply.message.text();
                let answer = format!("{text}\n\n_(My answer was cut off at the length limit.)_");
                turn.settle(answer.trim_start().to_owned(), TurnStatus::Answered, turn.updated_at);
            }
            _ => {
                let text = reply.message.text();
                turn.transcript.push(reply.message);
                let answer = if text.trim().is_empty() { "I have nothing to add.".to_owned() } else { text };
                turn.settle(answer, TurnStatus::Answered, turn.updated_at);
            }
        }
        Ok(())
    }
}

/// The thread's status line while the first model call runs.
pub const THINKING: &str = "is thinking…";

/// The status line while a step's tools run.
fn running(calls: &[ToolUse]) -> String {
    let mut names: Vec<&str> = calls.iter().map(|call| call.name.as_str()).collect();
    names.dedup();
    format!("is running {}…", names.join(", "))
}

/// Tool results ordered as the model asked for them.
fn in_call_order(turn: &Turn, mut results: Vec<ToolResult>) -> Vec<Content> {
    let order: Vec<&str> = turn
        .transcript
        .last()
        .map(|message| message.tool_uses().map(|call| call.id.as_str()).collect())
        .unwrap_or_default();
    results.sort_by_key(|result| order.iter().position(|id| *id == result.tool_use_id).unwrap_or(usize::MAX));
    results.into_iter().map(Content::ToolResult).collect()
}

/// An honest answer for a turn stopped before the model finished: what
/// was tried, and the last thing the model said.
fn partial_answer(turn: &Turn, limit: &str) -> String {
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

    let mut answer = format!("I stopped before finishing: this question reached {limit} ({} steps).", turn.steps);
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
