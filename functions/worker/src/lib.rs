//! The worker function between Lambda and the worker's crates: its
//! configuration, its cold start ([`WorkerStart`]), the AWS and Slack
//! adapters behind the worker's ports, and the mapping of Lambda events (an
//! SQS batch from the work queue, the approval sweep, or the scheduled
//! health check: [`WorkerEvent`]) to calls and back. The worker itself is
//! built by `worker_config::assemble`, as in the local runner.

use adapters_aws::dynamodb::{self, DynamoClaims, DynamoContexts, DynamoRecords, DynamoTimers};
use adapters_aws::sqs::{self, SqsQueue, Visibility};
use adapters_bedrock::BedrockModel;
use adapters_cloudwatch::SignedAws;
use adapters_knowledge_base::BedrockKnowledgeBases;
use adapters_mcp::StreamableHttpConnector;
use adapters_s3::S3Artifacts;
use adapters_secrets::SecretsManager;
use adapters_sigv4::{AwsApi, Signer};
use adapters_slack::web::{BotToken, DEFAULT_BASE_URL, WebClient};
use adapters_slack::{OutputGuard, SlackWebReader, WebAgent};
use assistant_core::alerts::OpsAlerts;
use assistant_core::feedback::FeedbackLog;
use assistant_core::oauth::{ConnectStates, SealedVault};
use assistant_core::ports::{MessageVisibility, StoredRecord, VersionedRecords};
use assistant_core::store::{ReadAhead, RecordDeliveries, RecordTurns, StreamLog};
use assistant_core::{Clock, SystemClock, WorkMessage};
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use lambda_support::env::{self, ConfigError, optional, required};
use lambda_support::events::{self, Events, UnsupportedEvent};
use lambda_support::health::{self, HealthCheck, HealthReport};
use lambda_support::metrics::EmfTurnMetrics;
use lambda_support::sqs_batch::{self, Permanent, Record};
use lambda_support::startup::{ColdStart, Deferred, FirstRead};
use serde::Deserialize;
use serde_json::Value;
use slack::mentions::SpecialMentions;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tools_registry::ToolRegistry;
use worker_config::fallback::{self, ConfigProblem, Serving, Started};
use worker_config::kept::{self, KeptConfiguration, ReadConfiguration};
use worker_config::{AssistantConfig, DEFAULT_CONFIG_KEY};
use worker_config::{StartupError, WorkerPorts};
use worker_identity::sign_in::SignInPorts;
use worker_turn::{Deadline, Limits, Worker};

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
    /// The Secrets Manager prefix `${secret:NAME}` is read under (the
    /// template scopes the worker's permission to it).
    pub secrets_prefix: String,
    /// The function's memory (Lambda's `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`),
    /// for the compute part of a turn's cost.
    pub memory_mb: u32,
    /// Where operators are alerted of a degraded health check
    /// (`OPS_CHANNEL_ID`); none when unset.
    pub ops_channel: Option<slack::ChannelId>,
    /// Per-user sign-in (`TOKEN_KEY_ID`: the KMS key that seals people's
    /// tokens; `OAUTH_REDIRECT_URI`: the ingress's function URL +
    /// `/oauth/callback`); both or neither.
    pub sign_in: Option<(String, assistant_core::oauth::SignInUrls)>,
    pub limits: Limits,
    /// The special mentions the bot may use (`SLACK_ALLOWED_SPECIAL_MENTIONS`,
    /// as on the responder; default none): the Web API client's output
    /// guard applies it to everything the worker posts.
    pub special_mentions: SpecialMentions,
}

impl Config {
    /// The environment's configuration. The bot token given as a Secrets
    /// Manager id (`SLACK_BOT_TOKEN_ID`, as the template deploys it) is read
    /// here, once; a token that cannot be read stops the start.
    pub async fn from_env() -> Result<Self, ConfigError> {
        let mut limits = Limits::default();
        if let Some(max_steps) = optional("MAX_STEPS") {
            limits.max_steps = max_steps
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(ConfigError::Invalid { name: "MAX_STEPS", reason: "not a positive whole number".into() })?;
        }
        let slack_bot_token = env::required_secret("SLACK_BOT_TOKEN", "SLACK_BOT_TOKEN_ID")?;
        let (turns_table, work_queue_url) = (required("TURNS_TABLE")?, required("WORK_QUEUE_URL")?);
        let (reply_queue_url, artifact_bucket) = (required("REPLY_QUEUE_URL")?, required("ARTIFACT_BUCKET")?);
        let (model_id, ops_channel, sign_in) = (required("MODEL_ID")?, env::ops_channel()?, sign_in_from_env()?);
        let special_mentions = SpecialMentions::parse(&optional("SLACK_ALLOWED_SPECIAL_MENTIONS").unwrap_or_default())
            .map_err(|reason| ConfigError::Invalid { name: "SLACK_ALLOWED_SPECIAL_MENTIONS", reason })?;
        // Read last: every other variable is checked before a network call.
        let [slack_bot_token] = env::read_secrets([Some(slack_bot_token)], SecretsManager::at_start_up).await?;
        Ok(Self {
            turns_table,
            work_queue_url,
            reply_queue_url,
            artifact_bucket,
            model_id,
            slack_bot_token: BotToken::new(slack_bot_token.unwrap_or_default()),
            slack_api_base_url: optional("SLACK_API_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            assistant_config_key: optional("ASSISTANT_CONFIG_KEY").unwrap_or_else(|| DEFAULT_CONFIG_KEY.to_owned()),
            secrets_prefix: optional("SECRETS_PREFIX").unwrap_or_else(|| adapters_secrets::DEFAULT_PREFIX.to_owned()),
            memory_mb: optional("AWS_LAMBDA_FUNCTION_MEMORY_SIZE").and_then(|mb| mb.parse().ok()).unwrap_or(512),
            ops_channel: ops_channel.map(slack::ChannelId::new),
            sign_in,
            limits,
            special_mentions,
        })
    }
}

/// `TOKEN_KEY_ID` and `OAUTH_REDIRECT_URI`, both or neither.
fn sign_in_from_env() -> Result<Option<(String, assistant_core::oauth::SignInUrls)>, ConfigError> {
    match (optional("TOKEN_KEY_ID"), optional("OAUTH_REDIRECT_URI")) {
        (None, None) => Ok(None),
        (Some(key), Some(uri)) => {
            let urls = url::Url::parse(&uri)
                .ok()
                .and_then(|uri| assistant_core::oauth::SignInUrls::from_callback(&uri))
                .ok_or(ConfigError::Invalid {
                    name: "OAUTH_REDIRECT_URI",
                    reason: "not an https URL ending in /oauth/callback".into(),
                })?;
            Ok(Some((key, urls)))
        }
        (Some(_), None) => Err(ConfigError::Invalid {
            name: "OAUTH_REDIRECT_URI",
            reason: "TOKEN_KEY_ID is set: set the callback URL too".into(),
        }),
        (None, Some(_)) => Err(ConfigError::Invalid {
            name: "TOKEN_KEY_ID",
            reason: "OAUTH_REDIRECT_URI is set: set the key that seals tokens too".into(),
        }),
    }
}

/// The clients the worker uses, built once per process.
#[derive(Debug, Clone)]
pub struct Clients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
    pub bedrock: aws_sdk_bedrockruntime::Client,
    pub http: reqwest::Client,
    /// The region, credentials and endpoints for the calls signed by hand
    /// (Secrets Manager, CloudWatch, Logs, knowledge bases).
    pub aws: aws_config::SdkConfig,
}

/// The AWS clients of [`Clients`]: start-up builds them where the SDK's
/// configuration is loaded, while the HTTP client is built on another core
/// ([`WorkerStart`]).
#[derive(Debug, Clone)]
pub struct AwsClients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
    pub bedrock: aws_sdk_bedrockruntime::Client,
    pub aws: aws_config::SdkConfig,
}

impl AwsClients {
    /// The clients, the table's and the queues' built already (start-up
    /// builds those first: the first invocation's read needs them only).
    pub fn new(aws: &aws_config::SdkConfig, dynamodb: aws_sdk_dynamodb::Client, sqs: aws_sdk_sqs::Client) -> Self {
        let bedrock_config = aws_sdk_bedrockruntime::config::Builder::from(aws)
            .retry_config(adapters_bedrock::retry_config())
            .timeout_config(adapters_bedrock::timeout_config(worker_turn::MODEL_CALL_TIME))
            .build();
        Self {
            dynamodb,
            sqs,
            s3: adapters_s3::client(aws),
            bedrock: aws_sdk_bedrockruntime::Client::from_conf(bedrock_config),
            aws: aws.clone(),
        }
    }
}

impl Clients {
    pub fn with(aws: AwsClients, http: reqwest::Client) -> Self {
        let AwsClients { dynamodb, sqs, s3, bedrock, aws } = aws;
        Self { dynamodb, sqs, s3, bedrock, http, aws }
    }
}

/// The worker's cold start (`lambda_support::startup` says what runs on
/// which thread). From [`WorkerStart::begin`], a helper thread loads the AWS
/// SDK's configuration and builds the table's and the queues' clients
/// first, hands over the [`Arrival`] built on them (the first invocation's
/// read needs no other client), starts a third thread for the HTTP client
/// for Slack and the tools (its own root store), and builds the bucket's
/// and the model's clients. The first invocation's read-ahead
/// ([`Arrival::prepare`]) fetches the turns its messages name and the copy
/// of the assistant configuration the workers keep in one request; the
/// worker is assembled from that copy when it is fresh, from the bucket
/// otherwise, and the invocation's work waits for both. A bucket
/// configuration that cannot be used does not stop the start: the worker
/// serves the last one that parsed (or the defaults) and reports it
/// (`worker_config::fallback`). A worker that cannot start even so
/// stops the process, logged, as a failed init does.
pub struct WorkerStart {
    config: Config,
    arrival: Deferred<Arrival>,
    aws: Deferred<(AwsClients, Deferred<reqwest::Client>)>,
}

impl WorkerStart {
    /// Starts the helper threads.
    pub fn begin(config: Config) -> Self {
        let for_arrival = config.clone();
        let (send_arrival, arrival) = Deferred::sent();
        let aws = Deferred::spawn(move || async move {
            let sdk = adapters_aws::config::load(adapters_aws::config::worker_timeouts()).await;
            // The table's and the queues' clients first: the first
            // invocation's read needs no other, and starts while the rest
            // are built (the HTTP client too, which parses the platform's
            // roots: not before).
            let (dynamodb, sqs) = (aws_sdk_dynamodb::Client::new(&sdk), aws_sdk_sqs::Client::new(&sdk));
            // The receiver is gone only if the process is shutting down.
            let _ = send_arrival.send(Arrival::new(&dynamodb, &sqs, &for_arrival));
            let http = Deferred::spawn(|| async { adapters_slack::http_client() });
            (AwsClients::new(&sdk, dynamodb, sqs), http)
        });
        Self { config, arrival, aws }
    }
}

impl ColdStart for WorkerStart {
    type Function = WorkerFunction;
    type Event = WorkerEvent;

    async fn assemble(&self) -> Result<WorkerFunction, lambda_runtime::Error> {
        let (arrival, (aws, http)) = tokio::join!(self.arrival.get(), self.aws.get());
        let kept = arrival.kept_configuration(FIRST_EVENT_GRACE).await;
        let configured = WorkerFunction::configuration(&self.config, &aws.s3, arrival, kept);
        let (configured, http) = tokio::join!(configured, http.get());
        let clients = Clients::with(aws.clone(), http.clone());
        let config = self.config.clone();
        Ok(Box::pin(WorkerFunction::load_with(config, clients, configured, arrival.clone())).await?)
    }

    async fn read_ahead(&self, event: &WorkerEvent) {
        self.arrival.get().await.prepare(event).await;
    }
}

/// What an invocation starts before it needs the assembled worker: the
/// turns its messages name, read ahead. It needs the table only, so a cold
/// worker starts it while it is still assembling its tools; the worker's
/// store is its [`ReadAhead`], whose first load of each turn takes what was
/// read. The first invocation's read also fetches, in the same request,
/// the copy of the configuration the workers keep
/// ([`worker_config::kept`]), which the assembly starts from. It
/// also holds the messages of work that outlives [`HOLD_AFTER`].
#[derive(Clone)]
pub struct Arrival {
    visibility: Arc<Visibility>,
    turns: Arc<ReadAhead>,
    /// The turns table, for every other record the worker keeps.
    records: Arc<dyn VersionedRecords>,
    /// The kept configuration's record, read once: by the first invocation
    /// beside its turns, or alone by the assembly when no invocation comes.
    first_read: Arc<FirstRead<Option<StoredRecord>>>,
}

impl Arrival {
    pub fn new(dynamodb: &aws_sdk_dynamodb::Client, sqs: &aws_sdk_sqs::Client, config: &Config) -> Self {
        let records: Arc<dyn VersionedRecords> = Arc::new(DynamoRecords::new(dynamodb.clone(), &config.turns_table));
        Self {
            visibility: Arc::new(Visibility::new(sqs.clone(), &[&config.work_queue_url])),
            turns: Arc::new(ReadAhead::new(RecordTurns::new(records.clone()))),
            records,
            first_read: Arc::default(),
        }
    }

    /// Reads ahead the turns a work-queue batch names (all but a new
    /// question's, which nothing has stored yet), in one request; the
    /// first invocation's read, whatever its event, also fetches the kept
    /// configuration.
    pub async fn prepare(&self, event: &WorkerEvent) {
        let turns: Vec<_> = match event {
            WorkerEvent::Batch(batch) => batch
                .records
                .iter()
                .filter_map(|message| match WorkMessage::decode(message.body.as_deref()?) {
                    Ok(WorkMessage::StartTurn(_)) | Err(_) => None,
                    Ok(message) => message.turn_id(),
                })
                .collect(),
            WorkerEvent::HealthCheck(_) | WorkerEvent::ApprovalSweep(_) => Vec::new(),
        };
        let first = self.first_read.ask();
        let also = if first { vec![kept::record_key()] } else { Vec::new() };
        let read = self.turns.read(turns, &also).await;
        if first {
            let found = read.map(|mut found| found.pop().flatten()).unwrap_or_else(|err| {
                tracing::warn!(error = %err, "the first turns and the kept configuration were not read ahead: the assembly reads the bucket");
                None
            });
            self.first_read.set(found);
        }
    }

    /// The kept configuration's record as the first invocation's read found
    /// it; read alone when no invocation has asked within `grace` (a start
    /// before any event).
    pub async fn kept_configuration(&self, grace: Duration) -> Option<StoredRecord> {
        let read_alone = async {
            self.records.get(&kept::record_key()).await.unwrap_or_else(|err| {
                tracing::warn!(error = %err, "the kept configuration was not read: the assembly reads the bucket");
                None
            })
        };
        self.first_read.get(grace, read_alone).await.clone()
    }

    /// After [`HOLD_AFTER`], holds the batch's messages until just past the
    /// invocation's end: if the process then dies (a crash, the Lambda
    /// timeout), a message is back in minutes, not after the queue's
    /// visibility timeout. Work done sooner (a click, a rating, most
    /// continuations' first saves) needs no hold and makes no call for it.
    /// The caller drops it when the work is done.
    async fn hold_if_long(&self, batch: &SqsEvent, deadline_ms: u64) {
        tokio::time::sleep(HOLD_AFTER).await;
        let until = LambdaDeadline(deadline_ms).time_left() + HOLD_MARGIN;
        futures_util::future::join_all(batch.records.iter().map(Record::from).map(|record| async move {
            if let Err(err) = self.visibility.set(record.source, record.receipt_handle, until).await {
                tracing::warn!(error = %err, "message not held for the invocation: the queue's visibility timeout applies");
            }
        }))
        .await;
    }
}

/// The events the worker takes, read once, for [`Arrival::prepare`] and
/// the handling both.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum WorkerEvent {
    HealthCheck(HealthCheck),
    ApprovalSweep(ApprovalSweep),
    Batch(SqsEvent),
}

impl Events for WorkerEvent {
    const EXPECTED: &'static str = "an SQS batch, the approval sweep or the scheduled health check";
}

/// The scheduled event that sweeps due approval deadlines and configured
/// schedules (`template.yaml`, `ApprovalSweep`: `{"source":
/// "slack-assistant", "detail-type": "Approval Sweep"}`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ApprovalSweep {
    source: SlackAssistant,
    #[serde(rename = "detail-type")]
    detail_type: SweepDetail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum SlackAssistant {
    #[serde(rename = "slack-assistant")]
    SlackAssistant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum SweepDetail {
    #[serde(rename = "Approval Sweep")]
    ApprovalSweep,
}

/// The assistant configuration a starting worker tries first, as read
/// from the bucket at a time, directly or through the copy the workers
/// keep; and what it falls back to ([`worker_config::fallback`]).
pub struct Configured {
    /// The bucket's configuration (or its fresh copy), or why it could not
    /// be read.
    read: Result<ReadConfiguration, StartupError>,
    /// The kept copy's record as the first read found it, for the fallback
    /// (none: read it if the fallback is needed).
    kept: Option<StoredRecord>,
    copies: KeptConfiguration,
    /// `read` is the fresh kept copy (not kept again), read at this time.
    from_copy: Option<i64>,
}

/// Keeps a configuration read from the bucket for the next cold starts,
/// and as the fallback from broken uploads (background work: no answer
/// waits for it). Not fatal: a start that cannot keep it has it anyway, and
/// the next cold start reads the bucket.
async fn keep(copies: KeptConfiguration, read: ReadConfiguration) {
    if let Err(err) = copies.keep(&read).await {
        tracing::warn!(error = %err, "the configuration was not kept: the next cold start reads the bucket");
    }
}

/// `read_at` (Unix seconds) on this process's clock.
fn instant_of(read_at: i64) -> Instant {
    let age = (SystemClock.now_unix() - read_at).max(0) as u64;
    Instant::now().checked_sub(Duration::from_secs(age)).unwrap_or_else(Instant::now)
}

pub struct WorkerFunction {
    /// The worker for the configuration as last read, assembled again every
    /// [`REASSEMBLE_AFTER`].
    assembled: RwLock<Arc<Assembled>>,
    assembled_at: Mutex<Instant>,
    reassemble_after: Duration,
    clients: Clients,
    /// Messages held and turns read ahead; its visibility also sets a
    /// failed message's backoff.
    arrival: Arrival,
    config: Config,
    /// The worker's Slack client, for the health check's `auth.test`.
    slack: WebClient,
    /// The ops channel's alerts, for a degraded health check and a broken
    /// configuration.
    alerts: Option<Arc<OpsAlerts>>,
    /// Why the bucket's configuration is not what this worker serves (and
    /// what it serves instead): the health check's failed `config` check.
    config_problem: Mutex<Option<(ConfigProblem, Serving)>>,
}

/// A worker and what the health check needs of the configuration it was
/// assembled for.
struct Assembled {
    worker: Worker,
    /// Where the docs tools list: the one listing the worker's role allows,
    /// so the health check lists there too.
    docs_prefix: String,
    /// Which configuration it serves.
    serving: Serving,
    /// When that was read from the bucket (Unix seconds).
    read_at: i64,
    /// It came from an object's text (not the defaults).
    from_text: bool,
}

impl Assembled {
    /// The worker for `assistant`, which serves the bucket's configuration
    /// (see [`Assembled::serving`]).
    async fn new(
        config: &Config,
        clients: &Clients,
        arrival: &Arrival,
        slack: &WebClient,
        assistant: AssistantConfig,
    ) -> Result<Self, StartupError> {
        let worker = assemble_worker(config, clients, arrival, slack, &assistant).await?;
        let docs_prefix = assistant.docs_prefix;
        Ok(Self { worker, docs_prefix, serving: Serving::Current, read_at: 0, from_text: false })
    }

    /// The same worker, serving `serving`, which was read from the bucket
    /// at `read_at` (`from_text`: it was an object, not the defaults).
    fn serving(self, serving: Serving, read_at: i64, from_text: bool) -> Self {
        Self { serving, read_at, from_text, ..self }
    }

    /// What it serves while the bucket's configuration is broken: its own,
    /// the last that parsed and assembled.
    fn fallback(&self) -> Serving {
        match (self.serving, self.from_text) {
            (Serving::Current, true) => Serving::LastGood { read_at: self.read_at },
            (Serving::Current, false) => Serving::Defaults,
            (serving, _) => serving,
        }
    }
}

/// The health check's name for the assistant configuration (its
/// `health::check` call spells it too, for the runtime contract's test).
const CONFIG_CHECK: &str = "config";

/// How long a cold worker's assembly waits for the first invocation to read
/// the kept configuration beside its turns before reading it alone (a start
/// with no event yet).
pub const FIRST_EVENT_GRACE: Duration = Duration::from_millis(100);

/// How often a warm worker reads its configuration again and assembles
/// itself anew (beside an invocation's work; the next one uses it): a
/// configuration uploaded to the bucket, or an MCP server's changed tools
/// (`tools_mcp` keeps their lists), reach running workers
/// within minutes, not only new ones. As long as a kept copy of the
/// configuration is fresh for a cold worker, so new ones are no later.
pub const REASSEMBLE_AFTER: Duration = Duration::from_secs(kept::FRESH_FOR_SECS as u64);

/// How long past the invocation's deadline a message being worked on stays
/// hidden: then another worker may pick it up.
const HOLD_MARGIN: Duration = Duration::from_secs(10);

/// How long `load` waits for the start's background work (an MCP server's
/// tool list is read within 5 s). An invocation does not wait for it: it
/// goes on beside the work, and what Lambda freezes goes on when the
/// process thaws (every piece of it is a read or a put of the same item).
const BACKGROUND_WAIT: Duration = Duration::from_secs(6);

/// Work that has not finished after this long holds its messages.
const HOLD_AFTER: Duration = Duration::from_secs(1);

/// Time left before Lambda's deadline (milliseconds since the epoch).
struct LambdaDeadline(u64);

impl Deadline for LambdaDeadline {
    fn time_left(&self) -> Duration {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
        Duration::from_millis(self.0.saturating_sub(now))
    }
}

impl WorkerFunction {
    /// Reads the assistant configuration from the artifact bucket (and
    /// keeps a copy for cold starts) and assembles the worker on the AWS
    /// and Slack adapters. Tools' headers' `${env:NAME}` come from this
    /// process's environment, `${secret:NAME}` from Secrets Manager under
    /// `SECRETS_PREFIX`. Returns once the start's background work is done
    /// too.
    pub async fn load(config: Config, clients: Clients) -> Result<Self, StartupError> {
        let arrival = Arrival::new(&clients.dynamodb, &clients.sqs, &config);
        let configured = Self::configuration(&config, &clients.s3, &arrival, None).await;
        let function = Self::load_with(config, clients, configured, arrival).await?;
        // All of the start done before the first event, as callers of
        // `load` expect (`main` lets the first invocation finish it).
        function.settle().await;
        Ok(function)
    }

    /// Waits for the start's background work (tests, and [`Self::load`]).
    pub async fn settle(&self) {
        self.assembled().worker.background().settle(BACKGROUND_WAIT).await;
    }

    /// The configuration to start from: the copy the workers keep, when
    /// `kept` (its record, as [`Arrival::kept_configuration`] found it) is
    /// fresh and reads, else the artifact bucket's (the defaults when there
    /// is none). Whatever the bucket holds, a worker starts
    /// ([`Self::load_with`]).
    pub async fn configuration(
        config: &Config,
        s3: &aws_sdk_s3::Client,
        arrival: &Arrival,
        kept: Option<StoredRecord>,
    ) -> Configured {
        let key = &config.assistant_config_key;
        let copies = KeptConfiguration::new(arrival.records.clone(), key);
        if let Some(read) = copies.fresh(kept.as_ref(), SystemClock.now_unix()) {
            match read.parse(key) {
                Ok(_) => return Configured { from_copy: Some(read.read_at), read: Ok(read), kept, copies },
                Err(err) => tracing::warn!(error = %err, "the kept configuration no longer reads: reading the bucket"),
            }
        }
        let artifacts = S3Artifacts::new(s3.clone(), &config.artifact_bucket);
        let read = worker_config::assembly::read_config(&artifacts, key, SystemClock.now_unix()).await;
        Configured { read, kept, copies, from_copy: None }
    }

    /// The worker assembled for `configured` on `arrival`'s store: the
    /// bucket's configuration, or, when that cannot be used, the last one
    /// that parsed (the kept copy, however old) or else the defaults,
    /// reported ([`worker_config::fallback`]). A configuration read
    /// from the bucket is kept for cold starts by the worker's background
    /// work, which no answer waits for. Fails only when not even the
    /// defaults assemble.
    pub async fn load_with(
        config: Config,
        clients: Clients,
        configured: Configured,
        arrival: Arrival,
    ) -> Result<Self, StartupError> {
        let slack = WebClient::new(clients.http.clone(), &config.slack_api_base_url, config.slack_bot_token.clone())
            .with_guard(OutputGuard::new(config.special_mentions));
        let alerts = config.ops_channel.clone().map(|channel| {
            Arc::new(OpsAlerts::new(channel, Arc::new(slack.clone()), arrival.records.clone(), Arc::new(SystemClock)))
        });
        let Configured { read, kept, copies, from_copy } = configured;
        let checked_at = match &read {
            Ok(read) => read.read_at,
            Err(_) => SystemClock.now_unix(),
        };
        let last_good = async {
            let stored = match kept {
                Some(stored) => Some(stored),
                None => arrival.records.get(&kept::record_key()).await.unwrap_or_else(|err| {
                    tracing::warn!(error = %err, "the kept configuration was not read: no last good one to serve");
                    None
                }),
            };
            copies.last_good(stored.as_ref())
        };
        let (on, with, by, to) = (&config, &clients, &arrival, &slack);
        let assemble = move |assistant| Assembled::new(on, with, by, to, assistant);
        let object = &config.assistant_config_key;
        let started = fallback::start(object, read, last_good, assemble).await?;
        let Started { built, serving, read, problem } = started;
        let assembled = match &read {
            Some(read) => built.serving(serving, read.read_at, read.bytes.is_some()),
            None => {
                let from_text = serving != Serving::Defaults;
                built.serving(serving, if let Serving::LastGood { read_at } = serving { read_at } else { 0 }, from_text)
            }
        };
        if let Some(read) = read.filter(|_| from_copy.is_none()) {
            assembled.worker.background().spawn(keep(copies.clone(), read));
        }
        tracing::info!(config = %object, kept = from_copy.is_some(), ?serving, "worker assembled");
        if let Some(problem) = &problem {
            problem.log(serving);
            if let Some(alerts) = alerts.clone() {
                let problem = problem.clone();
                assembled.worker.background().spawn(async move {
                    fallback::report_once(&alerts, &problem, serving).await;
                });
            }
        }
        Ok(Self {
            assembled: RwLock::new(Arc::new(assembled)),
            // A kept copy is as old as its read: the bucket is read again
            // when it is `REASSEMBLE_AFTER` old, not that long after now.
            assembled_at: Mutex::new(instant_of(from_copy.unwrap_or(checked_at))),
            reassemble_after: REASSEMBLE_AFTER,
            clients,
            config,
            arrival,
            slack,
            alerts,
            config_problem: Mutex::new(problem.map(|problem| (problem, serving))),
        })
    }

    /// The same function with other tools (tests bring their own).
    pub fn with_tools(mut self, tools: ToolRegistry) -> Self {
        let assembled = Arc::get_mut(self.assembled.get_mut().expect("assembled lock")).expect("not yet shared");
        assembled.worker.replace_tools(tools);
        self
    }

    /// The same function, assembling itself anew after `after` (tests).
    pub fn reassembling_after(mut self, after: Duration) -> Self {
        self.reassemble_after = after;
        self
    }

    fn assembled(&self) -> Arc<Assembled> {
        self.assembled.read().expect("assembled lock").clone()
    }

    /// Reads the configuration again and assembles the worker anew, when
    /// the last assembly is [`REASSEMBLE_AFTER`] old. A configuration that
    /// cannot be used (it does not parse, is gone, or does not assemble) is
    /// reported (the log, the health check, the ops channel once) and this
    /// worker keeps the one it has; the first re-read that finds it fixed
    /// serves it, and the report is over.
    async fn reassemble_if_due(&self) {
        {
            let mut at = self.assembled_at.lock().expect("assembled_at lock");
            if at.elapsed() < self.reassemble_after {
                return;
            }
            *at = Instant::now();
        }
        let current = self.assembled();
        let object = &self.config.assistant_config_key;
        // The bucket's, never the kept copy: this is how copies are renewed.
        let artifacts = S3Artifacts::new(self.clients.s3.clone(), &self.config.artifact_bucket);
        let read = worker_config::assembly::read_config(&artifacts, object, SystemClock.now_unix()).await;
        let (on, with, by, to) = (&self.config, &self.clients, &self.arrival, &self.slack);
        let assemble = move |assistant| Assembled::new(on, with, by, to, assistant);
        match fallback::reassemble(object, read, current.from_text, assemble).await {
            // A read that failed: tried again at the next re-read.
            Ok(None) => {}
            Ok(Some((assembled, read))) => {
                let assembled = assembled.serving(Serving::Current, read.read_at, read.bytes.is_some());
                let copies = KeptConfiguration::new(self.arrival.records.clone(), object);
                assembled.worker.background().spawn(keep(copies, read));
                *self.assembled.write().expect("assembled lock") = Arc::new(assembled);
                if self.config_problem.lock().expect("config_problem lock").take().is_some() {
                    tracing::info!(config = %object, "the assistant configuration is usable again");
                }
                tracing::info!(config = %object, "worker assembled again");
            }
            Err(problem) => {
                let serving = current.fallback();
                problem.log(serving);
                // Told already by this worker (the same text, re-read five
                // minutes later): no second write to find that out.
                let told =
                    self.config_problem.lock().expect("config_problem lock").as_ref().is_some_and(|(known, _)| {
                        known.reference().is_some() && known.reference() == problem.reference()
                    });
                if let Some(alerts) = self.alerts.as_ref().filter(|_| !told) {
                    fallback::report_once(alerts, &problem, serving).await;
                }
                *self.config_problem.lock().expect("config_problem lock") = Some((problem, serving));
            }
        }
    }

    /// One invocation given as JSON (tests): a health check, the approval
    /// sweep, or a batch from the work queue; read ahead, then handled.
    /// `deadline_ms` is the invocation's deadline (Unix milliseconds).
    pub async fn handle(&self, event: Value, deadline_ms: u64) -> Result<Value, UnsupportedEvent> {
        let event = events::read::<WorkerEvent>(event)?;
        // Boxed: both futures are deep, and callers' stacks need not be.
        Box::pin(self.arrival.prepare(&event)).await;
        Ok(Box::pin(self.handle_prepared(event, deadline_ms)).await)
    }

    /// One invocation once [`Arrival::prepare`] has run for `event` (a
    /// cold start runs it beside the assembly: [`WorkerStart`]).
    pub async fn handle_prepared(&self, event: WorkerEvent, deadline_ms: u64) -> Value {
        // Beside the work: a worker assembled anew serves the next one.
        let assembled = self.assembled();
        let (handled, ()) = tokio::join!(self.handle_event(&assembled, event, deadline_ms), self.reassemble_if_due());
        handled
    }

    async fn handle_event(&self, assembled: &Assembled, event: WorkerEvent, deadline_ms: u64) -> Value {
        let batch = match event {
            WorkerEvent::HealthCheck(_) => {
                let report = self.health_of(assembled).await.published();
                self.alerted_apart(&report).alert(self.alerts.as_deref(), SystemClock.now_unix()).await;
                return serde_json::to_value(report).expect("health report serializes");
            }
            WorkerEvent::ApprovalSweep(_) => {
                // The minute's sweep: approval deadlines and configured
                // schedules. A failed sweep is logged; the next one, a minute
                // later, finds the same deadlines (and a schedule due a
                // minute ago).
                let worker = &assembled.worker;
                let (swept, scheduled) = tokio::join!(worker.sweep_approvals(), worker.sweep_schedules());
                let swept = swept.unwrap_or_else(|err| {
                    tracing::error!(error = %err, "approval sweep failed");
                    0
                });
                let scheduled = scheduled.unwrap_or_else(|err| {
                    tracing::error!(error = %err, "schedule sweep failed");
                    0
                });
                return serde_json::json!({ "swept": swept, "scheduled": scheduled });
            }
            WorkerEvent::Batch(batch) => batch,
        };
        let deadline = LambdaDeadline(deadline_ms);
        let mut work = std::pin::pin!(self.handle_batch(&assembled.worker, &batch, &deadline));
        // The hold beside the work, until the work is done.
        let response = tokio::select! {
            biased;
            response = &mut work => response,
            () = self.arrival.hold_if_long(&batch, deadline_ms) => work.await,
        };
        self.arrival.turns.forget();
        serde_json::to_value(response).expect("batch response serializes")
    }

    async fn handle_batch(&self, worker: &Worker, batch: &SqsEvent, deadline: &dyn Deadline) -> SqsBatchResponse {
        sqs_batch::handle_event(batch, self.arrival.visibility.as_ref(), |record| async move {
            match WorkMessage::decode(record.body) {
                Ok(message) => sqs_batch::settle(worker.handle(&message, deadline).await, Permanent::ToDeadLetterQueue),
                Err(err) => sqs_batch::malformed(&err),
            }
        })
        .await
    }

    /// Checks the table, both queues, the bucket and the Slack token this
    /// function uses, and whether it serves the bucket's configuration.
    pub async fn health(&self) -> HealthReport {
        self.health_of(&self.assembled()).await
    }

    /// The `config` check: failed while the bucket's configuration cannot
    /// be used, naming the object, what is wrong and what is served.
    async fn config_check(&self) -> health::Check {
        let problem = self.config_problem.lock().expect("config_problem lock").clone();
        let problem = problem.map(|(problem, serving)| problem.describe(serving));
        health::check("config", async move { problem.map_or(Ok(()), Err) }).await
    }

    /// `report` as the health check's hourly ops alert sees it: without a
    /// broken configuration that [`fallback::report_once`] tells the
    /// ops channel of once (an unreadable object stays in: that is told
    /// here).
    fn alerted_apart(&self, report: &HealthReport) -> HealthReport {
        let told_apart = self
            .config_problem
            .lock()
            .expect("config_problem lock")
            .as_ref()
            .is_some_and(|(problem, _)| problem.reference().is_some());
        let checks =
            report.checks.iter().filter(|check| !(told_apart && check.name == CONFIG_CHECK)).cloned().collect();
        HealthReport::new(report.function, report.version, checks)
    }

    async fn health_of(&self, assembled: &Assembled) -> HealthReport {
        let slack = async { self.slack.auth_test().await.map(|_| ()).map_err(|err| err.to_string()) };
        let (table, work, replies, bucket, slack) = tokio::join!(
            health::check("dynamodb", dynamodb::check_reads(&self.clients.dynamodb, &self.config.turns_table)),
            health::check("sqs_work", sqs::check_queue(&self.clients.sqs, &self.config.work_queue_url)),
            health::check("sqs_reply", sqs::check_queue(&self.clients.sqs, &self.config.reply_queue_url)),
            health::check(
                "s3",
                adapters_s3::check_bucket(&self.clients.s3, &self.config.artifact_bucket, &assembled.docs_prefix),
            ),
            health::check("slack", slack),
        );
        let config = self.config_check().await;
        HealthReport::new(FUNCTION_NAME, VERSION, vec![table, work, replies, bucket, slack, config])
    }
}

/// The worker for `assistant` on the AWS and Slack adapters: tools'
/// headers' `${env:NAME}` from this process's environment, `${secret:NAME}`
/// from Secrets Manager under `SECRETS_PREFIX`.
async fn assemble_worker(
    config: &Config,
    clients: &Clients,
    arrival: &Arrival,
    slack: &WebClient,
    assistant: &AssistantConfig,
) -> Result<Worker, StartupError> {
    let artifacts = Arc::new(S3Artifacts::new(clients.s3.clone(), &config.artifact_bucket));
    let records = &arrival.records;
    // One signer for every hand-signed AWS call of the process.
    let signer = Signer::new(&clients.aws);
    // The ingress's claims: the workers make alert threads theirs and read
    // the action tokens kept beside them.
    let claims = Arc::new(DynamoClaims::new(clients.dynamodb.clone(), &config.turns_table));
    let knowledge = AwsApi::new(clients.http.clone(), signer.clone(), adapters_knowledge_base::AGENT_RUNTIME, None);
    let ports = WorkerPorts {
        store: arrival.turns.clone(),
        deliveries: Arc::new(RecordDeliveries::new(records.clone())),
        model: Arc::new(BedrockModel::new(clients.bedrock.clone(), &config.model_id)),
        models: Arc::new({
            let bedrock = clients.bedrock.clone();
            move |id: &str| Arc::new(BedrockModel::new(bedrock.clone(), id)) as Arc<dyn assistant_core::model::Model>
        }),
        work: Arc::new(SqsQueue::new(clients.sqs.clone(), &config.work_queue_url)),
        replies: Arc::new(SqsQueue::new(clients.sqs.clone(), &config.reply_queue_url)),
        artifacts,
        slack: Arc::new(SlackWebReader::new(slack.clone())),
        files: Arc::new(adapters_slack::WebFiles::new(
            clients.http.clone(),
            &config.slack_api_base_url,
            config.slack_bot_token.clone(),
        )),
        timers: Arc::new(DynamoTimers::new(clients.dynamodb.clone(), &config.turns_table)),
        clock: Arc::new(SystemClock),
        http: clients.http.clone(),
        mcp: Arc::new(StreamableHttpConnector::new(clients.http.clone()).with_signer(Arc::new(signer.clone()))),
        aws: Arc::new(SignedAws::new(&clients.aws, signer.clone(), clients.http.clone())),
        signer: Arc::new(signer.clone()),
        knowledge: Arc::new(BedrockKnowledgeBases::new(knowledge)),
        secrets: Arc::new(SecretsManager::new(&signer, clients.http.clone(), &config.secrets_prefix)),
        metrics: Arc::new(EmfTurnMetrics { function: FUNCTION_NAME, memory_mb: config.memory_mb }),
        agent: Arc::new(WebAgent::new(slack.clone())),
        streams: StreamLog::new(records.clone()),
        feedback: FeedbackLog::new(records.clone()),
        grants: assistant_core::grants::ThreadGrants::new(records.clone()),
        contexts: Arc::new(DynamoContexts::new(clients.dynamodb.clone(), &config.turns_table)),
        every_question: Some(assistant_core::response_modes::EveryQuestionChannels::new(
            records.clone(),
            Arc::new(SystemClock),
        )),
        memory: Some(assistant_core::memory::ChannelMemory::new(records.clone(), assistant.memory.retention_secs())),
        action_tokens: claims.clone(),
        canvases: Arc::new(adapters_slack::WebCanvases::new(slack.clone())),
        incidents: Some(worker_incidents::IncidentPorts {
            incidents: assistant_core::incidents::Incidents::new(records.clone()),
            records: records.clone(),
            claims,
            ops: config.ops_channel.clone().map(|channel| {
                Arc::new(OpsAlerts::new(channel, Arc::new(slack.clone()), records.clone(), Arc::new(SystemClock)))
            }),
        }),
        sign_in: config.sign_in.as_ref().map(|(key, urls)| {
            let sealer = adapters_kms::KmsSealer::new(&signer, clients.http.clone(), key);
            SignInPorts {
                vault: Arc::new(SealedVault::new(records.clone(), Arc::new(sealer))),
                states: ConnectStates::new(records.clone()),
                tokens: Arc::new(adapters_oauth::OAuthClient::new(clients.http.clone())),
                urls: urls.clone(),
            }
        }),
    };
    worker_config::assemble(ports, assistant, config.limits, &|name| std::env::var(name).ok()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(file: &str) -> Result<WorkerEvent, UnsupportedEvent> {
        events::read(serde_json::from_str(file).expect("an event file is JSON"))
    }

    #[test]
    fn each_event_the_worker_takes_is_read_as_its_kind_and_any_other_is_unsupported() {
        let batch = read(include_str!("../../../tests/events/worker-sqs-start-turn.json"));
        assert!(matches!(batch, Ok(WorkerEvent::Batch(batch)) if batch.records.len() == 1));
        let sweep = read(include_str!("../../../tests/events/worker-approval-sweep.json"));
        assert!(matches!(sweep, Ok(WorkerEvent::ApprovalSweep(_))));
        let health = read(include_str!("../../../tests/events/scheduled-health-check.json"));
        assert!(matches!(health, Ok(WorkerEvent::HealthCheck(_))));
        let request = read(include_str!("../../../tests/events/ingress-app-mention.json")).unwrap_err();
        assert_eq!(request.expected, WorkerEvent::EXPECTED);
    }
}
