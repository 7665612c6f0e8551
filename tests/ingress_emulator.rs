//! The ingress handler, with the real AWS SDK, against the local AWS
//! emulator: retries enqueued under one deduplication id, FIFO keys, a
//! failed enqueue and Slack's retry, what
//! starts nothing, approvals and the health check. Events come from
//! `tests/events/`; the handler's clock is pinned to when they were signed.

use aws_sdk_sqs::types::MessageSystemAttributeName as Attribute;
use ingress::{Config, Ingress};
use serde_json::Value;
use slack::SigningSecret;
use testkit::clock::ManualClock;
use tests::events::{self, SIGNED_AT, with_body, with_header};
use tests::{Stack, decode_work, emulator_config};

struct World {
    stack: Stack,
    ingress: Ingress,
}

async fn world() -> World {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.expect("emulator resources");
    let ingress = ingress_for(&aws, &stack.table, &stack.work_queue.queue);
    World { stack, ingress }
}

fn ingress_for(aws: &aws_config::SdkConfig, table: &str, queue_url: &str) -> Ingress {
    ingress_at(aws, table, queue_url, SIGNED_AT + 2)
}

/// The ingress with its clock at `now` (Unix seconds).
fn ingress_at(aws: &aws_config::SdkConfig, table: &str, queue_url: &str, now: i64) -> Ingress {
    let config = Config {
        signing_secret: SigningSecret::new(events::signing_secret()).unwrap(),
        turns_table: table.to_owned(),
        work_queue_url: queue_url.to_owned(),
        alertmanager_token: None,
        pagerduty_secret: None,
        home: slack::Home::Workspace,
        bot_token: None,
        slack_api_base_url: adapters_slack::web::DEFAULT_BASE_URL.to_owned(),
    };
    Ingress::new(config, &tests::Role::Ingress.config(aws), std::sync::Arc::new(ManualClock::at(now)))
}

async fn status_of(ingress: &Ingress, event: &Value) -> i64 {
    let response = ingress.handle(event.clone()).await.expect("an HTTP response");
    response["statusCode"].as_i64().expect("statusCode")
}

#[tokio::test]
async fn four_deliveries_of_one_event_enqueue_it_once_and_none_is_lost() {
    // GIVEN a signed app mention and three Slack retries of it, all at once
    let World { stack, ingress } = world().await;
    let first = events::parse(events::APP_MENTION);
    let retry =
        |n: &str| with_header(&with_header(&first, "x-slack-retry-num", n), "x-slack-retry-reason", "http_timeout");
    let (a, b, c, d) = (first.clone(), retry("1"), retry("2"), retry("3"));

    // WHEN ingress handles all four
    let statuses = tokio::join!(
        status_of(&ingress, &a),
        status_of(&ingress, &b),
        status_of(&ingress, &c),
        status_of(&ingress, &d)
    );

    // THEN every delivery is acknowledged, each enqueues (a retry may follow
    // a claim whose enqueue never happened), and SQS keeps one message: the
    // event id is the deduplication id
    assert_eq!([statuses.0, statuses.1, statuses.2, statuses.3], [200; 4]);
    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1, "one message for four deliveries");
    assert_eq!(decode_work(&work[0]).dedupe_id(), "Ev0LAN670R");
    assert_eq!(stack.table_keys().await.unwrap().iter().filter(|k| k.starts_with("EVENT#")).count(), 1);
}

#[tokio::test]
async fn work_is_grouped_by_thread_and_deduplicated_by_event_id_in_sqs() {
    let World { stack, ingress } = world().await;
    assert_eq!(status_of(&ingress, &events::parse(events::APP_MENTION)).await, 200);

    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1);
    let attributes = work[0].attributes().expect("system attributes");
    assert_eq!(attributes.get(&Attribute::MessageGroupId).map(String::as_str), Some("C0LAN2Q65:1763800000.000100"));
    assert_eq!(attributes.get(&Attribute::MessageDeduplicationId).map(String::as_str), Some("Ev0LAN670R"));
    let body: Value = serde_json::from_str(work[0].body().unwrap()).unwrap();
    assert_eq!((body["v"].as_u64(), body["kind"].as_str()), (Some(1), Some("start_turn")));
}

#[tokio::test]
async fn sqs_drops_a_second_send_of_the_same_event_even_without_the_claim() {
    // GIVEN a second ingress whose claims table knows nothing (a claim lost
    // or expired), sending to the same queue
    let World { stack, ingress } = world().await;
    let aws = emulator_config().await;
    let other_table = tests::unique_name("turns-other");
    adapters_aws::provision::turns_table(&stack.dynamodb, &other_table).await.unwrap();
    let forgetful = ingress_for(&aws, &other_table, &stack.work_queue.queue);

    // WHEN both enqueue the same event
    let mention = events::parse(events::APP_MENTION);
    assert_eq!(status_of(&ingress, &mention).await, 200);
    assert_eq!(status_of(&forgetful, &mention).await, 200);

    // THEN the FIFO deduplication id lets only one through
    assert_eq!(stack.receive_work().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_failed_enqueue_is_500_and_slacks_retry_finds_the_claim_and_starts_the_turn() {
    // GIVEN an ingress whose queue does not exist (SQS fails every send)
    let World { stack, ingress } = world().await;
    let aws = emulator_config().await;
    let missing_queue = format!("{}-missing.fifo", stack.work_queue.queue.trim_end_matches(".fifo"));
    let broken = ingress_for(&aws, &stack.table, &missing_queue);
    let mention = events::parse(events::APP_MENTION);

    // WHEN the first delivery claims the event and fails to enqueue
    assert_eq!(status_of(&broken, &mention).await, 500, "Slack must retry");
    assert!(stack.table_keys().await.unwrap().iter().any(|k| k == "EVENT#T061EG9R6#Ev0LAN670R"), "claim kept");

    // THEN Slack's retry, once SQS works, meets the claim and enqueues the turn
    let retry = with_header(&mention, "x-slack-retry-num", "1");
    assert_eq!(status_of(&ingress, &retry).await, 200);
    assert_eq!(stack.receive_work().await.unwrap().len(), 1);
}

#[tokio::test]
async fn bot_messages_and_bad_signatures_store_and_enqueue_nothing() {
    let World { stack, ingress } = world().await;
    assert_eq!(status_of(&ingress, &events::parse(events::BOT_MESSAGE)).await, 200);
    let own = with_body(&events::parse(events::APP_MENTION), testkit::fixtures::MESSAGE_OWN);
    assert_eq!(status_of(&ingress, &own).await, 200);
    assert_eq!(status_of(&ingress, &events::parse(events::BAD_SIGNATURE)).await, 401);

    assert!(stack.receive_work().await.unwrap().is_empty());
    assert!(stack.table_keys().await.unwrap().is_empty());
}

#[tokio::test]
async fn thread_replies_start_turns_only_in_threads_the_bot_is_in() {
    let World { stack, ingress } = world().await;
    let template = events::parse(events::APP_MENTION);
    let reply = with_body(&template, testkit::fixtures::MESSAGE_THREAD_REPLY);

    // A reply in a thread the bot was never in: acknowledged, nothing kept.
    assert_eq!(status_of(&ingress, &reply).await, 200);
    assert!(stack.receive_work().await.unwrap().is_empty());
    assert!(stack.table_keys().await.unwrap().is_empty());

    // The mention makes it the bot's thread; a new reply there starts a turn.
    assert_eq!(status_of(&ingress, &template).await, 200);
    let second_reply = events::with_body_edit(&reply, "Ev0REPLY001", "Ev0REPLY002");
    assert_eq!(status_of(&ingress, &second_reply).await, 200);

    let work: Vec<_> = stack.receive_work().await.unwrap().iter().map(decode_work).collect();
    let ids: Vec<_> = work.iter().map(|m| m.dedupe_id()).collect();
    assert_eq!(ids, ["Ev0LAN670R", "Ev0REPLY002"]);
    assert_eq!(
        stack.table_keys().await.unwrap(),
        ["EVENT#T061EG9R6#Ev0LAN670R", "EVENT#T061EG9R6#Ev0REPLY002", "THREAD#T061EG9R6#C0LAN2Q65#1763800000.000100"]
    );
}

#[tokio::test]
async fn an_approval_click_in_a_base64_form_body_is_enqueued() {
    let World { stack, ingress } = world().await;
    assert_eq!(status_of(&ingress, &events::parse(events::APPROVAL_CLICK)).await, 200);
    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1);
    let assistant_core::WorkMessage::Approval(click) = decode_work(&work[0]) else { panic!("expected an approval") };
    assert_eq!((click.button.turn_id.as_str(), click.button.tool_use_id.as_str()), ("turn-7f3a", "call-1"));
}

#[tokio::test]
async fn the_health_check_reports_its_table_and_queue() {
    let World { stack, ingress } = world().await;
    let scheduled = events::parse(events::SCHEDULED_HEALTH_CHECK);
    let report = ingress.handle(scheduled.clone()).await.unwrap();
    assert_eq!(report["status"], "ok", "{report}");
    assert_eq!(report["function"], "ingress");
    let names: Vec<_> = report["checks"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["dynamodb", "sqs"]);

    // Without its table the function is degraded, and says why.
    let aws = emulator_config().await;
    let no_table = ingress_for(&aws, "no-such-table", &stack.work_queue.queue);
    let report = no_table.handle(scheduled).await.unwrap();
    assert_eq!(report["status"], "degraded");
    assert_eq!(report["checks"][0]["ok"], false);
    assert!(report["checks"][0]["error"].as_str().unwrap().contains("ResourceNotFoundException"));
    assert_eq!(report["checks"][1]["ok"], true);
    // The health check wrote nothing.
    assert!(stack.table_keys().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_message_naming_no_one_starts_a_turn_once_a_worker_published_its_channel_as_every_question() {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.expect("emulator resources");
    let message = |event_id: &str| {
        let body = testkit::fixtures::MESSAGE_CHANNEL_TOP_LEVEL.replace("Ev0CHAN0001", event_id);
        with_body(&events::parse(events::APP_MENTION), &body)
    };

    // Before any worker published the setting: acknowledged, nothing queued.
    let ingress = ingress_for(&aws, &stack.table, &stack.work_queue.queue);
    assert_eq!(status_of(&ingress, &message("Ev0CHAN0001")).await, 200);
    assert!(stack.receive_work().await.unwrap().is_empty());

    // A worker starts with the channel answering every question.
    let config = r#"{"response_mode": [{"channels": "C0LAN*", "mode": "every_question"}]}"#;
    stack.put(worker_config::DEFAULT_CONFIG_KEY, config).await;
    let (slack, bedrock) =
        (tests::fake_slack::FakeSlack::start().await, tests::fake_bedrock::FakeBedrock::start().await);
    let _functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;

    // An ingress instance reading it (a new one: nothing cached) queues the question in its own thread.
    let ingress = ingress_for(&aws, &stack.table, &stack.work_queue.queue);
    assert_eq!(status_of(&ingress, &message("Ev0CHAN0002")).await, 200);
    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1);
    let assistant_core::WorkMessage::StartTurn(request) = decode_work(&work[0]) else { panic!("a question") };
    assert_eq!((request.thread.channel.as_str(), &request.thread.thread_ts), ("C0LAN2Q65", &request.message_ts));
}
