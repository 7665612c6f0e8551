//! The request path of the ingress function: size → signature → parse →
//! route → claim → enqueue → reply, with at most three AWS calls (for a
//! top-level message that names no one, the every-question channels' read,
//! at most once a minute; the claim; the enqueue) and nothing written for a
//! request that fails verification.
//!
//! Replies follow what Slack does with them: 2xx is done; anything else makes
//! Slack retry the event (up to three times), so only a failure on our side
//! that a retry can fix (AWS unavailable) answers 500. Requests that will
//! never succeed answer 4xx with `X-Slack-No-Retry: 1`.

use crate::http_body::{BodyError, raw_body};
use crate::route::{Ignored, Route, Seen, route_at};
use assistant_core::Clock;
use assistant_core::WorkMessage;
use assistant_core::ports::{ClaimOutcome, EventClaim, EventClaims, UserContext, UserContexts, WorkQueue};
use assistant_core::response_modes::EveryQuestionChannels;
use http::HeaderMap;
use slack::signature::{SIGNATURE_HEADER, TIMESTAMP_HEADER};
use slack::{Home, SigningSecret, TeamId, UserId};
use std::sync::Arc;
use tracing::{error, info, warn};

/// Slack's event payloads are a few KiB; 1 MiB leaves room for large
/// messages and blocks while refusing anything absurd early.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

const RETRY_NUM_HEADER: &str = "x-slack-retry-num";
const RETRY_REASON_HEADER: &str = "x-slack-retry-reason";

/// An HTTP request as the Lambda event gives it: the body still as a string,
/// possibly base64-encoded.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub headers: &'a HeaderMap,
    pub body: Option<&'a str>,
    pub is_base64_encoded: bool,
}

/// The HTTP answer to Slack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    /// A JSON body, or none (Slack wants an empty 200 for events).
    pub json: Option<String>,
    /// Ask Slack not to retry: the same request would fail the same way.
    pub no_retry: bool,
    /// How the request counts in the ingress's metrics.
    pub counted: Counted,
}

/// What a request was, for the `Accepted`, `Duplicates` and `Rejected`
/// metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// Work was put on the queue (a question, a click).
    Accepted,
    /// A delivery of an event already claimed (Slack's retries).
    Duplicate,
    /// Refused: a bad signature, a body too large or unreadable.
    Rejected,
    /// Signed by Slack but for another installation than this deployment's
    /// (an org-wide deployment's event or click from outside its
    /// organization): acknowledged, nothing queued.
    Foreign,
    /// Anything else: a challenge, an event with nothing to do, a failure
    /// Slack will retry.
    Other,
}

impl Reply {
    fn ok() -> Self {
        Self { status: 200, json: None, no_retry: false, counted: Counted::Other }
    }

    fn error(status: u16, code: &str) -> Self {
        let counted = if status < 500 { Counted::Rejected } else { Counted::Other };
        Self { status, json: Some(serde_json::json!({ "error": code }).to_string()), no_retry: status < 500, counted }
    }

    fn counted(self, counted: Counted) -> Self {
        Self { counted, ..self }
    }
}

pub struct Intake {
    secret: SigningSecret,
    claims: Arc<dyn EventClaims>,
    queue: Arc<dyn WorkQueue>,
    contexts: Arc<dyn UserContexts>,
    clock: Arc<dyn Clock>,
    body_limit: usize,
    /// Where a message that names no one is a question (`response_mode`
    /// `every_question`); none: nowhere.
    every_question: Option<EveryQuestionChannels>,
    /// Which installation this deployment is (`SLACK_ENTERPRISE_ID`).
    home: Home,
    /// Opens the modal of "Ask the assistant about this…"; none: that
    /// shortcut investigates at once, without the person's words.
    views: Option<Arc<dyn crate::shortcuts::ViewOpener>>,
    /// The forms MCP servers ask people to fill in; none: their buttons
    /// are acknowledged and do nothing.
    forms: Option<assistant_core::elicitation::Forms>,
}

impl Intake {
    pub fn new(
        secret: SigningSecret,
        claims: Arc<dyn EventClaims>,
        queue: Arc<dyn WorkQueue>,
        contexts: Arc<dyn UserContexts>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let body_limit = DEFAULT_BODY_LIMIT;
        Self {
            secret,
            claims,
            queue,
            contexts,
            clock,
            body_limit,
            every_question: None,
            home: Home::Workspace,
            views: None,
            forms: None,
        }
    }

    /// Takes people's answers to servers' forms from `forms`.
    pub fn with_forms(mut self, forms: assistant_core::elicitation::Forms) -> Self {
        self.forms = Some(forms);
        self
    }

    /// Opens shortcuts' modals with `views`.
    pub fn with_views(mut self, views: Arc<dyn crate::shortcuts::ViewOpener>) -> Self {
        self.views = Some(views);
        self
    }

    /// Serves an org-wide install (or, by default, one workspace).
    pub fn with_home(mut self, home: Home) -> Self {
        self.home = home;
        self
    }

    /// Answers every new question in the channels the workers published.
    pub fn with_every_question(mut self, channels: EveryQuestionChannels) -> Self {
        self.every_question = Some(channels);
        self
    }

    pub fn with_body_limit(mut self, limit: usize) -> Self {
        self.body_limit = limit;
        self
    }

    pub async fn handle(&self, request: Request<'_>) -> Reply {
        match self.decide(request) {
            Ok(route) => self.act(route, request.headers).await,
            Err(reply) => reply,
        }
    }

    /// Everything up to the first I/O: what the benchmark measures as the
    /// warm CPU cost of a request.
    pub fn decide(&self, request: Request<'_>) -> Result<Route, Reply> {
        let body = raw_body(request.body, request.is_base64_encoded, self.body_limit).map_err(|err| {
            warn!(error = %err, "refused request body");
            match err {
                BodyError::TooLarge(..) => Reply::error(413, "payload_too_large"),
                BodyError::NotBase64 => Reply::error(400, "malformed_body"),
            }
        })?;

        let header = |name: &str| request.headers.get(name).map(|value| value.as_bytes());
        self.secret.verify(header(TIMESTAMP_HEADER), header(SIGNATURE_HEADER), &body, self.clock.now_unix()).map_err(
            |err| {
                warn!(reason = %err, "refused request: bad Slack signature");
                // Let Slack retry: during a secret rotation or a clock step a
                // retry can verify, and a forger gains nothing from one.
                Reply { no_retry: false, ..Reply::error(401, "invalid_signature") }
            },
        )?;

        let content_type = request.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
        let parsed = slack::request::parse(content_type, &body).map_err(|err| {
            warn!(error = %err, "refused signed request: payload does not parse");
            Reply::error(400, "malformed_payload")
        })?;
        Ok(route_at(&self.home, parsed))
    }

    async fn act(&self, route: Route, headers: &HeaderMap) -> Reply {
        match route {
            Route::Challenge(challenge) => Reply {
                status: 200,
                json: Some(serde_json::json!({ "challenge": challenge }).to_string()),
                no_retry: false,
                counted: Counted::Other,
            },
            Route::Ignore(reason @ Ignored::OutsideOrganization) => {
                warn!(reason = reason.as_str(), "acknowledged without work: another installation's request");
                Reply::ok().counted(Counted::Foreign)
            }
            Route::Ignore(reason) => {
                info!(reason = reason.as_str(), "acknowledged without work");
                Reply::ok()
            }
            Route::StartTurn { claim, message } => self.claim_and_enqueue(&claim, &message, headers).await,
            Route::StartIfEveryQuestion { claim, message } => {
                let Some(channels) = &self.every_question else {
                    info!(reason = Ignored::NotAddressed.as_str(), "acknowledged without work");
                    return Reply::ok();
                };
                match channels.include(&claim.thread.channel).await {
                    Ok(true) => self.claim_and_enqueue(&claim, &message, headers).await,
                    Ok(false) => {
                        info!(reason = Ignored::NotAddressed.as_str(), "acknowledged without work");
                        Reply::ok()
                    }
                    // Slack retries: the question may be for the bot.
                    Err(err) => {
                        error!(error = %err, "the channels that answer every question could not be read");
                        Reply::error(500, "unavailable")
                    }
                }
            }
            Route::Enqueue(message) => self.enqueue(&message).await,
            Route::Command(command) => self.command(&command, headers).await,
            Route::OpenView { trigger_id, view, instead } => {
                let opened = match &self.views {
                    Some(views) => views.open(&trigger_id, &view).await,
                    None => Err(assistant_core::PortError::new("views.open", "no bot token in the ingress")),
                };
                match opened {
                    Ok(()) => {
                        info!("shortcut's modal opened");
                        Reply::ok()
                    }
                    // The trigger lives 3 s: the message is investigated
                    // now, without the person's words, rather than not at all.
                    Err(err) => {
                        warn!(error = %err, "the shortcut's modal did not open: investigating without it");
                        let (claim, message) = *instead;
                        self.claim_and_enqueue(&claim, &message, headers).await
                    }
                }
            }
            Route::FormClick { team, user, form, trigger_id, decline } => {
                self.form_click(&team, &user, &form, &trigger_id, decline).await
            }
            Route::FormSubmit { team, user, form, values } => self.form_submit(&team, &user, &form, &values).await,
            Route::Remember { seen, then } => {
                self.remember(&seen).await;
                match then {
                    Some(message) => self.enqueue(&message).await,
                    None => Reply::ok(),
                }
            }
        }
    }

    /// A slash command: claimed and enqueued as a mention is, and answered
    /// with its ephemeral acknowledgement; or refused in the
    /// acknowledgement with nothing written (`crate::commands`).
    async fn command(&self, command: &slack::command::SlashCommand, headers: &HeaderMap) -> Reply {
        match crate::commands::route_slash_command(command, self.clock.now_unix()) {
            crate::commands::CommandRoute::Start { claim, message, ack } => {
                let reply = self.claim_and_enqueue(&claim, &message, headers).await;
                if reply.status != 200 {
                    return reply;
                }
                Reply { json: Some(ack), ..reply }
            }
            crate::commands::CommandRoute::Answer { ack, reason } => {
                info!(reason, "slash command answered without work");
                let counted = if reason == "no_question" { Counted::Other } else { Counted::Rejected };
                Reply { status: 200, json: Some(ack), no_retry: false, counted }
            }
        }
    }

    /// Answer (the form opens as a modal) or Decline (kept for the waiting
    /// worker), only for the person the form is for.
    async fn form_click(&self, team: &TeamId, user: &UserId, form: &str, trigger: &str, decline: bool) -> Reply {
        use assistant_core::elicitation::FormState;
        let Some(forms) = &self.forms else {
            info!(reason = "no_forms", "acknowledged without work");
            return Reply::ok();
        };
        let now = self.clock.now_unix();
        let found = if decline {
            forms.settle(form, team, user, FormState::Declined, now).await.map(|settled| settled.map(|()| None))
        } else {
            forms.answerable(form, team, user, now).await.map(|found| found.map(|(_, pending)| Some(pending)))
        };
        let view = match found {
            Ok(Ok(None)) => {
                info!(form, "a form declined");
                return Reply::ok();
            }
            Ok(Ok(Some(pending))) => crate::forms::modal(&pending),
            Ok(Err(why)) => {
                info!(form, reason = %why, "a form's click taken for nothing");
                crate::forms::notice(&why)
            }
            Err(err) => {
                error!(form, error = %err, "a form could not be read or declined");
                return Reply::error(500, "unavailable");
            }
        };
        if let Some(views) = &self.views
            && let Err(err) = views.open(trigger, &view).await
        {
            warn!(form, error = %err, "a form's modal did not open");
        }
        Reply::ok()
    }

    /// A form's modal submitted: the answer read back, checked, and kept
    /// for the waiting worker; fields that do not hold are named in the
    /// modal, which stays open.
    async fn form_submit(&self, team: &TeamId, user: &UserId, form: &str, values: &serde_json::Value) -> Reply {
        use assistant_core::elicitation::FormState;
        let Some(forms) = &self.forms else { return Reply::ok() };
        let now = self.clock.now_unix();
        let update = |why: &assistant_core::elicitation::NotTaken| Reply {
            json: Some(serde_json::json!({"response_action": "update", "view": crate::forms::notice(why)}).to_string()),
            ..Reply::ok()
        };
        let pending = match forms.answerable(form, team, user, now).await {
            Ok(Ok((_, pending))) => pending,
            Ok(Err(why)) => {
                info!(form, reason = %why, "a form's submission taken for nothing");
                return update(&why);
            }
            Err(err) => {
                error!(form, error = %err, "a form could not be read");
                return Reply::error(500, "unavailable");
            }
        };
        let content = crate::forms::answer(&pending.form, values);
        if let Err(problems) = pending.form.check(&content) {
            info!(form, problems = problems.len(), "a form's answer does not hold: asked again");
            return Reply { json: Some(crate::forms::errors(&pending.form, &problems).to_string()), ..Reply::ok() };
        }
        match forms.settle(form, team, user, FormState::Answered { content }, now).await {
            Ok(Ok(())) => {
                info!(form, "a form answered");
                Reply::ok()
            }
            Ok(Err(why)) => update(&why),
            Err(err) => {
                error!(form, error = %err, "a form's answer could not be kept");
                Reply::error(500, "unavailable")
            }
        }
    }

    /// What a person has in view, for their next question. Best effort: a
    /// question asked without it is still answered, so a failure is logged
    /// and Slack is not asked to retry.
    async fn remember(&self, seen: &Seen) {
        let context = UserContext { channel: seen.channel.clone(), at: self.clock.now_unix() };
        match self.contexts.remember(&seen.team, &seen.user, &context).await {
            Ok(()) => {
                info!(user = %seen.user, channel = ?seen.channel.as_ref().map(|c| c.as_str()), "context remembered")
            }
            Err(err) => warn!(user = %seen.user, error = %err, "context not remembered"),
        }
    }

    /// Claims the event, then enqueues its work, for the first delivery and
    /// for every retry alike: a retry may follow a delivery whose claim was
    /// applied but whose enqueue never happened (the claim's answer lost,
    /// the function stopped), and only enqueueing again saves that
    /// question. A second enqueue is harmless: SQS drops it within five
    /// minutes (the event id is the deduplication id), and the worker after
    /// that (the turn id derives from the event id; a stored turn is
    /// resumed, never started again). Nothing is undone after a failure,
    /// so no write of this path can strand a question: Slack's retry finds
    /// the claim and enqueues.
    async fn claim_and_enqueue(&self, claim: &EventClaim, message: &WorkMessage, headers: &HeaderMap) -> Reply {
        let retry_num = headers.get(RETRY_NUM_HEADER).and_then(|v| v.to_str().ok());
        let retry_reason = headers.get(RETRY_REASON_HEADER).and_then(|v| v.to_str().ok());
        let event_id = claim.event_id.as_str();
        let counted = match self.claims.claim(claim, self.clock.now_unix()).await {
            Ok(ClaimOutcome::Claimed) => Counted::Accepted,
            Ok(ClaimOutcome::Duplicate) => {
                info!(event_id, retry_num, retry_reason, "delivery of an event already claimed: enqueued again");
                Counted::Duplicate
            }
            Ok(ClaimOutcome::NotABotThread) => {
                info!(event_id, reason = "not_a_bot_thread", "acknowledged without work");
                return Reply::ok();
            }
            Err(err) => {
                // The claim may have been applied: Slack's retry finds it
                // (a duplicate) and enqueues. Whether the thread is the
                // bot's is not known, so nothing is enqueued now.
                error!(event_id, error = %err, "could not claim event; Slack will retry");
                return Reply::error(500, "unavailable");
            }
        };
        let reply = self.enqueue(message).await;
        if reply.status == 200 {
            info!(event_id, retry_num, group = %message.queue_group(), "turn enqueued");
            return reply.counted(counted);
        }
        reply
    }

    async fn enqueue(&self, message: &WorkMessage) -> Reply {
        match self.queue.enqueue(message).await {
            Ok(()) => Reply::ok().counted(Counted::Accepted),
            Err(err) => {
                error!(error = %err, group = %message.queue_group(), "could not enqueue work; Slack will retry");
                Reply::error(500, "unavailable")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use assistant_core::Clock;
    use base64::Engine;
    use http::HeaderValue;
    use testkit::clock::ManualClock;
    use testkit::fixtures;
    use testkit::memory::{MemoryClaims, MemoryContexts, MemoryQueue};

    const SECRET: &str = "test-signing-secret";
    const NOW: i64 = 1_763_800_001;

    /// The intake on in-memory ports, and those ports to look at.
    struct TestIntake {
        intake: Intake,
        claims: Arc<MemoryClaims>,
        queue: Arc<MemoryQueue>,
        contexts: Arc<MemoryContexts>,
        clock: Arc<ManualClock>,
    }

    impl TestIntake {
        fn claims(&self) -> &MemoryClaims {
            &self.claims
        }

        fn queue(&self) -> &MemoryQueue {
            &self.queue
        }

        async fn handle(&self, request: Request<'_>) -> Reply {
            self.intake.handle(request).await
        }

        fn with_body_limit(self, limit: usize) -> Self {
            Self { intake: self.intake.with_body_limit(limit), ..self }
        }
    }

    fn intake() -> TestIntake {
        let (claims, queue) = (Arc::new(MemoryClaims::default()), Arc::new(MemoryQueue::default()));
        let clock = Arc::new(ManualClock::at(NOW));
        let contexts = Arc::new(MemoryContexts::default());
        let intake = Intake::new(
            SigningSecret::new(SECRET).unwrap(),
            claims.clone(),
            queue.clone(),
            contexts.clone(),
            clock.clone(),
        );
        TestIntake { intake, claims, queue, contexts, clock }
    }

    fn headers_for(body: &str, content_type: &'static str, signed_at: i64) -> HeaderMap {
        testkit::signed::headers(SECRET, signed_at, body, content_type)
    }

    /// `body` as Slack sends it, signed at the intake's clock.
    async fn post(intake: &TestIntake, body: &str) -> Reply {
        let headers = headers_for(body, "application/json", intake.clock.now_unix());
        intake.handle(Request { headers: &headers, body: Some(body), is_base64_encoded: false }).await
    }

    #[tokio::test]
    async fn opening_the_dm_and_changing_context_start_no_turn_and_the_context_is_remembered() {
        use assistant_core::ports::UserContexts;
        let intake = intake();
        // The DM opened: prompts requested, nothing claimed, no turn.
        let reply = post(&intake, fixtures::APP_HOME_OPENED_MESSAGES).await;
        assert_eq!((reply.status, reply.counted), (200, Counted::Accepted));
        assert!(matches!(intake.queue().messages()[..], [WorkMessage::Opened(_)]));
        assert!(intake.claims().is_empty(), "an opening claims nothing");

        // The channel beside the DM: remembered, nothing enqueued.
        let reply = post(&intake, fixtures::APP_CONTEXT_CHANGED).await;
        assert_eq!((reply.status, reply.counted), (200, Counted::Other));
        assert_eq!(intake.queue().messages().len(), 1);
        let (team, user) = (slack::TeamId::new("T061EG9R6"), slack::UserId::new("U061F7AUR"));
        let recalled = intake.contexts.recall(&team, &user, NOW + 60).await.unwrap().expect("remembered");
        assert_eq!(recalled.channel.map(|c| c.to_string()).as_deref(), Some("C0LAN2Q65"));
        let stale = NOW + assistant_core::ports::USER_CONTEXT_TTL_SECS;
        assert_eq!(intake.contexts.recall(&team, &user, stale).await.unwrap(), None, "forgotten after the TTL");
    }

    #[tokio::test]
    async fn a_signed_mention_is_claimed_enqueued_and_answered_with_an_empty_200() {
        let intake = intake();
        let reply = post(&intake, fixtures::APP_MENTION).await;
        assert_eq!(reply, Reply { status: 200, json: None, no_retry: false, counted: Counted::Accepted });
        let queued = intake.queue().messages();
        assert_eq!(queued.len(), 1);
        assert_eq!(queued[0].dedupe_id(), "Ev0LAN670R");
        assert!(!intake.claims().is_empty());
    }

    #[tokio::test]
    async fn slack_retries_of_one_event_are_answered_200_and_enqueued_under_the_same_deduplication_id() {
        let intake = intake();
        // Slack's schedule: the event, then retries at once, after a minute and after five.
        for (after, counted) in
            [(0, Counted::Accepted), (3, Counted::Duplicate), (60, Counted::Duplicate), (300, Counted::Duplicate)]
        {
            intake.clock.set(NOW + after);
            let reply = post(&intake, fixtures::APP_MENTION).await;
            assert_eq!((reply.status, reply.counted), (200, counted), "after {after} s");
        }
        let queued = intake.queue().messages();
        assert_eq!(queued.len(), 4, "each delivery enqueues: SQS and the worker drop the copies");
        assert!(queued.iter().all(|m| m.dedupe_id() == "Ev0LAN670R" && *m == queued[0]), "{queued:?}");
    }

    /// Claims whose first answers are lost: the claim is applied and the
    /// ingress hears an error (the SDK's retries spent).
    #[derive(Default)]
    struct LostClaims {
        inner: MemoryClaims,
        lose: std::sync::atomic::AtomicUsize,
    }

    #[async_trait::async_trait]
    impl EventClaims for LostClaims {
        async fn claim(&self, claim: &EventClaim, now_unix: i64) -> Result<ClaimOutcome, assistant_core::PortError> {
            let outcome = self.inner.claim(claim, now_unix).await?;
            if self.lose.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                self.lose.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                return Err(assistant_core::PortError::new("claim", "the answer was lost (applied)"));
            }
            Ok(outcome)
        }
    }

    #[tokio::test]
    async fn a_claim_applied_with_its_answer_lost_does_not_lose_the_question() {
        // GIVEN a claim that is applied but whose answer never comes back
        let (claims, queue) = (Arc::new(LostClaims::default()), Arc::new(MemoryQueue::default()));
        claims.lose.store(1, std::sync::atomic::Ordering::SeqCst);
        let clock = Arc::new(ManualClock::at(NOW));
        let intake = Intake::new(
            SigningSecret::new(SECRET).unwrap(),
            claims.clone(),
            queue.clone(),
            Arc::new(MemoryContexts::default()),
            clock.clone(),
        );
        let send = |signed_at: i64| {
            let intake = &intake;
            async move {
                let body = fixtures::APP_MENTION;
                let headers = headers_for(body, "application/json", signed_at);
                intake.handle(Request { headers: &headers, body: Some(body), is_base64_encoded: false }).await
            }
        };

        // WHEN the first delivery hears an error: Slack is asked to retry, nothing enqueued
        assert_eq!(send(NOW).await.status, 500);
        assert!(queue.messages().is_empty());
        assert!(!claims.inner.is_empty(), "the claim was applied");

        // THEN Slack's retry meets the claim and enqueues the question
        clock.set(NOW + 1);
        let retry = send(NOW + 1).await;
        assert_eq!((retry.status, retry.counted), (200, Counted::Duplicate));
        assert_eq!(queue.messages().len(), 1);
    }

    #[tokio::test]
    async fn a_bad_signature_is_401_and_touches_nothing() {
        let intake = intake();
        let body = fixtures::APP_MENTION;
        let mut headers = headers_for(body, "application/json", NOW);
        headers.insert(
            SIGNATURE_HEADER,
            HeaderValue::from_static("v0=0000000000000000000000000000000000000000000000000000000000000000"),
        );
        let reply = intake.handle(Request { headers: &headers, body: Some(body), is_base64_encoded: false }).await;
        assert_eq!(reply.status, 401);
        assert_eq!(reply.json.as_deref(), Some(r#"{"error":"invalid_signature"}"#));
        assert_eq!(reply.counted, Counted::Rejected);

        let stale = headers_for(body, "application/json", NOW - 301);
        let reply = intake.handle(Request { headers: &stale, body: Some(body), is_base64_encoded: false }).await;
        assert_eq!(reply.status, 401);

        let unsigned = HeaderMap::new();
        let reply = intake.handle(Request { headers: &unsigned, body: Some(body), is_base64_encoded: false }).await;
        assert_eq!(reply.status, 401);

        assert!(intake.claims().is_empty());
        assert!(intake.queue().messages().is_empty());
    }

    #[tokio::test]
    async fn base64_bodies_are_verified_over_the_decoded_bytes() {
        let intake = intake();
        let body = fixtures::APP_MENTION;
        let headers = headers_for(body, "application/json", NOW);
        let encoded = base64::engine::general_purpose::STANDARD.encode(body);
        let reply = intake.handle(Request { headers: &headers, body: Some(&encoded), is_base64_encoded: true }).await;
        assert_eq!(reply.status, 200);
        assert_eq!(intake.queue().messages().len(), 1);
    }

    #[tokio::test]
    async fn a_signed_body_that_does_not_parse_is_400_without_retry() {
        let intake = intake();
        let reply = post(&intake, "{\"type\":\"event_callback\"").await;
        assert_eq!((reply.status, reply.no_retry), (400, true));
        assert_eq!(reply.json.as_deref(), Some(r#"{"error":"malformed_payload"}"#));
        assert!(intake.claims().is_empty());
    }

    #[tokio::test]
    async fn bodies_over_the_limit_are_413_before_verification() {
        let intake = intake().with_body_limit(100);
        let reply = post(&intake, fixtures::APP_MENTION).await;
        assert_eq!((reply.status, reply.no_retry), (413, true));
        assert!(intake.queue().messages().is_empty());
    }

    #[tokio::test]
    async fn url_verification_answers_the_challenge_and_ssl_check_a_200() {
        let intake = intake();
        let reply = post(&intake, fixtures::URL_VERIFICATION).await;
        assert_eq!(reply.status, 200);
        let json: serde_json::Value = serde_json::from_str(reply.json.as_deref().unwrap()).unwrap();
        assert_eq!(json["challenge"], "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P");

        let form = "ssl_check=1&token=x";
        let headers = headers_for(form, "application/x-www-form-urlencoded", NOW);
        let reply = intake.handle(Request { headers: &headers, body: Some(form), is_base64_encoded: false }).await;
        assert_eq!(reply, Reply { status: 200, json: None, no_retry: false, counted: Counted::Other });
        assert!(intake.queue().messages().is_empty());
    }

    #[tokio::test]
    async fn a_failed_enqueue_is_500_and_slacks_retry_still_starts_the_turn() {
        let intake = intake();
        intake.queue().set_failing(true);
        let reply = post(&intake, fixtures::APP_MENTION).await;
        assert_eq!((reply.status, reply.no_retry), (500, false));
        assert!(intake.queue().messages().is_empty());

        intake.queue().set_failing(false);
        assert_eq!(post(&intake, fixtures::APP_MENTION).await.status, 200);
        assert_eq!(intake.queue().messages().len(), 1);
    }

    #[tokio::test]
    async fn thread_replies_start_turns_only_once_the_bot_is_in_the_thread() {
        let intake = intake();
        assert_eq!(post(&intake, fixtures::MESSAGE_THREAD_REPLY).await.status, 200);
        assert!(intake.queue().messages().is_empty(), "reply in a thread the bot is not part of");

        // The mention opened thread 1763800000.000100; a later reply in it counts.
        post(&intake, fixtures::APP_MENTION).await;
        let later_reply = fixtures::MESSAGE_THREAD_REPLY.replace("Ev0REPLY001", "Ev0REPLY009");
        post(&intake, &later_reply).await;
        let queued = intake.queue().drain();
        assert_eq!(queued.len(), 2);
        assert_eq!(queued[1].dedupe_id(), "Ev0REPLY009");
        assert_eq!(queued[0].thread(), queued[1].thread());
    }

    #[tokio::test]
    async fn a_message_that_names_no_one_is_a_question_only_in_a_channel_that_answers_every_question() {
        use assistant_core::response_modes::{CACHE_SECS, EveryQuestionChannels};
        let records = Arc::new(testkit::memory::MemoryRecords::default());
        let base = intake();
        let clock = base.clock.clone();
        let channels = || EveryQuestionChannels::new(records.clone(), clock.clone());
        let intake = TestIntake { intake: base.intake.with_every_question(channels()), ..base };
        let top_level = fixtures::MESSAGE_CHANNEL_TOP_LEVEL;
        let channel = serde_json::from_str::<serde_json::Value>(top_level).unwrap()["event"]["channel"]
            .as_str()
            .unwrap()
            .to_owned();

        // Nothing published yet (no worker has started): nowhere.
        assert_eq!(post(&intake, top_level).await.status, 200);
        assert!(intake.queue().messages().is_empty());

        // A worker publishes the channel; the intake reads it again after a minute.
        channels().publish(&[format!("{}*", &channel[..4])]).await.unwrap();
        let again = top_level.replace("\"event_id\": \"", "\"event_id\": \"Ev0B");
        assert_ne!(again, top_level);
        post(&intake, &again).await;
        assert!(intake.queue().messages().is_empty(), "still the cached answer");
        intake.clock.set(NOW + CACHE_SECS);
        let third = top_level.replace("\"event_id\": \"", "\"event_id\": \"Ev0C");
        post(&intake, &third).await;
        let queued = intake.queue().drain();
        assert_eq!(queued.len(), 1, "a question now");
        let WorkMessage::StartTurn(request) = &queued[0] else { panic!("{queued:?}") };
        assert_eq!(request.thread.thread_ts, request.message_ts, "its own thread");

        // Published off again: nowhere, after the minute.
        channels().publish(&[]).await.unwrap();
        intake.clock.set(NOW + 2 * CACHE_SECS);
        let fourth = top_level.replace("\"event_id\": \"", "\"event_id\": \"Ev0D");
        post(&intake, &fourth).await;
        assert!(intake.queue().messages().is_empty());
    }

    #[tokio::test]
    async fn bot_messages_store_and_enqueue_nothing() {
        let intake = intake();
        for fixture in [fixtures::MESSAGE_BOT, fixtures::MESSAGE_OWN, fixtures::MESSAGE_CHANGED] {
            assert_eq!(post(&intake, fixture).await.status, 200);
        }
        assert!(intake.claims().is_empty());
        assert!(intake.queue().messages().is_empty());
    }

    #[tokio::test]
    async fn approval_clicks_are_enqueued_without_a_claim() {
        let intake = intake();
        let form = fixtures::interaction_form(fixtures::BLOCK_ACTIONS_APPROVE);
        let headers = headers_for(&form, "application/x-www-form-urlencoded", NOW);
        let reply = intake.handle(Request { headers: &headers, body: Some(&form), is_base64_encoded: false }).await;
        assert_eq!(reply.status, 200);
        assert!(matches!(intake.queue().messages()[..], [WorkMessage::Approval(_)]));
        assert!(intake.claims().is_empty());
    }

    #[tokio::test]
    async fn a_forms_decline_is_kept_for_its_person_only_and_nothing_is_taken_after_it_or_after_it_expires() {
        use assistant_core::elicitation::{Form, FormState, Forms, PendingForm};
        let records = Arc::new(testkit::memory::MemoryRecords::default());
        let forms = Forms::new(records);
        let base = intake();
        let intake = TestIntake { intake: base.intake.with_forms(forms.clone()), ..base };
        let form = |id: &str, expires_at: i64| PendingForm {
            id: id.into(),
            team: slack::TeamId::new("T061EG9R6"),
            user: slack::UserId::new("U061F7AUR"),
            server: "deploys".into(),
            message: "Which environment?".into(),
            form: Form::read(&serde_json::json!({"type": "object", "properties": {"env": {"type": "string"}}}))
                .unwrap(),
            expires_at,
            state: FormState::Open,
        };
        let click = |action_id: &str, id: &str, user: &str| {
            let payload = fixtures::BLOCK_ACTIONS_APPROVE
                .replace(slack::interaction::APPROVE_ACTION_ID, action_id)
                .replace("turn-7f3a:call-1", id)
                .replace("U061F7AUR", user);
            fixtures::interaction_form(&payload)
        };
        let intake = &intake;
        let send = |form: String| async move {
            let headers = headers_for(&form, "application/x-www-form-urlencoded", NOW);
            intake.handle(Request { headers: &headers, body: Some(&form), is_base64_encoded: false }).await
        };
        let decline = slack::interaction::FORM_DECLINE_ACTION_ID;
        let (open, late) = ("0123456789abcdef0001", "0123456789abcdef0002");
        forms.open(&form(open, NOW + 60)).await.unwrap();
        forms.open(&form(late, NOW - 1)).await.unwrap();
        // Someone else's Decline changes nothing
        assert_eq!(send(click(decline, open, "U0OTHER001")).await.status, 200);
        assert_eq!(forms.get(open).await.unwrap().unwrap().1.state, FormState::Open);
        // Theirs is kept, once
        assert_eq!(send(click(decline, open, "U061F7AUR")).await.status, 200);
        assert_eq!(forms.get(open).await.unwrap().unwrap().1.state, FormState::Declined);
        // After its expiry: nothing is kept
        assert_eq!(send(click(decline, late, "U061F7AUR")).await.status, 200);
        assert_eq!(forms.get(late).await.unwrap().unwrap().1.state, FormState::Open);
        // A value that is no form id of ours: nothing is read
        assert_eq!(send(click(decline, "../../TURN#x", "U061F7AUR")).await.status, 200);
        assert!(intake.queue().messages().is_empty() && intake.claims().is_empty(), "nothing queued or claimed");
    }
}
