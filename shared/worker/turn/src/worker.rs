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
//! clicker may decide ([`crate::approvals`]); anyone else is told, only
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

use crate::answer_files::{self, ATTACH_RESULT};
use crate::approvals::{Approvals, Verdict};
use crate::context;
use crate::offload;
use crate::streaming::{self, AnswerStream};
use assistant_core::Clock;
use assistant_core::approval::Approver;
use assistant_core::feedback::{FeedbackLog, Rated};
use assistant_core::grants::{ThreadGrant, ThreadGrants};
use assistant_core::messages::{
    ApprovalClick, ApprovalTimeout, Continuation, Decision, FeedbackClick, GrantRevoke, Opened, ReplyMessage,
    TurnRequest, WorkMessage,
};
use assistant_core::model::{FileBodies, Model, ModelError, ModelRequest, StopReason, TextSink};
use assistant_core::ports::{
    AgentSlack, ApprovalTimer, ApprovalTimers, ArtifactStore, Created, DeliveryLog, PortError, ReplyQueue, SlackFiles,
    SlackReader, StoreError, SuggestedPrompt, TurnStore, UserContexts, WorkQueue,
};
use assistant_core::pricing::ModelPrices;
use assistant_core::store::StreamLog;
use assistant_core::telemetry::{EnhancerReport, LimitHit, TurnMetrics, TurnReport};
use assistant_core::turn::{
    ActionRecord, Content, GrantUse, Message, PendingApproval, Role, ToolOutput, ToolResult, ToolStatus, ToolUse, Turn,
    TurnId, TurnStatus,
};
use std::sync::Arc;
use std::time::Duration;
use tools_registry::{ApprovalRule, Asker, Effect, ToolRegistry};
use tracing::{Instrument, Span, field, info, info_span, warn};

mod acting_as;
use acting_as::StepAccess;

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
    /// Time one step may need: its model call, the slowest tool, the saves.
    /// With less left in the invocation, the turn continues in the next one.
    pub step_time: Duration,
}

/// The most one model call may take, retries and its stream included: the
/// Bedrock client's operation timeout (`functions/worker`), which the
/// adapter also holds every read of a streamed reply to
/// (`adapters_bedrock::StreamLimits`: the SDK stops timing at a stream's
/// first response).
pub const MODEL_CALL_TIME: Duration = Duration::from_secs(150);
/// What a step needs besides its model call and its tools (saves, status).
const STEP_OVERHEAD: Duration = Duration::from_secs(15);
/// The most tool calls one model step runs: a reply asking for hundreds
/// (a model steered by what it read, or looping) runs this many, and each
/// call past it is answered with an error the model reads.
pub const MAX_TOOL_CALLS_PER_STEP: usize = 20;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_steps: 10,
            max_output_tokens: 4096,
            max_turn_tokens: 400_000,
            step_time: MODEL_CALL_TIME + tools_registry::MAX_TOOL_TIME + STEP_OVERHEAD,
        }
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
    /// waiting for it (stale, duplicate, unknown, or already told failed).
    Ignored { reason: &'static str },
    /// A DM was opened: its suggested prompts are set.
    PromptsSet,
    /// A rating of an answer is kept.
    FeedbackKept { id: TurnId },
    /// A thread grant ended on a person's click.
    GrantRevoked,
    /// Waiting for the person who asked to connect a provider; only they
    /// were sent a Connect button.
    AwaitingSignIn { id: TurnId },
    /// The person connected; the turn no longer waited for it.
    SignedIn { id: TurnId },
    /// Someone clicked another person's Connect button: it is burned.
    ConnectRefused,
    /// A person's Home tab was shown (after a disconnect, if asked).
    HomeShown,
    /// An alert was handled: its incident as it now stands, or why not.
    Incident(worker_incidents::Handled),
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
    #[error(transparent)]
    Timers(PortError),
    #[error(transparent)]
    Feedback(PortError),
    #[error(transparent)]
    Grants(PortError),
    /// The sign-in store or the provider failed: retry.
    #[error(transparent)]
    SignIn(PortError),
    /// Slack failed setting prompts; a refusal is not an error.
    #[error(transparent)]
    Slack(assistant_core::delivery::PostError),
    /// An alert's incident could not be recorded or posted.
    #[error(transparent)]
    Incident(worker_incidents::DeskError),
    /// A message no redelivery can mend (an event that is not what its
    /// kind says).
    #[error("malformed message: {0}")]
    Malformed(String),
}

impl assistant_core::Retryable for WorkerError {
    fn is_retryable(&self) -> bool {
        WorkerError::is_retryable(self)
    }
}

impl WorkerError {
    /// Whether redelivering the message may succeed (otherwise it belongs in
    /// the dead-letter queue).
    pub fn is_retryable(&self) -> bool {
        match self {
            WorkerError::Model(err) => err.is_retryable(),
            WorkerError::Store(StoreError::TooLarge { .. }) => false,
            WorkerError::Store(_)
            | WorkerError::Queue(_)
            | WorkerError::Artifacts(_)
            | WorkerError::Timers(_)
            | WorkerError::Feedback(_)
            | WorkerError::Grants(_)
            | WorkerError::SignIn(_)
            | WorkerError::Slack(_) => true,
            WorkerError::Incident(err) => err.is_retryable(),
            WorkerError::Malformed(_) => false,
        }
    }

    /// What went wrong, for the person who asked.
    pub fn in_words(&self) -> &'static str {
        match self {
            WorkerError::Model(ModelError::Malformed(_)) => "the model's reply could not be read",
            WorkerError::Model(_) => "the model refused the request as it stands",
            WorkerError::Store(StoreError::TooLarge { .. }) => "this conversation grew larger than I can keep",
            WorkerError::Store(_) => "I could not save my progress",
            WorkerError::Queue(_) => "I could not hand on my work",
            WorkerError::Artifacts(_) => "I could not store a tool's result",
            WorkerError::Timers(_) => "I could not set an approval's deadline",
            WorkerError::Feedback(_) => "I could not keep a rating",
            WorkerError::Grants(_) => "I could not read or keep this thread's approvals",
            WorkerError::SignIn(_) => "I could not complete or use your sign-in",
            WorkerError::Slack(_) => "Slack could not be reached",
            WorkerError::Incident(_) => "I could not record or post an alert's incident",
            WorkerError::Malformed(_) => "a message I was sent could not be read",
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

/// The prompts shown when the configuration names none.
pub fn default_prompts() -> Vec<SuggestedPrompt> {
    let prompt = |title: &str, message: &str| SuggestedPrompt { title: title.into(), message: message.into() };
    vec![
        prompt("What can you do?", "What can you help me with, and which tools can you use here?"),
        prompt("Why is a service failing?", "Why is checkout-api failing in prod? Check its logs and recent deploys."),
        prompt("Find it in our docs", "Where do our runbooks say how to roll back a deploy?"),
    ]
}

/// The worker's loop and everything it talks to. Built by
/// `worker_config::assemble`, the same way in Lambda and in the local
/// runner.
pub struct Worker {
    pub store: Arc<dyn TurnStore>,
    /// Read only: the responder writes it.
    pub deliveries: Arc<dyn DeliveryLog>,
    pub model: Arc<dyn Model>,
    pub work: Arc<dyn WorkQueue>,
    pub replies: Arc<dyn ReplyQueue>,
    pub artifacts: Arc<dyn ArtifactStore>,
    pub slack: Arc<dyn SlackReader>,
    /// Files people paste in threads.
    pub files: Arc<dyn SlackFiles>,
    /// Approval deadlines (set and swept by the worker only).
    pub timers: Arc<dyn ApprovalTimers>,
    pub tools: ToolRegistry,
    pub approvals: Approvals,
    pub clock: Arc<dyn Clock>,
    pub system_prompt: String,
    pub limits: Limits,
    /// Where settled turns are reported, and the model's prices for their
    /// cost.
    pub metrics: Arc<dyn TurnMetrics>,
    pub prices: Option<ModelPrices>,
    /// Slack's agent surface: suggested prompts, thread titles, streamed
    /// answers.
    pub agent: Arc<dyn AgentSlack>,
    /// The worker's record of the answer it streamed, per turn.
    pub streams: StreamLog,
    /// People's ratings of answers.
    pub feedback: FeedbackLog,
    /// "Approve for this thread": tools a thread may run without a prompt.
    pub grants: ThreadGrants,
    /// What people have in view beside the DM (written by the ingress).
    pub contexts: Arc<dyn UserContexts>,
    /// Shown when a person opens the DM.
    pub suggested_prompts: Vec<SuggestedPrompt>,
    /// Channel globs that are the team's place for these questions: the
    /// model is told not to send people elsewhere there.
    pub home_channels: Vec<String>,
    /// When the bot speaks, per channel (`response_mode`).
    pub response_modes: Vec<assistant_core::response_modes::ResponseRule>,
    /// The cheap model's reading of the question, when configured.
    pub enhancer: Option<crate::enhancer::Enhancer>,
    /// Tools that exist nowhere in this worker, and why (inspection only).
    pub unoffered: Vec<tools_registry::Unoffered>,
    /// Per-user sign-in for tools that act as the person who asked; `None`
    /// where no tool does.
    pub sign_in: Option<worker_identity::sign_in::SignIn>,
    /// What the start began and nothing waits for.
    pub background: tools_registry::background::Background,
    /// The channels' memory of settled turns; `None`: nothing is kept.
    pub memory: Option<assistant_core::memory::ChannelMemory>,
    /// Alerts in, incidents and their threads out; `None` where the worker
    /// was given no incident ports (the evals).
    pub incidents: Option<worker_incidents::IncidentDesk>,
}

impl Worker {
    /// Handles one work message. An error that no redelivery can mend
    /// settles the turn as failed at once and tells the thread why (one
    /// delivery, not the queue's every receive).
    pub async fn handle(&self, message: &WorkMessage, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        let span = info_span!("turn", turn_id = field::Empty, event_id = field::Empty, step = field::Empty);
        // Boxed: the turn loop's future is tens of kilobytes, too much for
        // the stack of every caller that awaits a message's handling.
        match Box::pin(self.handle_in(message, deadline, span.clone())).await {
            Err(err) if !err.is_retryable() => self.fail_at_once(message, err).instrument(span).await,
            handled => handled,
        }
    }

    /// A turn that cannot succeed: saved as failed with the reason in
    /// words and its reference, and its delivery requested. When even that
    /// is impossible (no turn stored yet, the store refusing), the error
    /// stands and the message goes on to the dead-letter queue, whose
    /// apology the responder posts.
    async fn fail_at_once(&self, message: &WorkMessage, err: WorkerError) -> Result<Outcome, WorkerError> {
        let Some(turn_id) = message.turn_id() else { return Err(err) };
        let Ok(Some(mut turn)) = self.store.load(&turn_id).await else { return Err(err) };
        if !matches!(turn.status, TurnStatus::Running | TurnStatus::AwaitingApproval) {
            return Err(err);
        }
        tracing::error!(error = %err, "the turn cannot succeed: settled as failed");
        let answer = format!(
            "Sorry, I couldn't finish answering this: {}. Asking again won't help until that is fixed; give your \
             admin this reference: `{}`.",
            err.in_words(),
            turn.id.reference()
        );
        turn.pending_approval = None;
        turn.settle(answer, TurnStatus::Failed, self.clock.now_unix());
        match self.save(&mut turn).await {
            Ok(()) => {
                self.report(&turn, None);
                self.remember(&turn).await;
                let reply = ReplyMessage::Deliver { turn_id: turn.id.clone(), thread: turn.thread.clone() };
                self.replies.send(&reply).await.map_err(WorkerError::Queue)?;
                Ok(Outcome::Settled { id: turn.id, status: TurnStatus::Failed, steps: turn.steps })
            }
            Err(StoreError::Conflict { id, .. }) => Ok(Outcome::Superseded { id }),
            Err(_) => Err(err),
        }
    }

    async fn handle_in(
        &self,
        message: &WorkMessage,
        deadline: &dyn Deadline,
        span: Span,
    ) -> Result<Outcome, WorkerError> {
        match message {
            WorkMessage::StartTurn(request) => {
                span.record("turn_id", field::display(TurnId::for_event(&request.thread, &request.event_id)));
                span.record("event_id", field::display(&request.event_id));
                self.start(request, deadline).instrument(span).await
            }
            WorkMessage::Continue(continuation) => {
                span.record("turn_id", field::display(&continuation.turn_id));
                self.resume(continuation, deadline).instrument(span).await
            }
            WorkMessage::Approval(click) => {
                span.record("turn_id", field::display(&click.button.turn_id));
                self.decide(click, deadline).instrument(span).await
            }
            WorkMessage::ApprovalTimeout(timeout) => {
                span.record("turn_id", field::display(&timeout.turn_id));
                self.time_out(timeout, deadline).instrument(span).await
            }
            WorkMessage::Opened(opened) => {
                span.record("event_id", field::display(&opened.event_id));
                self.opened(opened).instrument(span).await
            }
            WorkMessage::Feedback(click) => {
                span.record("turn_id", field::display(&click.turn_id));
                self.rated(click).instrument(span).await
            }
            WorkMessage::RevokeGrant(click) => {
                span.record("turn_id", field::display(&click.button.turn_id));
                self.revoke_grant(click).instrument(span).await
            }
            WorkMessage::SignedIn(signed_in) => {
                span.record("turn_id", field::display(&signed_in.turn_id));
                self.signed_in(signed_in, deadline).instrument(span).await
            }
            WorkMessage::ConnectClick(click) => self.connect_clicked(click).instrument(span).await,
            WorkMessage::Home(home) => self.home(home).instrument(span).await,
            WorkMessage::Alert(notice) => self.alerted(notice).instrument(span).await,
            WorkMessage::CloudwatchAlarm(alarm) => match assistant_core::incidents::sources::cloudwatch(&alarm.event) {
                Ok(Some(notice)) => self.alerted(&notice).instrument(span).await,
                Ok(None) => Ok(Outcome::Ignored { reason: "alarm_state_not_an_alert" }),
                Err(err) => Err(WorkerError::Malformed(err.to_string())),
            },
        }
    }

    /// An alert: its incident opened, noted or closed in its channel
    /// ([`crate::incidents`]).
    async fn alerted(&self, notice: &assistant_core::incidents::AlertNotice) -> Result<Outcome, WorkerError> {
        let Some(desk) = &self.incidents else {
            warn!(source = %notice.source, "an alert reached a worker without an incident desk: dropped");
            return Ok(Outcome::Ignored { reason: "no_incident_desk" });
        };
        tracing::Span::current().record("event_id", field::display(&notice.delivery));
        desk.handle(notice).await.map(Outcome::Incident).map_err(WorkerError::Incident)
    }

    /// A person opened the DM (or an assistant thread): the suggested
    /// prompts, and no model call. Slack failing is retried by SQS; a
    /// refusal is logged.
    async fn opened(&self, opened: &Opened) -> Result<Outcome, WorkerError> {
        match self
            .agent
            .set_suggested_prompts(&opened.channel, opened.thread_ts.as_ref(), &self.suggested_prompts)
            .await
        {
            Ok(()) => {
                info!(user = %opened.user, prompts = self.suggested_prompts.len(), "suggested prompts set");
                Ok(Outcome::PromptsSet)
            }
            Err(assistant_core::delivery::PostError::Rejected { code }) => {
                warn!(code, "Slack refused the suggested prompts (is assistant:write granted?)");
                Ok(Outcome::Ignored { reason: "prompts_refused" })
            }
            Err(err) => Err(WorkerError::Slack(err)),
        }
    }

    /// 👍 / 👎 under an answer: kept by turn (who, which way, when; a
    /// second click replaces the first), counted, and acknowledged to the
    /// clicker alone. Starts no turn. Only an answer the thread got can be
    /// rated.
    async fn rated(&self, click: &FeedbackClick) -> Result<Outcome, WorkerError> {
        let (delivered, streamed) =
            tokio::join!(self.deliveries.load(&click.turn_id), self.streams.load(&click.turn_id));
        if !delivered?.has_answer() && streamed?.ts.is_none() {
            warn!(user = %click.user, "rating of an answer this bot did not give (stale or forged): not kept");
            return Ok(Outcome::Ignored { reason: "no_such_answer" });
        }
        let rated = Rated { rating: click.rating, at: self.clock.now_unix() };
        self.feedback.rate(&click.turn_id, &click.user, rated).await.map_err(WorkerError::Feedback)?;
        self.metrics.feedback(click.rating);
        info!(user = %click.user, rating = click.rating.as_str(), "answer rated");
        if let Some(memory) = &self.memory {
            let thread = &click.thread;
            let rated =
                memory.rate(&thread.team, &thread.channel, &thread.thread_ts, &click.turn_id, click.rating.as_str());
            if let Err(err) = rated.await {
                warn!(error = %err, "the rating is not in the channel's history");
            }
        }
        let noted = ReplyMessage::FeedbackNoted {
            turn_id: click.turn_id.clone(),
            thread: click.thread.clone(),
            user: click.user.clone(),
            rating: click.rating,
        };
        if let Err(err) = self.replies.send(&noted).await {
            warn!(error = %err, "the rater was not thanked");
        }
        Ok(Outcome::FeedbackKept { id: click.turn_id.clone() })
    }

    /// Whether the thread was already told the turn failed (an apology, or
    /// Slack refusing the bot): then nothing more is to happen in it.
    async fn thread_told_failed(&self, id: &TurnId) -> Result<bool, WorkerError> {
        let record = self.deliveries.load(id).await?;
        Ok(record.settled.is_some_and(|settled| settled.is_failure()))
    }

    /// Why the channel's `response_mode` leaves this message unanswered,
    /// if it does. DMs are always answered. The ingress starts a turn for
    /// a message that names no one only in a bot's thread or (from what
    /// workers published, up to a minute old) in an `every_question`
    /// channel: this is the check with the configuration itself.
    fn unanswered(&self, request: &TurnRequest) -> Option<&'static str> {
        use assistant_core::response_modes::{self, ResponseMode};
        let channel = request.thread.channel.as_str();
        if channel.starts_with('D') {
            return None;
        }
        let mentioned = request.bot_user.as_ref().is_none_or(|bot| request.text.contains(&format!("<@{bot}>")));
        let top_level = request.message_ts == request.thread.thread_ts;
        match response_modes::mode_in(&self.response_modes, channel) {
            ResponseMode::MentionsOnly if !mentioned => Some("mentions_only"),
            ResponseMode::ThreadReplies | ResponseMode::MentionsOnly if top_level && !mentioned => {
                Some("not_addressed")
            }
            _ => None,
        }
    }

    async fn start(&self, request: &TurnRequest, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        if let Some(reason) = self.unanswered(request) {
            info!(reason, channel = %request.thread.channel, "not answered: the channel's response_mode");
            return Ok(Outcome::Ignored { reason });
        }
        // On a redelivery this history read (and the enhancer's call) is
        // wasted: `create` then returns the stored turn. Rare, and cheaper
        // than a read before every create.
        let in_dm = request.thread.channel.as_str().starts_with('D');
        // A message without words (a greeting is asked for) has nothing to read.
        let enhance = async {
            match &self.enhancer {
                Some(enhancer) if !request.text.trim().is_empty() => Some(enhancer.run(&request.text).await),
                _ => None,
            }
        };
        let (channel, history, seen, enhanced) = tokio::join!(
            self.slack.channel_info(&request.thread.channel),
            self.slack.thread_history(&request.thread, request.bot_user.as_ref(), context::HISTORY_LIMIT),
            self.channel_in_view(request, in_dm),
            enhance,
        );
        let mut turn = Turn::start(request, self.clock.now_unix());
        let history = history
            .inspect_err(|err| warn!(error = %err, "thread history unavailable: answering from the question alone"));
        turn.transcript = match &history {
            Ok(history) => context::opening(history, request),
            // Rate limited (Slack's one read a minute for apps outside its
            // Marketplace), or down: the answer says what it could not see.
            Err(_) => context::opening_unread(request),
        };
        let thread_so_far = history.as_deref().unwrap_or_default();
        let files =
            crate::thread_files::read(self.files.as_ref(), self.artifacts.as_ref(), &turn.id, request, thread_so_far)
                .await
                .map_err(WorkerError::Artifacts)?;
        context::attach_files(&mut turn.transcript, files.content);
        turn.text_files = files.text_files;
        if let Some((block, run)) = enhanced {
            if let Some(block) = block {
                crate::enhancer::attach(&mut turn.transcript, block);
            }
            turn.enhancer = Some(run);
        }
        let channel = channel
            .inspect_err(|err| warn!(error = %err, "channel info unavailable"))
            .ok()
            .map(|info| context::channel_context(&info));
        let viewing = request.context_channel.clone().or(seen).as_ref().map(context::viewing_context);
        let home = self
            .home_channels
            .iter()
            .any(|glob| tools_registry::glob_matches(glob, request.thread.channel.as_str()))
            .then(|| context::HOME_CHANNEL.to_owned());
        let lines: Vec<String> = [channel, viewing, home].into_iter().flatten().collect();
        turn.channel_context = (!lines.is_empty()).then(|| lines.join(" "));
        match self.store.create(&mut turn).await? {
            Created::New => {
                info!("turn started");
                turn.metered.dynamodb_write_units += write_units(&turn);
                let opens_dm_thread = in_dm && request.message_ts == request.thread.thread_ts;
                tokio::join!(self.show_progress(&turn, THINKING.to_owned()), async {
                    if opens_dm_thread {
                        self.title(&turn.thread, &request.text).await;
                    }
                });
                turn.metered.sqs_requests += 1;
                turn.first_status_ms = Some(turn.since_asked_ms(self.clock.now_millis()));
            }
            Created::Existing(stored) => {
                // A redelivery, or Slack's retry of the question: the turn
                // goes on where it is, unless its thread was told it failed.
                if self.thread_told_failed(&stored.id).await? {
                    info!("start of a turn whose thread was told it failed: nothing to do");
                    return Ok(Outcome::Ignored { reason: "thread_told_failed" });
                }
                info!(step = stored.steps, "turn already stored: resuming");
                turn = *stored;
            }
        }
        self.run(turn, deadline).await
    }

    /// The channel a person had in view beside the DM, as the ingress
    /// remembered it (DMs only: in a channel, the channel is the context).
    async fn channel_in_view(&self, request: &TurnRequest, in_dm: bool) -> Option<slack::ChannelId> {
        if !in_dm || request.context_channel.is_some() {
            return None;
        }
        match self.contexts.recall(&request.thread.team, &request.user, self.clock.now_unix()).await {
            Ok(seen) => seen.and_then(|seen| seen.channel),
            Err(err) => {
                warn!(error = %err, "what the person has in view is unknown");
                None
            }
        }
    }

    /// A DM thread's title, from its question (no model call), redacted
    /// like everything the bot sends. Best effort.
    async fn title(&self, thread: &assistant_core::ThreadRef, question: &str) {
        let title = context::thread_title(&redact::redact(question));
        if title.is_empty() {
            return;
        }
        if let Err(err) = self.agent.set_title(thread, &title).await {
            info!(error = %err, "thread title not set");
        }
    }

    async fn resume(&self, continuation: &Continuation, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        let Some(mut turn) = self.store.load(&continuation.turn_id).await? else {
            warn!("continuation for a turn that does not exist");
            return Ok(Outcome::Ignored { reason: "unknown_turn" });
        };
        if self.thread_told_failed(&turn.id).await? {
            info!("continuation for a turn whose thread was told it failed: nothing to do");
            return Ok(Outcome::Ignored { reason: "thread_told_failed" });
        }
        turn.metered.dynamodb_read_units += read_units(&turn);
        self.run(turn, deadline).await
    }

    /// Applies an Approve or Deny click to the call its button names, if
    /// the clicker may decide on it. See the module's approval rules.
    async fn decide(&self, click: &ApprovalClick, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        let Some(mut turn) = self.store.load(&click.button.turn_id).await? else {
            return Ok(Outcome::Ignored { reason: "unknown_turn" });
        };
        turn.metered.dynamodb_read_units += read_units(&turn);
        if self.thread_told_failed(&turn.id).await? {
            info!(user = %click.user, "click on a turn whose thread was told it failed: nothing runs");
            return Ok(Outcome::Ignored { reason: "thread_told_failed" });
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
    async fn answer_late_click(&self, turn: &Turn, click: &ApprovalClick, tell: bool) {
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

    /// Makes an approved call at most once: recorded as running (with who
    /// let it run) and saved before it is made, so a delivery that finds it
    /// running never makes it again; its result joins the step's. `Some`:
    /// another worker saved the turn first, and nothing was called.
    async fn make_approved_call(
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
        offload::offload_large(self.artifacts.as_ref(), &turn.id, std::slice::from_mut(&mut result))
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
    async fn grant_for_next(&self, turn: &Turn, asker: &Asker) -> Option<(ToolUse, ThreadGrant)> {
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
    async fn run_under_grant(
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

    /// A Revoke click under a grant's notice: the grant ends if the clicker
    /// gave it or may approve its tools; anyone else is told, only them.
    async fn revoke_grant(&self, click: &GrantRevoke) -> Result<Outcome, WorkerError> {
        let scope = &click.button.scope;
        let now = click.action_ts.unix_secs().unwrap_or_else(|| self.clock.now_unix());
        let for_user = click.button.for_user.as_ref();
        let found = self
            .grants
            .revocable(&click.thread, scope, for_user, &click.user, now)
            .await
            .map_err(WorkerError::Grants)?;
        let Some(grant) = found else {
            info!(scope = %scope, user = %click.user, "revoke of a grant not in force: nothing to do");
            return Ok(Outcome::Ignored { reason: "no_grant" });
        };
        let approvers = self.approvals.approvers_for(self.tools.rule_for_scope(scope));
        let may = click.user == grant.granted_by
            || self.approvals.names(self.slack.as_ref(), &click.user, approvers, self.clock.now_unix()).await;
        if !may {
            warn!(scope = %scope, user = %click.user, "revoke by someone who may not: the grant stands");
            let refused = ReplyMessage::RevokeRefused {
                turn_id: click.button.turn_id.clone(),
                thread: click.thread.clone(),
                user: click.user.clone(),
                scope: scope.clone(),
            };
            if let Err(err) = self.replies.send(&refused).await {
                warn!(error = %err, "the refused clicker was not told why");
            }
            return Ok(Outcome::Ignored { reason: "not_an_approver" });
        }
        let revoked = self.grants.revoke(&click.thread, grant, &click.user, now).await.map_err(WorkerError::Grants)?;
        info!(scope = %scope, user = %click.user, granted_by = %revoked.granted_by, "thread grant revoked");
        let told = ReplyMessage::GrantRevoked {
            turn_id: click.button.turn_id.clone(),
            thread: click.thread.clone(),
            grant: revoked,
            user: click.user.clone(),
        };
        self.replies.send(&told).await.map_err(WorkerError::Queue)?;
        Ok(Outcome::GrantRevoked)
    }

    /// A call that waited too long: the model reads that it was not
    /// approved in time, the prompt says so, and the turn goes on.
    async fn expire(&self, mut turn: Turn, tool_use_id: &str, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        let pending = turn.pending_approval.as_mut().expect("a turn awaiting approval has a pending approval");
        let Some(index) = pending.waiting.iter().position(|call| call.id == tool_use_id) else {
            return Ok(Outcome::Ignored { reason: "already_decided" });
        };
        let call = pending.waiting.remove(index);
        let minutes = self.approvals.expires_after_secs() / 60;
        info!(tool = %call.name, "approval expired: the call did not run");
        pending.completed.push(ToolResult {
            tool_use_id: call.id.clone(),
            status: ToolStatus::Error,
            output: ToolOutput::Text(format!(
                "Not approved in time: nobody approved or denied this call within {minutes} minutes, so it did not \
                 run. Tell the user; do not retry it unless they ask again."
            )),
        });
        let expired =
            ReplyMessage::ApprovalExpired { turn_id: turn.id.clone(), thread: turn.thread.clone(), tool_use: call };
        self.save_decided(turn, Some(expired), deadline).await
    }

    /// The sweep's notice that a call's time ran out.
    async fn time_out(&self, timeout: &ApprovalTimeout, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        let Some(turn) = self.store.load(&timeout.turn_id).await? else {
            return Ok(Outcome::Ignored { reason: "unknown_turn" });
        };
        if let Some(pending) = turn.pending_sign_in.as_ref().filter(|_| turn.status == TurnStatus::AwaitingSignIn) {
            if pending.calls.first().is_none_or(|call| call.id != timeout.tool_use_id) {
                return Ok(Outcome::Ignored { reason: "already_decided" });
            }
            if self.clock.now_unix() < pending.asked_at + assistant_core::oauth::STATE_TTL_SECS {
                return Ok(Outcome::Ignored { reason: "not_due" });
            }
            if self.thread_told_failed(&turn.id).await? {
                return Ok(Outcome::Ignored { reason: "thread_told_failed" });
            }
            return self.sign_in_timed_out(turn, deadline).await;
        }
        let Some(pending) = turn.pending_approval.as_ref().filter(|_| turn.status == TurnStatus::AwaitingApproval)
        else {
            return Ok(Outcome::Ignored { reason: "not_awaiting_approval" });
        };
        // Only the call on show has a clock running.
        if pending.waiting.first().is_none_or(|call| call.id != timeout.tool_use_id) {
            return Ok(Outcome::Ignored { reason: "already_decided" });
        }
        if self.clock.now_unix() < pending.asked_at + self.approvals.expires_after_secs() {
            return Ok(Outcome::Ignored { reason: "not_due" });
        }
        if self.thread_told_failed(&turn.id).await? {
            return Ok(Outcome::Ignored { reason: "thread_told_failed" });
        }
        let id = timeout.tool_use_id.clone();
        self.expire(turn, &id, deadline).await
    }

    /// Finds the approval deadlines that are due and puts a timeout for each
    /// on the work queue (ordered with the thread's clicks), then forgets
    /// them. A crash in between puts one on the queue twice; the second
    /// finds nothing waiting. Returns how many were due.
    pub async fn sweep_approvals(&self) -> Result<usize, WorkerError> {
        const SWEEP_BATCH: usize = 100;
        let due = self.timers.due(self.clock.now_unix(), SWEEP_BATCH).await.map_err(WorkerError::Timers)?;
        for timer in &due {
            let timeout = ApprovalTimeout {
                turn_id: timer.turn_id.clone(),
                thread: timer.thread.clone(),
                tool_use_id: timer.tool_use_id.clone(),
            };
            self.work.enqueue(&WorkMessage::ApprovalTimeout(timeout)).await.map_err(WorkerError::Queue)?;
            self.timers.clear(timer).await.map_err(WorkerError::Timers)?;
        }
        if !due.is_empty() {
            info!(due = due.len(), "approval timeouts queued");
        }
        Ok(due.len())
    }

    /// Queues the configured schedules due now ([`crate::schedules`]).
    pub async fn sweep_schedules(&self) -> Result<usize, WorkerError> {
        match &self.incidents {
            Some(desk) => desk.sweep_schedules().await.map_err(WorkerError::Incident),
            None => Ok(0),
        }
    }

    /// After a decision: once nothing is left to decide, the step's results
    /// go to the model; otherwise the next call's prompt is shown now and
    /// its clock starts. Saved, the prompt's update requested, and the turn
    /// goes on.
    async fn save_decided(
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

    /// Steps the turn until it settles, waits for a human, or runs out of
    /// time; each step ends in one conditional save.
    async fn run(&self, mut turn: Turn, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        Span::current().record("step", turn.steps);
        let mut stream = AnswerStream::new(
            self.agent.as_ref(),
            &self.streams,
            self.clock.as_ref(),
            turn.id.clone(),
            turn.thread.clone(),
            turn.user.clone(),
            turn.message_ts.clone(),
        );
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
                    match self.save(&mut turn).await {
                        Ok(()) => continue,
                        Err(StoreError::Conflict { id, .. }) => {
                            stream.pause().await;
                            return self.superseded(id).await;
                        }
                        Err(err) => return Err(err.into()),
                    }
                }
                TurnStatus::Running => {}
            }

            let now = self.clock.now_unix();
            if turn.steps >= self.limits.max_steps {
                info!(limit = "steps", max_steps = self.limits.max_steps, "limit reached: partial answer");
                let answer = partial_answer(&turn, "the step limit");
                turn.settle(answer, TurnStatus::Answered, now);
                limit = Some(LimitHit::Steps);
            } else if turn.usage.input_tokens + turn.usage.output_tokens >= self.limits.max_turn_tokens {
                info!(limit = "tokens", max_turn_tokens = self.limits.max_turn_tokens, "limit reached: partial answer");
                let answer = partial_answer(&turn, "the token budget");
                turn.settle(answer, TurnStatus::Answered, now);
                limit = Some(LimitHit::Tokens);
            } else if stepped_here && deadline.time_left() < self.limits.step_time {
                let continuation =
                    Continuation { turn_id: turn.id.clone(), thread: turn.thread.clone(), after_step: turn.steps };
                stream.pause().await;
                self.work.enqueue(&WorkMessage::Continue(continuation)).await.map_err(WorkerError::Queue)?;
                info!("out of time: continuation queued");
                return Ok(Outcome::Continued { id: turn.id, after_step: turn.steps });
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

    /// Another worker saved the turn first (a redelivery raced this one):
    /// it carries the turn on. So that the turn is never left undelivered
    /// whatever happens to that worker, a turn already settled has its
    /// delivery requested again (the reply queue and the responder drop
    /// the copy); a running one is the winner's, whose message comes back
    /// if it dies.
    async fn superseded(&self, id: TurnId) -> Result<Outcome, WorkerError> {
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
    async fn ask(&self, turn: &Turn, asker: &Asker) -> Result<(), WorkerError> {
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
        };
        self.replies.send(&prompt).await.map_err(WorkerError::Queue)
    }

    /// What "Approve for this thread" would grant for a call of `turn`
    /// under `rule`: offered only where a grant could be used, never for
    /// destructive calls (the rule has no scope then), nor where turned
    /// off, nor for a person of another organization (each of their calls
    /// is approved on its own).
    fn grant_offered<'a>(&self, turn: &Turn, rule: Option<ApprovalRule<'a>>) -> Option<&'a str> {
        let offered = self.approvals.config.thread_grants && turn.membership.is_home();
        rule.and_then(|rule| rule.grant_scope).filter(|_| offered)
    }

    /// The settled turn's figures: one "turn settled" log line, and the
    /// report to the metrics port.
    /// Keeps a short, redacted record of a turn settled here in its
    /// channel's memory, unless the thread asked to be forgotten in it. A
    /// record not kept (the store failing, a crash after the turn's save)
    /// is only history missing: it is logged, never retried.
    async fn remember(&self, turn: &Turn) {
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

    fn report(&self, turn: &Turn, limit: Option<LimitHit>) {
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
    async fn show_progress(&self, turn: &Turn, text: String) {
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
    async fn save(&self, turn: &mut Turn) -> Result<(), StoreError> {
        let saved = match self.store.save(turn).await {
            Err(StoreError::TooLarge { bytes, .. }) => {
                info!(bytes, "turn state over the item limit: compacting");
                offload::compact(self.artifacts.as_ref(), turn).await?;
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
    async fn asker(&self, turn: &Turn) -> Asker {
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
    async fn step(
        &self,
        turn: &mut Turn,
        stream: &mut AnswerStream<'_>,
        bodies: &mut FileBodies,
    ) -> Result<(), WorkerError> {
        // The tools this person may use here: a tool outside their rules is
        // neither offered nor run.
        let asker = self.asker(turn).await;
        crate::thread_files::load_bodies(self.artifacts.as_ref(), &turn.transcript, bodies)
            .await
            .map_err(WorkerError::Artifacts)?;
        let bodies = &*bodies;
        let mut tools = self.tools.advertised(&asker);
        // Offered only to a turn with text files to read.
        if turn.text_files.is_empty() {
            tools.retain(|tool| tool.name != tools_registry::READ_ATTACHMENT);
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
            StopReason::Refused => turn.settle(REFUSAL.to_owned(), TurnStatus::Answered, turn.updated_at),
            StopReason::MaxTokens => {
                let text = turn.with_narration(&reply.message.text());
                let answer = format!("{text}\n\n_(My answer was cut off at the length limit.)_");
                turn.settle(answer.trim_start().to_owned(), TurnStatus::Answered, turn.updated_at);
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
                turn.settle(answer, TurnStatus::Answered, turn.updated_at);
            }
        }
        Ok(())
    }
}

impl Worker {
    /// Runs a step's calls: those that read at once, those that change
    /// things held for approval (their results kept until all are decided).
    async fn dispatch(
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
        results.extend(over_the_cap);
        results.extend(unapprovable.into_iter().map(|call| ToolResult {
            tool_use_id: call.id.clone(),
            status: ToolStatus::Error,
            output: ToolOutput::Text(NO_APPROVER_FOR_EXTERNAL.to_owned()),
        }));
        sort_in_call_order(turn, &mut results);
        offload::offload_large(self.artifacts.as_ref(), &turn.id, &mut results)
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
}

/// What an item costs beyond its state: its keys, version, token and TTL.
const ITEM_OVERHEAD_BYTES: u64 = 200;

/// DynamoDB's write units for the turn's last save: one per KB of each
/// item it wrote (the head, and the parts holding the messages it added).
fn write_units(turn: &Turn) -> u64 {
    turn.stored.written.iter().map(|bytes| (bytes + ITEM_OVERHEAD_BYTES).div_ceil(1_024)).sum()
}

/// DynamoDB's read units for loading `turn` (its head, and its parts in one
/// query) and its delivery record: consistent reads, one per 4 KB.
fn read_units(turn: &Turn) -> u64 {
    let items = 1 + turn.stored.parts.len() as u64;
    (turn.stored.bytes + items * ITEM_OVERHEAD_BYTES).div_ceil(4_096) + 1
}

/// The thread's status line while the first model call runs.
pub const THINKING: &str = "is thinking…";

/// The status line while a step's tools run.
fn running(calls: &[ToolUse]) -> String {
    let mut names: Vec<&str> = calls.iter().map(|call| call.name.as_str()).collect();
    names.dedup();
    format!("is running {}…", names.join(", "))
}

/// Approved calls recorded as running whose result was never saved: the
/// process stopped between the call and the save. They are never made
/// again; the model is told their outcome is unknown, and so is the audit
/// trail. The calls settled so.
fn settle_unknown_outcomes(turn: &mut Turn) -> Vec<ToolUse> {
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
fn settled_prompt(turn: &Turn, call: &ToolUse) -> Option<ReplyMessage> {
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
fn after_decision(turn: &mut Turn, now: i64) {
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
fn in_call_order(turn: &Turn, mut results: Vec<ToolResult>) -> Vec<Content> {
    sort_in_call_order(turn, &mut results);
    results.into_iter().map(Content::ToolResult).collect()
}

/// What the model reads for a changing call of a person of another
/// organization that only they could have approved.
const NO_APPROVER_FOR_EXTERNAL: &str = "Not run: the person who asked is from another organization, and no one here \
                                        is set to approve this tool for them. Tell them it needs someone of the team \
                                        that runs this bot.";

/// Who may approve a call of `turn`, as the prompt and a refusal name
/// them: a requester of another organization never approves, so
/// "requester" does not name them.
fn shown_approvers(turn: &Turn, approvers: &[Approver]) -> Vec<Approver> {
    let external = turn.membership.is_external();
    approvers.iter().filter(|approver| !(external && **approver == Approver::Requester)).cloned().collect()
}

/// Cuts a step's calls to [`MAX_TOOL_CALLS_PER_STEP`] (the first ones, in
/// the model's order) and answers each call past it with an error the
/// model reads; none of those runs.
fn over_the_cap(calls: &mut Vec<ToolUse>) -> Vec<ToolResult> {
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
fn sort_in_call_order(turn: &Turn, results: &mut [ToolResult]) {
    let order: Vec<&str> = turn
        .transcript
        .last()
        .map(|message| message.tool_uses().map(|call| call.id.as_str()).collect())
        .unwrap_or_default();
    results.sort_by_key(|result| order.iter().position(|id| *id == result.tool_use_id).unwrap_or(usize::MAX));
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
