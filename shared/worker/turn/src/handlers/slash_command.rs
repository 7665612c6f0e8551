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
//! channel: the turn runs in a thread of the person's DM with the bot
//! ([`super::dm_thread`]), and the person is told so where they typed the
//! command, ephemerally, through the command's `response_url` (one of its
//! five uses, claimed once: [`assistant_core::response_url`]; past its
//! thirty minutes the DM thread alone says it).

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::ThreadRef;
use assistant_core::delivery::PostError;
use assistant_core::messages::{SlashCommand, TurnRequest};
use assistant_core::response_url::Claim;
use assistant_core::turn::TurnId;
use tracing::{Span, field, info, warn};

/// The root message's key among the turn's messages.
const ROOT: &str = "command-root";

/// The name of the `response_url` post pointing to the DM thread.
const DM_POINTER: &str = "dm-pointer";

/// What the person sees where they typed the command, when the bot cannot
/// post there (then a link to the DM thread).
pub const ANSWERING_IN_DM: &str = "I can't post in this channel, so I'm answering in our DM";

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
        let in_channel =
            |root| ThreadRef { team: command.team.clone(), channel: command.channel.clone(), thread_ts: root };
        let thread = if let Some(root) = self.find_root(&command.channel, &turn_id, ROOT).await {
            in_channel(root)
        } else {
            let dm = self.agent.open_dm(&command.user).await.map_err(WorkerError::Slack)?;
            let in_dm = |root| ThreadRef { team: command.team.clone(), channel: dm.clone(), thread_ts: root };
            if let Some(root) = self.find_root(&dm, &turn_id, ROOT).await {
                // An earlier delivery answered in the DM (the channel refused
                // it then): there, even if the bot may post in the channel now.
                self.point_to_dm(command, &turn_id, in_dm(root)).await?
            } else {
                match self.post_root(&command.channel, &turn_id, ROOT, &root_text(command)).await {
                    Ok(root) => in_channel(root),
                    Err(PostError::Rejected { code }) if CANNOT_POST_CODES.contains(&code.as_str()) => {
                        warn!(code, "the bot may not post where the command was typed: it answers in the person's DM");
                        let root = self
                            .post_root(&dm, &turn_id, ROOT, &dm_root_text(command))
                            .await
                            .map_err(WorkerError::Slack)?;
                        self.point_to_dm(command, &turn_id, in_dm(root)).await?
                    }
                    Err(err) => return Err(WorkerError::Slack(err)),
                }
            }
        };
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

    /// Points the person, where they typed the command, to its thread in
    /// their DM (ephemeral, through the `response_url`, once); the thread.
    async fn point_to_dm(
        &self,
        command: &SlashCommand,
        turn_id: &TurnId,
        thread: ThreadRef,
    ) -> Result<ThreadRef, WorkerError> {
        let now = self.clock.now_unix();
        match self.response_urls.claim(turn_id, DM_POINTER, command.asked_at, now).await {
            Ok(Claim::Granted) => {
                let pointer = format!(
                    "{ANSWERING_IN_DM}: {}.",
                    self.link_to(&thread.channel, &thread.thread_ts, "open it").await
                );
                // The claim is spent either way: the DM thread holds the answer.
                if let Err(err) = self.agent.respond(&command.response_url, &pointer).await {
                    warn!(error = %err, "the response_url post failed: the DM thread stands alone");
                }
            }
            Ok(claim) => info!(?claim, "no response_url post: the DM thread stands alone"),
            Err(err) => return Err(WorkerError::ResponseUrl(err)),
        }
        Ok(thread)
    }
}

/// The first message of the command's thread in the person's DM.
fn dm_root_text(command: &SlashCommand) -> String {
    format!(
        "You asked with {} in <#{}>. I can't post there, so I'm answering here.\n{}",
        command.command,
        command.channel,
        super::dm_thread::quote(&command.question)
    )
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
    use slack::{ChannelId, EventId, Membership, TeamId, UserId};

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
