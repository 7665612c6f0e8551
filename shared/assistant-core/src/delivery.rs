//! What the responder shows in a turn's thread, and what it remembers of
//! it. The [`DeliveryRecord`] sits beside the turn (its own item) and has
//! one writer, the responder; the worker only reads it, to leave alone a
//! turn whose thread already got an apology.
//!
//! Every message the responder posts has a typed [`MessageKey`] (`answer
//! 1/2`, `approval tooluse_…`, `placeholder`, `apology`) and carries
//! [`MessageMetadata`] naming the turn and the key, so a redelivery whose
//! earlier attempt has an unknown outcome finds what was posted in the
//! thread before it posts again.

use crate::turn::TurnId;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use slack::Ts;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Which of a turn's messages a message is. Stored and sent as its text
/// form (`answer 1/2`), parsed back strictly.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum MessageKey {
    /// Part `part` of an answer posted in `of` messages.
    Answer { part: u32, of: u32 },
    /// The Approve / Deny prompt for one tool call.
    Approval { tool_use_id: String },
    /// The message shown while tools run where Slack has no status line;
    /// the answer replaces it.
    Placeholder,
    /// The apology for a turn whose work ended in a dead-letter queue.
    Apology,
    /// A notice in the thread (a grant revoked), named by what it tells.
    Notice { id: String },
}

impl MessageKey {
    pub fn is_answer(&self) -> bool {
        matches!(self, MessageKey::Answer { .. })
    }
}

impl fmt::Display for MessageKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MessageKey::Answer { part, of } => write!(f, "answer {part}/{of}"),
            MessageKey::Approval { tool_use_id } => write!(f, "approval {tool_use_id}"),
            MessageKey::Placeholder => f.write_str("placeholder"),
            MessageKey::Apology => f.write_str("apology"),
            MessageKey::Notice { id } => write!(f, "notice {id}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a message key")]
pub struct BadMessageKey(String);

impl FromStr for MessageKey {
    type Err = BadMessageKey;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || BadMessageKey(text.to_owned());
        match text.split_once(' ') {
            None if text == "placeholder" => Ok(MessageKey::Placeholder),
            None if text == "apology" => Ok(MessageKey::Apology),
            Some(("answer", parts)) => {
                let (part, of) = parts.split_once('/').ok_or_else(bad)?;
                let (part, of): (u32, u32) = (part.parse().map_err(|_| bad())?, of.parse().map_err(|_| bad())?);
                (1..=of).contains(&part).then_some(MessageKey::Answer { part, of }).ok_or_else(bad)
            }
            Some(("approval", id)) if !id.is_empty() && !id.contains(' ') => {
                Ok(MessageKey::Approval { tool_use_id: id.to_owned() })
            }
            Some(("notice", id)) if !id.is_empty() && !id.contains(' ') => Ok(MessageKey::Notice { id: id.to_owned() }),
            _ => Err(bad()),
        }
    }
}

impl TryFrom<String> for MessageKey {
    type Error = BadMessageKey;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl From<MessageKey> for String {
    fn from(key: MessageKey) -> Self {
        key.to_string()
    }
}

/// The `event_type` of the metadata on every message the responder posts.
pub const METADATA_EVENT_TYPE: &str = "assistant_turn_message";

/// Slack message metadata: `{"event_type": "assistant_turn_message",
/// "event_payload": {"v":1,"turn_id":…,"key":"answer 1/2"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageMetadata {
    pub event_type: String,
    pub event_payload: TurnMessage,
}

/// Which turn and which of its messages (the metadata's payload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnMessage {
    /// 1; messages posted before the field existed read as 1 too.
    #[serde(default = "TurnMessage::version")]
    pub v: u32,
    pub turn_id: TurnId,
    pub key: MessageKey,
}

impl TurnMessage {
    const fn version() -> u32 {
        1
    }
}

impl MessageMetadata {
    pub fn new(turn_id: &TurnId, key: &MessageKey) -> Self {
        Self {
            event_type: METADATA_EVENT_TYPE.to_owned(),
            event_payload: TurnMessage { v: TurnMessage::version(), turn_id: turn_id.clone(), key: key.clone() },
        }
    }

    /// Which of a turn's messages a message is, from its metadata as Slack
    /// returns it (`event_type`, `event_payload`); `None` for anyone else's.
    pub fn read(event_type: &str, payload: &Value) -> Option<TurnMessage> {
        if event_type != METADATA_EVENT_TYPE {
            return None;
        }
        serde_json::from_value::<TurnMessage>(payload.clone()).ok().filter(|m| m.v == TurnMessage::version())
    }
}

/// One message for a turn's thread, rendered and redacted.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub key: MessageKey,
    /// mrkdwn: the whole message, or with blocks what notifications show.
    pub text: String,
    /// Block Kit blocks; empty for a plain text message.
    pub blocks: Vec<Value>,
}

/// How the turn ended for the people in its thread. Set once, by the
/// responder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Settled {
    /// The answer is in the thread.
    Delivered,
    /// Slack refused the bot's message (`not_in_channel`, …): the turn
    /// failed, and there is nowhere to say so.
    Refused { code: String },
    /// The turn's work ended in a dead-letter queue: the thread has an
    /// apology with this reference.
    Apologized { reference: String },
}

impl Settled {
    /// The turn failed as far as its thread is concerned: nothing more is
    /// to happen in it.
    pub fn is_failure(&self) -> bool {
        !matches!(self, Settled::Delivered)
    }
}

/// What the responder showed in a turn's thread.
///
/// A key is marked attempted before `chat.postMessage` and posted (with
/// the message's `ts`) after: a key still attempted on a later delivery
/// means the outcome is unknown, and the thread is searched for the
/// message before anything is posted again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeliveryRecord {
    /// Owned by the store, as the turn's version; 0 before the first save.
    #[serde(skip)]
    pub version: u64,
    /// The last progress step shown (a redelivered older one is skipped).
    #[serde(default)]
    pub progress_step: u32,
    /// Keys whose post began and whose outcome was not recorded.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub attempted: BTreeSet<MessageKey>,
    /// Keys posted, and where.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub posted: BTreeMap<MessageKey, Ts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<Settled>,
    /// Files attached to the thread, by what they hold (`answer`): the
    /// upload's file id once uploaded, and whether it is shared.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub uploads: BTreeMap<String, UploadRecord>,
    pub updated_at: i64,
}

/// An upload of the turn's: saved once uploaded and before it is shared,
/// so a delivery that finds it unshared looks in the thread for the file
/// before sharing it (a share whose answer was lost is not repeated).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRecord {
    pub file_id: String,
    #[serde(default)]
    pub shared: bool,
}

impl DeliveryRecord {
    /// Whether any part of the answer is in the thread.
    pub fn has_answer(&self) -> bool {
        self.posted.keys().any(MessageKey::is_answer)
    }
}

/// The answer the worker streamed into the thread, if it streamed one: the
/// worker's own item beside the delivery record (one writer each). Saved
/// with the message's `ts` before anything is appended, so a redelivered
/// or continued turn never starts a second stream, and the responder finds
/// the message to finish.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamRecord {
    /// Owned by the store; 0 before the first save.
    #[serde(skip)]
    pub version: u64,
    /// The streamed message; none when the start's outcome is unknown or
    /// Slack refused it (then the answer is posted the usual way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<Ts>,
    /// Set once the stream was stopped with the whole answer in it: the
    /// [`stream_digest`] of the text streamed. The responder compares it
    /// with the saved answer's and replaces the message when they differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<String>,
    /// No streamed message exists though none is recorded: Slack refused
    /// the start, or the one it started while its `ts` went unrecorded (the
    /// process stopped during `chat.startStream`, or its answer was lost)
    /// was found in the thread and deleted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_message: bool,
    pub updated_at: i64,
}

impl StreamRecord {
    /// Whether a stream this turn started may be in the thread with its
    /// `ts` unrecorded: the start was recorded as begun, and neither its
    /// `ts` nor that no message exists was recorded after.
    pub fn may_have_unrecorded_stream(&self) -> bool {
        self.version != 0 && self.ts.is_none() && !self.no_message
    }
}

/// A short digest of streamed text, to compare what the stream showed
/// with the saved answer without storing the text twice.
pub fn stream_digest(text: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(text.as_bytes())[..16])
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    /// Slack asked to slow down for longer than is worth waiting here.
    #[error("Slack rate limited the call; retry after {} s", retry_after.as_secs())]
    RateLimited { retry_after: Duration },
    /// Slack failed or could not be reached (5xx, timeout): the call may
    /// or may not have taken effect.
    #[error("Slack is unavailable: {0}")]
    Unavailable(String),
    /// Slack refused the call (`ok: false`, or a 4xx): the same call fails
    /// the same way until someone fixes the cause.
    #[error("Slack refused the call: {code}")]
    Rejected { code: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_their_text_form() {
        for key in [
            MessageKey::Answer { part: 2, of: 3 },
            MessageKey::Approval { tool_use_id: "tooluse_ab-1".into() },
            MessageKey::Placeholder,
            MessageKey::Apology,
            MessageKey::Notice { id: "revoked:deploys__*:1763801100".into() },
        ] {
            assert_eq!(key.to_string().parse::<MessageKey>(), Ok(key.clone()));
            assert_eq!(serde_json::to_value(&key).unwrap(), key.to_string());
        }
        for bad in [
            "",
            "answer",
            "answer 0/1",
            "answer 3/2",
            "answer x/y",
            "approval ",
            "approval a b",
            "apology 1",
            "notice ",
            "notice a b",
        ] {
            assert!(bad.parse::<MessageKey>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn records_keep_typed_keys_as_map_keys() {
        let mut record = DeliveryRecord { updated_at: 7, ..Default::default() };
        record.posted.insert(MessageKey::Answer { part: 1, of: 1 }, Ts::new("1.2"));
        record.attempted.insert(MessageKey::Apology);
        record.settled = Some(Settled::Apologized { reference: "T1-Ev1".into() });
        let json = serde_json::to_string(&record).unwrap();
        assert!(json.contains(r#""posted":{"answer 1/1":"1.2"}"#), "{json}");
        assert_eq!(serde_json::from_str::<DeliveryRecord>(&json).unwrap(), record);
        assert!(record.has_answer());
    }

    #[test]
    fn metadata_names_the_turn_and_the_key_and_ignores_others() {
        let metadata = MessageMetadata::new(&TurnId::new("T1-Ev1"), &MessageKey::Apology);
        let json = serde_json::to_value(&metadata).unwrap();
        assert_eq!(json["event_payload"], serde_json::json!({"v": 1, "turn_id": "T1-Ev1", "key": "apology"}));
        let read = MessageMetadata::read(METADATA_EVENT_TYPE, &json["event_payload"]).unwrap();
        assert_eq!((read.turn_id.as_str(), read.key), ("T1-Ev1", MessageKey::Apology));
        let unversioned = serde_json::json!({"turn_id": "T1-Ev1", "key": "answer 1/1"});
        assert!(MessageMetadata::read(METADATA_EVENT_TYPE, &unversioned).is_some(), "posted before v1");
        assert!(MessageMetadata::read("deploy_finished", &json["event_payload"]).is_none());
        assert!(MessageMetadata::read(METADATA_EVENT_TYPE, &serde_json::json!({"key": "answer 1/1"})).is_none());
        assert!(MessageMetadata::read(METADATA_EVENT_TYPE, &serde_json::json!({"turn_id": "x", "key": 3})).is_none());
    }
}
