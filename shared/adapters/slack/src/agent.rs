//! The Slack Web API as the worker's [`AgentSlack`] port: suggested prompts
//! (`assistant.threads.setSuggestedPrompts`), thread titles
//! (`assistant.threads.setTitle`) and streamed answers (`chat.startStream`,
//! `chat.appendStream`, `chat.stopStream`), and the Home tab
//! (`views.publish`).
//!
//! Stream calls are retried only after a 429 Slack wants waited out
//! briefly: after a 5xx an append may have landed, and appending it again
//! would show it twice.

use crate::poster::post_error;
use crate::web::{OutgoingMessage, Retry, WebClient};
use assistant_core::ThreadRef;
use assistant_core::TurnId;
use assistant_core::delivery::MessageKey;
use assistant_core::delivery::{MessageMetadata, PostError};
use assistant_core::incidents::BotIdentity;
use assistant_core::ports::{AgentSlack, FileUpload, StreamChunk, SuggestedPrompt, TaskStatus, TaskUpdate};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use slack::{ChannelId, TeamId, Ts, UserId};
use std::collections::BTreeMap;

/// Slack's limit on one append's (or start's, or stop's) markdown.
pub const STREAM_TEXT_LIMIT: usize = 12_000;

/// The Slack Web API as the agent surface.
#[derive(Debug, Clone)]
pub struct WebAgent {
    client: WebClient,
}

impl WebAgent {
    pub fn new(client: WebClient) -> Self {
        Self { client }
    }
}

/// A chunk as `chat.appendStream` takes it.
pub fn chunk_json(chunk: &StreamChunk) -> Value {
    match chunk {
        StreamChunk::Text(text) => json!({"type": "markdown_text", "text": text}),
        StreamChunk::Task(TaskUpdate { id, title, status, sources, details, output }) => {
            let status = match status {
                TaskStatus::InProgress => "in_progress",
                TaskStatus::Complete => "complete",
                TaskStatus::Error => "error",
            };
            let mut task = json!({"type": "task_update", "id": id, "title": title, "status": status});
            for (field, value) in [("details", details), ("output", output)] {
                if let Some(value) = value {
                    task[field] = value.as_str().into();
                }
            }
            if !sources.is_empty() {
                task["sources"] = sources
                    .iter()
                    .map(|source| json!({"type": "url", "url": source.url, "text": source.title}))
                    .collect();
            }
            task
        }
    }
}

#[derive(Deserialize)]
struct Started {
    ts: Ts,
}

/// Whether a channel is a DM (`D…`), where streams need no recipient.
fn is_dm(channel: &ChannelId) -> bool {
    channel.as_str().starts_with('D')
}

#[async_trait]
impl AgentSlack for WebAgent {
    async fn set_suggested_prompts(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        prompts: &[SuggestedPrompt],
    ) -> Result<(), PostError> {
        let prompts = serde_json::to_string(prompts).expect("prompts are strings");
        let mut params = vec![("channel_id", channel.as_str()), ("prompts", prompts.as_str())];
        if let Some(thread_ts) = thread_ts {
            params.push(("thread_ts", thread_ts.as_str()));
        }
        let _: Value = self.client.call("assistant.threads.setSuggestedPrompts", &params).await.map_err(post_error)?;
        Ok(())
    }

    async fn set_title(&self, thread: &ThreadRef, title: &str) -> Result<(), PostError> {
        let params =
            [("channel_id", thread.channel.as_str()), ("thread_ts", thread.thread_ts.as_str()), ("title", title)];
        let _: Value = self.client.call("assistant.threads.setTitle", &params).await.map_err(post_error)?;
        Ok(())
    }

    async fn start_stream(&self, thread: &ThreadRef, recipient: Option<&UserId>) -> Result<Ts, PostError> {
        let mut params = vec![("channel", thread.channel.as_str()), ("thread_ts", thread.thread_ts.as_str())];
        if let (Some(user), false) = (recipient, is_dm(&thread.channel)) {
            params.push(("recipient_user_id", user.as_str()));
            params.push(("recipient_team_id", thread.team.as_str()));
        }
        let started: Started =
            self.client.call_retrying("chat.startStream", &params, Retry::Never).await.map_err(post_error)?;
        Ok(started.ts)
    }

    async fn append_stream(&self, thread: &ThreadRef, ts: &Ts, chunks: &[StreamChunk]) -> Result<(), PostError> {
        let chunks = Value::Array(chunks.iter().map(chunk_json).collect()).to_string();
        let params = [("channel", thread.channel.as_str()), ("ts", ts.as_str()), ("chunks", chunks.as_str())];
        let _: Value =
            self.client.call_retrying("chat.appendStream", &params, Retry::Never).await.map_err(post_error)?;
        Ok(())
    }

    async fn delete_message(&self, thread: &ThreadRef, ts: &Ts) -> Result<(), PostError> {
        let params = [("channel", thread.channel.as_str()), ("ts", ts.as_str())];
        // Deleting twice is harmless: retried on anything, and a message
        // already gone is what was asked for.
        match self.client.call::<Value>("chat.delete", &params).await.map_err(post_error) {
            Err(PostError::Rejected { code }) if code == "message_not_found" => Ok(()),
            other => other.map(|_| ()),
        }
    }

    async fn unrecorded_streams(&self, thread: &ThreadRef, after: &Ts) -> Result<Vec<Ts>, PostError> {
        let own = self.client.identity().await.map_err(post_error)?.user_id.clone();
        let Some(own) = own else {
            return Err(PostError::Rejected { code: "auth_test_without_user".to_owned() });
        };
        let messages = self
            .client
            .conversations_replies(&thread.channel, &thread.thread_ts, TAGGED_SEARCH_LIMIT)
            .await
            .map_err(post_error)?;
        Ok(messages
            .into_iter()
            .filter(|message| {
                message.user.as_ref() == Some(&own)
                    && message.metadata.is_none()
                    && message.files.is_empty()
                    && message.text.trim().is_empty()
                    && later(&message.ts, after)
            })
            .map(|message| message.ts)
            .collect())
    }

    async fn stop_stream(
        &self,
        thread: &ThreadRef,
        ts: &Ts,
        blocks: &[Value],
        metadata: &MessageMetadata,
    ) -> Result<(), PostError> {
        let blocks = Value::Array(blocks.to_vec()).to_string();
        let metadata = serde_json::to_string(metadata).expect("metadata is strings");
        let mut params = vec![("channel", thread.channel.as_str()), ("ts", ts.as_str())];
        if blocks != "[]" {
            params.push(("blocks", blocks.as_str()));
        }
        params.push(("metadata", metadata.as_str()));
        let _: Value = self.client.call_retrying("chat.stopStream", &params, Retry::Never).await.map_err(post_error)?;
        Ok(())
    }

    async fn publish_home(&self, user: &UserId, view: &Value) -> Result<(), PostError> {
        let view = view.to_string();
        let params = [("user_id", user.as_str()), ("view", view.as_str())];
        let _: Value = self.client.call("views.publish", &params).await.map_err(post_error)?;
        Ok(())
    }

    async fn upload(&self, file: &FileUpload) -> Result<String, PostError> {
        self.client.upload_file(file).await.map_err(post_error)
    }

    async fn post_to_channel(&self, channel: &ChannelId, text: &str) -> Result<Ts, PostError> {
        self.client.post_to_channel(channel, text).await.map_err(post_error)
    }

    async fn post_tagged(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        text: &str,
        metadata: &MessageMetadata,
    ) -> Result<Ts, PostError> {
        let metadata = serde_json::to_string(metadata).expect("metadata is strings");
        let message = OutgoingMessage { text, blocks: None, metadata: Some(&metadata), unfurl: false };
        self.client.post_message_at(channel, thread_ts, &message).await.map_err(post_error)
    }

    async fn find_tagged(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        owner: &TurnId,
    ) -> Result<BTreeMap<MessageKey, Ts>, PostError> {
        let messages = match thread_ts {
            Some(thread_ts) => self.client.conversations_replies(channel, thread_ts, TAGGED_SEARCH_LIMIT).await,
            // A root posted moments ago is among the newest: one page.
            None => self.client.conversations_history(channel, 200).await,
        }
        .map_err(post_error)?;
        Ok(crate::poster::owned_by(messages, owner))
    }

    async fn open_dm(&self, user: &UserId) -> Result<ChannelId, PostError> {
        self.client.open_dm(user).await.map_err(post_error)
    }

    async fn permalink(&self, channel: &ChannelId, ts: &Ts) -> Result<String, PostError> {
        self.client.permalink(channel, ts).await.map_err(post_error)
    }

    async fn respond(&self, url: &slack::command::ResponseUrl, text: &str) -> Result<(), PostError> {
        self.client.respond(url, text).await.map_err(post_error)
    }

    async fn identity(&self) -> Result<BotIdentity, PostError> {
        let auth = self.client.identity().await.map_err(post_error)?;
        // An org-wide install's token may name no workspace: the
        // organization stands for it (`AuthTest::team`).
        match (auth.team(), &auth.user_id) {
            (Some(team), Some(user)) => Ok(BotIdentity { team: TeamId::new(team), user: user.clone() }),
            _ => Err(PostError::Rejected { code: "auth_test_without_team_or_user".to_owned() }),
        }
    }
}

/// The most replies read looking for a tagged message in a thread.
const TAGGED_SEARCH_LIMIT: usize = 1_000;

/// Whether Slack timestamp `ts` is after `than` (seconds, then the
/// sequence after the dot; an unreadable one is not).
fn later(ts: &Ts, than: &Ts) -> bool {
    let parts = |ts: &Ts| {
        let (secs, seq) = ts.as_str().split_once('.').unwrap_or((ts.as_str(), "0"));
        Some((secs.parse::<u64>().ok()?, seq.parse::<u64>().ok()?))
    };
    matches!((parts(ts), parts(than)), (Some(ts), Some(than)) if ts > than)
}
