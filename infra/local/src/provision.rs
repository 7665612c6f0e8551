//! `local --provision`: creates at a local AWS emulator what `template.yaml`
//! declares (the table, the FIFO work and reply queues with their
//! dead-letter queues, the artifact bucket), under the names
//! `infra/env.local.json` uses, and prints the environment the three
//! functions need there, one `NAME=value` a line (for `cargo lambda watch
//! --env-file`). `infra/emulator.sh` starts the emulator and calls this.
//!
//! It refuses to run without `AWS_ENDPOINT_URL` on a loopback address: it
//! is never meant to create anything in a real account.

use adapters_aws::provision::{fifo_queue_with_dlq, turns_table};

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
    let s3 = adapters_s3::client(&aws);
    if adapters_s3::check_bucket(&s3, BUCKET, "docs/").await.is_err() {
        adapters_s3::provision_bucket(&s3, BUCKET).await?;
    }
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
