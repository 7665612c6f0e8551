//! The real `responder` binary under the Lambda Runtime Interface Emulator,
//! fed the SQS event files in `tests/events/` (a delivery from the reply
//! queue, a dead letter from the work queue's DLQ) and the scheduled health
//! event, with its Slack client pointed at the fake Web API.

use assistant_core::delivery::Settled;
use assistant_core::ports::DeliveryLog;
use assistant_core::ports::TurnStore;
use assistant_core::turn::TurnStatus;
use serde_json::json;
use testkit::store_contract::new_turn;
use tests::fake_slack::FakeSlack;
use tests::lambda::{LambdaUnderRie, Launch};
use tests::{Stack, emulator_config, events};

#[tokio::test]
async fn the_binary_posts_a_delivery_apologizes_for_a_dead_letter_and_reports_health() {
    posts_a_delivery_apologizes_for_a_dead_letter_and_reports_health(false).await;
}

/// The same, from the binary linked as it ships.
#[tokio::test]
async fn the_shipped_binary_posts_a_delivery_apologizes_for_a_dead_letter_and_reports_health() {
    posts_a_delivery_apologizes_for_a_dead_letter_and_reports_health(true).await;
}

async fn posts_a_delivery_apologizes_for_a_dead_letter_and_reports_health(shipped: bool) {
    let slack = FakeSlack::start().await;
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let turns = stack.turns();
    let mut answered = new_turn("Ev0LAN670R");
    answered.status = TurnStatus::Answered;
    answered.answer = Some("The pool is **exhausted**.".into());
    turns.create(&mut answered).await.unwrap();
    let env = vec![
        ("TURNS_TABLE", stack.table.clone()),
        ("REPLY_QUEUE_URL", stack.reply_queue.queue.clone()),
        ("DEAD_LETTER_QUEUE_ARNS", events::WORK_DEAD_LETTER_QUEUE_ARN.to_owned()),
        ("SLACK_BOT_TOKEN", "xoxb-test-token".to_owned()),
        ("SLACK_API_BASE_URL", slack.url().to_owned()),
        tests::Role::Responder.env(),
    ];
    let lambda = LambdaUnderRie::start("responder", Launch { env, shipped, ..Default::default() }).unwrap();

    let response = lambda.invoke(&events::parse(events::RESPONDER_SQS_DELIVER)).await.unwrap();
    assert_eq!(response["batchItemFailures"], json!([]), "{response}\n{}", lambda.logs());
    let posted = slack.posted();
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].text, "The pool is **exhausted**.");
    assert_eq!(
        posted[0].blocks.as_ref().unwrap()[0],
        json!({"type": "markdown", "text": "The pool is **exhausted**."})
    );

    // The same turn's work in the dead-letter queue: it was answered and
    // delivered, so there is nothing to apologize for.
    let response = lambda.invoke(&events::parse(events::RESPONDER_SQS_DEAD_LETTER)).await.unwrap();
    assert_eq!(response["batchItemFailures"], json!([]), "{response}\n{}", lambda.logs());
    assert_eq!(slack.posted().len(), 1);

    // A turn still running when its work died gets the apology.
    let dead_letter = events::RESPONDER_SQS_DEAD_LETTER.replace("Ev0LAN670R", "Ev0DEAD0001");
    let mut running = new_turn("Ev0DEAD0001");
    turns.create(&mut running).await.unwrap();
    let response = lambda.invoke(&events::parse(&dead_letter)).await.unwrap();
    assert_eq!(response["batchItemFailures"], json!([]), "{response}\n{}", lambda.logs());
    let posted = slack.posted();
    assert_eq!(posted.len(), 2);
    assert!(posted[1].text.contains("`Ev0DEAD0001`"), "{}", posted[1].text);
    let delivery = stack.deliveries().load(&running.id).await.unwrap();
    assert_eq!(delivery.settled, Some(Settled::Apologized { reference: "Ev0DEAD0001".into() }));
    assert_eq!(turns.load(&running.id).await.unwrap().unwrap().status, TurnStatus::Running, "the worker's record");

    // One metrics record per message: the answer posted, then the two dead
    // letters (one apology posted).
    let records = lambda.emf_records();
    let figures: Vec<(f64, f64, f64)> = records
        .iter()
        .map(|r| {
            (r["Posted"].as_f64().unwrap(), r["DeadLetters"].as_f64().unwrap(), r["SlackRetries"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(figures, [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (1.0, 1.0, 0.0)], "{records:?}");
    assert!(records.iter().all(|r| r["Function"] == "responder"));

    let health = lambda.invoke(&events::parse(events::SCHEDULED_HEALTH_CHECK)).await.unwrap();
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(health["function"], "responder");
    let checks: Vec<&str> = health["checks"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(checks, ["dynamodb", "sqs_reply", "slack"]);
    assert_eq!(slack.calls("auth.test").len(), 1);
    assert!(lambda.logs().contains("answer delivered"), "{}", lambda.logs());
    assert!(!lambda.logs().contains("xoxb-test-token"), "the token never reaches the logs");
}

#[tokio::test]
async fn special_mentions_ping_only_where_the_deployment_allows_them() {
    let slack = FakeSlack::start().await;
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let mut answered = new_turn("Ev0LAN670R");
    answered.status = TurnStatus::Answered;
    answered.answer = Some("<!here> the pool is back; <!channel> was not needed.".into());
    stack.turns().create(&mut answered).await.unwrap();
    let env = |allowed: (&'static str, String)| {
        vec![
            ("TURNS_TABLE", stack.table.clone()),
            ("REPLY_QUEUE_URL", stack.reply_queue.queue.clone()),
            ("SLACK_BOT_TOKEN", "xoxb-test-token".to_owned()),
            ("SLACK_API_BASE_URL", slack.url().to_owned()),
            allowed,
            tests::Role::Responder.env(),
        ]
    };

    // A value that is not a kind of mention stops the start, naming it.
    let refused = LambdaUnderRie::start(
        "responder",
        Launch { env: env(("SLACK_ALLOWED_SPECIAL_MENTIONS", "here,all".into())), ..Default::default() },
    )
    .unwrap();
    let outcome = refused.invoke(&events::parse(events::RESPONDER_SQS_DELIVER)).await;
    assert!(outcome.is_err() || outcome.as_ref().unwrap().get("errorType").is_some(), "{outcome:?}");
    assert!(refused.logs().contains("SLACK_ALLOWED_SPECIAL_MENTIONS"), "{}", refused.logs());
    assert!(slack.posted().is_empty());

    // `here` allowed (and so in the records infra/mentions/check.py reads):
    // it pings; `channel` shows as text.
    let lambda =
        LambdaUnderRie::start("responder", Launch { env: env(slack.deployment_allows("here")), ..Default::default() })
            .unwrap();
    let response = lambda.invoke(&events::parse(events::RESPONDER_SQS_DELIVER)).await.unwrap();
    assert_eq!(response["batchItemFailures"], json!([]), "{response}\n{}", lambda.logs());
    assert_eq!(slack.posted()[0].text, "<!here> the pool is back; &lt;!channel&gt; was not needed.");
}
