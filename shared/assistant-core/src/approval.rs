//! Who may approve a tool call that changes things, and what an Approve /
//! Deny button names.
//!
//! A button names its call exactly: the turn, the tool call id, and a
//! fingerprint of the tool's name and input. A click is applied only to the
//! call it was shown for, so a replayed, forged or stale button (a call
//! that was re-planned, say) decides nothing.

use crate::messages::{decode_envelope_at, encode_envelope_at};
use crate::turn::{ToolUse, TurnId};
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

#[cfg(test)]
mod tests {
    use super::*;
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
