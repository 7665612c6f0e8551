//! The function itself: the worker assembled from the configuration (the
//! kept copy, the bucket, or the last good one), each event handled, and
//! the worker assembled again when its configuration changes.

use crate::config::Config;
use crate::event::WorkerEvent;
use crate::start::{Arrival, Clients, HoldGate};
use crate::{FUNCTION_NAME, VERSION};
use adapters_aws::dynamodb::{self, DynamoClaims, DynamoContexts, DynamoTimers};
use adapters_aws::sqs::{self, SqsQueue};
use adapters_bedrock::BedrockModel;
use adapters_cloudwatch::SignedAws;
use adapters_knowledge_base::BedrockKnowledgeBases;
use adapters_mcp::StreamableHttpConnector;
use adapters_s3::S3Artifacts;
use adapters_secrets::SecretsManager;
use adapters_sigv4::{AwsApi, Signer};
use adapters_slack::web::WebClient;
use adapters_slack::{OutputGuard, SlackWebReader, WebAgent};
use assistant_core::alerts::OpsAlerts;
use assistant_core::feedback::FeedbackLog;
use assistant_core::oauth::{ConnectStates, SealedVault};
use assistant_core::ports::{MessageVisibility, StoredRecord};
use assistant_core::store::{RecordDeliveries, StreamLog};
use assistant_core::{Clock, SystemClock, WorkMessage};
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use lambda_support::events::{self, UnsupportedEvent};
use lambda_support::health::{self, HealthReport};
use lambda_support::metrics::EmfTurnMetrics;
use lambda_support::sqs_batch::{self, Permanent};
use serde_json::Value;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tools_registry::ToolRegistry;
use worker_config::AssistantConfig;
use worker_config::fallback::{self, ConfigProblem, Serving, Started};
use worker_config::kept::{self, KeptConfiguration, ReadConfiguration};
use worker_config::{StartupError, WorkerPorts};
use worker_identity::sign_in::SignInPorts;
use worker_turn::{Assembly, Deadline, Worker};

/// The assistant configuration a starting worker tries first, as read
/// from the bucket at a time, directly or through the copy the workers
/// keep; and what it falls back to ([`worker_config::fallback`]).
pub struct Configured {
    /// The bucket's configuration (or its fresh copy), or why it could not
    /// be read.
    pub(crate) read: Result<ReadConfiguration, StartupError>,
    /// The kept copy's record as the first read found it, for the fallback
    /// (none: read it if the fallback is needed).
    pub(crate) kept: Option<StoredRecord>,
    pub(crate) copies: KeptConfiguration,
    /// `read` is the fresh kept copy (not kept again), read at this time.
    pub(crate) from_copy: Option<i64>,
}

/// Keeps a configuration read from the bucket for the next cold starts,
/// and as the fallback from broken uploads (background work: no answer
/// waits for it). Not fatal: a start that cannot keep it has it anyway, and
/// the next cold start reads the bucket.
pub(crate) async fn keep(copies: KeptConfiguration, read: ReadConfiguration) {
    if let Err(err) = copies.keep(&read).await {
        tracing::warn!(error = %err, "the configuration was not kept: the next cold start reads the bucket");
    }
}

/// `read_at` (Unix seconds) on this process's clock.
pub(crate) fn instant_of(read_at: i64) -> Instant {
    let age = (SystemClock.now_unix() - read_at).max(0) as u64;
    Instant::now().checked_sub(Duration::from_secs(age)).unwrap_or_else(Instant::now)
}

pub struct WorkerFunction {
    /// The worker for the configuration as last read, assembled again every
    /// [`REASSEMBLE_AFTER`].
    pub(crate) assembled: RwLock<Arc<Assembled>>,
    pub(crate) assembled_at: Mutex<Instant>,
    pub(crate) reassemble_after: Duration,
    pub(crate) clients: Clients,
    /// Messages held and turns read ahead; its visibility also sets a
    /// failed message's backoff.
    pub(crate) arrival: Arrival,
    pub(crate) config: Config,
    /// The worker's Slack client, for the health check's `auth.test`.
    pub(crate) slack: WebClient,
    /// The ops channel's alerts, for a degraded health check and a broken
    /// configuration.
    pub(crate) alerts: Option<Arc<OpsAlerts>>,
    /// Why the bucket's configuration is not what this worker serves (and
    /// what it serves instead): the health check's failed `config` check.
    pub(crate) config_problem: Mutex<Option<(ConfigProblem, Serving)>>,
}

/// A worker and what the health check needs of the configuration it was
/// assembled for.
pub(crate) struct Assembled {
    pub(crate) worker: Worker,
    /// Where the docs tools list: the one listing the worker's role allows,
    /// so the health check lists there too.
    pub(crate) docs_prefix: String,
    /// Which configuration it serves.
    pub(crate) serving: Serving,
    /// When that was read from the bucket (Unix seconds).
    pub(crate) read_at: i64,
    /// It came from an object's text (not the defaults).
    pub(crate) from_text: bool,
}

/// Where an assembly's configuration was read. The worker that reads it
/// from the bucket publishes what the ingress needs of it (the channels that
/// answer every question) and keeps the copy cold workers start from; a
/// worker started from that copy publishes nothing: it would write what the
/// copy's reader wrote, one `PutItem` on every cold start, run beside the
/// first answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadFrom {
    Bucket,
    KeptCopy,
}

impl Assembled {
    /// The worker for `assistant`, which serves the bucket's configuration
    /// (see [`Assembled::serving`]), read from `from`.
    async fn new(
        config: &Config,
        clients: &Clients,
        arrival: &Arrival,
        slack: &WebClient,
        assistant: AssistantConfig,
        from: ReadFrom,
    ) -> Result<Self, StartupError> {
        let worker = assemble_worker(config, clients, arrival, slack, &assistant, from).await?;
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
pub(crate) const CONFIG_CHECK: &str = "config";

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
pub(crate) const HOLD_MARGIN: Duration = Duration::from_secs(10);

/// How long `load` waits for the start's background work (an MCP server's
/// tool list is read within 5 s). An invocation does not wait for it: it
/// goes on beside the work, and what Lambda freezes goes on when the
/// process thaws (every piece of it is a read or a put of the same item).
pub(crate) const BACKGROUND_WAIT: Duration = Duration::from_secs(6);

/// Work that has not finished after this long holds its messages.
pub(crate) const HOLD_AFTER: Duration = Duration::from_secs(1);

/// Time left before Lambda's deadline (milliseconds since the epoch).
pub(crate) struct LambdaDeadline(pub(crate) u64);

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
        let configured =
            Self::configuration(&config, &clients.artifacts(&config.artifact_bucket), &arrival, None).await;
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
        bucket: &S3Artifacts,
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
        let read = worker_config::assembly::read_config(bucket, key, SystemClock.now_unix()).await;
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
        let from = if from_copy.is_some() { ReadFrom::KeptCopy } else { ReadFrom::Bucket };
        let assemble = move |assistant| Assembled::new(on, with, by, to, assistant, from);
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
        log_assembly("worker assembled", object, assembled.worker.assembly(), Some((from_copy.is_some(), serving)));
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
        self.reassemble().await;
    }

    /// Reads the configuration again and assembles the worker anew, now
    /// (see [`Self::reassemble_if_due`]).
    async fn reassemble(&self) {
        let current = self.assembled();
        let object = &self.config.assistant_config_key;
        // The bucket's, never the kept copy: this is how copies are renewed.
        let artifacts = self.clients.artifacts(&self.config.artifact_bucket);
        let read = worker_config::assembly::read_config(&artifacts, object, SystemClock.now_unix()).await;
        let (on, with, by, to) = (&self.config, &self.clients, &self.arrival, &self.slack);
        let assemble = move |assistant| Assembled::new(on, with, by, to, assistant, ReadFrom::Bucket);
        match fallback::reassemble(object, read, current.from_text, assemble).await {
            // A read that failed: tried again at the next re-read.
            Ok(None) => {}
            Ok(Some((assembled, read))) => {
                let assembled = assembled.serving(Serving::Current, read.read_at, read.bytes.is_some());
                let copies = KeptConfiguration::new(self.arrival.records.clone(), object);
                assembled.worker.background().spawn(keep(copies, read));
                log_assembly("worker assembled again", object, assembled.worker.assembly(), None);
                *self.assembled.write().expect("assembled lock") = Arc::new(assembled);
                if self.config_problem.lock().expect("config_problem lock").take().is_some() {
                    tracing::info!(config = %object, "the assistant configuration is usable again");
                }
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
        // An MCP server changed its tools (and the new list is kept): this
        // invocation is served by a worker assembled anew from the kept
        // lists, so the model is offered the new list from this step on.
        if self.assembled().worker.tools().changed().take() {
            tracing::info!("a tool list changed: the worker is assembled again before this invocation");
            *self.assembled_at.lock().expect("assembled_at lock") = Instant::now();
            self.reassemble().await;
        }
        // Beside the work: a worker assembled anew serves the next one.
        let assembled = self.assembled();
        let (handled, ()) = tokio::join!(self.handle_event(&assembled, event, deadline_ms), self.reassemble_if_due());
        // The answer is ready: the start's background work may run (a
        // worker assembled beside this invocation's work included).
        assembled.worker.background().release();
        self.assembled().worker.background().release();
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
        let gate = HoldGate::new(self.arrival.visibility.as_ref());
        let mut work = std::pin::pin!(self.handle_batch(&assembled.worker, &batch, &deadline, &gate));
        // The hold beside the work, until the work is done.
        let response = tokio::select! {
            biased;
            response = &mut work => response,
            () = self.arrival.hold_if_long(&batch, deadline_ms, &gate) => work.await,
        };
        self.arrival.turns.forget();
        serde_json::to_value(response).expect("batch response serializes")
    }

    async fn handle_batch(
        &self,
        worker: &Worker,
        batch: &SqsEvent,
        deadline: &dyn Deadline,
        visibility: &dyn MessageVisibility,
    ) -> SqsBatchResponse {
        sqs_batch::handle_event(batch, visibility, |record| async move {
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
        let bucket = self.clients.artifacts(&self.config.artifact_bucket);
        let (table, work, replies, bucket, slack) = tokio::join!(
            health::check("dynamodb", dynamodb::check_reads(&self.clients.dynamodb, &self.config.turns_table)),
            health::check("sqs_work", sqs::check_queue(self.clients.sqs.get(), &self.config.work_queue_url)),
            health::check("sqs_reply", sqs::check_queue(self.clients.sqs.get(), &self.config.reply_queue_url)),
            health::check("s3", bucket.check(&assembled.docs_prefix)),
            health::check("slack", slack),
        );
        let config = self.config_check().await;
        HealthReport::new(FUNCTION_NAME, VERSION, vec![table, work, replies, bucket, slack, config])
    }
}

/// The one line an assembly logs, as few as a cold start can give (each
/// line is written, and read by Lambda, before the first answer): `what`
/// happened, the configuration's key, what the worker was made of and, at
/// a start, whether it came from the kept copy and what is served.
fn log_assembly(what: &str, object: &str, made: &Assembly, start: Option<(bool, Serving)>) {
    tracing::info!(
        config = %object,
        kept = start.map(|(kept, _)| kept),
        serving = start.map(|(_, serving)| tracing::field::debug(serving)),
        prompt = %made.prompt,
        docs = %made.docs,
        http_tools = made.http_tools,
        mcp_servers = made.mcp_servers,
        tools = made.tools,
        tool_policy = made.tool_policy,
        "{what}"
    );
}

/// The worker for `assistant` on the AWS and Slack adapters: tools'
/// headers' `${env:NAME}` from this process's environment, `${secret:NAME}`
/// from Secrets Manager under `SECRETS_PREFIX`; read `from` the bucket, it
/// publishes its every-question channels ([`ReadFrom`]).
pub(crate) async fn assemble_worker(
    config: &Config,
    clients: &Clients,
    arrival: &Arrival,
    slack: &WebClient,
    assistant: &AssistantConfig,
    from: ReadFrom,
) -> Result<Worker, StartupError> {
    let artifacts = Arc::new(clients.artifacts(&config.artifact_bucket));
    let records = &arrival.records;
    // One signer for every hand-signed AWS call of the process.
    let signer = Signer::new(&clients.aws);
    // The ingress's claims: the workers make alert threads theirs and read
    // the action tokens kept beside them.
    let claims = Arc::new(DynamoClaims::new(clients.dynamodb.clone(), &config.turns_table));
    let knowledge = AwsApi::new(clients.http.clone(), signer.clone(), adapters_knowledge_base::AGENT_RUNTIME, None);
    let ports = WorkerPorts {
        core: worker_turn::Ports {
            store: arrival.turns.clone(),
            deliveries: Arc::new(RecordDeliveries::new(records.clone())),
            model: Arc::new(BedrockModel::new(clients.bedrock.clone(), &config.model_id)),
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
            metrics: Arc::new(EmfTurnMetrics { function: FUNCTION_NAME, memory_mb: config.memory_mb }),
            agent: Arc::new(WebAgent::new(slack.clone())),
            streams: StreamLog::new(records.clone()),
            feedback: FeedbackLog::new(records.clone()),
            grants: assistant_core::grants::ThreadGrants::new(records.clone())
                .in_organization(config.organization.clone()),
            departures: assistant_core::departures::Departures::new(records.clone())
                .in_organization(config.organization.clone()),
            response_urls: assistant_core::response_url::ResponseUrls::new(records.clone()),
            spending: assistant_core::budgets::Spending::new(records.clone(), config.memory_mb)
                .in_organization(config.organization.clone()),
            forms: assistant_core::elicitation::Forms::new(records.clone()),
            contexts: Arc::new(DynamoContexts::new(clients.dynamodb.clone(), &config.turns_table)),
        },
        guardrails: Arc::new({
            let bedrock = clients.bedrock.clone();
            move |id: &str, version: &str| {
                Arc::new(adapters_bedrock::guardrail::BedrockGuardrail::new(bedrock.clone(), id, version))
                    as Arc<dyn assistant_core::guardrail::Guardrail>
            }
        }),
        models: Arc::new({
            let bedrock = clients.bedrock.clone();
            move |id: &str| Arc::new(BedrockModel::new(bedrock.clone(), id)) as Arc<dyn assistant_core::model::Model>
        }),
        http: clients.http.clone(),
        mcp: Arc::new(StreamableHttpConnector::new(clients.http.clone()).with_signer(Arc::new(signer.clone()))),
        aws: Arc::new(SignedAws::new(&clients.aws, signer.clone(), clients.http.clone())),
        signer: Arc::new(signer.clone()),
        knowledge: Arc::new(BedrockKnowledgeBases::new(knowledge)),
        secrets: Arc::new(SecretsManager::new(&signer, clients.http.clone(), &config.secrets_prefix)),
        every_question: (from == ReadFrom::Bucket).then(|| {
            assistant_core::response_modes::EveryQuestionChannels::new(records.clone(), Arc::new(SystemClock))
        }),
        memory: Some(
            assistant_core::memory::ChannelMemory::new(records.clone(), assistant.memory.retention_secs())
                .in_organization(config.organization.clone()),
        ),
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
                vault: Arc::new(
                    SealedVault::new(records.clone(), Arc::new(sealer)).in_organization(config.organization.clone()),
                ),
                states: ConnectStates::new(records.clone()),
                tokens: Arc::new(adapters_oauth::OAuthClient::new(clients.http.clone())),
                urls: urls.clone(),
            }
        }),
    };
    worker_config::assemble(ports, assistant, config.limits, &|name| std::env::var(name).ok()).await
}
