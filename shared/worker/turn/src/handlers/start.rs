//! A question (`StartTurn`): the turn created from it (once, however often it
//! is delivered), then its steps.

use super::Handler;
use crate::context;
use crate::step_loop::{THINKING, write_units};
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::messages::TurnRequest;
use assistant_core::ports::Created;
use assistant_core::turn::{Turn, TurnId};
use tracing::{Span, field, info, warn};

impl Handler for TurnRequest {
    fn name_on(&self, span: &Span) {
        span.record("turn_id", field::display(TurnId::for_event(&self.thread, &self.event_id)));
        span.record("event_id", field::display(&self.event_id));
    }

    async fn apply(&self, worker: &Worker, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.start(self, deadline).await
    }
}

impl Worker {
    pub(crate) async fn start(&self, request: &TurnRequest, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        let asked_at = request.asked_at().unwrap_or_else(|| self.clock.now_unix());
        if let Some(departed) = self.not_begun(&request.thread.team, &request.user, asked_at, "question").await? {
            return Ok(departed);
        }
        if let Some(reason) = self.unanswered(request) {
            info!(reason, channel = %request.thread.channel, "not answered: the channel's response_mode");
            return Ok(Outcome::Ignored { reason });
        }
        self.begin(request, deadline).await
    }

    /// A redelivery of work whose turn is already stored (a shortcut's, a
    /// command's): it goes on where it is, unless its thread was told it
    /// failed, without checking or posting again what started it.
    pub(crate) async fn resume_stored(
        &self,
        turn_id: &TurnId,
        deadline: &dyn Deadline,
    ) -> Result<Option<Outcome>, WorkerError> {
        let Some(stored) = self.store.load(turn_id).await? else { return Ok(None) };
        if self.thread_told_failed(&stored.id).await? {
            return Ok(Some(Outcome::Ignored { reason: "thread_told_failed" }));
        }
        info!(step = stored.steps, "turn already stored: resuming");
        self.run(stored, deadline).await.map(Some)
    }

    /// A question the bot answers (its channel's `response_mode` checked,
    /// or a shortcut, which is always addressed to the bot): the turn
    /// created once, then its steps.
    pub(crate) async fn begin(&self, request: &TurnRequest, deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        // On a redelivery this history read (and the enhancer's call) is
        // wasted: `create` then returns the stored turn. Rare, and cheaper
        // than a read before every create.
        let in_dm = request.thread.channel.as_str().starts_with('D');
        // A message without words (a greeting is asked for) has nothing to
        // read, and a spent budget pays for no model call (the step loop says so).
        // (Read only where an enhancer would be called: without one, the
        // step loop's charge before the first model call says so.)
        let spent = self.enhancer.is_some() && self.spent_before_start(request).await;
        let enhance = async {
            match &self.enhancer {
                Some(enhancer) if !spent && !request.text.trim().is_empty() => Some(enhancer.run(&request.text).await),
                _ => None,
            }
        };
        let (channel, history, seen, enhanced) = tokio::join!(
            self.slack.channel_info(&request.thread.channel),
            self.slack.thread_history(&request.thread, request.bot_user.as_ref(), context::HISTORY_LIMIT),
            self.channel_in_view(request, in_dm),
            enhance,
        );
        let mut turn = Turn::start(request, self.clock.now_unix());
        turn.charts_off = !self.charts;
        let history = history
            .inspect_err(|err| warn!(error = %err, "thread history unavailable: answering from the question alone"));
        let thread_so_far = history.as_deref().unwrap_or_default();
        let mut files =
            crate::thread_files::read(self.files.as_ref(), self.artifacts.as_ref(), &turn.id, request, thread_so_far)
                .await
                .map_err(WorkerError::Artifacts)?;
        self.guard_files(&mut turn, &mut files).await?;
        turn.transcript = match &history {
            Ok(history) => context::opening(history, request, &files),
            // Rate limited (Slack's one read a minute for apps outside its
            // Marketplace), or down: the answer says what it could not see.
            Err(_) => context::opening_unread(request, &files),
        };
        turn.text_files = files.text_files;
        if let Some((block, run)) = enhanced {
            if let Some(block) = block {
                crate::enhancer::attach(&mut turn.transcript, block);
            }
            turn.enhancer = Some(run);
        }
        let channel = channel
            .inspect_err(|err| warn!(error = %err, "channel info unavailable"))
            .ok()
            .map(|info| context::channel_context(&info));
        let viewing = request.context_channel.clone().or(seen).as_ref().map(context::viewing_context);
        let home = self
            .home_channels
            .iter()
            .any(|glob| tools_registry::glob_matches(glob, request.thread.channel.as_str()))
            .then(|| context::HOME_CHANNEL.to_owned());
        let lines: Vec<String> = [channel, viewing, home].into_iter().flatten().collect();
        turn.channel_context = (!lines.is_empty()).then(|| lines.join(" "));
        match self.store.create(&mut turn).await? {
            Created::New => {
                info!("turn started");
                turn.metered.dynamodb_write_units += write_units(&turn);
                let opens_dm_thread = in_dm && request.message_ts == request.thread.thread_ts;
                tokio::join!(self.show_progress(&turn, THINKING.to_owned()), async {
                    if opens_dm_thread {
                        self.title(&turn.thread, &request.text).await;
                    }
                });
                turn.metered.sqs_requests += 1;
                turn.first_status_ms = Some(turn.since_asked_ms(self.clock.now_millis()));
            }
            Created::Existing(stored) => {
                // A redelivery, or Slack's retry of the question: the turn
                // goes on where it is, unless its thread was told it failed.
                if self.thread_told_failed(&stored.id).await? {
                    info!("start of a turn whose thread was told it failed: nothing to do");
                    return Ok(Outcome::Ignored { reason: "thread_told_failed" });
                }
                info!(step = stored.steps, "turn already stored: resuming");
                turn = *stored;
            }
        }
        self.run(turn, deadline).await
    }

    /// Why the channel's `response_mode` leaves this message unanswered,
    /// if it does. DMs are always answered. The ingress starts a turn for
    /// a message that names no one only in a bot's thread or (from what
    /// workers published, up to a minute old) in an `every_question`
    /// channel: this is the check with the configuration itself.
    pub(crate) fn unanswered(&self, request: &TurnRequest) -> Option<&'static str> {
        use assistant_core::response_modes::{self, ResponseMode};
        let channel = request.thread.channel.as_str();
        if channel.starts_with('D') {
            return None;
        }
        let mentioned = request.bot_user.as_ref().is_none_or(|bot| request.text.contains(&format!("<@{bot}>")));
        let top_level = request.message_ts == request.thread.thread_ts;
        match response_modes::mode_in(&self.response_modes, channel) {
            ResponseMode::MentionsOnly if !mentioned => Some("mentions_only"),
            ResponseMode::ThreadReplies | ResponseMode::MentionsOnly if top_level && !mentioned => {
                Some("not_addressed")
            }
            _ => None,
        }
    }

    /// The channel a person had in view beside the DM, as the ingress
    /// remembered it (DMs only: in a channel, the channel is the context).
    pub(crate) async fn channel_in_view(&self, request: &TurnRequest, in_dm: bool) -> Option<slack::ChannelId> {
        if !in_dm || request.context_channel.is_some() {
            return None;
        }
        match self.contexts.recall(&request.thread.team, &request.user, self.clock.now_unix()).await {
            Ok(seen) => seen.and_then(|seen| seen.channel),
            Err(err) => {
                warn!(error = %err, "what the person has in view is unknown");
                None
            }
        }
    }

    /// A DM thread's title, from its question (no model call), redacted
    /// like everything the bot sends. Best effort.
    pub(crate) async fn title(&self, thread: &assistant_core::ThreadRef, question: &str) {
        let title = context::thread_title(&redact::redact(question));
        if title.is_empty() {
            return;
        }
        if let Err(err) = self.agent.set_title(thread, &title).await {
            info!(error = %err, "thread title not set");
        }
    }
}
