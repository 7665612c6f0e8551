//! Interactivity payloads (<https://api.slack.com/reference/interaction-payloads>):
//! what Slack POSTs as `payload=<json>` when someone clicks a button the bot
//! posted: approval prompts for tools that change things, and the feedback
//! buttons under answers. Their `action_id`s are defined here so the code that posts them and
//! the code that reads the clicks agree.

use crate::ids::{ChannelId, TeamId, Ts, UserId};
use crate::membership::{Home, Membership};
use serde::Deserialize;

/// `action_id` of the button that lets a paused tool call run.
pub const APPROVE_ACTION_ID: &str = "tool_approval.approve";
/// `action_id` of the button that lets it run and grants its tool to the
/// thread for a while.
pub const APPROVE_FOR_THREAD_ACTION_ID: &str = "tool_approval.approve_thread";
/// `action_id` of the button that ends a thread's grant.
pub const REVOKE_GRANT_ACTION_ID: &str = "tool_grant.revoke";
/// `action_id` of the button that refuses it.
pub const DENY_ACTION_ID: &str = "tool_approval.deny";

/// `action_id` of the Connect button (a link to a provider's sign-in) that
/// only the person who asked sees; its value is the sign-in's `state`.
pub const CONNECT_ACTION_ID: &str = "oauth.connect";
/// `action_id` of a connection's Disconnect button on the Home tab; its
/// value is the provider's name.
pub const DISCONNECT_ACTION_ID: &str = "oauth.disconnect";

/// `action_id` of the button to a link an MCP server asked the person who
/// asked to open (elicitation in URL mode); Slack opens the link, the
/// ingress acknowledges the click and does nothing more.
pub const OPEN_LINK_ACTION_ID: &str = "mcp.open_link";

/// `action_id` of the Answer button on a form an MCP server asks the
/// person who asked to fill in; its value is the form's id.
pub const FORM_ANSWER_ACTION_ID: &str = "mcp.form_answer";
/// `action_id` of the Decline button beside it.
pub const FORM_DECLINE_ACTION_ID: &str = "mcp.form_decline";

/// `action_id` of the 👍 / 👎 feedback buttons under every answer.
pub const FEEDBACK_ACTION_ID: &str = "answer_feedback";

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Interaction {
    BlockActions(Box<BlockActions>),
    /// A message shortcut ([`crate::shortcut`]).
    MessageAction(Box<crate::shortcut::MessageShortcut>),
    /// A modal submitted ([`crate::ask_modal`]).
    ViewSubmission(Box<crate::ask_modal::ViewSubmission>),
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BlockActions {
    /// The team whose app posted the buttons (the installing one). An
    /// org-wide install's payloads may carry `"team": null`
    /// ([`workspace_of`]).
    #[serde(default)]
    pub team: Option<Team>,
    pub user: User,
    /// The organization of the installation (Enterprise Grid).
    #[serde(default)]
    pub enterprise: Option<Enterprise>,
    /// The installation is org-wide.
    #[serde(default)]
    pub is_enterprise_install: bool,
    #[serde(default)]
    pub channel: Option<Channel>,
    #[serde(default)]
    pub container: Container,
    /// The message the buttons are on (absent for modals and App Home).
    #[serde(default)]
    pub message: Option<ContainerMessage>,
    pub trigger_id: String,
    #[serde(default)]
    pub actions: Vec<Action>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Team {
    pub id: TeamId,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct User {
    pub id: UserId,
    /// The clicker's own team: another organization's in a shared channel;
    /// under Enterprise Grid possibly the organization (`E…`).
    #[serde(default)]
    pub team_id: Option<TeamId>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Enterprise {
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Channel {
    pub id: ChannelId,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Container {
    #[serde(default)]
    pub message_ts: Option<Ts>,
    #[serde(default)]
    pub channel_id: Option<ChannelId>,
    #[serde(default)]
    pub thread_ts: Option<Ts>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ContainerMessage {
    pub ts: Ts,
    #[serde(default)]
    pub thread_ts: Option<Ts>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Action {
    pub action_id: String,
    #[serde(default)]
    pub value: Option<String>,
    pub action_ts: Ts,
}

/// The workspace an interaction happened in: the payload's `team.id`, else,
/// for an org-wide install's payload with `"team": null`, the person's own
/// `user.team_id` when it names a workspace, not the organization (Slack's
/// Bolt frameworks do the same: "With org-wide installations, payload.team
/// in interactivity payloads can be None. You need to extract either
/// payload.user.team_id or payload.view.team_id", bolt-python
/// `slack_bolt/request/internals.py`, `extract_team_id`). `None`: no
/// workspace can be known, and nothing is keyed by a guess.
pub fn workspace_of<'a>(team: &'a Option<Team>, user: &'a User) -> Option<&'a TeamId> {
    match team {
        Some(team) => Some(&team.id).filter(|id| id.is_workspace()),
        None => user.team_id.as_ref().filter(|id| id.is_workspace()),
    }
}

impl Enterprise {
    /// The organization an optional `enterprise` names.
    pub fn id_of(enterprise: &Option<Enterprise>) -> Option<&str> {
        enterprise.as_ref().map(|enterprise| enterprise.id.as_str())
    }
}

impl BlockActions {
    /// Whether the clicker belongs to the installing team of deployment
    /// `home` ([`Home::clicker`]); a payload naming no team for them
    /// counts as external.
    /// A payload with `"team": null` names no installing workspace: only
    /// the organization counts then.
    pub fn clicker_membership(&self, home: &Home) -> Membership {
        let installed = self.team.as_ref().map(|team| &team.id);
        home.clicker(self.user.team_id.as_ref(), installed, Enterprise::id_of(&self.enterprise))
    }

    /// The workspace of the click ([`workspace_of`]).
    pub fn workspace(&self) -> Option<&TeamId> {
        workspace_of(&self.team, &self.user)
    }

    /// Whether the click is on something deployment `home`'s installation
    /// posted: for an org-wide one, `enterprise.id` is its organization.
    pub fn is_of(&self, home: &Home) -> bool {
        home.admits(Enterprise::id_of(&self.enterprise))
    }

    pub fn channel_id(&self) -> Option<&ChannelId> {
        self.channel.as_ref().map(|c| &c.id).or(self.container.channel_id.as_ref())
    }

    /// The `ts` of the message holding the buttons.
    pub fn message_ts(&self) -> Option<&Ts> {
        self.message.as_ref().map(|m| &m.ts).or(self.container.message_ts.as_ref())
    }

    /// The thread the buttons were posted in.
    pub fn thread_ts(&self) -> Option<&Ts> {
        self.message.as_ref().and_then(|m| m.thread_ts.as_ref()).or(self.container.thread_ts.as_ref())
    }
}
