//! The responder function between Lambda and `delivery::Responder`: its
//! configuration, the wiring of the adapters, and the mapping of Lambda
//! events (an SQS batch from the reply queue or a dead-letter queue, or the
//! scheduled health check) to calls and back.

use agent::SystemClock;
use agent::messages::ReplyMessage;
use aws_adapters::dynamodb::{self, DynamoDeliveries, DynamoTurns};
use aws_adapters::sqs;
use aws_lambda_events::sqs::SqsEvent;
use delivery::{DeadLetter, Responder, WebPoster};
use runtime_support::UnsupportedEvent;
use runtime_support::env::{ConfigError, optional, required};
use runtime_support::health::{self, HealthReport};
use runtime_support::sqs_batch::{self, Handled, Record};
use serde_json::Value;
use slack::web::{BotToken, DEFAULT_BASE_URL, WebClient};
use tracing::{error, info, warn};

pub const FUNCTION_NAME: &str = "responder";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The runtime contract's variables this function reads.
#[derive(Debug, Clone)]
pub struct Config {
    pub turns_table: String,
    pub reply_queue_url: String,
    pub slack_bot_token: BotToken,
    pub slack_api_base_url: String,
    /// Records from these queues are dead letters (`DEAD_LETTER_QUEUE_ARNS`,
    /// comma-separated).
    pub dead_letter_queue_arns: Vec<String>,
    /// Let Slack unfurl links in the bot's messages (`SLACK_UNFURL_LINKS`).
    pub unfurl_links: bool,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        let unfurl_links = match optional("SLACK_UNFURL_LINKS").as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "SLACK_UNFURL_LINKS",
                    reason: format!("{other:?} is neither true nor false"),
                });
            }
        };
        Ok(Self {
            turns_table: required("TURNS_TABLE")?,
            reply_queue_url: required("REPLY_QUEUE_URL")?,
            slack_bot_token: BotToken::new(required("SLACK_BOT_TOKEN")?),
            slack_api_base_url: optional("SLACK_API_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            dead_letter_queue_arns: optional("DEAD_LETTER_QUEUE_ARNS")
                .map(|arns| arns.split(',').map(|arn| arn.trim().to_owned()).filter(|arn| !arn.is_empty()).collect())
                .unwrap_or_default(),
            unfurl_links,
        })
    }
}

/// The clients the responder uses, built once per process.
#[derive(Debug, Clone)]
pub struct Clients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub http: reqwest::Client,
}

impl Clients {
    pub fn new(aws: &aws_config::SdkConfig) -> Self {
        Self {
            dynamodb: aws_sdk_dynamodb::Client::new(aws),
            sqs: aws_sdk_sqs::Client::new(aws),
            http: slack::web::http_client(),
        }
    }
}

pub type AwsResponder = Responder<DynamoTurns, DynamoDeliveries, WebPoster, SystemClock>;

pub struct ResponderFunction {
    responder: AwsResponder,
    clients: Clients,
    config: Config,
}

impl ResponderFunction {
    pub fn new(config: Config, clients: Clients) -> Self {
        let web = WebClient::new(clients.http.clone(), &config.slack_api_base_url, config.slack_bot_token.clone());
        let responder = Responder {
            turns: DynamoTurns::new(clients.dynamodb.clone(), &config.turns_table),
            deliveries: DynamoDeliveries::new(clients.dynamodb.clone(), &config.turns_table),
            slack: WebPoster::new(web, config.unfurl_links),
            clock: SystemClock,
        };
        Self { responder, clients, config }
    }

    /// One invocation: a health check, or a batch from the reply queue or
    /// a dead-letter queue.
    pub async fn handle(&self, event: Value) -> Result<Value, UnsupportedEvent> {
        if health::is_scheduled_event(&event) {
            return Ok(serde_json::to_value(self.health().await).expect("health report serializes"));
        }
        let batch: SqsEvent =
            serde_json::from_value(event).map_err(|source| UnsupportedEvent { expected: "an SQS batch", source })?;
        let response = sqs_batch::handle_event(&batch, |record| self.handle_record(record)).await;
        Ok(serde_json::to_value(response).expect("batch response serializes"))
    }

    async fn handle_record(&self, record: Record<'_>) -> Handled {
        let dead_letter = self.config.dead_letter_queue_arns.iter().any(|arn| arn == record.source);
        let result = if dead_letter {
            let Some(letter) = DeadLetter::decode(record.body) else {
                // Already where failed messages end: retrying cannot help.
                error!(
                    message_id = record.message_id,
                    queue = record.source,
                    body = %redact::redact(&preview(record.body)),
                    "unreadable message in a dead-letter queue: dropped"
                );
                return Handled::Done;
            };
            self.responder.handle_dead_letter(&letter).await
        } else {
            match ReplyMessage::decode(record.body) {
                Ok(message) => self.responder.handle(&message).await,
                Err(err) => {
                    error!(message_id = record.message_id, error = %err, "malformed reply message: left for the dead-letter queue");
                    return Handled::Failed;
                }
            }
        };
        match result {
            Ok(outcome) => {
                info!(message_id = record.message_id, dead_letter, ?outcome, "reply handled");
                Handled::Done
            }
            Err(err) if err.is_retryable() => {
                warn!(message_id = record.message_id, error = %err, "reply failed; SQS will redeliver it");
                Handled::Failed
            }
            // From the reply queue it goes on to its dead-letter queue (and
            // comes back as a dead letter); a dead letter ends here.
            Err(err) if dead_letter => {
                error!(message_id = record.message_id, error = %err, "dead letter cannot be handled: dropped");
                Handled::Done
            }
            Err(err) => {
                error!(message_id = record.message_id, error = %err, "reply cannot succeed: left for the dead-letter queue");
                Handled::Failed
            }
        }
    }

    /// Checks the table, the reply queue and the Slack token.
    pub async fn health(&self) -> HealthReport {
        let slack =
            async { self.responder.slack.client().auth_test().await.map(|_| ()).map_err(|err| err.to_string()) };
        let (table, replies, slack) = tokio::join!(
            health::check("dynamodb", dynamodb::check_table(&self.clients.dynamodb, &self.config.turns_table)),
            health::check("sqs_reply", sqs::check_queue(&self.clients.sqs, &self.config.reply_queue_url)),
            health::check("slack", slack),
        );
        HealthReport::new(FUNCTION_NAME, VERSION, vec![table, replies, slack])
    }
}

/// The start of a message body, for a log line.
fn preview(body: &str) -> String {
    body.chars().take(300).collect()
}
