//! Secrets in a tool's answer reach nothing, end to end: a declared HTTP
//! tool answers JSON with secrets under key names and in known shapes;
//! none reaches the fake model's next request, the turn item, the artifact
//! bucket or the fake Slack, while the same answer's ordinary values
//! (status, commit SHA, request id) do. The tool's key comes from Secrets
//! Manager (the emulator) and reaches the API; the API echoes it, and it
//! goes no further either.

use axum::Router;
use axum::routing::get;
use serde_json::json;
use std::time::{SystemTime, UNIX_EPOCH};
use tests::events;
use tests::fake_bedrock::{FakeBedrock, Scripted};
use tests::fake_slack::{CONVERSATIONS_INFO, FakeSlack};
use tests::local_server::LocalServer;
use tests::{Stack, emulator_config, sqs_event};

const WORK_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-work.fifo";
const REPLY_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-reply.fifo";
const STATUS_REPLY: &str = include_str!("fixtures/bedrock/converse-tool-use-deploy-status.json");
const CONFIG: &str = include_str!("fixtures/redaction/assistant.json");

/// Secrets made at test time: nothing real-looking is committed.
fn secrets() -> Vec<String> {
    vec![
        format!("{}-{}-{}", "hunter", "correct", "horse"),
        format!("{}{}", "wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYzQ8rT2vN5mL4kW9s"),
        format!("tok_{}", "9f8e7d6c5b4a3f2e1d0c"),
        format!("xoxb-{}-{}-{}", "2024061715", "7342811937", "q8Xv2LmN4pR7sT1wY9zK3bC6"),
        format!("AKIA{}", "Q7W3E5R8T2Y4U6I9"),
    ]
}

#[tokio::test]
async fn secrets_in_a_tools_answer_reach_neither_the_model_nor_the_table_nor_slack() {
    // GIVEN a team API that wants its key from Secrets Manager, and whose
    // answer carries secrets, the key among them under an innocent name
    let mut secrets = secrets();
    let key = format!("deploys{}key{}", "-api-", "plain-words-4821");
    let answer = json!({
        "status": "degraded",
        "commit": "9fceb02d0ae598e95dc970b74767f19372d61af8",
        "request_id": "c6a3f5e2-5b4f-4d7e-9c1a-2f0e8d7b6a54",
        "db": {"host": "db.internal", "password": secrets[0]},
        "SecretAccessKey": secrets[1],
        "api_token": secrets[2],
        "notes": format!("deployed with {} and key {}", secrets[3], secrets[4]),
        "caller": key,
    });
    let expected = key.clone();
    let app = Router::new().route(
        "/deploys/{service}",
        get(move |headers: axum::http::HeaderMap| async move {
            if headers.get("x-deploys-key").is_none_or(|sent| sent != expected.as_str()) {
                return (axum::http::StatusCode::UNAUTHORIZED, axum::Json(json!({"error": "bad key"})));
            }
            (axum::http::StatusCode::OK, axum::Json(answer))
        }),
    );
    let api = LocalServer::start(app).await;
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    stack.put_secret("deploys-api", &key).await;
    secrets.push(key);
    let config = CONFIG.replace("{{PORT}}", api.base_url.rsplit(':').next().unwrap());
    stack.put("config/assistant.json", &config).await;
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    bedrock.script([Scripted::fixture(STATUS_REPLY), Scripted::text("checkout-api is degraded since commit 9fceb02.")]);
    let tests::Functions { ingress, worker, responder } =
        tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;

    // WHEN a mention runs the tool and the answer is delivered
    assert_eq!(ingress.handle(events::parse(events::APP_MENTION)).await.unwrap()["statusCode"], 200);
    let deadline = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 600_000;
    let work = stack.receive_work().await.unwrap();
    let response = worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline).await.unwrap();
    assert_eq!(tests::batch_failures(&response), Vec::<String>::new(), "{response}");
    let replies = stack.receive(&stack.reply_queue.queue).await.unwrap();
    responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)).await.unwrap();

    // THEN the model's second request holds the ordinary values and no secret
    let requests = bedrock.requests();
    assert_eq!(requests.len(), 2);
    let to_model = requests[1].body.to_string();
    for kept in
        ["degraded", "9fceb02d0ae598e95dc970b74767f19372d61af8", "c6a3f5e2-5b4f-4d7e-9c1a-2f0e8d7b6a54", "db.internal"]
    {
        assert!(to_model.contains(kept), "{kept} reaches the model: {to_model}");
    }
    // AND no secret is anywhere: the model, the table, the bucket, Slack
    let scan = stack.dynamodb.scan().table_name(&stack.table).send().await.unwrap();
    let table = format!("{:?}", scan.items());
    let listed = stack.s3.list_objects_v2().bucket(&stack.bucket).send().await.unwrap();
    let mut bucket = String::new();
    for object in listed.contents() {
        let key = object.key().unwrap();
        let body = stack.s3.get_object().bucket(&stack.bucket).key(key).send().await.unwrap();
        bucket.push_str(&String::from_utf8_lossy(&body.body.collect().await.unwrap().into_bytes()));
    }
    // Every Slack call: posts, updates, and the streamed answer's start,
    // appends and stop.
    let methods = ["chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream", "chat.stopStream"];
    let forms: Vec<_> = methods.iter().flat_map(|method| slack.calls(method)).map(|call| call.form).collect();
    let to_slack = format!("{forms:?}");
    assert!(to_slack.contains("degraded"), "the answer reached the thread: {to_slack}");
    for secret in &secrets {
        for (place, seen) in
            [("the model", &to_model), ("the table", &table), ("the bucket", &bucket), ("Slack", &to_slack)]
        {
            assert!(!seen.contains(secret.as_str()), "{secret} reached {place}");
        }
    }
}
