//! The worker function between Lambda and `agent::worker`: its
//! configuration, the wiring of the AWS adapters, and the mapping of Lambda
//! events (an SQS batch from the work queue, or the scheduled health check)
//! to calls and back.

use agent::config::{AssistantConfig, DEFAULT_CONFIG_KEY};
use agent::ports::ArtifactStore;
use agent::tools::ToolRegistry;
use agent::worker::{Deadline, Limits, Worker};
use agent::{SystemClock, WorkMessage};
use aws_adapters::bedrock::{self, BedrockModel};
use aws_adapters::dynamodb::{self, DynamoTurns};
use aws_adapters::s3::{self, S3Artifacts};
use aws_adapters::sqs::{self, SqsQueue};
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use runtime_support::UnsupportedEvent;
use runtime_support::env::{ConfigError, optional, required};
use runtime_support::health::{self, HealthReport};
use runtime_support::sqs_batch::{self, Handled, Record};
use serde_json::Value;
use slack::web::{BotToken, DEFAULT_BASE_URL, WebClient};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tracing::{error, info, warn};

mod slack_reader;
pub use slack_reader::SlackWebReader;

pub const FUNCTION_NAME: &str = "worker";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The runtime contract's variables this function reads.
#[derive(Debug, Clone)]
pub struct Config {
    pub turns_table: String,
    pub work_queue_url: String,
    pub reply_queue_url: String,
    pub artifact_bucket: String,
    pub model_id: String,
    pub slack_bot_token: BotToken,
    pub slack_api_base_url: String,
    /// Where the assistant configuration lives in the artifact bucket.
    pub assistant_config_key: String,
    pub limits: Limits,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        let mut limits = Limits::default();
        if let Some(max_steps) = optional("MAX_STEPS") {
            limits.max_steps = max_steps
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(ConfigError::Invalid { name: "MAX_STEPS", reason: "not a positive whole number".into() })?;
        }
        Ok(Self {
            turns_table: required("TURNS_TABLE")?,
            work_queue_url: required("WORK_QUEUE_URL")?,
            reply_queue_url: required("REPLY_QUEUE_URL")?,
            artifact_bucket: required("ARTIFACT_BUCKET")?,
            model_id: required("MODEL_ID")?,
            slack_bot_token: BotToken::new(required("SLACK_BOT_TOKEN")?),
            slack_api_base_url: optional("SLACK_API_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            assistant_config_key: optional("ASSISTANT_CONFIG_KEY").unwrap_or_else(|| DEFAULT_CONFIG_KEY.to_owned()),
            limits,
        })
    }
}

pub type AwsWorker = Worker<DynamoTurns, BedrockModel, SqsQueue, SqsQueue, S3Artifacts, SlackWebReader, SystemClock>;

/// The clients the worker uses, built once per process.
#[derive(Debug, Clone)]
pub struct Clients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
    pub bedrock: aws_sdk_bedrockruntime::Client,
    pub http: reqwest::Client,
}

impl Clients {
    pub fn new(aws: &aws_config::SdkConfig) -> Self {
        let bedrock_config =
            aws_sdk_bedrockruntime::config::Builder::from(aws).retry_config(bedrock::retry_config()).build();
        Self {
            dynamodb: aws_sdk_dynamodb::Client::new(aws),
            sqs: aws_sdk_sqs::Client::new(aws),
            s3: s3::client(aws),
            bedrock: aws_sdk_bedrockruntime::Client::from_conf(bedrock_config),
            http: slack::web::http_client(),
        }
    }
}

pub struct WorkerFunction {
    worker: AwsWorker,
    clients: Clients,
    config: Config,
}

/// Why the function could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot read {key} from the artifact bucket: {source}")]
    Read {
        key: String,
        #[source]
        source: agent::ports::PortError,
    },
    #[error("{key} is not a valid assistant configuration: {source}")]
    Config {
        key: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("the system prompt {0} named in the assistant configuration does not exist")]
    MissingPrompt(String),
    #[error("the tools cannot be defined: {0}")]
    Tools(#[from] agent::tools::ToolDefinitionError),
    #[error("the http_tools in the assistant configuration are not valid: {0}")]
    HttpToolsConfig(#[source] serde_json::Error),
    #[error(transparent)]
    HttpTools(#[from] http_tools::HttpToolError),
}

/// The built-in tools, the docs tools and the declared HTTP tools, under
/// the configured policy. Header secrets come from the environment.
pub fn tools_for(
    assistant: &AssistantConfig,
    artifacts: Arc<S3Artifacts>,
    http: reqwest::Client,
) -> Result<ToolRegistry, StartupError> {
    let declared: Vec<http_tools::HttpToolConfig> =
        serde_json::from_value(assistant.http_tools.clone().into()).map_err(StartupError::HttpToolsConfig)?;
    let mut tools = vec![agent::builtin_tools::current_time(Arc::new(SystemClock))];
    tools.extend(agent::docs_tools::docs_tools(artifacts, &assistant.docs_prefix)?);
    tools.extend(http_tools::http_tools(&declared, http, |name| std::env::var(name).ok())?);
    Ok(ToolRegistry::new(tools, assistant.policy())?)
}

/// Time left before Lambda's deadline (milliseconds since the epoch).
struct LambdaDeadline(u64);

impl Deadline for LambdaDeadline {
    fn time_left(&self) -> Duration {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
        Duration::from_millis(self.0.saturating_sub(now))
    }
}

impl WorkerFunction {
    /// Reads the assistant configuration (and the system prompt it names)
    /// from the artifact bucket and assembles the function.
    pub async fn load(config: Config, clients: Clients) -> Result<Self, StartupError> {
        let artifacts = Arc::new(S3Artifacts::new(clients.s3.clone(), &config.artifact_bucket));
        let read = |key: String| {
            let artifacts = artifacts.clone();
            async move { artifacts.get(&key).await.map_err(|source| StartupError::Read { key: key.clone(), source }) }
        };
        let assistant = match read(config.assistant_config_key.clone()).await? {
            Some(json) => AssistantConfig::parse(&json)
                .map_err(|source| StartupError::Config { key: config.assistant_config_key.clone(), source })?,
            None => AssistantConfig::default(),
        };
        let system_prompt = match &assistant.system_prompt_key {
            Some(key) => {
                let prompt = read(key.clone()).await?.ok_or_else(|| StartupError::MissingPrompt(key.clone()))?;
                String::from_utf8_lossy(&prompt).into_owned()
            }
            None => agent::DEFAULT_SYSTEM_PROMPT.to_owned(),
        };
        let tools = tools_for(&assistant, artifacts, clients.http.clone())?;
        info!(
            config = %config.assistant_config_key,
            prompt = assistant.system_prompt_key.as_deref().unwrap_or("bundled"),
            docs = %assistant.docs_prefix,
            "assistant configured"
        );
        Ok(Self::assemble(config, clients, tools, system_prompt))
    }

    /// The function with these tools and prompt (tests give their own).
    pub fn assemble(config: Config, clients: Clients, tools: ToolRegistry, system_prompt: String) -> Self {
        let worker = Worker {
            store: DynamoTurns::new(clients.dynamodb.clone(), &config.turns_table),
            model: BedrockModel::new(clients.bedrock.clone(), &config.model_id),
            work: SqsQueue::new(clients.sqs.clone(), &config.work_queue_url),
            replies: SqsQueue::new(clients.sqs.clone(), &config.reply_queue_url),
            artifacts: S3Artifacts::new(clients.s3.clone(), &config.artifact_bucket),
            slack: SlackWebReader::new(WebClient::new(
                clients.http.clone(),
                &config.slack_api_base_url,
                config.slack_bot_token.clone(),
            )),
            tools,
            clock: SystemClock,
            system_prompt,
            limits: config.limits,
        };
        Self { worker, clients, config }
    }

    /// One invocation: a health check or a batch from the work queue.
    /// `deadline_ms` is the invocation's deadline (Unix milliseconds).
    pub async fn handle(&self, event: Value, deadline_ms: u64) -> Result<Value, UnsupportedEvent> {
        if health::is_scheduled_event(&event) {
            return Ok(serde_json::to_value(self.health().await).expect("health report serializes"));
        }
        let batch: SqsEvent =
            serde_json::from_value(event).map_err(|source| UnsupportedEvent { expected: "an SQS batch", source })?;
        let response = self.handle_batch(&batch, &LambdaDeadline(deadline_ms)).await;
        Ok(serde_json::to_value(response).expect("batch response serializes"))
    }

    async fn handle_batch(&self, batch: &SqsEvent, deadline: &impl Deadline) -> SqsBatchResponse {
        sqs_batch::handle_event(batch, |record| self.handle_record(record, deadline)).await
    }

    async fn handle_record(&self, record: Record<'_>, deadline: &impl Deadline) -> Handled {
        let message = match WorkMessage::decode(record.body) {
            Ok(message) => message,
            Err(err) => {
                error!(message_id = record.message_id, error = %err, "malformed work message: left for the dead-letter queue");
                return Handled::Failed;
            }
        };
        match self.worker.handle(&message, deadline).await {
            Ok(outcome) => {
                info!(message_id = record.message_id, ?outcome, "work handled");
                Handled::Done
            }
            Err(err) if err.is_retryable() => {
                warn!(message_id = record.message_id, error = %err, "work failed; SQS will redeliver it");
                Handled::Failed
            }
            Err(err) => {
                error!(message_id = record.message_id, error = %err, "work cannot succeed: left for the dead-letter queue");
                Handled::Failed
            }
        }
    }

    /// Checks the table, both queues and the bucket this function uses.
    pub async fn health(&self) -> HealthReport {
        let (table, work, replies, bucket) = tokio::join!(
            health::check("dynamodb", dynamodb::check_table(&self.clients.dynamodb, &self.config.turns_table)),
            health::check("sqs_work", sqs::check_queue(&self.clients.sqs, &self.config.work_queue_url)),
            health::check("sqs_reply", sqs::check_queue(&self.clients.sqs, &self.config.reply_queue_url)),
            health::check("s3", s3::check_bucket(&self.clients.s3, &self.config.artifact_bucket)),
        );
        HealthReport::new(FUNCTION_NAME, VERSION, vec![table, work, replies, bucket])
    }
}
