//! "Investigate with the assistant" (a message shortcut) end to end, through
//! the real binaries: Slack's signed `message_action` payload through the
//! ingress, the work queue, the worker (which reads the message as the bot
//! and checks the person may see it) and the responder, to the fake Slack.
//! And its hostile variants: a forged or replayed payload (401, nothing
//! queued), a broken or huge one (400 / 413, nothing queued), a message the
//! bot cannot read (answered in the person's DM from the payload's copy,
//! with a link to it), and one in a private channel the bot reads but the
//! person is not in (refused in their DM, nothing of the message said, no
//! model call).

use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};
use tests::events;
use tests::fake_bedrock::{FakeBedrock, Scripted};
use tests::fake_slack::{CONVERSATIONS_INFO, FakeSlack, SlackReply};
use tests::{Stack, decode_work, emulator_config, sqs_event};

const WORK_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-work.fifo";
const REPLY_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-reply.fifo";
/// Grafana's alert, the first message of the captured alerts thread.
const ALERT_TS: &str = "1763799000.000050";
const PERSON: &str = "U061F7AUR";

/// The shortcut used on Grafana's alert, signed as Slack signs it.
fn shortcut_on_the_alert() -> (Value, String) {
    let payload = testkit::fixtures::MESSAGE_ACTION.replace("1763800000.000100", ALERT_TS);
    let form = testkit::fixtures::interaction_form(&payload);
    (events::with_body(&events::parse(events::APPROVAL_CLICK), &form), form)
}

fn deadline() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 600_000
}

fn no_failures(response: &Value) {
    assert_eq!(tests::batch_failures(response), Vec::<String>::new(), "{response}");
}

#[tokio::test]
async fn the_shortcut_on_an_alert_is_answered_once_in_its_thread_with_the_alert_as_the_question() {
    // GIVEN the alert's thread as Slack returns it, in a public channel the bot is in
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let thread =
        SlackReply::Json(serde_json::from_str(testkit::fixtures::messages::CONVERSATIONS_REPLIES_ALERTS).unwrap());
    // The shortcut's read of the message, then the turn's read of the thread.
    slack.script("conversations.replies", [thread.clone(), thread]);
    let bedrock = FakeBedrock::start().await;
    bedrock.script([Scripted::text("The 5xx ratio is up since the last deploy: roll it back.")]);
    let tests::Functions { ingress, worker, responder } =
        tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;

    // WHEN Slack delivers the shortcut, and delivers it again
    let (event, _) = shortcut_on_the_alert();
    for delivery in 0..2 {
        let response = ingress.handle(event.clone()).await.unwrap();
        assert_eq!(response["statusCode"], 200, "delivery {delivery}: {response}");
    }
    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1, "one turn: the claim and SQS's deduplication keep the copy out");
    let assistant_core::WorkMessage::InvestigateMessage(shortcut) = decode_work(&work[0]) else {
        panic!("an investigate_message")
    };
    assert_eq!((shortcut.thread.thread_ts.as_str(), shortcut.user.as_str()), (ALERT_TS, PERSON));
    no_failures(&worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap());
    let replies = stack.receive(&stack.reply_queue.queue).await.unwrap();
    no_failures(&responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)).await.unwrap());

    // THEN the model read the alert (its attachment's fields and links) as the question
    let requests = bedrock.requests();
    assert_eq!(requests.len(), 1);
    let asked = requests[0].body.to_string();
    assert!(asked.contains("Investigate this message, posted by an app"), "{asked}");
    assert!(asked.contains("HighErrorRate") && asked.contains("runbooks.example.com/checkout-5xx"), "{asked}");
    // AND the answer is in the alert's thread, once
    let posted = slack.posted();
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert_eq!((posted[0].channel.as_str(), posted[0].thread_ts.as_str()), ("C0LAN2Q65", ALERT_TS));
    assert!(posted[0].text.contains("roll it back"), "{:?}", posted[0].text);
    assert!(slack.calls("conversations.members").is_empty(), "a public channel is the workspace's");
}

#[tokio::test]
async fn forged_replayed_broken_and_huge_shortcuts_are_refused_and_queue_nothing() {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let slack = FakeSlack::start().await;
    let bedrock = FakeBedrock::start().await;
    let tests::Functions { ingress, .. } = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    let (event, form) = shortcut_on_the_alert();

    // Forged: the body changed after signing (another channel named).
    let mut forged = events::with_body(&event, &form.replace("C0LAN2Q65", "C0SECRET01"));
    forged["headers"]["x-slack-signature"] = event["headers"]["x-slack-signature"].clone();
    // Replayed: Slack's own signature, made more than five minutes ago.
    let replayed = events::signed_at(&event, &form, events::SIGNED_AT - 301);
    for (what, request) in [("forged", forged), ("replayed", replayed)] {
        let response = ingress.handle(request).await.unwrap();
        assert_eq!(response["statusCode"], 401, "{what}: {response}");
    }
    // Signed, but broken or huge.
    let broken = events::with_body(&event, "payload=%7B%22type%22%3A%22message_action%22");
    let response = ingress.handle(broken).await.unwrap();
    assert_eq!(response["statusCode"], 400, "{response}");
    let huge = events::with_body(&event, &format!("payload={}", "x".repeat(2 * 1024 * 1024)));
    let response = ingress.handle(huge).await.unwrap();
    assert_eq!(response["statusCode"], 413, "{response}");

    assert!(stack.receive_work().await.unwrap().is_empty(), "nothing queued");
    assert!(bedrock.requests().is_empty() && slack.posted().is_empty());
}

/// The shortcut through ingress and worker, Slack scripted by `given`;
/// what the person was told in their DM.
async fn refused(given: impl FnOnce(&FakeSlack)) -> (Vec<tests::fake_slack::Posted>, usize) {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let slack = FakeSlack::start().await;
    given(&slack);
    let bedrock = FakeBedrock::start().await;
    let tests::Functions { ingress, worker, .. } = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    let (event, _) = shortcut_on_the_alert();
    assert_eq!(ingress.handle(event).await.unwrap()["statusCode"], 200);
    let work = stack.receive_work().await.unwrap();
    no_failures(&worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap());
    (slack.posted(), bedrock.requests().len())
}

fn only_the_note_in_the_persons_dm(posted: &[tests::fake_slack::Posted], model_calls: usize) {
    assert_eq!(model_calls, 0, "no turn");
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert_eq!(posted[0].channel, PERSON, "their DM with the bot (chat.postMessage to their user id)");
    assert!(posted[0].text.starts_with("I can't investigate that message"), "{}", posted[0].text);
    assert!(!posted[0].text.contains("HighErrorRate") && !posted[0].text.contains("C0LAN2Q65"));
}

#[tokio::test]
async fn a_message_in_a_conversation_the_bot_is_not_in_is_answered_in_the_persons_dm_with_a_link_to_it() {
    // GIVEN a channel the bot is not in: Slack refuses the bot's read of the message
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let slack = FakeSlack::start().await;
    let not_in = serde_json::json!({"ok": false, "error": "not_in_channel"});
    slack.script("conversations.replies", [SlackReply::Json(not_in)]);
    let bedrock = FakeBedrock::start().await;
    bedrock.script([Scripted::text("The 5xx ratio is up since the last deploy: roll it back.")]);
    let tests::Functions { ingress, worker, responder } =
        tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;

    // WHEN the person uses the shortcut on the alert there
    let (event, _) = shortcut_on_the_alert();
    assert_eq!(ingress.handle(event).await.unwrap()["statusCode"], 200);
    let work = stack.receive_work().await.unwrap();
    no_failures(&worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap());
    let replies = stack.receive(&stack.reply_queue.queue).await.unwrap();
    no_failures(&responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)).await.unwrap());

    // THEN the model read the alert as Slack showed it to the person (the payload's copy)
    let requests = bedrock.requests();
    assert_eq!(requests.len(), 1);
    let asked = requests[0].body.to_string();
    assert!(asked.contains("Investigate this message, posted by an app"), "{asked}");
    assert!(asked.contains("runbooks.example.com/checkout-5xx"), "the attachment's field: {asked}");
    // AND in the person's DM: a root linking the message, then the answer in its thread
    let dm = format!("D{}", &PERSON[1..]);
    let posted = slack.posted();
    assert_eq!(posted.len(), 2, "{posted:?}");
    assert_eq!((posted[0].channel.as_str(), posted[0].thread_ts.as_str()), (dm.as_str(), posted[0].ts.as_str()));
    let link =
        format!("<https://acme.slack.com/archives/C0LAN2Q65/p{}|a message> in <#C0LAN2Q65>", ALERT_TS.replace('.', ""));
    assert!(posted[0].text.starts_with(&format!("You asked me to investigate {link}.")), "{}", posted[0].text);
    assert_eq!((posted[1].channel.as_str(), posted[1].thread_ts.as_str()), (dm.as_str(), posted[0].ts.as_str()));
    assert!(posted[1].text.contains("roll it back"), "{:?}", posted[1].text);
    assert!(posted.iter().all(|message| message.channel != "C0LAN2Q65"), "nothing where the bot is not");
}

#[tokio::test]
async fn a_message_in_a_private_channel_the_person_is_not_in_is_refused() {
    let (posted, model_calls) = refused(|slack| {
        let private = CONVERSATIONS_INFO.replace("\"is_private\": false", "\"is_private\": true");
        assert_ne!(private, CONVERSATIONS_INFO);
        slack.default_reply("conversations.info", &private);
        slack.default_reply("conversations.replies", testkit::fixtures::messages::CONVERSATIONS_REPLIES_ALERTS);
        slack.channel_members("C0LAN2Q65", &["U0LAN0Z89", "U0SOMEONE"]);
    })
    .await;
    only_the_note_in_the_persons_dm(&posted, model_calls);
}

/// "Ask the assistant about this…" on the message `ts` (the alert's),
/// signed as Slack signs it.
fn ask_on(ts: &str) -> Value {
    let payload = testkit::fixtures::MESSAGE_ACTION
        .replace("1763800000.000100", ts)
        .replace(slack::shortcut::INVESTIGATE_CALLBACK_ID, slack::ask_modal::ASK_CALLBACK_ID);
    events::with_body(&events::parse(events::APPROVAL_CLICK), &testkit::fixtures::interaction_form(&payload))
}

/// Slack's `view_submission` of the modal `view`, the person having typed
/// `note`, signed: the event and its form body.
fn submitted(view: &Value, note: &str) -> (Value, String) {
    let form = testkit::fixtures::interaction_form(&testkit::fixtures::view_submission(view, note));
    (events::with_body(&events::parse(events::APPROVAL_CLICK), &form), form)
}

#[tokio::test]
async fn ask_about_this_opens_a_modal_and_investigates_with_the_persons_words_once() {
    // GIVEN the alert's thread in a channel the bot is in, and an ingress holding the bot token
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let thread =
        SlackReply::Json(serde_json::from_str(testkit::fixtures::messages::CONVERSATIONS_REPLIES_ALERTS).unwrap());
    slack.script("conversations.replies", [thread.clone(), thread]);
    let bedrock = FakeBedrock::start().await;
    bedrock.script([Scripted::text("Yes: the 5xx ratio rose with the 14:02 deploy. Roll it back.")]);
    let mut functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    functions.ingress = tests::ingress_opening_views(&aws, &stack, slack.url());

    // WHEN the person picks the shortcut
    let response = functions.ingress.handle(ask_on(ALERT_TS)).await.unwrap();
    // THEN the modal opens (with the bot token), and nothing is queued yet
    assert_eq!(response["statusCode"], 200, "{response}");
    let opened = slack.calls("views.open");
    assert_eq!(opened.len(), 1);
    assert_eq!(opened[0].authorization.as_deref(), Some("Bearer xoxb-test-token"));
    let view: Value = serde_json::from_str(&opened[0].form["view"]).unwrap();
    assert_eq!(view["callback_id"], slack::ask_modal::ASK_CALLBACK_ID);
    assert!(stack.receive_work().await.unwrap().is_empty(), "nothing until they submit");

    // WHEN a forged submission arrives (the words changed after signing), then theirs, twice
    let (event, form) = submitted(&view, "did the 14:02 deploy do this?");
    let mut forged = events::with_body(&event, &form.replace("14%3A02", "15%3A00"));
    forged["headers"]["x-slack-signature"] = event["headers"]["x-slack-signature"].clone();
    assert_eq!(functions.ingress.handle(forged).await.unwrap()["statusCode"], 401);
    for delivery in 0..2 {
        let response = functions.ingress.handle(event.clone()).await.unwrap();
        assert_eq!(response["statusCode"], 200, "delivery {delivery}: {response}");
        assert_eq!(response.get("body").and_then(Value::as_str).unwrap_or_default(), "", "an empty 200 closes it");
    }
    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1, "one turn, claimed by the view's id");
    no_failures(&functions.worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap());
    let replies = stack.receive(&stack.reply_queue.queue).await.unwrap();
    no_failures(&functions.responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)).await.unwrap());

    // THEN the model read their words first, then the alert
    let requests = bedrock.requests();
    assert_eq!(requests.len(), 1);
    let asked = requests[0].body.to_string();
    let (words, alert) = (asked.find("did the 14:02 deploy do this?"), asked.find("runbooks.example.com/checkout-5xx"));
    assert!(matches!((words, alert), (Some(w), Some(a)) if w < a), "{asked}");
    // AND the answer is in the alert's thread, once
    let posted = slack.posted();
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert_eq!((posted[0].channel.as_str(), posted[0].thread_ts.as_str()), ("C0LAN2Q65", ALERT_TS));

    // WHEN the modal cannot open (Slack refuses a trigger used before), on
    // another message (its own thread: the first is still in flight)
    let response = functions.ingress.handle(ask_on("1763799100.000070")).await.unwrap();
    assert_eq!(response["statusCode"], 200, "{response}");
    // THEN the message is investigated at once, without their words, rather than not at all
    assert_eq!(slack.calls("views.open").len(), 2);
    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1);
    let assistant_core::WorkMessage::InvestigateMessage(now) = decode_work(&work[0]) else { panic!("a shortcut") };
    assert_eq!(now.note, None);
}
