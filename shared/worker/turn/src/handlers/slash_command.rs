//! `/assistant <question>` (`SlashCommand`): the worker opens a thread in
//! the channel where the command was typed (a root message quoting the
//! question and saying who asked with the command) and runs the turn in
//! it through the mention's path ([`Worker::begin`]: context, files,
//! tool policy per channel, membership, redaction, budgets). A root
//! message written by the bot makes the thread the bot's, so replies in it
//! reach the bot without a mention (`shared/ingress-logic/src/route.rs`).
//!
//! The root is posted once: it carries metadata naming the turn, so a
//! redelivery whose post's answer was lost (the worker stopped, Slack
//! answered 5xx) finds it among the channel's newest messages before
//! posting again; a turn already stored goes on where it is.
//!
//! Where the bot may not post (a private channel it is not in, a DM
//! between people: Slack refuses `chat.postMessage` with
//! `not_in_channel`, `channel_not_found`, …), nothing is posted in the
//! channel: the person is told in their DM with the bot how to get an
//! answer, without a word of the question.

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::ThreadRef;
use assistant_core::delivery::{MessageKey, MessageMetadata, PostError};
use assistant_core::messages::{SlashCommand, TurnRequest};
use assistant_core::turn::TurnId;
use slack::ChannelId;
use tracing::{Span, field, info, warn};

/// The root message's key among the turn's messages.
const ROOT: &str = "command-root";

/// What the person is told (in their DM) when the bot cannot post where
/// they typed the command.
pub const CANNOT_POST: &str = "I couldn't answer your command there: I can only post in channels I'm a member of. \
                               Invite me to the channel (`/invite @assistant`) and try again, or ask me here.";

/// Slack's refusals that mean the bot may not post in the channel.
const CANNOT_POST_CODES: &[&str] =
    &["not_in_channel", "channel_not_found", "is_archived", "restricted_action", "cannot_reply_to_message"];

impl Handler for SlashCommand {
    fn name_on(&self, span: &Span) {
        span.record("turn_id", field::display(TurnId::for_claim(&self.team, &self.event_id)));
        span.record("event_id", field::display(&self.event_id));
    }

    async fn apply(&self, worker: &Worker, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.slash_command(self, deadline).await
    }
}

impl Worker {
    pub(crate) async fn slash_command(
        &self,
        command: &SlashCommand,
        deadline: &dyn Deadline,
    ) -> Result<Outcome, WorkerError> {
        let turn_id = TurnId::for_claim(&command.team, &command.event_id);
        if let Some(resumed) = self.resume_stored(&turn_id, deadline).await? {
            return Ok(resumed);
        }
        if let Some(departed) = self.not_begun(&command.team, &command.user, command.asked_at, "command").await? {
            return Ok(departed);
        }
        let bot = self.agent.identity().await.map_err(WorkerError::Slack)?.user;
        let root = match self.post_root(command, &turn_id).await {
            Ok(root) => root,
            Err(PostError::Rejected { code }) if CANNOT_POST_CODES.contains(&code.as_str()) => {
                return self.cannot_post(command, &code).await;
            }
            Err(err) => return Err(WorkerError::Slack(err)),
        };
        let thread = ThreadRef { team: command.team.clone(), channel: command.channel.clone(), thread_ts: root };
        let request = TurnRequest {
            event_id: command.event_id.clone(),
            message_ts: thread.thread_ts.clone(),
            thread,
            user: command.user.clone(),
            text: question(command),
            context_channel: None,
            bot_user: Some(bot),
            files: Vec::new(),
            membership: command.membership,
            asked_at: Some(command.asked_at),
        };
        info!("command's thread opened: its turn starts");
        self.begin(&request, deadline).await
    }

    /// The thread's root: found when a delivery before this one posted it
    /// (its answer lost), else posted.
    async fn post_root(&self, command: &SlashCommand, turn_id: &TurnId) -> Result<slack::Ts, PostError> {
        let key = MessageKey::Notice { id: ROOT.to_owned() };
        match self.agent.find_tagged(&command.channel, None, turn_id).await {
            Ok(mut found) => {
                if let Some(ts) = found.remove(&key) {
                    info!("found the command's root posted by an earlier delivery");
                    return Ok(ts);
                }
            }
            // The bot cannot read the channel: it cannot post there either
            // (Slack says so to the post, below), or the read failed and
            // the post is the first one (no earlier delivery got this far
            // with the channel unreadable and the post accepted).
            Err(err) => info!(error = %err, "channel not read for an earlier root"),
        }
        let metadata = MessageMetadata::new(turn_id, &key);
        let text = redact::redact(&root_text(command)).into_owned();
        self.agent.post_tagged(&command.channel, None, &text, &metadata).await
    }

    /// Tells the person in their DM with the bot that the channel is one it
    /// cannot post in. Nothing is stored, so a redelivery tells them again
    /// at most: the note holds nothing of the question.
    async fn cannot_post(&self, command: &SlashCommand, code: &str) -> Result<Outcome, WorkerError> {
        warn!(code, "the bot may not post where the command was typed: the person is told in their DM");
        let dm = ChannelId::new(command.user.as_str());
        self.agent.post_to_channel(&dm, CANNOT_POST).await.map_err(WorkerError::Slack)?;
        Ok(Outcome::Ignored { reason: "command_channel_not_postable" })
    }
}

/// The thread's first message: the question quoted, and who asked with
/// which command (escaped: the question is the person's words, shown as
/// text, never as mentions or links Slack would act on).
fn root_text(command: &SlashCommand) -> String {
    let quoted = slack::text::escape(&command.question).replace('\n', "\n> ");
    let cut = if command.cut { " (cut: it was longer than I read)" } else { "" };
    format!("> {quoted}\nasked by <@{}> with {}{cut}", command.user, command.command)
}

/// The turn's question: the person's words as they typed them.
fn question(command: &SlashCommand) -> String {
    if command.cut {
        format!("{}\n\n(The question was cut: it was longer than the bot reads.)", command.question)
    } else {
        command.question.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slack::command::ResponseUrl;
    use slack::{EventId, Membership, TeamId, UserId};

    fn command(question: &str) -> SlashCommand {
        SlashCommand {
            event_id: EventId::new("Sl133452246097384749208088930838d88f008e0"),
            team: TeamId::new("T1"),
            channel: ChannelId::new("C1"),
            user: UserId::new("U1"),
            command: "/assistant".into(),
            question: question.into(),
            cut: false,
            response_url: ResponseUrl::parse("https://hooks.slack.com/commands/T1/2/x").unwrap(),
            membership: Membership::Home,
            asked_at: 1_763_800_001,
        }
    }

    #[test]
    fn the_root_quotes_the_question_and_says_who_asked_with_the_command() {
        let root = root_text(&command("why is <!channel> checkout\nfailing?"));
        assert_eq!(root, "> why is &lt;!channel&gt; checkout\n> failing?\nasked by <@U1> with /assistant");
    }
}
