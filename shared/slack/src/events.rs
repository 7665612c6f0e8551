//! Events API payloads (<https://api.slack.com/apis/events-api>): the JSON
//! bodies Slack POSTs to the request URL.
//!
//! Only what the bot acts on is typed. Every other payload or event type
//! parses as `Unknown` so that Slack adding a new one never makes us answer
//! with an error (Slack disables apps whose request URL keeps failing).

use crate::ids::{ChannelId, EventId, TeamId, Ts, UserId};
use crate::membership::{Home, Membership};
use serde::Deserialize;

/// The outer `type` of an Events API request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventsPayload {
    /// Sent once when the request URL is configured; we echo `challenge`.
    UrlVerification {
        challenge: String,
    },
    EventCallback(Box<EventCallback>),
    /// Slack stopped sending us events for a while (rate limited).
    AppRateLimited {
        #[serde(default)]
        minute_rate_limited: Option<i64>,
    },
    #[serde(other)]
    Unknown,
}

/// One delivery of one event. Slack retries it with the same `event_id`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EventCallback {
    /// The workspace the event is for. An org-wide install's events about
    /// the organization itself name none (`"team_id": null` beside
    /// `enterprise_id`, as Slack's `team_access_granted` /
    /// `team_access_revoked` references show:
    /// <https://docs.slack.dev/reference/events/team_access_revoked/>), or
    /// name the organization (`E…`, as `app_uninstalled_team`'s `team_id`
    /// does). See [`EventCallback::workspace`].
    #[serde(default)]
    pub team_id: Option<TeamId>,
    #[serde(default)]
    pub api_app_id: Option<String>,
    pub event_id: EventId,
    pub event_time: i64,
    pub event: Event,
    /// Who the event is for; our own bot user is the one with `is_bot`.
    #[serde(default)]
    pub authorizations: Vec<Authorization>,
    #[serde(default)]
    pub enterprise_id: Option<String>,
    /// The event happened in a channel shared with another organization.
    #[serde(default)]
    pub is_ext_shared_channel: bool,
    /// Under Enterprise Grid: the workspace and organization the event
    /// happened in (in a Connect channel, possibly the other side's).
    /// Where, not who: no check is decided by them.
    #[serde(default)]
    pub context_team_id: Option<TeamId>,
    #[serde(default)]
    pub context_enterprise_id: Option<String>,
}

impl EventCallback {
    /// The bot user this app is installed as, used to tell our own messages
    /// and mentions of us apart from everyone else's.
    pub fn bot_user_id(&self) -> Option<&UserId> {
        self.authorizations.iter().find(|a| a.is_bot).map(|a| &a.user_id)
    }

    /// A person the event is for (an authorization that is not a bot's).
    pub fn person_user_id(&self) -> Option<&UserId> {
        self.authorizations.iter().find(|a| !a.is_bot).map(|a| &a.user_id)
    }

    /// The workspace the event happened in, keying its threads: the outer
    /// `team_id`, else `context_team_id` (Slack's "where" under Enterprise
    /// Grid), else the installation's (`authorizations[0].team_id`), the
    /// first that names a workspace. An organization's id (`E…`) names
    /// none. `None`: the event names no workspace (an org-wide install's
    /// event about the whole organization).
    pub fn workspace(&self) -> Option<&TeamId> {
        let installed = self.authorizations.first().and_then(|a| a.team_id.as_ref());
        [self.team_id.as_ref(), self.context_team_id.as_ref(), installed]
            .into_iter()
            .flatten()
            .find(|team| team.is_workspace())
    }

    /// Where the app is installed: `authorizations[0]`'s team (in a
    /// shared channel the outer `team_id` may be the other side's; for an
    /// org-wide install it is null, and the event's workspace stands in).
    pub fn installation(&self) -> Installation {
        let installed = self.authorizations.first();
        Installation {
            team: installed.and_then(|a| a.team_id.clone()).or_else(|| self.workspace().cloned()),
            enterprise: installed.and_then(|a| a.enterprise_id.clone()).or_else(|| self.enterprise_id.clone()),
            shared_channel: self.is_ext_shared_channel,
        }
    }
}

/// The installing team as one callback names it, to place a message's
/// author by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    /// None: the callback names no workspace at all.
    pub team: Option<TeamId>,
    pub enterprise: Option<String>,
    /// The event happened in a channel shared with another organization.
    pub shared_channel: bool,
}

impl Installation {
    /// Whether a message's author, from `author_team` (the event's
    /// `user_team`, else its `team`), belongs to the installing team of
    /// deployment `home` ([`Home::author`]). A message naming no team is
    /// external in a shared channel, home elsewhere.
    pub fn membership_of(&self, home: &Home, author_team: Option<&TeamId>) -> Membership {
        home.author(author_team, (self.team.as_ref(), self.enterprise.as_deref()), self.shared_channel)
    }

    /// Whether the installation is deployment `home`'s: for an org-wide
    /// deployment, in its organization.
    pub fn is_of(&self, home: &Home) -> bool {
        home.admits(self.enterprise.as_deref())
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Authorization {
    pub user_id: UserId,
    #[serde(default)]
    pub is_bot: bool,
    /// The workspace the app is installed in (null for an org-wide install).
    #[serde(default)]
    pub team_id: Option<TeamId>,
    #[serde(default)]
    pub enterprise_id: Option<String>,
    /// The installation is org-wide (Enterprise Grid).
    #[serde(default)]
    pub is_enterprise_install: bool,
}

/// The inner `event.type`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    AppMention(AppMention),
    Message(MessageEvent),
    AssistantThreadStarted(AssistantThreadStarted),
    AppHomeOpened(AppHomeOpened),
    AppContextChanged(AppContextChanged),
    /// The app was removed from the workspace (or the org): its tokens are
    /// gone. Carries nothing but its type; the callback names the team.
    AppUninstalled,
    /// Some of the app's tokens were revoked: `tokens.oauth` and
    /// `tokens.bot` list the user ids whose tokens they were.
    TokensRevoked(TokensRevoked),
    /// A person's profile changed; `user.deleted` says they left (were
    /// deactivated).
    UserChange(UserChange),
    #[serde(other)]
    Unknown,
}

/// `tokens_revoked` (<https://docs.slack.dev/reference/events/tokens_revoked>).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct TokensRevoked {
    #[serde(default)]
    pub tokens: RevokedTokens,
}

/// Whose tokens were revoked, by kind: user ids, never token strings.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RevokedTokens {
    /// People's (user) tokens.
    #[serde(default)]
    pub oauth: Vec<UserId>,
    /// The app's bot user: the bot can no longer act in the team.
    #[serde(default)]
    pub bot: Vec<UserId>,
}

/// `user_change` (<https://docs.slack.dev/reference/events/user_change>):
/// the whole user object; only who, of which team, and whether deleted is
/// read.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UserChange {
    pub user: ChangedUser,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChangedUser {
    pub id: UserId,
    /// The person's own workspace (under Enterprise Grid, their home
    /// workspace in the org).
    #[serde(default)]
    pub team_id: Option<TeamId>,
    #[serde(default)]
    pub deleted: bool,
    /// Under Enterprise Grid: the person's organization.
    #[serde(default)]
    pub enterprise_user: Option<EnterpriseUser>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EnterpriseUser {
    #[serde(default)]
    pub enterprise_id: Option<String>,
}

/// `@bot …` in a channel the bot is in.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AppMention {
    pub channel: ChannelId,
    /// Absent when a bot or integration wrote the message.
    #[serde(default)]
    pub user: Option<UserId>,
    #[serde(default)]
    pub bot_id: Option<String>,
    #[serde(default)]
    pub text: String,
    pub ts: Ts,
    #[serde(default)]
    pub thread_ts: Option<Ts>,
    /// Files attached to the message.
    #[serde(default)]
    pub files: Vec<SlackFile>,
    /// The author's team (Slack Connect: another organization's).
    #[serde(default)]
    pub user_team: Option<TeamId>,
    #[serde(default)]
    pub team: Option<TeamId>,
    /// The Data Access API's token (see [`ActionToken`]).
    #[serde(default)]
    action_token: Option<ActionToken>,
    #[serde(default)]
    assistant_thread: Option<ThreadActionToken>,
}

/// An event's `assistant_thread`, for its action token.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct ThreadActionToken {
    #[serde(default)]
    action_token: Option<ActionToken>,
}

/// The action token of a person's message, wherever the event carries it:
/// at its top or in its `assistant_thread`.
macro_rules! action_token_getter {
    ($($event:ty),*) => {$(
        impl $event {
            pub fn action_token(&self) -> Option<&ActionToken> {
                self.action_token.as_ref().or_else(|| self.assistant_thread.as_ref()?.action_token.as_ref())
            }
        }
    )*};
}

action_token_getter!(AppMention, MessageEvent);

/// The author's team as a message event names it: `user_team`, else `team`.
macro_rules! author_team_getter {
    ($($event:ty),*) => {$(
        impl $event {
            pub fn author_team(&self) -> Option<&TeamId> {
                self.user_team.as_ref().or(self.team.as_ref())
            }
        }
    )*};
}

author_team_getter!(AppMention, MessageEvent);

/// The short-lived token a person's message event carries: with it the app
/// may search what that person can see (`assistant.search.context`). A
/// credential: `Debug` prints none of it, and it never enters a queue
/// message, a turn or a log.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct ActionToken(String);

impl ActionToken {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ActionToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ActionToken(..)")
    }
}

/// A `message` event: direct messages, channel messages (including thread
/// replies) and their changes. `subtype` says which kind of change; a plain
/// message written by a person has none.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MessageEvent {
    pub channel: ChannelId,
    /// `im` for direct messages, `channel`, `group`, `mpim` otherwise.
    #[serde(default)]
    pub channel_type: Option<String>,
    #[serde(default)]
    pub subtype: Option<String>,
    #[serde(default)]
    pub user: Option<UserId>,
    #[serde(default)]
    pub bot_id: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    pub ts: Ts,
    #[serde(default)]
    pub thread_ts: Option<Ts>,
    /// Author of the thread's parent message (thread replies only).
    #[serde(default)]
    pub parent_user_id: Option<UserId>,
    /// Files attached to the message (subtype `file_share`).
    #[serde(default)]
    pub files: Vec<SlackFile>,
    /// The author's team (Slack Connect: another organization's).
    #[serde(default)]
    pub user_team: Option<TeamId>,
    #[serde(default)]
    pub team: Option<TeamId>,
    /// The Data Access API's token (see [`ActionToken`]).
    #[serde(default)]
    action_token: Option<ActionToken>,
    #[serde(default)]
    assistant_thread: Option<ThreadActionToken>,
}

/// A file as events and `conversations.replies` describe it
/// (<https://docs.slack.dev/reference/objects/file-object>). Only what the
/// bot needs to decide whether and how to read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct SlackFile {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub mimetype: Option<String>,
    /// Slack's short type: `png`, `pdf`, `text`, `javascript`…
    #[serde(default)]
    pub filetype: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    /// Where the bot downloads it, with its token (needs `files:read`).
    #[serde(default)]
    pub url_private_download: Option<String>,
    /// `hosted`, `external` (a link to Google Drive, Dropbox…), `snippet`,
    /// `post`, `tombstone` (deleted).
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub is_external: bool,
    /// `check_file_info`: shared from another organization (Slack Connect);
    /// the event carries only the id, and the file may not be readable.
    #[serde(default)]
    pub file_access: Option<String>,
}

impl MessageEvent {
    pub fn is_direct_message(&self) -> bool {
        self.channel_type.as_deref() == Some("im")
    }

    /// A reply inside a thread, as opposed to a thread's parent or a
    /// top-level message.
    pub fn is_thread_reply(&self) -> bool {
        self.thread_ts.as_ref().is_some_and(|thread| *thread != self.ts)
    }
}

/// A user opened the assistant side panel (Slack's AI apps surface).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AssistantThreadStarted {
    pub assistant_thread: AssistantThread,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AssistantThread {
    pub user_id: UserId,
    pub channel_id: ChannelId,
    pub thread_ts: Ts,
    /// Where the user was when they opened the panel.
    #[serde(default)]
    pub context: AssistantContext,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct AssistantContext {
    #[serde(default)]
    pub channel_id: Option<ChannelId>,
    #[serde(default)]
    pub team_id: Option<TeamId>,
}

/// A person opened one of the app's tabs. With the agent experience
/// (`agent_view`), tab `messages` is the bot's DM, opened.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AppHomeOpened {
    pub user: UserId,
    pub channel: ChannelId,
    #[serde(default)]
    pub tab: String,
}

impl AppHomeOpened {
    pub const MESSAGES_TAB: &str = "messages";
    /// The app's Home tab (`views.publish` shows it).
    pub const HOME_TAB: &str = "home";
}

/// What a person is looking at changed while the app is open beside it
/// (agent experience only). `context.entities` are ordered by relevance;
/// an empty context means nothing in particular.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AppContextChanged {
    /// Who: on the event when Slack sends it, otherwise the person's
    /// authorization on the callback.
    #[serde(default)]
    pub user: Option<UserId>,
    #[serde(default)]
    pub context: AgentContext,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct AgentContext {
    #[serde(default)]
    pub entities: Vec<ContextEntity>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ContextEntity {
    #[serde(rename = "type")]
    pub kind: String,
    pub value: String,
}

impl AgentContext {
    const CHANNEL_ENTITY: &str = "slack#/types/channel_id";

    /// The most relevant channel in view, if its id has a channel id's
    /// shape (anything else is not put in a prompt).
    pub fn channel(&self) -> Option<ChannelId> {
        self.entities
            .iter()
            .filter(|entity| entity.kind == Self::CHANNEL_ENTITY)
            .map(|entity| entity.value.as_str())
            .find(|id| ChannelId::is_well_formed(id))
            .map(ChannelId::new)
    }
}
