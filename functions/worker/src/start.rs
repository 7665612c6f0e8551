//! The cold start: the AWS clients built on helper threads beside the
//! runtime's registration ([`WorkerStart`], the `lambda_support::startup`
//! it implements), and the first invocation's read-ahead ([`Arrival`]): the
//! turns its messages name and the kept configuration, in one request.

use crate::config::Config;
use crate::event::WorkerEvent;
use crate::function::{FIRST_EVENT_GRACE, HOLD_AFTER, HOLD_MARGIN, LambdaDeadline, WorkerFunction};
use adapters_aws::Later;
use adapters_aws::dynamodb::DynamoRecords;
use adapters_aws::sqs::Visibility;
use adapters_s3::S3Artifacts;
use adapters_sigv4::Signer;
use assistant_core::WorkMessage;
use assistant_core::ports::{MessageVisibility, PortError, StoredRecord, VersionedRecords};
use assistant_core::store::{ReadAhead, RecordTurns};
use aws_lambda_events::sqs::SqsEvent;
use lambda_support::sqs_batch::Record;
use lambda_support::startup::{ColdStart, Deferred, FirstRead};
use std::sync::Arc;
use std::time::Duration;
use worker_config::kept;
use worker_turn::Deadline;

/// The clients the worker uses, one per process; the queues' and the
/// model's are built when a call first needs them ([`Later`]).
#[derive(Debug, Clone)]
pub struct Clients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: Later<aws_sdk_sqs::Client>,
    pub bedrock: Later<aws_sdk_bedrockruntime::Client>,
    pub http: reqwest::Client,
    /// The region, credentials and endpoints for the calls signed by hand
    /// (the artifact bucket, Secrets Manager, CloudWatch, Logs, knowledge
    /// bases).
    pub aws: aws_config::SdkConfig,
}

/// The AWS clients of [`Clients`]: start-up makes them where the SDK's
/// configuration is loaded, while the HTTP client is built on another core
/// ([`WorkerStart`]).
#[derive(Debug, Clone)]
pub struct AwsClients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: Later<aws_sdk_sqs::Client>,
    pub bedrock: Later<aws_sdk_bedrockruntime::Client>,
    pub aws: aws_config::SdkConfig,
}

impl AwsClients {
    /// The table's client, built already (the first invocation's read
    /// needs it), and the queues' and the model's, to be built when a
    /// call first needs them: a first event that sends nothing and asks
    /// no model (a continuation of a finished turn, a click) never waits
    /// for them.
    pub fn new(aws: &aws_config::SdkConfig, dynamodb: aws_sdk_dynamodb::Client) -> Self {
        let sqs = adapters_aws::sqs::client_on_first_use(aws);
        let for_bedrock = aws.clone();
        let bedrock = Later::new(move || {
            let config = aws_sdk_bedrockruntime::config::Builder::from(&for_bedrock)
                .retry_config(adapters_bedrock::retry_config())
                .timeout_config(adapters_bedrock::timeout_config(worker_turn::MODEL_CALL_TIME))
                .build();
            aws_sdk_bedrockruntime::Client::from_conf(config)
        });
        Self { dynamodb, sqs, bedrock, aws: aws.clone() }
    }
}

impl Clients {
    pub fn with(aws: AwsClients, http: reqwest::Client) -> Self {
        let AwsClients { dynamodb, sqs, bedrock, aws } = aws;
        Self { dynamodb, sqs, bedrock, http, aws }
    }

    /// The artifact bucket, signed by hand on the HTTP client.
    pub fn artifacts(&self, bucket: &str) -> S3Artifacts {
        S3Artifacts::new(self.http.clone(), Signer::new(&self.aws), bucket)
    }
}

/// The worker's cold start (`lambda_support::startup` says what runs on
/// which thread). From [`WorkerStart::begin`], a helper thread loads the AWS
/// SDK's configuration and builds the table's client, hands over the
/// [`Arrival`] built on it (the first invocation's read needs no other
/// client), and starts a third thread for the HTTP client for Slack, the
/// bucket and the tools; the queues' and the model's clients are built
/// when a call first needs them ([`AwsClients::new`]). The first
/// invocation's read-ahead ([`Arrival::prepare`]) fetches the turns its
/// messages name and the copy of the assistant configuration the workers
/// keep in one request; the worker is assembled from that copy when it is
/// fresh, from the bucket otherwise, and the invocation's work waits for
/// both. A bucket
/// configuration that cannot be used does not stop the start: the worker
/// serves the last one that parsed (or the defaults) and reports it
/// (`worker_config::fallback`). A worker that cannot start even so
/// stops the process, logged, as a failed init does.
pub struct WorkerStart {
    pub(crate) config: Config,
    pub(crate) arrival: Deferred<Arrival>,
    pub(crate) aws: Deferred<(AwsClients, Deferred<reqwest::Client>)>,
}

impl WorkerStart {
    /// Starts the helper threads.
    pub fn begin(config: Config) -> Self {
        let for_arrival = config.clone();
        let (send_arrival, arrival) = Deferred::sent();
        let aws = Deferred::spawn(move || async move {
            let sdk = adapters_aws::config::load(adapters_aws::config::worker_timeouts()).await;
            // The table's client first: the first invocation's read needs
            // no other, and starts while the HTTP client is built on a
            // thread of its own.
            let aws = AwsClients::new(&sdk, aws_sdk_dynamodb::Client::new(&sdk));
            // The receiver is gone only if the process is shutting down.
            let _ = send_arrival.send(Arrival::new(&aws.dynamodb, &aws.sqs, &for_arrival));
            let http = Deferred::spawn(|| async { adapters_slack::http_client() });
            (aws, http)
        });
        Self { config, arrival, aws }
    }
}

impl ColdStart for WorkerStart {
    type Function = WorkerFunction;
    type Event = WorkerEvent;

    async fn assemble(&self) -> Result<WorkerFunction, lambda_runtime::Error> {
        let (arrival, (aws, http)) = tokio::join!(self.arrival.get(), self.aws.get());
        let (kept, http) = tokio::join!(arrival.kept_configuration(FIRST_EVENT_GRACE), http.get());
        let clients = Clients::with(aws.clone(), http.clone());
        let bucket = clients.artifacts(&self.config.artifact_bucket);
        let configured = WorkerFunction::configuration(&self.config, &bucket, arrival, kept).await;
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
    pub(crate) visibility: Arc<Visibility>,
    pub(crate) turns: Arc<ReadAhead>,
    /// The turns table, for every other record the worker keeps.
    pub(crate) records: Arc<dyn VersionedRecords>,
    /// The kept configuration's record, read once: by the first invocation
    /// beside its turns, or alone by the assembly when no invocation comes.
    pub(crate) first_read: Arc<FirstRead<Option<StoredRecord>>>,
}

impl Arrival {
    pub fn new(dynamodb: &aws_sdk_dynamodb::Client, sqs: &Later<aws_sdk_sqs::Client>, config: &Config) -> Self {
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
    pub(crate) async fn hold_if_long(&self, batch: &SqsEvent, deadline_ms: u64, gate: &HoldGate<'_>) {
        tokio::time::sleep(HOLD_AFTER).await;
        let until = LambdaDeadline(deadline_ms).time_left() + HOLD_MARGIN;
        // Under the gate: once the work has set a visibility of its own, no
        // hold lands after it.
        let worked = gate.worked.lock().await;
        if *worked {
            return;
        }
        futures_util::future::join_all(batch.records.iter().map(Record::from).map(|record| async move {
            if let Err(err) = gate.inner.set(record.source, record.receipt_handle, until).await {
                tracing::warn!(error = %err, "message not held for the invocation: the queue's visibility timeout applies");
            }
        }))
        .await;
    }
}

/// An invocation's visibility changes in order: the hold's (until the
/// invocation's end) never lands after the work's own (a failed message's
/// backoff), which would keep the message away for the whole deadline.
/// The work's first change waits for a hold in flight; after it, the hold
/// changes nothing.
pub(crate) struct HoldGate<'a> {
    inner: &'a dyn MessageVisibility,
    /// Whether the work has changed a visibility.
    worked: tokio::sync::Mutex<bool>,
}

impl<'a> HoldGate<'a> {
    pub(crate) fn new(inner: &'a dyn MessageVisibility) -> Self {
        Self { inner, worked: tokio::sync::Mutex::new(false) }
    }
}

#[async_trait::async_trait]
impl MessageVisibility for HoldGate<'_> {
    async fn set(&self, queue_arn: &str, receipt_handle: &str, after: Duration) -> Result<(), PortError> {
        *self.worked.lock().await = true;
        self.inner.set(queue_arn, receipt_handle, after).await
    }
}
