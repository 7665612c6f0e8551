//! Slack's Web API as the worker's [`SlackReader`] port: the channel a turn
//! is in (`conversations.info`), the thread so far
//! (`conversations.replies`) and a channel's newest messages
//! (`conversations.history`), with who wrote each message, this bot or not,
//! and what it says as a person reads it: its text, blocks and attachments
//! rendered by [`slack::readable`] (an alert's fields and links live there).

use crate::web::{HistoryMessage, WebClient, WebError};
use assistant_core::ThreadRef;
use assistant_core::files::{self, FileRef};
use assistant_core::ports::{
    Author, ChannelInfo, FoundMessage, MessageRead, PortError, SlackReader, SlackSearch, ThreadMessage,
};
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
            let text = slack::readable::message_text(&message.text, &message.blocks, &message.attachments);
            Some(ThreadMessage { ts: message.ts, author, text, files })
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
            private: info.is_private || info.is_im || info.is_mpim,
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

    async fn message(
        &self,
        thread: &ThreadRef,
        ts: &slack::Ts,
        bot_user: Option<&UserId>,
    ) -> Result<MessageRead, PortError> {
        match self.client.conversations_replies(&thread.channel, &thread.thread_ts, usize::MAX).await {
            Ok(messages) => Ok(conversation(messages, bot_user)
                .into_iter()
                .find(|message| &message.ts == ts)
                .map_or(MessageRead::NotThere, MessageRead::Found)),
            // What Slack answers for a conversation the bot is not in (or
            // one that does not exist, which it says of private channels
            // the bot is not in).
            Err(WebError::Api { error, .. }) if matches!(error.as_str(), "not_in_channel" | "channel_not_found") => {
                Ok(MessageRead::OutOfReach)
            }
            // A thread that is not one: the message is not where the payload says.
            Err(WebError::Api { error, .. }) if error == "thread_not_found" => Ok(MessageRead::NotThere),
            Err(err) => Err(PortError::new("Slack conversations.replies", err.to_string()).with_source(err)),
        }
    }

    async fn is_member(&self, channel: &ChannelId, user: &UserId) -> Result<bool, PortError> {
        self.client
            .is_member(channel, user)
            .await
            .map_err(|err| PortError::new("Slack conversations.members", err.to_string()).with_source(err))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn messages(page: &str) -> Vec<HistoryMessage> {
        let page: Value = serde_json::from_str(page).unwrap();
        serde_json::from_value(page["messages"].clone()).unwrap()
    }

    #[test]
    fn an_alerts_thread_reads_with_its_attachments_and_blocks() {
        let bot = UserId::new(testkit::fixtures::BOT_USER);
        let thread = conversation(messages(testkit::fixtures::messages::CONVERSATIONS_REPLIES_ALERTS), Some(&bot));
        let texts: Vec<&str> = thread.iter().map(|message| message.text.as_str()).collect();
        assert_eq!(thread.len(), 4);
        assert_eq!(thread[0].author, Author::OtherBot("B0GRAFANA1".into()));
        assert!(
            texts[0]
                .starts_with("<https://grafana.example.com/alerting/grafana/cdx93ak2/view|[FIRING:1] HighErrorRate")
        );
        assert!(texts[0].contains(" - runbook_url = https://runbooks.example.com/checkout-5xx"), "{}", texts[0]);
        assert!(texts[1].contains("Current State: `ALARM`"), "{}", texts[1]);
        assert!(texts[2].contains("*Value:* 2.84 s") && texts[2].contains("|View monitor>"), "{}", texts[2]);
        assert_eq!(
            texts[3],
            "<@U0LAN0Z89> why is checkout-api failing? see <https://grafana.example.com/d/checkout|the dashboard>"
        );
    }

    #[test]
    fn blocks_and_attachments_slack_got_wrong_never_fail_the_read() {
        let page = json!({"ok": true, "messages": [
            {"type": "message", "user": "U1", "ts": "1.1", "text": "first", "blocks": "not blocks", "attachments": {"a": 1}},
            {"type": "message", "user": "U1", "ts": "1.2", "text": "second", "blocks": [{"type": 5}, null, []],
             "attachments": [null, "x", {"fields": [{"title": ["no"], "value": {"no": 1}}]}]}
        ]});
        let thread = conversation(messages(&page.to_string()), None);
        assert_eq!(thread.len(), 2);
        assert_eq!(thread[0].text, "first\n\n(Left out of this message: 2 malformed parts.)");
        assert!(thread[1].text.starts_with("second\n\n(Left out of this message: "), "{}", thread[1].text);
    }
}
