//! Slack's Web API as the worker's [`SlackReader`] port: the channel a turn
//! is in (`conversations.info`), the thread so far
//! (`conversations.replies`) and a channel's newest messages
//! (`conversations.history`), with who wrote each message, this bot or not.

use crate::web::{HistoryMessage, WebClient};
use assistant_core::ThreadRef;
use assistant_core::files::{self, FileRef};
use assistant_core::ports::{Author, ChannelInfo, FoundMessage, PortError, SlackReader, SlackSearch, ThreadMessage};
use async_trait::async_trait;
use slack::{ChannelId, UserId};

#[derive(Debug, Clone)]
pub struct SlackWebReader {
    client: WebClient,
}

impl SlackWebReader {
    pub fn new(client: WebClient) -> Self {
        Self { client }
    }
}

/// Subtypes that are not someone saying something (joins, topic changes…).
fn is_conversation(message: &HistoryMessage) -> bool {
    matches!(message.subtype.as_deref(), None | Some("bot_message" | "file_share" | "thread_broadcast"))
}

fn author(message: &HistoryMessage, bot_user: Option<&UserId>) -> Option<Author> {
    match (&message.user, &message.bot_id) {
        (Some(user), _) if Some(user) == bot_user => Some(Author::ThisBot),
        (_, Some(bot_id)) => Some(Author::OtherBot(bot_id.clone())),
        (Some(user), None) => Some(Author::Person(user.clone())),
        (None, None) => None,
    }
}

/// What people and bots said, with who said it.
fn conversation(messages: Vec<HistoryMessage>, bot_user: Option<&UserId>) -> Vec<ThreadMessage> {
    messages
        .into_iter()
        .filter(is_conversation)
        .filter_map(|message| {
            let author = author(&message, bot_user)?;
            let files = message.files.iter().take(files::MAX_FILES).map(FileRef::from_slack).collect();
            Some(ThreadMessage { ts: message.ts, author, text: message.text, files })
        })
        .collect()
}

#[async_trait]
impl SlackReader for SlackWebReader {
    async fn channel_info(&self, channel: &ChannelId) -> Result<ChannelInfo, PortError> {
        let info = self
            .client
            .conversations_info(channel)
            .await
            .map_err(|err| PortError::new("Slack conversations.info", err.to_string()).with_source(err))?;
        Ok(ChannelInfo {
            name: (!info.is_im).then_some(info.name).flatten(),
            topic: info.topic.map(|t| t.value).unwrap_or_default(),
            purpose: info.purpose.map(|p| p.value).unwrap_or_default(),
        })
    }

    async fn thread_history(
        &self,
        thread: &ThreadRef,
        bot_user: Option<&UserId>,
        limit: usize,
    ) -> Result<Vec<ThreadMessage>, PortError> {
        let messages = self
            .client
            .conversations_replies(&thread.channel, &thread.thread_ts, limit)
            .await
            .map_err(|err| PortError::new("Slack conversations.replies", err.to_string()).with_source(err))?;
        Ok(conversation(messages, bot_user))
    }

    async fn channel_history(&self, channel: &ChannelId, limit: usize) -> Result<Vec<ThreadMessage>, PortError> {
        let messages = self
            .client
            .conversations_history(channel, limit)
            .await
            .map_err(|err| PortError::new("Slack conversations.history", err.to_string()).with_source(err))?;
        Ok(conversation(messages, None))
    }

    async fn usergroup_members(&self, group: &str) -> Result<Vec<UserId>, PortError> {
        self.client
            .usergroup_members(group)
            .await
            .map_err(|err| PortError::new("Slack usergroups.users.list", err.to_string()).with_source(err))
    }

    async fn search(&self, search: SlackSearch<'_>) -> Result<Vec<FoundMessage>, PortError> {
        let found = self
            .client
            .search_context(
                search.action_token.expose(),
                search.query,
                &search.channel_types.join(","),
                search.context_channel,
                search.limit,
            )
            .await
            .map_err(|err| PortError::new("Slack assistant.search.context", err.to_string()).with_source(err))?;
        Ok(found
            .into_iter()
            .map(|message| FoundMessage {
                channel: message.channel_id,
                ts: message.message_ts,
                author: message.author_user_id,
                by_bot: message.is_author_bot,
                text: message.content,
                permalink: message.permalink,
            })
            .collect())
    }
}
