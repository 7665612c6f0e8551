//! The responder on in-memory ports: exactly-once posting through crashes
//! and lost responses, Slack's refusals and rate limits, progress, approval
//! prompts and dead letters.

use assistant_core::approval::Approver;
use assistant_core::delivery::{DeliveryRecord, MessageKey, PostError, Settled};
use assistant_core::messages::{ApprovalButton, CallOrigin, ReplyMessage, WorkMessage};
use assistant_core::ports::{DeliveryLog, FileUpload, StoreError, TurnStore};
use assistant_core::store::{RecordDeliveries, RecordTurns, StreamLog};
use assistant_core::turn::{AnswerFile, ToolUse, Turn, TurnId, TurnStatus};
use assistant_core::{Retryable, ThreadRef};
use async_trait::async_trait;
use responder_logic::{DeadLetter, Outcome, Responder};
use serde_json::json;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use testkit::clock::ManualClock;
use testkit::memory::Tables;
use testkit::slack_memory::{MemoryPoster, POST, REPLIES, SET_STATUS, SHARE_UPLOAD, Scripted, UPDATE, UPLOAD};
use testkit::store_contract::new_turn;

/// A delivery log that can be told to lose its next saves, as a crash
/// between two writes would.
struct CrashingLog {
    inner: RecordDeliveries,
    /// Saves to let through before failing the rest.
    fail_after: AtomicUsize,
}

impl CrashingLog {
    fn crash_after(&self, saves: usize) {
        self.fail_after.store(saves + 1, Ordering::SeqCst);
    }

    fn recover(&self) {
        self.fail_after.store(0, Ordering::SeqCst);
    }
}

#[async_trait]
impl DeliveryLog for CrashingLog {
    async fn load(&self, id: &TurnId) -> Result<DeliveryRecord, StoreError> {
        self.inner.load(id).await
    }

    async fn save(&self, id: &TurnId, record: &mut DeliveryRecord) -> Result<(), StoreError> {
        match self.fail_after.load(Ordering::SeqCst) {
            0 => self.inner.save(id, record).await,
            1 => Err(assistant_core::PortError::new("save delivery", "process crashed").into()),
            n => {
                self.fail_after.store(n - 1, Ordering::SeqCst);
                self.inner.save(id, record).await
            }
        }
    }
}

/// The responder on in-memory ports, and those ports to look at. The
/// turns are the worker's: the tests write them as the worker would.
struct TestResponder {
    responder: Responder,
    turns: RecordTurns,
    deliveries: Arc<CrashingLog>,
    /// The worker's side: what it streamed.
    streams: StreamLog,
    slack: Arc<MemoryPoster>,
}

impl Deref for TestResponder {
    type Target = Responder;

    fn deref(&self) -> &Responder {
        &self.responder
    }
}

fn responder() -> TestResponder {
    let Tables { turns, deliveries, streams, .. } = testkit::memory::tables();
    let deliveries = Arc::new(CrashingLog { inner: deliveries, fail_after: AtomicUsize::new(0) });
    let slack = Arc::new(MemoryPoster::default());
    let responder = Responder {
        turns: Arc::new(turns.clone()),
        deliveries: deliveries.clone(),
        streams: streams.clone(),
        slack: slack.clone(),
        clock: Arc::new(ManualClock::at(1_763_800_100)),
        mentions: Default::default(),
        alerts: None,
    };
    TestResponder { responder, turns, deliveries, streams, slack }
}

/// A stored turn in `status`, with `answer`.
async fn stored(responder: &TestResponder, status: TurnStatus, answer: Option<&str>) -> Turn {
    let mut turn = new_turn("Ev0LAN670R");
    turn.status = status;
    turn.answer = answer.map(str::to_owned);
    responder.turns.create(&mut turn).await.unwrap();
    turn
}

fn deliver(turn: &Turn) -> ReplyMessage {
    ReplyMessage::Deliver { turn_id: turn.id.clone(), thread: turn.thread.clone() }
}

/// How the turn ended for its thread, as the responder recorded it.
async fn settled(responder: &TestResponder, turn: &Turn) -> Option<Settled> {
    responder.deliveries.load(&turn.id).await.unwrap().settled
}

fn texts(responder: &TestResponder) -> Vec<String> {
    responder.slack.messages().into_iter().map(|p| p.message.text).collect()
}

#[tokio::test]
async fn an_answer_is_posted_once_in_its_thread_and_the_turn_marked_delivered() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Answered, Some("The pool is **exhausted**.")).await;

    let outcome = responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!(outcome, Outcome::Delivered { id: turn.id.clone(), posted: 1 });
    let posted = responder.slack.messages();
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].thread, turn.thread);
    assert_eq!(posted[0].message.text, "The pool is **exhausted**.");
    assert_eq!(
        posted[0].message.blocks[0],
        serde_json::json!({"type": "markdown", "text": "The pool is **exhausted**."})
    );
    assert_eq!(settled(&responder, &turn).await, Some(Settled::Delivered));

    // A redelivery posts nothing.
    let again = responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!(again, Outcome::Skipped { reason: "already_settled" });
    assert_eq!(responder.slack.calls(POST), 1);
}

#[tokio::test]
async fn a_crash_after_the_post_and_before_the_record_does_not_post_twice() {
    // GIVEN the process dies right after Slack accepted the post: the
    // attempt was saved, the post landed, the record of it was not saved
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Answered, Some("Restart the pool.")).await;
    responder.deliveries.crash_after(1);
    let err = responder.handle(&deliver(&turn)).await.unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert_eq!(responder.slack.messages().len(), 1, "the post landed");

    // WHEN SQS redelivers the message
    responder.deliveries.recover();
    let outcome = responder.handle(&deliver(&turn)).await.unwrap();

    // THEN the thread was searched, the message found, nothing posted again
    assert_eq!(outcome, Outcome::Delivered { id: turn.id.clone(), posted: 1 });
    assert_eq!(responder.slack.calls(REPLIES), 1);
    assert_eq!(responder.slack.calls(POST), 1);
    assert_eq!(texts(&responder), ["Restart the pool."]);
    assert_eq!(settled(&responder, &turn).await, Some(Settled::Delivered));
}

#[tokio::test]
async fn a_lost_response_is_found_in_the_thread_and_a_failed_one_posted_again() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Answered, Some("Done.")).await;
    // Slack took the post but the response was lost (a timeout): the
    // responder waits, looks, finds it, and does not post again.
    responder.slack.script(POST, [Scripted::LandThenFail(PostError::Unavailable("timeout".into()))]);
    responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!(texts(&responder), ["Done."], "found, not posted again");
    assert_eq!((responder.slack.calls(REPLIES), responder.slack.calls(POST)), (1, 1));

    // Slack answered 503 and did not post: after a look, it posts again.
    let responder = self::responder();
    let turn = stored(&responder, TurnStatus::Answered, Some("Done.")).await;
    responder.slack.script(POST, [Scripted::Fail(PostError::Unavailable("HTTP 503".into()))]);
    responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!(texts(&responder), ["Done."]);
    assert_eq!((responder.slack.calls(REPLIES), responder.slack.calls(POST)), (1, 2));
    assert_eq!(settled(&responder, &turn).await, Some(Settled::Delivered));
}

#[tokio::test]
async fn slack_failing_on_every_try_leaves_the_record_to_sqs_and_the_redelivery_looks_first() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Answered, Some("Eventually.")).await;
    let down = || Scripted::Fail(PostError::Unavailable("HTTP 503".into()));
    responder.slack.script(POST, [down(), down(), down()]);
    let err = responder.handle(&deliver(&turn)).await.unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert_eq!(responder.slack.calls(POST), 3, "three tries, with backoff");

    responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!(texts(&responder), ["Eventually."]);
    assert_eq!(responder.slack.calls(REPLIES), 3, "a look before every post after the first");
}

#[tokio::test]
async fn a_long_rate_limit_fails_the_record_for_a_later_retry() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Answered, Some("Later.")).await;
    responder.slack.script(POST, [Scripted::Fail(PostError::RateLimited { retry_after: Duration::from_secs(60) })]);
    let err = responder.handle(&deliver(&turn)).await.unwrap_err();
    assert!(err.is_retryable());
    assert_eq!(settled(&responder, &turn).await, None);
    responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!(texts(&responder), ["Later."]);
}

#[tokio::test]
async fn a_refusal_is_recorded_as_the_turns_end_and_is_not_retried() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Answered, Some("Hello.")).await;
    responder.slack.script(POST, [Scripted::Fail(PostError::Rejected { code: "not_in_channel".into() })]);

    let outcome = responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!(outcome, Outcome::Refused { id: turn.id.clone(), code: "not_in_channel".into() });
    assert_eq!(settled(&responder, &turn).await, Some(Settled::Refused { code: "not_in_channel".into() }));
    assert_eq!(responder.turns.load(&turn.id).await.unwrap().unwrap(), turn, "the turn is the worker's: untouched");
    assert!(responder.slack.messages().is_empty());
    assert_eq!(responder_logic::remedy("not_in_channel"), "invite the bot to the channel (/invite @bot)");
}

#[tokio::test]
async fn a_long_answer_is_posted_in_parts_and_a_retry_posts_only_the_missing_ones() {
    let responder = responder();
    let paragraph = format!("{}\n\n", "lorem ipsum ".repeat(240));
    let turn = stored(&responder, TurnStatus::Answered, Some(&paragraph.repeat(8))).await;
    let parts = responder_logic::render::answer(turn.answer.as_deref().unwrap(), Default::default(), &turn.id).len();
    assert!((2..=responder_logic::render::MAX_ANSWER_MESSAGES).contains(&parts), "{parts}");
    // The first part lands and its response is lost; the process dies
    // before it looks (the record keeps the attempt).
    responder.slack.script(POST, [Scripted::LandThenFail(PostError::Unavailable("no".into()))]);
    responder.slack.script(REPLIES, [Scripted::Fail(PostError::Unavailable("no".into()))]);
    assert!(responder.handle(&deliver(&turn)).await.is_err());
    responder.handle(&deliver(&turn)).await.unwrap();

    let keys: Vec<MessageKey> = responder.slack.messages().into_iter().map(|p| p.message.key).collect();
    let expected: Vec<MessageKey> =
        (1..=parts as u32).map(|part| MessageKey::Answer { part, of: parts as u32 }).collect();
    assert_eq!(keys, expected, "every part once, in order");
}

#[tokio::test]
async fn an_answer_longer_than_a_few_messages_is_its_lead_and_one_file_even_when_a_share_answer_is_lost() {
    // GIVEN an answer that would take many messages, with a secret in it
    let responder = responder();
    let secret = format!("ghp_{}", "r8Jd2Kq9Lm3Np4Xv6Bz1Cw7Ty5Hs0Ua2Ef4G");
    let paragraph = format!("{}\n\n", "lorem ipsum ".repeat(240));
    let long = format!("The token `{secret}` leaked.\n\n{}```\nlast block\n```", paragraph.repeat(30));
    let turn = stored(&responder, TurnStatus::Answered, Some(&long)).await;
    assert!(responder_logic::render::answer(&long, Default::default(), &turn.id).len() > 3);
    // The share lands and its answer is lost; the process dies before it
    // can look (the record keeps the upload, unshared).
    responder.slack.script(SHARE_UPLOAD, [Scripted::LandThenFail(PostError::Unavailable("reset".into()))]);

    // WHEN the delivery fails there and SQS delivers it twice more
    assert!(responder.handle(&deliver(&turn)).await.is_err());
    for _ in 0..2 {
        responder.handle(&deliver(&turn)).await.unwrap();
    }

    // THEN the thread has one message with the lead and one file with all of it
    let messages = responder.slack.messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0].message.key, MessageKey::Answer { part: 1, of: 1 });
    let lead = &messages[0].message.text;
    assert!(lead.contains("all of it is in the attached file, answer-"), "{lead}");
    let files = responder.slack.shared_files();
    assert_eq!(files.len(), 1, "shared once");
    assert_eq!(files[0].0, turn.thread);
    let body = String::from_utf8(files[0].1.body.clone()).unwrap();
    assert!(body.ends_with("```\nlast block\n```") && body.len() > 80_000, "the whole answer");
    // AND the secret is in neither
    assert!(!lead.contains(&secret) && !body.contains(&secret), "redacted");
    assert!(body.contains("[redacted: github token]"), "{}", &body[..80]);
    assert_eq!(responder.slack.calls(UPLOAD), 1, "uploaded once");
    assert_eq!(settled(&responder, &turn).await, Some(Settled::Delivered));
}

#[tokio::test]
async fn results_the_model_attached_are_shared_once_each_with_the_answer() {
    // GIVEN an answer with two files the worker uploaded, and the first
    // share landing with its answer lost
    let responder = responder();
    let mut turn = stored(&responder, TurnStatus::Answered, Some("The rows are attached.")).await;
    let mut answered = responder.turns.load(&turn.id).await.unwrap().unwrap();
    for (id, name) in [("F0AGENT001", "errors.csv"), ("F0AGENT002", "trace.txt")] {
        let file = FileUpload { filename: name.into(), title: name.into(), body: b"x".to_vec() };
        responder.slack.uploaded(id, file);
        answered.answer_files.push(AnswerFile { file_id: id.into(), filename: name.into(), title: name.into() });
    }
    responder.turns.save(&mut answered).await.unwrap();
    turn = answered;
    responder.slack.script(SHARE_UPLOAD, [Scripted::LandThenFail(PostError::Unavailable("reset".into()))]);

    // WHEN the delivery fails there and SQS delivers it twice more
    assert!(responder.handle(&deliver(&turn)).await.is_err());
    for _ in 0..2 {
        responder.handle(&deliver(&turn)).await.unwrap();
    }

    // THEN the answer once, and each file once, in order
    assert_eq!(texts(&responder), ["The rows are attached."]);
    let shared: Vec<String> = responder.slack.shared_files().into_iter().map(|(_, file)| file.filename).collect();
    assert_eq!(shared, ["errors.csv", "trace.txt"]);
    assert_eq!(responder.slack.calls(UPLOAD), 0, "the worker uploaded them");
    assert_eq!(settled(&responder, &turn).await, Some(Settled::Delivered));
}

#[tokio::test]
async fn progress_shows_as_the_thread_status_and_clears_with_the_answer() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Running, None).await;
    let progress = ReplyMessage::Progress {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        step: 1,
        text: "is running search_docs…".into(),
    };
    assert_eq!(responder.handle(&progress).await.unwrap(), Outcome::ProgressShown { id: turn.id.clone() });

    let mut answered = responder.turns.load(&turn.id).await.unwrap().unwrap();
    answered.settle("Found it.".into(), TurnStatus::Answered, 1_763_800_200);
    responder.turns.save(&mut answered).await.unwrap();
    responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!(responder.slack.statuses(), ["is running search_docs…", ""]);
    assert_eq!(texts(&responder), ["Found it."]);
}

#[tokio::test]
async fn where_status_is_refused_a_placeholder_is_updated_then_replaced_by_the_answer() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Running, None).await;
    let refused = || Scripted::Fail(PostError::Rejected { code: "not_allowed_token_type".into() });
    responder.slack.script(SET_STATUS, [refused(), refused(), refused()]);
    let progress = |step: u32, text: &str| ReplyMessage::Progress {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        step,
        text: text.into(),
    };
    responder.handle(&progress(0, "is thinking…")).await.unwrap();
    responder.handle(&progress(1, "is running fetch_logs…")).await.unwrap();
    assert_eq!(texts(&responder), ["_Working on it: is running fetch_logs…_"], "one placeholder, updated");
    // A redelivered older step does not go back.
    responder.handle(&progress(0, "is thinking…")).await.unwrap();
    assert_eq!(texts(&responder), ["_Working on it: is running fetch_logs…_"]);

    let mut answered = responder.turns.load(&turn.id).await.unwrap().unwrap();
    answered.settle("The logs show a deploy at 14:02.".into(), TurnStatus::Answered, 1_763_800_200);
    responder.turns.save(&mut answered).await.unwrap();
    responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!(texts(&responder), ["The logs show a deploy at 14:02."], "the answer took the placeholder's place");
    assert_eq!((responder.slack.calls(POST), responder.slack.calls(UPDATE)), (1, 2));
}

#[tokio::test]
async fn progress_that_slack_cannot_take_is_dropped_not_retried() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Running, None).await;
    responder.slack.script(SET_STATUS, [Scripted::Fail(PostError::Unavailable("503".into()))]);
    let progress =
        ReplyMessage::Progress { turn_id: turn.id.clone(), thread: turn.thread.clone(), step: 0, text: "x".into() };
    assert_eq!(responder.handle(&progress).await.unwrap(), Outcome::Skipped { reason: "slack_unavailable" });
}

#[tokio::test]
async fn an_approval_prompt_is_posted_once_with_its_buttons() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::AwaitingApproval, None).await;
    let call = ToolUse { id: "tooluse_9".into(), name: "restart_service".into(), input: json!({"name": "api"}) };
    let prompt = ReplyMessage::ApprovalPrompt {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        tool_use: call.clone(),
        requester: Some(turn.user.clone()),
        approvers: vec![Approver::Requester],
        expires_at: Some(1_763_803_600),
        destructive: false,
        grant_minutes: Some(60),
        grant_scope: Some("restart_service".into()),
        origin: Some(CallOrigin {
            question: "why is checkout failing? <!channel>".into(),
            read: vec!["logs_query".into(), "search_docs".into()],
            files: 0,
        }),
    };
    responder.handle(&prompt).await.unwrap();
    responder.handle(&prompt).await.unwrap();
    let posted = responder.slack.messages();
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].message.key, MessageKey::Approval { tool_use_id: "tooluse_9".into() });
    let actions = posted[0].message.blocks.iter().find(|block| block["type"] == "actions").unwrap();
    let value = actions["elements"][0]["value"].as_str().unwrap();
    assert_eq!(ApprovalButton::decode(value), Some(ApprovalButton::for_call(&turn.id, &call)));
    let labels: Vec<&str> =
        actions["elements"].as_array().unwrap().iter().map(|b| b["text"]["text"].as_str().unwrap()).collect();
    assert_eq!(labels, ["Approve", "Approve restart_service for this thread (60 min)", "Deny"]);
    assert_eq!(actions["elements"][1]["action_id"], slack::interaction::APPROVE_FOR_THREAD_ACTION_ID);
    assert_eq!(actions["elements"][1]["value"], actions["elements"][0]["value"], "it names the same call");
    // It says who asked for what: the question, and the call as proposed after reading.
    let headline = format!(
        "<@{}> asked: “why is checkout failing? &lt;!channel&gt;” — after reading the results of `logs_query` and \
         `search_docs`, I propose running `restart_service`, which changes things. Nobody asked for this call directly.",
        turn.user
    );
    assert_eq!(posted[0].message.blocks[0]["text"]["text"], headline.as_str());
    assert_eq!(posted[0].message.text, format!("{headline} Approve?"));

    // Someone approves: the prompt says so and loses its buttons.
    let ReplyMessage::ApprovalPrompt { tool_use, .. } = prompt else { unreachable!() };
    let decided = ReplyMessage::ApprovalDecided {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        tool_use,
        decision: assistant_core::messages::Decision::Approve,
        user: slack::UserId::new("U2"),
        grant: None,
        outcome_unknown: false,
    };
    assert_eq!(responder.handle(&decided).await.unwrap(), Outcome::PromptUpdated { id: turn.id.clone() });
    assert_eq!(texts(&responder), ["✅ <@U2> approved running `restart_service`."]);
    assert_eq!(responder.slack.messages()[0].message.blocks.len(), 1, "no actions block");
    assert_eq!(responder.slack.calls(POST), 1, "updated in place");
}

#[tokio::test]
async fn a_prompt_whose_approved_call_has_an_unknown_outcome_says_so_and_a_late_clicker_alone_is_told() {
    // GIVEN a prompt with buttons in the thread
    let responder = responder();
    let turn = stored(&responder, TurnStatus::AwaitingApproval, None).await;
    let call = ToolUse { id: "tooluse_9".into(), name: "restart_service".into(), input: json!({}) };
    let prompt = ReplyMessage::ApprovalPrompt {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        tool_use: call.clone(),
        requester: Some(turn.user.clone()),
        approvers: vec![Approver::Requester],
        expires_at: None,
        destructive: false,
        grant_minutes: None,
        grant_scope: None,
        // Requested by a build that did not say who asked for what.
        origin: None,
    };
    responder.handle(&prompt).await.unwrap();
    let posted = &responder.slack.messages()[0].message;
    assert!(posted.text.starts_with(&format!("To answer <@{}>, I want to run `restart_service`", turn.user)));

    // WHEN the worker that settles the call's unknown outcome updates it
    let settled = ReplyMessage::ApprovalDecided {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        tool_use: call.clone(),
        decision: assistant_core::messages::Decision::Approve,
        user: slack::UserId::new("U2"),
        grant: None,
        outcome_unknown: true,
    };
    assert_eq!(responder.handle(&settled).await.unwrap(), Outcome::PromptUpdated { id: turn.id.clone() });

    // THEN it is the record: who approved, that the outcome is unknown, no buttons
    let text = "✅ <@U2> approved running `restart_service`. It was started, but whether it completed is unknown \
                (I stopped before recording its result): check its effect before running it again.";
    assert_eq!(texts(&responder), [text]);
    let blocks = &responder.slack.messages()[0].message.blocks;
    assert_eq!(blocks.len(), 1, "no actions block");
    assert_eq!(blocks[0]["text"]["text"], text);

    // AND someone clicking it late is told, alone, that nothing more runs
    let answered = ReplyMessage::ApprovalAnswered {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        user: slack::UserId::new("U0LATE"),
        tool_name: call.name.clone(),
        approved_by: Some(slack::UserId::new("U2")),
    };
    assert_eq!(responder.handle(&answered).await.unwrap(), Outcome::ToldPrivately { id: turn.id.clone() });
    let told = responder.slack.ephemerals();
    assert_eq!(told.len(), 1);
    assert_eq!(
        (told[0].0.as_str(), told[0].1.as_str()),
        (
            "U0LATE",
            "This prompt was already answered: <@U2> approved running `restart_service`. Nothing more runs from its \
             buttons."
        )
    );
}

#[tokio::test]
async fn an_expired_prompt_loses_its_buttons_and_a_refused_clicker_alone_is_told_who_may_approve() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::AwaitingApproval, None).await;
    let call = ToolUse { id: "tooluse_9".into(), name: "restart_service".into(), input: json!({}) };
    let prompt = ReplyMessage::ApprovalPrompt {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        tool_use: call.clone(),
        requester: Some(turn.user.clone()),
        approvers: vec![Approver::Requester],
        expires_at: None,
        destructive: true,
        // A worker that offered a grant on a destructive call: not shown.
        grant_minutes: Some(60),
        grant_scope: Some("restart_service".into()),
        origin: None,
    };
    responder.handle(&prompt).await.unwrap();
    let buttons = &responder.slack.messages()[0].message.blocks[3]["elements"];
    assert_eq!(buttons.as_array().unwrap().len(), 2, "no grant on a destructive call: {buttons}");

    let refused = ReplyMessage::ApprovalRefused {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        user: slack::UserId::new("U0BYSTANDER"),
        tool_name: call.name.clone(),
        requester: turn.user.clone(),
        approvers: vec![Approver::Requester],
        own_request: false,
        membership: slack::Membership::Home,
    };
    assert_eq!(responder.handle(&refused).await.unwrap(), Outcome::ToldPrivately { id: turn.id.clone() });
    let told = responder.slack.ephemerals();
    assert_eq!(told.len(), 1);
    assert_eq!(told[0].0.as_str(), "U0BYSTANDER");
    assert_eq!(
        told[0].1,
        format!("Only <@{}> (who asked) may approve running `restart_service` here. Nothing ran.", turn.user)
    );
    assert_eq!(responder.slack.messages().len(), 1, "nothing posted for everyone");

    let expired =
        ReplyMessage::ApprovalExpired { turn_id: turn.id.clone(), thread: turn.thread.clone(), tool_use: call };
    assert_eq!(responder.handle(&expired).await.unwrap(), Outcome::PromptUpdated { id: turn.id.clone() });
    assert_eq!(texts(&responder), ["⌛ Nobody approved running `restart_service` in time: it did not run."]);
    assert!(responder.slack.messages()[0].message.blocks.iter().all(|block| block["type"] != "actions"));
}

fn dead_start(thread: &ThreadRef) -> DeadLetter {
    let body = include_str!("../../../tests/events/worker-sqs-start-turn.json");
    let event: serde_json::Value = serde_json::from_str(body).unwrap();
    let mut message = WorkMessage::decode(event["Records"][0]["body"].as_str().unwrap()).unwrap();
    if let WorkMessage::StartTurn(request) = &mut message {
        request.thread = thread.clone();
        request.event_id = slack::EventId::new("Ev0LAN670R");
    }
    DeadLetter::decode(&message.encode()).expect("a work envelope")
}

#[tokio::test]
async fn work_that_died_becomes_one_apology_with_a_reference_recorded_as_the_turns_end() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Running, None).await;
    let letter = dead_start(&turn.thread);

    let outcome = responder.handle_dead_letter(&letter).await.unwrap();
    assert_eq!(outcome, Outcome::Delivered { id: turn.id.clone(), posted: 1 });
    let texts = texts(&responder);
    assert_eq!(texts.len(), 1);
    assert!(texts[0].starts_with("Sorry, something went wrong"), "{}", texts[0]);
    assert!(texts[0].contains("`Ev0LAN670R`"), "{}", texts[0]);
    assert_eq!(settled(&responder, &turn).await, Some(Settled::Apologized { reference: "Ev0LAN670R".into() }));
    assert_eq!(responder.turns.load(&turn.id).await.unwrap().unwrap(), turn, "the turn is the worker's: untouched");

    // The same dead letter again (a redelivery from the dead-letter queue).
    responder.handle_dead_letter(&letter).await.unwrap();
    assert_eq!(responder.slack.calls(POST), 1, "one apology");
}

#[tokio::test]
async fn a_dead_letter_for_work_that_never_stored_a_turn_still_apologizes_once() {
    let responder = responder();
    let thread = new_turn("Ev0LAN670R").thread;
    let letter = dead_start(&thread);
    responder.handle_dead_letter(&letter).await.unwrap();
    responder.handle_dead_letter(&letter).await.unwrap();
    assert_eq!(responder.slack.calls(POST), 1);
    assert_eq!(responder.slack.messages()[0].thread, thread);
}

#[tokio::test]
async fn a_dead_delivery_delivers_the_answer_and_stale_progress_is_dropped() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Answered, Some("The answer.")).await;
    let letter = DeadLetter::decode(&deliver(&turn).encode()).unwrap();
    responder.handle_dead_letter(&letter).await.unwrap();
    assert_eq!(texts(&responder), ["The answer."]);

    let progress =
        ReplyMessage::Progress { turn_id: turn.id.clone(), thread: turn.thread.clone(), step: 1, text: "x".into() };
    let letter = DeadLetter::decode(&progress.encode()).unwrap();
    assert_eq!(responder.handle_dead_letter(&letter).await.unwrap(), Outcome::Skipped { reason: "stale_progress" });
    assert_eq!(DeadLetter::decode("{\"v\":1,\"kind\":\"teleport\"}"), None);
}

/// The responder with an ops channel, C0OPS.
fn responder_with_ops_channel() -> TestResponder {
    let mut responder = responder();
    responder.responder.alerts = Some(assistant_core::alerts::OpsAlerts::new(
        slack::ChannelId::new("C0OPS"),
        responder.slack.clone(),
        Arc::new(testkit::memory::MemoryRecords::default()),
        Arc::new(ManualClock::at(1_763_800_100)),
    ));
    responder
}

#[tokio::test]
async fn a_failed_turn_and_a_refusal_that_needs_a_human_alert_the_ops_channel_once() {
    // A failed turn: the thread is told, and so are the operators.
    let responder = responder_with_ops_channel();
    let turn = stored(
        &responder,
        TurnStatus::Failed,
        Some("Sorry, I couldn't finish answering this: the model's reply could not be read."),
    )
    .await;
    responder.handle(&deliver(&turn)).await.unwrap();
    responder.handle(&deliver(&turn)).await.unwrap();
    let alerts = responder.slack.alerts();
    assert_eq!(alerts.len(), 1, "once, however often it is delivered: {alerts:?}");
    assert_eq!(alerts[0].0.as_str(), "C0OPS");
    assert!(alerts[0].1.contains("could not be read") && alerts[0].1.contains("`Ev0LAN670R`"), "{}", alerts[0].1);

    // Slack refuses the bot in a channel it was removed from.
    let responder = responder_with_ops_channel();
    let turn = stored(&responder, TurnStatus::Answered, Some("The pool is fine.")).await;
    responder.slack.script(POST, [Scripted::Fail(PostError::Rejected { code: "not_in_channel".into() })]);
    responder.handle(&deliver(&turn)).await.unwrap();
    let alerts = responder.slack.alerts();
    assert_eq!(alerts.len(), 1);
    assert!(alerts[0].1.contains("`not_in_channel`") && alerts[0].1.contains("invite the bot"), "{}", alerts[0].1);

    // An answered turn alerts nobody.
    let responder = responder_with_ops_channel();
    let turn = stored(&responder, TurnStatus::Answered, Some("Fine.")).await;
    responder.handle(&deliver(&turn)).await.unwrap();
    assert!(responder.slack.alerts().is_empty());
}

#[tokio::test]
async fn an_alert_that_reached_the_dead_letter_queue_tells_the_operators_once_and_apologizes_nowhere() {
    use assistant_core::incidents::{CloudwatchAlarm, sources};
    let responder = responder_with_ops_channel();
    let notice = sources::pagerduty(testkit::fixtures::alerts::PAGERDUTY_TRIGGERED.as_bytes()).unwrap().unwrap();
    let letter = DeadLetter::Work(WorkMessage::Alert(notice));
    for _ in 0..2 {
        let outcome = responder.handle_dead_letter(&letter).await.unwrap();
        assert_eq!(outcome, Outcome::Skipped { reason: "alert_dead_lettered" });
    }
    let event = serde_json::from_str(testkit::fixtures::alerts::CLOUDWATCH_ALARM).unwrap();
    responder
        .handle_dead_letter(&DeadLetter::Work(WorkMessage::CloudwatchAlarm(CloudwatchAlarm { event })))
        .await
        .unwrap();
    let alerts = responder.slack.alerts();
    assert_eq!(alerts.len(), 2, "one per alert, however often delivered: {alerts:?}");
    assert!(alerts[0].1.contains("A PagerDuty alert could not be handled") && alerts[0].1.contains("payments-api p99"));
    assert!(alerts[1].1.contains("CloudWatch alarm") && alerts[1].1.contains("checkout-api-5xx"), "{}", alerts[1].1);
    assert!(responder.slack.messages().is_empty(), "no thread to apologize in");
}

// --- Streamed answers and ratings -------------------------------------------

use assistant_core::delivery::{StreamRecord, stream_digest};
use assistant_core::feedback::Rating;
use testkit::slack_memory::STOP_STREAM;

/// The worker's record of a stream in `turn`'s thread whose message is
/// `ts`, completed with `streamed` (or interrupted).
async fn streamed(responder: &TestResponder, turn: &Turn, ts: &slack::Ts, streamed: Option<&str>) {
    let mut record = StreamRecord {
        ts: Some(ts.clone()),
        completed: streamed.map(stream_digest),
        updated_at: 1_763_800_050,
        ..Default::default()
    };
    responder.streams.save(&turn.id, &mut record).await.unwrap();
}

/// A message standing in the thread as the streamed one (Slack's side).
async fn stream_message(responder: &TestResponder, turn: &Turn, text: &str) -> slack::Ts {
    let placeholder =
        assistant_core::delivery::Outgoing { key: MessageKey::Placeholder, text: text.into(), blocks: Vec::new() };
    use assistant_core::ports::SlackPoster;
    responder.slack.post(&turn.thread, &turn.id, &placeholder).await.unwrap()
}

#[tokio::test]
async fn an_answer_streamed_whole_is_the_answer_and_nothing_is_posted() {
    let responder = responder();
    let answer = "The pool is **exhausted**.";
    let turn = stored(&responder, TurnStatus::Answered, Some(answer)).await;
    let ts = stream_message(&responder, &turn, answer).await;
    streamed(&responder, &turn, &ts, Some(answer)).await;

    let outcome = responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!(outcome, Outcome::Delivered { id: turn.id.clone(), posted: 1 });
    assert_eq!((responder.slack.calls(POST), responder.slack.calls(UPDATE)), (1, 0), "only the stream's own message");
    let record = responder.deliveries.load(&turn.id).await.unwrap();
    assert_eq!(record.posted.get(&MessageKey::Answer { part: 1, of: 1 }), Some(&ts));
    assert_eq!(record.settled, Some(Settled::Delivered));
}

#[tokio::test]
async fn a_long_answer_streamed_whole_stays_one_message_and_a_deceptive_link_streamed_is_replaced() {
    // A streamed message holds more than a posted one: the whole answer.
    let responder = responder();
    let long = "The pool is exhausted. ".repeat(1_000);
    let turn = stored(&responder, TurnStatus::Answered, Some(&long)).await;
    let ts = stream_message(&responder, &turn, &long).await;
    streamed(&responder, &turn, &ts, Some(&long)).await;
    assert!(responder_logic::render::answer(&long, Default::default(), &turn.id).len() > 1);
    responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!((responder.slack.calls(POST), responder.slack.calls(UPDATE)), (1, 0), "only the stream's own message");

    // A link whose label names another host, streamed as the model wrote
    // it: the rendering, which shows the real address, replaces it.
    let responder = self::responder();
    let answer = "Log in at [bank.example.com](https://evil.example/login).";
    let turn = stored(&responder, TurnStatus::Answered, Some(answer)).await;
    let ts = stream_message(&responder, &turn, answer).await;
    streamed(&responder, &turn, &ts, Some(answer)).await;
    responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!(responder.slack.calls(UPDATE), 1);
    let shown = serde_json::to_string(&responder.slack.messages()[0].message.blocks).unwrap();
    assert!(shown.contains("https://evil.example/login") && !shown.contains("[bank.example.com]"), "{shown}");
}

#[tokio::test]
async fn an_interrupted_stream_is_stopped_and_replaced_by_the_saved_answer_in_the_same_message() {
    // GIVEN a stream cut off mid-answer (a crash, a redelivery), and the
    // saved answer that a later step wrote
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Answered, Some("Restart the **pool**.")).await;
    let ts = stream_message(&responder, &turn, "The pool is exhau").await;
    streamed(&responder, &turn, &ts, None).await;

    let outcome = responder.handle(&deliver(&turn)).await.unwrap();

    // THEN the one message now says the saved answer, with its footer
    assert_eq!(outcome, Outcome::Delivered { id: turn.id.clone(), posted: 1 });
    assert_eq!(responder.slack.calls(STOP_STREAM), 1);
    let messages = responder.slack.messages();
    assert_eq!(messages.len(), 1, "exactly one answer message");
    assert_eq!(messages[0].ts, ts);
    let expected = &responder_logic::render::answer("Restart the **pool**.", Default::default(), &turn.id)[0];
    assert_eq!(&messages[0].message, expected);
    assert!(expected.blocks.iter().any(|block| block["type"] == "context_actions"));
}

#[tokio::test]
async fn a_stream_that_differs_from_the_saved_answer_is_corrected() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Failed, Some("Sorry, I couldn't finish answering this.")).await;
    let ts = stream_message(&responder, &turn, "The pool is").await;
    streamed(&responder, &turn, &ts, Some("The pool is")).await;
    responder.handle(&deliver(&turn)).await.unwrap();
    assert_eq!(texts(&responder), ["Sorry, I couldn't finish answering this."]);
}

#[tokio::test]
async fn work_that_died_mid_stream_turns_the_streamed_message_into_the_apology() {
    // GIVEN a turn whose answer was streaming when its work ended in a
    // dead-letter queue (every retry failed)
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Running, None).await;
    let ts = stream_message(&responder, &turn, "I'll check the runbook and").await;
    streamed(&responder, &turn, &ts, None).await;

    // WHEN the responder apologizes
    let outcome = responder.handle_dead_letter(&dead_start(&turn.thread)).await.unwrap();

    // THEN the streamed message is stopped and becomes the apology: one
    // message in the thread, nothing left streaming
    assert_eq!(outcome, Outcome::Delivered { id: turn.id.clone(), posted: 1 });
    assert_eq!(responder.slack.calls(STOP_STREAM), 1);
    let messages = responder.slack.messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0].ts, ts);
    assert!(messages[0].message.text.starts_with("Sorry, something went wrong"), "{:?}", messages[0].message.text);
    assert_eq!(settled(&responder, &turn).await, Some(Settled::Apologized { reference: "Ev0LAN670R".into() }));
}

#[tokio::test]
async fn a_rating_is_acknowledged_to_the_one_who_clicked() {
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Answered, Some("Done.")).await;
    let noted = ReplyMessage::FeedbackNoted {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        user: slack::UserId::new("U0RATER"),
        rating: Rating::Negative,
    };
    assert_eq!(responder.handle(&noted).await.unwrap(), Outcome::ToldPrivately { id: turn.id.clone() });
    let ephemerals = responder.slack.ephemerals();
    assert_eq!(ephemerals.len(), 1);
    assert_eq!(ephemerals[0].0.as_str(), "U0RATER");
    assert!(ephemerals[0].1.contains("👎"), "{}", ephemerals[0].1);
    assert!(responder.slack.messages().is_empty(), "nothing in the thread for everyone");
}

#[tokio::test]
async fn a_streamed_message_slack_will_not_replace_gives_way_to_a_posted_answer() {
    // GIVEN an interrupted stream whose message is gone (deleted by someone)
    let responder = responder();
    let turn = stored(&responder, TurnStatus::Answered, Some("Restart the pool.")).await;
    streamed(&responder, &turn, &slack::Ts::new("1763800500.000009"), None).await;

    let outcome = responder.handle(&deliver(&turn)).await.unwrap();

    // THEN the answer is posted rather than lost
    assert_eq!(outcome, Outcome::Delivered { id: turn.id.clone(), posted: 1 });
    assert_eq!(texts(&responder), ["Restart the pool."]);
    assert_eq!(settled(&responder, &turn).await, Some(Settled::Delivered));
}

#[tokio::test]
async fn a_grant_is_shown_with_its_revoke_button_each_call_under_it_is_told_once_and_a_revoke_is_said() {
    use assistant_core::grants::{RevokeButton, Revoked, ThreadGrant};
    let responder = responder();
    let turn = stored(&responder, TurnStatus::AwaitingApproval, None).await;
    let call = ToolUse { id: "tooluse_7".into(), name: "restart_service".into(), input: json!({"service": "api"}) };
    let grant = ThreadGrant {
        scope: "restart_service".into(),
        for_user: Some(slack::UserId::new("U0ASKER")),
        granted_by: slack::UserId::new("U0LEAD"),
        turn_id: turn.id.clone(),
        granted_at: 1_000,
        until: 4_600,
        revoked: None,
    };
    let ran = ReplyMessage::RanUnderGrant {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        tool_use: call.clone(),
        grant: grant.clone(),
    };
    responder.handle(&ran).await.unwrap();
    responder.handle(&ran).await.unwrap();
    let posted = responder.slack.messages();
    assert_eq!(posted.len(), 1, "told once");
    assert!(
        posted[0]
            .message
            .text
            .starts_with("▶️ Ran `restart_service` without asking (service: api): <@U0LEAD> approved"),
        "{}",
        posted[0].message.text
    );
    assert!(
        posted[0].message.text.ends_with(", only when <@U0ASKER> asks."),
        "who it covers: {}",
        posted[0].message.text
    );
    let revoke = &posted[0].message.blocks[1]["elements"][0];
    assert_eq!(revoke["action_id"], slack::interaction::REVOKE_GRANT_ACTION_ID);
    assert_eq!(
        RevokeButton::decode(revoke["value"].as_str().unwrap()),
        Some(RevokeButton {
            scope: "restart_service".into(),
            for_user: Some(slack::UserId::new("U0ASKER")),
            turn_id: turn.id.clone()
        })
    );

    let revoked = ThreadGrant { revoked: Some(Revoked { by: slack::UserId::new("U0LEAD"), at: 2_000 }), ..grant };
    let told = ReplyMessage::GrantRevoked {
        turn_id: turn.id.clone(),
        thread: turn.thread.clone(),
        grant: revoked,
        user: slack::UserId::new("U0LEAD"),
    };
    responder.handle(&told).await.unwrap();
    responder.handle(&told).await.unwrap();
    let posted = responder.slack.messages();
    assert_eq!(posted.len(), 2, "the revoke said once");
    assert_eq!(
        posted[1].message.text,
        "🔒 <@U0LEAD> revoked this thread's approval of `restart_service` (only when <@U0ASKER> asks): its calls ask \
         again."
    );
}
