//! Who may approve a tool call that changes things, and what an Approve /
//! Deny button names.
//!
//! A button names its call exactly: the turn, the tool call id, and a
//! fingerprint of the tool's name and input. A click is applied only to the
//! call it was shown for, so a replayed, forged or stale button (a call
//! that was re-planned, say) decides nothing.
//!
//! A prompt also says who asked for what ([`CallOrigin`]): the person's
//! question, and what the model had read in the turn before it proposed the
//! call. A call proposed after reading tool results or files may have been
//! steered by them: nobody asked for it directly.

use crate::messages::{decode_envelope_at, encode_envelope_at};
use crate::turn::{Content, ToolUse, Turn, TurnId};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use slack::UserId;
use std::fmt;

/// Someone who may approve: the person whose message started the turn, a
/// Slack user (`U…`, `W…`), or everyone in a user group (`S…`). Written as
/// `"requester"`, `"U0123ABCD"`, `"S0123ABCD"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Approver {
    Requester,
    User(UserId),
    Group(String),
}

impl Approver {
    /// The default: only the person who asked.
    pub fn requester_only() -> Vec<Approver> {
        vec![Approver::Requester]
    }
}

/// A configured approver that is none of the three kinds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an approver: use \"requester\", a Slack user id (U…, W…) or a user group id (S…)")]
pub struct NotAnApprover(pub String);

impl TryFrom<String> for Approver {
    type Error = NotAnApprover;

    fn try_from(text: String) -> Result<Self, NotAnApprover> {
        let id_like =
            |rest: &str| rest.len() >= 2 && rest.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
        match text.split_at_checked(1) {
            _ if text == "requester" => Ok(Approver::Requester),
            Some(("U" | "W", rest)) if id_like(rest) => Ok(Approver::User(UserId::new(text))),
            Some(("S", rest)) if id_like(rest) => Ok(Approver::Group(text)),
            _ => Err(NotAnApprover(text)),
        }
    }
}

impl From<Approver> for String {
    fn from(approver: Approver) -> Self {
        approver.to_string()
    }
}

impl fmt::Display for Approver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Approver::Requester => f.write_str("requester"),
            Approver::User(user) => write!(f, "{user}"),
            Approver::Group(group) => f.write_str(group),
        }
    }
}

/// A short fingerprint of a call's tool and input: equal for the same call,
/// different if either changed.
pub fn call_fingerprint(call: &ToolUse) -> String {
    let mut hash = Sha256::new();
    hash.update(call.name.as_bytes());
    hash.update([0]);
    // serde_json writes object keys in order: the same input, the same bytes.
    hash.update(call.input.to_string().as_bytes());
    hex::encode(&hash.finalize()[..12])
}

/// What an Approve / Deny button carries in Slack's `value`. Versioned,
/// because buttons stay in Slack across deploys: a button an older build
/// posted still reads, and decides nothing it cannot name exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalButton {
    pub turn_id: TurnId,
    pub tool_use_id: String,
    /// [`call_fingerprint`] of the call the button was shown for; `None`
    /// on buttons posted before v2, which therefore approve nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
}

impl ApprovalButton {
    /// The version this build writes.
    pub const VERSION: u32 = 2;

    /// The button for `call` in `turn`.
    pub fn for_call(turn: &TurnId, call: &ToolUse) -> Self {
        Self { turn_id: turn.clone(), tool_use_id: call.id.clone(), call: Some(call_fingerprint(call)) }
    }

    /// Whether the button was shown for exactly this call.
    pub fn names(&self, call: &ToolUse) -> bool {
        self.tool_use_id == call.id && self.call.as_deref() == Some(call_fingerprint(call).as_str())
    }

    /// The button's `value`: `{"v":2,"turn_id":…,"tool_use_id":…,"call":…}`.
    pub fn encode(&self) -> String {
        encode_envelope_at(Self::VERSION, self)
    }

    /// A button's `value` back, `None` when it is not one of ours. Reads
    /// v2, v1 (no fingerprint) and the unversioned `turn:call` form of the
    /// first builds.
    pub fn decode(value: &str) -> Option<Self> {
        if value.starts_with('{') {
            return decode_envelope_at(Self::VERSION, value)
                .or_else(|_| decode_envelope_at::<Self>(1, value).map(|old| Self { call: None, ..old }))
                .ok();
        }
        let (turn, call) = value.split_once(':')?;
        (!turn.is_empty() && !call.is_empty()).then(|| Self {
            turn_id: TurnId::new(turn),
            tool_use_id: call.to_owned(),
            call: None,
        })
    }
}

/// Where a call waiting for approval came from, as its prompt says it:
/// the question the person asked, and what the model had read in the turn
/// before proposing the call. Carried on the prompt request; a request sent
/// before it existed has none, and its prompt says only whom the call is
/// for.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CallOrigin {
    /// The question, redacted and shortened by the worker (plain text: the
    /// prompt escapes it); empty when the person asked without words.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub question: String,
    /// The tools whose results the model had read before proposing the
    /// call, each once, in the order it first read them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    /// Files shared in the thread (images, documents) the model was shown.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub files: u32,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

impl CallOrigin {
    /// For the call `call_id` in `turn`: what the transcript held before the
    /// model's message that proposed it (all of it when no message did).
    /// Results of calls proposed beside it, in the same message, came after.
    pub fn of(turn: &Turn, call_id: &str, question: String) -> Self {
        let before = turn
            .transcript
            .iter()
            .position(|message| message.tool_uses().any(|call| call.id == call_id))
            .unwrap_or(turn.transcript.len());
        let earlier = &turn.transcript[..before];
        let name_of = |id: &str| earlier.iter().flat_map(|message| message.tool_uses()).find(|call| call.id == id);
        let mut read: Vec<String> = Vec::new();
        let mut files = 0u32;
        for content in earlier.iter().flat_map(|message| &message.content) {
            match content {
                Content::ToolResult(result) => {
                    if let Some(call) = name_of(&result.tool_use_id)
                        && !read.contains(&call.name)
                    {
                        read.push(call.name.clone());
                    }
                }
                Content::File(_) => files = files.saturating_add(1),
                Content::Text(_) | Content::ToolUse(_) => {}
            }
        }
        Self { question, read, files }
    }

    /// Whether the model had read anything but the question (and the
    /// thread's messages) before proposing the call.
    pub fn read_content(&self) -> bool {
        !self.read.is_empty() || self.files > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_origin_is_what_the_model_read_before_the_message_proposing_it() {
        use crate::messages::TurnRequest;
        use crate::turn::{Message, Role, ToolOutput, ToolResult, ToolStatus};
        let call = |id: &str, name: &str| {
            Content::ToolUse(ToolUse { id: id.into(), name: name.into(), input: serde_json::json!({}) })
        };
        let result = |id: &str| {
            Content::ToolResult(ToolResult {
                tool_use_id: id.into(),
                status: ToolStatus::Success,
                output: ToolOutput::Text("…".into()),
            })
        };
        let file = Content::File(crate::files::FileBlock {
            file_id: "F1".into(),
            name: "error.png".into(),
            key: "files/F1".into(),
            kind: crate::files::FileKind::Image(crate::files::ImageFormat::Png),
        });
        let request: TurnRequest = serde_json::from_value(serde_json::json!({
            "event_id": "Ev1", "thread": {"team": "T1", "channel": "C1", "thread_ts": "1.1"},
            "message_ts": "1.1", "user": "U1", "text": "why?"
        }))
        .unwrap();
        let mut turn = Turn::start(&request, 0);
        turn.transcript = vec![
            Message { role: Role::User, content: vec![Content::Text("<@U1>: why?".into()), file] },
            Message { role: Role::Assistant, content: vec![call("l1", "logs_query"), call("d1", "read_doc")] },
            Message { role: Role::User, content: vec![result("l1"), result("d1")] },
            Message { role: Role::Assistant, content: vec![call("l2", "logs_query")] },
            Message { role: Role::User, content: vec![result("l2")] },
            // Proposed beside a read: that result came after.
            Message { role: Role::Assistant, content: vec![call("s1", "search_docs"), call("r1", "restart_service")] },
        ];
        let origin = CallOrigin::of(&turn, "r1", "why?".into());
        assert_eq!(origin.read, ["logs_query", "read_doc"], "each tool once, in the order first read");
        assert_eq!(origin.files, 1);
        assert!(origin.read_content());
        // The first step's calls were proposed from the question and the thread's file alone.
        let first = CallOrigin::of(&turn, "l1", String::new());
        assert_eq!((first.read.len(), first.files), (0, 1));
        turn.transcript.remove(0);
        assert!(!CallOrigin::of(&turn, "l1", String::new()).read_content(), "nothing read: asked directly");
    }
    use serde_json::json;

    fn call(input: serde_json::Value) -> ToolUse {
        ToolUse { id: "tooluse_abc".into(), name: "restart_service".into(), input }
    }

    #[test]
    fn buttons_name_the_call_exactly_and_old_ones_still_read() {
        let restart = call(json!({"service": "checkout-api", "env": "prod"}));
        let button = ApprovalButton::for_call(&TurnId::new("T1-Ev01"), &restart);
        let value = button.encode();
        assert!(value.starts_with(r#"{"v":2,"turn_id":"T1-Ev01","tool_use_id":"tooluse_abc","call":""#), "{value}");
        assert_eq!(ApprovalButton::decode(&value), Some(button.clone()));
        assert!(button.names(&restart));
        assert!(!button.names(&call(json!({"service": "payments-api", "env": "prod"}))), "another input");
        assert!(!button.names(&ToolUse { name: "delete_service".into(), ..restart.clone() }), "another tool");

        let v1 = ApprovalButton::decode(r#"{"v":1,"turn_id":"T1-Ev01","tool_use_id":"tooluse_abc"}"#).unwrap();
        let legacy = ApprovalButton::decode("T1-Ev01:tooluse_abc").unwrap();
        for old in [v1, legacy] {
            assert_eq!((old.turn_id.as_str(), old.tool_use_id.as_str(), old.call), ("T1-Ev01", "tooluse_abc", None));
        }
        assert!(!ApprovalButton { call: None, ..button }.names(&restart), "an old button approves nothing");
    }

    #[test]
    fn foreign_and_forged_values_are_not_buttons() {
        for hostile in ["", "no-separator", ":x", "x:", r#"{"v":3,"turn_id":"a","tool_use_id":"b"}"#, "{not json"] {
            assert_eq!(ApprovalButton::decode(hostile), None, "{hostile:?}");
        }
    }

    #[test]
    fn approvers_are_the_requester_users_or_groups_and_nothing_else() {
        let parse = |text: &str| Approver::try_from(text.to_owned());
        assert_eq!(parse("requester"), Ok(Approver::Requester));
        assert_eq!(parse("U061F7AUR"), Ok(Approver::User(UserId::new("U061F7AUR"))));
        assert_eq!(parse("W0123ABCD"), Ok(Approver::User(UserId::new("W0123ABCD"))));
        assert_eq!(parse("S0614TZR7"), Ok(Approver::Group("S0614TZR7".into())));
        for bad in ["", "everyone", "@here", "C0LAN2Q65", "U", "u061f7aur", "S0614 TZR7", "<!subteam^S1>"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let json: Vec<Approver> = serde_json::from_str(r#"["requester", "U061F7AUR", "S0614TZR7"]"#).unwrap();
        assert_eq!(serde_json::to_string(&json).unwrap(), r#"["requester","U061F7AUR","S0614TZR7"]"#);
    }
}
