//! `local --provision`: creates at a local AWS emulator what `template.yaml`
//! declares (the table, the FIFO work and reply queues with their
//! dead-letter queues, the artifact bucket), and an account's worth of
//! signals for the AWS tools to read (an alarm firing, its metric's last
//! hour, a service's log lines: `infra/local/aws-tools.json` configures the
//! tools over them), under the names
//! `infra/env.local.json` uses, and prints the environment the three
//! functions need there, one `NAME=value` a line (for `cargo lambda watch
//! --env-file`). `infra/emulator.sh` starts the emulator and calls this.
//!
//! It refuses to run without `AWS_ENDPOINT_URL` on a loopback address: it
//! is never meant to create anything in a real account.

use adapters_aws::provision::{fifo_queue_with_dlq, turns_table};
use adapters_sigv4::{AwsApi, Repeat, Signer};
use serde_json::{Value, json};

const TABLE: &str = "slack-assistant-turns";
const WORK_QUEUE: &str = "slack-assistant-work";
const REPLY_QUEUE: &str = "slack-assistant-reply";
const BUCKET: &str = "slack-assistant-artifacts";
/// The secret the event files in `tests/events/` are signed with.
const EVENTS_SIGNING_SECRET: &str = "local-signing-secret-for-tests-only";
/// As `template.yaml`: five receives, then the dead-letter queue.
const MAX_RECEIVES: u32 = 5;

#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    #[error(
        "AWS_ENDPOINT_URL must name a local emulator on a loopback address (it is {0:?}): --provision never touches a real account"
    )]
    NotLocal(Option<String>),
    #[error(transparent)]
    Aws(#[from] assistant_core::PortError),
    #[error(transparent)]
    Signals(#[from] adapters_sigv4::AwsError),
}

pub async fn provision() -> Result<(), ProvisionError> {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").ok();
    let local = endpoint.as_deref().is_some_and(|url| {
        ["http://127.", "http://localhost:", "http://[::1]:"].iter().any(|prefix| url.starts_with(prefix))
    });
    let endpoint = match endpoint {
        Some(endpoint) if local => endpoint,
        other => return Err(ProvisionError::NotLocal(other)),
    };
    let aws = adapters_aws::config::load(adapters_aws::config::worker_timeouts()).await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&aws);
    if adapters_aws::dynamodb::check_table(&dynamodb, TABLE).await.is_err() {
        turns_table(&dynamodb, TABLE).await?;
    }
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let work = fifo_queue_with_dlq(&sqs, WORK_QUEUE, MAX_RECEIVES, 5_400).await?;
    let reply = fifo_queue_with_dlq(&sqs, REPLY_QUEUE, MAX_RECEIVES, 360).await?;
    let bucket = adapters_s3::S3Artifacts::new(reqwest::Client::new(), adapters_sigv4::Signer::new(&aws), BUCKET);
    if bucket.check("docs/").await.is_err() {
        bucket.create_bucket().await?;
    }
    seed_signals(&aws).await?;
    let dead_letter_arns = [&work.dead_letter, &reply.dead_letter]
        .map(|url| {
            let name = url.rsplit('/').next().unwrap_or_default();
            format!("arn:aws:sqs:us-east-1:123456789012:{name}")
        })
        .join(",");
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_owned());
    for (name, value) in [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_REGION", &region),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("TURNS_TABLE", TABLE),
        ("WORK_QUEUE_URL", &work.queue),
        ("REPLY_QUEUE_URL", &reply.queue),
        ("ARTIFACT_BUCKET", BUCKET),
        ("DEAD_LETTER_QUEUE_ARNS", &dead_letter_arns),
        ("SLACK_SIGNING_SECRET", EVENTS_SIGNING_SECRET),
        ("SLACK_BOT_TOKEN", "xoxb-local-placeholder"),
        ("MODEL_ID", "us.anthropic.claude-sonnet-4-20250514-v1:0"),
    ] {
        println!("{name}={value}");
    }
    Ok(())
}

/// The sample service the seeded signals belong to.
const SERVICE: &str = "checkout-api";

/// An alarm in ALARM on `Sample/Errors` for checkout-api, the metric's
/// last hour, and `/aws/lambda/checkout-api` with a few lines (written when
/// the group is created, so a second run adds none).
async fn seed_signals(aws: &aws_config::SdkConfig) -> Result<(), adapters_sigv4::AwsError> {
    let http = reqwest::Client::new();
    let signer = Signer::new(aws);
    let cloudwatch = AwsApi::new(http.clone(), signer.clone(), adapters_cloudwatch::CLOUDWATCH, None);
    let logs = AwsApi::new(http, signer, adapters_cloudwatch::LOGS, None);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs() as i64;
    let dimensions = json!([{"Name": "Service", "Value": SERVICE}]);
    let alarm = json!({
        "AlarmName": format!("prod-{SERVICE}-errors"), "Namespace": "Sample", "MetricName": "Errors",
        "Dimensions": dimensions, "Statistic": "Sum", "Period": 60, "EvaluationPeriods": 3, "DatapointsToAlarm": 2,
        "Threshold": 5, "ComparisonOperator": "GreaterThanThreshold",
    });
    cloudwatch.call("PutMetricAlarm", &alarm, Repeat::Safe).await?;
    let state = json!({"AlarmName": format!("prod-{SERVICE}-errors"), "StateValue": "ALARM",
        "StateReason": "Threshold Crossed: 2 out of the last 3 datapoints [14.0, 9.0] were greater than the threshold (5.0)."});
    cloudwatch.call("SetAlarmState", &state, Repeat::Safe).await?;
    let data: Vec<Value> = (0..60)
        .map(|minute| {
            let errors = if minute >= 50 { 9 + (minute % 3) * 2 } else { minute % 2 };
            json!({"MetricName": "Errors", "Dimensions": dimensions, "Timestamp": now - (60 - minute) * 60, "Value": errors})
        })
        .collect();
    cloudwatch.call("PutMetricData", &json!({"Namespace": "Sample", "MetricData": data}), Repeat::Safe).await?;
    let group = format!("/aws/lambda/{SERVICE}");
    match logs.call("CreateLogGroup", &json!({"logGroupName": group}), Repeat::OnlyIfRefused).await {
        Err(err) if err.kind == "ResourceAlreadyExistsException" => return Ok(()),
        other => other?,
    };
    let stream = "2026/01/01/[$LATEST]sample";
    logs.call("CreateLogStream", &json!({"logGroupName": group, "logStreamName": stream}), Repeat::Safe).await?;
    let lines = [
        (600, "INFO POST /checkout 200 in 84 ms"),
        (540, "WARN payments-gateway slow: 2400 ms"),
        (480, "ERROR POST /checkout 502: payments-gateway timed out after 3000 ms"),
        (420, "ERROR POST /checkout 502: payments-gateway timed out after 3000 ms"),
        (300, "INFO deploy 42 of checkout-api started"),
        (120, "ERROR POST /checkout 502: connection pool exhausted (50/50 in use)"),
    ];
    let events: Vec<Value> =
        lines.iter().map(|(ago, line)| json!({"timestamp": (now - ago) * 1000, "message": line})).collect();
    let put = json!({"logGroupName": group, "logStreamName": stream, "logEvents": events});
    logs.call("PutLogEvents", &put, Repeat::OnlyIfRefused).await?;
    Ok(())
}
