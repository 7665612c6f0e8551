//! Messages on the work queue (ingress → worker, and the worker's own
//! continuations), as versioned JSON envelopes: `{"v":1,"kind":"…",…}`.
//!
//! A deploy can happen while messages are in flight, so a reader accepts
//! every version it knows and refuses the rest with a clear error; the
//! caller sends those to the dead-letter queue instead of retrying them.

use serde::{Deserialize, Serialize};
use slack::{ChannelId, EventId, TeamId, Ts, UserId};

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

/// What made the bot start a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    AppMention,
    DirectMessage,
    /// A reply in a thread the bot is already part of.
    ThreadReply,
    /// The user opened the assistant panel; there is no question yet.
    AssistantThreadStarted,
}

/// A person asked the bot something: the worker starts a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRequest {
    pub event_id: EventId,
    /// Slack's `event_time` (Unix seconds).
    pub event_time: i64,
    pub trigger: Trigger,
    pub thread: ThreadRef,
    /// The message that asked (equals `thread.thread_ts` for a thread's
    /// first message).
    pub message_ts: Ts,
    pub user: UserId,
    pub text: String,
    /// For assistant threads: the channel the user was looking at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_channel: Option<ChannelId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Deny,
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
    pub value: String,
    pub action_ts: Ts,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkMessage {
    StartTurn(TurnRequest),
    Approval(ApprovalClick),
}

impl WorkMessage {
    pub fn thread(&self) -> &ThreadRef {
        match self {
            WorkMessage::StartTurn(request) => &request.thread,
            WorkMessage::Approval(click) => &click.thread,
        }
    }

    /// The SQS FIFO deduplication id: equal for redeliveries of the same
    /// thing, so SQS drops copies sent within its five-minute window.
    pub fn dedupe_id(&self) -> String {
        match self {
            WorkMessage::StartTurn(request) => request.event_id.to_string(),
            WorkMessage::Approval(click) => {
                format!("approval:{}:{}:{}", click.thread.channel, click.message_ts, click.action_ts)
            }
        }
    }

    pub fn encode(&self) -> String {
        #[derive(Serialize)]
        struct Outgoing<'a> {
            v: u32,
            #[serde(flatten)]
            message: &'a WorkMessage,
        }
        serde_json::to_string(&Outgoing { v: ENVELOPE_VERSION, message: self })
            .expect("work messages contain only strings, numbers and enums")
    }

    pub fn decode(body: &str) -> Result<Self, EnvelopeError> {
        #[derive(Deserialize)]
        struct Version {
            v: u32,
        }
        let Version { v } = serde_json::from_str(body).map_err(EnvelopeError::Malformed)?;
        if v != ENVELOPE_VERSION {
            return Err(EnvelopeError::UnsupportedVersion(v));
        }
        serde_json::from_str(body).map_err(EnvelopeError::Malformed)
    }
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
            event_time: 1_700_000_000,
            trigger: Trigger::AppMention,
            thread: ThreadRef {
                team: TeamId::new("T1"),
                channel: ChannelId::new("C1"),
                thread_ts: Ts::new("1700000000.000100"),
            },
            message_ts: Ts::new("1700000000.000100"),
            user: UserId::new("U1"),
            text: "<@UBOT> hello".into(),
            context_channel: None,
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
    fn unknown_version_and_kind_are_refused() {
        let future = request().encode().replacen("\"v\":1", "\"v\":2", 1);
        assert!(matches!(WorkMessage::decode(&future), Err(EnvelopeError::UnsupportedVersion(2))));
        let unknown = r#"{"v":1,"kind":"teleport"}"#;
        assert!(matches!(WorkMessage::decode(unknown), Err(EnvelopeError::Malformed(_))));
        assert!(matches!(WorkMessage::decode("not json"), Err(EnvelopeError::Malformed(_))));
    }

    #[test]
    fn queue_keys_follow_thread_and_event() {
        let message = request();
        assert_eq!(message.thread().queue_group(), "C1:1700000000.000100");
        assert_eq!(message.dedupe_id(), "Ev01");
    }
}
