//! What a crash leaves behind is cleaned up, with the real `worker` binary
//! killed (SIGKILL) at the two points where a crash leaves something in
//! the thread, then the message redelivered to a fresh worker process:
//!
//! - during `chat.startStream`: Slack made the empty streaming message,
//!   and its `ts` never reached the stream record. The redelivery finds
//!   it (the bot's own empty message without metadata, after the
//!   question) and deletes it before the answer: the thread holds one
//!   answer, nothing streaming.
//! - during an approved call: the call ran, its result was never saved,
//!   and the prompt still showed Approve and Deny. The redelivery that
//!   settles the unknown outcome makes the prompt its record (who
//!   approved, outcome unknown, no buttons), and a later click on the
//!   buttons still on someone's screen is answered, to them alone.
//!
//! Slack (or the team's API) applies the call, then holds its answer
//! while the test kills the function's process.

use adapters_aws::sqs::SqsQueue;
use assistant_core::WorkMessage;
use assistant_core::ports::WorkQueue;
use aws_sdk_sqs::types::Message;
use axum::Router;
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tests::fake_bedrock::{FakeBedrock, Scripted, TEXT_REPLY};
use tests::fake_slack::{CONVERSATIONS_INFO, FakeSlack, SlackReply};
use tests::lambda::{LambdaUnderRie, Launch};
use tests::local_server::LocalServer;
use tests::{Stack, batch_failures, emulator_config, events, queue_arn, sqs_event};

/// Longer than any test waits: the answer never comes before the kill.
const HELD: Duration = Duration::from_secs(120);

/// Waits until `done` holds (the function reached the call), at most 30 s.
async fn until(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(30), "waited 30 s for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Hands `work` to a worker process, and kills that process with SIGKILL
/// once `reached` holds, before it answers.
async fn kill_when(lambda: &LambdaUnderRie, work: &Value, what: &str, reached: impl Fn() -> bool) {
    tokio::select! {
        response = lambda.invoke(work) => panic!("the worker answered before {what}: {response:?}\n{}", lambda.logs()),
        () = until(what, reached) => {}
    }
    let pid = lambda.function_pid().expect("the function's process");
    let killed = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().expect("kill");
    assert!(killed.success());
}

/// The work queue's messages now visible, as one SQS event.
async fn work_event(stack: &Stack) -> (Vec<Message>, Value) {
    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1, "{work:?}");
    let event = sqs_event(&work, &queue_arn(&stack.work_queue.queue));
    (work, event)
}

/// A fresh worker process handles the redelivered `event` to the end.
async fn redeliver(stack: &Stack, env: Vec<(&'static str, String)>, work: &[Message], event: &Value) {
    let fresh = LambdaUnderRie::start("worker", Launch { env, ..Default::default() }).unwrap();
    let response = fresh.invoke(event).await.unwrap();
    assert_eq!(batch_failures(&response), Vec::<String>::new(), "{response}\n{}", fresh.logs());
    stack.acknowledge(&stack.work_queue.queue, work).await.unwrap();
}

#[tokio::test]
async fn a_worker_killed_during_chat_start_stream_leaves_no_empty_stream_above_the_one_answer() {
    // GIVEN Slack, which starts the stream and then holds its answer
    let bedrock = FakeBedrock::start().await;
    bedrock.script([Scripted::fixture(TEXT_REPLY), Scripted::fixture(TEXT_REPLY)]);
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    slack.script("chat.startStream", [SlackReply::AppliedThenHeld(HELD)]);
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let env = tests::worker_env(&stack, bedrock.url(), slack.url());
    let question = events::parse(events::WORKER_SQS_START_TURN)["Records"][0]["body"].as_str().unwrap().to_owned();
    SqsQueue::new(stack.sqs.clone(), &stack.work_queue.queue)
        .enqueue(&WorkMessage::decode(&question).unwrap())
        .await
        .unwrap();
    let (work, event) = work_event(&stack).await;

    // WHEN the worker process is killed while chat.startStream waits
    let first = LambdaUnderRie::start("worker", Launch { env: env.clone(), ..Default::default() }).unwrap();
    kill_when(&first, &event, "chat.startStream", || !slack.calls("chat.startStream").is_empty()).await;
    drop(first);
    let orphan = slack.posted();
    assert!(matches!(&orphan[..], [message] if message.streaming && message.text.is_empty()), "{orphan:?}");

    // AND SQS delivers the message again, to a fresh process, and the
    // responder delivers what it asked for
    redeliver(&stack, env, &work, &event).await;
    let responder = responder::ResponderFunction::new(
        tests::responder_config(&stack, slack.url(), vec![]),
        tests::responder_clients(&stack),
    );
    let replies = stack.receive(&stack.reply_queue.queue).await.unwrap();
    let response = responder.handle(sqs_event(&replies, &queue_arn(&stack.reply_queue.queue))).await.unwrap();
    assert_eq!(batch_failures(&response), Vec::<String>::new(), "{response}");

    // THEN the empty stream was deleted before the answer was posted, no
    // second stream was started, and the thread holds the one answer
    let posted = slack.posted();
    assert_eq!(posted.len(), 1, "{posted:#?}");
    assert!(!posted[0].streaming && posted[0].ts != orphan[0].ts, "{posted:#?}");
    assert!(posted[0].text.contains("connection pool"), "{}", posted[0].text);
    assert_eq!(slack.calls("chat.startStream").len(), 1);
    let deleted: Vec<String> = slack.calls("chat.delete").iter().map(|call| call.form["ts"].clone()).collect();
    assert_eq!(deleted, [orphan[0].ts.clone()]);
    let answered_at = slack.calls("chat.postMessage")[0].at;
    assert!(slack.calls("chat.delete")[0].at < answered_at, "deleted before the answer");
}

const RESTART_REPLY: &str = include_str!("fixtures/bedrock/converse-tool-use-restart.json");
const APPROVALS_CONFIG: &str = include_str!("fixtures/approvals/assistant.json");

/// The team's API: records each request, then holds its answer.
async fn team_api_that_hangs() -> (LocalServer, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = seen.clone();
    let app = Router::new().route(
        "/restart/{service}",
        post(move |request: axum::extract::Request| {
            let seen = record.clone();
            async move {
                seen.lock().unwrap().push(request.uri().path().to_owned());
                tokio::time::sleep(HELD).await;
                axum::Json(json!({"restarted": true}))
            }
        }),
    );
    (LocalServer::start(app).await, seen)
}

#[tokio::test]
async fn a_worker_killed_during_an_approved_call_leaves_a_prompt_that_says_so_and_answers_late_clicks() {
    // GIVEN a turn waiting for approval of a POST to the team's API, which
    // records the call and then holds its answer
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let (api, seen) = team_api_that_hangs().await;
    let port = api.base_url.rsplit(':').next().unwrap();
    stack.put("config/assistant.json", &APPROVALS_CONFIG.replace("{{PORT}}", port)).await;
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    bedrock.script([Scripted::fixture(RESTART_REPLY), Scripted::text("I can't tell whether it restarted: check it.")]);
    let functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    assert_eq!(functions.ingress.handle(events::parse(events::APP_MENTION)).await.unwrap()["statusCode"], 200);
    functions.round(&stack).await;
    let prompt = slack.posted().into_iter().find(|p| p.text.contains("I propose running")).expect("a prompt");

    // WHEN the requester approves, and the worker process is killed while
    // the approved call is under way
    assert_eq!(functions.ingress.handle(prompt.click(0, "U061F7AUR")).await.unwrap()["statusCode"], 200);
    let (work, event) = work_event(&stack).await;
    let env = tests::worker_env(&stack, bedrock.url(), slack.url());
    let first = LambdaUnderRie::start("worker", Launch { env: env.clone(), ..Default::default() }).unwrap();
    kill_when(&first, &event, "the approved call", || !seen.lock().unwrap().is_empty()).await;
    drop(first);
    let live = slack.posted().into_iter().find(|p| p.ts == prompt.ts).unwrap();
    assert_eq!(live.blocks, prompt.blocks, "the prompt still shows its buttons");

    // AND SQS delivers the click again, to a fresh process
    redeliver(&stack, env, &work, &event).await;
    functions.round(&stack).await;

    // THEN the call was made once; the prompt is the record: who approved,
    // that its outcome is unknown, and no buttons
    assert_eq!(seen.lock().unwrap().len(), 1, "never made again");
    let settled = slack.posted().into_iter().find(|p| p.ts == prompt.ts).unwrap();
    let said = "✅ <@U061F7AUR> approved running `restart_service`. It was started, but whether it completed is";
    assert!(settled.text.starts_with(said), "{}", settled.text);
    let blocks = settled.blocks.as_ref().and_then(Value::as_array).unwrap();
    assert!(blocks.iter().all(|block| block["type"] != "actions"), "{blocks:?}");
    // (and the answer after it, in the one streamed message)
    let posted = slack.posted();
    assert_eq!(posted.len(), 2, "{posted:#?}");
    assert!(posted.iter().all(|p| !p.streaming));
    assert!(posted[0].text.ends_with("I can't tell whether it restarted: check it."), "{}", posted[0].text);

    // WHEN someone clicks Deny on the buttons still on their screen
    assert_eq!(functions.ingress.handle(prompt.click(1, "U0BYSTANDER")).await.unwrap()["statusCode"], 200);
    functions.round(&stack).await;

    // THEN nothing runs, and only they are told who approved it
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert_eq!(
        slack.ephemerals(),
        [(
            "U0BYSTANDER".to_owned(),
            "This prompt was already answered: <@U061F7AUR> approved running `restart_service`. Nothing more runs \
             from its buttons."
                .to_owned()
        )]
    );
    assert_eq!(slack.posted().len(), 2);
}
