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
//! Where the bot cannot read the conversation at all (a channel it is not
//! in), the message as Slack showed it to the person in the signed payload
//! is investigated instead, and answered in a thread of the person's DM
//! with a link to the message ([`super::dm_thread`]): Slack offers the
//! shortcut only on messages the person sees, and the answer goes to them
//! alone. Nothing the bot cannot read is read besides that copy (no
//! thread, no files: they are named, not opened).
//!
//! A refusal (the message is not where the payload says, or the person
//! is not in the private conversation) goes to the person's DM with the
//! bot, and says nothing of the message: not its text, not whether it
//! exists.

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::messages::{InvestigateMessage, ShownMessage, TurnRequest};
use assistant_core::ports::{Author, MessageRead, ThreadMessage};
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
        let read = self
            .slack
            .message(&shortcut.thread, &shortcut.message_ts, Some(&bot))
            .await
            .map_err(WorkerError::SlackRead)?;
        let message = match (read, &shortcut.shown) {
            (MessageRead::Found(message), _) => message,
            (MessageRead::OutOfReach, Some(shown)) => {
                return self.investigate_in_dm(shortcut, shown, bot, deadline).await;
            }
            (MessageRead::OutOfReach, None) => return self.refuse(shortcut, "the bot cannot read the message").await,
            (MessageRead::NotThere, _) => {
                return self.refuse(shortcut, "the message is not where the payload says").await;
            }
        };
        if !self.may_see(shortcut).await? {
            return self.refuse(shortcut, "the person is not a member of the conversation").await;
        }
        let request = TurnRequest {
            event_id: shortcut.event_id.clone(),
            thread: shortcut.thread.clone(),
            message_ts: shortcut.message_ts.clone(),
            user: shortcut.user.clone(),
            text: with_note(question(&message), shortcut.note.as_deref()),
            context_channel: None,
            bot_user: Some(bot),
            files: message.files.clone(),
            membership: shortcut.membership,
            asked_at: shortcut.asked_at,
        };
        info!("shortcut's message read: its turn starts");
        self.begin(&request, deadline).await
    }

    /// The message as Slack showed it to the person, investigated in a
    /// thread of their DM: the bot is not in its conversation.
    async fn investigate_in_dm(
        &self,
        shortcut: &InvestigateMessage,
        shown: &ShownMessage,
        bot: slack::UserId,
        deadline: &dyn Deadline,
    ) -> Result<Outcome, WorkerError> {
        let turn_id = TurnId::for_event(&shortcut.thread, &shortcut.event_id);
        let (channel, team) = (&shortcut.thread.channel, &shortcut.thread.team);
        let link = self.link_to(channel, &shortcut.message_ts, "a message").await;
        let root = format!(
            "You asked me to investigate {link}. I'm not in that conversation, so I'm answering here.\n{}",
            super::dm_thread::quote(&shown.text)
        );
        let thread =
            self.dm_thread(team, &shortcut.user, &turn_id, DM_ROOT, &root).await.map_err(WorkerError::Slack)?;
        let request = TurnRequest {
            event_id: shortcut.event_id.clone(),
            message_ts: thread.thread_ts.clone(),
            thread,
            user: shortcut.user.clone(),
            text: with_note(shown_question(shown), shortcut.note.as_deref()),
            // The conversation the message is in: the person has it in view.
            context_channel: Some(channel.clone()),
            bot_user: Some(bot),
            files: Vec::new(),
            membership: shortcut.membership,
            asked_at: shortcut.asked_at,
        };
        info!("the bot is not in the message's conversation: its turn starts in the person's DM");
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

/// The root's key among the turn's messages in the DM.
const DM_ROOT: &str = "shortcut-root";

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
        n => format!(" ({n} file{} attached)", plural(n)),
    };
    asking(&by, &files, &message.text)
}

/// The question from Slack's copy of a message the bot cannot read: its
/// files are named, not opened (the bot cannot reach them).
fn shown_question(shown: &ShownMessage) -> String {
    let by = shown.author.as_ref().map_or_else(|| "an app".to_owned(), |user| format!("<@{user}>"));
    let files = match shown.files {
        0 => String::new(),
        n => format!(" ({n} file{} attached, which I cannot open: I'm not in that conversation)", plural(n)),
    };
    let question = asking(&by, &files, &shown.text);
    if shown.cut { format!("{question}\n\n(The message was cut: it was longer than I was given.)") } else { question }
}

/// The person's own words (typed in the shortcut's modal) first, then
/// the message they are about.
fn with_note(question: String, note: Option<&str>) -> String {
    match note {
        Some(note) => format!("{note}\n\n(About this message.) {question}"),
        None => question,
    }
}

fn asking(by: &str, files: &str, text: &str) -> String {
    format!(
        "Investigate this message, posted by {by}{files}: what does it mean, what is likely wrong, and what should \
         we do?\n\n> {}",
        text.trim().replace('\n', "\n> ")
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
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

    #[test]
    fn slacks_copy_names_its_files_as_unopened() {
        let shown =
            ShownMessage { text: "panic: nil map".into(), author: Some(UserId::new("U2")), files: 2, cut: false };
        let asked = shown_question(&shown);
        assert!(asked.starts_with("Investigate this message, posted by <@U2> (2 files attached, which I cannot open"));
        assert!(asked.ends_with("> panic: nil map"), "{asked}");
        assert!(
            shown_question(&ShownMessage { author: None, files: 0, ..shown.clone() }).contains("posted by an app:")
        );
        let cut = shown_question(&ShownMessage { cut: true, ..shown });
        assert!(cut.ends_with("(The message was cut: it was longer than I was given.)"), "{cut}");
    }

    #[test]
    fn the_persons_words_come_first() {
        let asked = with_note("Investigate this message…".into(), Some("did the deploy do it?"));
        assert_eq!(asked, "did the deploy do it?\n\n(About this message.) Investigate this message…");
        assert_eq!(with_note("q".into(), None), "q");
    }
}
