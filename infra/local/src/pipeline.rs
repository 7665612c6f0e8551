//! The three handlers in one process: Slack's request goes through the
//! ingress logic (`intake`), the work queue and reply queue are in-process
//! queues the runner drains, and the worker and responder handle what is on
//! them, exactly as in Lambda. Each stage is printed with its timing.

use crate::offline::{DEFAULT_RECORDING, DEFAULT_RECORDING_PATH, OfflineModel};
use crate::ports::{Claims, Deliveries, LocalModel, Poster, Reader, Turns};
use agent::memory::{MemoryArtifacts, MemoryClaims, MemoryDeliveries, MemoryQueue, MemorySlack, MemoryTurns};
use agent::messages::ReplyMessage;
use agent::model::{Model, ModelError, ModelReply, ModelRequest};
use agent::ports::ArtifactStore;
use agent::tools::ToolRegistry;
use agent::turn::{Content, Role, ToolOutput};
use agent::worker::{Deadline, Limits, Worker};
use agent::{SystemClock, WorkMessage};
use aws_adapters::bedrock::{self, BedrockModel};
use aws_adapters::dynamodb::{DynamoClaims, DynamoDeliveries, DynamoTurns};
use delivery::memory::MemoryPoster;
use delivery::{Responder, WebPoster};
use http::HeaderMap;
use intake::Intake;
use intake::service::{Reply, Request};
use slack::SigningSecret;
use slack::web::{BotToken, DEFAULT_BASE_URL, WebClient};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use worker::SlackWebReader;

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
}

impl Settings {
    pub fn from_env(recording: Option<String>) -> Self {
        let var = runtime_support::env::optional;
        let emulator = var("AWS_ENDPOINT_URL").is_some();
        Self {
            signing_secret: var("SLACK_SIGNING_SECRET").unwrap_or_else(|| LOCAL_SIGNING_SECRET.to_owned()),
            slack: var("SLACK_BOT_TOKEN").map(|token| {
                (BotToken::new(token), var("SLACK_API_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()))
            }),
            model_id: var("MODEL_ID"),
            table: var("TURNS_TABLE").filter(|_| emulator),
            recording,
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
    Table(#[source] agent::ports::PortError),
    #[error("the tools cannot be defined: {0}")]
    Tools(#[from] agent::tools::ToolDefinitionError),
}

type LocalWorker =
    Worker<Turns, Narrated<LocalModel>, MemoryQueue, MemoryQueue<ReplyMessage>, MemoryArtifacts, Reader, SystemClock>;

pub struct Pipeline {
    pub secret: SigningSecret,
    intake: Intake<Claims, MemoryQueue, SystemClock>,
    worker: LocalWorker,
    responder: Responder<Turns, Deliveries, Poster, SystemClock>,
    /// Serializes processing: one drain of the queues at a time.
    processing: tokio::sync::Mutex<()>,
}

/// Prints a stage: what happened and how long it took.
pub fn stage(label: &str, took: Duration, detail: &str) {
    println!("▸ {label:<10} {:>9.2} ms  {detail}", took.as_secs_f64() * 1_000.0);
}

impl Pipeline {
    pub async fn new(settings: Settings) -> Result<Self, SetupError> {
        let secret = SigningSecret::new(settings.signing_secret).map_err(|_| SetupError::EmptySecret)?;
        let aws = aws_adapters::config::load(aws_adapters::config::worker_timeouts()).await;

        let (claims, turns, deliveries, store_label) = match &settings.table {
            Some(table) => {
                let dynamodb = aws_sdk_dynamodb::Client::new(&aws);
                // A fresh emulator has no table yet: make it as the template does.
                if aws_adapters::dynamodb::check_table(&dynamodb, table).await.is_err() {
                    aws_adapters::provision::turns_table(&dynamodb, table).await.map_err(SetupError::Table)?;
                    println!("created table {table} at the local AWS emulator");
                }
                (
                    Claims::Emulator(DynamoClaims::new(dynamodb.clone(), table)),
                    Turns::Emulator(DynamoTurns::new(dynamodb.clone(), table)),
                    Deliveries::Emulator(DynamoDeliveries::new(dynamodb, table)),
                    format!("DynamoDB table {table} at the local AWS emulator"),
                )
            }
            None => (
                Claims::Embedded(MemoryClaims::default()),
                Turns::Embedded(Arc::new(MemoryTurns::default())),
                Deliveries::Embedded(MemoryDeliveries::default()),
                "embedded (in memory); queues in process".to_owned(),
            ),
        };

        let (model, model_label) = match &settings.model_id {
            Some(model_id) => {
                let credentials = aws.credentials_provider().ok_or_else(|| SetupError::NoCredentials("none".into()))?;
                aws_credential_types::provider::ProvideCredentials::provide_credentials(&credentials)
                    .await
                    .map_err(|err| SetupError::NoCredentials(err.to_string()))?;
                let config =
                    aws_sdk_bedrockruntime::config::Builder::from(&aws).retry_config(bedrock::retry_config()).build();
                let client = aws_sdk_bedrockruntime::Client::from_conf(config);
                (LocalModel::Bedrock(BedrockModel::new(client, model_id)), format!("Bedrock {model_id}"))
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
                (LocalModel::Offline(OfflineModel::from_json(&json)?), format!("OFFLINE replay of {path}"))
            }
        };

        let (reader, poster, slack_label) = match &settings.slack {
            Some((token, base_url)) => {
                let client = WebClient::new(slack::web::http_client(), base_url, token.clone());
                (
                    Reader::Slack(SlackWebReader::new(client.clone())),
                    Poster::Slack(WebPoster::new(client, false)),
                    format!("real Slack at {base_url}"),
                )
            }
            None => (
                Reader::Console(MemorySlack),
                Poster::Console(MemoryPoster::echoing()),
                "the console (prints what would be posted)".to_owned(),
            ),
        };
        println!("store: {store_label}\nmodel: {model_label}\nslack: {slack_label}\n");

        let docs = Arc::new(MemoryArtifacts::default());
        for (key, body) in DOCS {
            docs.put(key, body.as_bytes().to_vec(), "text/markdown").await.expect("memory store");
        }
        let mut tools = vec![agent::builtin_tools::current_time(Arc::new(SystemClock))];
        tools.extend(agent::docs_tools::docs_tools(docs, "docs/")?);
        let tools = ToolRegistry::new(tools, agent::tools::ToolPolicy::allow_all())?;

        Ok(Self {
            intake: Intake::new(secret.clone(), claims, MemoryQueue::default(), SystemClock),
            worker: Worker {
                store: turns.clone(),
                model: Narrated(model),
                work: MemoryQueue::default(),
                replies: MemoryQueue::default(),
                artifacts: MemoryArtifacts::default(),
                slack: reader,
                tools,
                clock: SystemClock,
                system_prompt: agent::DEFAULT_SYSTEM_PROMPT.to_owned(),
                limits: Limits::default(),
            },
            responder: Responder { turns, deliveries, slack: poster, clock: SystemClock },
            secret,
            processing: tokio::sync::Mutex::new(()),
        })
    }

    /// A request from Slack (or made to look like one), through the
    /// ingress logic.
    pub async fn receive(&self, headers: &HeaderMap, body: &str) -> Reply {
        let started = Instant::now();
        let reply = self.intake.handle(Request { headers, body: Some(body), is_base64_encoded: false }).await;
        let queued = self.intake.queue().messages().len();
        let detail = match reply.status {
            200 if queued > 0 => "signature verified; work enqueued".to_owned(),
            200 => "signature verified; nothing to do".to_owned(),
            status => format!("HTTP {status} {}", reply.json.as_deref().unwrap_or("")),
        };
        stage("ingress", started.elapsed(), &detail);
        reply
    }

    /// Works off both queues until they are empty; how many messages the
    /// responder posted.
    pub async fn process(&self) -> usize {
        let _one_at_a_time = self.processing.lock().await;
        let mut posted = 0;
        loop {
            let mut work = self.intake.queue().drain();
            work.extend(self.worker.work.drain());
            let replies = self.worker.replies.drain();
            if work.is_empty() && replies.is_empty() {
                return posted;
            }
            for message in work {
                let started = Instant::now();
                let outcome = self.worker.handle(&message, &Plenty).await;
                let what = match &message {
                    WorkMessage::StartTurn(_) => "start",
                    WorkMessage::Approval(_) => "approval",
                    WorkMessage::Continue(_) => "continue",
                };
                stage("worker", started.elapsed(), &format!("{what}: {outcome:?}"));
            }
            for reply in replies {
                let started = Instant::now();
                let outcome = self.responder.handle(&reply).await;
                if let Ok(delivery::Outcome::Delivered { posted: count, .. }) = &outcome {
                    posted += count;
                }
                let what = match &reply {
                    ReplyMessage::Deliver { .. } => "deliver".to_owned(),
                    ReplyMessage::ApprovalPrompt { tool_use, .. } => format!("approval prompt for {}", tool_use.name),
                    ReplyMessage::Progress { text, .. } => format!("status \"{text}\""),
                    ReplyMessage::ApprovalDecided { tool_use, decision, .. } => {
                        format!("{} {decision:?}d", tool_use.name)
                    }
                };
                stage("responder", started.elapsed(), &format!("{what}: {outcome:?}"));
            }
        }
    }
}

/// An invocation with all the time it wants.
struct Plenty;

impl Deadline for Plenty {
    fn time_left(&self) -> Duration {
        Duration::from_secs(15 * 60)
    }
}

/// The model, printing each call: the tool results it is given, and what
/// it answers.
pub struct Narrated<M>(M);

impl<M: Model> Model for Narrated<M> {
    async fn converse(&self, request: ModelRequest<'_>) -> Result<ModelReply, ModelError> {
        if let Some(last) = request.messages.last().filter(|m| m.role == Role::User) {
            for content in &last.content {
                if let Content::ToolResult(result) = content {
                    let output = match &result.output {
                        ToolOutput::Text(text) => text.clone(),
                        ToolOutput::Json(json) => json.to_string(),
                        ToolOutput::Stored { key, bytes, .. } => format!("{bytes} bytes stored as {key}"),
                    };
                    let preview: String = output.chars().take(100).collect();
                    println!("    result  {} {:?}: {}", result.tool_use_id, result.status, preview.replace('\n', " "));
                }
            }
        }
        let started = Instant::now();
        let reply = self.0.converse(request).await;
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
}

/// A signed `app_mention` of the bot with `question`, as Slack would send
/// it: the body and its headers.
pub fn mention(secret: &SigningSecret, question: &str) -> (HeaderMap, String) {
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
            "ts": ts, "event_ts": ts, "channel": "C0LOCAL", "team": "T0LOCAL",
        },
        "authorizations": [{"team_id": "T0LOCAL", "user_id": "U0LOCALBOT", "is_bot": true}],
    })
    .to_string();
    let timestamp = now.as_secs() as i64;
    let mut headers = HeaderMap::new();
    headers.insert("content-type", "application/json".parse().expect("valid header"));
    headers.insert(slack::signature::TIMESTAMP_HEADER, timestamp.to_string().parse().expect("digits"));
    let signature = secret.sign(timestamp, body.as_bytes());
    headers.insert(slack::signature::SIGNATURE_HEADER, signature.parse().expect("hex"));
    (headers, body)
}
