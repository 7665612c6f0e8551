//! What the responder does with a reply-queue message or a dead letter.
//!
//! **Exactly once.** Each message of a turn has a key. Before posting, the
//! key is saved as attempted in the turn's [`DeliveryRecord`] (a
//! conditional write); after, as posted with its `ts`. A delivery that finds
//! a key attempted but not posted does not know whether the earlier post
//! reached Slack, so it looks in the thread for a message whose metadata
//! names the turn and the key, and posts only if there is none.
//!
//! **Failures.** A 5xx or a lost response is retried here with backoff,
//! looking in the thread before each new post. A 429 Slack wants waited out
//! longer than the Web API client waits, or Slack failing on every try,
//! fail the record, so SQS retries it later. A refusal (`not_in_channel`,
//! `invalid_auth`, `msg_too_long`…) is logged with what to fix, and the
//! delivery record says the turn failed: retrying would fail the same way.
//! Progress is best effort and never retried.
//!
//! **Dead letters.** Work that ended in a dead-letter queue becomes an
//! apology in its thread with a reference, and the delivery record says so
//! (the worker then leaves the turn alone); an answer whose delivery ended
//! there is delivered (it is the best apology). A dead letter that cannot
//! be read is logged and dropped: it is already where failed messages end.
//!
//! **One writer each.** The responder reads the turn and never writes it:
//! everything it learns goes into the turn's [`DeliveryRecord`].

use crate::mrkdwn::SpecialMentions;
use crate::render;
use assistant_core::alerts::{Alert, OpsAlerts, Raised};
use assistant_core::delivery::stream_digest;
use assistant_core::delivery::{DeliveryRecord, MessageKey, Outgoing, PostError, Settled, UploadRecord};
use assistant_core::feedback::Rating;
use assistant_core::messages::{ReplyMessage, WorkMessage};
use assistant_core::ports::{DeliveryLog, FileUpload, SlackPoster, StoreError, TurnStore};
use assistant_core::retry::{Backoff, Verdict, retry};
use assistant_core::store::StreamLog;
use assistant_core::turn::{TurnId, TurnStatus};
use assistant_core::{Clock, Retryable, ThreadRef};
use slack::{Ts, UserId};
use std::sync::Arc;
use std::time::Duration;
use tracing::{Instrument, error, info, info_span, warn};

/// Posts tried per message in one invocation when Slack fails (5xx, lost
/// responses); after that, SQS redelivers the message.
const POST_ATTEMPTS: u32 = 3;
/// The first wait before looking and posting again; doubles each time.
const POST_RETRY_BACKOFF: Duration = Duration::from_millis(250);
const POST_BACKOFF: Backoff = Backoff::new(POST_ATTEMPTS, POST_RETRY_BACKOFF);

/// How one try of [`Responder::post_once`] ended well: the message found
/// in the thread (an earlier try posted it), or posted now.
enum Placed {
    Found(Ts),
    Posted(Ts),
}

/// Why one try of [`Responder::post_once`] failed.
enum PlaceError {
    /// Looking in the thread failed.
    Look(PostError),
    Post(PostError),
}

/// A file for the thread: its bytes, or an upload the worker made.
#[derive(Debug, Clone, Copy)]
enum ToAttach<'a> {
    Bytes(&'a FileUpload),
    Uploaded { file_id: &'a str, title: &'a str },
}

/// What a streamed message became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Streamed {
    /// Nothing was streamed (or it is recorded already).
    No,
    /// It holds the whole answer, as saved.
    Whole,
    /// It was replaced by the answer's first message.
    Replaced,
}

/// How a message was handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The turn's messages are in the thread (`posted` of them by this call).
    Delivered { id: TurnId, posted: usize },
    /// The thread's status line (or the placeholder) shows the progress.
    ProgressShown { id: TurnId },
    /// The approval prompt now says who decided what (or that nobody did).
    PromptUpdated { id: TurnId },
    /// One person was told something only they see.
    ToldPrivately { id: TurnId },
    /// Slack refused; logged, and the delivery record says the turn failed.
    Refused { id: TurnId, code: String },
    /// Nothing to do (a stale or duplicate message, or an unknown turn).
    Skipped { reason: &'static str },
}

/// In words, as a person reading the local runner or a log would put it.
impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Delivered { posted: 0, .. } => f.write_str("already in the thread"),
            Outcome::Delivered { posted, .. } => write!(f, "{posted} message(s) posted in the thread"),
            Outcome::ProgressShown { .. } => f.write_str("status shown"),
            Outcome::PromptUpdated { .. } => f.write_str("approval prompt updated"),
            Outcome::ToldPrivately { .. } => f.write_str("told one person privately"),
            Outcome::Refused { code, .. } => write!(f, "Slack refused ({code})"),
            Outcome::Skipped { reason } => write!(f, "nothing to do ({})", reason.replace('_', " ")),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResponderError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Slack(PostError),
}

impl Retryable for ResponderError {
    fn is_retryable(&self) -> bool {
        !matches!(
            self,
            ResponderError::Store(StoreError::TooLarge { .. }) | ResponderError::Slack(PostError::Rejected { .. })
        )
    }
}

/// A message from one of the dead-letter queues, read as whichever
/// envelope it is (their kinds do not overlap).
#[derive(Debug, Clone, PartialEq)]
pub enum DeadLetter {
    Work(WorkMessage),
    Reply(ReplyMessage),
}

impl DeadLetter {
    pub fn decode(body: &str) -> Option<Self> {
        WorkMessage::decode(body)
            .map(DeadLetter::Work)
            .or_else(|_| ReplyMessage::decode(body).map(DeadLetter::Reply))
            .ok()
    }
}

pub struct Responder {
    /// Read only: the worker writes turns.
    pub turns: Arc<dyn TurnStore>,
    pub deliveries: Arc<dyn DeliveryLog>,
    /// Read only: the worker records the answer it streamed.
    pub streams: StreamLog,
    pub slack: Arc<dyn SlackPoster>,
    pub clock: Arc<dyn Clock>,
    /// The special mentions (`<!here>`, …) an answer may use; none by default.
    pub mentions: SpecialMentions,
    /// The ops channel's alerts (`OPS_CHANNEL_ID`); none when unset.
    pub alerts: Option<OpsAlerts>,
}

impl Responder {
    /// One reply-queue message, inside a `turn` span naming its turn.
    pub async fn handle(&self, message: &ReplyMessage) -> Result<Outcome, ResponderError> {
        self.handle_in_turn(message).instrument(info_span!("turn", turn_id = %message.turn_id())).await
    }

    async fn handle_in_turn(&self, message: &ReplyMessage) -> Result<Outcome, ResponderError> {
        match message {
            ReplyMessage::Deliver { turn_id, .. } => self.deliver(turn_id).await,
            ReplyMessage::ApprovalPrompt {
                turn_id,
                thread,
                tool_use,
                requester,
                approvers,
                expires_at,
                destructive,
                grant_minutes,
                grant_scope,
                origin,
            } => {
                let ask = render::Ask {
                    requester: requester.as_ref(),
                    approvers,
                    expires_at: *expires_at,
                    destructive: *destructive,
                    grant: grant_scope.as_deref().zip(*grant_minutes),
                    origin: origin.as_ref(),
                };
                self.post_in_thread(turn_id, thread, &render::approval(turn_id, tool_use, &ask)).await
            }
            ReplyMessage::RanUnderGrant { turn_id, thread, tool_use, grant } => {
                self.post_in_thread(turn_id, thread, &render::ran_under_grant(turn_id, tool_use, grant)).await
            }
            ReplyMessage::GrantRevoked { turn_id, thread, grant, user } => {
                self.post_in_thread(turn_id, thread, &render::grant_revoked(grant, user)).await
            }
            ReplyMessage::RevokeRefused { turn_id, thread, user, scope } => {
                self.tell_privately(turn_id, thread, user, &render::revoke_refused(scope), &[]).await
            }
            ReplyMessage::Progress { turn_id, thread, step, text } => self.progress(turn_id, thread, *step, text).await,
            ReplyMessage::ApprovalDecided { turn_id, thread, tool_use, decision, user, grant, outcome_unknown } => {
                let mut decided = render::approval_decided(turn_id, tool_use, *decision, user, grant.as_ref());
                if *outcome_unknown {
                    decided = render::outcome_unknown(decided);
                }
                self.decided(turn_id, thread, &decided).await
            }
            ReplyMessage::ApprovalExpired { turn_id, thread, tool_use } => {
                self.decided(turn_id, thread, &render::approval_expired(tool_use)).await
            }
            ReplyMessage::ApprovalRefused {
                turn_id,
                thread,
                user,
                tool_name,
                requester,
                approvers,
                own_request,
                membership,
            } => {
                let text = render::approval_refused(tool_name, requester, approvers, *own_request, *membership);
                self.tell_privately(turn_id, thread, user, &text, &[]).await
            }
            ReplyMessage::ApprovalAnswered { turn_id, thread, user, tool_name, approved_by } => {
                let text = render::approval_answered(tool_name, approved_by.as_ref());
                self.tell_privately(turn_id, thread, user, &text, &[]).await
            }
            ReplyMessage::FeedbackNoted { turn_id, thread, user, rating } => {
                let text = match rating {
                    Rating::Positive => "Thanks for the 👍: it tells the team which answers help.",
                    Rating::Negative => "Thanks for the 👎: the team reviews answers rated down to make them better.",
                };
                self.tell_privately(turn_id, thread, user, text, &[]).await
            }
            ReplyMessage::ConnectPrompt { turn_id, thread, user, provider, url, state, reason, .. } => {
                let (text, blocks) = render::connect_prompt(provider, url, state, *reason);
                self.tell_privately(turn_id, thread, user, &text, &blocks).await
            }
            ReplyMessage::ConnectRefused { turn_id, thread, user, owner, provider } => {
                self.tell_privately(turn_id, thread, user, &render::connect_refused(owner, provider), &[]).await
            }
            ReplyMessage::OpenLink { turn_id, thread, user, server, message, url, .. } => {
                let (text, blocks) = render::open_link(server, message, url);
                self.tell_privately(turn_id, thread, user, &text, &blocks).await
            }
            ReplyMessage::FormPrompt { turn_id, thread, user, server, message, form_id, expires_at } => {
                let (text, blocks) = render::form_prompt(server, message, form_id, *expires_at);
                self.tell_privately(turn_id, thread, user, &text, &blocks).await
            }
        }
    }

    /// An ephemeral note to one person. Repeating one is harmless, so a
    /// failure that may pass is retried by SQS; a refusal is logged.
    async fn tell_privately(
        &self,
        turn_id: &TurnId,
        thread: &ThreadRef,
        user: &UserId,
        text: &str,
        blocks: &[serde_json::Value],
    ) -> Result<Outcome, ResponderError> {
        match self.slack.post_ephemeral(thread, user, text, blocks).await {
            Ok(()) => Ok(Outcome::ToldPrivately { id: turn_id.clone() }),
            Err(PostError::Rejected { code }) => {
                warn!(code, remedy = remedy(&code), %user, "ephemeral message refused");
                Ok(Outcome::Skipped { reason: "ephemeral_refused" })
            }
            Err(err) => Err(ResponderError::Slack(err)),
        }
    }

    /// A message that ended in a dead-letter queue.
    pub async fn handle_dead_letter(&self, letter: &DeadLetter) -> Result<Outcome, ResponderError> {
        let turn = match letter {
            DeadLetter::Work(work) => work.turn_id(),
            DeadLetter::Reply(reply) => Some(reply.turn_id().clone()),
        };
        let turn = turn.as_ref().map_or("none", TurnId::as_str);
        self.dead_letter_in_turn(letter).instrument(info_span!("turn", turn_id = turn)).await
    }

    async fn dead_letter_in_turn(&self, letter: &DeadLetter) -> Result<Outcome, ResponderError> {
        let (turn_id, thread) = match letter {
            DeadLetter::Work(WorkMessage::StartTurn(request)) => {
                (TurnId::for_event(&request.thread, &request.event_id), &request.thread)
            }
            DeadLetter::Work(WorkMessage::Continue(continuation)) => {
                (continuation.turn_id.clone(), &continuation.thread)
            }
            DeadLetter::Work(WorkMessage::Approval(click)) => (click.button.turn_id.clone(), &click.thread),
            // Only what people see of work that goes on: nothing to apologize for.
            DeadLetter::Reply(ReplyMessage::Progress { .. }) => {
                return Ok(Outcome::Skipped { reason: "stale_progress" });
            }
            DeadLetter::Reply(
                ReplyMessage::ApprovalDecided { .. }
                | ReplyMessage::ApprovalExpired { .. }
                | ReplyMessage::ApprovalRefused { .. }
                | ReplyMessage::ApprovalAnswered { .. }
                | ReplyMessage::RanUnderGrant { .. }
                | ReplyMessage::GrantRevoked { .. }
                | ReplyMessage::RevokeRefused { .. }
                | ReplyMessage::FeedbackNoted { .. }
                | ReplyMessage::ConnectRefused { .. }
                | ReplyMessage::OpenLink { .. }
                | ReplyMessage::FormPrompt { .. },
            ) => {
                return Ok(Outcome::Skipped { reason: "stale_decision" });
            }
            // Prompts and ratings: nothing anyone waits on.
            DeadLetter::Work(
                WorkMessage::Opened(_)
                | WorkMessage::Feedback(_)
                | WorkMessage::RevokeGrant(_)
                | WorkMessage::ConnectClick(_)
                | WorkMessage::Home(_),
            ) => {
                return Ok(Outcome::Skipped { reason: "nothing_to_apologize_for" });
            }
            // An alert nobody saw: the operators are told, there is no
            // thread to apologize in.
            DeadLetter::Work(WorkMessage::Alert(notice)) => {
                let what = format!(
                    "A {} alert could not be handled and went to the dead-letter queue: {}",
                    notice.source.display_name(),
                    redact::redact(&notice.title)
                );
                self.alert(&format!("alert {}", notice.dedupe_id()), &what, None).await;
                return Ok(Outcome::Skipped { reason: "alert_dead_lettered" });
            }
            // A departure not fully forgotten: the operators are told, to
            // redrive it (forgetting again is harmless); no thread to tell.
            DeadLetter::Work(WorkMessage::Forget(forget)) => {
                let what = format!(
                    "Forgetting a departure ({}, team {}) failed and went to the dead-letter queue: redrive it \
                     to finish (forgetting again is harmless).",
                    forget.reason.as_str(),
                    forget.team
                );
                self.alert(&format!("forget {}", forget.event_id), &what, None).await;
                return Ok(Outcome::Skipped { reason: "forget_dead_lettered" });
            }
            DeadLetter::Work(WorkMessage::CloudwatchAlarm(alarm)) => {
                let name = alarm.event.pointer("/detail/alarmName").and_then(serde_json::Value::as_str);
                let what = format!(
                    "A CloudWatch alarm's state change could not be handled and went to the dead-letter queue: {}",
                    redact::redact(name.unwrap_or("(unnamed)"))
                );
                self.alert(&WorkMessage::CloudwatchAlarm(alarm.clone()).dedupe_id(), &what, None).await;
                return Ok(Outcome::Skipped { reason: "alert_dead_lettered" });
            }
            // A shortcut's thread is one to apologize in only once its
            // turn was stored: the worker stores it after checking that the
            // person sees the message. Before that, the thread the payload
            // named may be one the person cannot see.
            DeadLetter::Work(WorkMessage::InvestigateMessage(shortcut)) => {
                let turn_id = TurnId::for_event(&shortcut.thread, &shortcut.event_id);
                if self.turns.load(&turn_id).await?.is_none() {
                    return Ok(Outcome::Skipped { reason: "shortcut_turn_never_started" });
                }
                (turn_id, &shortcut.thread)
            }
            // A command's thread is the one its worker opened: apologized
            // in once its turn was stored there.
            DeadLetter::Work(WorkMessage::SlashCommand(command)) => {
                let turn_id = TurnId::for_claim(&command.team, &command.event_id);
                let Some(turn) = self.turns.load(&turn_id).await? else {
                    warn!("a slash command dead-lettered before its thread opened");
                    return Ok(Outcome::Skipped { reason: "command_turn_never_started" });
                };
                return self.apologize(&turn_id, &turn.thread).await;
            }
            DeadLetter::Work(WorkMessage::ApprovalTimeout(timeout)) => (timeout.turn_id.clone(), &timeout.thread),
            // The person signed in and waits for the turn to go on.
            DeadLetter::Work(WorkMessage::SignedIn(signed_in)) => (signed_in.turn_id.clone(), &signed_in.thread),
            DeadLetter::Reply(ReplyMessage::Deliver { turn_id, thread })
            | DeadLetter::Reply(ReplyMessage::ApprovalPrompt { turn_id, thread, .. })
            | DeadLetter::Reply(ReplyMessage::ConnectPrompt { turn_id, thread, .. }) => (turn_id.clone(), thread),
        };
        self.apologize(&turn_id, thread).await
    }

    async fn deliver(&self, turn_id: &TurnId) -> Result<Outcome, ResponderError> {
        let Some(turn) = self.turns.load(turn_id).await? else {
            warn!("delivery for a turn that does not exist");
            return Ok(Outcome::Skipped { reason: "unknown_turn" });
        };
        let mut record = self.deliveries.load(turn_id).await?;
        if record.settled.is_some() {
            return Ok(Outcome::Skipped { reason: "already_settled" });
        }
        if matches!(turn.status, TurnStatus::Running | TurnStatus::AwaitingApproval) {
            warn!(status = turn.status.as_str(), "delivery for a turn that is not settled");
            return Ok(Outcome::Skipped { reason: "not_settled" });
        }
        let answer = turn.answer.as_deref().unwrap_or("I have nothing to add.");
        let rendering = render::Rendering { mentions: self.mentions, charts: !turn.charts_off };
        let mut messages = render::answer(answer, rendering, turn_id);
        // More than a few messages: its lead, and all of it as a file.
        let mut file = None;
        if messages.len() > render::MAX_ANSWER_MESSAGES {
            let (lead, whole) = render::long_answer(answer, rendering, turn_id);
            (messages, file) = (lead, Some(whole));
        }
        let streamed = match self.finish_stream(&turn.thread, turn_id, answer, &messages, &mut record).await {
            Ok(streamed) => streamed,
            Err(ResponderError::Slack(PostError::Rejected { code })) => {
                return self.refused(turn_id, &turn.thread, code, &mut record).await;
            }
            Err(err) => return Err(err),
        };
        if streamed == Streamed::Whole {
            // The stream holds the whole answer: no file needed.
            file = None;
        }
        let delivered = async {
            let posted = self.post_all(&turn.thread, turn_id, &messages, &mut record).await?;
            let mut attached = 0;
            if let Some(file) = &file {
                let file = ToAttach::Bytes(file);
                attached += usize::from(
                    self.attach_once(&turn.thread, turn_id, render::ANSWER_UPLOAD, file, &mut record).await?,
                );
            }
            // The results the model attached, uploaded by the worker.
            for uploaded in &turn.answer_files {
                let file = ToAttach::Uploaded { file_id: &uploaded.file_id, title: &uploaded.title };
                attached +=
                    usize::from(self.attach_once(&turn.thread, turn_id, &uploaded.file_id, file, &mut record).await?);
            }
            Ok::<_, ResponderError>(posted + attached)
        };
        let posted = match delivered.await {
            Ok(posted) => posted + usize::from(streamed != Streamed::No),
            Err(ResponderError::Slack(PostError::Rejected { code })) => {
                return self.refused(turn_id, &turn.thread, code, &mut record).await;
            }
            Err(err) => return Err(err),
        };
        info!(posted, parts = messages.len(), "answer delivered");
        record.settled = Some(Settled::Delivered);
        self.save_record(turn_id, &mut record).await?;
        if turn.status == TurnStatus::Failed {
            let what = format!("A turn failed; the thread was told: \"{}\"", redact::redact(answer));
            self.alert(turn_id.reference(), &what, Some(&turn.thread)).await;
        }
        Ok(Outcome::Delivered { id: turn_id.clone(), posted })
    }

    /// The message the worker streamed, if it streamed one, becomes the
    /// answer (or the apology): as it stands when it streamed exactly the
    /// saved answer (a streamed message holds more than a posted one: it
    /// is the whole answer, however many messages posting would take),
    /// otherwise stopped and replaced by the first part (`chat.update`).
    async fn finish_stream(
        &self,
        thread: &ThreadRef,
        turn_id: &TurnId,
        answer: &str,
        messages: &[Outgoing],
        record: &mut DeliveryRecord,
    ) -> Result<Streamed, ResponderError> {
        let first = &messages[0];
        if record.posted.contains_key(&first.key) {
            return Ok(Streamed::No);
        }
        let stream = self.streams.load(turn_id).await?;
        let Some(ts) = stream.ts else { return Ok(Streamed::No) };
        // A streamed table, or a link whose label names another host, stays
        // only until the rendering (a table block, the real address)
        // replaces it.
        let streamed_as_saved = stream.completed.as_deref()
            == Some(&stream_digest(&slack::text::unpinging_markdown(&redact::redact(answer)))[..])
            && !crate::markdown::streams_badly(answer);
        if streamed_as_saved {
            info!(ts = %ts, "the streamed message is the answer");
            for message in &messages[1..] {
                record.posted.insert(message.key.clone(), ts.clone());
            }
        } else {
            info!(ts = %ts, complete = streamed_as_saved, "replacing the streamed message with the saved answer");
            match self.slack.stop_stream(thread, &ts).await {
                Ok(()) | Err(PostError::Rejected { .. }) => {}
                Err(err) => return Err(ResponderError::Slack(err)),
            }
            match self.slack.update(thread, &ts, turn_id, first).await {
                Ok(()) => {}
                // Slack will not change that message (deleted, say): the
                // answer is posted below it rather than lost.
                Err(PostError::Rejected { code }) => {
                    warn!(ts = %ts, code, "the streamed message cannot be replaced: posting the answer");
                    return Ok(Streamed::No);
                }
                Err(err) => return Err(ResponderError::Slack(err)),
            }
        }
        record.posted.insert(first.key.clone(), ts);
        self.save_record(turn_id, record).await?;
        // The answer is in the thread: the status line goes.
        if let Err(err) = self.slack.set_status(thread, "").await {
            info!(error = %err, "status line not cleared");
        }
        Ok(if streamed_as_saved { Streamed::Whole } else { Streamed::Replaced })
    }

    /// Attaches `file` to the thread once: uploaded, recorded under `name`,
    /// then shared. A delivery that finds it recorded but not shared (a
    /// share whose answer was lost) looks in the thread before sharing it
    /// again. Whether this call shared it.
    async fn attach_once(
        &self,
        thread: &ThreadRef,
        turn_id: &TurnId,
        name: &str,
        file: ToAttach<'_>,
        record: &mut DeliveryRecord,
    ) -> Result<bool, ResponderError> {
        let (title, bytes) = match file {
            ToAttach::Bytes(file) => (file.title.as_str(), file.body.len()),
            ToAttach::Uploaded { title, .. } => (title, 0),
        };
        let file_id = match record.uploads.get(name) {
            Some(upload) if upload.shared => return Ok(false),
            Some(upload) => {
                let shared = self.slack.files_in_thread(thread).await.map_err(ResponderError::Slack)?;
                if shared.contains(&upload.file_id) {
                    info!(file = %upload.file_id, "an earlier attempt shared this file: not sharing again");
                    record.uploads.insert(name.to_owned(), UploadRecord { shared: true, ..upload.clone() });
                    self.save_record(turn_id, record).await?;
                    return Ok(false);
                }
                upload.file_id.clone()
            }
            None => {
                let file_id = match file {
                    ToAttach::Bytes(file) => self.slack.upload(file).await.map_err(ResponderError::Slack)?,
                    ToAttach::Uploaded { file_id, .. } => file_id.to_owned(),
                };
                let upload = UploadRecord { file_id: file_id.clone(), shared: false };
                record.uploads.insert(name.to_owned(), upload);
                self.save_record(turn_id, record).await?;
                file_id
            }
        };
        self.slack.share_upload(thread, &file_id, title).await.map_err(ResponderError::Slack)?;
        info!(file = %file_id, bytes, "file attached to the thread");
        record.uploads.insert(name.to_owned(), UploadRecord { file_id, shared: true });
        self.save_record(turn_id, record).await?;
        Ok(true)
    }

    /// Posts a message of the turn's that is not its answer (a prompt, a
    /// grant's notice), once.
    async fn post_in_thread(
        &self,
        turn_id: &TurnId,
        thread: &ThreadRef,
        message: &Outgoing,
    ) -> Result<Outcome, ResponderError> {
        let mut record = self.deliveries.load(turn_id).await?;
        match self.post_all(thread, turn_id, std::slice::from_ref(message), &mut record).await {
            Ok(posted) => Ok(Outcome::Delivered { id: turn_id.clone(), posted }),
            Err(ResponderError::Slack(PostError::Rejected { code })) => {
                self.refused(turn_id, thread, code, &mut record).await
            }
            Err(err) => Err(err),
        }
    }

    /// Puts the decided prompt in place of the prompt with buttons (an
    /// update: repeating it is harmless).
    async fn decided(
        &self,
        turn_id: &TurnId,
        thread: &ThreadRef,
        message: &Outgoing,
    ) -> Result<Outcome, ResponderError> {
        let record = self.deliveries.load(turn_id).await?;
        let Some(ts) = record.posted.get(&message.key) else {
            warn!(key = %message.key, "decision for a prompt this responder did not post");
            return Ok(Outcome::Skipped { reason: "prompt_not_posted" });
        };
        match self.slack.update(thread, ts, turn_id, message).await {
            Ok(()) => Ok(Outcome::PromptUpdated { id: turn_id.clone() }),
            Err(PostError::Rejected { code }) => {
                warn!(code, remedy = remedy(&code), "approval prompt not updated");
                Ok(Outcome::Skipped { reason: "prompt_update_refused" })
            }
            Err(err) => Err(ResponderError::Slack(err)),
        }
    }

    /// The thread's status line; where Slack refuses one, a placeholder
    /// message updated in place (and later replaced by the answer).
    async fn progress(
        &self,
        turn_id: &TurnId,
        thread: &ThreadRef,
        step: u32,
        text: &str,
    ) -> Result<Outcome, ResponderError> {
        // A redelivered status line must not come back over the answer.
        let record = self.deliveries.load(turn_id).await?;
        if is_stale(&record, step) {
            return Ok(Outcome::Skipped { reason: "stale_progress" });
        }
        let code = match self.slack.set_status(thread, &redact::redact(text)).await {
            Ok(()) => return Ok(Outcome::ProgressShown { id: turn_id.clone() }),
            Err(PostError::Rejected { code }) => code,
            Err(err) => {
                warn!(step, error = %err, "progress not shown");
                return Ok(Outcome::Skipped { reason: "slack_unavailable" });
            }
        };
        info!(step, code = %code, "thread status refused: showing a placeholder message");
        match self.placeholder(turn_id, thread, step, text, record).await {
            Ok(outcome) => Ok(outcome),
            Err(err) => {
                warn!(step, error = %err, "progress not shown");
                Ok(Outcome::Skipped { reason: "placeholder_failed" })
            }
        }
    }

    async fn placeholder(
        &self,
        turn_id: &TurnId,
        thread: &ThreadRef,
        step: u32,
        text: &str,
        mut record: DeliveryRecord,
    ) -> Result<Outcome, ResponderError> {
        let message = render::placeholder(text);
        match record.posted.get(&MessageKey::Placeholder).cloned() {
            Some(ts) => self.slack.update(thread, &ts, turn_id, &message).await.map_err(ResponderError::Slack)?,
            None => self.post_once(thread, turn_id, &message, &mut record).await?,
        }
        record.progress_step = step;
        self.save_record(turn_id, &mut record).await?;
        Ok(Outcome::ProgressShown { id: turn_id.clone() })
    }

    async fn apologize(&self, turn_id: &TurnId, thread: &ThreadRef) -> Result<Outcome, ResponderError> {
        let mut record = self.deliveries.load(turn_id).await?;
        if record.settled.is_some() {
            return Ok(Outcome::Skipped { reason: "already_settled" });
        }
        let turn = self.turns.load(turn_id).await?;
        if turn.is_some_and(|turn| matches!(turn.status, TurnStatus::Answered | TurnStatus::Failed)) {
            // The answer exists: delivering it is the best apology.
            return self.deliver(turn_id).await;
        }
        let reference = turn_id.reference().to_owned();
        error!(reference, "the turn's work ended in a dead-letter queue: telling the thread");
        let apology = [render::apology(turn_id)];
        // A stream the worker started and never finished becomes the
        // apology: one message, none left streaming.
        let streamed = match self.finish_stream(thread, turn_id, "", &apology, &mut record).await {
            Ok(streamed) => usize::from(streamed != Streamed::No),
            Err(ResponderError::Slack(PostError::Rejected { code })) => {
                return self.refused(turn_id, thread, code, &mut record).await;
            }
            Err(err) => return Err(err),
        };
        match self.post_all(thread, turn_id, &apology, &mut record).await.map(|posted| posted + streamed) {
            Ok(posted) => {
                record.settled = Some(Settled::Apologized { reference: reference.clone() });
                self.save_record(turn_id, &mut record).await?;
                let what = "A turn's work reached the dead-letter queue after every retry; the thread got an apology.";
                self.alert(&reference, what, Some(thread)).await;
                Ok(Outcome::Delivered { id: turn_id.clone(), posted })
            }
            Err(ResponderError::Slack(PostError::Rejected { code })) => {
                self.refused(turn_id, thread, code, &mut record).await
            }
            Err(err) => Err(err),
        }
    }

    /// Posts the messages not yet in the thread, in order; how many it
    /// posted. The first replaces the placeholder, if one was shown and the
    /// message ends the turn (an answer or an apology).
    async fn post_all(
        &self,
        thread: &ThreadRef,
        turn_id: &TurnId,
        messages: &[Outgoing],
        record: &mut DeliveryRecord,
    ) -> Result<usize, ResponderError> {
        let ends_turn = |key: &MessageKey| key.is_answer() || *key == MessageKey::Apology;
        let mut posted = 0;
        for (index, message) in messages.iter().enumerate() {
            if record.posted.contains_key(&message.key) {
                continue;
            }
            let placeholder = record.posted.get(&MessageKey::Placeholder).cloned();
            match placeholder {
                // Replacing is idempotent: no attempt to record first.
                Some(ts) if index == 0 && ends_turn(&message.key) => {
                    self.slack.update(thread, &ts, turn_id, message).await.map_err(ResponderError::Slack)?;
                    record.posted.insert(message.key.clone(), ts);
                    self.save_record(turn_id, record).await?;
                }
                _ => self.post_once(thread, turn_id, message, record).await?,
            }
            posted += 1;
        }
        if posted > 0 && ends_turn(&messages[0].key) && !record.posted.contains_key(&MessageKey::Placeholder) {
            // Slack clears the status line when the bot replies; say so
            // anyway, in case the answer landed as an update.
            if let Err(err) = self.slack.set_status(thread, "").await {
                info!(error = %err, "status line not cleared");
            }
        }
        Ok(posted)
    }

    /// Posts one message unless an earlier attempt already did.
    async fn post_once(
        &self,
        thread: &ThreadRef,
        turn_id: &TurnId,
        message: &Outgoing,
        record: &mut DeliveryRecord,
    ) -> Result<(), ResponderError> {
        let look_first = record.attempted.contains(&message.key);
        if !look_first {
            record.attempted.insert(message.key.clone());
            self.save_record(turn_id, record).await?;
        }
        let placed = retry(
            &POST_BACKOFF,
            |attempt| {
                // After a try whose outcome is unknown, look before posting.
                let look_first = look_first || attempt > 1;
                async move {
                    if look_first {
                        let found = self.slack.find_posted(thread, turn_id).await.map_err(PlaceError::Look)?;
                        if let Some(ts) = found.get(&message.key) {
                            return Ok(Placed::Found(ts.clone()));
                        }
                    }
                    self.slack.post(thread, turn_id, message).await.map(Placed::Posted).map_err(PlaceError::Post)
                }
            },
            |failed| match failed.error {
                // A 5xx or a lost response: it may have been posted. Wait,
                // look, and post again only if it is not there.
                PlaceError::Post(err @ PostError::Unavailable(_)) => {
                    warn!(key = %message.key, attempt = failed.attempt, error = %err, "post outcome unknown; retrying");
                    Verdict::Retry
                }
                _ => Verdict::Stop,
            },
        )
        .await;
        match placed {
            Ok(Placed::Found(ts)) => {
                info!(key = %message.key, "an earlier attempt posted this: not posting again");
                record.attempted.remove(&message.key);
                record.posted.insert(message.key.clone(), ts);
                self.save_record(turn_id, record).await
            }
            Ok(Placed::Posted(ts)) => {
                record.attempted.remove(&message.key);
                record.posted.insert(message.key.clone(), ts);
                self.save_record(turn_id, record).await
            }
            Err(PlaceError::Post(err @ PostError::Rejected { .. })) => {
                // Slack said no: nothing was posted, the outcome is known.
                record.attempted.remove(&message.key);
                if let Err(save) = self.save_record(turn_id, record).await {
                    warn!(error = %save, "refused post not recorded");
                }
                Err(ResponderError::Slack(err))
            }
            Err(PlaceError::Look(err) | PlaceError::Post(err)) => Err(ResponderError::Slack(err)),
        }
    }

    async fn save_record(&self, turn_id: &TurnId, record: &mut DeliveryRecord) -> Result<(), ResponderError> {
        record.updated_at = self.clock.now_unix();
        Ok(self.deliveries.save(turn_id, record).await?)
    }

    /// Slack refused the bot's message: logged with what to fix, and the
    /// delivery record says the turn failed (the worker leaves it alone).
    async fn refused(
        &self,
        turn_id: &TurnId,
        thread: &ThreadRef,
        code: String,
        record: &mut DeliveryRecord,
    ) -> Result<Outcome, ResponderError> {
        log_refusal(&code);
        if record.settled.is_none() {
            record.settled = Some(Settled::Refused { code: code.clone() });
            self.save_record(turn_id, record).await?;
            if needs_a_human(&code) {
                let what = format!("Slack refused the bot's message (`{code}`): {}.", remedy(&code));
                self.alert(turn_id.reference(), &what, Some(thread)).await;
            }
        }
        Ok(Outcome::Refused { id: turn_id.clone(), code })
    }

    /// Alerts the ops channel, when there is one; what became of it is
    /// logged, never an error of the delivery.
    pub async fn alert(&self, reference: &str, what: &str, thread: Option<&ThreadRef>) {
        let Some(alerts) = &self.alerts else { return };
        match alerts.raise(Alert { reference, what, thread }).await {
            Raised::Posted => info!(reference, "ops alert posted"),
            Raised::Duplicate => info!(reference, "ops alert already posted for this reference"),
            Raised::Suppressed => warn!(reference, what, "ops alert suppressed: too many this minute"),
            Raised::Failed(reason) => error!(reference, what, reason, "ops alert not posted"),
        }
    }
}

/// Whether a progress step comes too late: the answer is in the thread, or
/// a later step is already shown.
fn is_stale(record: &DeliveryRecord, step: u32) -> bool {
    record.settled.is_some() || record.has_answer() || step < record.progress_step
}

/// What an admin should do about a refusal, by Slack's error code.
pub fn remedy(code: &str) -> &'static str {
    match code {
        "not_in_channel" => "invite the bot to the channel (/invite @bot)",
        "channel_not_found" => "the channel was deleted, or is private and the bot is not in it",
        "is_archived" => "the channel is archived",
        "invalid_auth" | "not_authed" | "token_revoked" | "token_expired" | "account_inactive" => {
            "the bot token is wrong or revoked: reinstall the app and update the SLACK_BOT_TOKEN secret"
        }
        "missing_scope" => "add the missing scope in the app manifest (infra/slack-app-manifest.yaml) and reinstall",
        "msg_too_long" | "invalid_blocks" | "invalid_metadata" => "a rendering bug: report it with the turn id",
        "restricted_action" | "ekm_access_denied" => "a workspace policy blocks the bot from posting here",
        "ratelimited" => "Slack is rate limiting the bot",
        _ => "see https://docs.slack.dev/reference/methods/chat.postMessage#errors",
    }
}

/// Refusals an operator must act on (the others are the bot's own bugs or
/// passing conditions, in the logs).
fn needs_a_human(code: &str) -> bool {
    matches!(
        code,
        "not_in_channel"
            | "channel_not_found"
            | "is_archived"
            | "invalid_auth"
            | "not_authed"
            | "token_revoked"
            | "token_expired"
            | "account_inactive"
            | "missing_scope"
            | "restricted_action"
            | "ekm_access_denied"
    )
}

fn log_refusal(code: &str) {
    error!(code, remedy = remedy(code), "Slack refused the bot's message: the turn is marked failed");
}
