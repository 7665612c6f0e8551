//! "Investigate with the assistant" on a message (`InvestigateMessage`, a
//! message shortcut): the message is read as the bot, the person's right
//! to see it is checked, and a turn starts in the message's thread whose
//! question is the message (its text, blocks and attachments as
//! `slack::readable` renders them, its files as a thread's files are
//! read), redacted as every question is.
//!
//! Who may see the message, decided here and not from the payload (a
//! payload can only be forged with the signing secret, but a check that
//! costs two reads is cheap insurance):
//!
//! - the bot must be able to read it (`conversations.replies`): a
//!   conversation the bot is not in, or a message that is not where the
//!   payload says, is refused;
//! - in a private channel, a DM or a group DM the person must be a member
//!   (`conversations.members`); a public channel is the workspace's, so a
//!   person of the installing team sees it, and one of another
//!   organization (Slack Connect) must be a member.
//!
//! A refusal goes to the person's DM with the bot, and says nothing of
//! the message: not its text, not whether it exists.

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::messages::{InvestigateMessage, TurnRequest};
use assistant_core::ports::{Author, ThreadMessage};
use assistant_core::turn::TurnId;
use slack::{ChannelId, Membership};
use tracing::{Span, field, info, warn};

/// What the person is told when the bot will not investigate the message.
pub const CANNOT_READ: &str = "I can't investigate that message: I can only read messages in conversations I'm a \
                               member of, and only for people who can see them. Invite me to the channel \
                               (`/invite @assistant`) and try again, or paste what you'd like me to look at here.";

impl Handler for InvestigateMessage {
    fn name_on(&self, span: &Span) {
        span.record("turn_id", field::display(TurnId::for_event(&self.thread, &self.event_id)));
        span.record("event_id", field::display(&self.event_id));
    }

    async fn apply(&self, worker: &Worker, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.investigate(self, deadline).await
    }
}

impl Worker {
    pub(crate) async fn investigate(
        &self,
        shortcut: &InvestigateMessage,
        deadline: &dyn Deadline,
    ) -> Result<Outcome, WorkerError> {
        // A redelivery after the turn was stored: it goes on where it is
        // (the checks passed when it was created; reading again could
        // refuse a turn already under way).
        let turn_id = TurnId::for_event(&shortcut.thread, &shortcut.event_id);
        if let Some(resumed) = self.resume_stored(&turn_id, deadline).await? {
            return Ok(resumed);
        }
        if let Some(asked_at) = shortcut.asked_at
            && let Some(departed) = self.not_begun(&shortcut.thread.team, &shortcut.user, asked_at, "shortcut").await?
        {
            return Ok(departed);
        }
        let bot = self.agent.identity().await.map_err(WorkerError::Slack)?.user;
        let message = self
            .slack
            .message(&shortcut.thread, &shortcut.message_ts, Some(&bot))
            .await
            .map_err(WorkerError::SlackRead)?;
        let Some(message) = message else {
            return self.refuse(shortcut, "the bot cannot read the message").await;
        };
        if !self.may_see(shortcut).await? {
            return self.refuse(shortcut, "the person is not a member of the conversation").await;
        }
        let request = TurnRequest {
            event_id: shortcut.event_id.clone(),
            thread: shortcut.thread.clone(),
            message_ts: shortcut.message_ts.clone(),
            user: shortcut.user.clone(),
            text: question(&message),
            context_channel: None,
            bot_user: Some(bot),
            files: message.files.clone(),
            membership: shortcut.membership,
            asked_at: shortcut.asked_at,
        };
        info!("shortcut's message read: its turn starts");
        self.begin(&request, deadline).await
    }

    /// Whether the person sees the conversation the message is in.
    async fn may_see(&self, shortcut: &InvestigateMessage) -> Result<bool, WorkerError> {
        let channel = &shortcut.thread.channel;
        let private = match self.slack.channel_info(channel).await {
            Ok(info) => info.private,
            // Not known: checked as the stricter kind.
            Err(err) => {
                warn!(error = %err, "channel info unavailable: membership checked");
                true
            }
        };
        if !private && shortcut.membership == Membership::Home {
            return Ok(true);
        }
        self.slack.is_member(channel, &shortcut.user).await.map_err(WorkerError::SlackRead)
    }

    /// Tells the person, in their DM with the bot (`chat.postMessage` to
    /// their user id), that the message will not be investigated. Nothing
    /// is stored, so a redelivery (the post's answer lost, the worker
    /// stopped) checks again and may tell them twice: the note names
    /// nothing of the message, so a second copy leaks nothing either.
    async fn refuse(&self, shortcut: &InvestigateMessage, why: &'static str) -> Result<Outcome, WorkerError> {
        info!(reason = why, "shortcut refused");
        let dm = ChannelId::new(shortcut.user.as_str());
        self.agent.post_to_channel(&dm, CANNOT_READ).await.map_err(WorkerError::Slack)?;
        Ok(Outcome::Ignored { reason: "shortcut_message_not_visible" })
    }
}

/// The turn's question: the message, as the person who used the shortcut
/// asks about it (the context adds who asked; the redaction is the
/// opening's, as for every question).
fn question(message: &ThreadMessage) -> String {
    let by = match &message.author {
        Author::Person(user) => format!("<@{user}>"),
        Author::OtherBot(_) => "an app".to_owned(),
        Author::ThisBot => "you".to_owned(),
    };
    let files = match message.files.len() {
        0 => String::new(),
        n => format!(" ({n} file{} attached)", if n == 1 { "" } else { "s" }),
    };
    format!(
        "Investigate this message, posted by {by}{files}: what does it mean, what is likely wrong, and what should \
         we do?\n\n> {}",
        message.text.trim().replace('\n', "\n> ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use slack::{Ts, UserId};

    #[test]
    fn the_question_quotes_the_message_and_says_who_posted_it() {
        let message = ThreadMessage {
            ts: Ts::new("1763800000.000100"),
            author: Author::OtherBot("B0GRAFANA1".into()),
            text: "[FIRING:1] HighErrorRate\nrunbook_url = https://runbooks.example.com/x".into(),
            files: Vec::new(),
        };
        let asked = question(&message);
        assert!(asked.starts_with("Investigate this message, posted by an app:"), "{asked}");
        assert!(asked.ends_with("> [FIRING:1] HighErrorRate\n> runbook_url = https://runbooks.example.com/x"));
        let by_person = ThreadMessage { author: Author::Person(UserId::new("U2")), ..message };
        assert!(question(&by_person).contains("posted by <@U2>:"));
    }
}
