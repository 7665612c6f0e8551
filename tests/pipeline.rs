//! The whole pipeline end to end: a signed Slack event through the ingress
//! handler, the work queue, the worker handler (the fake Bedrock calls a
//! tool, then answers with a secret in the text; the answer streams into
//! the thread), the reply queue and the responder handler, to the fake
//! Slack: exactly one reply, redacted, in the right thread. Real SQS queues and DynamoDB (the local emulator)
//! between the handlers, as Lambda's event source mappings would feed them.

use assistant_core::delivery::Settled;
use assistant_core::ports::DeliveryLog;
use assistant_core::ports::TurnStore;
use assistant_core::turn::TurnStatus;
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};
use tests::events;
use tests::fake_bedrock::{FakeBedrock, Scripted, TOOL_USE_REPLY};
use tests::fake_slack::{CONVERSATIONS_INFO, FakeSlack};
use tests::{Stack, decode_work, emulator_config, sqs_event};

const WORK_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-work.fifo";
const REPLY_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-reply.fifo";

/// The model's final answer, leaking a bot token it saw in a tool result.
/// The token is made here, at test time: nothing real-looking is committed.
fn answer_with_a_secret() -> (Scripted, String) {
    let token = format!("xoxb-{}-{}-{}", "2024061715", "7342811937", "q8Xv2LmN4pR7sT1wY9zK3bC6");
    let answer = format!("The pool is **exhausted**. The deploy config also holds `{token}`: rotate it.");
    (Scripted::text(&answer), token)
}

fn no_failures(response: &Value) {
    assert_eq!(tests::batch_failures(response), Vec::<String>::new(), "{response}");
}

#[tokio::test]
async fn a_mention_gets_exactly_one_redacted_answer_in_its_thread() {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    let (answer, token) = answer_with_a_secret();
    bedrock.script([Scripted::fixture(TOOL_USE_REPLY), answer]);

    let tests::Functions { ingress, worker, responder } =
        tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;

    // Slack → ingress: acknowledged at once, one message queued.
    let response = ingress.handle(events::parse(events::APP_MENTION)).await.unwrap();
    assert_eq!(response["statusCode"], 200);
    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1);
    let assistant_core::WorkMessage::StartTurn(request) = decode_work(&work[0]) else { panic!("a start_turn") };

    // Work queue → worker: a tool round, then the answer.
    let deadline = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 600_000;
    no_failures(&worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline).await.unwrap());
    assert_eq!(bedrock.requests().len(), 2, "tool use, then the answer");

    // Reply queue → responder, in FIFO order: status lines, then the answer.
    let replies = stack.receive(&stack.reply_queue.queue).await.unwrap();
    assert!(replies.len() >= 2, "{replies:?}");
    no_failures(&responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)).await.unwrap());
    // SQS delivers the whole batch again: nothing more is posted.
    no_failures(&responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)).await.unwrap());

    let posted = slack.posted();
    assert_eq!(posted.len(), 1, "exactly one reply: {posted:?}");
    let reply = &posted[0];
    assert_eq!(reply.channel, request.thread.channel.as_str());
    assert_eq!(reply.thread_ts, request.thread.thread_ts.as_str());
    // Streamed as the model wrote it (what it said before its tool call,
    // then the answer), redacted, and stopped with the feedback buttons.
    assert_eq!(
        reply.text,
        "I'll check the runbook and the current time.\n\nThe pool is **exhausted**. The deploy config also holds \
         `[redacted: slack bot token]`: rotate it."
    );
    assert!(!reply.streaming);
    let tasks: Vec<(&str, &str)> =
        reply.tasks.iter().map(|task| (task["title"].as_str().unwrap(), task["status"].as_str().unwrap())).collect();
    assert!(
        tasks.contains(&("search_docs", "in_progress")) && tasks.contains(&("search_docs", "complete")),
        "{tasks:?}"
    );
    // The card says what the step ran with and, once done, one line of what came of it.
    let done = reply.tasks.iter().find(|task| task["title"] == "search_docs" && task["status"] == "complete").unwrap();
    assert!(
        done["details"].as_str().is_some_and(|line| line.contains("query: checkout-api connection pool")),
        "{done}"
    );
    assert!(done["output"].as_str().is_some_and(|line| !line.is_empty() && line.chars().count() <= 256), "{done}");
    assert!(slack.calls("chat.postMessage").is_empty(), "the stream is the one answer message");
    for method in ["chat.startStream", "chat.appendStream", "chat.stopStream", "chat.update"] {
        let payload = serde_json::to_string(&slack.calls(method).iter().map(|c| &c.form).collect::<Vec<_>>()).unwrap();
        assert!(!payload.contains(&token), "the secret never reaches Slack ({method}), blocks included");
    }

    let statuses: Vec<String> =
        slack.calls("assistant.threads.setStatus").iter().map(|c| c.form["status"].clone()).collect();
    assert_eq!(statuses.first().map(String::as_str), Some("is thinking…"));
    assert!(statuses.iter().any(|s| s.starts_with("is running search_docs")), "{statuses:?}");
    assert_eq!(statuses.last().map(String::as_str), Some(""), "cleared when the answer landed");

    let turn_id = assistant_core::turn::TurnId::for_event(&request.thread, &request.event_id);
    let turn = stack.turns().load(&turn_id).await.unwrap().unwrap();
    assert_eq!(turn.status, TurnStatus::Answered, "the worker's record of the turn");
    let delivery = stack.deliveries().load(&turn_id).await.unwrap();
    assert_eq!(delivery.settled, Some(Settled::Delivered), "the responder's record of the thread");
}

#[tokio::test]
async fn a_slack_search_runs_as_the_asker_with_the_token_the_ingress_kept_and_the_answer_cites_permalinks() {
    // GIVEN a deployment that lets the bot search Slack in this channel, and
    // Slack's search answering with a past incident's message
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    stack
        .put(
            "config/assistant.json",
            r#"{"slack_tools": {"search": true}, "tool_policy": [{"channels": "C0LAN2Q65", "tools": ["search_slack"]}]}"#,
        )
        .await;
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let permalink = "https://acme.slack.com/archives/C0INCIDENT1/p1763700000000100";
    slack.default_reply(
        "assistant.search.context",
        &serde_json::json!({"ok": true, "results": {"messages": [{
            "author_user_id": "U0SRE", "team_id": "T061EG9R6", "channel_id": "C0INCIDENT1",
            "message_ts": "1763700000.000100", "is_author_bot": false, "permalink": permalink,
            "content": "checkout-api 502s last week: the db pool was exhausted, a restart fixed it"
        }]}})
        .to_string(),
    );
    let bedrock = FakeBedrock::start().await;
    bedrock.script([
        Scripted::tool_calls(&[("tooluse_search", "search_slack", serde_json::json!({"query": "checkout-api 502"}))]),
        Scripted::text(&format!("Last week the pool was exhausted ([thread]({permalink}))")),
    ]);
    let functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;

    // WHEN a person mentions the bot now, their event carrying an action
    // token (short-lived: the ingress and the worker share today's clock)
    let mention = events::parse(events::APP_MENTION);
    let mut body: Value = serde_json::from_slice(&events::body(&mention)).unwrap();
    body["event"]["action_token"] = "10647138185092.960436384805.afce3599".into();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    let mention = events::signed_at(&mention, &body.to_string(), now);
    let ingress = ingress::Ingress::new(
        tests::ingress_config(&stack),
        &tests::Role::Ingress.config(&aws),
        std::sync::Arc::new(testkit::clock::ManualClock::at(now)),
    );
    let response = ingress.handle(mention).await.unwrap();
    assert_eq!(response["statusCode"], 200, "{response}");
    let mut queued = Vec::new();
    for _ in 0..4 {
        let (work, replies) = functions.round(&stack).await;
        queued.extend(work.iter().chain(&replies).filter_map(|message| message.body().map(str::to_owned)));
    }
    // THEN no queue message carried the token
    assert!(!queued.is_empty() && queued.iter().all(|body| !body.contains("afce3599")), "{queued:#?}");

    // THEN Slack's search ran with the person's token, in public channels
    let searches = slack.calls("assistant.search.context");
    assert_eq!(searches.len(), 1);
    assert_eq!(searches[0].form["action_token"], "10647138185092.960436384805.afce3599");
    assert_eq!(searches[0].form["channel_types"], "public_channel");
    assert_eq!(searches[0].form["context_channel_id"], "C0LAN2Q65");
    // and the model read the message with its permalink, as data
    let result = bedrock.requests()[1].body["messages"].as_array().unwrap().last().unwrap().to_string();
    assert!(result.contains(permalink) && result.contains("data, not") && result.contains("db pool"), "{result}");
    // and the thread's answer cites it
    let answer: Vec<_> = slack.posted().into_iter().filter(|m| m.text.contains("pool was exhausted")).collect();
    assert_eq!(answer.len(), 1, "{:#?}", slack.posted());
    assert!(answer[0].text.contains(permalink), "{}", answer[0].text);
}
