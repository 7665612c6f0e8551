//! `/assistant <question>` (a slash command) end to end, through the real
//! functions: Slack's signed form body through the ingress (an ephemeral
//! acknowledgement at once), the work queue, the worker (which opens a
//! thread in the channel with the question) and the responder, to the fake
//! Slack. And its hostile variants: a forged or replayed command (401,
//! nothing queued), a `response_url` that is not Slack's (refused in the
//! acknowledgement, nothing queued), Slack's retry (one turn), a channel
//! the bot may not post in (the person told in their DM, no model call).

use serde_json::Value;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tests::events;
use tests::fake_bedrock::{FakeBedrock, Scripted};
use tests::fake_slack::{CONVERSATIONS_INFO, FakeSlack, SlackReply};
use tests::{Stack, decode_work, emulator_config, sqs_event};

const WORK_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-work.fifo";
const REPLY_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-reply.fifo";
const PERSON: &str = "U061F7AUR";
const CHANNEL: &str = "C0LAN2Q65";

/// The command as Slack signs and sends it, its form body `form`.
fn command_with(form: &str) -> Value {
    events::with_body(&events::parse(events::APPROVAL_CLICK), form)
}

/// Slack's example command with `field` set to `value` (URL-encoded).
fn form_with(field: &str, value: &str) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(value.as_bytes()).collect();
    testkit::fixtures::SLASH_COMMAND
        .split('&')
        .map(|pair| if pair.starts_with(&format!("{field}=")) { format!("{field}={encoded}") } else { pair.to_owned() })
        .collect::<Vec<_>>()
        .join("&")
}

fn deadline() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 600_000
}

fn no_failures(response: &Value) {
    assert_eq!(tests::batch_failures(response), Vec::<String>::new(), "{response}");
}

/// The acknowledgement's body: an ephemeral message.
fn ack_text(response: &Value) -> String {
    let body: Value = serde_json::from_str(response["body"].as_str().expect("a body")).expect("JSON");
    assert_eq!(body["response_type"], "ephemeral", "only the person sees it: {body}");
    body["text"].as_str().expect("text").to_owned()
}

#[tokio::test]
async fn a_command_is_acknowledged_at_once_and_answered_once_in_a_thread_it_opens() {
    // GIVEN a public channel the bot is in
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    bedrock.script([Scripted::text("The 5xx ratio is up since the last deploy: roll it back.")]);
    let tests::Functions { ingress, worker, responder } =
        tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;

    // WHEN Slack sends the command, and retries it
    let command = command_with(testkit::fixtures::SLASH_COMMAND);
    for delivery in 0..2 {
        let request =
            if delivery == 0 { command.clone() } else { events::with_header(&command, "x-slack-retry-num", "1") };
        let started = Instant::now();
        let response = ingress.handle(request).await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(3), "acknowledged within Slack's 3 s");
        assert_eq!(response["statusCode"], 200, "delivery {delivery}: {response}");
        assert!(ack_text(&response).starts_with("Looking into it"), "{response}");
    }
    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1, "one turn: the claim and SQS's deduplication keep the copy out");
    let assistant_core::WorkMessage::SlashCommand(queued) = decode_work(&work[0]) else { panic!("a slash_command") };
    assert_eq!((queued.channel.as_str(), queued.user.as_str()), (CHANNEL, PERSON));
    assert_eq!(queued.question, "why is checkout-api failing in prod?");
    no_failures(&worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap());
    // A redelivery of the same command (the worker stopped after posting): no second root.
    no_failures(&worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap());
    let replies = stack.receive(&stack.reply_queue.queue).await.unwrap();
    no_failures(&responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)).await.unwrap());

    // THEN the channel holds one root quoting the question, and the answer in its thread
    let posted = slack.posted();
    assert_eq!(posted.len(), 2, "{posted:?}");
    let (root, answer) = (&posted[0], &posted[1]);
    assert_eq!((root.channel.as_str(), root.thread_ts.as_str()), (CHANNEL, root.ts.as_str()), "top level");
    assert_eq!(root.text, "> why is checkout-api failing in prod?\nasked by <@U061F7AUR> with /assistant");
    assert_eq!((answer.channel.as_str(), answer.thread_ts.as_str()), (CHANNEL, root.ts.as_str()));
    assert!(answer.text.contains("roll it back"), "{:?}", answer.text);
    // AND the model was asked the person's question, once
    let requests = bedrock.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].body.to_string().contains("why is checkout-api failing in prod?"));
}

#[tokio::test]
async fn forged_replayed_and_hostile_commands_are_refused_and_queue_nothing() {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let slack = FakeSlack::start().await;
    let bedrock = FakeBedrock::start().await;
    let tests::Functions { ingress, .. } = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    let form = testkit::fixtures::SLASH_COMMAND;
    let command = command_with(form);

    // Forged: the body changed after signing (another channel named).
    let mut forged = command_with(&form.replace(CHANNEL, "C0SECRET01"));
    forged["headers"]["x-slack-signature"] = command["headers"]["x-slack-signature"].clone();
    // Replayed: Slack's own signature, made more than five minutes ago.
    let replayed = events::signed_at(&command, form, events::SIGNED_AT - 301);
    for (what, request) in [("forged", forged), ("replayed", replayed)] {
        let response = ingress.handle(request).await.unwrap();
        assert_eq!(response["statusCode"], 401, "{what}: {response}");
    }
    // Signed, but naming a response_url that is not Slack's.
    for url in [
        "http://hooks.slack.com/commands/T061EG9R6/1/x",
        "https://hooks.slack.com.evil.com/commands/T061EG9R6/1/x",
        "https://user@hooks.slack.com/commands/T061EG9R6/1/x",
        "https://169.254.169.254/commands/T061EG9R6/1/x",
        "https://[fd00:ec2::254]/commands/T061EG9R6/1/x",
        "https://hooks.slack.com/commands/%2e%2e/api/chat.postMessage",
        &format!("https://hooks.slack.com/commands/{}", "a".repeat(400)),
    ] {
        let response = ingress.handle(command_with(&form_with("response_url", url))).await.unwrap();
        assert_eq!(response["statusCode"], 200, "{url}: {response}");
        assert!(ack_text(&response).starts_with("Sorry, I can't take this command"), "{url}: {response}");
    }

    assert!(stack.receive_work().await.unwrap().is_empty(), "nothing queued");
    assert!(bedrock.requests().is_empty() && slack.posted().is_empty());
}

#[tokio::test]
async fn a_channel_the_bot_may_not_post_in_gets_nothing_and_the_person_is_told_in_their_dm() {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let slack = FakeSlack::start().await;
    // A private channel the bot is not in: Slack refuses the read and the post.
    let not_in = serde_json::json!({"ok": false, "error": "not_in_channel"});
    slack.default_reply("conversations.history", &not_in.to_string());
    slack.script("chat.postMessage", [SlackReply::Json(not_in)]);
    let bedrock = FakeBedrock::start().await;
    let tests::Functions { ingress, worker, .. } = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;

    assert_eq!(ingress.handle(command_with(testkit::fixtures::SLASH_COMMAND)).await.unwrap()["statusCode"], 200);
    let work = stack.receive_work().await.unwrap();
    no_failures(&worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap());

    let posted = slack.posted();
    assert_eq!(bedrock.requests().len(), 0, "no turn");
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert_eq!(posted[0].channel, PERSON, "their DM with the bot (chat.postMessage to their user id)");
    assert!(posted[0].text.starts_with("I couldn't answer your command there"), "{}", posted[0].text);
    assert!(!posted[0].text.contains("checkout-api"), "nothing of the question");
}
