//! What one turn may use ([`Limits`]), the time an invocation has left
//! ([`Deadline`]), and what handling a message comes to ([`Outcome`],
//! [`WorkerError`]).

use assistant_core::incidents::IncidentStatus;
use assistant_core::model::ModelError;
use assistant_core::ports::{PortError, StoreError};
use assistant_core::turn::{TurnId, TurnStatus};
use std::time::Duration;

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
    /// How much of tool results the model reads (`reading`): by default
    /// sized for the model's context window.
    pub reading: ReadingBudget,
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
            reading: ReadingBudget::default(),
        }
    }
}

pub use assistant_core::deadline::Deadline;
use assistant_core::reading::ReadingBudget;

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
    /// A team's or people's departure is remembered and what the bot kept
    /// for them deleted (this many records, by this handling).
    Forgotten { records: usize },
}

/// In words, as a person reading the local runner or a log would put it.
impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let steps = |n: &u32| if *n == 1 { "1 step".to_owned() } else { format!("{n} steps") };
        match self {
            Outcome::Settled { status: TurnStatus::Answered, steps: n, .. } => write!(f, "answered after {}", steps(n)),
            Outcome::Settled { status, steps: n, .. } => write!(f, "settled {} after {}", status.as_str(), steps(n)),
            Outcome::AwaitingApproval { .. } => f.write_str("waiting for someone to approve a call"),
            Outcome::Continued { after_step, .. } => {
                write!(f, "out of time after step {after_step}: a continuation carries it on")
            }
            Outcome::Superseded { .. } => f.write_str("another worker saved this turn first and carries it on"),
            Outcome::Ignored { reason } => write!(f, "nothing to do ({})", reason.replace('_', " ")),
            Outcome::PromptsSet => f.write_str("suggested prompts set"),
            Outcome::FeedbackKept { .. } => f.write_str("rating kept"),
            Outcome::GrantRevoked => f.write_str("the thread's grant revoked"),
            Outcome::AwaitingSignIn { .. } => f.write_str("waiting for the person who asked to connect"),
            Outcome::SignedIn { .. } => f.write_str("the person connected; the turn goes on"),
            Outcome::ConnectRefused => f.write_str("a Connect click by someone else refused"),
            Outcome::HomeShown => f.write_str("Home tab shown"),
            Outcome::Forgotten { records } => write!(f, "departure remembered, {records} record(s) forgotten"),
            Outcome::Incident(worker_incidents::Handled::Ignored(reason)) => {
                write!(f, "alert not taken ({})", reason.replace('_', " "))
            }
            Outcome::Incident(worker_incidents::Handled::Incident { id, status, posted, .. }) => {
                let status = if *status == IncidentStatus::Open { "open" } else { "resolved" };
                write!(f, "incident {id} {status}, {posted} message(s) posted")
            }
        }
    }
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
    /// Departures could not be read or recorded, or records not deleted.
    #[error(transparent)]
    Departures(PortError),
    /// The sign-in store or the provider failed: retry.
    #[error(transparent)]
    SignIn(PortError),
    /// A command's `response_url` posts could not be counted: retry.
    #[error(transparent)]
    ResponseUrl(PortError),
    /// Slack failed setting prompts; a refusal is not an error.
    #[error(transparent)]
    Slack(assistant_core::delivery::PostError),
    /// Slack failed a read the work cannot go without (a shortcut's
    /// message, its conversation's members): retry.
    #[error(transparent)]
    SlackRead(PortError),
    /// An alert's incident could not be recorded or posted.
    #[error(transparent)]
    Incident(worker_incidents::DeskError),
    /// The guardrail could not check the question or the answer: retry.
    #[error(transparent)]
    Guardrail(PortError),
    /// The spend counters could not be read or charged: retry.
    #[error(transparent)]
    Budgets(PortError),
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
            | WorkerError::Departures(_)
            | WorkerError::SignIn(_)
            | WorkerError::ResponseUrl(_)
            | WorkerError::Slack(_)
            | WorkerError::SlackRead(_)
            | WorkerError::Guardrail(_)
            | WorkerError::Budgets(_) => true,
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
            WorkerError::Departures(_) => "I could not check whether this workspace still has the app",
            WorkerError::SignIn(_) => "I could not complete or use your sign-in",
            WorkerError::ResponseUrl(_) => "I could not keep count of my replies to your command",
            WorkerError::Slack(_) | WorkerError::SlackRead(_) => "Slack could not be reached",
            WorkerError::Incident(_) => "I could not record or post an alert's incident",
            WorkerError::Guardrail(_) => "the deployment's guardrail could not be reached to check it",
            WorkerError::Budgets(_) => "I could not check this assistant's budgets",
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
