//! The worker handler with the real AWS SDK against the local AWS emulator
//! and the real Bedrock client against the fake Converse server: the SQS
//! event file starts a turn that is answered and delivered, tool rounds,
//! throttling, and a bad message reaching the dead-letter queue.

use adapters_aws::provision;
use assistant_core::keys::{RESPONSE_MODES_PARTITION, RESPONSE_MODES_SORT_KEY};
use assistant_core::messages::ReplyMessage;
use assistant_core::ports::{TurnStore, VersionedRecords};
use assistant_core::turn::{TurnId, TurnStatus};
use serde_json::json;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tests::fake_bedrock::{FakeBedrock, Scripted, TEXT_REPLY, TOOL_USE_REPLY};
use tests::fake_slack::{CONVERSATIONS_INFO, CONVERSATIONS_REPLIES, FakeSlack, SlackReply};
use tests::{Stack, emulator_config, events, sqs_event, unique_name};
use worker::{Clients, Config, WorkerFunction};

const TURN: &str = "T061EG9R6-Ev0LAN670R";

async fn world(fake: &FakeBedrock) -> (Stack, WorkerFunction) {
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    let function = WorkerFunction::load(function_config(&stack, None), clients(&stack, fake).await).await.unwrap();
    (stack, function)
}

/// The function's configuration; Slack is the fake when given, else an
/// address where nothing listens (history then degrades to the question).
fn function_config(stack: &Stack, slack: Option<&FakeSlack>) -> Config {
    tests::worker_config(stack, slack.map_or("http://127.0.0.1:9/api", |s| s.url()))
}

/// Ten minutes from now, in Unix milliseconds.
fn deadline() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 600_000
}

use tests::batch_failures as failures;
use tests::worker_clients as clients;

#[tokio::test]
async fn the_sqs_event_file_starts_a_turn_that_is_answered_and_delivered() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    let (stack, function) = world(&fake).await;

    let response = function.handle(events::parse(events::WORKER_SQS_START_TURN), deadline()).await.unwrap();
    assert_eq!(failures(&response), Vec::<String>::new());

    let turn = stack.turns().load(&TurnId::new(TURN)).await.unwrap().unwrap();
    assert_eq!((turn.status, turn.steps), (TurnStatus::Answered, 1));
    assert!(turn.answer.unwrap().contains("connection pool is exhausted"));
    let replies = stack.receive_requests().await.unwrap();
    assert!(matches!(&replies[..], [ReplyMessage::Deliver { turn_id, .. }] if turn_id.as_str() == TURN), "{replies:?}");

    // Slack unreachable: the question alone, named, reached the model.
    let first = &fake.requests()[0].body;
    assert_eq!(
        first["messages"][0]["content"],
        json!([{"text": "<@U061F7AUR>: <@U0LAN0Z89> why is checkout-api failing in prod?"}])
    );
}

#[tokio::test]
async fn the_thread_so_far_opens_the_transcript_with_the_bot_as_assistant() {
    // GIVEN a mention inside a thread that already has messages, and Slack
    // rate limiting the first history call for a second
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    let slack = FakeSlack::start().await;
    slack.script("conversations.replies", [SlackReply::RateLimited { retry_after_secs: 1 }]);
    slack.default_reply("conversations.replies", CONVERSATIONS_REPLIES);
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let function =
        WorkerFunction::load(function_config(&stack, Some(&slack)), clients(&stack, &fake).await).await.unwrap();
    let in_thread = events::WORKER_SQS_START_TURN
        .replace(r#"\"thread_ts\":\"1763800000.000100\""#, r#"\"thread_ts\":\"1763799000.000050\""#)
        .replace(
            r#"\"text\":\"<@U0LAN0Z89> why is checkout-api failing in prod?\""#,
            r#"\"text\":\"<@U0LAN0Z89> is it healthy again?\""#,
        )
        .replace(r#"\"user\":\"U061F7AUR\""#, r#"\"user\":\"U2CERLKJA\""#);
    assert_ne!(in_thread, events::WORKER_SQS_START_TURN);

    // WHEN the worker starts the turn
    let response = function.handle(events::parse(&in_thread), deadline()).await.unwrap();
    assert_eq!(failures(&response), Vec::<String>::new());

    // THEN it read the thread with the bot token, waiting out the 429
    let calls = slack.calls("conversations.replies");
    assert_eq!(calls.len(), 2, "one 429, one success");
    assert_eq!(calls[1].authorization.as_deref(), Some("Bearer xoxb-test-token"));
    assert_eq!((calls[1].form["channel"].as_str(), calls[1].form["ts"].as_str()), ("C0LAN2Q65", "1763799000.000050"));

    // AND the model saw the thread: people named, its own message as the
    // assistant's, another bot marked, a join left out, the question last
    let messages = &fake.requests()[0].body["messages"];
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(
        messages[0]["content"],
        json!([{"text": "<@U061F7AUR>: <@U0LAN0Z89> checkout-api is throwing 502s in prod"}])
    );
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [{"text": "The 502s started at 14:02, right after deploy 42."}]})
    );
    assert_eq!(
        messages[2]["content"],
        json!([{"text": "(bot B0DEPLOYBOT): Rolled back deploy 42."}, {"text": "<@U2CERLKJA>: <@U0LAN0Z89> is it healthy again?"}])
    );
    assert_eq!(messages.as_array().unwrap().len(), 3);

    // AND the system prompt says where the conversation is
    let system = fake.requests()[0].body["system"][0]["text"].as_str().unwrap().to_owned();
    assert!(
        system.ends_with("You are answering in the Slack channel #incidents. Its topic: Production incidents. SEV1: page on-call. Its purpose: Coordinating incident response."),
        "{system}"
    );
}

#[tokio::test]
async fn a_thread_slack_will_not_let_the_bot_read_is_answered_from_the_message_and_says_so() {
    // GIVEN a reply in a thread, and Slack limiting the app's thread reads
    // to one a minute (commercially distributed apps outside its Marketplace)
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    let slack = FakeSlack::start().await;
    slack.script("conversations.replies", [SlackReply::RateLimited { retry_after_secs: 60 }]);
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let function =
        WorkerFunction::load(function_config(&stack, Some(&slack)), clients(&stack, &fake).await).await.unwrap();
    let in_thread = events::WORKER_SQS_START_TURN
        .replace(r#"\"thread_ts\":\"1763800000.000100\""#, r#"\"thread_ts\":\"1763799000.000050\""#);
    assert_ne!(in_thread, events::WORKER_SQS_START_TURN);

    // WHEN the worker starts the turn
    let started = std::time::Instant::now();
    let response = function.handle(events::parse(&in_thread), deadline()).await.unwrap();

    // THEN it does not wait a minute nor fail: one read, and the model
    // answers from the question, told to say it could not see the thread
    assert_eq!(failures(&response), Vec::<String>::new());
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "not waited out");
    assert_eq!(slack.calls("conversations.replies").len(), 1);
    let messages = &fake.requests()[0].body["messages"];
    assert_eq!(messages.as_array().unwrap().len(), 1, "{messages}");
    assert_eq!(messages[0]["content"][0]["text"], worker_turn::context::THREAD_UNREAD);
    assert_eq!(messages[0]["content"][1]["text"], "<@U061F7AUR>: <@U0LAN0Z89> why is checkout-api failing in prod?");
}

/// Puts an object in the stack's bucket.
#[tokio::test]
async fn a_tool_round_searches_the_runbooks_in_s3_and_sends_the_results_back() {
    // GIVEN a runbook in the bucket, and a model that searches the docs and
    // asks the time before answering
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TOOL_USE_REPLY), Scripted::fixture(TEXT_REPLY)]);
    let (stack, function) = world(&fake).await;
    stack.put("docs/runbooks/checkout-api.md", "# checkout-api\nConnection pool exhausted: restart the pods.\n").await;

    let response = function.handle(events::parse(events::WORKER_SQS_START_TURN), deadline()).await.unwrap();
    assert_eq!(failures(&response), Vec::<String>::new());

    // THEN both results went back to the model in one user message
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let results = &requests[1].body["messages"][2]["content"];
    assert_eq!(results[0]["toolResult"]["toolUseId"], "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q");
    assert_eq!(results[0]["toolResult"]["status"], "success");
    let found = &results[0]["toolResult"]["content"][0]["json"]["matches"];
    assert_eq!(
        found[0],
        json!({"path": "runbooks/checkout-api.md", "line": 2, "text": "Connection pool exhausted: restart the pods."}),
        "the best line first"
    );
    assert_eq!(results[1]["toolResult"]["status"], "success");
    let now = results[1]["toolResult"]["content"][0]["json"]["unix"].as_i64().unwrap();
    assert!(now > 1_763_800_000, "current_time read the real clock: {now}");
    // AND the second step reads the first from the prompt cache: the
    // conversation so far ends with a cache point; the first step has none
    let last_block = |request: &tests::fake_bedrock::Recorded| {
        let messages = request.body["messages"].as_array().unwrap();
        messages.last().unwrap()["content"].as_array().unwrap().last().unwrap().clone()
    };
    assert_eq!(last_block(&requests[1]), json!({"cachePoint": {"type": "default"}}));
    assert!(last_block(&requests[0]).get("cachePoint").is_none(), "{}", requests[0].body);
    let points = |request: &tests::fake_bedrock::Recorded| request.body.to_string().matches("cachePoint").count();
    assert_eq!(points(&requests[1]), 3, "system, tools, conversation: Bedrock allows four");
    // AND the tools were advertised
    let advertised: Vec<_> = requests[0].body["toolConfig"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["toolSpec"]["name"].as_str())
        .collect();
    assert_eq!(
        advertised,
        ["current_time", "attach_result", "recall", "forget_thread", "list_docs", "read_doc", "search_docs"]
    );
}

#[tokio::test]
async fn the_assistant_configuration_in_s3_sets_the_prompt_and_the_allowed_tools() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    stack.put("config/assistant.json", r#"{"system_prompt_key": "config/prompt.md", "tool_policy": [{"channels": "C0LAN2Q65", "tools": ["current_time", "service_*"]}], "http_tools": [{"name": "service_status", "description": "Status of a service.", "input_schema": {"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]}, "url": "https://status.example.com/api/{service}"}]}"#).await;
    stack.put("config/prompt.md", "You are Payments' on-call helper.").await;
    let function = WorkerFunction::load(function_config(&stack, None), clients(&stack, &fake).await).await.unwrap();

    function.handle(events::parse(events::WORKER_SQS_START_TURN), deadline()).await.unwrap();
    let request = &fake.requests()[0].body;
    assert_eq!(request["system"][0]["text"], "You are Payments' on-call helper.");
    let advertised: Vec<_> = request["toolConfig"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["toolSpec"]["name"].as_str())
        .collect();
    assert_eq!(
        advertised,
        ["current_time", "attach_result", "service_status"],
        "docs tools not allowed here, the HTTP tool is (attach_result reaches only the thread)"
    );
}

#[tokio::test]
async fn a_broken_assistant_configuration_with_nothing_kept_starts_the_function_on_the_defaults_and_says_why() {
    // (tests/config_fallback.rs: with a good one kept, that one is served)
    let fake = FakeBedrock::start().await;
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    for (broken, says) in [
        (r#"{"tool_polcy": []}"#, "config/assistant.json: tool_polcy: unknown field `tool_polcy`"),
        (
            r#"{"system_prompt_key": "config/missing.md"}"#,
            "it cannot be assembled: the system prompt config/missing.md",
        ),
    ] {
        stack.put("config/assistant.json", broken).await;
        let function = WorkerFunction::load(function_config(&stack, None), clients(&stack, &fake).await).await.unwrap();
        let report = serde_json::to_value(function.health().await).unwrap();
        let config = &report["checks"][5];
        assert_eq!((&config["name"], &config["ok"]), (&json!("config"), &json!(false)), "{report}");
        let error = config["error"].as_str().unwrap();
        assert!(error.contains(says) && error.contains("Serving the built-in defaults"), "{error}");
    }
}

#[tokio::test]
async fn persistent_throttling_reports_the_record_for_redelivery() {
    let fake = FakeBedrock::start().await;
    fake.script(std::iter::repeat_n(Scripted::throttling(), 4));
    let (stack, function) = world(&fake).await;

    let response = function.handle(events::parse(events::WORKER_SQS_START_TURN), deadline()).await.unwrap();
    assert_eq!(failures(&response), ["059f36b4-87a3-44ab-83d2-661975830a7d"]);
    assert!(stack.receive_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_model_throttled_for_a_minute_is_retried_in_seconds_and_the_turn_answered_within_two_minutes() {
    // GIVEN a model throttled for the next minute, and the mention's work on
    // a queue set up as the template's (eight receives)
    let fake = FakeBedrock::start().await;
    let started = Instant::now();
    fake.throttle_until(started + Duration::from_secs(60));
    fake.script([Scripted::text("Back now: the pool is healthy.")]);
    let (stack, function) = world(&fake).await;
    let start = events::parse(events::WORKER_SQS_START_TURN);
    stack
        .sqs
        .send_message()
        .queue_url(&stack.work_queue.queue)
        .message_body(start["Records"][0]["body"].as_str().unwrap())
        .message_group_id("C0LAN2Q65:1763800000.000100")
        .message_deduplication_id("throttled-start")
        .send()
        .await
        .unwrap();
    let queue_arn = tests::queue_arn(&stack.work_queue.queue);

    // WHEN Lambda's poller hands the message to the worker whenever SQS
    // makes it visible: the visibility is the worker's own (held for the
    // invocation, then the backoff), never reset by the test
    let mut receives = Vec::new();
    let answered_after = loop {
        assert!(started.elapsed() < Duration::from_secs(170), "not answered: received at {receives:?}");
        let received = stack.receive(&stack.work_queue.queue).await.unwrap();
        if received.is_empty() {
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        }
        receives.push(started.elapsed().as_secs());
        let response = function.handle(sqs_event(&received, &queue_arn), deadline()).await.unwrap();
        if failures(&response).is_empty() {
            break started.elapsed();
        }
    };

    eprintln!("receives at {receives:?} s; answered after {answered_after:?}");
    // THEN it was tried within seconds each time, and answered about a
    // minute after the throttling ended at the latest
    assert!(answered_after < Duration::from_secs(130), "answered after {answered_after:?}; receives at {receives:?} s");
    assert!((4..=tests::MAX_RECEIVES as usize).contains(&receives.len()), "receives at {receives:?} s");
    assert!(receives[1] <= 10, "the first retry comes within seconds (~5 s), not the queue's 30 s: {receives:?}");
    let requests = stack.receive_requests().await.unwrap();
    assert!(matches!(&requests[..], [ReplyMessage::Deliver { .. }]), "{requests:?}");
}

#[tokio::test]
async fn a_request_the_model_refuses_as_it_stands_settles_the_turn_in_one_delivery() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::Error {
        status: 400,
        error_type: "ValidationException",
        message: "The model returned the following errors: bad request",
    }]);
    let (stack, function) = world(&fake).await;
    let response = function.handle(events::parse(events::WORKER_SQS_START_TURN), deadline()).await.unwrap();
    assert!(failures(&response).is_empty(), "settled now, not retried: {response}");
    let turn = stack.turns().load(&TurnId::new(TURN)).await.unwrap().unwrap();
    assert_eq!(turn.status, TurnStatus::Failed);
    let requests = stack.receive_requests().await.unwrap();
    assert!(matches!(&requests[..], [ReplyMessage::Deliver { .. }]), "the thread is told: {requests:?}");
    assert_eq!(fake.requests().len(), 1, "one model call");
}

#[tokio::test]
async fn a_malformed_message_reaches_the_dead_letter_queue_after_the_maximum_receives() {
    // GIVEN a work queue that moves a message to its DLQ after 2 receives
    let fake = FakeBedrock::start().await;
    let (stack, function) = world(&fake).await;
    let queue = provision::fifo_queue_with_dlq(&stack.sqs, &unique_name("poison"), 2, 1).await.unwrap();
    let queue_arn = "arn:aws:sqs:us-east-1:123456789012:poison.fifo";
    stack
        .sqs
        .send_message()
        .queue_url(&queue.queue)
        .message_body(r#"{"v":1,"kind":"teleport"}"#)
        .message_group_id("C1:1.1")
        .message_deduplication_id("poison-1")
        .send()
        .await
        .unwrap();

    // WHEN the worker is handed it as Lambda's poller would, until SQS stops
    // delivering it (failures stay on the queue; successes would be deleted)
    let mut deliveries = 0;
    for _ in 0..6 {
        let received = stack.receive(&queue.queue).await.unwrap();
        if !received.is_empty() {
            deliveries += 1;
            let response = function.handle(sqs_event(&received, queue_arn), deadline()).await.unwrap();
            assert_eq!(failures(&response).len(), 1, "a malformed message is never acknowledged");
        }
        tokio::time::sleep(Duration::from_millis(1_100)).await;
    }

    // THEN it was tried the maximum number of times and now sits in the DLQ
    assert_eq!(deliveries, 2);
    let dead = stack.receive(&queue.dead_letter).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body(), Some(r#"{"v":1,"kind":"teleport"}"#));
    assert!(fake.requests().is_empty(), "no model call for a message nobody can read");
}

#[tokio::test]
async fn the_health_check_reports_the_table_queues_bucket_and_slack() {
    let fake = FakeBedrock::start().await;
    let slack = FakeSlack::start().await;
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let function =
        WorkerFunction::load(function_config(&stack, Some(&slack)), clients(&stack, &fake).await).await.unwrap();
    let report = function.handle(events::parse(events::SCHEDULED_HEALTH_CHECK), deadline()).await.unwrap();
    assert_eq!(report["status"], "ok", "{report}");
    assert_eq!(report["function"], "worker");
    let names: Vec<_> = report["checks"].as_array().unwrap().iter().map(|c| c["name"].clone()).collect();
    assert_eq!(
        names,
        [json!("dynamodb"), json!("sqs_work"), json!("sqs_reply"), json!("s3"), json!("slack"), json!("config")]
    );
    assert_eq!(slack.calls("auth.test").len(), 1);

    // Slack unreachable: degraded, and the failing check says so.
    let (_stack, unreachable) = world(&fake).await;
    let report = unreachable.handle(events::parse(events::SCHEDULED_HEALTH_CHECK), deadline()).await.unwrap();
    assert_eq!(report["status"], "degraded", "{report}");
    assert_eq!(report["checks"][4]["ok"], false, "{report}");
}

#[tokio::test]
async fn a_two_megabyte_tool_result_goes_to_s3_and_the_turn_item_stays_small() {
    // GIVEN a tool that returns 2 MB of logs, and a model that calls it
    let fake = FakeBedrock::start().await;
    let calls_dump_logs = TOOL_USE_REPLY.replace("\"search_docs\"", "\"dump_logs\"");
    fake.script([Scripted::fixture(&calls_dump_logs), Scripted::fixture(TEXT_REPLY)]);
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    let logs = "2025-11-22T08:26:40Z checkout-api ERROR pool exhausted\n".repeat(40_000);
    assert!(logs.len() > 2_000_000);
    let dump_logs = {
        let logs = logs.clone();
        tools_registry::Tool::new(
            assistant_core::model::ToolSpec {
                name: "dump_logs".into(),
                description: "All of today's logs.".into(),
                input_schema: json!({"type": "object"}),
            },
            tools_registry::Effect::ReadOnly,
            Duration::from_secs(5),
            move |_| {
                let logs = logs.clone();
                async move { Ok(assistant_core::turn::ToolOutput::Text(logs)) }
            },
        )
        .unwrap()
    };
    let tools = tools_registry::ToolRegistry::new(vec![dump_logs], tools_registry::ToolPolicy::allow_all()).unwrap();
    let function = WorkerFunction::load(function_config(&stack, None), clients(&stack, &fake).await)
        .await
        .unwrap()
        .with_tools(tools);

    // WHEN the turn runs
    let response = function.handle(events::parse(events::WORKER_SQS_START_TURN), deadline()).await.unwrap();
    assert_eq!(failures(&response), Vec::<String>::new());

    // THEN the result is in the bucket, whole
    let object = stack
        .s3
        .get_object()
        .bucket(&stack.bucket)
        .key(format!("turns/{TURN}/results/tooluse_kZJMlvQmRJ6eAyJE5GIl7Q"))
        .send()
        .await
        .unwrap();
    assert_eq!(object.body.collect().await.unwrap().into_bytes().len(), logs.len());

    // AND the turn's item holds a pointer and a preview within the
    // reading budget, far under 400 KB
    let turn = stack.turns().load(&TurnId::new(TURN)).await.unwrap().unwrap();
    let state = serde_json::to_string(&turn).unwrap();
    assert!(state.len() < 100_000, "state is {} bytes", state.len());
    assert_eq!(turn.status, TurnStatus::Answered);

    // AND the model saw the first lines, how much there was and how to read on
    let sent = &fake.requests()[1].body["messages"][2]["content"][0]["toolResult"]["content"][0]["text"];
    let sent = sent.as_str().unwrap();
    assert!(sent.starts_with("2025-11-22T08:26:40Z checkout-api ERROR"), "{}", &sent[..80]);
    let end = &sent[sent.len() - 400..];
    assert!(end.contains(&format!("({} bytes, 40000 lines in all)", logs.len())), "{end}");
    assert!(end.contains(r#"read_result {"result": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "start_line": "#), "{end}");
}

#[tokio::test]
async fn a_redelivered_message_calls_no_model_and_sqs_drops_the_repeated_delivery_request() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    let (stack, function) = world(&fake).await;
    let event = events::parse(events::WORKER_SQS_START_TURN);

    // As if the first invocation crashed after its save, before SQS's delete.
    function.handle(event.clone(), deadline()).await.unwrap();
    let response = function.handle(event, deadline()).await.unwrap();

    assert_eq!(failures(&response), Vec::<String>::new());
    assert_eq!(fake.requests().len(), 1, "no second model call");
    let replies = stack.receive_requests().await.unwrap();
    assert_eq!(replies.len(), 1, "the repeated delivery request shares its deduplication id");
}

#[tokio::test]
async fn a_turn_continues_across_invocations_through_the_work_queue() {
    // GIVEN a worker that never has time for a second step in one invocation
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TOOL_USE_REPLY), Scripted::fixture(TEXT_REPLY)]);
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let mut config = function_config(&stack, None);
    config.limits.step_time = Duration::from_secs(86_400);
    let function = WorkerFunction::load(config, clients(&stack, &fake).await).await.unwrap();

    // WHEN the first invocation makes one step
    function.handle(events::parse(events::WORKER_SQS_START_TURN), deadline()).await.unwrap();
    assert_eq!(fake.requests().len(), 1);
    let continuation = stack.receive_work().await.unwrap();
    assert_eq!(continuation.len(), 1);
    assert!(
        matches!(tests::decode_work(&continuation[0]), assistant_core::WorkMessage::Continue(ref c) if c.after_step == 1)
    );

    // THEN the next invocation, fed the continuation from the queue, finishes
    let queue_arn = "arn:aws:sqs:us-east-1:123456789012:work.fifo";
    let response = function.handle(sqs_event(&continuation, queue_arn), deadline()).await.unwrap();
    assert_eq!(failures(&response), Vec::<String>::new());
    assert_eq!(fake.requests().len(), 2, "the saved step was not repeated");
    let turn = stack.turns().load(&TurnId::new(TURN)).await.unwrap().unwrap();
    assert_eq!((turn.status, turn.steps), (TurnStatus::Answered, 2));
    assert_eq!(stack.receive_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_warm_worker_reads_its_configuration_again_and_keeps_the_last_good_one_when_it_breaks() {
    // GIVEN a warm worker that assembles itself anew once an invocation is
    // done (every five minutes in production; here after each one)
    let fake = FakeBedrock::start().await;
    fake.answer_with(|_| Scripted::fixture(TEXT_REPLY));
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    let function = WorkerFunction::load(function_config(&stack, None), clients(&stack, &fake).await)
        .await
        .unwrap()
        .reassembling_after(Duration::ZERO);
    let question = |n: u32| question_as(&format!("Ev0RELOAD{n}"));
    let system_prompt = |n: usize| fake.requests()[n].body["system"].to_string();

    // WHEN the team uploads a new system prompt while it runs
    function.handle(question(1), deadline()).await.unwrap();
    stack.put("config/prompts/payments.md", "You are the payments team's on-call assistant.").await;
    stack.put(worker_config::DEFAULT_CONFIG_KEY, r#"{"system_prompt_key": "config/prompts/payments.md"}"#).await;
    function.handle(question(2), deadline()).await.unwrap();
    function.handle(question(3), deadline()).await.unwrap();

    // THEN the question after the next assembly gets it, without a restart
    assert!(!system_prompt(1).contains("payments team"), "assembled before the upload");
    assert!(system_prompt(2).contains("payments team"), "{}", system_prompt(2));

    // AND a configuration broken later leaves the worker as it was
    stack.put(worker_config::DEFAULT_CONFIG_KEY, r#"{"tool_polcy": []}"#).await;
    function.handle(question(4), deadline()).await.unwrap();
    let response = function.handle(question(5), deadline()).await.unwrap();
    assert_eq!(failures(&response), Vec::<String>::new());
    assert!(system_prompt(4).contains("payments team"), "the last good configuration");
    assert_eq!(fake.requests().len(), 5, "every question answered");
}

#[tokio::test]
async fn a_cold_worker_builds_the_queues_and_the_models_clients_only_when_a_call_needs_them() {
    let fake = FakeBedrock::start().await;
    fake.answer_with(|_| Scripted::fixture(TEXT_REPLY));
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    let ready = clients(&stack, &fake).await;
    // The queues' client as the worker's start makes it; the model's, at
    // the fake, made the same way.
    let started = worker::AwsClients::new(&ready.aws, ready.dynamodb.clone());
    let model = ready.bedrock.get().clone();
    let lazy = Clients { sqs: started.sqs.clone(), bedrock: adapters_aws::Later::new(move || model), ..ready };

    // GIVEN a cold worker whose first event continues a turn no longer stored
    let gone = assistant_core::messages::Continuation {
        turn_id: TurnId::new("T061EG9R6-Ev0GONE0001"),
        thread: assistant_core::ThreadRef {
            team: slack::TeamId::new("T061EG9R6"),
            channel: slack::ChannelId::new("C0LAN2Q65"),
            thread_ts: slack::Ts::new("1763800000.000100"),
        },
        after_step: 1,
        waits: 0,
    };
    let mut event = events::parse(events::WORKER_SQS_START_TURN);
    event["Records"][0]["body"] = assistant_core::WorkMessage::Continue(gone).encode().into();

    // WHEN it handles it: THEN it needed neither client, and built neither
    let (function, response) = tests::cold_start(function_config(&stack, None), lazy.clone(), event).await;
    assert_eq!(failures(&response), Vec::<String>::new());
    assert!(!lazy.sqs.is_built(), "nothing sent, no message held");
    assert!(!lazy.bedrock.is_built(), "no model asked");

    // AND a question then builds both where it first needs them, and is answered
    let response = function.handle(question_as("Ev0LATER001"), deadline()).await.unwrap();
    assert_eq!(failures(&response), Vec::<String>::new());
    assert!(lazy.bedrock.is_built() && lazy.sqs.is_built(), "the model asked, the answer sent for delivery");
    assert_eq!(fake.requests().len(), 1);
    let delivered = stack.receive_requests().await.expect("the reply queue");
    assert!(
        matches!(delivered[..], [ReplyMessage::Deliver { .. }]),
        "the answer, on the reply queue through the client built for it: {delivered:?}"
    );
}

/// The event file's question, as the event `event_id` (a new turn each).
fn question_as(event_id: &str) -> serde_json::Value {
    let mut event = events::parse(events::WORKER_SQS_START_TURN);
    let body = event["Records"][0]["body"].as_str().unwrap().replace("Ev0LAN670R", event_id);
    event["Records"][0]["body"] = body.into();
    event
}

/// A new question as the work queue carries it.
fn asked(event_id: &str, channel: &str, thread_ts: &str, text: &str) -> serde_json::Value {
    let mut event = events::parse(events::WORKER_SQS_START_TURN);
    let body = json!({"v": 1, "kind": "start_turn", "event_id": event_id,
        "thread": {"team": "T061EG9R6", "channel": channel, "thread_ts": thread_ts},
        "message_ts": thread_ts, "user": "U061F7AUR", "text": format!("<@U0LAN0Z89> {text}"), "bot_user": "U0LAN0Z89"});
    event["Records"][0]["body"] = body.to_string().into();
    event
}

#[tokio::test]
async fn a_channel_recalls_its_past_incidents_never_another_channels_and_forgets_a_thread_on_request() {
    let fake = FakeBedrock::start().await;
    let (_stack, function) = world(&fake).await;
    let handle = |event: serde_json::Value| async {
        let response = function.handle(event, deadline()).await.unwrap();
        assert_eq!(failures(&response), Vec::<String>::new(), "{response}");
    };
    let recall = || Scripted::tool_calls(&[("tooluse_recall", "recall", json!({"query": "checkout-api 502"}))]);
    let tool_result = |n: usize| fake.requests()[n].body["messages"].as_array().unwrap().last().unwrap().to_string();

    // GIVEN an incident answered in one channel, its question carrying a token
    fake.script([Scripted::text("The checkout-api 502s came from an exhausted database connection pool.")]);
    handle(asked(
        "Ev0MEM0001",
        "C0LAN2Q65",
        "1763800000.000100",
        "why is checkout-api failing? xoxb-123456789012-abcdefghijklmnop",
    ))
    .await;

    // WHEN a later question in another thread of the channel recalls
    fake.script([recall(), Scripted::text("Last time it was the pool.")]);
    handle(asked("Ev0MEM0002", "C0LAN2Q65", "1763800500.000100", "checkout-api 502s again?")).await;
    // THEN the model reads the incident, marked as history, the token redacted
    let found = tool_result(2);
    assert!(found.contains("exhausted database connection pool") && found.contains("HISTORY"), "{found}");
    assert!(found.contains("why is checkout-api failing?") && !found.contains("xoxb-123456789012"), "{found}");

    // WHEN the same is asked in another channel, THEN nothing is found there
    fake.script([recall(), Scripted::text("Nothing before.")]);
    handle(asked("Ev0MEM0003", "C0OTHER001", "1763800600.000100", "checkout-api 502s?")).await;
    let found = tool_result(4);
    assert!(found.contains("Nothing in this channel's history") && !found.contains("connection pool"), "{found}");

    // WHEN someone in the first thread asks the bot to forget it
    fake.script([
        Scripted::tool_calls(&[("tooluse_forget", "forget_thread", json!({}))]),
        Scripted::text("Forgotten."),
    ]);
    handle(asked("Ev0MEM0004", "C0LAN2Q65", "1763800000.000100", "please forget this thread")).await;
    assert!(tool_result(6).contains("Forgotten: 1 record"), "{}", tool_result(6));

    // THEN a recall in the channel finds the other thread's answer, not the forgotten one
    fake.script([recall(), Scripted::text("Only the second time.")]);
    handle(asked("Ev0MEM0005", "C0LAN2Q65", "1763800900.000100", "checkout-api 502s, any history?")).await;
    let found = tool_result(8);
    assert!(found.contains("Last time it was the pool.") && !found.contains("exhausted database"), "{found}");
}

#[tokio::test]
async fn read_channel_reads_a_listed_channel_through_slack_and_refuses_any_other() {
    // GIVEN a deployment that lets the bot read its incidents channel, and
    // Slack's newest-first history of it (a join and a bot post among them)
    let fake = FakeBedrock::start().await;
    fake.script([
        Scripted::tool_calls(&[
            ("tooluse_inc", "read_channel", json!({"channel": "C0INCIDENT1", "messages": 10})),
            ("tooluse_hr", "read_channel", json!({"channel": "C0PAYROLL01"})),
        ]),
        Scripted::text("The incidents channel says deploy 42 was rolled back."),
    ]);
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    slack.default_reply(
        "conversations.history",
        r#"{"ok": true, "has_more": true, "messages": [
            {"type": "message", "user": "U0SRE", "text": "rolled back deploy 42", "ts": "1763800300.000100"},
            {"type": "message", "subtype": "channel_join", "user": "U0NEW", "text": "<@U0NEW> has joined", "ts": "1763800200.000100"},
            {"type": "message", "bot_id": "B0PAGER", "subtype": "bot_message", "text": "ALARM checkout-5xx", "ts": "1763800100.000100"}
        ]}"#,
    );
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    stack
        .put("config/assistant.json", r#"{"slack_tools": {"read_channels": ["C0INCIDENT*"], "max_messages": 20}, "tool_policy": [{"channels": "C0LAN2Q65", "tools": ["read_channel"]}]}"#)
        .await;
    let function =
        WorkerFunction::load(function_config(&stack, Some(&slack)), clients(&stack, &fake).await).await.unwrap();

    // WHEN the model reads the incidents channel and a payroll channel
    let response = function.handle(events::parse(events::WORKER_SQS_START_TURN), deadline()).await.unwrap();
    assert_eq!(failures(&response), Vec::<String>::new());

    // THEN Slack was asked for the listed channel only, and the model read it oldest first
    let asked = slack.calls("conversations.history");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!((asked[0].form["channel"].as_str(), asked[0].form["limit"].as_str()), ("C0INCIDENT1", "10"));
    let results = fake.requests()[1].body["messages"].as_array().unwrap().last().unwrap().to_string();
    let (alarm, rollback) =
        (results.find("ALARM checkout-5xx").unwrap(), results.find("rolled back deploy 42").unwrap());
    assert!(alarm < rollback && !results.contains("has joined"), "{results}");
    assert!(results.contains("C0PAYROLL01 is not a channel this bot may read"), "{results}");
}

/// The stack's clients with every AWS call through a proxy that counts
/// them (Bedrock's still at the fake).
async fn counted_clients(stack: &Stack, fake: &FakeBedrock) -> (tests::fault_proxy::FaultProxy, Clients) {
    use tests::fault_proxy::{FaultProxy, Plan, Upstream};
    let proxy = FaultProxy::start(Upstream::Aws, &tests::env_from_test_command("AWS_ENDPOINT_URL"), Plan::none()).await;
    let aws = tests::Role::Worker
        .config(&tests::config_through(proxy.url(), 3, adapters_aws::config::worker_timeouts()).await);
    let counted = Clients {
        dynamodb: aws_sdk_dynamodb::Client::new(&aws),
        sqs: aws_sdk_sqs::Client::new(&aws).into(),
        // The calls signed by hand (the bucket's among them) as well.
        aws: aws.clone(),
        ..clients(stack, fake).await
    };
    (proxy, counted)
}

/// The every-question channels published for the ingress, as stored.
async fn published(stack: &Stack) -> Option<String> {
    let table = adapters_aws::dynamodb::DynamoRecords::new(stack.dynamodb.clone(), &stack.table);
    let parts = table.parts(RESPONSE_MODES_PARTITION, RESPONSE_MODES_SORT_KEY).await.unwrap();
    parts.into_iter().find(|(sort_key, _)| sort_key == RESPONSE_MODES_SORT_KEY).map(|(_, globs)| globs)
}

#[tokio::test]
async fn a_cold_worker_starts_from_the_configuration_kept_in_the_table_and_reads_the_bucket_once_it_is_old() {
    use worker_config::DEFAULT_CONFIG_KEY;
    use worker_config::kept::{FRESH_FOR_SECS, KeptConfiguration, ReadConfiguration};
    let fake = FakeBedrock::start().await;
    fake.answer_with(|_| Scripted::fixture(TEXT_REPLY));
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    let (proxy, counted) = counted_clients(&stack, &fake).await;
    let question = |n: u32| question_as(&format!("Ev0KEPT{n:03}"));
    let system_prompt = |n: usize| fake.requests()[n].body["system"].to_string();
    stack.put("config/prompts/a.md", "You are assistant A.").await;
    stack.put("config/prompts/b.md", "You are assistant B.").await;
    let config_a = r#"{"system_prompt_key": "config/prompts/a.md"}"#;

    // GIVEN a copy of configuration A kept six minutes ago, and B in the bucket
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    let records = adapters_aws::dynamodb::DynamoRecords::new(stack.dynamodb.clone(), &stack.table);
    let copies = KeptConfiguration::new(std::sync::Arc::new(records), DEFAULT_CONFIG_KEY);
    let old = ReadConfiguration { bytes: Some(config_a.as_bytes().to_vec()), read_at: now - FRESH_FOR_SECS - 60 };
    copies.keep(&old).await.unwrap();
    stack.put(DEFAULT_CONFIG_KEY, r#"{"system_prompt_key": "config/prompts/b.md"}"#).await;

    // WHEN a worker starts cold: the copy is too old, the bucket is read
    let (_, response) = tests::cold_start(function_config(&stack, None), counted.clone(), question(1)).await;
    assert_eq!(failures(&response), Vec::<String>::new());
    assert!(system_prompt(0).contains("assistant B"), "{}", system_prompt(0));
    assert_eq!(proxy.calls_of("S3 GET"), 2, "the configuration and the prompt it names, from the bucket");
    // (and what the ingress reads of it is published: B answers no channel's every question)
    assert_eq!(published(&stack).await, Some("[]".to_owned()), "published by the worker that read the bucket");
    let table = adapters_aws::dynamodb::DynamoRecords::new(stack.dynamodb.clone(), &stack.table);
    table.delete_part(RESPONSE_MODES_PARTITION, RESPONSE_MODES_SORT_KEY).await.unwrap();

    // AND B was kept: the bucket changes back to A, and the next cold
    // worker starts from the kept B, read as its first turns would be
    // (a new question has none), without reading the configuration from
    // the bucket
    stack.put(DEFAULT_CONFIG_KEY, config_a).await;
    let (cold, response) = tests::cold_start(function_config(&stack, None), counted.clone(), question(2)).await;
    assert_eq!(failures(&response), Vec::<String>::new());
    assert!(system_prompt(1).contains("assistant B"), "the kept copy, five minutes at most behind the bucket");
    assert_eq!(proxy.calls_of("S3 GET"), 3, "only the prompt B names");
    // (publishing nothing: the worker that kept the copy published what it says)
    assert_eq!(published(&stack).await, None, "a start from the kept copy writes no every-question channels");

    // AND that worker reads the bucket when its copy is five minutes old
    // (and publishes what it read)
    let cold = cold.reassembling_after(Duration::ZERO);
    cold.handle(question(3), deadline()).await.unwrap();
    cold.handle(question(4), deadline()).await.unwrap();
    assert!(system_prompt(3).contains("assistant A"), "{}", system_prompt(3));
    cold.settle().await;
    assert_eq!(published(&stack).await, Some("[]".to_owned()), "published by the re-assembly that read the bucket");

    // AND a kept copy that no longer reads (kept by a release that read
    // it: none is kept that does not) is passed over for the bucket
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    stack.put("config/prompts/a.md", "You are assistant A.").await;
    stack.put(DEFAULT_CONFIG_KEY, config_a).await;
    let records = adapters_aws::dynamodb::DynamoRecords::new(stack.dynamodb.clone(), &stack.table);
    let broken = json!({"object": DEFAULT_CONFIG_KEY, "read_at": now - 10, "text": r#"{"tool_polcy": []}"#});
    let key = worker_config::kept::record_key();
    assistant_core::store::put_versioned(&records, &key, 0, broken.to_string(), now + 3_600).await.unwrap();
    let (_, response) =
        tests::cold_start(function_config(&stack, None), clients(&stack, &fake).await, question(5)).await;
    assert_eq!(failures(&response), Vec::<String>::new());
    assert!(system_prompt(4).contains("assistant A"), "{}", system_prompt(4));
}

#[tokio::test]
async fn a_start_with_no_event_reads_the_kept_configuration_alone_and_the_first_event_reads_only_its_turns() {
    use worker_config::kept::{KeptConfiguration, ReadConfiguration};
    let fake = FakeBedrock::start().await;
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    let records = adapters_aws::dynamodb::DynamoRecords::new(stack.dynamodb.clone(), &stack.table);
    let copies = KeptConfiguration::new(std::sync::Arc::new(records), worker_config::DEFAULT_CONFIG_KEY);
    let kept = ReadConfiguration { bytes: Some(br#"{"docs_prefix": "runbooks/"}"#.to_vec()), read_at: 1_000 };
    copies.keep(&kept).await.unwrap();
    let (proxy, clients) = counted_clients(&stack, &fake).await;
    let arrival = worker::Arrival::new(&clients.dynamodb, &clients.sqs, &function_config(&stack, None));

    // A start before any event (provisioned concurrency): after the grace,
    // the assembly reads the kept record alone, and every later ask gets it
    let found = arrival.kept_configuration(Duration::from_millis(20)).await;
    assert_eq!(copies.fresh(found.as_ref(), 1_001), Some(kept));
    assert_eq!(proxy.calls_of("DynamoDB_20120810.GetItem"), 1);
    assert_eq!(arrival.kept_configuration(Duration::ZERO).await, found);

    // The first event then reads its turns only: a health check reads nothing
    arrival.prepare(&serde_json::from_value(events::parse(events::SCHEDULED_HEALTH_CHECK)).unwrap()).await;
    assert_eq!(proxy.calls(), 1, "nothing more was read");
}

#[tokio::test]
async fn a_stream_slack_asks_to_wait_for_is_not_waited_for_and_the_answer_goes_the_post_once_way() {
    // GIVEN Slack answering the stream's start with a 429 (a second's wait)
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    let slack = FakeSlack::start().await;
    slack.script("chat.startStream", [SlackReply::RateLimited { retry_after_secs: 1 }]);
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let function =
        WorkerFunction::load(function_config(&stack, Some(&slack)), clients(&stack, &fake).await).await.unwrap();

    // WHEN the worker answers a question
    let response = function.handle(events::parse(events::WORKER_SQS_START_TURN), deadline()).await.unwrap();
    assert_eq!(failures(&response), Vec::<String>::new());

    // THEN it asked for the stream once and did not wait to ask again: the
    // worker is free for the next question, and the answer is delivered
    // the post-once way
    assert_eq!(slack.calls("chat.startStream").len(), 1, "a stream's calls are never retried in place");
    assert!(slack.calls("chat.appendStream").is_empty());
    let replies = stack.receive_replies().await.unwrap();
    assert!(
        replies.iter().any(|reply| matches!(reply, assistant_core::messages::ReplyMessage::Deliver { .. })),
        "{replies:?}"
    );
}
