//! What the responder needs from Slack, as a port: post in a thread,
//! replace a message, set the thread's status line, and find the messages
//! this bot already posted for a turn. [`WebPoster`] is the Web API
//! adapter; tests and the local runner bring their own.

use agent::ThreadRef;
use agent::turn::TurnId;
use serde_json::{Value, json};
use slack::Ts;
use slack::web::{OutgoingMessage, WebClient, WebError};
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

/// The `event_type` of the metadata on every message the responder posts;
/// its payload names the turn and the message's key, so a redelivery can
/// find what an earlier attempt posted.
pub const METADATA_EVENT_TYPE: &str = "assistant_turn_message";

/// One message for a turn's thread, rendered and redacted.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    /// Which of the turn's messages this is (`answer 1/2`, `apology`…).
    pub key: String,
    /// mrkdwn: the whole message, or with blocks what notifications show.
    pub text: String,
    /// Block Kit blocks; empty for a plain text message.
    pub blocks: Vec<Value>,
}

impl Outgoing {
    /// The message metadata naming `turn` and this message's key.
    pub fn metadata(&self, turn: &TurnId) -> Value {
        json!({"event_type": METADATA_EVENT_TYPE, "event_payload": {"turn_id": turn.as_str(), "key": self.key}})
    }
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

impl From<WebError> for PostError {
    fn from(err: WebError) -> Self {
        match err {
            WebError::RateLimited { retry_after, .. } => PostError::RateLimited { retry_after },
            WebError::Api { error, .. } => PostError::Rejected { code: error },
            WebError::Http { status, .. } if status < 500 => PostError::Rejected { code: format!("http_{status}") },
            other => PostError::Unavailable(other.to_string()),
        }
    }
}

pub trait SlackPoster: Send + Sync {
    /// Posts `message` in the thread; its `ts`.
    fn post(
        &self,
        thread: &ThreadRef,
        turn: &TurnId,
        message: &Outgoing,
    ) -> impl Future<Output = Result<Ts, PostError>> + Send;

    /// Puts `message` in place of the bot's message `ts`.
    fn update(
        &self,
        thread: &ThreadRef,
        ts: &Ts,
        turn: &TurnId,
        message: &Outgoing,
    ) -> impl Future<Output = Result<(), PostError>> + Send;

    /// Sets the thread's status line ("is thinking…"); empty clears it.
    fn set_status(&self, thread: &ThreadRef, status: &str) -> impl Future<Output = Result<(), PostError>> + Send;

    /// The turn's messages already in the thread: key → `ts`.
    fn find_posted(
        &self,
        thread: &ThreadRef,
        turn: &TurnId,
    ) -> impl Future<Output = Result<BTreeMap<String, Ts>, PostError>> + Send;
}

/// The Slack Web API as the poster.
#[derive(Debug, Clone)]
pub struct WebPoster {
    client: WebClient,
    /// Let Slack unfurl links in the bot's messages (off by default: an
    /// answer citing five links should not grow five previews).
    unfurl: bool,
}

/// How far back a thread is searched for a turn's messages.
const THREAD_SEARCH_LIMIT: usize = 1_000;

impl WebPoster {
    pub fn new(client: WebClient, unfurl: bool) -> Self {
        Self { client, unfurl }
    }

    pub fn client(&self) -> &WebClient {
        &self.client
    }

    /// The message's blocks and metadata as the JSON strings Slack takes.
    fn encode(message: &Outgoing, turn: &TurnId) -> (Option<String>, String) {
        let blocks = (!message.blocks.is_empty()).then(|| Value::Array(message.blocks.clone()).to_string());
        (blocks, message.metadata(turn).to_string())
    }

    fn outgoing<'a>(&self, message: &'a Outgoing, encoded: &'a (Option<String>, String)) -> OutgoingMessage<'a> {
        OutgoingMessage {
            text: &message.text,
            blocks: encoded.0.as_deref(),
            metadata: Some(&encoded.1),
            unfurl: self.unfurl,
        }
    }
}

impl SlackPoster for WebPoster {
    async fn post(&self, thread: &ThreadRef, turn: &TurnId, message: &Outgoing) -> Result<Ts, PostError> {
        let encoded = Self::encode(message, turn);
        Ok(self.client.post_message(&thread.channel, &thread.thread_ts, &self.outgoing(message, &encoded)).await?)
    }

    async fn update(&self, thread: &ThreadRef, ts: &Ts, turn: &TurnId, message: &Outgoing) -> Result<(), PostError> {
        let encoded = Self::encode(message, turn);
        Ok(self.client.update_message(&thread.channel, ts, &self.outgoing(message, &encoded)).await?)
    }

    async fn set_status(&self, thread: &ThreadRef, status: &str) -> Result<(), PostError> {
        Ok(self.client.set_thread_status(&thread.channel, &thread.thread_ts, status).await?)
    }

    async fn find_posted(&self, thread: &ThreadRef, turn: &TurnId) -> Result<BTreeMap<String, Ts>, PostError> {
        let messages =
            self.client.conversations_replies(&thread.channel, &thread.thread_ts, THREAD_SEARCH_LIMIT).await?;
        Ok(messages
            .into_iter()
            .filter_map(|message| {
                let metadata = message.metadata?;
                let payload = &metadata.event_payload;
                (metadata.event_type == METADATA_EVENT_TYPE && payload["turn_id"] == turn.as_str())
                    .then(|| Some((payload["key"].as_str()?.to_owned(), message.ts)))
                    .flatten()
            })
            .collect())
    }
}
