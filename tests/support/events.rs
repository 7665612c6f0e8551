//! The Lambda events in `tests/events/` (the same files `sam local invoke -e`
//! takes), and ways to derive variants of them for a test.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// When the events' Slack signatures were made (`resign.py --timestamp`).
pub const SIGNED_AT: i64 = 1_763_800_000;
/// The same instant for `faketime`, in UTC.
pub const SIGNED_AT_FAKETIME: &str = "@2025-11-22 08:26:40";

pub const APP_MENTION: &str = include_str!("../events/ingress-app-mention.json");
pub const URL_VERIFICATION: &str = include_str!("../events/ingress-url-verification.json");
pub const BAD_SIGNATURE: &str = include_str!("../events/ingress-bad-signature.json");
pub const APPROVAL_CLICK: &str = include_str!("../events/ingress-approval-click.json");
pub const BOT_MESSAGE: &str = include_str!("../events/ingress-bot-message.json");
pub const WORKER_SQS_START_TURN: &str = include_str!("../events/worker-sqs-start-turn.json");
/// A CloudWatch alarm state change as the template's EventBridge rule puts
/// it on the work queue.
pub const WORKER_SQS_CLOUDWATCH_ALARM: &str = include_str!("../events/worker-sqs-cloudwatch-alarm.json");
pub const RESPONDER_SQS_DELIVER: &str = include_str!("../events/responder-sqs-deliver.json");
pub const RESPONDER_SQS_DEAD_LETTER: &str = include_str!("../events/responder-sqs-dead-letter.json");
/// The queue the dead-letter event file says it came from.
pub const WORK_DEAD_LETTER_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-work-dlq.fifo";
pub const SCHEDULED_HEALTH_CHECK: &str = include_str!("../events/scheduled-health-check.json");
pub const WORKER_APPROVAL_SWEEP: &str = include_str!("../events/worker-approval-sweep.json");

const LOCAL_ENV: &str = include_str!("../../infra/env.local.json");

pub fn parse(event: &str) -> Value {
    serde_json::from_str(event).expect("event files are JSON")
}

/// The signing secret the events are signed with (the local one).
pub fn signing_secret() -> String {
    let env: Value = serde_json::from_str(LOCAL_ENV).expect("infra/env.local.json is JSON");
    env["IngressFunction"]["SLACK_SIGNING_SECRET"].as_str().expect("local signing secret").to_owned()
}

/// The event's raw body (base64-decoded where the event says so).
pub fn body(event: &Value) -> Vec<u8> {
    let body = event["body"].as_str().unwrap_or_default();
    if event["isBase64Encoded"].as_bool().unwrap_or(false) {
        STANDARD.decode(body).expect("base64 body")
    } else {
        body.as_bytes().to_vec()
    }
}

/// Now as Slack stamps an action (`action_ts`): seconds and microseconds.
pub fn now_ts() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970");
    format!("{}.{:06}", now.as_secs(), now.subsec_micros())
}

/// A copy of `event` carrying `new_body` instead, signed as Slack would sign
/// it at `SIGNED_AT`.
pub fn with_body(event: &Value, new_body: &str) -> Value {
    signed_at(event, new_body, SIGNED_AT)
}

/// A copy of `event` carrying `new_body`, signed as Slack would sign it at
/// `at` (Unix seconds).
pub fn signed_at(event: &Value, new_body: &str, at: i64) -> Value {
    let mut event = event.clone();
    event["headers"]["x-slack-request-timestamp"] = Value::String(at.to_string());
    event["body"] = if event["isBase64Encoded"].as_bool().unwrap_or(false) {
        Value::String(STANDARD.encode(new_body))
    } else {
        Value::String(new_body.to_owned())
    };
    let secret = slack::SigningSecret::new(signing_secret()).expect("secret");
    event["headers"]["x-slack-signature"] = Value::String(secret.sign(at, new_body.as_bytes()));
    event
}

/// A copy of `event` whose body has `from` replaced by `to`, signed again.
pub fn with_body_edit(event: &Value, from: &str, to: &str) -> Value {
    let original = String::from_utf8(body(event)).expect("UTF-8 body");
    assert!(original.contains(from), "{from:?} is not in the event body");
    with_body(event, &original.replace(from, to))
}

/// A copy of `event` with a header set (Slack's retry headers, say).
pub fn with_header(event: &Value, name: &str, value: &str) -> Value {
    let mut event = event.clone();
    event["headers"][name] = Value::String(value.to_owned());
    event
}

/// An HTTP request (payload 2.0, as the function URL sends it) to the
/// ingress's `path`, with only `headers` and `body`: an alert webhook's, an
/// OAuth callback's.
pub fn http_request(path: &str, headers: &[(&str, &str)], body: &str) -> Value {
    let mut event = parse(APP_MENTION);
    event["rawPath"] = path.into();
    event["requestContext"]["http"]["path"] = path.into();
    event["headers"] = headers
        .iter()
        .map(|(name, value)| (name.to_string(), Value::from(*value)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    event["body"] = body.into();
    event["isBase64Encoded"] = false.into();
    event
}
