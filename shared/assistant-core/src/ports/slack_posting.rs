//! What the responder (and the operator alerts) post through Slack's Web API
//! (`shared/adapters/slack`): messages in a thread, status lines, files,
//! and the search for what a turn already posted.

use crate::delivery::{MessageKey, Outgoing, PostError};
use crate::messages::ThreadRef;
use crate::turn::TurnId;
use async_trait::async_trait;
use slack::{ChannelId, Ts, UserId};
use std::collections::{BTreeMap, BTreeSet};

/// What the responder does in Slack: post in a thread, replace a message,
/// set the thread's status line, and find the messages this bot already
/// posted for a turn.
#[async_trait]
pub trait SlackPoster: Send + Sync {
    /// Posts `message` in the thread, with metadata naming the turn and the
    /// message's key; its `ts`.
    async fn post(&self, thread: &ThreadRef, turn: &TurnId, message: &Outgoing) -> Result<Ts, PostError>;

    /// Puts `message` in place of the bot's message `ts`.
    async fn update(&self, thread: &ThreadRef, ts: &Ts, turn: &TurnId, message: &Outgoing) -> Result<(), PostError>;

    /// Sets the thread's status line ("is thinking…"); empty clears it.
    async fn set_status(&self, thread: &ThreadRef, status: &str) -> Result<(), PostError>;

    /// A message in the thread that only `user` sees (`chat.postEphemeral`);
    /// `blocks` may be empty (plain text).
    async fn post_ephemeral(
        &self,
        thread: &ThreadRef,
        user: &UserId,
        text: &str,
        blocks: &[serde_json::Value],
    ) -> Result<(), PostError>;

    /// Ends a streamed message the worker left open (its invocation
    /// stopped mid-answer), so it can be replaced.
    async fn stop_stream(&self, thread: &ThreadRef, ts: &Ts) -> Result<(), PostError>;

    /// The turn's messages already in the thread: key → `ts`.
    async fn find_posted(&self, thread: &ThreadRef, turn: &TurnId) -> Result<BTreeMap<MessageKey, Ts>, PostError>;

    /// Uploads a file without sharing it anywhere yet
    /// (`files.getUploadURLExternal`, then its bytes): its file id.
    async fn upload(&self, file: &FileUpload) -> Result<String, PostError>;

    /// Shares an uploaded file in the thread (`files.completeUploadExternal`).
    async fn share_upload(&self, thread: &ThreadRef, file_id: &str, title: &str) -> Result<(), PostError>;

    /// The ids of the files shared in the thread (read from
    /// `conversations.replies`, so it needs no `files:read`).
    async fn files_in_thread(&self, thread: &ThreadRef) -> Result<BTreeSet<String>, PostError>;
}

/// A file the responder attaches to a thread: a long answer, in full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileUpload {
    pub filename: String,
    pub title: String,
    pub body: Vec<u8>,
}

/// Posts operator alerts: a message at the top of a channel. Apart from
/// [`SlackPoster`], so a function that only alerts (the worker) links no
/// thread-posting code.
#[async_trait]
pub trait AlertPoster: Send + Sync {
    async fn post_to_channel(&self, channel: &ChannelId, text: &str) -> Result<(), PostError>;
}
