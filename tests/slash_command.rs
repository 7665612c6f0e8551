//! `/assistant <question>` (a slash command) end to end, through the real
//! functions: Slack's signed form body through the ingress (an ephemeral
//! acknowledgement at once), the work queue, the worker (which opens a
//! thread in the channel with the question) and the responder, to the fake
//! Slack. And its hostile variants: a forged or replayed command (401,
//! nothing queued), a `response_url` that is not Slack's (refused in the
//! acknowledgement, nothing queued), Slack's retry (one turn), a channel
//! the bot may not post in (answered in the person's DM, pointed to once
//! through the command's `response_url`).

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
async fn a_channel_the_bot_may_not_post_in_is_answered_in_the_persons_dm_and_pointed_to_there_once() {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let slack = FakeSlack::start().await;
    // A private channel the bot is not in: Slack refuses the read and the post there.
    let not_in = serde_json::json!({"ok": false, "error": "not_in_channel"});
    slack.script("conversations.history", [SlackReply::Json(not_in.clone())]);
    slack.script("chat.postMessage", [SlackReply::Json(not_in)]);
    let bedrock = FakeBedrock::start().await;
    bedrock.script([Scripted::text("The 5xx ratio is up since the last deploy: roll it back.")]);
    let tests::Functions { ingress, worker, responder } =
        tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;

    assert_eq!(ingress.handle(command_with(testkit::fixtures::SLASH_COMMAND)).await.unwrap()["statusCode"], 200);
    let mut work = stack.receive_work().await.unwrap();
    // The ingress's clock stands at the event files' signing time, the
    // worker's is today's: the command was typed just now.
    let assistant_core::WorkMessage::SlashCommand(mut command) = decode_work(&work[0]) else {
        panic!("a slash_command")
    };
    command.asked_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    work[0].body = Some(assistant_core::WorkMessage::SlashCommand(command).encode());
    no_failures(&worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap());
    // Redelivered (the worker's answer to SQS lost): nothing more is posted or shown.
    no_failures(&worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap());
    let replies = stack.receive(&stack.reply_queue.queue).await.unwrap();
    no_failures(&responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)).await.unwrap());

    // THEN the answer is in a thread of the person's DM, under a root quoting the question
    assert_eq!(bedrock.requests().len(), 1, "one turn");
    let dm = format!("D{}", &PERSON[1..]);
    let posted = slack.posted();
    assert_eq!(posted.len(), 2, "{posted:?}");
    assert_eq!(posted[0].channel, dm);
    assert!(posted[0].text.starts_with(&format!("You asked with /assistant in <#{CHANNEL}>. I can't post there")));
    assert!(posted[0].text.contains("checkout-api"), "{}", posted[0].text);
    assert_eq!((posted[1].channel.as_str(), posted[1].thread_ts.as_str()), (dm.as_str(), posted[0].ts.as_str()));
    assert!(posted[1].text.contains("roll it back"), "{}", posted[1].text);
    // AND where they typed it, one message only they see, through the command's response_url, linking the DM thread
    let responses = slack.responses();
    assert_eq!(responses.len(), 1, "{responses:?}");
    assert!(responses[0].0.starts_with("/commands/"), "{responses:?}");
    assert_eq!(responses[0].1["response_type"], "ephemeral");
    let link = format!("https://acme.slack.com/archives/{dm}/p{}", posted[0].ts.replace('.', ""));
    let shown = responses[0].1["text"].as_str().unwrap();
    assert!(
        shown.starts_with("I can't post in this channel, so I'm answering in our DM") && shown.contains(&link),
        "{shown}"
    );
}

#[tokio::test]
async fn a_response_url_claim_whose_answer_was_lost_is_granted_once_and_never_again() {
    use adapters_aws::dynamodb::DynamoRecords;
    use assistant_core::TurnId;
    use assistant_core::response_url::{Claim, ResponseUrls};
    use tests::fault_proxy::{FaultProxy, Plan, Upstream};
    const ASKED: i64 = 1_763_800_000;
    for (attempts, fault) in tests::fault_proxy::LOST_ANSWERS {
        // GIVEN a path to the table that loses the answer of the claim's write
        let stack = Stack::new(&emulator_config().await).await.unwrap();
        let endpoint = tests::env_from_test_command("AWS_ENDPOINT_URL");
        let proxy = FaultProxy::start(Upstream::Aws, &endpoint, Plan::none()).await;
        let aws = tests::config_through(proxy.url(), attempts, adapters_aws::config::worker_timeouts()).await;
        let urls = ResponseUrls::new(std::sync::Arc::new(DynamoRecords::new(
            aws_sdk_dynamodb::Client::new(&aws),
            &stack.table,
        )));
        proxy.script_when("DynamoDB_20120810.PutItem", "RESPONSE_URL", fault);
        let turn = TurnId::new("T061EG9R6-Sl8088930838d88f008e0");

        // WHEN the worker claims the pointer, and its message is delivered twice more
        let mut outcomes = Vec::new();
        for _ in 0..3 {
            // A lost answer is told from a refusal by the write's token: never an error.
            outcomes.push(urls.claim(&turn, "dm-pointer", ASKED, ASKED + 5).await.expect("claimed or refused"));
        }

        // THEN the claim was granted once: the write whose answer was lost is found as the worker's own
        let injected = proxy.injected_by_kind();
        assert_eq!(injected.get(&fault), Some(&1), "{fault:?}: the answer was lost: {injected:?}");
        assert_eq!(outcomes, [Claim::Granted, Claim::AlreadyClaimed, Claim::AlreadyClaimed], "{fault:?}");
    }
}
