//! A thread the bot opens for work asked where it cannot answer: a
//! shortcut on a message in a conversation the bot is not in, a slash
//! command in a channel it may not post in. The answer goes in a thread
//! of the person's DM with the bot, under a root message saying what was
//! asked where; the turn runs there as any DM question does.
//!
//! The root (like a slash command's root in a channel) is posted once: it
//! carries metadata naming the turn, so a redelivery whose post's answer
//! was lost finds it among the DM's newest messages before posting again.

use crate::Worker;
use assistant_core::ThreadRef;
use assistant_core::delivery::{MessageKey, MessageMetadata, PostError};
use assistant_core::turn::TurnId;
use slack::{ChannelId, TeamId, Ts, UserId};
use tracing::info;

/// The most of a question a root quotes (the turn reads it whole).
const QUOTED_CHARS: usize = 300;

impl Worker {
    /// The root of `turn`'s thread in `user`'s DM, saying `text`: found
    /// when an earlier delivery posted it, else posted.
    pub(crate) async fn dm_thread(
        &self,
        team: &TeamId,
        user: &UserId,
        turn: &TurnId,
        key: &str,
        text: &str,
    ) -> Result<ThreadRef, PostError> {
        let dm = self.agent.open_dm(user).await?;
        let root = self.root_once(&dm, turn, key, text).await?;
        Ok(ThreadRef { team: team.clone(), channel: dm, thread_ts: root })
    }

    /// A message at the top of `channel` carrying `turn`'s metadata under
    /// `key`: the one an earlier delivery posted (its answer lost), else
    /// posted now, redacted.
    pub(crate) async fn root_once(
        &self,
        channel: &ChannelId,
        turn: &TurnId,
        key: &str,
        text: &str,
    ) -> Result<Ts, PostError> {
        if let Some(ts) = self.find_root(channel, turn, key).await {
            return Ok(ts);
        }
        self.post_root(channel, turn, key, text).await
    }

    /// Posts `turn`'s root under `key` at the top of `channel`, redacted
    /// (after [`Self::find_root`] found none). Not retried: the next
    /// delivery looks for it first.
    pub(crate) async fn post_root(
        &self,
        channel: &ChannelId,
        turn: &TurnId,
        key: &str,
        text: &str,
    ) -> Result<Ts, PostError> {
        let key = MessageKey::Notice { id: key.to_owned() };
        let metadata = MessageMetadata::new(turn, &key);
        let text = redact::redact(text).into_owned();
        self.agent.post_tagged(channel, None, &text, &metadata).await
    }

    /// The root of `turn` under `key` at the top of `channel`, if an
    /// earlier delivery posted it.
    pub(crate) async fn find_root(&self, channel: &ChannelId, turn: &TurnId, key: &str) -> Option<Ts> {
        let key = MessageKey::Notice { id: key.to_owned() };
        match self.agent.find_tagged(channel, None, turn).await {
            Ok(mut found) => {
                let ts = found.remove(&key);
                if ts.is_some() {
                    info!("found the root posted by an earlier delivery");
                }
                ts
            }
            // The bot cannot read the channel: it cannot post there either
            // (Slack says so to the post), or the read failed and the post
            // is the first one (no earlier delivery got this far with the
            // channel unreadable and the post accepted).
            Err(err) => {
                info!(error = %err, "channel not read for an earlier root");
                None
            }
        }
    }

    /// A link to message `ts` in `channel`, as Slack text; the channel's
    /// name alone where Slack gives no link.
    pub(crate) async fn link_to(&self, channel: &ChannelId, ts: &Ts, label: &str) -> String {
        match self.agent.permalink(channel, ts).await {
            Ok(link) if link.starts_with("https://") && !link.contains(['|', '>', '<']) => {
                format!("<{link}|{label}> in <#{channel}>")
            }
            Ok(_) => format!("{label} in <#{channel}>"),
            Err(err) => {
                info!(error = %err, "no permalink: the channel is named alone");
                format!("{label} in <#{channel}>")
            }
        }
    }
}

/// `text` as a quote of at most [`QUOTED_CHARS`], escaped (the words of a
/// person or an app, shown as text: no mentions or links Slack would act on).
pub(crate) fn quote(text: &str) -> String {
    let text = text.trim();
    let mut quoted: String = text.chars().take(QUOTED_CHARS).collect();
    if quoted.len() < text.len() {
        quoted.push('…');
    }
    format!("> {}", slack::text::escape(&quoted).replace('\n', "\n> "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_is_escaped_and_bounded() {
        assert_eq!(quote("ping <!channel>\nnow"), "> ping &lt;!channel&gt;\n> now");
        let long = quote(&"x".repeat(1000));
        assert_eq!(long.chars().count(), 2 + QUOTED_CHARS + 1, "{long}");
        assert!(long.ends_with('…'));
    }
}
