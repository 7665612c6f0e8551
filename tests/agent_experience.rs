//! Slack's agent experience end to end, through the real handlers (signed
//! Slack requests into the ingress, the worker and responder on SQS
//! batches), the local AWS emulator between them, the fake Slack speaking
//! the streaming methods and the fake Bedrock speaking ConverseStream:
//! opening the DM, a DM question streamed in its own thread, a channel
//! answer streamed to the person who asked, streaming refused, a secret
//! cut across the model's deltas, a worker redelivered mid-stream, and a
//! 👎 on an answer.

use assistant_core::WorkMessage;
use assistant_core::delivery::Settled;
use assistant_core::feedback::{FeedbackButton, Rating};
use assistant_core::ports::DeliveryLog;
use assistant_core::turn::TurnId;
use serde_json::Value;
use tests::events;
use tests::fake_bedrock::{Scripted, TEXT_REPLY};
use tests::fake_slack::{FakeSlack, Posted, SlackReply};
use tests::{World, decode_work, sqs_event};

const REPLY_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-reply.fifo";

/// What these tests do with a [`World`] beyond sending and working.
trait Drive {
    async fn respond(&self);
    async fn answer(&self, body: &str) -> WorkMessage;
    fn sent(&self, method: &str) -> String;
}

impl Drive for World {
    /// Everything on the reply queue through the responder, twice (SQS
    /// delivers at least once).
    async fn respond(&self) {
        let replies = self.stack.receive(&self.stack.reply_queue.queue).await.unwrap();
        for _ in 0..2 {
            let response = self.functions.responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)).await.unwrap();
            assert_eq!(tests::batch_failures(&response), Vec::<String>::new(), "{response}");
        }
        // As Lambda's poller does: the thread's FIFO group moves on.
        self.stack.acknowledge(&self.stack.reply_queue.queue, &replies).await.unwrap();
    }

    /// Slack's request, through the ingress, the worker and the responder.
    async fn answer(&self, body: &str) -> WorkMessage {
        let work = self.slack_sends(body).await;
        assert_eq!(work.len(), 1);
        assert_eq!(tests::batch_failures(&self.work(&work).await), Vec::<String>::new());
        self.stack.acknowledge(&self.stack.work_queue.queue, &work).await.unwrap();
        self.respond().await;
        decode_work(&work[0])
    }

    /// Every call of `method` Slack got, as one string (to look for a
    /// secret in anything sent).
    fn sent(&self, method: &str) -> String {
        serde_json::to_string(&self.slack.calls(method).iter().map(|c| &c.form).collect::<Vec<_>>()).unwrap()
    }
}

fn answer_reply(text: &str) -> Scripted {
    Scripted::text(text)
}

/// The one message in the thread, as it now stands.
fn the_one_message(slack: &FakeSlack) -> Posted {
    let posted = slack.posted();
    assert_eq!(posted.len(), 1, "exactly one answer message: {posted:?}");
    posted.into_iter().next().unwrap()
}

fn turn_of(work: &WorkMessage) -> TurnId {
    work.turn_id().expect("a turn")
}

#[tokio::test]
async fn opening_the_dm_sets_suggested_prompts_for_the_dm_and_calls_no_model() {
    let world = World::new().await;
    let work = world.slack_sends(testkit::fixtures::APP_HOME_OPENED_MESSAGES).await;
    assert!(matches!(decode_work(&work[0]), WorkMessage::Opened(_)));
    assert_eq!(tests::batch_failures(&world.work(&work).await), Vec::<String>::new());

    let calls = world.slack.calls("assistant.threads.setSuggestedPrompts");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].form["channel_id"], "D0LAN2Q66");
    assert!(
        !calls[0].form.contains_key("thread_ts"),
        "agent apps' prompts: no thread (one would make Slack ignore them)"
    );
    let prompts: Vec<Value> = serde_json::from_str(&calls[0].form["prompts"]).unwrap();
    assert_eq!(prompts.len(), 3, "the default prompts");
    assert!(world.bedrock.requests().is_empty(), "no model call");
    assert!(world.slack.posted().is_empty());
}

#[tokio::test]
async fn a_dm_question_streams_in_its_own_thread_with_a_title_and_feedback_buttons() {
    let world = World::new().await;
    let answer = "Rotate it in **Secrets Manager**, then restart the service so it reads the new one.";
    world.bedrock.script([answer_reply(answer)]);
    world.bedrock.cut_deltas_at(&[5, 17, 30, 60]);

    let work = world.answer(testkit::fixtures::MESSAGE_IM).await;

    let message = the_one_message(&world.slack);
    assert_eq!((message.channel.as_str(), message.thread_ts.as_str()), ("D0LAN2Q66", "1763800100.000300"));
    assert_eq!(message.text, answer, "streamed as the model wrote it");
    assert!(!message.streaming, "stopped");
    let blocks = message.blocks.as_ref().expect("the footer");
    assert_eq!(blocks[1]["elements"][0]["type"], "feedback_buttons");
    assert_eq!(message.metadata.as_ref().unwrap()["event_payload"]["key"], "answer 1/1");
    assert!(!world.slack.calls("chat.appendStream").is_empty());
    assert!(world.slack.calls("chat.postMessage").is_empty(), "nothing posted besides the stream");
    let title = &world.slack.calls("assistant.threads.setTitle")[0].form;
    assert_eq!(
        (title["thread_ts"].as_str(), title["title"].as_str()),
        ("1763800100.000300", "how do I rotate the db password?")
    );
    let streamed = world.bedrock.requests();
    assert_eq!(streamed.len(), 1);

    let turn_id = turn_of(&work);
    let delivery = world.stack.deliveries().load(&turn_id).await.unwrap();
    assert_eq!(delivery.settled, Some(Settled::Delivered));
    let record = world.stack.streams().load(&turn_id).await.unwrap();
    assert_eq!(record.ts.as_ref().map(|ts| ts.as_str()), Some(message.ts.as_str()), "the stream's ts, recorded");
}

#[tokio::test]
async fn a_streamed_answer_ends_with_the_runbook_it_read_and_stays_the_whole_answer() {
    let world = World::new().await;
    world.stack.put("docs/runbooks/db.md", "Rotate in Secrets Manager, then restart.").await;
    world.bedrock.script([
        Scripted::tool_calls(&[("t1", "read_doc", serde_json::json!({"path": "runbooks/db.md"}))]),
        answer_reply("Rotate it in Secrets Manager, then restart the service."),
    ]);

    world.answer(testkit::fixtures::MESSAGE_IM).await;

    let message = the_one_message(&world.slack);
    assert_eq!(
        message.text, "Rotate it in Secrets Manager, then restart the service.\n\n*Sources:* `runbooks/db.md`",
        "streamed with its sources"
    );
    assert!(world.slack.calls("chat.update").is_empty(), "the stream is the whole answer: not replaced");
    let cards = &message.tasks;
    assert!(cards.iter().any(|card| card["status"] == "complete" && card["title"] == "read_doc"), "{cards:?}");
}

#[tokio::test]
async fn a_channel_answer_streams_to_the_person_who_asked() {
    let world = World::new().await;
    world.bedrock.script([Scripted::fixture(TEXT_REPLY)]);
    world.answer(&String::from_utf8(events::body(&events::parse(events::APP_MENTION))).unwrap()).await;

    let start = &world.slack.calls("chat.startStream")[0].form;
    assert_eq!((start["recipient_user_id"].as_str(), start["recipient_team_id"].as_str()), ("U061F7AUR", "T061EG9R6"));
    let message = the_one_message(&world.slack);
    assert!(message.text.contains("connection pool is exhausted"), "{}", message.text);
}

#[tokio::test]
async fn a_refused_stream_is_answered_by_one_posted_message() {
    let world = World::new().await;
    world.bedrock.script([answer_reply("The pool is **exhausted**.")]);
    world.slack.script(
        "chat.startStream",
        [SlackReply::Json(serde_json::json!({"ok": false, "error": "missing_scope", "needed": "chat:write"}))],
    );
    world.answer(testkit::fixtures::MESSAGE_IM).await;

    let message = the_one_message(&world.slack);
    assert_eq!(message.text, "The pool is **exhausted**.", "rendered and posted the usual way");
    assert_eq!(message.blocks.as_ref().unwrap()[0]["type"], "markdown");
    assert_eq!(world.slack.calls("chat.postMessage").len(), 1);
    assert!(world.slack.calls("chat.appendStream").is_empty());
    assert_eq!(message.blocks.as_ref().unwrap().as_array().unwrap().last().unwrap()["type"], "context_actions");
}

#[tokio::test]
async fn a_secret_cut_across_the_models_deltas_is_never_streamed_nor_posted() {
    let token = format!("xox{}-{}-{}", "b", "2024061715", "q8Xv2LmN4pR7sT1wY9zK3bC6");
    let answer = format!("The deploy config holds `{token}`: rotate it before you do anything else today.");
    let at = answer.find(&token).unwrap();
    for cut in [at + 1, at + 4, at + 15, at + token.len() - 3] {
        let world = World::new().await;
        world.bedrock.script([answer_reply(&answer)]);
        world.bedrock.cut_deltas_at(&[cut]);
        world.answer(testkit::fixtures::MESSAGE_IM).await;

        let message = the_one_message(&world.slack);
        assert!(message.text.contains("[redacted: slack bot token]"), "cut at {cut}: {}", message.text);
        for method in ["chat.startStream", "chat.appendStream", "chat.stopStream", "chat.postMessage", "chat.update"] {
            let sent = world.sent(method);
            assert!(!sent.contains(&token) && !sent.contains("q8Xv2LmN4p"), "cut at {cut}: {method} carried it");
        }
    }
}

#[tokio::test]
async fn a_worker_redelivered_mid_stream_leaves_one_message_holding_the_saved_answer() {
    let world = World::new().await;
    let mut broken: Value = serde_json::from_str(TEXT_REPLY).unwrap();
    broken["output"]["message"]["content"] =
        serde_json::json!([{"text": "The first attempt was writing a much longer story about the pool when"}]);
    world.bedrock.script([Scripted::BreaksAfter { reply: broken, deltas: 2 }, answer_reply("Restart the **pool**.")]);
    world.bedrock.cut_deltas_at(&[12, 40]);

    // The first delivery streams two deltas, then the model's stream breaks.
    let work = world.slack_sends(testkit::fixtures::MESSAGE_IM).await;
    assert_eq!(tests::batch_failures(&world.work(&work).await).len(), 1, "retried");
    let cut_short = the_one_message(&world.slack);
    assert!(cut_short.streaming && !cut_short.text.is_empty(), "{cut_short:?}");

    // SQS delivers it again: the step runs again, and streams nothing new.
    assert_eq!(tests::batch_failures(&world.work(&work).await), Vec::<String>::new());
    assert_eq!(world.slack.calls("chat.startStream").len(), 1, "never a second stream");
    world.respond().await;

    // The one message is the saved answer, rendered, with its footer.
    let message = the_one_message(&world.slack);
    assert_eq!(message.ts, cut_short.ts);
    assert_eq!(message.text, "Restart the **pool**.");
    assert!(!message.streaming);
    assert_eq!(message.blocks.as_ref().unwrap().as_array().unwrap().last().unwrap()["type"], "context_actions");
    assert_eq!(world.slack.calls("chat.update").len(), 1);
    assert!(world.slack.calls("chat.postMessage").is_empty());
}

#[tokio::test]
async fn a_thumbs_down_is_kept_by_turn_acknowledged_privately_and_starts_no_turn() {
    // GIVEN an answered DM question
    let world = World::new().await;
    world.bedrock.script([answer_reply("The pool is exhausted.")]);
    let question = world.answer(testkit::fixtures::MESSAGE_IM).await;
    let turn_id = turn_of(&question);
    let answered = the_one_message(&world.slack);

    // WHEN its asker clicks 👎 under it
    let value = FeedbackButton { turn_id: turn_id.clone(), rating: Rating::Negative }.encode();
    let payload = testkit::fixtures::BLOCK_ACTIONS_FEEDBACK
        .replace("\"FEEDBACK_VALUE\"", &serde_json::to_string(&value).unwrap())
        .replace("C0LAN2Q65", "D0LAN2Q66")
        .replace("1763800000.000100", "1763800100.000300")
        .replace("1763800900.001200", &answered.ts);
    let click = world.answer(&testkit::fixtures::interaction_form(&payload)).await;

    // THEN the rating is kept by turn, and only the clicker is thanked
    assert!(matches!(click, WorkMessage::Feedback(_)));
    let kept = world.stack.feedback().load(&turn_id).await.unwrap();
    let rated = &kept.ratings[&slack::UserId::new("U061F7AUR")];
    assert_eq!(rated.rating, Rating::Negative);
    let ephemeral = &world.slack.calls("chat.postEphemeral")[0].form;
    assert_eq!(ephemeral["user"], "U061F7AUR");
    assert_eq!(world.bedrock.requests().len(), 1, "no model call for a click");
    assert_eq!(world.slack.posted().len(), 1, "nothing new in the thread");
}

#[tokio::test]
async fn a_long_answer_streams_in_appends_under_slacks_limit() {
    let world = World::new().await;
    let paragraph =
        format!("{}\n\n", "The pool is exhausted because a report query holds its connections. ".repeat(20));
    let answer = paragraph.repeat(22);
    assert!(answer.len() > 2 * 12_000, "{}", answer.len());
    world.bedrock.script([answer_reply(&answer)]);
    world.answer(testkit::fixtures::MESSAGE_IM).await;

    let appends = world.slack.calls("chat.appendStream");
    let sizes: Vec<usize> = appends
        .iter()
        .map(|call| {
            let chunks: Vec<Value> = serde_json::from_str(&call.form["chunks"]).unwrap();
            chunks.iter().filter_map(|c| c["text"].as_str()).map(|t| t.chars().count()).sum()
        })
        .collect();
    assert!(sizes.iter().all(|&size| size <= 12_000), "{sizes:?}");
    assert!(sizes.len() >= 3, "{sizes:?}");
    let message = the_one_message(&world.slack);
    assert_eq!(message.text.len(), answer.len(), "every character streamed once, in one message");
}
