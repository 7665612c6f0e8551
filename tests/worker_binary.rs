//! The real `worker` binary under the Lambda Runtime Interface Emulator, fed
//! the SQS event file in `tests/events/`, the approval sweep and the
//! scheduled health event, with
//! its Bedrock client pointed at the fake Converse server through the SDK's
//! own `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, and its Slack client at the fake
//! Web API through `SLACK_API_BASE_URL`.

use adapters_aws::dynamodb::DynamoTimers;
use assistant_core::messages::ReplyMessage;
use assistant_core::ports::{ApprovalTimer, ApprovalTimers};
use assistant_core::{ThreadRef, TurnId, WorkMessage};
use tests::fake_bedrock::{FakeBedrock, Scripted, TEXT_REPLY};
use tests::fake_slack::{CONVERSATIONS_INFO, CONVERSATIONS_REPLIES, FakeSlack};
use tests::lambda::{LambdaUnderRie, Launch};
use tests::{Stack, emulator_config, events};

#[tokio::test]
async fn the_binary_answers_a_queued_turn_and_its_health_check() {
    answers_a_queued_turn_and_its_health_check(false).await;
}

/// The same, from the binary linked as it ships (static, packed
/// relocations, name lookups kept to glibc's built-in modules).
#[tokio::test]
async fn the_shipped_binary_answers_a_queued_turn_and_its_health_check() {
    answers_a_queued_turn_and_its_health_check(true).await;
}

async fn answers_a_queued_turn_and_its_health_check(shipped: bool) {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.replies", CONVERSATIONS_REPLIES);
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let env = tests::worker_env(&stack, fake.url(), slack.url());
    let lambda = LambdaUnderRie::start("worker", Launch { env, shipped, ..Default::default() }).unwrap();

    let response = lambda.invoke(&events::parse(events::WORKER_SQS_START_TURN)).await.unwrap();
    assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}\n{}", lambda.logs());
    assert_eq!(fake.requests()[0].model_id, "us.anthropic.claude-sonnet-4-20250514-v1:0");
    let replies = stack.receive_requests().await.unwrap();
    assert!(matches!(replies[..], [ReplyMessage::Deliver { .. }]), "{replies:?}");

    // The settled turn's metrics, as CloudWatch reads them from the
    // function's output: one Embedded Metric Format record, whose token
    // figures are what the fake model reported.
    let records = lambda.emf_records();
    let turns: Vec<&serde_json::Value> = records.iter().filter(|r| r.get("Turns").is_some()).collect();
    assert_eq!(turns.len(), 1, "{records:?}");
    let record = turns[0];
    let directive = &record["_aws"]["CloudWatchMetrics"][0];
    assert_eq!(directive["Namespace"], "SlackAssistant");
    assert_eq!(directive["Dimensions"], serde_json::json!([["Function", "Outcome"], ["Function", "Limit"]]));
    let names: Vec<&str> =
        directive["Metrics"].as_array().unwrap().iter().map(|m| m["Name"].as_str().unwrap()).collect();
    for name in [
        "Turns",
        "Steps",
        "ToolCalls",
        "ToolErrors",
        "LimitHits",
        "InputTokens",
        "OutputTokens",
        "CacheReadTokens",
        "CacheWriteTokens",
        "TimeToFirstStatusMs",
        "TimeToFirstTextMs",
        "TimeToAnswerMs",
        "EstimatedCostUsd",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
        assert!(record[name].is_number(), "{name} has a value: {record}");
    }
    assert_eq!((record["Function"].as_str(), record["Outcome"].as_str()), (Some("worker"), Some("answered")));
    assert_eq!(record["Limit"], "none");
    assert_eq!(record["InputTokens"], 1250.0);
    assert_eq!(record["OutputTokens"], 42.0);
    assert_eq!(record["CacheReadTokens"], 1024.0);
    assert_eq!(record["CacheWriteTokens"], 0.0);
    assert_eq!(record["Steps"], 1.0);
    let sonnet = (1250.0 * 3.0 + 42.0 * 15.0 + 1024.0 * 0.3) / 1e6;
    assert!(record["EstimatedCostUsd"].as_f64().unwrap() > sonnet, "the model's part and AWS's: {record}");
    assert_eq!(record["turn_id"], "T061EG9R6-Ev0LAN670R");

    // The approval sweep: a deadline long past, in the table, becomes a
    // timeout on the work queue, once.
    let timers = DynamoTimers::new(stack.dynamodb.clone(), &stack.table);
    let timer = ApprovalTimer {
        due_at: 1_763_800_000,
        turn_id: TurnId::new("T061EG9R6-Ev0WAITING1"),
        thread: ThreadRef {
            team: slack::TeamId::new("T061EG9R6"),
            channel: slack::ChannelId::new("C0LAN2Q65"),
            thread_ts: slack::Ts::new("1763799000.000050"),
        },
        tool_use_id: "tooluse_restart".into(),
    };
    timers.set(&timer).await.unwrap();
    let later = ApprovalTimer { due_at: 4_000_000_000, tool_use_id: "tooluse_later".into(), ..timer.clone() };
    timers.set(&later).await.unwrap();
    let swept = lambda.invoke(&events::parse(events::WORKER_APPROVAL_SWEEP)).await.unwrap();
    assert_eq!(swept, serde_json::json!({"swept": 1, "scheduled": 0}), "{}", lambda.logs());
    let work = stack.receive_work().await.unwrap();
    assert!(
        matches!(tests::decode_work(&work[0]), WorkMessage::ApprovalTimeout(ref t) if t.tool_use_id == "tooluse_restart"),
        "{work:?}"
    );
    let again = lambda.invoke(&events::parse(events::WORKER_APPROVAL_SWEEP)).await.unwrap();
    assert_eq!(again, serde_json::json!({"swept": 0, "scheduled": 0}), "the due deadline is gone; the later one waits");
    assert_eq!(timers.due(4_000_000_000, 10).await.unwrap(), [later]);

    let health = lambda.invoke(&events::parse(events::SCHEDULED_HEALTH_CHECK)).await.unwrap();
    assert_eq!(health["status"], "ok", "{health}");
    // The report is logged, and its metric says it is not degraded.
    assert!(lambda.logs().contains("health: ok"), "{}", lambda.logs());
    let degraded: Vec<f64> =
        lambda.emf_records().iter().filter_map(|record| record["HealthDegraded"].as_f64()).collect();
    assert_eq!(degraded, [0.0]);
    assert!(lambda.logs().contains("turn started"), "{}", lambda.logs());
    assert_eq!(slack.calls("conversations.replies").len(), 1, "read the thread");
    assert_eq!(slack.calls("conversations.info").len(), 1, "read the channel");
    assert!(!lambda.logs().contains("xoxb-test-token"), "the token never reaches the logs");
}

#[tokio::test]
async fn a_worker_whose_configuration_is_broken_answers_on_the_defaults_and_says_why() {
    // GIVEN an assistant configuration with a misspelt field, and no good
    // one kept (tests/config_fallback.rs: with one kept, that is served)
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    let slack = FakeSlack::start().await;
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    stack.put("config/assistant.json", r#"{"tool_polcy": []}"#).await;
    let env = tests::worker_env(&stack, fake.url(), slack.url());
    let lambda = LambdaUnderRie::start("worker", Launch { env, ..Default::default() }).unwrap();

    // WHEN a turn arrives
    let response = lambda.invoke(&events::parse(events::WORKER_SQS_START_TURN)).await.unwrap();

    // THEN the binary starts on the defaults and answers it (nothing goes
    // back to the queue, nothing towards the dead-letter queue), the log
    // says which object is broken and why, and so does the health check
    assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}\n{}", lambda.logs());
    assert_eq!(fake.requests().len(), 1);
    let logs = lambda.logs();
    assert!(!logs.contains("cannot start"), "{logs}");
    assert!(
        logs.contains("the assistant configuration cannot be used: config/assistant.json: tool_polcy: unknown field `tool_polcy` (did you mean `tool_policy`?)"),
        "{logs}"
    );
    let health = lambda.invoke(&events::parse(events::SCHEDULED_HEALTH_CHECK)).await.unwrap();
    assert_eq!(health["status"], "degraded", "{health}");
    assert!(health["checks"][5]["error"].as_str().unwrap().contains("Serving the built-in defaults"), "{health}");
}

/// A cold worker under the emulator whose AWS calls go through a proxy
/// that counts them, and the work queue's messages as its event.
struct Counted {
    stack: Stack,
    proxy: tests::fault_proxy::FaultProxy,
    lambda: LambdaUnderRie,
}

impl Counted {
    async fn start(bedrock_url: &str, slack_url: &str) -> Self {
        use tests::fault_proxy::{FaultProxy, Plan, Upstream};
        let stack = Stack::new(&emulator_config().await).await.unwrap();
        let proxy =
            FaultProxy::start(Upstream::Aws, &tests::env_from_test_command("AWS_ENDPOINT_URL"), Plan::none()).await;
        let mut env = tests::worker_env(&stack, bedrock_url, slack_url);
        env.push(("AWS_ENDPOINT_URL", proxy.url().to_owned()));
        let lambda = LambdaUnderRie::start("worker", Launch { env, ..Default::default() }).unwrap();
        Self { stack, proxy, lambda }
    }

    /// `messages` sent to the work queue, received, and handed to the worker.
    async fn invoke(&self, messages: &[WorkMessage]) -> serde_json::Value {
        let queue = adapters_aws::sqs::SqsQueue::new(self.stack.sqs.clone(), &self.stack.work_queue.queue);
        for message in messages {
            assistant_core::ports::WorkQueue::enqueue(&queue, message).await.unwrap();
        }
        let work = self.stack.receive_work().await.unwrap();
        assert_eq!(work.len(), messages.len());
        let event = tests::sqs_event(&work, &tests::queue_arn(&self.stack.work_queue.queue));
        let response = self.lambda.invoke(&event).await.unwrap();
        assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}\n{}", self.lambda.logs());
        response
    }
}

#[tokio::test]
async fn a_cold_worker_reads_the_turns_its_first_messages_name_once_beside_its_start_and_holds_no_quick_work() {
    use assistant_core::ports::TurnStore;
    use assistant_core::turn::TurnStatus;
    use worker_config::kept::{KeptConfiguration, ReadConfiguration};
    // GIVEN a settled turn in the table, a copy of the (default)
    // configuration another worker kept a minute ago, and a cold worker
    let world = Counted::start("http://127.0.0.1:9", "http://127.0.0.1:9/api").await;
    let mut settled = testkit::store_contract::new_turn("Ev0SETTLED1");
    settled.settle("It was the pool.".into(), TurnStatus::Answered, 1_763_800_002);
    world.stack.turns().create(&mut settled).await.unwrap();
    let records = adapters_aws::dynamodb::DynamoRecords::new(world.stack.dynamodb.clone(), &world.stack.table);
    let copies = KeptConfiguration::new(std::sync::Arc::new(records), worker_config::DEFAULT_CONFIG_KEY);
    let a_minute_ago = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() - 60;
    copies.keep(&ReadConfiguration { bytes: None, read_at: a_minute_ago as i64 }).await.unwrap();

    // WHEN its first invocation continues that turn and one never stored
    let continuation = |turn_id: &TurnId| {
        WorkMessage::Continue(assistant_core::messages::Continuation {
            turn_id: turn_id.clone(),
            thread: settled.thread.clone(),
            after_step: 1,
            waits: 0,
        })
    };
    world.invoke(&[continuation(&settled.id), continuation(&TurnId::new("T061EG9R6-Ev0NEVER01"))]).await;

    // THEN both are handled; both turns and the kept configuration were
    // read in one request, and the worker took the turns read ahead instead
    // of reading them again (the two other reads are the settled turn's
    // delivery record, which the worker reads itself, and its stream
    // record: a redelivery of a settled turn closes a stream an earlier
    // invocation may have left, 9d4a471); the configuration was not read
    // from the bucket
    assert_eq!(world.lambda.logs().matches("message handled").count(), 2, "{}", world.lambda.logs());
    assert_eq!(world.proxy.calls_of("DynamoDB_20120810.BatchGetItem"), 1);
    assert_eq!(world.proxy.calls_of("DynamoDB_20120810.GetItem"), 2);
    assert_eq!(world.proxy.calls_of("S3 GET"), 0);
    // AND work done within a second held nothing
    assert_eq!(world.proxy.calls_of("AmazonSQS.ChangeMessageVisibility"), 0);
    // AND the start logged its assembly in one line: where the
    // configuration came from and what the worker was made of
    let logs = world.lambda.logs();
    let assembled: Vec<serde_json::Value> = logs
        .lines()
        .filter(|line| line.contains("worker assembled"))
        .map(|line| serde_json::from_str(line).expect("a JSON log line"))
        .collect();
    assert_eq!(assembled.len(), 1, "{logs}");
    let fields = &assembled[0]["fields"];
    assert_eq!(
        (&fields["kept"], &fields["serving"], &fields["prompt"]),
        (&serde_json::json!(true), &serde_json::json!("Current"), &serde_json::json!("bundled")),
        "{logs}"
    );
    assert_eq!(
        (&fields["tool_policy"], &fields["http_tools"], &fields["mcp_servers"]),
        (&serde_json::json!(false), &serde_json::json!(0), &serde_json::json!(0)),
        "{logs}"
    );
    assert!(fields["tools"].as_u64().is_some_and(|tools| tools > 0), "{logs}");
    assert_eq!(
        (&fields["config"], &fields["docs"]),
        (&serde_json::json!(worker_config::DEFAULT_CONFIG_KEY), &serde_json::json!("docs/")),
        "{logs}"
    );
    assert!(!logs.contains("assistant configured") && !logs.contains("no tool_policy"), "{logs}");
}

#[tokio::test]
async fn work_that_outlives_a_second_holds_its_message_once() {
    // GIVEN a model that writes its answer slowly (three pieces, 600 ms apart)
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    fake.cut_deltas_at(&[10, 20]);
    fake.pause_between_deltas(std::time::Duration::from_millis(600));
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.replies", CONVERSATIONS_REPLIES);
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let world = Counted::start(fake.url(), slack.url()).await;

    // WHEN a question arrives
    let started = std::time::Instant::now();
    let question = events::parse(events::WORKER_SQS_START_TURN)["Records"][0]["body"].as_str().unwrap().to_owned();
    world.invoke(&[WorkMessage::decode(&question).unwrap()]).await;

    // THEN it is answered, and its message was held once, a second in
    assert!(started.elapsed() > std::time::Duration::from_millis(1_200), "{:?}", started.elapsed());
    assert!(world.lambda.logs().contains("message handled"), "{}", world.lambda.logs());
    assert_eq!(world.proxy.calls_of("AmazonSQS.ChangeMessageVisibility"), 1);
    assert!(!world.lambda.logs().contains("not held"), "{}", world.lambda.logs());
}

#[tokio::test]
async fn the_binary_opens_an_incident_thread_for_the_cloudwatch_alarm_event_file_once() {
    // GIVEN a deployment whose alerts[] sends checkout alarms to the on-call channel
    let fake = FakeBedrock::start().await;
    let slack = FakeSlack::start().await;
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    stack
        .put(
            "config/assistant.json",
            r#"{"alerts": [{"source": "cloudwatch", "match": {"alarm_name": "checkout-*"}, "channel": "C0ONCALL01"}]}"#,
        )
        .await;
    let env = tests::worker_env(&stack, fake.url(), slack.url());
    let lambda = LambdaUnderRie::start("worker", Launch { env, ..Default::default() }).unwrap();

    // WHEN EventBridge's message arrives, and SQS delivers it again
    let event = events::parse(events::WORKER_SQS_CLOUDWATCH_ALARM);
    for _ in 0..2 {
        let response = lambda.invoke(&event).await.unwrap();
        assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}\n{}", lambda.logs());
    }

    // THEN one root in the channel, and one investigation queued in its thread
    let roots: Vec<_> = slack.posted().into_iter().filter(|m| m.channel == "C0ONCALL01").collect();
    assert_eq!(roots.len(), 1, "{roots:#?}");
    assert!(roots[0].text.contains("*checkout-api-5xx*") && roots[0].text.contains("CloudWatch"), "{}", roots[0].text);
    let queued: Vec<WorkMessage> = stack.receive_work().await.unwrap().iter().map(tests::decode_work).collect();
    assert!(
        matches!(&queued[..], [WorkMessage::StartTurn(request)] if request.thread.thread_ts.as_str() == roots[0].ts),
        "{queued:#?}"
    );
}
