//! A turn: one question to the bot and all the work to answer it, saved
//! after every step so any worker can pick it up where the last one stopped.
//!
//! The transcript is the model conversation in our own types (text, tool
//! calls, tool results), translated to Bedrock's at the adapter. `version`
//! belongs to the store: every save is conditional on it, so of two workers
//! holding the same turn only the first to save wins; the other re-reads.

use crate::messages::{ThreadRef, TurnRequest};
use serde::{Deserialize, Serialize};
use slack::{EventId, TeamId, Ts, UserId};
use std::fmt;

/// Derived from the Slack event, so every delivery of the same request
/// names the same turn and a redelivery finds the work already begun.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TurnId(String);

impl TurnId {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn for_event(thread: &ThreadRef, event_id: &EventId) -> Self {
        Self::for_claim(&thread.team, event_id)
    }

    /// The turn an event claimed by `team` starts (`{team}-{event_id}`).
    pub fn for_claim(team: &TeamId, event_id: &EventId) -> Self {
        Self(format!("{team}-{event_id}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `text` has a turn id's shape (`{team}-{event_id}`: letters,
    /// digits, `-`, at most 64), as a value read back from Slack must.
    pub fn is_well_formed(text: &str) -> bool {
        (3..=64).contains(&text.len())
            && text.contains('-')
            && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    }

    /// What people and operators quote: the Slack event id, which is in
    /// every log line of the turn.
    pub fn reference(&self) -> &str {
        self.0.split_once('-').map_or(&self.0, |(_, event)| event)
    }
}

impl fmt::Display for TurnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// Steps remain: a worker holds it or a continuation is queued.
    Running,
    /// Paused on a tool call that changes things until a human decides.
    AwaitingApproval,
    /// Paused until the person who asked connects a provider a step's
    /// tools act through (per-user sign-in).
    AwaitingSignIn,
    /// The answer is saved; delivery is queued.
    Answered,
    /// Gave up (the user is told why); delivery is queued. Whether the
    /// answer reached the thread is the responder's record, not the turn's.
    Failed,
}

impl TurnStatus {
    /// The name used in logs (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Running => "running",
            TurnStatus::AwaitingApproval => "awaiting_approval",
            TurnStatus::AwaitingSignIn => "awaiting_sign_in",
            TurnStatus::Answered => "answered",
            TurnStatus::Failed => "failed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TurnStatus;

    #[test]
    fn status_names_match_their_serialized_form() {
        for status in [
            TurnStatus::Running,
            TurnStatus::AwaitingApproval,
            TurnStatus::AwaitingSignIn,
            TurnStatus::Answered,
            TurnStatus::Failed,
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Content>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Self { role: Role::User, content: vec![Content::Text(text.into())] }
    }

    /// The tool calls this (assistant) message asks for.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.content.iter().filter_map(|content| match content {
            Content::ToolUse(tool_use) => Some(tool_use),
            _ => None,
        })
    }

    /// The message's text blocks, joined.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|content| match content {
                Content::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n\n")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    Text(String),
    ToolUse(ToolUse),
    ToolResult(ToolResult),
    /// An image or document someone pasted, read from the bucket for each
    /// model call.
    File(crate::files::FileBlock),
}

/// The model asked for a tool to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    pub input: serde_json::Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Success,
    /// The model sees the error and may try again differently.
    Error,
}

/// What a tool returned, as the model will see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub tool_use_id: String,
    pub status: ToolStatus,
    pub output: ToolOutput,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolOutput {
    Text(String),
    Json(serde_json::Value),
    /// Over what the model reads whole ([`crate::reading`]): kept in the
    /// artifact store under `key`; `preview` is what stays inline, `shown`
    /// what it holds (absent on turns saved by an older build).
    Stored {
        key: String,
        bytes: u64,
        preview: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shown: Option<crate::reading::Shown>,
    },
    /// Not a result yet: a task the tool's server runs on its own (MCP
    /// tasks). The turn waits, polling it, before its next model call; the
    /// model never reads this.
    Task(RunningTask),
}

/// A task a tool's server runs for a call, kept in the turn so any worker
/// can poll it, or cancel it when the turn ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningTask {
    pub task_id: String,
    /// The server session that knows the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// When it started (Unix seconds): the turn gives up on it after a while.
    pub started_at: i64,
    /// How long to wait between polls.
    pub poll_ms: u64,
    /// How long the turn waits for it before it cancels it.
    pub wait_secs: u64,
    /// What the server last said of it, untrusted (shown as progress).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ToolResult {
    /// What the model reads of this result when it is stored: its preview
    /// and the note that says what the preview holds and how to read on.
    pub fn stored_text(&self) -> Option<String> {
        let ToolOutput::Stored { bytes, preview, shown, .. } = &self.output else { return None };
        let note = match shown {
            Some(shown) => crate::reading::note(&self.tool_use_id, *bytes, shown, crate::reading::READ_RESULT),
            None => format!("[result truncated: {bytes} bytes in all; ask for a narrower query to see more]"),
        };
        Some(format!("{preview}\n{note}"))
    }
}

/// A file uploaded for the answer, not yet shared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerFile {
    pub file_id: String,
    pub filename: String,
    pub title: String,
}

/// Tokens the model read and wrote over the whole turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// A step whose tool calls include some that change things: those wait
/// for Approve or Deny; the results of the others are kept until all are
/// decided, because the model must get every result of a step together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// Calls still waiting for a decision, in the order the model made them.
    pub waiting: Vec<ToolUse>,
    /// Results of the step's other calls, and of decided ones.
    pub completed: Vec<ToolResult>,
    /// When approval was asked (Unix seconds): unanswered calls expire a
    /// configured time after it.
    #[serde(default)]
    pub asked_at: i64,
    /// Approved calls, recorded as running before they were made. One still
    /// here on a later delivery may or may not have run (the process died
    /// between the call and the save): it is never made again, and the model
    /// is told its outcome is unknown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running: Vec<ToolUse>,
}

impl PendingApproval {
    /// Nothing left to decide or to finish: the step's results can go to
    /// the model.
    pub fn is_done(&self) -> bool {
        self.waiting.is_empty() && self.running.is_empty()
    }
}

/// A step whose tools act as the person who asked, before they connected
/// the provider (or after it refused their sign-in): none of the step's
/// calls has run; they run, as the model asked for them, once the person
/// has connected, or fail with a note when the sign-in does not come.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingSignIn {
    /// The provider the person is asked to connect.
    pub provider: String,
    /// The step's calls, all of them, in the model's order.
    pub calls: Vec<ToolUse>,
    /// When the person was asked (Unix seconds).
    pub asked_at: i64,
    /// Why: never connected, or the provider refused the stored sign-in.
    pub reason: SignInReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignInReason {
    NotConnected,
    /// The refresh was refused (revoked, expired, password changed).
    Expired,
    /// The provider refused the sign-in's code (spent or expired): sign
    /// in again.
    Failed,
}

/// A call made with a person's own token: whose, at which provider, as
/// whom the provider knows them. The audit trail's link from an action at
/// the provider to a person in Slack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedCall {
    pub tool_use_id: String,
    pub tool: String,
    pub user: UserId,
    pub provider: String,
    /// The provider's `sub` for the person, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Unix seconds.
    pub at: i64,
}

/// How a turn is stored, as the store last read or wrote it: the head
/// item and the parts that hold its transcript (`assistant_core::store`).
/// Kept with the turn so a save writes only the messages added since.
#[derive(Debug, Clone, Default)]
pub struct StoredTurn {
    /// The transcript parts the head names, in order.
    pub parts: Vec<String>,
    /// How many messages those parts hold, and a digest of them: a save
    /// whose first messages still match writes only the rest.
    pub messages: usize,
    pub digest: [u8; 32],
    /// Bytes of every item of the turn (head and parts), what a read costs.
    pub bytes: u64,
    /// The sizes of the items the last write wrote, what it cost.
    pub written: Vec<u64>,
}

impl StoredTurn {
    /// The head's size in the last write (its first item).
    pub fn written_head(&self) -> u64 {
        self.written.first().copied().unwrap_or(0)
    }
}

/// Two copies are stored alike when they name the same parts; what reading
/// or writing them cost is no part of the turn.
impl PartialEq for StoredTurn {
    fn eq(&self, other: &Self) -> bool {
        (&self.parts, self.messages, self.digest) == (&other.parts, other.messages, other.digest)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub id: TurnId,
    pub thread: ThreadRef,
    pub user: UserId,
    /// The asker's standing with the installing team: one of another
    /// organization gets only what the tool policy gives external people.
    #[serde(default, skip_serializing_if = "slack::Membership::is_home")]
    pub membership: slack::Membership,
    /// The message that asked.
    pub message_ts: Ts,
    /// When it was asked, where that is not `message_ts` (a message
    /// shortcut on an older message; [`TurnRequest::asked_at`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_at: Option<i64>,
    pub event_id: EventId,
    pub status: TurnStatus,
    /// Owned by the store (kept beside the state, not in it): the version
    /// this copy was read or last saved at; 0 before the first save.
    #[serde(skip)]
    pub version: u64,
    /// Owned by the store too: how the turn is stored (which items hold
    /// its transcript) and what the last read or write of it cost.
    #[serde(skip)]
    pub stored: StoredTurn,
    /// Model calls completed.
    pub steps: u32,
    pub transcript: Vec<Message>,
    pub usage: Usage,
    pub created_at: i64,
    pub updated_at: i64,
    /// Where the turn takes place, for the system prompt (read once, at the
    /// start, so every step sends the same prompt prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_approval: Option<PendingApproval>,
    /// When the thread first showed the bot at work, in milliseconds after
    /// the question was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_status_ms: Option<u64>,
    /// When the first streamed text reached the thread, in milliseconds
    /// after the question was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_text_ms: Option<u64>,
    /// What the worker did for the turn, for its cost.
    #[serde(default)]
    pub metered: crate::pricing::Metered,
    /// The prompt enhancer's call before the first step, when configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enhancer: Option<EnhancerRun>,
    /// The text files pasted in the thread and kept for this turn (their
    /// ids): `read_attachment` is offered only when there are some.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text_files: Vec<String>,
    /// Tool results the model attached to its answer, uploaded to Slack by
    /// the worker and shared in the thread by the responder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answer_files: Vec<AnswerFile>,
    /// Metric results the model asked to show as charts: each a Markdown
    /// table of its points (and a line saying what it shows), put below
    /// the answer, where the responder charts it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answer_charts: Vec<String>,
    /// Every call that changed things, and who let it run: the audit
    /// trail, written before the call is made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<ActionRecord>,
    /// The step waiting for the person to sign in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_sign_in: Option<PendingSignIn>,
    /// Every call made with the person's own token (never the token).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signed_calls: Vec<SignedCall>,
    /// Tokens of tool results put in the transcript so far (whole results
    /// and previews), held to the turn's reading budget
    /// ([`crate::reading::ReadingBudget::turn_tokens`]).
    #[serde(default)]
    pub results_read_tokens: u64,
    /// How many continuations were queued to go on waiting for the last
    /// step's tasks (each one's queue deduplication id differs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub task_waits: u32,
    /// Where the deployment's guardrail acted on this turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guardrail: Vec<crate::guardrail::Intervention>,
    /// The text units the guardrail's calls for this turn were billed for.
    #[serde(default, skip_serializing_if = "crate::guardrail::GuardUnits::is_zero")]
    pub guard_units: crate::guardrail::GuardUnits,
    /// The deployment's `charts: false` when the turn began: the responder
    /// shows the answer's tables without charts or data tables.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub charts_off: bool,
    /// What the turn has charged to the deployment's spend counters, in
    /// millionths of a dollar ([`crate::budgets`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub charged_micros: u64,
}

fn is_zero<N: Default + PartialEq>(value: &N) -> bool {
    *value == N::default()
}

/// A call that changed things, as the audit trail keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub tool_use_id: String,
    pub tool: String,
    /// Who approved it, or gave the grant it ran under.
    pub approved_by: UserId,
    /// Unix seconds.
    pub at: i64,
    /// The thread grant it ran under, if it ran without a prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<GrantUse>,
    /// The thread grant its approval gave ("Approve for this thread"), so
    /// the prompt, put right after a crash or a late click, still says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gave: Option<crate::grants::ThreadGrant>,
    /// It was started and the worker stopped before recording its result:
    /// whether it completed is unknown (it is never made again).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outcome_unknown: bool,
}

/// The grant a call ran under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantUse {
    pub scope: String,
    pub granted_at: i64,
    pub until: i64,
}

/// What the prompt enhancer's one call cost and gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnhancerRun {
    pub model_id: String,
    pub usage: Usage,
    pub latency_ms: u64,
    /// Whether its extraction reached the main model (`false`: it timed
    /// out, failed or answered something unreadable; the turn went on
    /// without it).
    pub used: bool,
}

impl Turn {
    /// The question the turn answers, without the mentions before it: the
    /// newest message of the asker's that names someone (the opening puts
    /// it last, as `<@U…>: <@BOT> why …`).
    pub fn question(&self) -> String {
        let said = self
            .transcript
            .iter()
            .rev()
            .filter(|message| message.role == Role::User)
            .flat_map(|message| &message.content)
            .find_map(|content| match content {
                Content::Text(text) if text.starts_with("<@") => {
                    Some(text.split_once(": ").map_or(text.as_str(), |(_, question)| question))
                }
                _ => None,
            })
            .unwrap_or_default();
        let mut question = said.trim_start();
        while let Some(rest) = question.strip_prefix("<@").and_then(|rest| rest.split_once('>')).map(|(_, rest)| rest) {
            question = rest.trim_start();
        }
        question.to_owned()
    }

    /// When it was asked (Unix seconds): see [`TurnRequest::asked_at`].
    pub fn asked_at(&self) -> i64 {
        self.asked_at.or_else(|| self.message_ts.unix_secs()).unwrap_or(self.created_at)
    }

    /// What the turn has cost so far, with the main model at `prices` and
    /// the worker at `worker_memory_mb` (the enhancer's model is known by
    /// its id).
    pub fn cost(&self, prices: Option<crate::pricing::ModelPrices>, worker_memory_mb: u32) -> crate::pricing::Cost {
        crate::pricing::estimate(crate::pricing::Spent {
            usage: &self.usage,
            prices,
            enhancer: self
                .enhancer
                .as_ref()
                .map(|run| (&run.usage, crate::pricing::ModelPrices::for_model(&run.model_id))),
            metered: &self.metered,
            guard_units: &self.guard_units,
            worker_memory_mb,
        })
    }

    /// A new turn for a request, before any step (version 0: not stored).
    pub fn start(request: &TurnRequest, now_unix: i64) -> Self {
        Self {
            id: TurnId::for_event(&request.thread, &request.event_id),
            thread: request.thread.clone(),
            user: request.user.clone(),
            membership: request.membership,
            message_ts: request.message_ts.clone(),
            asked_at: request.asked_at,
            event_id: request.event_id.clone(),
            status: TurnStatus::Running,
            version: 0,
            stored: StoredTurn::default(),
            steps: 0,
            transcript: Vec::new(),
            usage: Usage::default(),
            created_at: now_unix,
            updated_at: now_unix,
            channel_context: None,
            answer: None,
            pending_approval: None,
            first_status_ms: None,
            first_text_ms: None,
            metered: Default::default(),
            enhancer: None,
            text_files: Vec::new(),
            answer_files: Vec::new(),
            answer_charts: Vec::new(),
            actions: Vec::new(),
            pending_sign_in: None,
            signed_calls: Vec::new(),
            results_read_tokens: 0,
            task_waits: 0,
            guardrail: Vec::new(),
            guard_units: Default::default(),
            charts_off: false,
            charged_micros: 0,
        }
    }

    /// Milliseconds from the question (its Slack timestamp) to `now_ms`.
    pub fn since_asked_ms(&self, now_ms: i64) -> u64 {
        let (secs, micros) = self.message_ts.as_str().split_once('.').unwrap_or((self.message_ts.as_str(), "0"));
        let asked_ms = secs.parse::<i64>().unwrap_or(now_ms / 1_000) * 1_000
            + micros.get(..3).and_then(|ms| ms.parse::<i64>().ok()).unwrap_or(0);
        u64::try_from(now_ms - asked_ms).unwrap_or(0)
    }

    /// What the model said in steps that went on to call tools ("Let me
    /// check the logs."): the answer begins with it, as the streamed
    /// message shows it. Read from the transcript (those steps' messages),
    /// so the turn's head does not grow with every step.
    pub fn narration(&self) -> String {
        let said: Vec<String> = self
            .transcript
            .iter()
            .filter(|message| message.role == Role::Assistant && message.tool_uses().next().is_some())
            .map(Message::text)
            .filter(|text| !text.trim().is_empty())
            .collect();
        said.join("\n\n")
    }

    /// The answer: what the model said along the way, then `text`.
    pub fn with_narration(&self, text: &str) -> String {
        let narration = self.narration();
        match (narration.is_empty(), text.is_empty()) {
            (true, _) => text.to_owned(),
            (false, true) => narration,
            (false, false) => format!("{narration}\n\n{text}"),
        }
    }

    /// The last step's calls whose servers still run them as tasks: the
    /// turn makes no model call until each has its result.
    pub fn running_tasks(&self) -> Vec<(ToolUse, RunningTask)> {
        let Some(results) = self.transcript.last().filter(|message| message.role == Role::User) else {
            return Vec::new();
        };
        let calls: Vec<&ToolUse> =
            self.transcript.iter().rev().nth(1).map(|m| m.tool_uses().collect()).unwrap_or_default();
        results
            .content
            .iter()
            .filter_map(|content| match content {
                Content::ToolResult(ToolResult { tool_use_id, output: ToolOutput::Task(task), .. }) => {
                    let call = calls.iter().find(|call| &call.id == tool_use_id)?;
                    Some(((*call).clone(), task.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// The call `tool_use_id`'s result in the last step, `result` now (a
    /// task's result, once it is done).
    pub fn replace_result(&mut self, result: ToolResult) {
        let Some(results) = self.transcript.last_mut() else { return };
        for content in &mut results.content {
            if let Content::ToolResult(kept) = content
                && kept.tool_use_id == result.tool_use_id
            {
                *kept = result;
                return;
            }
        }
    }

    /// Ends the turn's work with what the user will be shown.
    pub fn settle(&mut self, answer: String, status: TurnStatus, now_unix: i64) {
        self.answer = Some(answer);
        self.status = status;
        self.updated_at = now_unix;
    }
}
