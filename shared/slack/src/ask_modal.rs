//! "Ask the assistant about this…": the message shortcut that first asks
//! the person for their own words in a modal
//! (<https://docs.slack.dev/surfaces/modals>), then investigates the
//! message with them.
//!
//! The shortcut's payload opens the modal (`views.open` with its
//! `trigger_id`, which Slack honours for 3 s); where the message is and
//! Slack's copy of it ride in the modal's `private_metadata` (at most 3000
//! characters, kept by Slack and returned only in the signed
//! `view_submission`: the person cannot change it); the submission
//! ([`ViewSubmission`]) carries the person's words from the modal's one
//! input.

use crate::ids::{ChannelId, TeamId, Ts, UserId};
use crate::interaction::{Enterprise, Team, User};
use crate::membership::{Home, Membership};
use crate::shortcut::MessageShortcut;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The manifest's `callback_id` of "Ask the assistant about this…", and of
/// the modal it opens.
pub const ASK_CALLBACK_ID: &str = "ask_about_message";
/// The modal's input: its block and element ids.
pub const NOTE_BLOCK_ID: &str = "note";
pub const NOTE_ACTION_ID: &str = "note_input";
/// The most a person may type (the input's `max_length`).
pub const MAX_NOTE_CHARS: usize = 3000;
/// Slack's limit on a view's `private_metadata`.
pub const MAX_PRIVATE_METADATA: usize = 3000;

/// What the modal keeps for its submission: where the message is, and
/// Slack's copy of it (as much as fits).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskContext {
    #[serde(rename = "w")]
    pub team: TeamId,
    #[serde(rename = "c")]
    pub channel: ChannelId,
    #[serde(rename = "m")]
    pub message_ts: Ts,
    #[serde(rename = "t")]
    pub thread_ts: Ts,
    /// When the shortcut was used (Unix seconds).
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub asked_at: Option<i64>,
    /// Slack's copy of the message, rendered (cut to fit: see `cut`).
    #[serde(rename = "s", default)]
    pub shown: String,
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub author: Option<UserId>,
    #[serde(rename = "f", default)]
    pub files: usize,
    /// `shown` was cut to fit the modal's metadata.
    #[serde(rename = "x", default)]
    pub cut: bool,
}

impl AskContext {
    /// The context of `shortcut`, used in workspace `team`.
    pub fn of(shortcut: &MessageShortcut, team: TeamId) -> Self {
        Self {
            team,
            channel: shortcut.channel_id().clone(),
            message_ts: shortcut.message.ts.clone(),
            thread_ts: shortcut.thread_ts().clone(),
            asked_at: shortcut.action_ts.as_ref().and_then(Ts::unix_secs),
            shown: shortcut.message.readable(),
            author: shortcut.message.user.clone().filter(|user| UserId::is_well_formed(user.as_str())),
            files: shortcut.message.files.len(),
            cut: false,
        }
    }

    /// As `private_metadata`: the copy cut (on a character boundary, and
    /// said) until the whole fits in [`MAX_PRIVATE_METADATA`].
    pub fn to_metadata(&self) -> String {
        let whole = serde_json::to_string(self).expect("strings and numbers");
        if whole.chars().count() <= MAX_PRIVATE_METADATA {
            return whole;
        }
        // The most of the copy that fits (escapes grow it unevenly): halving.
        let shown: Vec<char> = self.shown.chars().collect();
        let with = |kept: usize| {
            let context = Self { shown: shown[..kept].iter().collect(), cut: true, ..self.clone() };
            serde_json::to_string(&context).expect("strings and numbers")
        };
        let (mut fits, mut over) = (0, shown.len());
        while over - fits > 1 {
            let mid = (fits + over) / 2;
            if with(mid).chars().count() <= MAX_PRIVATE_METADATA { fits = mid } else { over = mid }
        }
        with(fits)
    }
}

/// The modal `views.open` shows: one optional multi-line input.
pub fn view(context: &AskContext) -> Value {
    json!({
        "type": "modal",
        "callback_id": ASK_CALLBACK_ID,
        "title": {"type": "plain_text", "text": "Ask the assistant"},
        "submit": {"type": "plain_text", "text": "Investigate"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "private_metadata": context.to_metadata(),
        "blocks": [{
            "type": "input",
            "block_id": NOTE_BLOCK_ID,
            "optional": true,
            "label": {"type": "plain_text", "text": "What should I look at?"},
            "hint": {"type": "plain_text", "text": "I'll read the message too, and answer in its thread (or in our DM)."},
            "element": {
                "type": "plain_text_input",
                "action_id": NOTE_ACTION_ID,
                "multiline": true,
                "max_length": MAX_NOTE_CHARS,
                "placeholder": {"type": "plain_text", "text": "e.g. did the last deploy cause this?"}
            }
        }]
    })
}

/// A `view_submission` payload: the person submitted a modal.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ViewSubmission {
    #[serde(default)]
    pub team: Option<Team>,
    pub user: User,
    #[serde(default)]
    pub enterprise: Option<Enterprise>,
    pub view: SubmittedView,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SubmittedView {
    pub id: String,
    #[serde(default)]
    pub callback_id: String,
    #[serde(default)]
    pub private_metadata: String,
    #[serde(default)]
    pub state: ViewState,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ViewState {
    #[serde(default)]
    pub values: Value,
}

impl ViewSubmission {
    /// What the modal kept, if it is ours and reads.
    pub fn context(&self) -> Option<AskContext> {
        serde_json::from_str(&self.view.private_metadata).ok()
    }

    /// The person's words (trimmed, at most [`MAX_NOTE_CHARS`]); none when
    /// they typed nothing.
    pub fn note(&self) -> Option<String> {
        let value = self.view.state.values[NOTE_BLOCK_ID][NOTE_ACTION_ID]["value"].as_str()?;
        let note: String = value.trim().chars().take(MAX_NOTE_CHARS).collect();
        (!note.is_empty()).then_some(note)
    }

    /// What makes this submission this one, for its claim: the view id's
    /// letters and digits (Slack's are 9 to 11), none for one that is not
    /// Slack's shape.
    pub fn claim_key(&self) -> Option<String> {
        let kept: String = self.view.id.chars().filter(char::is_ascii_alphanumeric).collect();
        (kept.len() >= 8 && kept.len() == self.view.id.len() && kept.len() <= 40).then_some(kept)
    }

    pub fn is_of(&self, home: &Home) -> bool {
        home.admits(Enterprise::id_of(&self.enterprise))
    }

    /// Whether the person belongs to the installing team of deployment `home`.
    pub fn person_membership(&self, home: &Home) -> Membership {
        let installed = self.team.as_ref().map(|team| &team.id);
        home.clicker(self.user.team_id.as_ref(), installed, Enterprise::id_of(&self.enterprise))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(shown: &str) -> AskContext {
        AskContext {
            team: TeamId::new("T061EG9R6"),
            channel: ChannelId::new("C0LAN2Q65"),
            message_ts: Ts::new("1763800000.000100"),
            thread_ts: Ts::new("1763800000.000100"),
            asked_at: Some(1_763_800_950),
            shown: shown.into(),
            author: None,
            files: 0,
            cut: false,
        }
    }

    #[test]
    fn the_metadata_fits_slacks_limit_and_says_when_the_copy_was_cut() {
        let short = context("[FIRING:1] HighErrorRate");
        assert_eq!(serde_json::from_str::<AskContext>(&short.to_metadata()).unwrap(), short);
        // Characters JSON escapes grow: the cut is measured on the result.
        let long = context(&"é\"<\n".repeat(5000));
        let metadata = long.to_metadata();
        assert!(metadata.chars().count() <= MAX_PRIVATE_METADATA, "{}", metadata.len());
        let read: AskContext = serde_json::from_str(&metadata).unwrap();
        assert!(read.cut && !read.shown.is_empty() && long.shown.starts_with(&read.shown));
    }

    #[test]
    fn the_modal_has_one_optional_input_and_carries_the_context() {
        let view = view(&context("alert"));
        assert_eq!((view["type"].as_str(), view["callback_id"].as_str()), (Some("modal"), Some(ASK_CALLBACK_ID)));
        assert_eq!(view["blocks"][0]["element"]["max_length"], MAX_NOTE_CHARS);
        assert_eq!(view["blocks"][0]["optional"], true);
        assert!(view["title"]["text"].as_str().unwrap().len() <= 24, "Slack's title limit");
    }

    #[test]
    fn a_submission_gives_the_words_the_context_and_a_claim_key() {
        let payload = json!({
            "type": "view_submission",
            "team": {"id": "T061EG9R6"},
            "user": {"id": "U061F7AUR", "team_id": "T061EG9R6"},
            "view": {
                "id": "VMHU10V25",
                "callback_id": ASK_CALLBACK_ID,
                "private_metadata": context("alert").to_metadata(),
                "state": {"values": {NOTE_BLOCK_ID: {NOTE_ACTION_ID: {"type": "plain_text_input", "value": "  did the deploy do it?  "}}}}
            }
        });
        let submission: ViewSubmission = serde_json::from_value(payload).unwrap();
        assert_eq!(submission.note().as_deref(), Some("did the deploy do it?"));
        assert_eq!(submission.context(), Some(context("alert")));
        assert_eq!(submission.claim_key().as_deref(), Some("VMHU10V25"));
        let mut blank = submission.clone();
        blank.view.state.values = json!({NOTE_BLOCK_ID: {NOTE_ACTION_ID: {"value": null}}});
        assert_eq!(blank.note(), None);
        let mut odd = submission;
        odd.view.id = "V1/../x".into();
        odd.view.private_metadata = "not ours".into();
        assert_eq!((odd.claim_key(), odd.context()), (None, None));
    }
}
