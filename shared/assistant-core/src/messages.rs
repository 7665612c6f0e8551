//! Messages on the queues, as versioned JSON envelopes `{"v":1,"kind":"…",…}`:
//! [`WorkMessage`] on the work queue (ingress → worker, and the worker's own
//! continuations), [`ReplyMessage`] on the reply queue (worker → responder).
//!
//! A deploy can happen while messages are in flight, so a reader accepts
//! every version it knows and refuses the rest with a clear error; the
//! caller sends those to the dead-letter queue instead of retrying them.

use crate::approval::Approver;
pub use crate::approval::{ApprovalButton, CallOrigin};
use crate::feedback::Rating;
use crate::grants::{RevokeButton, ThreadGrant};
use crate::incidents::{AlertNotice, CloudwatchAlarm};
use crate::turn::{SignInReason, ToolUse, TurnId};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use slack::{ChannelId, EventId, Membership, TeamId, Ts, UserId};

/// The envelope version this build writes.
pub const ENVELOPE_VERSION: u32 = 1;

/// A Slack thread: where a turn's conversation lives and where its answer
/// goes. Work for one thread is processed in order (it is the FIFO group).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ThreadRef {
    pub team: TeamId,
    pub channel: ChannelId,
    pub thread_ts: Ts,
}

impl ThreadRef {
    /// The SQS FIFO message group: one per thread, so a thread's work is
    /// ordered while different threads run in parallel.
    pub fn queue_group(&self) -> String {
        format!("{}:{}", self.channel, self.thread_ts)
    }
}

/// A person asked the bot something: the worker starts a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRequest {
    pub event_id: EventId,
    pub thread: ThreadRef,
    /// The message that asked (equals `thread.thread_ts` for a thread's
    /// first message).
    pub message_ts: Ts,
    pub user: UserId,
    pub text: String,
    /// For assistant threads: the channel the user was looking at; the
    /// worker tells the model about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_channel: Option<ChannelId>,
    /// This app's bot user, to tell its own messages in the thread apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot_user: Option<UserId>,
    /// Files attached to the message that asked (at most
    /// [`crate::files::MAX_FILES`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<crate::files::FileRef>,
    /// Whether the person who asked is of the installing team or of
    /// another organization in a shared channel (the ingress reads it from
    /// Slack's payload).
    #[serde(default, skip_serializing_if = "Membership::is_home")]
    pub membership: Membership,
    /// When it was asked (Unix seconds), where that is not `message_ts`:
    /// a message shortcut's use on an older message. Work asked before its
    /// team or asker departed stops (`crate::departures`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_at: Option<i64>,
}

impl TurnRequest {
    /// When it was asked: [`Self::asked_at`], else its message's time.
    pub fn asked_at(&self) -> Option<i64> {
        self.asked_at.or_else(|| self.message_ts.unix_secs())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    /// Approve, and let the same tool (or MCP server) run in this thread
    /// without asking for a while.
    ApproveForThread,
    Deny,
}

impl Decision {
    /// Whether the call runs.
    pub fn approves(self) -> bool {
        matches!(self, Decision::Approve | Decision::ApproveForThread)
    }
}

/// Someone clicked Approve or Deny on a tool call that waits for a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalClick {
    pub thread: ThreadRef,
    /// The message holding the buttons.
    pub message_ts: Ts,
    pub user: UserId,
    pub decision: Decision,
    /// What the button carried: the paused turn and tool call.
    pub button: ApprovalButton,
    pub action_ts: Ts,
    /// The clicker's standing with the installing team: people of another
    /// organization never approve.
    #[serde(default, skip_serializing_if = "Membership::is_home")]
    pub membership: Membership,
}

/// Someone clicked Revoke under a thread grant's notice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantRevoke {
    pub thread: ThreadRef,
    pub user: UserId,
    pub button: RevokeButton,
    pub action_ts: Ts,
}

/// The worker ran out of time before the turn was done: the next worker
/// picks it up from the stored state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Continuation {
    pub turn_id: TurnId,
    pub thread: ThreadRef,
    /// Steps completed when it was sent.
    pub after_step: u32,
    /// Continuations queued after that step to go on waiting for its tasks
    /// (tools a server runs as tasks); 0 for the first.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub waits: u32,
}

/// A call waited for approval past its time: found by the worker's sweep
/// of due approvals, it turns the call into an error result the model can
/// read, and the turn goes on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalTimeout {
    pub turn_id: TurnId,
    pub thread: ThreadRef,
    pub tool_use_id: String,
}

/// A person opened the bot's DM (`app_home_opened`, tab `messages`) or an
/// assistant thread (`assistant_thread_started`, older installs): the
/// worker sets the suggested prompts. No turn, no model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    pub event_id: EventId,
    pub team: TeamId,
    /// The DM.
    pub channel: ChannelId,
    pub user: UserId,
    /// The assistant thread (older installs); none in the agent DM, where
    /// prompts belong to the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_ts: Option<Ts>,
}

/// Someone clicked 👍 or 👎 under an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedbackClick {
    pub thread: ThreadRef,
    pub turn_id: TurnId,
    pub user: UserId,
    pub rating: Rating,
    pub action_ts: Ts,
}

/// A person came back from signing in at a provider: the ingress took the
/// sign-in's `state` (single use) and stored the code with it; the worker
/// exchanges the code and resumes the turn. The message names the state,
/// never the code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedIn {
    pub state: String,
    pub turn_id: TurnId,
    pub thread: ThreadRef,
}

/// Someone clicked a Connect button: if it is not the person it was made
/// for, the worker burns its sign-in and tells the clicker, only them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectClick {
    pub thread: ThreadRef,
    pub user: UserId,
    /// The button's value: the sign-in's `state`.
    pub state: String,
    pub action_ts: Ts,
}

/// The app's Home tab: a person opened it (`disconnect: None`) or clicked
/// Disconnect on one of their connections. Always the clicker's own: the
/// person is Slack's, never a button's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HomeAction {
    pub team: TeamId,
    pub user: UserId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disconnect: Option<String>,
    /// The event id or the click's `action_ts`: what makes it this action.
    pub id: String,
}

/// "Investigate with the assistant" on a message (a message shortcut):
/// the worker reads the message as the bot, checks that the person may see
/// it, and starts a turn in the message's thread whose question is the
/// message. Where the bot cannot read the conversation (a channel it is
/// not in), the message as Slack showed it to the person (`shown`) is
/// investigated instead, answered in the person's DM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvestigateMessage {
    /// The claim's key, from the shortcut's trigger id: the turn it starts
    /// is `{team}-{event_id}`, like a mention's.
    pub event_id: EventId,
    /// The message's thread, as the payload names it (checked by reading).
    pub thread: ThreadRef,
    /// The message the shortcut was used on.
    pub message_ts: Ts,
    /// Who used the shortcut: the turn's asker.
    pub user: UserId,
    #[serde(default, skip_serializing_if = "Membership::is_home")]
    pub membership: Membership,
    /// When the person used it (the payload's `action_ts`, Unix seconds):
    /// work asked before the team or the person departed is not started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_at: Option<i64>,
    /// The message as the payload carries it (Slack's copy, as the person
    /// saw it): read only where the bot cannot read the message itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown: Option<ShownMessage>,
    /// The person's own words, typed in the shortcut's modal first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A message as a shortcut's payload showed it: rendered to text (bounded
/// by `slack::readable`), who posted it, how many files it had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownMessage {
    pub text: String,
    /// The person who posted it; none for an app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<UserId>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub files: usize,
    /// `text` was cut on the way (to fit a modal's metadata).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

fn is_zero<N: Default + PartialEq>(n: &N) -> bool {
    *n == N::default()
}

/// Why the bot forgets a team or some of its people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForgetReason {
    /// `app_uninstalled`: the app left the team.
    AppUninstalled,
    /// `tokens_revoked`: the bot's token (the whole team) or people's.
    TokensRevoked,
    /// `user_change` with `deleted`: a person left.
    UserDeleted,
}

impl ForgetReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ForgetReason::AppUninstalled => "app_uninstalled",
            ForgetReason::TokensRevoked => "tokens_revoked",
            ForgetReason::UserDeleted => "user_deleted",
        }
    }
}

/// Slack said the app left a team, or people left it (or their tokens
/// were revoked): the worker stops the work asked for before `at` and
/// forgets what the bot keeps for them (`crate::departures`). Idempotent:
/// a redelivery forgets nothing more and stops nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forget {
    pub event_id: EventId,
    /// The workspace; for an organization's forget, the organization's id
    /// (`E…`, as Slack names it in team fields).
    pub team: TeamId,
    /// An org-wide install left the whole organization `team` names (or
    /// its people left it): every workspace of it the bot kept records for
    /// is forgotten, and the departure is the organization's, so work of
    /// any of its workspaces stops (`crate::departures`). Absent in
    /// messages written before org-wide forgets: a workspace's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub organization: bool,
    pub reason: ForgetReason,
    /// The people to forget; none: the whole team.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<UserId>,
    /// When it happened, as Slack says (the callback's `event_time`).
    pub at: i64,
}

/// `/assistant <question>` (a slash command): the worker opens a thread in
/// the channel with the question and runs the turn there, as a mention
/// would; where the bot may not post, the answer goes to the person alone
/// through the command's `response_url` (`shared/worker/turn/src/handlers/
/// slash_command.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlashCommand {
    /// The claim's key, from the command's trigger id: the turn it starts
    /// is `{team}-{event_id}`.
    pub event_id: EventId,
    pub team: TeamId,
    /// Where the command was typed.
    pub channel: ChannelId,
    /// Who typed it: the turn's asker.
    pub user: UserId,
    /// The command as typed (`/assistant`), for the thread's first line.
    pub command: String,
    /// The command's text, at most `slack::command::MAX_QUESTION_CHARS`.
    pub question: String,
    /// The text was longer and was cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    /// Checked when read (`slack::command::ResponseUrl`): Slack's, only.
    pub response_url: slack::command::ResponseUrl,
    #[serde(default, skip_serializing_if = "Membership::is_home")]
    pub membership: Membership,
    /// When the ingress received it (Unix seconds): the `response_url`'s
    /// half hour counts from here.
    pub asked_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkMessage {
    StartTurn(TurnRequest),
    Approval(ApprovalClick),
    Continue(Continuation),
    ApprovalTimeout(ApprovalTimeout),
    Opened(Opened),
    Feedback(FeedbackClick),
    RevokeGrant(GrantRevoke),
    SignedIn(SignedIn),
    ConnectClick(ConnectClick),
    Home(HomeAction),
    /// An Alertmanager or PagerDuty alert, verified and read by the ingress.
    Alert(AlertNotice),
    /// A CloudWatch alarm's state change, put on the queue by EventBridge
    /// (the template's rule): the worker reads it.
    CloudwatchAlarm(CloudwatchAlarm),
    InvestigateMessage(InvestigateMessage),
    SlashCommand(SlashCommand),
    /// The app left a team, or people left: stop their work, forget them.
    Forget(Forget),
}

impl WorkMessage {
    /// The thread the message is about; none for an opened DM.
    pub fn thread(&self) -> Option<&ThreadRef> {
        match self {
            WorkMessage::StartTurn(request) => Some(&request.thread),
            WorkMessage::Approval(click) => Some(&click.thread),
            WorkMessage::Continue(continuation) => Some(&continuation.thread),
            WorkMessage::ApprovalTimeout(timeout) => Some(&timeout.thread),
            WorkMessage::Feedback(click) => Some(&click.thread),
            WorkMessage::RevokeGrant(click) => Some(&click.thread),
            WorkMessage::SignedIn(signed_in) => Some(&signed_in.thread),
            WorkMessage::ConnectClick(click) => Some(&click.thread),
            WorkMessage::InvestigateMessage(shortcut) => Some(&shortcut.thread),
            WorkMessage::Opened(_)
            | WorkMessage::Home(_)
            | WorkMessage::Alert(_)
            | WorkMessage::CloudwatchAlarm(_)
            | WorkMessage::SlashCommand(_)
            | WorkMessage::Forget(_) => None,
        }
    }

    /// The SQS FIFO message group: the thread, the DM that was opened, or
    /// the person's Home tab.
    pub fn queue_group(&self) -> String {
        match (self, self.thread()) {
            (WorkMessage::Opened(opened), _) => {
                format!("{}:{}", opened.channel, opened.thread_ts.as_ref().map_or("open", Ts::as_str))
            }
            (WorkMessage::Home(home), _) => format!("home:{}:{}", home.team, home.user),
            (WorkMessage::Alert(notice), _) => notice.queue_group(),
            // EventBridge names the group (the template's rule); this is
            // for a message sent by anyone else.
            (WorkMessage::CloudwatchAlarm(_), _) => "alert:cloudwatch".to_owned(),
            // One group per team: its departures are handled in order.
            (WorkMessage::Forget(forget), _) => format!("forget:{}", forget.team),
            // Its thread does not exist yet: the command is its own group.
            (WorkMessage::SlashCommand(command), _) => format!("command:{}:{}", command.channel, command.event_id),
            (_, thread) => thread.expect("every message but an opened DM or Home names its thread").queue_group(),
        }
    }

    /// The turn the message is about (a start names the turn it begins);
    /// none for an opened DM.
    pub fn turn_id(&self) -> Option<TurnId> {
        Some(match self {
            WorkMessage::StartTurn(request) => TurnId::for_event(&request.thread, &request.event_id),
            WorkMessage::Approval(click) => click.button.turn_id.clone(),
            WorkMessage::Continue(continuation) => continuation.turn_id.clone(),
            WorkMessage::ApprovalTimeout(timeout) => timeout.turn_id.clone(),
            WorkMessage::Feedback(click) => click.turn_id.clone(),
            WorkMessage::RevokeGrant(click) => click.button.turn_id.clone(),
            WorkMessage::SignedIn(signed_in) => signed_in.turn_id.clone(),
            WorkMessage::InvestigateMessage(shortcut) => TurnId::for_event(&shortcut.thread, &shortcut.event_id),
            WorkMessage::SlashCommand(command) => TurnId::for_claim(&command.team, &command.event_id),
            WorkMessage::Opened(_)
            | WorkMessage::ConnectClick(_)
            | WorkMessage::Home(_)
            | WorkMessage::Alert(_)
            | WorkMessage::CloudwatchAlarm(_)
            | WorkMessage::Forget(_) => return None,
        })
    }

    /// The SQS FIFO deduplication id: equal for redeliveries of the same
    /// thing, so SQS drops copies sent within its five-minute window.
    pub fn dedupe_id(&self) -> String {
        match self {
            WorkMessage::StartTurn(request) => request.event_id.to_string(),
            WorkMessage::Approval(click) => {
                format!("approval:{}:{}:{}", click.thread.channel, click.message_ts, click.action_ts)
            }
            WorkMessage::Continue(continuation) => match continuation.waits {
                0 => format!("continue:{}:{}", continuation.turn_id, continuation.after_step),
                waits => format!("continue:{}:{}:{waits}", continuation.turn_id, continuation.after_step),
            },
            WorkMessage::ApprovalTimeout(timeout) => format!("timeout:{}:{}", timeout.turn_id, timeout.tool_use_id),
            WorkMessage::Opened(opened) => format!("opened:{}", opened.event_id),
            WorkMessage::Feedback(click) => format!("feedback:{}:{}:{}", click.turn_id, click.user, click.action_ts),
            WorkMessage::RevokeGrant(click) => {
                format!("revoke:{}:{}:{}:{}", click.thread.channel, click.thread.thread_ts, click.user, click.action_ts)
            }
            // A state is 43 characters: the id stays under SQS's 128.
            WorkMessage::SignedIn(signed_in) => format!("signed-in:{}", signed_in.state),
            // Each click its own: a second click (the first one's arming
            // was too late) is not dropped as a copy of the first.
            WorkMessage::ConnectClick(click) => format!("connect:{}:{}:{}", click.state, click.user, click.action_ts),
            WorkMessage::Home(home) => format!("home:{}:{}:{}", home.team, home.user, home.id),
            WorkMessage::Alert(notice) => notice.dedupe_id(),
            WorkMessage::InvestigateMessage(shortcut) => format!("shortcut:{}", shortcut.event_id),
            WorkMessage::SlashCommand(command) => format!("command:{}", command.event_id),
            WorkMessage::Forget(forget) => format!("forget:{}:{}", forget.team, forget.event_id),
            WorkMessage::CloudwatchAlarm(alarm) => {
                let id = alarm.event.get("id").and_then(serde_json::Value::as_str).unwrap_or_default();
                format!("cloudwatch:{}", id.chars().filter(char::is_ascii_alphanumeric).take(64).collect::<String>())
            }
        }
    }

    pub fn encode(&self) -> String {
        encode_envelope(self)
    }

    pub fn decode(body: &str) -> Result<Self, EnvelopeError> {
        decode_envelope(body)
    }
}

/// What the worker asks the responder to show in the thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReplyMessage {
    /// The turn is answered (or failed): post its answer, once.
    Deliver { turn_id: TurnId, thread: ThreadRef },
    /// A tool call that changes things waits for Approve / Deny buttons.
    ApprovalPrompt {
        turn_id: TurnId,
        thread: ThreadRef,
        tool_use: ToolUse,
        /// Who asked (the turn's requester); absent in prompts sent before
        /// the field existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requester: Option<UserId>,
        /// Who may approve.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        approvers: Vec<Approver>,
        /// When the buttons stop working (Unix seconds).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires_at: Option<i64>,
        /// Deleting or overwriting: the Approve confirmation is red.
        #[serde(default)]
        destructive: bool,
        /// Offer "Approve for this thread" for this many minutes (never
        /// for destructive calls, or where the configuration turns it off).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant_minutes: Option<u32>,
        /// What the grant would cover: the tool, or its MCP server.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant_scope: Option<String>,
        /// Who asked for what: the question, and what the model had read
        /// before proposing the call; absent in prompts sent before the
        /// field existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        origin: Option<CallOrigin>,
    },
    /// A status line while tools run ("running search_docs…").
    Progress { turn_id: TurnId, thread: ThreadRef, step: u32, text: String },
    /// Someone clicked Approve or Deny: the prompt shows who decided what,
    /// and its buttons go (a grant's notice keeps a Revoke button).
    ApprovalDecided {
        turn_id: TurnId,
        thread: ThreadRef,
        tool_use: ToolUse,
        decision: Decision,
        user: UserId,
        /// The grant the decision gave the thread.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant: Option<ThreadGrant>,
        /// The approved call was started and the worker stopped before
        /// recording its result: whether it completed is unknown.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        outcome_unknown: bool,
    },
    /// A call ran without a prompt under the thread's grant: the thread
    /// is told, with a Revoke button.
    RanUnderGrant { turn_id: TurnId, thread: ThreadRef, tool_use: ToolUse, grant: ThreadGrant },
    /// A grant was revoked: the thread is told who ended it.
    GrantRevoked { turn_id: TurnId, thread: ThreadRef, grant: ThreadGrant, user: UserId },
    /// Someone who may not revoke clicked Revoke: only they are told.
    RevokeRefused { turn_id: TurnId, thread: ThreadRef, user: UserId, scope: String },
    /// Nobody decided in time: the prompt says so, and its buttons go.
    ApprovalExpired { turn_id: TurnId, thread: ThreadRef, tool_use: ToolUse },
    /// Someone who may not approve clicked: only they are told (an
    /// ephemeral message) who may.
    ApprovalRefused {
        turn_id: TurnId,
        thread: ThreadRef,
        /// Who clicked.
        user: UserId,
        tool_name: String,
        requester: UserId,
        approvers: Vec<Approver>,
        /// The requester clicked, and this team wants a second person.
        own_request: bool,
        /// The clicker's standing: one of another organization is told
        /// that only the installing team's people approve.
        #[serde(default, skip_serializing_if = "Membership::is_home")]
        membership: Membership,
    },
    /// Someone clicked a prompt's button after its call was decided (a
    /// second click, or a prompt left live by a crash): only they are told
    /// that nothing more runs, and who approved it when someone did.
    ApprovalAnswered {
        turn_id: TurnId,
        thread: ThreadRef,
        /// Who clicked.
        user: UserId,
        tool_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approved_by: Option<UserId>,
    },
    /// A rating was kept: only the person who clicked is told.
    FeedbackNoted { turn_id: TurnId, thread: ThreadRef, user: UserId, rating: Rating },
    /// The turn waits for the person who asked to connect `provider`:
    /// only they see a Connect button to `url` (the provider's sign-in
    /// page; its `state` is single use, and the button's value).
    ConnectPrompt {
        turn_id: TurnId,
        thread: ThreadRef,
        user: UserId,
        provider: String,
        url: String,
        state: String,
        reason: SignInReason,
    },
    /// Someone clicked another person's Connect button: only they are
    /// told, and that button no longer works.
    ConnectRefused { turn_id: TurnId, thread: ThreadRef, user: UserId, owner: UserId, provider: String },
    /// An MCP server asks the person who asked to open a link (elicitation
    /// in URL mode): only they see it, as the server's message (plain text)
    /// and a button to the link (`https` only, checked by the worker).
    OpenLink {
        turn_id: TurnId,
        thread: ThreadRef,
        user: UserId,
        server: String,
        message: String,
        url: String,
        /// The server's id for the request: one message per request.
        elicitation_id: String,
    },
    /// An MCP server asks the person who asked to fill in a form: only
    /// they see the server's message (plain text) with Answer, which opens
    /// the form (`ELICIT#{form_id}`), and Decline, until `expires_at`.
    FormPrompt {
        turn_id: TurnId,
        thread: ThreadRef,
        user: UserId,
        server: String,
        message: String,
        form_id: String,
        /// Unix seconds: no answer is taken after it.
        expires_at: i64,
    },
}

impl ReplyMessage {
    pub fn thread(&self) -> &ThreadRef {
        match self {
            ReplyMessage::Deliver { thread, .. }
            | ReplyMessage::ApprovalPrompt { thread, .. }
            | ReplyMessage::Progress { thread, .. }
            | ReplyMessage::ApprovalDecided { thread, .. }
            | ReplyMessage::ApprovalExpired { thread, .. }
            | ReplyMessage::ApprovalRefused { thread, .. }
            | ReplyMessage::ApprovalAnswered { thread, .. }
            | ReplyMessage::RanUnderGrant { thread, .. }
            | ReplyMessage::GrantRevoked { thread, .. }
            | ReplyMessage::RevokeRefused { thread, .. }
            | ReplyMessage::FeedbackNoted { thread, .. }
            | ReplyMessage::ConnectPrompt { thread, .. }
            | ReplyMessage::ConnectRefused { thread, .. }
            | ReplyMessage::OpenLink { thread, .. }
            | ReplyMessage::FormPrompt { thread, .. } => thread,
        }
    }

    pub fn turn_id(&self) -> &TurnId {
        match self {
            ReplyMessage::Deliver { turn_id, .. }
            | ReplyMessage::ApprovalPrompt { turn_id, .. }
            | ReplyMessage::Progress { turn_id, .. }
            | ReplyMessage::ApprovalDecided { turn_id, .. }
            | ReplyMessage::ApprovalExpired { turn_id, .. }
            | ReplyMessage::ApprovalRefused { turn_id, .. }
            | ReplyMessage::ApprovalAnswered { turn_id, .. }
            | ReplyMessage::RanUnderGrant { turn_id, .. }
            | ReplyMessage::GrantRevoked { turn_id, .. }
            | ReplyMessage::RevokeRefused { turn_id, .. }
            | ReplyMessage::FeedbackNoted { turn_id, .. }
            | ReplyMessage::ConnectPrompt { turn_id, .. }
            | ReplyMessage::ConnectRefused { turn_id, .. }
            | ReplyMessage::OpenLink { turn_id, .. }
            | ReplyMessage::FormPrompt { turn_id, .. } => turn_id,
        }
    }

    /// Equal for repeats of the same request to the responder.
    pub fn dedupe_id(&self) -> String {
        match self {
            ReplyMessage::Deliver { turn_id, .. } => format!("deliver:{turn_id}"),
            ReplyMessage::ApprovalPrompt { turn_id, tool_use, .. } => format!("approval:{turn_id}:{}", tool_use.id),
            ReplyMessage::Progress { turn_id, step, .. } => format!("progress:{turn_id}:{step}"),
            ReplyMessage::ApprovalDecided { turn_id, tool_use, .. } => format!("decided:{turn_id}:{}", tool_use.id),
            ReplyMessage::ApprovalExpired { turn_id, tool_use, .. } => format!("expired:{turn_id}:{}", tool_use.id),
            ReplyMessage::ApprovalRefused { turn_id, user, tool_name, .. } => {
                format!("refused:{turn_id}:{tool_name}:{user}")
            }
            ReplyMessage::ApprovalAnswered { turn_id, user, tool_name, .. } => {
                format!("answered:{turn_id}:{tool_name}:{user}")
            }
            ReplyMessage::FeedbackNoted { turn_id, user, rating, .. } => {
                format!("feedback:{turn_id}:{user}:{}", rating.as_str())
            }
            ReplyMessage::RanUnderGrant { turn_id, tool_use, .. } => format!("granted:{turn_id}:{}", tool_use.id),
            ReplyMessage::GrantRevoked { turn_id, grant, .. } => {
                let revoked_at = grant.revoked.as_ref().map_or(0, |revoked| revoked.at);
                format!("revoked:{turn_id}:{}:{revoked_at}", grant.scope)
            }
            ReplyMessage::RevokeRefused { turn_id, user, scope, .. } => {
                format!("revoke-refused:{turn_id}:{scope}:{user}")
            }
            // One per sign-in link: a new link (after a burn) is a new prompt.
            ReplyMessage::ConnectPrompt { turn_id, state, .. } => format!("connect:{turn_id}:{state}"),
            ReplyMessage::ConnectRefused { turn_id, user, provider, .. } => {
                format!("connect-refused:{turn_id}:{provider}:{user}")
            }
            ReplyMessage::OpenLink { turn_id, server, elicitation_id, .. } => {
                format!("open-link:{turn_id}:{server}:{elicitation_id}")
            }
            ReplyMessage::FormPrompt { turn_id, form_id, .. } => format!("form:{turn_id}:{form_id}"),
        }
    }

    pub fn encode(&self) -> String {
        encode_envelope(self)
    }

    pub fn decode(body: &str) -> Result<Self, EnvelopeError> {
        decode_envelope(body)
    }
}

/// What a queue adapter needs of any message it carries.
pub trait QueueMessage {
    fn encode(&self) -> String;
    /// The FIFO message group: the thread.
    fn group(&self) -> String;
    /// Equal for repeats of the same message.
    fn dedupe_id(&self) -> String;
}

impl QueueMessage for WorkMessage {
    fn encode(&self) -> String {
        WorkMessage::encode(self)
    }

    fn group(&self) -> String {
        self.queue_group()
    }

    fn dedupe_id(&self) -> String {
        WorkMessage::dedupe_id(self)
    }
}

impl QueueMessage for ReplyMessage {
    fn encode(&self) -> String {
        ReplyMessage::encode(self)
    }

    fn group(&self) -> String {
        self.thread().queue_group()
    }

    fn dedupe_id(&self) -> String {
        ReplyMessage::dedupe_id(self)
    }
}

fn encode_envelope<T: Serialize>(message: &T) -> String {
    encode_envelope_at(ENVELOPE_VERSION, message)
}

pub(crate) fn encode_envelope_at<T: Serialize>(v: u32, message: &T) -> String {
    #[derive(Serialize)]
    struct Outgoing<'a, T> {
        v: u32,
        #[serde(flatten)]
        message: &'a T,
    }
    serde_json::to_string(&Outgoing { v, message })
        .expect("queue messages contain only strings, numbers, enums and JSON values")
}

fn decode_envelope<T: DeserializeOwned>(body: &str) -> Result<T, EnvelopeError> {
    decode_envelope_at(ENVELOPE_VERSION, body)
}

pub(crate) fn decode_envelope_at<T: DeserializeOwned>(version: u32, body: &str) -> Result<T, EnvelopeError> {
    #[derive(Deserialize)]
    struct Version {
        v: u32,
    }
    let Version { v } = serde_json::from_str(body).map_err(EnvelopeError::Malformed)?;
    if v != version {
        return Err(EnvelopeError::UnsupportedVersion(v));
    }
    serde_json::from_str(body).map_err(EnvelopeError::Malformed)
}

#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    #[error("message is not a v{ENVELOPE_VERSION} envelope: {0}")]
    Malformed(#[source] serde_json::Error),
    #[error("message envelope version {0} is not supported (this build reads v{ENVELOPE_VERSION})")]
    UnsupportedVersion(u32),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> WorkMessage {
        WorkMessage::StartTurn(TurnRequest {
            event_id: EventId::new("Ev01"),
            thread: ThreadRef {
                team: TeamId::new("T1"),
                channel: ChannelId::new("C1"),
                thread_ts: Ts::new("1700000000.000100"),
            },
            message_ts: Ts::new("1700000000.000100"),
            user: UserId::new("U1"),
            text: "<@UBOT> hello".into(),
            context_channel: None,
            bot_user: None,
            files: Vec::new(),
            membership: slack::Membership::Home,
            asked_at: None,
        })
    }

    #[test]
    fn envelope_round_trips_with_version_and_kind() {
        let message = request();
        let encoded = message.encode();
        let json: serde_json::Value = serde_json::from_str(&encoded).unwrap();
        assert_eq!(json["v"], 1);
        assert_eq!(json["kind"], "start_turn");
        assert_eq!(WorkMessage::decode(&encoded).unwrap(), message);
    }

    #[test]
    fn a_message_sent_before_a_deploy_that_dropped_fields_still_reads() {
        // Written by a build that still sent `event_time` and `trigger`.
        let older = r#"{"v":1,"kind":"start_turn","event_id":"Ev01","event_time":1700000000,"trigger":"app_mention","thread":{"team":"T1","channel":"C1","thread_ts":"1700000000.000100"},"message_ts":"1700000000.000100","user":"U1","text":"<@UBOT> hello"}"#;
        assert_eq!(WorkMessage::decode(older).unwrap(), request());
    }

    #[test]
    fn unknown_version_and_kind_are_refused() {
        let future = request().encode().replacen("\"v\":1", "\"v\":2", 1);
        assert!(matches!(WorkMessage::decode(&future), Err(EnvelopeError::UnsupportedVersion(2))));
        let unknown = r#"{"v":1,"kind":"teleport"}"#;
        assert!(matches!(WorkMessage::decode(unknown), Err(EnvelopeError::Malformed(_))));
        assert!(matches!(WorkMessage::decode("not json"), Err(EnvelopeError::Malformed(_))));
    }

    #[test]
    fn reply_messages_use_the_same_envelope() {
        let thread = request().thread().expect("a start names its thread").clone();
        let deliver = ReplyMessage::Deliver { turn_id: TurnId::new("T1-Ev01"), thread };
        let encoded = deliver.encode();
        assert!(encoded.starts_with(r#"{"v":1,"kind":"deliver""#), "{encoded}");
        assert_eq!(ReplyMessage::decode(&encoded).unwrap(), deliver);
        assert_eq!(deliver.dedupe_id(), "deliver:T1-Ev01");
    }

    #[test]
    fn an_approval_prompt_sent_before_it_carried_its_origin_still_reads() {
        // Written by a build that did not yet say who asked for what.
        let older = r#"{"v":1,"kind":"approval_prompt","turn_id":"T1-Ev01","thread":{"team":"T1","channel":"C1","thread_ts":"1700000000.000100"},"tool_use":{"id":"r1","name":"restart_service","input":{}},"requester":"U1"}"#;
        let ReplyMessage::ApprovalPrompt { origin, requester, .. } = ReplyMessage::decode(older).unwrap() else {
            panic!("an approval prompt")
        };
        assert_eq!((origin, requester), (None, Some(UserId::new("U1"))));
        // And one that does round-trips, its empty parts left out.
        let origin =
            CallOrigin { question: "why is checkout failing?".into(), read: vec!["logs_query".into()], files: 0 };
        let prompt = ReplyMessage::ApprovalPrompt {
            turn_id: TurnId::new("T1-Ev01"),
            thread: request().thread().expect("a start names its thread").clone(),
            tool_use: crate::turn::ToolUse {
                id: "r1".into(),
                name: "restart_service".into(),
                input: serde_json::json!({}),
            },
            requester: Some(UserId::new("U1")),
            approvers: Vec::new(),
            expires_at: None,
            destructive: false,
            grant_minutes: None,
            grant_scope: None,
            origin: Some(origin),
        };
        let encoded = prompt.encode();
        assert!(
            encoded.contains(r#""origin":{"question":"why is checkout failing?","read":["logs_query"]}"#),
            "{encoded}"
        );
        assert_eq!(ReplyMessage::decode(&encoded).unwrap(), prompt);
    }

    #[test]
    fn a_shortcut_names_where_the_message_is_and_its_turn() {
        let encoded = r#"{"v":1,"kind":"investigate_message","event_id":"Sc0675384138b5894552bdd4a780554ee59d1f3638","thread":{"team":"T1","channel":"C1","thread_ts":"1700000000.000100"},"message_ts":"1700000000.000200","user":"U1"}"#;
        let message = WorkMessage::decode(encoded).unwrap();
        assert_eq!(message.encode(), encoded, "round-trips, a home member's membership left out");
        assert_eq!(message.queue_group(), "C1:1700000000.000100");
        assert_eq!(message.turn_id().unwrap().as_str(), "T1-Sc0675384138b5894552bdd4a780554ee59d1f3638");
        assert!(TurnId::is_well_formed(message.turn_id().unwrap().as_str()));
        assert_eq!(message.dedupe_id(), "shortcut:Sc0675384138b5894552bdd4a780554ee59d1f3638");
    }

    #[test]
    fn a_slash_command_carries_its_question_and_a_checked_response_url() {
        let encoded = r#"{"v":1,"kind":"slash_command","event_id":"Sl133452246097384749208088930838d88f008e0","team":"T1","channel":"C1","user":"U1","command":"/assistant","question":"why?","response_url":"https://hooks.slack.com/commands/T1/2/x","asked_at":1700000000}"#;
        let message = WorkMessage::decode(encoded).unwrap();
        assert_eq!(message.encode(), encoded);
        assert_eq!(message.queue_group(), "command:C1:Sl133452246097384749208088930838d88f008e0");
        assert_eq!(message.turn_id().unwrap().as_str(), "T1-Sl133452246097384749208088930838d88f008e0");
        assert!(TurnId::is_well_formed(message.turn_id().unwrap().as_str()));
        assert_eq!(message.dedupe_id(), "command:Sl133452246097384749208088930838d88f008e0");
        let forged = encoded.replace("hooks.slack.com", "169.254.169.254");
        assert!(WorkMessage::decode(&forged).is_err(), "a queue message names no other host either");
    }

    #[test]
    fn queue_keys_follow_thread_and_event() {
        let message = request();
        assert_eq!(message.queue_group(), "C1:1700000000.000100");
        assert_eq!(message.dedupe_id(), "Ev01");
    }
}
