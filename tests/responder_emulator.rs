//! The responder handler with the real AWS SDK against the local AWS
//! emulator and the real `reqwest` client against the fake Slack Web API:
//! the deliver event file posts once through redelivery and lost responses,
//! 429s are waited out or retried, refusals fail the turn, and work that
//! SQS moved to a dead-letter queue becomes an apology.

use adapters_aws::provision;
use assistant_core::delivery::Settled;
use assistant_core::ports::DeliveryLog;
use assistant_core::ports::TurnStore;
use assistant_core::store::RecordTurns;
use assistant_core::turn::{Turn, TurnId, TurnStatus};
use responder::ResponderFunction;
use serde_json::{Value, json};
use std::time::Duration;
use testkit::store_contract::new_turn;
use tests::fake_slack::{FakeSlack, SlackReply};
use tests::{Stack, emulator_config, events, sqs_event, unique_name};

const TURN: &str = "T061EG9R6-Ev0LAN670R";
const CHANNEL: &str = "C0LAN2Q65";
const THREAD_TS: &str = "1763800000.000100";
const DELIVER_MESSAGE_ID: &str = "7b0c2a1e-5d6f-4c8e-9a3b-1f2e3d4c5b6a";

struct World {
    stack: Stack,
    slack: FakeSlack,
    function: ResponderFunction,
}

impl World {
    async fn new(dead_letter_queue_arns: Vec<String>) -> Self {
        Self::with_ops_channel(dead_letter_queue_arns, None).await
    }

    /// With `OPS_CHANNEL_ID` set to `ops_channel`.
    async fn with_ops_channel(dead_letter_queue_arns: Vec<String>, ops_channel: Option<&str>) -> Self {
        let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
        let slack = FakeSlack::start().await;
        let mut config = tests::responder_config(&stack, slack.url(), dead_letter_queue_arns);
        config.ops_channel = ops_channel.map(slack::ChannelId::new);
        let clients = tests::responder_clients(&stack);
        let function = ResponderFunction::new(config, clients);
        Self { stack, slack, function }
    }

    /// The turns, written here as the worker would write them.
    fn turns(&self) -> RecordTurns {
        self.stack.turns()
    }

    /// The event files' turn, stored in `status` with `answer`.
    async fn store_turn(&self, status: TurnStatus, answer: Option<&str>) -> Turn {
        let mut turn = new_turn("Ev0LAN670R");
        assert_eq!(turn.id.as_str(), TURN, "the event files name this turn");
        turn.status = status;
        turn.answer = answer.map(str::to_owned);
        self.turns().create(&mut turn).await.unwrap();
        turn
    }

    /// How the turn ended for its thread, as the responder recorded it.
    async fn settled(&self) -> Option<Settled> {
        self.stack.deliveries().load(&TurnId::new(TURN)).await.unwrap().settled
    }

    async fn handle(&self, event: Value) -> Vec<String> {
        tests::batch_failures(&self.function.handle(event).await.unwrap())
    }
}

fn deliver_event() -> Value {
    events::parse(events::RESPONDER_SQS_DELIVER)
}

#[tokio::test]
async fn the_deliver_event_file_posts_the_answer_once_in_its_thread() {
    let world = World::new(vec![]).await;
    world.store_turn(TurnStatus::Answered, Some("## Cause\nThe pool is **exhausted** since the 14:02 deploy.")).await;

    assert_eq!(world.handle(deliver_event()).await, Vec::<String>::new());
    // SQS delivers the same message again (at-least-once).
    assert_eq!(world.handle(deliver_event()).await, Vec::<String>::new());

    let posted = world.slack.posted();
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert_eq!((posted[0].channel.as_str(), posted[0].thread_ts.as_str()), (CHANNEL, THREAD_TS));
    assert_eq!(posted[0].text, "## Cause\nThe pool is **exhausted** since the 14:02 deploy.");
    assert_eq!(posted[0].blocks.as_ref().unwrap()[0]["type"], "markdown");
    assert_eq!(
        posted[0].metadata.as_ref().unwrap()["event_payload"],
        json!({"v": 1, "turn_id": TURN, "key": "answer 1/1"})
    );
    let call = &world.slack.calls("chat.postMessage")[0];
    assert_eq!(call.form["unfurl_links"], "false");
    assert_eq!(call.authorization.as_deref(), Some("Bearer xoxb-test-token"));
    assert_eq!(world.settled().await, Some(Settled::Delivered));
}

/// An answer with a table of numbers and a table of 150 rows.
fn tables_answer() -> String {
    let requests: String = (1..=150).map(|n| format!("| svc-{n} | {n},000 |\n")).collect();
    format!(
        "Latency:\n\n| minute | p99 |\n|---|--:|\n| 10:00 | 120 ms |\n| 10:05 | 4,200 ms |\n| 10:10 | 130 ms |\n\n\
         Requests:\n\n| service | requests |\n|---|--:|\n{requests}\nThe spike was at 10:05."
    )
}

fn block_types(posted: &tests::fake_slack::Posted) -> Vec<String> {
    let blocks = posted.blocks.as_ref().and_then(Value::as_array).cloned().unwrap_or_default();
    blocks.iter().map(|block| block["type"].as_str().unwrap_or_default().to_owned()).collect()
}

#[tokio::test]
async fn a_table_of_numbers_is_posted_with_its_chart_and_a_long_table_as_data_tables_each_with_its_text() {
    // GIVEN an answered turn whose answer has a table of numbers and one of 150 rows
    let world = World::new(vec![]).await;
    world.store_turn(TurnStatus::Answered, Some(&tables_answer())).await;

    // WHEN the responder delivers it
    assert_eq!(world.handle(deliver_event()).await, Vec::<String>::new());

    // THEN Slack receives the table with its line chart beside it, then the long table as two
    // data tables, one a message, and every message's text holds what its blocks show
    let posted = world.slack.posted();
    let kinds: Vec<Vec<String>> = posted.iter().map(block_types).collect();
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    assert_eq!(kinds[0][..4], ["markdown", "table", "data_visualization", "markdown"], "{kinds:?}");
    assert_eq!(kinds[1], ["data_table"], "{kinds:?}");
    assert_eq!(kinds[2][..2], ["data_table", "markdown"], "{kinds:?}");
    let blocks = |n: usize| posted[n].blocks.as_ref().unwrap().as_array().unwrap().clone();
    let chart = &blocks(0)[2];
    assert_eq!(chart["title"], "p99 by minute");
    assert_eq!(chart["chart"]["type"], "line");
    assert_eq!(chart["chart"]["series"][0]["data"][1], json!({"label": "10:05", "value": 4200}));
    assert!(posted[0].text.contains("10:05 | 4,200 ms"), "the chart's text fallback: {}", posted[0].text);
    assert_eq!(blocks(1)[0]["caption"], "service, requests (rows 1–100 of 150)");
    assert_eq!(blocks(2)[0]["rows"].as_array().unwrap().len(), 51, "the header and rows 101 to 150");
    assert_eq!(blocks(2)[0]["rows"][1][1], json!({"type": "raw_number", "value": 101000, "text": "101,000"}));
    assert!(posted[2].text.contains("svc-150 | 150,000"), "{}", posted[2].text);
    assert_eq!(world.settled().await, Some(Settled::Delivered));
}

#[tokio::test]
async fn with_charts_off_the_same_answer_is_a_table_block_and_aligned_code() {
    // GIVEN the same answer in a turn begun with `charts: false`
    let world = World::new(vec![]).await;
    let mut turn = new_turn("Ev0LAN670R");
    turn.status = TurnStatus::Answered;
    turn.answer = Some(tables_answer());
    turn.charts_off = true;
    world.turns().create(&mut turn).await.unwrap();

    // WHEN the responder delivers it
    assert_eq!(world.handle(deliver_event()).await, Vec::<String>::new());

    // THEN no chart and no data table: the table block, and the long table as code
    let posted = world.slack.posted();
    let kinds: Vec<String> = posted.iter().flat_map(block_types).collect();
    assert!(kinds.contains(&"table".to_owned()), "{kinds:?}");
    assert!(!kinds.iter().any(|kind| kind == "data_visualization" || kind == "data_table"), "{kinds:?}");
    let markdown: String = posted
        .iter()
        .flat_map(|p| p.blocks.as_ref().unwrap().as_array().unwrap().clone())
        .filter_map(|block| block["text"].as_str().map(str::to_owned))
        .collect();
    assert!(markdown.contains("```") && markdown.contains("svc-150"), "aligned code");
}

#[tokio::test]
async fn a_post_whose_response_was_lost_is_found_in_the_thread_not_posted_again() {
    // GIVEN Slack posts the message but answers 503
    let world = World::new(vec![]).await;
    world.store_turn(TurnStatus::Answered, Some("Restart the pool.")).await;
    world.slack.script("chat.postMessage", [SlackReply::PostedThenStatus(503)]);

    // WHEN the responder delivers
    assert_eq!(world.handle(deliver_event()).await, Vec::<String>::new());

    // THEN it looked in the thread by metadata, found it, and did not post twice
    assert_eq!(world.slack.posted().len(), 1);
    assert_eq!(world.slack.calls("chat.postMessage").len(), 1, "a 5xx post is not retried blindly");
    let search = world.slack.calls("conversations.replies");
    assert_eq!(search.len(), 1);
    assert_eq!(search[0].form["include_all_metadata"], "true");
    assert_eq!(world.settled().await, Some(Settled::Delivered));
}

#[tokio::test]
async fn a_crash_after_the_post_and_before_its_record_does_not_post_twice_on_redelivery() {
    // GIVEN the post landed, its response was lost, and the invocation
    // ended before it could look (Slack's history failing stands in for
    // the crash: the delivery record still says "attempted")
    let world = World::new(vec![]).await;
    world.store_turn(TurnStatus::Answered, Some("Restart the pool.")).await;
    world.slack.script("chat.postMessage", [SlackReply::PostedThenStatus(503)]);
    world.slack.script("conversations.replies", std::iter::repeat_n(SlackReply::Status(503), 3));
    assert_eq!(world.handle(deliver_event()).await, [DELIVER_MESSAGE_ID], "outcome unknown: SQS retries");

    // WHEN SQS redelivers the message
    assert_eq!(world.handle(deliver_event()).await, Vec::<String>::new());

    // THEN the thread was searched and nothing posted again
    assert_eq!(world.slack.posted().len(), 1);
    assert_eq!(world.slack.calls("chat.postMessage").len(), 1);
    assert_eq!(world.settled().await, Some(Settled::Delivered));
}

#[tokio::test]
async fn a_long_answer_is_its_lead_and_one_file_in_the_thread_after_a_share_whose_answer_was_lost() {
    // GIVEN an answer of many messages, and Slack sharing the file but
    // answering 503
    let world = World::new(vec![]).await;
    let paragraph = format!("{}\n\n", "The pool is exhausted since the deploy. ".repeat(60));
    let answer = format!("## Cause\n\n{}", paragraph.repeat(40));
    world.store_turn(TurnStatus::Answered, Some(&answer)).await;
    world.slack.script("files.completeUploadExternal", [SlackReply::PostedThenStatus(503)]);

    // WHEN the responder delivers (SQS retries the failed message) and SQS
    // delivers it once more
    assert_eq!(world.handle(deliver_event()).await, [DELIVER_MESSAGE_ID], "the share's outcome is unknown");
    assert_eq!(world.handle(deliver_event()).await, Vec::<String>::new());
    assert_eq!(world.handle(deliver_event()).await, Vec::<String>::new());

    // THEN the thread holds the lead and one file, shared once
    let posted = world.slack.posted();
    assert_eq!(posted.len(), 2, "{posted:?}");
    assert!(posted[0].text.starts_with("## Cause") && posted[0].text.contains("answer-Ev0LAN670R.md"));
    assert_eq!(posted[1].files.len(), 1, "the file's message");
    assert_eq!(world.slack.calls("files.completeUploadExternal").len(), 1, "found in the thread, not shared again");
    let upload = &world.slack.calls("files.getUploadURLExternal")[0].form;
    assert_eq!(upload["filename"], "answer-Ev0LAN670R.md");
    let bytes = &world.slack.uploads()[&posted[1].files[0]];
    assert_eq!(String::from_utf8_lossy(bytes), answer, "all of it, as Slack received it");
    assert_eq!(upload["length"], answer.len().to_string());
    assert_eq!(world.settled().await, Some(Settled::Delivered));
}

#[tokio::test]
async fn a_short_rate_limit_is_waited_out_and_a_long_one_retried_by_sqs() {
    let world = World::new(vec![]).await;
    world.store_turn(TurnStatus::Answered, Some("Later.")).await;
    world.slack.script(
        "chat.postMessage",
        [SlackReply::RateLimited { retry_after_secs: 30 }, SlackReply::RateLimited { retry_after_secs: 1 }],
    );

    assert_eq!(world.handle(deliver_event()).await, [DELIVER_MESSAGE_ID], "30 s is SQS's to wait");
    assert!(world.slack.posted().is_empty());
    assert_eq!(world.handle(deliver_event()).await, Vec::<String>::new(), "1 s waited, then posted");
    assert_eq!(world.slack.posted().len(), 1);
    assert_eq!(world.slack.calls("chat.postMessage").len(), 3);
}

#[tokio::test]
async fn a_refusal_ends_the_turn_without_retrying() {
    let world = World::new(vec![]).await;
    world.store_turn(TurnStatus::Answered, Some("Hello.")).await;
    world.slack.script("chat.postMessage", [SlackReply::Json(json!({"ok": false, "error": "not_in_channel"}))]);

    assert_eq!(world.handle(deliver_event()).await, Vec::<String>::new(), "retrying cannot help");
    assert_eq!(world.settled().await, Some(Settled::Refused { code: "not_in_channel".into() }));
    assert_eq!(world.slack.calls("chat.postMessage").len(), 1);
}

#[tokio::test]
async fn a_malformed_reply_is_left_for_the_dead_letter_queue() {
    let world = World::new(vec![]).await;
    let mut event = deliver_event();
    event["Records"][0]["body"] = json!("{\"v\":1,\"kind\":\"teleport\"}");
    assert_eq!(world.handle(event).await, [DELIVER_MESSAGE_ID]);
    assert!(world.slack.calls("chat.postMessage").is_empty());
}

#[tokio::test]
async fn work_moved_to_the_dead_letter_queue_becomes_one_apology_and_a_failed_turn() {
    // Without an ops channel: the apology, and no alert anywhere.
    let posted = dead_letter_apology(None).await;
    assert_eq!(posted.len(), 1, "{posted:?}");

    // With one: the apology, and one alert there naming the reference and
    // linking the thread, however often the dead letter comes.
    let posted = dead_letter_apology(Some("C0OPS")).await;
    assert_eq!(posted.len(), 2, "{posted:?}");
    let alert = &posted[1];
    assert_eq!(alert.channel, "C0OPS");
    assert!(alert.text.contains("dead-letter queue") && alert.text.contains("`Ev0LAN670R`"), "{}", alert.text);
    assert!(alert.text.contains("https://slack.com/archives/C0LAN2Q65/p1763800000000100"), "{}", alert.text);
    assert!(alert.text.contains("<#C0LAN2Q65>"), "{}", alert.text);
}

/// A turn's work moved to its dead-letter queue, handed to the responder
/// twice; what was posted.
async fn dead_letter_apology(ops_channel: Option<&str>) -> Vec<tests::fake_slack::Posted> {
    // GIVEN a turn whose work message SQS gave up on: a queue that moves a
    // message to its dead-letter queue after one receive
    let sqs = aws_sdk_sqs::Client::new(&emulator_config().await);
    let queue = provision::fifo_queue_with_dlq(&sqs, &unique_name("work"), 1, 1).await.unwrap();
    let dead_letter_arn =
        format!("arn:aws:sqs:us-east-1:123456789012:{}", queue.dead_letter.rsplit('/').next().unwrap());
    let world = World::with_ops_channel(vec![dead_letter_arn.clone()], ops_channel).await;
    world.store_turn(TurnStatus::Running, None).await;
    let start = events::parse(events::WORKER_SQS_START_TURN)["Records"][0]["body"].as_str().unwrap().to_owned();
    sqs.send_message()
        .queue_url(&queue.queue)
        .message_body(&start)
        .message_group_id(format!("{CHANNEL}:{THREAD_TS}"))
        .message_deduplication_id("Ev0LAN670R")
        .send()
        .await
        .unwrap();
    assert_eq!(world.stack.receive(&queue.queue).await.unwrap().len(), 1, "received, never deleted");
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert!(world.stack.receive(&queue.queue).await.unwrap().is_empty(), "moved on");
    let dead = world.stack.receive(&queue.dead_letter).await.unwrap();
    assert_eq!(dead.len(), 1);

    // WHEN the responder gets it from the dead-letter queue, twice
    assert_eq!(world.handle(sqs_event(&dead, &dead_letter_arn)).await, Vec::<String>::new());
    assert_eq!(world.handle(sqs_event(&dead, &dead_letter_arn)).await, Vec::<String>::new());

    // THEN one apology with the reference is in the thread, recorded as the turn's end
    let posted = world.slack.posted();
    assert_eq!((posted[0].channel.as_str(), posted[0].thread_ts.as_str()), (CHANNEL, THREAD_TS));
    assert!(posted[0].text.starts_with("Sorry, something went wrong"), "{}", posted[0].text);
    assert!(posted[0].text.contains("`Ev0LAN670R`"), "{}", posted[0].text);
    assert_eq!(world.settled().await, Some(Settled::Apologized { reference: "Ev0LAN670R".into() }));
    posted
}

#[tokio::test]
async fn the_dead_letter_event_file_apologizes_and_unreadable_dead_letters_are_dropped() {
    let world = World::new(vec![events::WORK_DEAD_LETTER_QUEUE_ARN.to_owned()]).await;
    world.store_turn(TurnStatus::Running, None).await;
    assert_eq!(world.handle(events::parse(events::RESPONDER_SQS_DEAD_LETTER)).await, Vec::<String>::new());
    assert_eq!(world.slack.posted().len(), 1);

    let mut unreadable = events::parse(events::RESPONDER_SQS_DEAD_LETTER);
    unreadable["Records"][0]["body"] = json!("not json");
    assert_eq!(world.handle(unreadable).await, Vec::<String>::new(), "dropped: it cannot go further");
    assert_eq!(world.slack.posted().len(), 1);
}
