//! What the end-to-end tests share: the Lambda events in `tests/events/`,
//! fresh resources in the local AWS emulator for each test, the real
//! function binaries run under AWS's Lambda Runtime Interface Emulator, and
//! fakes of the services that cannot run here (Bedrock, Slack), speaking
//! their real wire formats.
//!
//! `infra/test.sh` starts the emulator and exports where everything is
//! (`AWS_ENDPOINT_URL`, `AWS_LAMBDA_RIE`, `FUNCTION_BIN_DIR`,
//! `FAKETIME_LIB`). Run through it; a test run without them fails and says
//! so rather than skipping.

pub mod events;
pub mod fake_bedrock;
pub mod fake_slack;
pub mod fault_proxy;
pub mod function_url;
pub mod lambda;
pub mod load;
pub mod local_server;
pub mod mcp_server;
pub mod soak;

use adapters_aws::dynamodb::DynamoRecords;
use adapters_aws::provision::{self, QueueUrls};
use anyhow::{Context, Result};
use assistant_core::store::{RecordDeliveries, RecordTurns};
use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// A variable `infra/test.sh` exports, or a failure that says to use it.
pub fn env_from_test_command(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run the tests with infra/test.sh, which installs and starts what they need")
    })
}

/// The real SDK configuration, pointed at the local emulator. Calls are
/// retried as the SDK's standard mode retries them (a server error, a
/// throttle), with a short backoff: the emulator, busy with two test
/// threads and the functions' binaries, has answered a `CreateQueue` with a
/// 500 page, and a test's own set-up must not fail on what AWS's clients
/// retry. Errors a test asserts (a condition, a missing item) are not
/// retried.
pub async fn emulator_config() -> SdkConfig {
    env_from_test_command("AWS_ENDPOINT_URL");
    aws_config::defaults(BehaviorVersion::latest())
        .retry_config(
            RetryConfig::standard().with_max_attempts(3).with_initial_backoff(std::time::Duration::from_millis(50)),
        )
        .load()
        .await
}

/// The real SDK configuration, pointed at the emulator through a
/// [`fault_proxy::FaultProxy`] at `proxy_url`, with the SDK's standard
/// retries (`max_attempts`, backoff shortened so tests take milliseconds).
pub async fn config_through(
    proxy_url: &str,
    max_attempts: u32,
    timeouts: aws_config::timeout::TimeoutConfig,
) -> SdkConfig {
    env_from_test_command("AWS_ENDPOINT_URL");
    aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(proxy_url)
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(max_attempts)
                .with_initial_backoff(std::time::Duration::from_millis(10)),
        )
        .timeout_config(timeouts)
        .load()
        .await
}

/// The function whose role an AWS call is made as. Each function's calls are
/// signed with its own access key id, so that the local AWS emulator's and
/// the fakes' records of them (`AWS_CALL_LOG`) say whose they were: after
/// the tests, `infra/iam/check.py` evaluates each against the policies
/// `template.yaml` gives that function's role. The tests' own set-up and
/// inspection calls keep the test command's key, and are not evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Ingress,
    Worker,
    Responder,
}

impl Role {
    /// The access key id this role's calls are signed with (the emulator
    /// checks no signature; `infra/iam/check.py` maps it back).
    pub fn access_key_id(self) -> &'static str {
        match self {
            Role::Ingress => "AKIDINGRESSFUNCTION",
            Role::Worker => "AKIDWORKERFUNCTION",
            Role::Responder => "AKIDRESPONDERFUNCTION",
        }
    }

    /// The variable a function binary's environment signs as this role with.
    pub fn env(self) -> (&'static str, String) {
        ("AWS_ACCESS_KEY_ID", self.access_key_id().to_owned())
    }

    /// `aws`, signing as this role (same endpoint, retries and secret key),
    /// its user agent naming the test that makes the calls.
    pub fn config(self, aws: &SdkConfig) -> SdkConfig {
        let secret = std::env::var("AWS_SECRET_ACCESS_KEY").unwrap_or_else(|_| "test".to_owned());
        let credentials = aws_credential_types::Credentials::new(self.access_key_id(), secret, None, None, "tests");
        let mut config = aws
            .to_builder()
            .credentials_provider(aws_credential_types::provider::SharedCredentialsProvider::new(credentials));
        if let Some(name) = current_test().and_then(|name| aws_config::AppName::new(name).ok()) {
            config = config.app_name(name);
        }
        config.build()
    }
}

/// The running test's name (the test harness names each test's thread after
/// it), in the characters an SDK app name (`app/…` in the user agent) may
/// hold: how `infra/iam/check.py` says which test used an action.
pub fn current_test() -> Option<String> {
    let thread = std::thread::current();
    let name = thread.name().filter(|name| *name != "main")?;
    Some(name.chars().map(|c| if c.is_ascii_alphanumeric() || "_-.".contains(c) { c } else { '-' }).collect())
}

/// A name no other test (or earlier run against the same emulator) uses.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{prefix}-{}-{}-{nanos}", std::process::id(), COUNTER.fetch_add(1, Ordering::SeqCst))
}

/// One test's own table, work queue and reply queue (each with its
/// dead-letter queue) and artifact bucket, made as `template.yaml` makes
/// them.
/// A queue's ARN as Lambda's events name it, from its URL at the emulator
/// (`…/{account}/{name}`; the emulator's region is us-east-1).
pub fn queue_arn(url: &str) -> String {
    let mut parts = url.rsplit('/');
    let name = parts.next().unwrap_or_default();
    let account = parts.next().unwrap_or_default();
    format!("arn:aws:sqs:us-east-1:{account}:{name}")
}

/// The queues' `maxReceiveCount`, as in `template.yaml`.
pub const MAX_RECEIVES: u32 = 8;

/// An SDK client of the emulator's S3 (path-style: `bucket.localhost`
/// does not resolve), for what tests put in or read out of a bucket
/// beside the functions' own hand-signed calls.
pub fn s3_client(aws: &SdkConfig) -> aws_sdk_s3::Client {
    aws_sdk_s3::Client::from_conf(aws_sdk_s3::config::Builder::from(aws).force_path_style(true).build())
}

/// `bucket` as the worker reaches it (signed by hand on the process's HTTP
/// client), with `aws`'s identity and endpoint.
pub fn artifacts(aws: &SdkConfig, bucket: &str) -> adapters_s3::S3Artifacts {
    adapters_s3::S3Artifacts::new(adapters_slack::web::http_client(), adapters_sigv4::Signer::new(aws), bucket)
}

pub struct Stack {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub table: String,
    pub work_queue: QueueUrls,
    pub reply_queue: QueueUrls,
    pub s3: aws_sdk_s3::Client,
    pub bucket: String,
    /// The stack's Secrets Manager prefix (`SECRETS_PREFIX`).
    pub secrets_prefix: String,
    /// The emulator, for the calls no linked SDK client makes.
    endpoint: String,
    /// The configuration the stack was made with (the test command's key).
    aws: SdkConfig,
}

impl Stack {
    /// The table's turns, through the same store the functions use.
    pub fn turns(&self) -> RecordTurns {
        RecordTurns::new(Arc::new(DynamoRecords::new(self.dynamodb.clone(), &self.table)))
    }

    /// The table's delivery records, through the same log the functions use.
    pub fn deliveries(&self) -> RecordDeliveries {
        RecordDeliveries::new(Arc::new(DynamoRecords::new(self.dynamodb.clone(), &self.table)))
    }

    /// The worker's records of the answers it streamed.
    pub fn streams(&self) -> assistant_core::store::StreamLog {
        assistant_core::store::StreamLog::new(Arc::new(DynamoRecords::new(self.dynamodb.clone(), &self.table)))
    }

    /// People's ratings of answers.
    pub fn feedback(&self) -> assistant_core::feedback::FeedbackLog {
        assistant_core::feedback::FeedbackLog::new(Arc::new(DynamoRecords::new(self.dynamodb.clone(), &self.table)))
    }

    pub async fn new(aws: &SdkConfig) -> Result<Self> {
        let dynamodb = aws_sdk_dynamodb::Client::new(aws);
        let sqs = aws_sdk_sqs::Client::new(aws);
        let table = unique_name("turns");
        provision::turns_table(&dynamodb, &table).await.context("create table")?;
        let work_queue = provision::fifo_queue_with_dlq(&sqs, &unique_name("work"), MAX_RECEIVES, 30)
            .await
            .context("create work queue")?;
        let reply_queue = provision::fifo_queue_with_dlq(&sqs, &unique_name("reply"), MAX_RECEIVES, 30)
            .await
            .context("create reply queue")?;
        let s3 = s3_client(aws);
        let bucket = unique_name("artifacts").to_lowercase();
        artifacts(aws, &bucket).create_bucket().await.context("create bucket")?;
        let endpoint = aws.endpoint_url().context("the emulator's endpoint")?.to_owned();
        let secrets_prefix = format!("{}/", unique_name("secrets"));
        Ok(Self {
            dynamodb,
            sqs,
            table,
            work_queue,
            reply_queue,
            s3,
            bucket,
            secrets_prefix,
            endpoint,
            aws: aws.clone(),
        })
    }

    /// The stack's configuration, signing as `role`.
    pub fn config_as(&self, role: Role) -> SdkConfig {
        role.config(&self.aws)
    }

    /// Clients of the stack's table, queues and bucket, signing as `role`.
    pub fn clients_as(&self, role: Role) -> (aws_sdk_dynamodb::Client, aws_sdk_sqs::Client, aws_sdk_s3::Client) {
        let aws = self.config_as(role);
        (aws_sdk_dynamodb::Client::new(&aws), aws_sdk_sqs::Client::new(&aws), s3_client(&aws))
    }

    /// Creates the secret `name` under the stack's prefix at the emulator,
    /// as an operator would with `aws secretsmanager create-secret`. (moto
    /// routes by the credential scope and does not check the signature.)
    pub async fn put_secret(&self, name: &str, value: &str) {
        let response = reqwest::Client::new()
            .post(&self.endpoint)
            .header("content-type", "application/x-amz-json-1.1")
            .header("x-amz-target", "secretsmanager.CreateSecret")
            .header(
                "authorization",
                "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/secretsmanager/aws4_request, SignedHeaders=host, Signature=0",
            )
            .json(&serde_json::json!({"Name": format!("{}{name}", self.secrets_prefix), "SecretString": value}))
            .send()
            .await
            .expect("the emulator answers");
        assert!(response.status().is_success(), "CreateSecret: {}", response.text().await.unwrap_or_default());
    }

    /// Every message now visible on the work queue, with its system
    /// attributes (group and deduplication ids).
    pub async fn receive_work(&self) -> Result<Vec<Message>> {
        self.receive(&self.work_queue.queue).await
    }

    /// Every reply-queue message now visible, decoded.
    pub async fn receive_replies(&self) -> Result<Vec<assistant_core::messages::ReplyMessage>> {
        let messages = self.receive(&self.reply_queue.queue).await?;
        messages
            .iter()
            .map(|m| {
                assistant_core::messages::ReplyMessage::decode(m.body().unwrap_or_default()).context("reply envelope")
            })
            .collect()
    }

    /// Every reply-queue message now visible, decoded, status lines left out.
    pub async fn receive_requests(&self) -> Result<Vec<assistant_core::messages::ReplyMessage>> {
        let replies = self.receive_replies().await?;
        Ok(replies
            .into_iter()
            .filter(|m| !matches!(m, assistant_core::messages::ReplyMessage::Progress { .. }))
            .collect())
    }

    /// Every message now visible on `queue_url`, with its system attributes.
    pub async fn receive(&self, queue_url: &str) -> Result<Vec<Message>> {
        let mut received = Vec::new();
        loop {
            let batch = self.receive_batch(queue_url).await?;
            if batch.is_empty() {
                return Ok(received);
            }
            received.extend(batch);
        }
    }

    /// Up to ten messages now visible on `queue_url`, as one Lambda batch
    /// would get them, with their system attributes.
    pub async fn receive_batch(&self, queue_url: &str) -> Result<Vec<Message>> {
        Ok(self
            .sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .context("receive")?
            .messages
            .unwrap_or_default())
    }

    /// Puts an object in the stack's artifact bucket (an assistant
    /// configuration, a runbook).
    pub async fn put(&self, key: &str, body: &str) {
        let body = aws_sdk_s3::primitives::ByteStream::from(body.as_bytes().to_vec());
        self.s3.put_object().bucket(&self.bucket).key(key).body(body).send().await.expect("put object");
    }

    /// Deletes handled messages, as Lambda's event source mapping does after
    /// a batch without failures (a FIFO group stays locked until then).
    pub async fn acknowledge(&self, queue_url: &str, messages: &[Message]) -> Result<()> {
        for message in messages {
            self.sqs
                .delete_message()
                .queue_url(queue_url)
                .receipt_handle(message.receipt_handle().unwrap_or_default())
                .send()
                .await
                .context("delete")?;
        }
        Ok(())
    }

    /// The partition keys of every item in the table, sorted
    /// (`EVENT#…` dedupe records, `THREAD#…` bot threads).
    pub async fn table_keys(&self) -> Result<Vec<String>> {
        let scan = self.dynamodb.scan().table_name(&self.table).send().await.context("scan table")?;
        let mut keys: Vec<String> = scan
            .items
            .unwrap_or_default()
            .iter()
            .filter_map(|item| item.get("pk").and_then(|pk| pk.as_s().ok()).cloned())
            .collect();
        keys.sort();
        Ok(keys)
    }
}

/// The three functions' handlers on one stack, as Lambda runs them: the
/// ingress with its clock at the event files' signing time, the worker with
/// its Bedrock client at the fake and its assistant configuration from the
/// stack's bucket, the responder; both talk to the fake Slack.
pub struct Functions {
    pub ingress: ingress::Ingress,
    pub worker: worker::WorkerFunction,
    pub responder: responder::ResponderFunction,
}

impl Functions {
    pub async fn start(aws: &SdkConfig, stack: &Stack, slack_url: &str, bedrock: &fake_bedrock::FakeBedrock) -> Self {
        Self::start_with(aws, stack, bedrock, worker_config(stack, slack_url)).await
    }

    /// With the worker's configuration as given (its Slack URL included).
    pub async fn start_with(
        aws: &SdkConfig,
        stack: &Stack,
        bedrock: &fake_bedrock::FakeBedrock,
        worker: worker::Config,
    ) -> Self {
        let slack_url = worker.slack_api_base_url.clone();
        let slack_url = slack_url.as_str();
        let ingress = ingress::Ingress::new(
            ingress_config(stack),
            &Role::Ingress.config(aws),
            std::sync::Arc::new(testkit::clock::ManualClock::at(events::SIGNED_AT + 1)),
        );
        let retry = adapters_bedrock::retry_config().with_initial_backoff(std::time::Duration::from_millis(5));
        let as_worker = Role::Worker.config(aws);
        let (dynamodb, sqs, _) = stack.clients_as(Role::Worker);
        let worker = worker::WorkerFunction::load(
            worker,
            worker::Clients {
                dynamodb,
                sqs: sqs.into(),
                bedrock: bedrock.client(&as_worker, retry).into(),
                http: adapters_slack::web::http_client(),
                aws: as_worker,
            },
        )
        .await
        .expect("the worker starts");
        let responder =
            responder::ResponderFunction::new(responder_config(stack, slack_url, vec![]), responder_clients(stack));
        Self { ingress, worker, responder }
    }
}

/// A stack, the fakes (Slack answering `conversations.info`, Bedrock) and
/// the three handlers on them: what an end-to-end test of a person's
/// question drives.
pub struct World {
    pub stack: Stack,
    pub slack: fake_slack::FakeSlack,
    pub bedrock: fake_bedrock::FakeBedrock,
    pub functions: Functions,
}

impl World {
    pub async fn new() -> Self {
        Self::configured(None).await
    }

    /// With this assistant configuration in the bucket before the worker
    /// starts (`None`: none, the defaults).
    pub async fn configured(config: Option<serde_json::Value>) -> Self {
        let aws = emulator_config().await;
        let stack = Stack::new(&aws).await.expect("emulator resources");
        if let Some(config) = config {
            stack.put("config/assistant.json", &config.to_string()).await;
        }
        let slack = fake_slack::FakeSlack::start().await;
        slack.default_reply("conversations.info", fake_slack::CONVERSATIONS_INFO);
        let bedrock = fake_bedrock::FakeBedrock::start().await;
        let functions = Functions::start(&aws, &stack, slack.url(), &bedrock).await;
        Self { stack, slack, bedrock, functions }
    }

    /// A Slack request (a JSON event, or an interaction form) through the
    /// ingress, signed as Slack signs it: what it queued.
    pub async fn slack_sends(&self, body: &str) -> Vec<Message> {
        let template = if body.starts_with("payload=") { events::APPROVAL_CLICK } else { events::APP_MENTION };
        let event = events::with_body(&events::parse(template), body);
        let response = self.functions.ingress.handle(event).await.expect("the ingress answers");
        assert_eq!(response["statusCode"], 200, "{response}");
        self.stack.receive_work().await.expect("the work queue")
    }

    /// The worker on a batch: its batch response (nothing acknowledged).
    pub async fn work(&self, work: &[Message]) -> serde_json::Value {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970");
        let deadline = now.as_millis() as u64 + 600_000;
        // Boxed, as the Lambda runtime holds a handler's future.
        let handled = Box::pin(self.functions.worker.handle(sqs_event(work, WORK_QUEUE_ARN), deadline));
        handled.await.expect("an SQS batch")
    }
}

/// The queues' ARNs as the event source mappings name them in SQS events.
pub const WORK_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-work.fifo";
pub const REPLY_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-reply.fifo";

impl Functions {
    /// One round, as Lambda would run it: whatever is on the work queue
    /// through the worker, then whatever is on the reply queue through the
    /// responder; no message may fail. What each queue held.
    pub async fn round(&self, stack: &Stack) -> (Vec<Message>, Vec<Message>) {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970");
        let deadline = now.as_millis() as u64 + 600_000;
        let work = stack.receive_work().await.expect("the work queue");
        if !work.is_empty() {
            // Boxed, as the Lambda runtime holds a handler's future: the
            // functions' futures are too large for a test thread's stack.
            let handled = Box::pin(self.worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline));
            let response = handled.await.expect("an SQS batch");
            assert_eq!(batch_failures(&response), Vec::<String>::new(), "{response}");
            stack.acknowledge(&stack.work_queue.queue, &work).await.expect("acknowledged");
        }
        let replies = stack.receive(&stack.reply_queue.queue).await.expect("the reply queue");
        if !replies.is_empty() {
            let handled = Box::pin(self.responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)));
            let response = handled.await.expect("an SQS batch");
            assert_eq!(batch_failures(&response), Vec::<String>::new(), "{response}");
            stack.acknowledge(&stack.reply_queue.queue, &replies).await.expect("acknowledged");
        }
        (work, replies)
    }
}

/// The ingress on `stack` holding a bot token (`xoxb-test-token`), so it
/// opens modals (`views.open`) on the fake Slack at `slack_url`; its clock
/// at the test events' signing time.
pub fn ingress_opening_views(aws: &aws_config::SdkConfig, stack: &Stack, slack_url: &str) -> ingress::Ingress {
    let config = ingress::Config {
        bot_token: Some(lambda_support::env::SecretVar::Value("xoxb-test-token".into())),
        slack_api_base_url: slack_url.to_owned(),
        ..ingress_config(stack)
    };
    ingress::Ingress::new(
        config,
        &Role::Ingress.config(aws),
        std::sync::Arc::new(testkit::clock::ManualClock::at(events::SIGNED_AT + 1)),
    )
}

/// The ingress's runtime contract on `stack`, signed with the test events' secret.
pub fn ingress_config(stack: &Stack) -> ingress::Config {
    use ingress_logic::alert_webhooks::WebhookSecret;
    ingress::Config {
        signing_secret: slack::SigningSecret::new(events::signing_secret()).expect("secret"),
        turns_table: stack.table.clone(),
        work_queue_url: stack.work_queue.queue.clone(),
        alertmanager_token: WebhookSecret::new(ALERTMANAGER_TOKEN),
        pagerduty_secret: WebhookSecret::new(PAGERDUTY_WEBHOOK_SECRET),
        home: slack::Home::Workspace,
        bot_token: None,
        slack_api_base_url: adapters_slack::web::DEFAULT_BASE_URL.to_owned(),
    }
}

/// The alert webhooks' secrets the tests' ingress is configured with.
pub const ALERTMANAGER_TOKEN: &str = "test-alertmanager-token-7d1e";
pub const PAGERDUTY_WEBHOOK_SECRET: &str = "test-pagerduty-signing-secret-2b9c";

/// A Lambda SQS event carrying `messages` as SQS delivered them, as the
/// event source mapping would build it.
pub fn sqs_event(messages: &[Message], queue_arn: &str) -> serde_json::Value {
    let records: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| {
            let attributes: serde_json::Map<String, serde_json::Value> = m
                .attributes()
                .map(|a| a.iter().map(|(k, v)| (k.as_str().to_owned(), v.clone().into())).collect())
                .unwrap_or_default();
            serde_json::json!({
                "messageId": m.message_id(),
                "receiptHandle": m.receipt_handle(),
                "body": m.body(),
                "attributes": attributes,
                "messageAttributes": {},
                "md5OfBody": m.md5_of_body(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1"
            })
        })
        .collect();
    serde_json::json!({ "Records": records })
}

/// The message ids an SQS batch response reports as failed.
pub fn batch_failures(response: &serde_json::Value) -> Vec<String> {
    response["batchItemFailures"]
        .as_array()
        .expect("a batch response")
        .iter()
        .map(|f| f["itemIdentifier"].as_str().expect("an item identifier").to_owned())
        .collect()
}

/// The model the tests' worker converses with: an inference profile, as
/// deployed (`ModelId` in `infra/iam/test-parameters.json`).
pub const MODEL_ID: &str = "us.anthropic.claude-sonnet-4-20250514-v1:0";

/// The worker's configuration for `stack`, calling Slack at `slack_api_base_url`.
pub fn worker_config(stack: &Stack, slack_api_base_url: &str) -> worker::Config {
    worker::Config {
        turns_table: stack.table.clone(),
        work_queue_url: stack.work_queue.queue.clone(),
        reply_queue_url: stack.reply_queue.queue.clone(),
        artifact_bucket: stack.bucket.clone(),
        model_id: MODEL_ID.into(),
        slack_bot_token: adapters_slack::web::BotToken::new("xoxb-test-token"),
        slack_api_base_url: slack_api_base_url.to_owned(),
        assistant_config_key: worker_config::DEFAULT_CONFIG_KEY.to_owned(),
        secrets_prefix: stack.secrets_prefix.clone(),
        memory_mb: 512,
        ops_channel: None,
        sign_in: None,
        limits: Default::default(),
        special_mentions: Default::default(),
        organization: None,
    }
}

/// The worker binary's environment on `stack` (the runtime contract's
/// variables), its Bedrock client at `bedrock_url` through the SDK's
/// endpoint variable and its Slack client at `slack_url`.
pub fn worker_env(stack: &Stack, bedrock_url: &str, slack_url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("TURNS_TABLE", stack.table.clone()),
        ("WORK_QUEUE_URL", stack.work_queue.queue.clone()),
        ("REPLY_QUEUE_URL", stack.reply_queue.queue.clone()),
        ("ARTIFACT_BUCKET", stack.bucket.clone()),
        ("MODEL_ID", MODEL_ID.to_owned()),
        Role::Worker.env(),
        ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", bedrock_url.to_owned()),
        ("SLACK_BOT_TOKEN", "xoxb-test-token".to_owned()),
        ("SLACK_API_BASE_URL", slack_url.to_owned()),
    ]
}

/// The responder's configuration for `stack`, posting to `slack_api_base_url`.
pub fn responder_config(
    stack: &Stack,
    slack_api_base_url: &str,
    dead_letter_queue_arns: Vec<String>,
) -> responder::Config {
    responder::Config {
        turns_table: stack.table.clone(),
        reply_queue_url: stack.reply_queue.queue.clone(),
        slack_bot_token: adapters_slack::web::BotToken::new("xoxb-test-token"),
        slack_api_base_url: slack_api_base_url.to_owned(),
        dead_letter_queue_arns,
        unfurl_links: false,
        special_mentions: Default::default(),
        ops_channel: None,
    }
}

/// The responder's clients for `stack`.
pub fn responder_clients(stack: &Stack) -> responder::Clients {
    let (dynamodb, sqs, _) = stack.clients_as(Role::Responder);
    responder::Clients { dynamodb, sqs: sqs.into(), http: adapters_slack::web::http_client() }
}

/// A message's body as a work envelope.
pub fn decode_work(message: &Message) -> assistant_core::WorkMessage {
    assistant_core::WorkMessage::decode(message.body().expect("message has a body")).expect("body is a work envelope")
}

/// A worker's cold start as its `main` makes it: the first invocation's
/// read (its turns and the kept configuration) beside the assembly, which
/// starts from the kept copy when fresh; then the invocation, with ten
/// minutes left, and the background work it leaves (the copy it keeps).
/// The worker and its answer to `event`.
pub async fn cold_start(
    config: worker::Config,
    clients: worker::Clients,
    event: serde_json::Value,
) -> (worker::WorkerFunction, serde_json::Value) {
    let arrival = worker::Arrival::new(&clients.dynamodb, &clients.sqs, &config);
    let event: worker::WorkerEvent = serde_json::from_value(event).expect("a worker event");
    let start = async {
        let kept = arrival.kept_configuration(worker::FIRST_EVENT_GRACE).await;
        let bucket = clients.artifacts(&config.artifact_bucket);
        let configured = worker::WorkerFunction::configuration(&config, &bucket, &arrival, kept).await;
        worker::WorkerFunction::load_with(config.clone(), clients.clone(), configured, arrival.clone())
            .await
            .expect("the worker starts")
    };
    let (function, ()) = tokio::join!(start, arrival.prepare(&event));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970");
    let response = function.handle_prepared(event, now.as_millis() as u64 + 600_000).await;
    function.settle().await;
    (function, response)
}

/// The worker's clients on `stack`, as the worker's role (the IAM check
/// holds their calls to the template's grants), Bedrock's at the fake with
/// a short backoff.
pub async fn worker_clients(stack: &Stack, bedrock: &fake_bedrock::FakeBedrock) -> worker::Clients {
    let aws = stack.config_as(Role::Worker);
    let (dynamodb, sqs, _) = stack.clients_as(Role::Worker);
    let retry = adapters_bedrock::retry_config().with_initial_backoff(std::time::Duration::from_millis(5));
    worker::Clients {
        dynamodb,
        sqs: sqs.into(),
        bedrock: bedrock.client(&aws, retry).into(),
        http: adapters_slack::web::http_client(),
        aws,
    }
}
