//! What the worker reads from Slack's Web API when a turn starts (the
//! channel, the thread, user groups, search; `shared/adapters/slack`).

use super::PortError;
use crate::messages::ThreadRef;
use async_trait::async_trait;
use slack::{ChannelId, Ts, UserId};

/// Who wrote a message in the thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Author {
    /// This bot: its messages are the model's own earlier turns.
    ThisBot,
    Person(UserId),
    /// Another bot or integration (`bot_id`).
    OtherBot(String),
}

/// A message already in the thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadMessage {
    pub ts: Ts,
    pub author: Author,
    /// What it says as a person reads it in Slack: its `text`, and other
    /// apps' blocks and attachments rendered to text (labels, values and
    /// links, each once; `slack::readable`), not yet redacted.
    pub text: String,
    /// Files attached to it.
    pub files: Vec<crate::files::FileRef>,
}

/// Where a turn takes place (Slack's `conversations.info`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelInfo {
    /// `None` for direct messages.
    pub name: Option<String>,
    /// Only its members see it: a private channel, a DM or a group DM.
    pub private: bool,
    pub topic: String,
    pub purpose: String,
}

/// A message Slack's real-time search found (`assistant.search.context`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundMessage {
    pub channel: ChannelId,
    pub ts: Ts,
    pub author: Option<UserId>,
    pub by_bot: bool,
    pub text: String,
    /// Where people open it; what an answer cites.
    pub permalink: String,
}

/// A search as the asking person (their event's action token).
#[derive(Debug, Clone, Copy)]
pub struct SlackSearch<'a> {
    pub action_token: &'a slack::events::ActionToken,
    pub query: &'a str,
    /// `public_channel`, `private_channel`, `mpim`, `im`.
    pub channel_types: &'a [&'static str],
    /// The asking channel, which Slack may rank first.
    pub context_channel: &'a ChannelId,
    pub limit: usize,
}

/// What the worker reads from Slack when a turn starts.
/// What reading one message found.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageRead {
    Found(ThreadMessage),
    /// Slack says the bot may not read the conversation: it is not a
    /// member, or the conversation does not exist for it.
    OutOfReach,
    /// The conversation reads, but the message is not in the thread.
    NotThere,
}

#[async_trait]
pub trait SlackReader: Send + Sync {
    /// The channel the thread is in.
    async fn channel_info(&self, channel: &ChannelId) -> Result<ChannelInfo, PortError>;

    /// The thread's last `limit` messages, oldest first
    /// (`conversations.replies`).
    async fn thread_history(
        &self,
        thread: &ThreadRef,
        bot_user: Option<&UserId>,
        limit: usize,
    ) -> Result<Vec<ThreadMessage>, PortError>;

    /// The members of a user group (`usergroups.users.list`), for approvers
    /// given as a group.
    async fn usergroup_members(&self, group: &str) -> Result<Vec<UserId>, PortError>;

    /// A channel's newest `limit` top-level messages, oldest first
    /// (`conversations.history`; the bot must be in the channel).
    async fn channel_history(&self, channel: &ChannelId, limit: usize) -> Result<Vec<ThreadMessage>, PortError>;

    /// One message as the bot reads it, in `thread`
    /// (`conversations.replies`). An error is one a later try may mend
    /// (rate limits, 5xx).
    async fn message(&self, thread: &ThreadRef, ts: &Ts, bot_user: Option<&UserId>) -> Result<MessageRead, PortError>;

    /// Whether `user` is a member of `channel` (`conversations.members`,
    /// a bounded number of pages: a member beyond them counts as not one).
    async fn is_member(&self, channel: &ChannelId, user: &UserId) -> Result<bool, PortError>;

    /// Messages matching `search.query` that the person whose action token
    /// it is can see (`assistant.search.context`), best first.
    async fn search(&self, search: SlackSearch<'_>) -> Result<Vec<FoundMessage>, PortError>;
}
