//! The prompt enhancer through the real worker and the fake Bedrock: the
//! cheap model is called once, first, forced through its tool; its
//! extraction (services resolved in the catalog from the bucket) follows
//! the question in the main model's first message; a broken enhancer
//! leaves the turn answered without it.

use serde_json::{Value, json};
use std::time::{SystemTime, UNIX_EPOCH};
use tests::fake_bedrock::{FakeBedrock, Scripted};
use tests::fake_slack::{CONVERSATIONS_INFO, FakeSlack};
use tests::{Stack, emulator_config, events, sqs_event};

const WORK_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-work.fifo";

async fn ask(enhancer_reply: Scripted) -> (FakeBedrock, FakeSlack) {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let config = json!({
        "prompt_enhancer": {"model_id": "us.amazon.nova-micro-v1:0", "timeout_ms": 5000},
        "service_catalog_key": "config/services.json"
    });
    stack.put("config/assistant.json", &config.to_string()).await;
    let catalog = json!({"services": [{"name": "checkout-api", "aliases": ["checkout", "cast-core"],
        "owners": ["@payments"], "log_groups": ["/aws/lambda/checkout-api"]}]});
    stack.put("config/services.json", &catalog.to_string()).await;
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    bedrock.script([enhancer_reply, Scripted::text("checkout-api is returning 502s since 14:02.")]);
    let tests::Functions { ingress, worker, .. } = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    assert_eq!(ingress.handle(events::parse(events::APP_MENTION)).await.unwrap()["statusCode"], 200);
    let work = stack.receive_work().await.unwrap();
    let deadline = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 600_000;
    let handled = worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline).await.unwrap();
    assert_eq!(tests::batch_failures(&handled), Vec::<String>::new(), "{handled}");
    (bedrock, slack)
}

fn first_message(body: &Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap().to_string()
}

#[tokio::test]
async fn the_cheap_model_reads_the_question_first_and_its_extraction_reaches_the_main_model() {
    let extraction =
        json!({"intent": "investigate", "services": ["cast-core"], "environment": "prod", "since_minutes": 60});
    let (bedrock, slack) = ask(Scripted::tool_calls(&[("e1", "record_question", extraction)])).await;

    let requests = bedrock.requests();
    assert_eq!(requests.len(), 2, "one enhancer call, one main call");
    assert_eq!(requests[0].model_id, "us.amazon.nova-micro-v1:0", "the cheap model first");
    assert_eq!(requests[0].body["toolConfig"]["toolChoice"]["tool"]["name"], "record_question", "forced");
    assert_eq!(requests[1].model_id, tests::MODEL_ID);
    let question = first_message(&requests[1].body);
    assert!(question.contains("[Question context, extracted from the question by a helper model."), "{question}");
    assert!(question.contains("service: checkout-api; aliases: checkout, cast-core"), "resolved: {question}");
    assert!(question.contains("environment: prod"), "{question}");
    assert_eq!(slack.posted().len(), 1);
}

#[tokio::test]
async fn a_broken_enhancer_leaves_the_turn_answered_without_it() {
    let refused = Scripted::Error { status: 400, error_type: "ValidationException", message: "model not enabled" };
    let (bedrock, slack) = ask(refused).await;
    let requests = bedrock.requests();
    assert_eq!(requests.len(), 2);
    assert!(!first_message(&requests[1].body).contains("Question context"), "nothing extracted, nothing added");
    let posted = slack.posted();
    assert_eq!(posted.len(), 1);
    assert!(posted[0].text.contains("502s since 14:02"), "{:?}", posted[0].text);
}
