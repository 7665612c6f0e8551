//! The thread's history from Slack (`conversations.replies`) as the agent's
//! [`ThreadHistory`] port: who wrote each message, this bot or not.

use agent::ThreadRef;
use agent::ports::{Author, PortError, ThreadHistory, ThreadMessage};
use slack::UserId;
use slack::web::{HistoryMessage, WebClient};

#[derive(Debug, Clone)]
pub struct SlackHistory {
    client: WebClient,
}

impl SlackHistory {
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

impl ThreadHistory for SlackHistory {
    async fn recent(
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
        Ok(messages
            .into_iter()
            .filter(is_conversation)
            .filter_map(|message| {
                let author = author(&message, bot_user)?;
                Some(ThreadMessage { ts: message.ts, author, text: message.text })
            })
            .collect())
    }
}
