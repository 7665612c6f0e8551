//! Message shortcuts (<https://api.slack.com/reference/interaction-payloads/shortcuts>):
//! what Slack POSTs as `payload=<json>` with `type: "message_action"` when
//! someone picks one of the app's shortcuts in a message's "More actions"
//! menu. Where the bot can read the message itself, the worker reads it
//! from Slack as the bot and checks the person may see it; the copy in the
//! payload (Slack's, signed with the request) is what it investigates only
//! where the bot cannot read the conversation, answering in the person's
//! DM (see `shared/worker/turn/src/handlers/shortcut.rs`).

use crate::ids::{ChannelId, TeamId, Ts, UserId};
use crate::interaction::{Channel, Enterprise, Team, User};
use crate::membership::{Home, Membership};
use serde::Deserialize;

/// The manifest's `callback_id` of "Investigate with the assistant"
/// (`features.shortcuts` in `infra/slack-app-manifest.yaml`).
pub const INVESTIGATE_CALLBACK_ID: &str = "investigate_message";

/// A `message_action` payload.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MessageShortcut {
    pub callback_id: String,
    pub trigger_id: String,
    /// When the person picked the shortcut (Slack sends it; bolt-js calls
    /// it undocumented).
    #[serde(default)]
    pub action_ts: Option<Ts>,
    /// Null in some org-wide installs' payloads ([`crate::interaction::workspace_of`]).
    #[serde(default)]
    pub team: Option<Team>,
    pub user: User,
    #[serde(default)]
    pub enterprise: Option<Enterprise>,
    pub channel: Channel,
    pub message_ts: Ts,
    pub message: ShortcutMessage,
}

/// The message the shortcut was used on, as Slack showed it to the person.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ShortcutMessage {
    pub ts: Ts,
    #[serde(default)]
    pub thread_ts: Option<Ts>,
    /// Who posted it: a person (`user`), or an app (`bot_id` without one).
    #[serde(default)]
    pub user: Option<UserId>,
    #[serde(default)]
    pub text: String,
    /// Kept as JSON: a block or attachment the bot cannot read never fails
    /// the payload ([`crate::readable::message_text`] says what it left out).
    #[serde(default)]
    pub blocks: serde_json::Value,
    #[serde(default)]
    pub attachments: serde_json::Value,
    #[serde(default)]
    pub files: Vec<serde_json::Value>,
}

impl ShortcutMessage {
    /// Its text, blocks and attachments as one readable text, bounded
    /// ([`crate::readable::message_text`]).
    pub fn readable(&self) -> String {
        crate::readable::message_text(&self.text, &self.blocks, &self.attachments)
    }
}

impl MessageShortcut {
    pub fn channel_id(&self) -> &ChannelId {
        &self.channel.id
    }

    /// The workspace the shortcut was used in
    /// ([`crate::interaction::workspace_of`]); none: no workspace can be
    /// known.
    pub fn workspace(&self) -> Option<&TeamId> {
        crate::interaction::workspace_of(&self.team, &self.user)
    }

    pub fn user_id(&self) -> &UserId {
        &self.user.id
    }

    /// The thread the message is in (its own, for a top-level message).
    pub fn thread_ts(&self) -> &Ts {
        self.message.thread_ts.as_ref().unwrap_or(&self.message.ts)
    }

    /// Whether the person belongs to the installing team of deployment
    /// `home`.
    pub fn person_membership(&self, home: &Home) -> Membership {
        let installed = self.team.as_ref().map(|team| &team.id);
        home.clicker(self.user.team_id.as_ref(), installed, Enterprise::id_of(&self.enterprise))
    }

    /// Whether the shortcut was used where deployment `home` is installed.
    pub fn is_of(&self, home: &Home) -> bool {
        home.admits(Enterprise::id_of(&self.enterprise))
    }

    /// What makes this use of the shortcut this one, for the claim that
    /// keeps Slack's retries from starting a second turn: the trigger id's
    /// letters and digits (unique per interaction), the last 40 of them so
    /// that a turn id (`{team}-{event id}`) stays within 64 characters.
    /// None for a trigger id too short to be Slack's.
    pub fn claim_key(&self) -> Option<String> {
        trigger_key(&self.trigger_id)
    }
}

/// The letters and digits of a trigger id, the last 40; none under 16.
pub fn trigger_key(trigger_id: &str) -> Option<String> {
    let kept: Vec<char> = trigger_id.chars().filter(char::is_ascii_alphanumeric).collect();
    (kept.len() >= 16).then(|| kept[kept.len().saturating_sub(40)..].iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slacks_example_reads_with_where_the_message_is() {
        let shortcut: MessageShortcut = serde_json::from_str(testkit::fixtures::MESSAGE_ACTION).unwrap();
        assert_eq!(shortcut.callback_id, INVESTIGATE_CALLBACK_ID);
        assert_eq!((shortcut.channel_id().as_str(), shortcut.message_ts.as_str()), ("C0LAN2Q65", "1763800000.000100"));
        assert_eq!(shortcut.thread_ts().as_str(), "1763800000.000100", "a top-level message is its own thread");
        assert_eq!(shortcut.person_membership(&Home::Workspace), Membership::Home);
        assert_eq!(shortcut.claim_key().as_deref(), Some("0675384138b5894552bdd4a780554ee59d1f3638"));
        let shown = shortcut.message.readable();
        assert!(shown.contains("5xx ratio above 5%"), "the attachment is read: {shown}");
        assert!(shown.contains("https://runbooks.example.com/checkout-5xx"), "{shown}");
        assert_eq!((shortcut.message.user.as_ref(), shortcut.message.files.len()), (None, 0), "posted by an app");
    }

    #[test]
    fn a_message_whose_blocks_are_not_slacks_still_reads() {
        let odd = testkit::fixtures::MESSAGE_ACTION.replace("\"blocks\": []", "\"blocks\": {\"not\": \"a list\"}");
        assert_ne!(odd, testkit::fixtures::MESSAGE_ACTION);
        let shortcut: MessageShortcut = serde_json::from_str(&odd).unwrap();
        assert!(shortcut.message.readable().contains("HighErrorRate"));
    }

    #[test]
    fn trigger_keys_keep_letters_and_digits_and_refuse_what_is_not_slacks() {
        let key = trigger_key("944799105734.773906753841.38b5894552bdd4a780554ee59d1f3638").unwrap();
        assert_eq!(key, "0675384138b5894552bdd4a780554ee59d1f3638", "the last 40: the hash part whole");
        assert_eq!(trigger_key("x.y"), None);
        assert_eq!(trigger_key("../../etc/passwd"), None);
    }
}
