//! Questions never lost and never doubled under injected faults: about one
//! call in eight from the functions to AWS, Slack and Bedrock fails (a
//! 5xx, throttling, a reset, or applied with its answer lost), Slack
//! retries, and every question is answered exactly once, or told with one
//! apology. Each seed is a different, reproducible set of faults
//! (`tests::soak`).
//!
//! A model that stalls mid-stream: the SDK's timeouts stop at a stream's
//! first response, so the worker's own bound on each read ends the step
//! within the model call's budget (shortened here); SQS retries the step,
//! and the turn ends in the answer, or, when the model stalls every time,
//! in one apology. Nothing waits for ever.

use assistant_core::delivery::Settled;
use assistant_core::ports::DeliveryLog;
use aws_sdk_sqs::types::Message;
use std::time::{Duration, Instant};
use tests::fake_bedrock::{FakeBedrock, Scripted, TEXT_REPLY};
use tests::fake_slack::{CONVERSATIONS_INFO, FakeSlack};
use tests::soak::{Soak, run};
use tests::{Functions, Stack, World, batch_failures, emulator_config, sqs_event};

const QUESTIONS: usize = 24;

async fn soak_at(seed: u64) {
    let report = run(Soak { seed, questions: QUESTIONS, one_in: 8 }).await;
    println!("seed {seed}: {report}");
    assert!(report.faults_injected() > 20, "the proxies injected too few faults to prove anything: {report}");
    report.assert_exactly_once();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_question_is_answered_exactly_once_under_faults_seed_1() {
    soak_at(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_question_is_answered_exactly_once_under_faults_seed_2() {
    soak_at(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_question_is_answered_exactly_once_under_faults_seed_3() {
    soak_at(3).await;
}

// --- A model that stalls mid-stream ----------------------------------------------

/// The model call's budget here, for the worker's 150 s.
const BUDGET: Duration = Duration::from_secs(3);
/// What a step needs besides its model call (the emulator's saves, Slack's
/// stream), generously on a busy machine; far below a stall's forever.
const STEP_OVERHEAD: Duration = Duration::from_secs(10);

/// A [`World`] whose worker's Bedrock client has [`BUDGET`] for a model
/// call, as the worker's has 150 s (`adapters_bedrock::timeout_config`).
async fn world_with_short_model_calls() -> World {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.expect("emulator resources");
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    bedrock.time_calls_to(BUDGET);
    let functions = Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    World { stack, slack, bedrock, functions }
}

/// A reply whose first two deltas come, then nothing, the connection open.
fn stalls() -> Scripted {
    let mut reply: serde_json::Value = serde_json::from_str(TEXT_REPLY).unwrap();
    reply["output"]["message"]["content"] =
        serde_json::json!([{"text": "The pool is exhausted because a report query holds its connections"}]);
    Scripted::StallsAfter { reply, deltas: 2 }
}

/// One delivery of `work` through the worker: the messages it failed, and
/// how long it took. A worker still at it long after a step's time fails
/// the test rather than hang it.
async fn deliver(world: &World, work: &[Message]) -> (Vec<String>, Duration) {
    let started = Instant::now();
    let response = tokio::time::timeout(BUDGET + STEP_OVERHEAD * 3, world.work(work))
        .await
        .expect("the worker returns: a stalled model never holds it");
    (batch_failures(&response), started.elapsed())
}

#[tokio::test]
async fn a_model_that_stalls_mid_stream_fails_its_step_within_the_budget_and_the_retry_answers() {
    // GIVEN a model that stalls after two deltas, then answers when asked again
    let world = world_with_short_model_calls().await;
    world.bedrock.script([stalls(), Scripted::text("Restart the **pool**.")]);
    world.bedrock.cut_deltas_at(&[12, 40]);

    // WHEN a person asks
    let work = world.slack_sends(testkit::fixtures::MESSAGE_IM).await;
    let (failed, took) = deliver(&world, &work).await;

    // THEN the step ends within the model call's budget, for SQS to retry
    assert_eq!(failed.len(), 1, "retried");
    assert!(took >= BUDGET && took < BUDGET + STEP_OVERHEAD, "{took:?}");
    let cut_short = world.slack.posted();
    assert!(cut_short.len() == 1 && cut_short[0].streaming, "what came before the stall was streamed: {cut_short:?}");

    // WHEN SQS delivers it again
    let (failed, _) = deliver(&world, &work).await;
    assert_eq!(failed, Vec::<String>::new());
    world.stack.acknowledge(&world.stack.work_queue.queue, &work).await.unwrap();
    world.functions.round(&world.stack).await;

    // THEN the retried step answers, in the one message the stream began
    let posted = world.slack.posted();
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert_eq!((posted[0].ts.as_str(), posted[0].text.as_str()), (cut_short[0].ts.as_str(), "Restart the **pool**."));
    assert!(!posted[0].streaming);
    assert_eq!(world.bedrock.requests().len(), 2, "one call per delivery");
}

#[tokio::test]
async fn a_model_that_stalls_every_time_ends_in_one_apology_and_nothing_hangs() {
    // GIVEN a model that stalls on every call
    let world = world_with_short_model_calls().await;
    world.bedrock.script([stalls(), stalls(), stalls()]);

    // WHEN a person asks, and SQS delivers the work again and again
    let work = world.slack_sends(testkit::fixtures::MESSAGE_IM).await;
    for delivery in 1..=3 {
        let (failed, took) = deliver(&world, &work).await;

        // THEN each delivery ends within the model call's budget, for a retry
        assert_eq!(failed.len(), 1, "delivery {delivery}");
        assert!(took < BUDGET + STEP_OVERHEAD, "delivery {delivery}: {took:?}");
    }

    // WHEN SQS gives up: the work reaches the dead-letter queue the
    // responder reads
    let dead_letters = tests::queue_arn(&world.stack.work_queue.dead_letter);
    let config = tests::responder_config(&world.stack, world.slack.url(), vec![dead_letters.clone()]);
    let responder = responder::ResponderFunction::new(config, tests::responder_clients(&world.stack));
    let response = responder.handle(sqs_event(&work, &dead_letters)).await.unwrap();
    assert_eq!(batch_failures(&response), Vec::<String>::new(), "{response}");

    // THEN the person has one message, the apology, no longer streaming
    let posted = world.slack.posted();
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert!(posted[0].text.starts_with("Sorry, something went wrong"), "{}", posted[0].text);
    assert!(!posted[0].streaming);
    let turn = tests::decode_work(&work[0]).turn_id().expect("a turn");
    let settled = world.stack.deliveries().load(&turn).await.unwrap().settled;
    assert!(matches!(settled, Some(Settled::Apologized { .. })), "{settled:?}");
}
