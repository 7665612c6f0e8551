//! A bad assistant configuration never takes the bot down: the worker
//! handler with the real AWS SDK against the local AWS emulator, the real
//! Bedrock client against the fake Converse server and the real Slack
//! client against the fake Slack (where the ops channel's alerts land).
//! A good configuration is kept; a misspelt upload leaves every question
//! answered with it, the health check degraded naming the object and the
//! field, and one message in the ops channel; the fixed upload is served
//! at the next re-read. Then the hostile versions: not UTF-8, huge,
//! deleted; and a first upload that is broken, with nothing kept.

use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tests::fake_bedrock::{FakeBedrock, Scripted, TEXT_REPLY};
use tests::fake_slack::FakeSlack;
use tests::worker_clients as clients;
use tests::{Stack, emulator_config, events};
use worker::{Config, WorkerFunction};
use worker_config::DEFAULT_CONFIG_KEY;

const GOOD: &str = include_str!("fixtures/config-fallback/good.json");
const MISSPELT: &str = include_str!("fixtures/config-fallback/misspelt.json");
const FIXED: &str = include_str!("fixtures/config-fallback/fixed.json");
const OPS: &str = "C0OPS0ALERTS";

/// The function's configuration, alerting `OPS` through the fake Slack.
fn function_config(stack: &Stack, slack: &FakeSlack) -> Config {
    Config { ops_channel: Some(slack::ChannelId::new(OPS)), ..tests::worker_config(stack, slack.url()) }
}

/// Ten minutes from now, in Unix milliseconds.
fn deadline() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 600_000
}

/// The event file's question, as the event `event_id` (a new turn each).
fn question_as(event_id: &str) -> Value {
    let mut event = events::parse(events::WORKER_SQS_START_TURN);
    let body = event["Records"][0]["body"].as_str().unwrap().replace("Ev0LAN670R", event_id);
    event["Records"][0]["body"] = body.into();
    event
}

/// Asks `function` a new question, which must be answered (no record
/// back to the queue, none towards the dead-letter queue).
async fn answered(function: &WorkerFunction, event_id: &str) {
    let response = function.handle(question_as(event_id), deadline()).await.unwrap();
    assert_eq!(tests::batch_failures(&response), Vec::<String>::new(), "{event_id}: {response}");
}

async fn health(function: &WorkerFunction) -> Value {
    function.handle(events::parse(events::SCHEDULED_HEALTH_CHECK), deadline()).await.unwrap()
}

/// The health report's `config` check.
fn config_check(report: &Value) -> Value {
    let checks = report["checks"].as_array().expect("checks");
    checks.iter().find(|check| check["name"] == "config").cloned().expect("a config check")
}

/// What the ops channel was told.
fn ops_messages(slack: &FakeSlack) -> Vec<String> {
    slack.posted().into_iter().filter(|posted| posted.channel == OPS).map(|posted| posted.text).collect()
}

#[tokio::test]
async fn a_misspelt_upload_leaves_the_last_good_configuration_answering_says_so_once_and_the_fix_is_served() {
    // GIVEN a worker serving a good configuration (kept in the table as it
    // starts), which reads the bucket again after every invocation (every
    // five minutes in production)
    let fake = FakeBedrock::start().await;
    fake.answer_with(|_| Scripted::fixture(TEXT_REPLY));
    let slack = FakeSlack::start().await;
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    stack.put("config/prompts/payments.md", "You are the payments team's on-call assistant.").await;
    stack.put("config/prompts/payments-v2.md", "You are the payments team's on-call assistant, version two.").await;
    stack.put(DEFAULT_CONFIG_KEY, GOOD).await;
    let warm = WorkerFunction::load(function_config(&stack, &slack), clients(&stack, &fake).await)
        .await
        .expect("started")
        .reassembling_after(Duration::ZERO);
    let system_prompt = |n: usize| fake.requests()[n].body["system"].to_string();
    answered(&warm, "Ev0FALLBACK1").await;
    assert!(system_prompt(0).contains("on-call assistant.\""), "{}", system_prompt(0));
    assert_eq!(config_check(&health(&warm).await)["ok"], true);

    // WHEN the team uploads a version with a misspelt field
    stack.put(DEFAULT_CONFIG_KEY, MISSPELT).await;
    answered(&warm, "Ev0FALLBACK2").await; // read again after this one
    answered(&warm, "Ev0FALLBACK3").await;

    // THEN questions are still answered, with the last good configuration
    assert!(system_prompt(2).contains("on-call assistant.\""), "{}", system_prompt(2));

    // AND the health check is degraded, naming the object, the field and
    // what is served
    let report = health(&warm).await;
    assert_eq!(report["status"], "degraded", "{report}");
    let check = config_check(&report);
    assert_eq!(check["ok"], false, "{report}");
    let error = check["error"].as_str().unwrap();
    assert!(
        error.starts_with(
            "config/assistant.json: tool_polcy: unknown field `tool_polcy` (did you mean `tool_policy`?). Serving the last configuration that parsed (read from the bucket at "
        ),
        "{error}"
    );

    // AND a worker starting from the bucket now starts too, from the kept
    // copy, saying the same
    let starting = WorkerFunction::load(function_config(&stack, &slack), clients(&stack, &fake).await)
        .await
        .expect("started, not stopped by the configuration");
    answered(&starting, "Ev0FALLBACK4").await;
    assert!(system_prompt(3).contains("on-call assistant.\""), "{}", system_prompt(3));
    let report = health(&starting).await;
    assert_eq!(report["status"], "degraded", "{report}");
    assert!(config_check(&report)["error"].as_str().unwrap().contains("tool_polcy"), "{report}");

    // AND the ops channel heard of it once, from whichever worker found it
    // first: not again for every re-read, worker or health check
    let told = ops_messages(&slack);
    assert_eq!(told.len(), 1, "{told:#?}");
    assert!(told[0].contains("config/assistant.json: tool_polcy: unknown field `tool_polcy`"), "{}", told[0]);
    assert!(told[0].contains("Serving the last configuration that parsed"), "{}", told[0]);

    // WHEN the fix is uploaded
    stack.put(DEFAULT_CONFIG_KEY, FIXED).await;
    answered(&warm, "Ev0FALLBACK5").await; // read again after this one
    answered(&warm, "Ev0FALLBACK6").await;

    // THEN the next re-read serves it, and the health check is ok again
    assert!(system_prompt(5).contains("version two"), "{}", system_prompt(5));
    let report = health(&warm).await;
    assert_eq!(
        (report["status"].as_str(), config_check(&report)["ok"].as_bool()),
        (Some("ok"), Some(true)),
        "{report}"
    );
    assert_eq!(ops_messages(&slack).len(), 1, "nothing more to tell");

    // AND it was kept: a cold worker starts from it
    warm.settle().await;
    let (_, response) =
        tests::cold_start(function_config(&stack, &slack), clients(&stack, &fake).await, question_as("Ev0FALLBACK7"))
            .await;
    assert_eq!(tests::batch_failures(&response), Vec::<String>::new(), "{response}");
    assert!(system_prompt(6).contains("version two"), "{}", system_prompt(6));
}

#[tokio::test]
async fn text_that_is_not_utf8_a_huge_object_and_a_deleted_one_each_leave_the_bot_answering() {
    // GIVEN a worker serving a good configuration, re-reading after every invocation
    let fake = FakeBedrock::start().await;
    fake.answer_with(|_| Scripted::fixture(TEXT_REPLY));
    let slack = FakeSlack::start().await;
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    stack.put("config/prompts/payments.md", "You are the payments team's on-call assistant.").await;
    stack.put(DEFAULT_CONFIG_KEY, GOOD).await;
    let warm = WorkerFunction::load(function_config(&stack, &slack), clients(&stack, &fake).await)
        .await
        .expect("started")
        .reassembling_after(Duration::ZERO);
    let upload = |body: Vec<u8>| {
        let s3 = stack.s3.put_object().bucket(&stack.bucket).key(DEFAULT_CONFIG_KEY);
        async move {
            s3.body(body.into()).send().await.expect("uploaded");
        }
    };
    let huge = format!(r#"{{"docs_prefix": "{}"}}"#, "x".repeat(2 * 1024 * 1024)).into_bytes();
    let not_utf8 = [&GOOD.as_bytes()[..GOOD.len() - 3], b"\xff\xfe}"].concat();
    let versions: [(&str, Option<Vec<u8>>, &str); 3] = [
        ("not UTF-8", Some(not_utf8), "not UTF-8 text (the bytes from offset"),
        ("huge", Some(huge), "bytes, over the 307200 an assistant configuration may be"),
        ("deleted", None, "the object is gone from the bucket (upload `{}` to serve the defaults)"),
    ];
    for (n, (what, body, says)) in versions.into_iter().enumerate() {
        // WHEN the object becomes this
        match body {
            Some(body) => upload(body).await,
            None => {
                stack.s3.delete_object().bucket(&stack.bucket).key(DEFAULT_CONFIG_KEY).send().await.unwrap();
            }
        }
        answered(&warm, &format!("Ev0HOSTILE{n}A")).await; // read again after this one
        answered(&warm, &format!("Ev0HOSTILE{n}B")).await;

        // THEN the last good configuration answers, and the check says why
        let last = fake.requests().len() - 1;
        let system = fake.requests()[last].body["system"].to_string();
        assert!(system.contains("payments team"), "{what}: {system}");
        let report = health(&warm).await;
        let error = config_check(&report)["error"].as_str().unwrap_or_default().to_owned();
        assert!(error.starts_with("config/assistant.json: ") && error.contains(says), "{what}: {report}");
        assert_eq!(ops_messages(&slack).len(), n + 1, "{what}: once each: {:#?}", ops_messages(&slack));
    }

    // AND a worker starting from the bucket with the object gone starts
    // from the kept copy
    let starting =
        WorkerFunction::load(function_config(&stack, &slack), clients(&stack, &fake).await).await.expect("started");
    answered(&starting, "Ev0HOSTILE9").await;
    assert!(fake.requests().last().unwrap().body["system"].to_string().contains("payments team"));
    assert_eq!(health(&starting).await["status"], "degraded");
    assert_eq!(ops_messages(&slack).len(), 3, "the deletion was told already");
}

#[tokio::test]
async fn a_cold_worker_falls_back_to_a_kept_copy_older_than_five_minutes() {
    use worker_config::kept::{FRESH_FOR_SECS, KeptConfiguration, ReadConfiguration};
    // GIVEN a copy of the good configuration kept an hour ago, and the
    // misspelt one uploaded since
    let fake = FakeBedrock::start().await;
    fake.answer_with(|_| Scripted::fixture(TEXT_REPLY));
    let slack = FakeSlack::start().await;
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    stack.put("config/prompts/payments.md", "You are the payments team's on-call assistant.").await;
    let records = adapters_aws::dynamodb::DynamoRecords::new(stack.dynamodb.clone(), &stack.table);
    let copies = KeptConfiguration::new(std::sync::Arc::new(records), DEFAULT_CONFIG_KEY);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    let an_hour_ago = now - 12 * FRESH_FOR_SECS;
    copies.keep(&ReadConfiguration { bytes: Some(GOOD.as_bytes().to_vec()), read_at: an_hour_ago }).await.unwrap();
    stack.put(DEFAULT_CONFIG_KEY, MISSPELT).await;

    // WHEN a worker starts cold: the copy is too old to start from without
    // reading the bucket, and the bucket's does not parse
    let (cold, response) =
        tests::cold_start(function_config(&stack, &slack), clients(&stack, &fake).await, question_as("Ev0STALE1"))
            .await;

    // THEN it answers with the copy, and says which it serves
    assert_eq!(tests::batch_failures(&response), Vec::<String>::new(), "{response}");
    assert!(fake.requests()[0].body["system"].to_string().contains("payments team"));
    let error = config_check(&health(&cold).await)["error"].as_str().unwrap().to_owned();
    let read_at = assistant_core::clock::iso8601_utc(an_hour_ago);
    assert!(
        error.contains(&format!("Serving the last configuration that parsed (read from the bucket at {read_at})")),
        "{error}"
    );
    assert_eq!(ops_messages(&slack).len(), 1);
}

#[tokio::test]
async fn a_first_upload_that_is_broken_with_nothing_kept_serves_the_defaults_and_says_so() {
    // GIVEN a new deployment whose first upload does not parse
    let fake = FakeBedrock::start().await;
    fake.answer_with(|_| Scripted::fixture(TEXT_REPLY));
    let slack = FakeSlack::start().await;
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    stack.put(DEFAULT_CONFIG_KEY, r#"{"tool_policy": [{"channels": "*", "tools": ["*"]}],}"#).await;

    // WHEN a worker starts
    let (cold, response) =
        tests::cold_start(function_config(&stack, &slack), clients(&stack, &fake).await, question_as("Ev0DEFAULTS1"))
            .await;

    // THEN it answers on the defaults: the bundled prompt, the read-only built-in tools
    assert_eq!(tests::batch_failures(&response), Vec::<String>::new(), "{response}");
    let request = &fake.requests()[0].body;
    let advertised: Vec<&str> = request["toolConfig"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["toolSpec"]["name"].as_str())
        .collect();
    assert!(advertised.contains(&"search_docs") && !advertised.is_empty(), "{advertised:?}");
    let report = health(&cold).await;
    let error = config_check(&report)["error"].as_str().unwrap().to_owned();
    assert!(error.contains(".: not JSON: trailing comma at line 1 column"), "{error}");
    assert!(error.contains("Serving the built-in defaults"), "{error}");
    let told = ops_messages(&slack);
    assert_eq!(told.len(), 1, "{told:#?}");

    // AND nothing broken was kept: a fixed upload is read by the next cold worker
    stack.put(DEFAULT_CONFIG_KEY, r#"{"home_channels": ["C0ONCALL*"]}"#).await;
    let (fixed, _) =
        tests::cold_start(function_config(&stack, &slack), clients(&stack, &fake).await, question_as("Ev0DEFAULTS2"))
            .await;
    assert_eq!(health(&fixed).await["status"], "ok");
}
