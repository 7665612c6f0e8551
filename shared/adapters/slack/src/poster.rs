//! The Slack Web API as the responder's [`SlackPoster`] port. Every post
//! carries [`MessageMetadata`] naming the turn and the message's key, which
//! [`SlackPoster::find_posted`] reads back from the thread.

use crate::web::{OutgoingMessage, WebClient, WebError};
use assistant_core::ThreadRef;
use assistant_core::delivery::{MessageKey, MessageMetadata, Outgoing, PostError};
use assistant_core::ports::{AlertPoster, FileUpload, SlackPoster};
use assistant_core::turn::TurnId;
use async_trait::async_trait;
use serde_json::Value;
use slack::{ChannelId, Ts, UserId};
use std::collections::{BTreeMap, BTreeSet};

/// A Web API failure as the responder sees it: whether waiting, looking
/// again or giving up is right.
pub fn post_error(err: WebError) -> PostError {
    match err {
        WebError::RateLimited { retry_after, .. } => PostError::RateLimited { retry_after },
        WebError::Api { error, .. } => PostError::Rejected { code: error },
        WebError::Http { status, .. } if status < 500 => PostError::Rejected { code: format!("http_{status}") },
        other => PostError::Unavailable(other.to_string()),
    }
}

/// Which of `messages` carry metadata naming `owner` (a turn, or an
/// incident), by their key.
pub(crate) fn owned_by(messages: Vec<crate::web::HistoryMessage>, owner: &TurnId) -> BTreeMap<MessageKey, Ts> {
    messages
        .into_iter()
        .filter_map(|message| {
            let metadata = message.metadata?;
            let ours = MessageMetadata::read(&metadata.event_type, &metadata.event_payload)?;
            (&ours.turn_id == owner).then_some((ours.key, message.ts))
        })
        .collect()
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

    /// The message's blocks and metadata as the JSON strings Slack takes.
    fn encode(message: &Outgoing, turn: &TurnId) -> (Option<String>, String) {
        let blocks = (!message.blocks.is_empty()).then(|| Value::Array(message.blocks.clone()).to_string());
        let metadata = MessageMetadata::new(turn, &message.key);
        (blocks, serde_json::to_string(&metadata).expect("metadata is strings"))
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

#[async_trait]
impl SlackPoster for WebPoster {
    async fn post(&self, thread: &ThreadRef, turn: &TurnId, message: &Outgoing) -> Result<Ts, PostError> {
        let encoded = Self::encode(message, turn);
        self.client
            .post_message(&thread.channel, &thread.thread_ts, &self.outgoing(message, &encoded))
            .await
            .map_err(post_error)
    }

    async fn update(&self, thread: &ThreadRef, ts: &Ts, turn: &TurnId, message: &Outgoing) -> Result<(), PostError> {
        let encoded = Self::encode(message, turn);
        self.client.update_message(&thread.channel, ts, &self.outgoing(message, &encoded)).await.map_err(post_error)
    }

    async fn set_status(&self, thread: &ThreadRef, status: &str) -> Result<(), PostError> {
        self.client.set_thread_status(&thread.channel, &thread.thread_ts, status).await.map_err(post_error)
    }

    async fn post_ephemeral(
        &self,
        thread: &ThreadRef,
        user: &UserId,
        text: &str,
        blocks: &[Value],
    ) -> Result<(), PostError> {
        self.client.post_ephemeral(&thread.channel, &thread.thread_ts, user, text, blocks).await.map_err(post_error)
    }

    async fn stop_stream(&self, thread: &ThreadRef, ts: &Ts) -> Result<(), PostError> {
        let params = [("channel", thread.channel.as_str()), ("ts", ts.as_str())];
        let _: Value = self.client.call("chat.stopStream", &params).await.map_err(post_error)?;
        Ok(())
    }

    async fn find_posted(&self, thread: &ThreadRef, turn: &TurnId) -> Result<BTreeMap<MessageKey, Ts>, PostError> {
        let messages = self
            .client
            .conversations_replies(&thread.channel, &thread.thread_ts, THREAD_SEARCH_LIMIT)
            .await
            .map_err(post_error)?;
        Ok(owned_by(messages, turn))
    }

    async fn upload(&self, file: &FileUpload) -> Result<String, PostError> {
        self.client.upload_file(file).await.map_err(post_error)
    }

    async fn share_upload(&self, thread: &ThreadRef, file_id: &str, title: &str) -> Result<(), PostError> {
        let files = serde_json::json!([{"id": file_id, "title": title}]).to_string();
        let params = [
            ("files", files.as_str()),
            ("channel_id", thread.channel.as_str()),
            ("thread_ts", thread.thread_ts.as_str()),
        ];
        // Not retried after a 5xx: the file may be shared, and only the
        // caller can look ([`Self::files_in_thread`]).
        let _: Value = self
            .client
            .call_retrying("files.completeUploadExternal", &params, crate::web::Retry::RateLimitOnly)
            .await
            .map_err(post_error)?;
        Ok(())
    }

    async fn files_in_thread(&self, thread: &ThreadRef) -> Result<BTreeSet<String>, PostError> {
        let messages = self
            .client
            .conversations_replies(&thread.channel, &thread.thread_ts, THREAD_SEARCH_LIMIT)
            .await
            .map_err(post_error)?;
        Ok(messages.into_iter().flat_map(|message| message.files).map(|file| file.id).collect())
    }
}

/// Operator alerts straight from the Web API client.
#[async_trait]
impl AlertPoster for WebClient {
    async fn post_to_channel(&self, channel: &ChannelId, text: &str) -> Result<(), PostError> {
        WebClient::post_to_channel(self, channel, text).await.map(|_| ()).map_err(post_error)
    }
}
