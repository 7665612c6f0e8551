//! The responder function between Lambda and `responder-logic`: its
//! configuration, its cold start ([`ResponderStart`]), the wiring of the
//! adapters, and the mapping of Lambda events (an SQS batch from the reply
//! queue or a dead-letter queue, or the scheduled health check:
//! [`ResponderEvent`]) to calls and back.

use adapters_aws::Later;
use adapters_aws::dynamodb::{self, DynamoRecords};
use adapters_aws::sqs::{self, Visibility};
use adapters_slack::web::{BotToken, DEFAULT_BASE_URL, WebClient};
use adapters_slack::{OutputGuard, WebPoster};
use assistant_core::alerts::OpsAlerts;
use assistant_core::messages::ReplyMessage;
use assistant_core::ports::VersionedRecords;
use assistant_core::store::{RecordDeliveries, RecordTurns, StreamLog};
use assistant_core::{Clock, SystemClock};
use aws_lambda_events::sqs::SqsEvent;
use lambda_support::env::{self, ConfigError, optional, required};
use lambda_support::events::{self, Events, UnsupportedEvent};
use lambda_support::health::{self, HealthCheck, HealthReport};
use lambda_support::metrics::Emf;
use lambda_support::sqs_batch::{self, Handled, Permanent, Record};
use lambda_support::startup::{ColdStart, Deferred};
use responder_logic::{DeadLetter, Outcome, Responder, ResponderError};
use serde::Deserialize;
use serde_json::Value;
use slack::ChannelId;
use slack::mentions::SpecialMentions;
use std::sync::Arc;
use tracing::error;

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
    /// The special mentions an answer may use
    /// (`SLACK_ALLOWED_SPECIAL_MENTIONS`, e.g. `here,subteam`; default none):
    /// the Web API client's output guard applies it to every request.
    pub special_mentions: SpecialMentions,
    /// Where operators are alerted (`OPS_CHANNEL_ID`); none when unset.
    pub ops_channel: Option<ChannelId>,
}

impl Config {
    /// The environment's configuration. The bot token given as a Secrets
    /// Manager id (`SLACK_BOT_TOKEN_ID`, as the template deploys it) is read
    /// here, once; a token that cannot be read stops the start.
    pub async fn from_env() -> Result<Self, ConfigError> {
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
        let special_mentions = SpecialMentions::parse(&optional("SLACK_ALLOWED_SPECIAL_MENTIONS").unwrap_or_default())
            .map_err(|reason| ConfigError::Invalid { name: "SLACK_ALLOWED_SPECIAL_MENTIONS", reason })?;
        let slack_bot_token = env::required_secret("SLACK_BOT_TOKEN", "SLACK_BOT_TOKEN_ID")?;
        let (turns_table, reply_queue_url) = (required("TURNS_TABLE")?, required("REPLY_QUEUE_URL")?);
        let ops_channel = env::ops_channel()?.map(ChannelId::new);
        let [slack_bot_token] =
            env::read_secrets([Some(slack_bot_token)], adapters_secrets::SecretsManager::at_start_up).await?;
        let slack_bot_token = BotToken::new(slack_bot_token.unwrap_or_default());
        Ok(Self {
            turns_table,
            reply_queue_url,
            slack_bot_token,
            slack_api_base_url: optional("SLACK_API_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            dead_letter_queue_arns: optional("DEAD_LETTER_QUEUE_ARNS")
                .map(|arns| arns.split(',').map(|arn| arn.trim().to_owned()).filter(|arn| !arn.is_empty()).collect())
                .unwrap_or_default(),
            unfurl_links,
            special_mentions,
            ops_channel,
        })
    }
}

/// The clients the responder uses, one per process; the queues' is built
/// when a call first needs it (a failed record's backoff, the health
/// check): a delivery needs the table and Slack only.
#[derive(Debug, Clone)]
pub struct Clients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: Later<aws_sdk_sqs::Client>,
    pub http: reqwest::Client,
}

impl Clients {
    pub fn new(aws: &aws_config::SdkConfig) -> Self {
        Self::with_http(aws, adapters_slack::http_client())
    }

    /// The AWS clients on `aws`, beside an HTTP client built elsewhere
    /// (start-up builds the two on different cores).
    pub fn with_http(aws: &aws_config::SdkConfig, http: reqwest::Client) -> Self {
        Self { dynamodb: aws_sdk_dynamodb::Client::new(aws), sqs: sqs::client_on_first_use(aws), http }
    }
}

/// The events the responder takes.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum ResponderEvent {
    HealthCheck(HealthCheck),
    /// From the reply queue, or a dead-letter queue.
    Batch(SqsEvent),
}

impl Events for ResponderEvent {
    const EXPECTED: &'static str = "an SQS batch or the scheduled health check";
}

/// The responder's cold start (`lambda_support::startup` says what runs on
/// which thread): from [`ResponderStart::begin`], the AWS SDK's
/// configuration and clients (the credential chain, the trusted roots) on
/// one helper thread and the HTTP client for Slack on another; the
/// function is assembled from both.
pub struct ResponderStart {
    config: Config,
    aws: Deferred<aws_config::SdkConfig>,
    http: Deferred<reqwest::Client>,
}

impl ResponderStart {
    /// Starts the helper threads.
    pub fn begin(config: Config) -> Self {
        let aws = Deferred::spawn(|| adapters_aws::config::load(adapters_aws::config::responder_timeouts()));
        let http = Deferred::spawn(|| async { adapters_slack::http_client() });
        Self { config, aws, http }
    }
}

impl ColdStart for ResponderStart {
    type Function = ResponderFunction;
    type Event = ResponderEvent;

    async fn assemble(&self) -> Result<ResponderFunction, lambda_runtime::Error> {
        let (aws, http) = tokio::join!(self.aws.get(), self.http.get());
        Ok(ResponderFunction::new(self.config.clone(), Clients::with_http(aws, http.clone())))
    }
}

pub struct ResponderFunction {
    responder: Responder,
    /// The same client the poster uses, for the health check's `auth.test`.
    slack: WebClient,
    clients: Clients,
    config: Config,
    /// When a failed record comes back: after a backoff.
    visibility: Visibility,
}

impl ResponderFunction {
    /// The function's one assembly: the responder logic on the turns table
    /// and Slack's Web API.
    pub fn new(config: Config, clients: Clients) -> Self {
        let slack = WebClient::new(clients.http.clone(), &config.slack_api_base_url, config.slack_bot_token.clone())
            .with_guard(OutputGuard::new(config.special_mentions));
        let records: Arc<dyn VersionedRecords> =
            Arc::new(DynamoRecords::new(clients.dynamodb.clone(), &config.turns_table));
        let alerts = config
            .ops_channel
            .clone()
            .map(|channel| OpsAlerts::new(channel, Arc::new(slack.clone()), records.clone(), Arc::new(SystemClock)));
        let responder = Responder {
            turns: Arc::new(RecordTurns::new(records.clone())),
            deliveries: Arc::new(RecordDeliveries::new(records.clone())),
            streams: StreamLog::new(records),
            slack: Arc::new(WebPoster::new(slack.clone(), config.unfurl_links)),
            clock: Arc::new(SystemClock),
            mentions: config.special_mentions,
            alerts,
        };
        let visibility = Visibility::new(clients.sqs.clone(), &[&config.reply_queue_url]);
        Self { responder, slack, clients, config, visibility }
    }

    /// One invocation given as JSON (tests).
    pub async fn handle(&self, event: Value) -> Result<Value, UnsupportedEvent> {
        Ok(self.handle_event(events::read(event)?).await)
    }

    /// One invocation: a health check, or a batch from the reply queue or
    /// a dead-letter queue.
    pub async fn handle_event(&self, event: ResponderEvent) -> Value {
        match event {
            ResponderEvent::HealthCheck(_) => {
                let report = self.health().await.published();
                report.alert(self.responder.alerts.as_ref(), SystemClock.now_unix()).await;
                serde_json::to_value(report).expect("health report serializes")
            }
            ResponderEvent::Batch(batch) => {
                let handled = sqs_batch::handle_event(&batch, &self.visibility, |record| self.handle_record(record));
                serde_json::to_value(handled.await).expect("batch response serializes")
            }
        }
    }

    async fn handle_record(&self, record: Record<'_>) -> Handled {
        let dead_letter = self.config.dead_letter_queue_arns.iter().any(|arn| arn == record.source);
        let retries_before = self.slack.retries();
        let measured = |result: Result<Outcome, ResponderError>| {
            let posted = match &result {
                Ok(Outcome::Delivered { posted, .. }) => *posted as u64,
                _ => 0,
            };
            Emf::new(FUNCTION_NAME, &[])
                .count("Posted", posted)
                .count("SlackRetries", self.slack.retries() - retries_before)
                .count("DeadLetters", u64::from(dead_letter))
                .emit();
            result
        };
        if !dead_letter {
            return match ReplyMessage::decode(record.body) {
                Ok(message) => {
                    sqs_batch::settle(measured(self.responder.handle(&message).await), Permanent::ToDeadLetterQueue)
                }
                Err(err) => sqs_batch::malformed(&err),
            };
        }
        match DeadLetter::decode(record.body) {
            // A dead letter ends here: retrying cannot help once SQS gave up.
            Some(letter) => {
                sqs_batch::settle(measured(self.responder.handle_dead_letter(&letter).await), Permanent::Drop)
            }
            None => {
                // Already where failed messages end: retrying cannot help.
                error!(
                    queue = record.source,
                    body = %redact::redact(&preview(record.body)),
                    "unreadable message in a dead-letter queue: dropped"
                );
                Handled::Done
            }
        }
    }

    /// Checks the table, the reply queue and the Slack token.
    pub async fn health(&self) -> HealthReport {
        let slack = async { self.slack.auth_test().await.map(|_| ()).map_err(|err| err.to_string()) };
        let (table, replies, slack) = tokio::join!(
            health::check("dynamodb", dynamodb::check_reads(&self.clients.dynamodb, &self.config.turns_table)),
            health::check("sqs_reply", sqs::check_queue(self.clients.sqs.get(), &self.config.reply_queue_url)),
            health::check("slack", slack),
        );
        HealthReport::new(FUNCTION_NAME, VERSION, vec![table, replies, slack])
    }
}

/// The start of a message body, for a log line.
fn preview(body: &str) -> String {
    body.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(file: &str) -> Result<ResponderEvent, UnsupportedEvent> {
        events::read(serde_json::from_str(file).expect("an event file is JSON"))
    }

    #[test]
    fn each_event_the_responder_takes_is_read_as_its_kind_and_any_other_is_unsupported() {
        let reply = read(include_str!("../../../tests/events/responder-sqs-deliver.json"));
        assert!(matches!(reply, Ok(ResponderEvent::Batch(batch)) if batch.records.len() == 1));
        let dead_letter = read(include_str!("../../../tests/events/responder-sqs-dead-letter.json"));
        assert!(matches!(dead_letter, Ok(ResponderEvent::Batch(_))));
        let health = read(include_str!("../../../tests/events/scheduled-health-check.json"));
        assert!(matches!(health, Ok(ResponderEvent::HealthCheck(_))));
        let sweep = read(include_str!("../../../tests/events/worker-approval-sweep.json")).unwrap_err();
        assert_eq!(sweep.expected, ResponderEvent::EXPECTED);
    }
}
