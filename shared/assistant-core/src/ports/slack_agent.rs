//! What the worker does in Slack's agent surface through the Web API
//! (`shared/adapters/slack`): suggested prompts, thread titles, the answer
//! streamed as the model writes it, the Home tab, tagged posts.

use super::FileUpload;
use crate::delivery::{MessageKey, MessageMetadata, PostError};
use crate::messages::ThreadRef;
use crate::turn::TurnId;
use async_trait::async_trait;
use slack::{ChannelId, Ts, UserId};
use std::collections::BTreeMap;

/// A prompt offered when a person opens the bot's DM: a button showing
/// `title` that sends `message`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuggestedPrompt {
    pub title: String,
    pub message: String,
}

/// Slack shows at most four suggested prompts
/// (`assistant.threads.setSuggestedPrompts`).
pub const MAX_SUGGESTED_PROMPTS: usize = 4;
/// A suggested prompt's title, at most (characters).
pub const MAX_SUGGESTED_TITLE_CHARS: usize = 75;
/// A suggested prompt's message, at most (characters).
pub const MAX_SUGGESTED_MESSAGE_CHARS: usize = 2_000;

/// How far a tool step shown in a streamed answer has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    InProgress,
    Complete,
    Error,
}

/// One piece appended to a streamed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamChunk {
    /// Markdown, already redacted.
    Text(String),
    /// A tool step's card: created on its first update, changed by later
    /// ones with the same `id`.
    Task(TaskUpdate),
}

/// One update of a tool step's card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskUpdate {
    pub id: String,
    pub title: String,
    pub status: TaskStatus,
    /// What the step read (knowledge-base documents, pages).
    pub sources: Vec<TaskSource>,
    /// What it ran with: the key inputs, one line (Slack: 256 characters).
    pub details: Option<String>,
    /// What came of it: one line of the result (Slack: 256 characters).
    pub output: Option<String>,
}

/// A source on a tool step's card: a link with its text (Slack refuses a
/// source without text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSource {
    pub title: String,
    pub url: String,
}

/// What the worker does in Slack's agent surface: the prompts shown when
/// a DM is opened, a DM thread's title, and the answer streamed as the
/// model writes it (`chat.startStream` / `appendStream` / `stopStream`).
#[async_trait]
pub trait AgentSlack: Send + Sync {
    /// Sets the prompts shown in `channel`; in the thread `thread_ts` for
    /// an assistant thread, for the whole DM without one (agent apps, where
    /// a thread would make Slack ignore them).
    async fn set_suggested_prompts(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        prompts: &[SuggestedPrompt],
    ) -> Result<(), PostError>;

    async fn set_title(&self, thread: &ThreadRef, title: &str) -> Result<(), PostError>;

    /// Starts an empty streamed message in the thread; its `ts`. Outside a
    /// DM Slack wants the person it streams to (`recipient`).
    async fn start_stream(&self, thread: &ThreadRef, recipient: Option<&UserId>) -> Result<Ts, PostError>;

    async fn append_stream(&self, thread: &ThreadRef, ts: &Ts, chunks: &[StreamChunk]) -> Result<(), PostError>;

    /// Deletes the bot's message `ts`: a stream started whose `ts` could not
    /// be recorded, which nothing may go into and which must not stay empty
    /// above the answer. A message already gone counts as deleted.
    async fn delete_message(&self, thread: &ThreadRef, ts: &Ts) -> Result<(), PostError>;

    /// The bot's own messages in the thread, posted after `after`, that hold
    /// no text, no files and no metadata: what a stream started and never
    /// recorded looks like (`chat.startStream` takes no metadata, and
    /// nothing was appended to it, for nobody knew its `ts`). Every other
    /// message the bot leaves in a thread carries metadata or files.
    async fn unrecorded_streams(&self, thread: &ThreadRef, after: &Ts) -> Result<Vec<Ts>, PostError>;

    /// Ends the stream, adding `blocks` under the text and the message's
    /// metadata.
    async fn stop_stream(
        &self,
        thread: &ThreadRef,
        ts: &Ts,
        blocks: &[serde_json::Value],
        metadata: &MessageMetadata,
    ) -> Result<(), PostError>;

    /// Shows `view` as the person's Home tab (`views.publish`): the same
    /// view again changes nothing, so it is retried freely.
    async fn publish_home(&self, user: &UserId, view: &serde_json::Value) -> Result<(), PostError>;

    /// Uploads a file without sharing it (the responder shares it with the
    /// answer): its file id. An upload never shared is discarded by Slack.
    async fn upload(&self, file: &FileUpload) -> Result<String, PostError>;

    /// Posts `text` at the top of `channel` (`chat.postMessage`, no link
    /// previews): the message's `ts`. Not retried after a 5xx or a reset:
    /// the message may have been posted.
    async fn post_to_channel(&self, channel: &ChannelId, text: &str) -> Result<Ts, PostError>;

    /// Posts `text` carrying `metadata` (without link previews): at the top
    /// of `channel`, or in `thread_ts`'s thread. Not retried after a 5xx or
    /// a reset: the caller looks for it ([`Self::find_tagged`]) first.
    async fn post_tagged(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        text: &str,
        metadata: &MessageMetadata,
    ) -> Result<Ts, PostError>;

    /// The messages carrying metadata of `owner`, by key: among the
    /// channel's newest top-level messages, or in `thread_ts`'s thread.
    async fn find_tagged(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        owner: &TurnId,
    ) -> Result<BTreeMap<MessageKey, Ts>, PostError>;

    /// The bot's DM with `user` (`conversations.open`): the same channel
    /// every time.
    async fn open_dm(&self, user: &UserId) -> Result<ChannelId, PostError>;

    /// A link to message `ts` in `channel` (`chat.getPermalink`).
    async fn permalink(&self, channel: &ChannelId, ts: &Ts) -> Result<String, PostError>;

    /// Shows `text` to the person who typed a slash command, ephemerally,
    /// where they typed it (a POST to the command's `response_url`). Each
    /// call is one of the URL's uses: the caller counts them
    /// ([`crate::response_url`]); never retried here.
    async fn respond(&self, url: &slack::command::ResponseUrl, text: &str) -> Result<(), PostError>;

    /// The workspace and bot user the token belongs to (`auth.test`, asked
    /// once a process by the Slack adapter).
    async fn identity(&self) -> Result<crate::incidents::BotIdentity, PostError>;
}
