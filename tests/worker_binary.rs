//! The real `worker` binary under the Lambda Runtime Interface Emulator, fed
//! the SQS event file in `tests/events/` and the scheduled health event, with
//! its Bedrock client pointed at the fake Converse server through the SDK's
//! own `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, and its Slack client at the fake
//! Web API through `SLACK_API_BASE_URL`.

use assistant_core::messages::ReplyMessage;
use tests::fake_bedrock::{FakeBedrock, Scripted, TEXT_REPLY};
use tests::fake_slack::{CONVERSATIONS_INFO, CONVERSATIONS_REPLIES, FakeSlack};
use tests::lambda::{LambdaUnderRie, Launch};
use tests::{Stack, emulator_config, events};

#[tokio::test]
async fn the_binary_answers_a_queued_turn_and_its_health_check() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.replies", CONVERSATIONS_REPLIES);
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let env = vec![
        ("TURNS_TABLE", stack.table.clone()),
        ("WORK_QUEUE_URL", stack.work_queue.queue.clone()),
        ("REPLY_QUEUE_URL", stack.reply_queue.queue.clone()),
        ("ARTIFACT_BUCKET", stack.bucket.clone()),
        ("MODEL_ID", "us.anthropic.claude-sonnet-4-20250514-v1:0".to_owned()),
        ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake.url().to_owned()),
        ("SLACK_BOT_TOKEN", "xoxb-test-token".to_owned()),
        ("SLACK_API_BASE_URL", slack.url().to_owned()),
    ];
    let lambda = LambdaUnderRie::start("worker", Launch { env, clock: None }).unwrap();

    let response = lambda.invoke(&events::parse(events::WORKER_SQS_START_TURN)).await.unwrap();
    assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}\n{}", lambda.logs());
    assert_eq!(fake.requests()[0].model_id, "us.anthropic.claude-sonnet-4-20250514-v1:0");
    let replies = stack.receive_requests().await.unwrap();
    assert!(matches!(replies[..], [ReplyMessage::Deliver { .. }]), "{replies:?}");

    let health = lambda.invoke(&events::parse(events::SCHEDULED_HEALTH_CHECK)).await.unwrap();
    assert_eq!(health["status"], "ok", "{health}");
    assert!(lambda.logs().contains("turn started"), "{}", lambda.logs());
    assert_eq!(slack.calls("conversations.replies").len(), 1, "read the thread");
    assert_eq!(slack.calls("conversations.info").len(), 1, "read the channel");
    assert!(!lambda.logs().contains("xoxb-test-token"), "the token never reaches the logs");
}
