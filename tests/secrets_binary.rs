//! The real binaries under the Lambda Runtime Interface Emulator, given
//! their secrets as the template deploys them: the Secrets Manager secret's
//! name in `*_ID` (`SLACK_SIGNING_SECRET_ID`, `SLACK_BOT_TOKEN_ID`…), read
//! once at start-up from the local AWS emulator, as the function's own role.
//!
//! The secrets have the template's default names, so that the IAM check
//! after the tests (`infra/iam/check.py`) holds each read to the role's
//! grant of that one secret.

use serde_json::Value;
use tests::fake_slack::FakeSlack;
use tests::lambda::{LambdaUnderRie, Launch};
use tests::{Stack, emulator_config, events, unique_name};

/// Creates the secret `name` at the emulator, or gives it `value` if it is
/// there already (a second run against the same emulator).
async fn store_secret(name: &str, value: &str) {
    let call = |target: &'static str, body: Value| async move {
        reqwest::Client::new()
            .post(tests::env_from_test_command("AWS_ENDPOINT_URL"))
            .header("content-type", "application/x-amz-json-1.1")
            .header("x-amz-target", format!("secretsmanager.{target}"))
            .header(
                "authorization",
                "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/secretsmanager/aws4_request, SignedHeaders=host, Signature=0",
            )
            .json(&body)
            .send()
            .await
            .expect("the emulator answers")
    };
    let created = call("CreateSecret", serde_json::json!({"Name": name, "SecretString": value})).await;
    if created.status().is_success() {
        return;
    }
    let updated = call("PutSecretValue", serde_json::json!({"SecretId": name, "SecretString": value})).await;
    assert!(updated.status().is_success(), "PutSecretValue: {}", updated.text().await.unwrap_or_default());
}

#[tokio::test]
async fn the_ingress_reads_its_secrets_from_secrets_manager_once_when_given_their_ids() {
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    // Stored from a file, as people do: the line break is not the secret's.
    store_secret("slack-assistant/signing-secret", &format!("{}\n", events::signing_secret())).await;
    let alertmanager_token = "am-token-from-secrets-manager-5c2f";
    store_secret("slack-assistant/alertmanager-token", alertmanager_token).await;
    let env = vec![
        ("SLACK_SIGNING_SECRET_ID", "slack-assistant/signing-secret".to_owned()),
        ("ALERTMANAGER_TOKEN_ID", "slack-assistant/alertmanager-token".to_owned()),
        ("TURNS_TABLE", stack.table.clone()),
        ("WORK_QUEUE_URL", stack.work_queue.queue.clone()),
        tests::Role::Ingress.env(),
    ];
    let lambda =
        LambdaUnderRie::start("ingress", Launch { env, clock: Some(events::SIGNED_AT_FAKETIME), ..Default::default() })
            .unwrap();

    // Slack's requests are verified with the secret read at start-up.
    let verification = lambda.invoke(&events::parse(events::URL_VERIFICATION)).await.unwrap();
    assert_eq!(verification["statusCode"], 200, "{verification}\n{}", lambda.logs());
    let mention = lambda.invoke(&events::parse(events::APP_MENTION)).await.unwrap();
    assert_eq!(mention["statusCode"], 200, "{mention}");
    let forged = lambda.invoke(&events::parse(events::BAD_SIGNATURE)).await.unwrap();
    assert_eq!(forged["statusCode"], 401, "{forged}");

    // Alertmanager's route takes the token read at start-up, and only it.
    let firing = testkit::fixtures::alerts::ALERTMANAGER_FIRING;
    let json = ("content-type", "application/json");
    let wrong = lambda
        .invoke(&events::http_request("/alerts/alertmanager", &[("authorization", "Bearer xyz"), json], firing))
        .await;
    assert_eq!(wrong.unwrap()["statusCode"], 401);
    let bearer = format!("Bearer {alertmanager_token}");
    let alert =
        lambda.invoke(&events::http_request("/alerts/alertmanager", &[("authorization", &bearer), json], firing)).await;
    assert_eq!(alert.unwrap()["statusCode"], 200, "{}", lambda.logs());
    // No PagerDuty secret given: no such route.
    let pagerduty = lambda.invoke(&events::http_request("/alerts/pagerduty", &[json], "{}")).await.unwrap();
    assert_eq!(pagerduty["statusCode"], 404, "{pagerduty}");

    assert_eq!(stack.receive_work().await.unwrap().len(), 2, "the mention and the alert");
    let logs = lambda.logs();
    assert!(!logs.contains(&events::signing_secret()) && !logs.contains(alertmanager_token), "{logs}");
}

/// The ingress binary started with `env`: its first invocation must fail
/// (the start refused); what it logged.
async fn refused_start(env: Vec<(&str, String)>) -> String {
    let lambda =
        LambdaUnderRie::start("ingress", Launch { env, clock: Some(events::SIGNED_AT_FAKETIME), ..Default::default() })
            .unwrap();
    let outcome = lambda.invoke(&events::parse(events::APP_MENTION)).await;
    assert!(outcome.is_err() || outcome.as_ref().unwrap().get("errorType").is_some(), "{outcome:?}");
    lambda.logs()
}

#[tokio::test]
async fn a_secret_that_is_not_there_stops_the_start_naming_its_variable_and_the_secret() {
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let missing = unique_name("slack-assistant/no-such-secret");
    // Signed with the test command's key: a read the template does not
    // grant, on purpose.
    let env = vec![
        ("SLACK_SIGNING_SECRET_ID", missing.clone()),
        ("TURNS_TABLE", stack.table.clone()),
        ("WORK_QUEUE_URL", stack.work_queue.queue.clone()),
    ];
    let logs = refused_start(env).await;
    let said =
        format!("SLACK_SIGNING_SECRET_ID names a secret that cannot be read: Secrets Manager has no secret {missing}");
    assert!(logs.contains(&said), "{logs}");
    assert!(stack.receive_work().await.unwrap().is_empty());

    // Both the value and the id: which one is meant would be a guess.
    let env = vec![
        ("SLACK_SIGNING_SECRET", events::signing_secret()),
        ("SLACK_SIGNING_SECRET_ID", "slack-assistant/signing-secret".to_owned()),
        ("TURNS_TABLE", stack.table.clone()),
        ("WORK_QUEUE_URL", stack.work_queue.queue.clone()),
    ];
    let logs = refused_start(env).await;
    assert!(logs.contains("SLACK_SIGNING_SECRET_ID is invalid: SLACK_SIGNING_SECRET is set too"), "{logs}");
    assert!(!logs.contains(&events::signing_secret()), "{logs}");
}

#[tokio::test]
async fn the_responder_reads_the_bot_token_from_secrets_manager_when_given_its_id() {
    let slack = FakeSlack::start().await;
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    store_secret("slack-assistant/bot-token", "xoxb-test-token").await;
    let env = vec![
        ("TURNS_TABLE", stack.table.clone()),
        ("REPLY_QUEUE_URL", stack.reply_queue.queue.clone()),
        ("SLACK_BOT_TOKEN_ID", "slack-assistant/bot-token".to_owned()),
        ("SLACK_API_BASE_URL", slack.url().to_owned()),
        tests::Role::Responder.env(),
    ];
    let lambda = LambdaUnderRie::start("responder", Launch { env, ..Default::default() }).unwrap();

    let health = lambda.invoke(&events::parse(events::SCHEDULED_HEALTH_CHECK)).await.unwrap();
    assert_eq!(health["status"], "ok", "{health}\n{}", lambda.logs());
    let checked = slack.calls("auth.test");
    assert!(!checked.is_empty());
    for call in checked {
        assert_eq!(call.authorization.as_deref(), Some("Bearer xoxb-test-token"), "the token from the secret");
    }
    assert!(!lambda.logs().contains("xoxb-test-token"));
}

#[tokio::test]
async fn the_ingress_reads_the_bot_token_only_when_a_shortcut_first_opens_its_modal() {
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let slack = FakeSlack::start().await;
    store_secret("slack-assistant/signing-secret", &format!("{}\n", events::signing_secret())).await;
    store_secret("slack-assistant/bot-token", "xoxb-test-token").await;
    let env = vec![
        ("SLACK_SIGNING_SECRET_ID", "slack-assistant/signing-secret".to_owned()),
        ("SLACK_BOT_TOKEN_ID", "slack-assistant/bot-token".to_owned()),
        ("SLACK_API_BASE_URL", slack.url().to_owned()),
        ("TURNS_TABLE", stack.table.clone()),
        ("WORK_QUEUE_URL", stack.work_queue.queue.clone()),
        tests::Role::Ingress.env(),
    ];
    let lambda =
        LambdaUnderRie::start("ingress", Launch { env, clock: Some(events::SIGNED_AT_FAKETIME), ..Default::default() })
            .unwrap();
    let mention = lambda.invoke(&events::parse(events::APP_MENTION)).await.unwrap();
    assert_eq!(mention["statusCode"], 200, "{mention}\n{}", lambda.logs());

    // "Ask the assistant about this…": the modal opens with the token read from its secret.
    let ask = testkit::fixtures::MESSAGE_ACTION
        .replace(slack::shortcut::INVESTIGATE_CALLBACK_ID, slack::ask_modal::ASK_CALLBACK_ID);
    let event = events::with_body(&events::parse(events::APPROVAL_CLICK), &testkit::fixtures::interaction_form(&ask));
    let opened = lambda.invoke(&event).await.unwrap();
    assert_eq!(opened["statusCode"], 200, "{opened}\n{}", lambda.logs());
    let calls = slack.calls("views.open");
    assert_eq!(calls.len(), 1, "{}", lambda.logs());
    assert_eq!(calls[0].authorization.as_deref(), Some("Bearer xoxb-test-token"));
    assert_eq!(stack.receive_work().await.unwrap().len(), 1, "the mention; the shortcut waits for its modal");
    assert!(!lambda.logs().contains("xoxb-test-token"));
}
