//! The three handlers in one process: Slack's request goes through the
//! ingress logic, the work queue and reply queue are in-process queues the
//! runner drains, and the worker and responder handle what is on them,
//! exactly as in Lambda. The worker is built by `worker_config::assemble`,
//! as the Lambda function builds it, from the same assistant configuration
//! (`--config FILE`). Each stage is printed with its timing.

use crate::offline::{DEFAULT_RECORDING, DEFAULT_RECORDING_PATH, OfflineModel};
use adapters_aws::dynamodb::{DynamoClaims, DynamoRecords};
use adapters_bedrock::BedrockModel;
use adapters_bedrock::guardrail::BedrockGuardrail;
use adapters_cloudwatch::SignedAws;
use adapters_knowledge_base::BedrockKnowledgeBases;
use adapters_mcp::StreamableHttpConnector;
use adapters_secrets::SecretsManager;
use adapters_sigv4::{AwsApi, Signer};
use adapters_slack::web::{BotToken, DEFAULT_BASE_URL, WebClient};
use adapters_slack::{SlackWebReader, WebAgent, WebPoster};
use assistant_core::feedback::FeedbackLog;
use assistant_core::guardrail::{Guardrail, OpenGuardrail};
use assistant_core::messages::{Decision, ReplyMessage};
use assistant_core::model::{Model, ModelError, ModelReply, ModelRequest, OpenModel};
use assistant_core::ports::{
    ActionTokens, AgentSlack, ArtifactStore, EventClaims, SlackPoster, SlackReader, VersionedRecords,
};
use assistant_core::response_modes::EveryQuestionChannels;
use assistant_core::store::{RecordDeliveries, RecordTurns, StreamLog};
use assistant_core::turn::{Content, Role, ToolOutput, ToolStatus};
use assistant_core::{SystemClock, WorkMessage};
use async_trait::async_trait;
use http::HeaderMap;
use ingress_logic::{Intake, Reply, Request};
use responder_logic::Responder;
use slack::SigningSecret;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use testkit::agent_memory::MemoryAgent;
use testkit::deadline::Budget;
use testkit::memory::{
    MemoryArtifacts, MemoryClaims, MemoryContexts, MemoryQueue, MemoryRecords, MemorySlack, MemoryTimers,
};
use testkit::slack_memory::MemoryPoster;
use worker_config::AssistantConfig;
use worker_config::{StartupError, WorkerPorts};
use worker_turn::{Limits, Worker};

/// The signing secret of requests the runner makes itself (and accepts in
/// `--serve` mode when no `SLACK_SIGNING_SECRET` is set).
pub const LOCAL_SIGNING_SECRET: &str = "local-runner-signing-secret";
const DOCS: &[(&str, &str)] = &[("docs/runbook-checkout-api.md", include_str!("../docs/runbook-checkout-api.md"))];

/// What the runner was started with, from the environment.
pub struct Settings {
    pub signing_secret: String,
    /// Real Slack: the bot token and the Web API base.
    pub slack: Option<(BotToken, String)>,
    /// Bedrock: the model id (credentials from the usual AWS chain).
    pub model_id: Option<String>,
    /// The local AWS emulator's table, when one is configured.
    pub table: Option<String>,
    /// Converse responses for the offline model.
    pub recording: Option<String>,
    /// The assistant configuration file (`--config`), as the worker reads
    /// it from S3.
    pub config: Option<String>,
    /// Where `${secret:NAME}` is read in Secrets Manager (`SECRETS_PREFIX`).
    pub secrets_prefix: String,
}

impl Settings {
    pub fn from_env(recording: Option<String>, config: Option<String>) -> Self {
        let var = lambda_support::env::optional;
        let emulator = var("AWS_ENDPOINT_URL").is_some();
        Self {
            signing_secret: var("SLACK_SIGNING_SECRET").unwrap_or_else(|| LOCAL_SIGNING_SECRET.to_owned()),
            slack: var("SLACK_BOT_TOKEN").map(|token| {
                (BotToken::new(token), var("SLACK_API_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()))
            }),
            model_id: var("MODEL_ID"),
            table: var("TURNS_TABLE").filter(|_| emulator),
            recording,
            config,
            secrets_prefix: var("SECRETS_PREFIX").unwrap_or_else(|| adapters_secrets::DEFAULT_PREFIX.to_owned()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("MODEL_ID is set but no AWS credentials were found ({0}); unset MODEL_ID to use the offline model")]
    NoCredentials(String),
    #[error("cannot read the recording {path}: {source}")]
    Recording {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    BadRecording(#[from] crate::offline::RecordingError),
    #[error("SLACK_SIGNING_SECRET is empty")]
    EmptySecret,
    #[error("cannot create the table at the local AWS emulator: {0}")]
    Table(#[source] assistant_core::PortError),
    #[error("cannot read the assistant configuration {path}: {source}")]
    Config {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Worker(#[from] StartupError),
}

/// The channel the runner's own questions are asked in.
pub const LOCAL_CHANNEL: &str = "C0LOCAL";

pub struct Pipeline {
    /// What requests to this runner are signed with.
    pub signing_secret: String,
    intake: Intake,
    worker: Worker,
    /// The in-process queues the handlers write to and the runner drains.
    incoming: Arc<MemoryQueue>,
    work: Arc<MemoryQueue>,
    /// The replies, each handed to the responder as the worker sends it.
    replies: Arc<LiveReplies>,
    /// Serializes processing: one drain of the queues at a time.
    processing: tokio::sync::Mutex<()>,
}

/// Prints a stage: what happened and how long it took.
pub fn stage(label: &str, took: Duration, detail: &str) {
    println!("▸ {label:<10} {:>9.2} ms  {detail}", took.as_secs_f64() * 1_000.0);
}

/// Each settled turn's figures, as a stage line: what the Lambda worker
/// emits as a metrics record.
struct PrintedTurns;

impl assistant_core::telemetry::TurnMetrics for PrintedTurns {
    fn turn_settled(&self, report: &assistant_core::telemetry::TurnReport) {
        let cost = report.cost(512);
        let model = cost.model.map_or("model price unknown".to_owned(), |usd| format!("model ${usd:.5}"));
        let detail = format!(
            "{} after {} steps, {} tool calls ({} failed); tokens in {} out {} cache read {} write {}; {model}, AWS ${:.6}",
            report.status.as_str(),
            report.steps,
            report.tool_calls,
            report.tool_errors,
            report.usage.input_tokens,
            report.usage.output_tokens,
            report.usage.cache_read_tokens,
            report.usage.cache_write_tokens,
            cost.aws,
        );
        stage("settled", Duration::from_millis(report.time_to_answer_ms), &detail);
    }
}

impl Pipeline {
    /// Every tool offered in `channel`, its schema and approval, and why
    /// the others are not (`local --tools`).
    pub fn tools_report(&self, channel: &slack::ChannelId, user: Option<&slack::UserId>) -> String {
        let asker = tools_registry::Asker {
            channel: channel.clone(),
            user: user.cloned(),
            groups: Vec::new(),
            turn: None,
            thread: None,
            membership: slack::Membership::Home,
        };
        worker_turn::inspect::tools_report(&self.worker, &asker)
    }

    pub async fn new(settings: Settings) -> Result<Self, SetupError> {
        let secret = SigningSecret::new(settings.signing_secret.clone()).map_err(|_| SetupError::EmptySecret)?;
        let aws = adapters_aws::config::load(adapters_aws::config::worker_timeouts()).await;

        type Stores = (Arc<dyn EventClaims>, Arc<dyn ActionTokens>, Arc<dyn VersionedRecords>, String);
        let (claims, action_tokens, records, store_label): Stores = match &settings.table {
            Some(table) => {
                let dynamodb = aws_sdk_dynamodb::Client::new(&aws);
                // A fresh emulator has no table yet: make it as the template does.
                if adapters_aws::dynamodb::check_table(&dynamodb, table).await.is_err() {
                    adapters_aws::provision::turns_table(&dynamodb, table).await.map_err(SetupError::Table)?;
                    println!("created table {table} at the local AWS emulator");
                }
                let claims = Arc::new(DynamoClaims::new(dynamodb.clone(), table));
                (
                    claims.clone(),
                    claims,
                    Arc::new(DynamoRecords::new(dynamodb, table)),
                    format!("DynamoDB table {table} at the local AWS emulator"),
                )
            }
            None => {
                let claims = Arc::new(MemoryClaims::default());
                (
                    claims.clone(),
                    claims,
                    Arc::new(MemoryRecords::default()),
                    "embedded (in memory); queues in process".to_owned(),
                )
            }
        };

        // The prompt enhancer's cheap model: on Bedrock beside the main one,
        // or the same recording offline.
        let models: Arc<dyn OpenModel>;
        // The guardrail: Bedrock's beside the model, or, offline, the
        // tests' one that blocks a known prompt attack.
        let guardrails: Arc<dyn OpenGuardrail>;
        let (model, model_label): (Arc<dyn Model>, String) = match &settings.model_id {
            Some(model_id) => {
                let credentials = aws.credentials_provider().ok_or_else(|| SetupError::NoCredentials("none".into()))?;
                aws_credential_types::provider::ProvideCredentials::provide_credentials(&credentials)
                    .await
                    .map_err(|err| SetupError::NoCredentials(err.to_string()))?;
                let config = aws_sdk_bedrockruntime::config::Builder::from(&aws)
                    .retry_config(adapters_bedrock::retry_config())
                    .timeout_config(adapters_bedrock::timeout_config(worker_turn::MODEL_CALL_TIME))
                    .build();
                let client = aws_sdk_bedrockruntime::Client::from_conf(config);
                let opener = client.clone();
                models = Arc::new(move |id: &str| Arc::new(BedrockModel::new(opener.clone(), id)) as Arc<dyn Model>);
                let opener = client.clone();
                guardrails = Arc::new(move |id: &str, version: &str| {
                    Arc::new(BedrockGuardrail::new(opener.clone(), id, version)) as Arc<dyn Guardrail>
                });
                (Arc::new(Narrated(BedrockModel::new(client, model_id))), format!("Bedrock {model_id}"))
            }
            None => {
                let (json, path) = match &settings.recording {
                    Some(path) => (
                        std::fs::read_to_string(path)
                            .map_err(|source| SetupError::Recording { path: path.clone(), source })?,
                        path.clone(),
                    ),
                    None => (DEFAULT_RECORDING.to_owned(), DEFAULT_RECORDING_PATH.to_owned()),
                };
                let offline: Arc<dyn Model> = Arc::new(Narrated(OfflineModel::from_json(&json)?));
                let same = offline.clone();
                models = Arc::new(move |_: &str| same.clone());
                guardrails = Arc::new(|_: &str, _: &str| {
                    Arc::new(testkit::memory::MemoryGuardrail::default()) as Arc<dyn Guardrail>
                });
                (offline, format!("OFFLINE replay of {path}"))
            }
        };

        let http = adapters_slack::http_client();
        type SlackSides = (Arc<dyn SlackReader>, Arc<dyn SlackPoster>, Arc<dyn AgentSlack>, String);
        let (reader, poster, agent, slack_label): SlackSides = match &settings.slack {
            Some((token, base_url)) => {
                let client = WebClient::new(http.clone(), base_url, token.clone());
                (
                    Arc::new(SlackWebReader::new(client.clone())),
                    Arc::new(WebPoster::new(client.clone(), false)),
                    Arc::new(WebAgent::new(client)),
                    format!("real Slack at {base_url}"),
                )
            }
            None => (
                Arc::new(MemorySlack::default()),
                Arc::new(MemoryPoster::echoing()),
                Arc::new(MemoryAgent::echoing()),
                "the console (prints what would be posted and streamed)".to_owned(),
            ),
        };

        let (assistant, config_label) = match &settings.config {
            Some(path) => {
                let json = std::fs::read(path).map_err(|source| SetupError::Config { path: path.clone(), source })?;
                (worker_config::assembly::parse_config(&json, path)?, path.clone())
            }
            None => (AssistantConfig::default(), "defaults (no --config)".to_owned()),
        };
        println!("store: {store_label}\nmodel: {model_label}\nslack: {slack_label}\nconfig: {config_label}\n");

        // The artifact bucket: the bundled runbook under docs/, and room
        // for large tool results.
        let artifacts = Arc::new(MemoryArtifacts::default());
        for (key, body) in DOCS {
            artifacts.put(key, body.as_bytes().to_vec(), "text/markdown").await.expect("memory store");
        }
        let (incoming, work) = (Arc::new(MemoryQueue::default()), Arc::new(MemoryQueue::default()));
        let replies = Arc::new(LiveReplies::default());
        let turns = Arc::new(RecordTurns::new(records.clone()));
        let deliveries = Arc::new(RecordDeliveries::new(records.clone()));
        let contexts = Arc::new(MemoryContexts::default());
        let signer = Signer::new(&aws);
        let ports = WorkerPorts {
            guardrails,
            core: worker_turn::Ports {
                store: turns.clone(),
                deliveries: deliveries.clone(),
                model,
                work: work.clone(),
                replies: replies.clone(),
                artifacts,
                slack: reader,
                // The runner's questions carry no files.
                files: Arc::new(testkit::memory::MemorySlack::default()),
                timers: Arc::new(MemoryTimers::default()),
                clock: Arc::new(SystemClock),
                metrics: Arc::new(PrintedTurns),
                agent,
                streams: StreamLog::new(records.clone()),
                feedback: FeedbackLog::new(records.clone()),
                grants: assistant_core::grants::ThreadGrants::new(records.clone()),
                departures: assistant_core::departures::Departures::new(records.clone()),
                response_urls: assistant_core::response_url::ResponseUrls::new(records.clone()),
                // The runner's worker is the function's default size.
                spending: assistant_core::budgets::Spending::new(records.clone(), 512),
                forms: assistant_core::elicitation::Forms::new(records.clone()),
                contexts: contexts.clone(),
            },
            models,
            mcp: Arc::new(StreamableHttpConnector::new(http.clone()).with_signer(Arc::new(signer.clone()))),
            // `${secret:NAME}` reads Secrets Manager (or the emulator) with
            // the usual AWS chain, as the worker does; only when named.
            secrets: Arc::new(SecretsManager::new(&signer, http.clone(), &settings.secrets_prefix)),
            // The AWS tools and knowledge bases read the emulator
            // (`infra/emulator.sh` seeds alarms, metrics and logs) or, with
            // credentials and no endpoint, the account.
            aws: Arc::new(SignedAws::new(&aws, signer.clone(), http.clone())),
            signer: Arc::new(signer.clone()),
            knowledge: Arc::new(BedrockKnowledgeBases::new(AwsApi::new(
                http.clone(),
                signer.clone(),
                adapters_knowledge_base::AGENT_RUNTIME,
                None,
            ))),
            http,
            sign_in: None,
            // The ingress below reads what the worker publishes, as in AWS.
            every_question: Some(EveryQuestionChannels::new(records.clone(), Arc::new(SystemClock))),
            memory: Some(assistant_core::memory::ChannelMemory::new(
                records.clone(),
                assistant.memory.retention_secs(),
            )),
            action_tokens,
            // The runner's Slack is in memory: canvases too.
            canvases: Arc::new(testkit::memory::MemoryCanvases::default()),
            incidents: Some(worker_incidents::IncidentPorts {
                incidents: assistant_core::incidents::Incidents::new(records.clone()),
                records: records.clone(),
                claims: claims.clone(),
                ops: None,
            }),
        };
        let worker =
            worker_config::assemble(ports, &assistant, Limits::default(), &|name| std::env::var(name).ok()).await?;

        let responder = Arc::new(Responder {
            turns,
            deliveries,
            streams: StreamLog::new(records.clone()),
            slack: poster,
            clock: Arc::new(SystemClock),
            mentions: Default::default(),
            alerts: None,
        });
        replies.answer_with(responder);

        Ok(Self {
            intake: Intake::new(secret, claims, incoming.clone(), contexts, Arc::new(SystemClock))
                .with_every_question(EveryQuestionChannels::new(records.clone(), Arc::new(SystemClock)))
                .with_forms(assistant_core::elicitation::Forms::new(records.clone())),
            worker,
            signing_secret: settings.signing_secret,
            incoming,
            work,
            replies,
            processing: tokio::sync::Mutex::new(()),
        })
    }

    /// A request from Slack (or made to look like one), through the
    /// ingress logic.
    pub async fn receive(&self, headers: &HeaderMap, body: &str) -> Reply {
        let started = Instant::now();
        let reply = self.intake.handle(Request { headers, body: Some(body), is_base64_encoded: false }).await;
        let queued = self.incoming.messages().len();
        let detail = match reply.status {
            200 if queued > 0 => "signature verified; work enqueued".to_owned(),
            200 => "signature verified; nothing to do".to_owned(),
            status => format!("HTTP {status} {}", reply.json.as_deref().unwrap_or("")),
        };
        stage("ingress", started.elapsed(), &detail);
        reply
    }

    /// An alert's payload as its source sends it (an Alertmanager
    /// notification, a PagerDuty V3 webhook, a CloudWatch alarm state
    /// change), on the work queue as the ingress (or EventBridge) puts it.
    /// The webhooks' credentials are the ingress's to check; here the file
    /// is the operator's own.
    pub async fn alert(&self, payload: &str) -> Result<usize, String> {
        use assistant_core::Clock;
        use assistant_core::incidents::{CloudwatchAlarm, sources};
        use assistant_core::ports::WorkQueue;
        let json: serde_json::Value = serde_json::from_str(payload).map_err(|err| format!("not JSON: {err}"))?;
        let messages: Vec<WorkMessage> = if json.get("detail-type").is_some() {
            vec![WorkMessage::CloudwatchAlarm(CloudwatchAlarm { event: json })]
        } else if json.get("event").is_some() {
            let notice = sources::pagerduty(payload.as_bytes()).map_err(|err| err.to_string())?;
            notice.into_iter().map(WorkMessage::Alert).collect()
        } else {
            let now = SystemClock.now_unix();
            let notices = sources::alertmanager(payload.as_bytes(), now).map_err(|err| err.to_string())?;
            notices.into_iter().map(WorkMessage::Alert).collect()
        };
        for message in &messages {
            self.incoming.enqueue(message).await.map_err(|err| err.to_string())?;
        }
        Ok(messages.len())
    }

    /// Works off both queues until they are empty; how many messages the
    /// responder posted.
    pub async fn process(&self) -> usize {
        let _one_at_a_time = self.processing.lock().await;
        // As the worker's schedule does in AWS: approvals past their time
        // become timeouts on the work queue.
        if let Err(err) = self.worker.sweep_approvals().await {
            eprintln!("approval sweep failed: {err}");
        }
        // And the configured schedules, as the same minute's sweep does.
        if let Err(err) = self.worker.sweep_schedules().await {
            eprintln!("schedule sweep failed: {err}");
        }
        let posted_before = self.replies.posted();
        loop {
            let mut work = self.incoming.drain();
            work.extend(self.work.drain());
            // Replies the responder failed on (Slack down): again, as SQS
            // redelivers them.
            let retried = self.replies.retry().await;
            if work.is_empty() && retried == 0 {
                return self.replies.posted() - posted_before;
            }
            for message in work {
                let started = Instant::now();
                let outcome = self.worker.handle(&message, &Budget::plenty()).await;
                let what = kind(&message);
                let detail = match outcome {
                    Ok(outcome) => match &outcome {
                        // The turn's id: what `--export-turn` takes.
                        worker_turn::Outcome::Settled { id, .. } => format!("{what}: {outcome} (turn {id})"),
                        _ => format!("{what}: {outcome}"),
                    },
                    Err(err) => format!("{what}: failed ({err}); the queue would deliver it again"),
                };
                stage("worker", started.elapsed(), &detail);
            }
        }
    }
}

/// A work message's kind, as the runner's lines name it.
fn kind(message: &WorkMessage) -> &'static str {
    match message {
        WorkMessage::StartTurn(_) => "question",
        WorkMessage::Approval(_) => "approval click",
        WorkMessage::Continue(_) => "continuation",
        WorkMessage::ApprovalTimeout(_) => "approval timeout",
        WorkMessage::Opened(_) => "DM opened",
        WorkMessage::Feedback(_) => "rating",
        WorkMessage::RevokeGrant(_) => "grant revoked",
        WorkMessage::SignedIn(_) => "sign-in back",
        WorkMessage::ConnectClick(_) => "Connect click",
        WorkMessage::Home(_) => "Home tab",
        WorkMessage::Alert(_) => "alert",
        WorkMessage::CloudwatchAlarm(_) => "CloudWatch alarm",
        WorkMessage::InvestigateMessage(_) => "message shortcut",
        WorkMessage::SlashCommand(_) => "slash command",
        WorkMessage::Forget(_) => "departure (forget)",
    }
}

/// What a reply asks of the responder, in words.
fn reply_kind(reply: &ReplyMessage) -> String {
    match reply {
        ReplyMessage::Deliver { .. } => "the answer".to_owned(),
        ReplyMessage::ApprovalPrompt { tool_use, .. } => format!("the approval prompt for {}", tool_use.name),
        ReplyMessage::Progress { text, .. } => format!("the status \"{text}\""),
        ReplyMessage::ApprovalDecided { tool_use, decision, .. } => {
            format!("{} {}", tool_use.name, if *decision == Decision::Approve { "approved" } else { "denied" })
        }
        ReplyMessage::ApprovalExpired { tool_use, .. } => format!("{} not approved in time", tool_use.name),
        ReplyMessage::ApprovalRefused { user, .. } => format!("{user}'s click refused"),
        ReplyMessage::ApprovalAnswered { user, tool_name, .. } => {
            format!("{user} told {tool_name} was already decided")
        }
        ReplyMessage::FeedbackNoted { user, rating, .. } => format!("{user}'s rating ({})", rating.as_str()),
        ReplyMessage::RanUnderGrant { tool_use, grant, .. } => {
            format!("{} ran under {}'s thread grant", tool_use.name, grant.granted_by)
        }
        ReplyMessage::GrantRevoked { grant, user, .. } => format!("{user} revoked {}", grant.scope),
        ReplyMessage::RevokeRefused { user, .. } => format!("{user}'s revoke refused"),
        ReplyMessage::ConnectPrompt { user, provider, .. } => format!("{user} asked to connect {provider}"),
        ReplyMessage::ConnectRefused { user, .. } => format!("{user}'s Connect click refused"),
        ReplyMessage::OpenLink { user, server, .. } => format!("{user} asked by {server} to open a link"),
        ReplyMessage::FormPrompt { user, server, .. } => format!("{user} asked by {server} to fill in a form"),
    }
}

/// The reply queue as the runner has it: each reply is handed to the
/// responder as soon as the worker sends it (as SQS and a warm responder
/// do within milliseconds in AWS), so what Slack shows prints in the order
/// a person in the thread would see it. A reply the responder fails on
/// with an error a retry may mend is tried again after the work, at most
/// [`REPLY_TRIES`] times in all, as SQS redelivers it before its
/// dead-letter queue takes it.
#[derive(Default)]
pub struct LiveReplies {
    responder: std::sync::OnceLock<Arc<Responder>>,
    /// Replies to try again, each with the tries it has had.
    failed: std::sync::Mutex<Vec<(ReplyMessage, u32)>>,
    posted: std::sync::atomic::AtomicUsize,
}

/// The tries a reply gets (the template's reply queue's `maxReceiveCount`
/// is larger; here a person is waiting at the console).
const REPLY_TRIES: u32 = 3;

impl LiveReplies {
    fn answer_with(&self, responder: Arc<Responder>) {
        let _ = self.responder.set(responder);
    }

    fn posted(&self) -> usize {
        self.posted.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Hands `reply` to the responder (its `tries`th try); kept for
    /// [`Self::retry`] if it fails and may succeed later.
    async fn respond(&self, reply: &ReplyMessage, tries: u32) {
        use assistant_core::Retryable;
        let Some(responder) = self.responder.get() else { return };
        let started = Instant::now();
        let detail = match responder.handle(reply).await {
            Ok(outcome) => {
                if let responder_logic::Outcome::Delivered { posted, .. } = &outcome {
                    self.posted.fetch_add(*posted, std::sync::atomic::Ordering::SeqCst);
                }
                format!("{}: {outcome}", reply_kind(reply))
            }
            Err(err) if err.is_retryable() && tries < REPLY_TRIES => {
                self.failed.lock().expect("failed replies lock").push((reply.clone(), tries));
                format!("{}: failed ({err}); tried again after the work", reply_kind(reply))
            }
            Err(err) => format!(
                "{}: failed ({err}); given up after {tries} tries (in AWS: the dead-letter queue)",
                reply_kind(reply)
            ),
        };
        stage("responder", started.elapsed(), &detail);
    }

    /// The replies that failed, handed over again; how many there were.
    async fn retry(&self) -> usize {
        let failed = std::mem::take(&mut *self.failed.lock().expect("failed replies lock"));
        for (reply, tries) in &failed {
            self.respond(reply, tries + 1).await;
        }
        failed.len()
    }
}

#[async_trait]
impl assistant_core::ports::ReplyQueue for LiveReplies {
    async fn send(&self, message: &ReplyMessage) -> Result<(), assistant_core::PortError> {
        self.respond(message, 1).await;
        Ok(())
    }
}

/// The model, printing each call: the tool results it is given, and what
/// it answers.
pub struct Narrated<M>(M);

#[async_trait]
impl<M: Model> Model for Narrated<M> {
    async fn converse(&self, request: ModelRequest<'_>) -> Result<ModelReply, ModelError> {
        narrate(request, self.0.converse(request)).await
    }

    async fn converse_streaming(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn assistant_core::model::TextSink,
    ) -> Result<ModelReply, ModelError> {
        narrate(request, self.0.converse_streaming(request, sink)).await
    }

    fn id(&self) -> &str {
        self.0.id()
    }
}

/// Prints the tool results a model call is given and what it answered.
async fn narrate(
    request: ModelRequest<'_>,
    call: impl std::future::Future<Output = Result<ModelReply, ModelError>>,
) -> Result<ModelReply, ModelError> {
    let names: std::collections::HashMap<&str, &str> = request
        .messages
        .iter()
        .flat_map(|message| message.tool_uses())
        .map(|call| (call.id.as_str(), call.name.as_str()))
        .collect();
    if let Some(last) = request.messages.last().filter(|m| m.role == Role::User) {
        for content in &last.content {
            if let Content::ToolResult(result) = content {
                let output = match &result.output {
                    ToolOutput::Text(text) => text.clone(),
                    ToolOutput::Json(json) => json.to_string(),
                    ToolOutput::Stored { key, bytes, .. } => format!("{bytes} bytes stored as {key}"),
                    ToolOutput::Task(task) => format!("still running as task {}", task.task_id),
                };
                let preview: String = output.chars().take(100).collect();
                let name = names.get(result.tool_use_id.as_str()).copied().unwrap_or("a tool");
                let status = if result.status == ToolStatus::Success { "returned" } else { "failed" };
                println!("             {name} {status}: {}", preview.replace('\n', " "));
            }
        }
    }
    let started = Instant::now();
    let reply = call.await;
    let step = request.messages.iter().filter(|m| m.role == Role::Assistant).count() + 1;
    let detail = match &reply {
        Ok(reply) => {
            let calls: Vec<String> =
                reply.message.tool_uses().map(|call| format!("{}({})", call.name, call.input)).collect();
            if calls.is_empty() {
                format!("step {step}: answer ({} output tokens)", reply.usage.output_tokens)
            } else {
                format!("step {step}: tool calls {}", calls.join(", "))
            }
        }
        Err(err) => format!("step {step}: {err}"),
    };
    stage("model", started.elapsed(), &detail);
    reply
}

/// A signed `app_mention` of the bot with `question`, as Slack would send
/// it: the body and its headers.
pub fn mention(secret: &str, question: &str) -> (HeaderMap, String) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let ts = format!("{}.{:06}", now.as_secs(), now.subsec_micros());
    let body = serde_json::json!({
        "token": "local",
        "team_id": "T0LOCAL",
        "api_app_id": "A0LOCAL",
        "type": "event_callback",
        "event_id": format!("Ev0LOCAL{}", now.as_nanos()),
        "event_time": now.as_secs(),
        "event": {
            "type": "app_mention", "user": "U0LOCALUSER", "text": format!("<@U0LOCALBOT> {question}"),
            "ts": ts, "event_ts": ts, "channel": LOCAL_CHANNEL, "team": "T0LOCAL",
        },
        "authorizations": [{"team_id": "T0LOCAL", "user_id": "U0LOCALBOT", "is_bot": true}],
    })
    .to_string();
    let headers = testkit::signed::headers(secret, now.as_secs() as i64, &body, "application/json");
    (headers, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use assistant_core::ports::{Put, RecordKey, RecordWrite, StoredRecord};
    use assistant_core::{PortError, ThreadRef, TurnId};

    /// A table that answers nothing: every read fails as a table down would.
    struct Down;

    #[async_trait]
    impl VersionedRecords for Down {
        async fn get(&self, _: &RecordKey) -> Result<Option<StoredRecord>, PortError> {
            Err(PortError::new("read", "the table is down"))
        }

        async fn put(&self, _: &RecordKey, _: &RecordWrite) -> Result<Put, PortError> {
            Err(PortError::new("read", "the table is down"))
        }

        async fn put_part(&self, _: &str, _: &str, _: String, _: i64) -> Result<(), PortError> {
            Err(PortError::new("read", "the table is down"))
        }

        async fn delete_part(&self, _: &str, _: &str) -> Result<(), PortError> {
            Err(PortError::new("read", "the table is down"))
        }

        async fn parts(&self, _: &str, _: &str) -> Result<Vec<(String, String)>, PortError> {
            Err(PortError::new("read", "the table is down"))
        }
    }

    #[tokio::test]
    async fn a_reply_the_responder_keeps_failing_on_is_given_up_after_its_tries() {
        // GIVEN a responder whose table is down
        let records: Arc<dyn VersionedRecords> = Arc::new(Down);
        let replies = LiveReplies::default();
        replies.answer_with(Arc::new(Responder {
            turns: Arc::new(RecordTurns::new(records.clone())),
            deliveries: Arc::new(RecordDeliveries::new(records.clone())),
            streams: StreamLog::new(records),
            slack: Arc::new(MemoryPoster::default()),
            clock: Arc::new(SystemClock),
            mentions: Default::default(),
            alerts: None,
        }));
        // WHEN the worker sends an answer and the runner drains until done
        let thread = ThreadRef {
            team: slack::TeamId::new("T1"),
            channel: slack::ChannelId::new("C1"),
            thread_ts: slack::Ts::new("1763800000.000100"),
        };
        let reply = ReplyMessage::Deliver { turn_id: TurnId::new("T1-Ev1"), thread };
        assistant_core::ports::ReplyQueue::send(&replies, &reply).await.unwrap();
        let mut drains = 0;
        while replies.retry().await > 0 {
            drains += 1;
            assert!(drains < 10, "the runner never stops trying");
        }
        // THEN it was tried as often as it may be, and no more
        assert_eq!(drains, REPLY_TRIES as usize - 1, "two more tries after the first");
        assert_eq!(replies.posted(), 0);
    }
}
