//! The real `ingress` binary under the Lambda Runtime Interface Emulator,
//! fed the event files in `tests/events/` (as `sam local invoke -e` would),
//! with its wall clock pinned by faketime to when they were signed.

use tests::events::{self, SIGNED_AT_FAKETIME};
use tests::lambda::{LambdaUnderRie, Launch};
use tests::{Stack, emulator_config};

fn contract_env(stack: &Stack) -> Vec<(&'static str, String)> {
    vec![
        ("SLACK_SIGNING_SECRET", events::signing_secret()),
        ("TURNS_TABLE", stack.table.clone()),
        ("WORK_QUEUE_URL", stack.work_queue.queue.clone()),
        tests::Role::Ingress.env(),
    ]
}

#[tokio::test]
async fn the_binary_answers_each_event_file() {
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let lambda = LambdaUnderRie::start(
        "ingress",
        Launch { env: contract_env(&stack), clock: Some(SIGNED_AT_FAKETIME), ..Default::default() },
    )
    .unwrap();

    let verification = lambda.invoke(&events::parse(events::URL_VERIFICATION)).await.unwrap();
    assert_eq!(verification["statusCode"], 200, "{verification}");
    let body: serde_json::Value = serde_json::from_str(verification["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["challenge"], "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P");

    let mention = lambda.invoke(&events::parse(events::APP_MENTION)).await.unwrap();
    assert_eq!(mention["statusCode"], 200, "{mention}");
    assert!(mention.get("body").is_none_or(|b| b.is_null() || b == ""), "empty body: {mention}");

    let forged = lambda.invoke(&events::parse(events::BAD_SIGNATURE)).await.unwrap();
    assert_eq!(forged["statusCode"], 401, "{forged}");

    let click = lambda.invoke(&events::parse(events::APPROVAL_CLICK)).await.unwrap();
    assert_eq!(click["statusCode"], 200, "{click}");

    // Another bot's message is acknowledged and starts nothing.
    let bot = lambda.invoke(&events::parse(events::BOT_MESSAGE)).await.unwrap();
    assert_eq!(bot["statusCode"], 200, "{bot}");

    // One metrics record per request: the mention and the click accepted,
    // the forgery rejected.
    let records = lambda.emf_records();
    assert_eq!(records.len(), 5, "{records:?}");
    let total = |name: &str| records.iter().map(|record| record[name].as_f64().unwrap()).sum::<f64>();
    assert_eq!((total("Accepted"), total("Duplicates"), total("Rejected")), (2.0, 0.0, 1.0));
    assert_eq!(records[0]["_aws"]["CloudWatchMetrics"][0]["Dimensions"], serde_json::json!([["Function"]]));
    assert_eq!(records[0]["Function"], "ingress");

    let health = lambda.invoke(&events::parse(events::SCHEDULED_HEALTH_CHECK)).await.unwrap();
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(health["checks"].as_array().map(Vec::len), Some(2));

    // The mention and the click are on the queue; the forgery is not.
    let kinds: Vec<_> = stack.receive_work().await.unwrap().iter().map(|m| tests::decode_work(m).dedupe_id()).collect();
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    assert!(kinds.contains(&"Ev0LAN670R".to_owned()));

    // The logs say what happened and carry no secret or signature.
    let logs = lambda.logs();
    assert!(logs.contains("bad Slack signature"), "{logs}");
    assert!(!logs.contains(&events::signing_secret()));
    let signature = events::parse(events::APP_MENTION)["headers"]["x-slack-signature"].as_str().unwrap().to_owned();
    assert!(!logs.contains(&signature[3..]));
}

/// The binary linked as it ships (static: faketime cannot reach it, so
/// the mention is signed now): it verifies, queues and reports health.
#[tokio::test]
async fn the_shipped_binary_queues_a_mention_signed_now_and_reports_health() {
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let launch = Launch { env: contract_env(&stack), shipped: true, ..Default::default() };
    let lambda = LambdaUnderRie::start("ingress", launch).unwrap();
    let mention = events::parse(events::APP_MENTION);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let body = String::from_utf8(events::body(&mention)).unwrap();

    let signed_now = lambda.invoke(&events::signed_at(&mention, &body, now)).await.unwrap();
    assert_eq!(signed_now["statusCode"], 200, "{signed_now}\n{}", lambda.logs());
    // The event file's own signature is from 2025: too old to replay.
    let replayed = lambda.invoke(&mention).await.unwrap();
    assert_eq!(replayed["statusCode"], 401, "{replayed}");
    let health = lambda.invoke(&events::parse(events::SCHEDULED_HEALTH_CHECK)).await.unwrap();
    assert_eq!(health["status"], "ok", "{health}");

    let queued: Vec<_> =
        stack.receive_work().await.unwrap().iter().map(|m| tests::decode_work(m).dedupe_id()).collect();
    assert_eq!(queued, ["Ev0LAN670R"]);
}

#[tokio::test]
async fn the_binary_names_a_missing_variable_and_does_not_start() {
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let mut env = contract_env(&stack);
    env.retain(|(name, _)| *name != "WORK_QUEUE_URL");
    let lambda =
        LambdaUnderRie::start("ingress", Launch { env, clock: Some(SIGNED_AT_FAKETIME), ..Default::default() })
            .unwrap();

    let outcome = lambda.invoke(&events::parse(events::APP_MENTION)).await;
    assert!(outcome.is_err() || outcome.as_ref().unwrap().get("errorType").is_some(), "{outcome:?}");
    assert!(lambda.logs().contains("WORK_QUEUE_URL is not set"), "{}", lambda.logs());
    assert!(stack.receive_work().await.unwrap().is_empty());
}
