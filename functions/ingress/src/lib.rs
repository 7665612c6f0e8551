//! The ingress function between Lambda and `ingress-logic`: its
//! configuration, its cold start ([`IngressStart`]), and the mapping from
//! Lambda events (HTTP payload 2.0 from a Function URL or API Gateway, or
//! the scheduled health event: [`IngressEvent`]) to calls and back to
//! responses.

use adapters_aws::dynamodb::{self, DynamoClaims, DynamoContexts, DynamoRecords};
use adapters_aws::sqs::{self, SqsQueue};
use assistant_core::Clock;
use assistant_core::WorkMessage;
use assistant_core::oauth::ConnectStates;
use assistant_core::ports::{
    ClaimOutcome, EventClaim, EventClaims, PortError, Put, RecordKey, RecordWrite, StoredRecord, UserContext,
    UserContexts, VersionedRecords, WorkQueue,
};
use assistant_core::response_modes::EveryQuestionChannels;
use async_trait::async_trait;
use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use aws_lambda_events::encodings::Body;
use http::{HeaderMap, HeaderValue, header};
use ingress_logic::alert_webhooks::{AlertRequest, AlertWebhooks, WebhookSecret};
use ingress_logic::sign_in::{Answer, BrowserKey, BrowserRequest, Page, SignInPages};
use ingress_logic::{Counted, Intake, Reply, Request};
use lambda_support::env::{self, ConfigError, required};
use lambda_support::events::{self, Events, UnsupportedEvent};
use lambda_support::health::{self, HealthCheck, HealthReport};
use lambda_support::metrics::Emf;
use lambda_support::startup::{ColdStart, Deferred};
use serde::Deserialize;
use serde_json::Value;
use slack::{Home, SigningSecret};
use std::sync::Arc;

pub const FUNCTION_NAME: &str = "ingress";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Slack's Web API, where `SLACK_API_BASE_URL` does not say otherwise.
pub const SLACK_API_BASE_URL: &str = "https://slack.com/api";

/// The runtime contract's variables this function reads.
#[derive(Debug, Clone)]
pub struct Config {
    /// `SLACK_SIGNING_SECRET`, or the Secrets Manager secret
    /// `SLACK_SIGNING_SECRET_ID` names.
    pub signing_secret: SigningSecret,
    pub turns_table: String,
    pub work_queue_url: String,
    /// `ALERTMANAGER_TOKEN` (or `ALERTMANAGER_TOKEN_ID`): the bearer token
    /// Alertmanager sends; unset: no `/alerts/alertmanager` route.
    pub alertmanager_token: Option<WebhookSecret>,
    /// `PAGERDUTY_WEBHOOK_SECRET` (or `PAGERDUTY_WEBHOOK_SECRET_ID`): the
    /// webhook subscription's signing secret; unset: no `/alerts/pagerduty`
    /// route.
    pub pagerduty_secret: Option<WebhookSecret>,
    /// `SLACK_ENTERPRISE_ID`: the Enterprise Grid organization of an
    /// org-wide install; unset, one workspace. The ingress does not ask
    /// `auth.test`, so an org-wide install must say it here.
    pub home: Home,
    /// `SLACK_BOT_TOKEN` (or `SLACK_BOT_TOKEN_ID`): only to open the modal
    /// of "Ask the assistant about this…" (`views.open`), read when the
    /// first one opens, never at start-up. Unset: that shortcut
    /// investigates at once, without a modal.
    pub bot_token: Option<env::SecretVar>,
    /// `SLACK_API_BASE_URL`: the Web API (`https://slack.com/api`).
    pub slack_api_base_url: String,
}

impl Config {
    /// The environment's configuration. The secrets given as Secrets
    /// Manager ids (`*_ID`, as the template deploys them) are read here,
    /// once, all at once; a secret that cannot be read stops the start.
    pub async fn from_env() -> Result<Self, ConfigError> {
        let signing_secret = env::required_secret("SLACK_SIGNING_SECRET", "SLACK_SIGNING_SECRET_ID")?;
        let alertmanager_token = env::secret("ALERTMANAGER_TOKEN", "ALERTMANAGER_TOKEN_ID")?;
        let pagerduty_secret = env::secret("PAGERDUTY_WEBHOOK_SECRET", "PAGERDUTY_WEBHOOK_SECRET_ID")?;
        let (turns_table, work_queue_url) = (required("TURNS_TABLE")?, required("WORK_QUEUE_URL")?);
        let home = home(env::optional("SLACK_ENTERPRISE_ID"))?;
        let bot_token = env::secret("SLACK_BOT_TOKEN", "SLACK_BOT_TOKEN_ID")?;
        let slack_api_base_url = env::optional("SLACK_API_BASE_URL").unwrap_or_else(|| SLACK_API_BASE_URL.to_owned());
        let [signing_secret, alertmanager_token, pagerduty_secret] = env::read_secrets(
            [Some(signing_secret), alertmanager_token, pagerduty_secret],
            adapters_secrets::SecretsManager::at_start_up,
        )
        .await?;
        let signing_secret = signing_secret.unwrap_or_default();
        let signing_secret = SigningSecret::new(signing_secret)
            .map_err(|err| ConfigError::Invalid { name: "SLACK_SIGNING_SECRET", reason: err.to_string() })?;
        Ok(Self {
            signing_secret,
            turns_table,
            work_queue_url,
            alertmanager_token: alertmanager_token.and_then(WebhookSecret::new),
            pagerduty_secret: pagerduty_secret.and_then(WebhookSecret::new),
            home,
            bot_token,
            slack_api_base_url,
        })
    }
}

/// `SLACK_ENTERPRISE_ID`'s deployment: an org-wide install in that
/// organization, or (unset) one workspace. Anything but an organization id
/// (`E…`) stops the start.
fn home(value: Option<String>) -> Result<Home, ConfigError> {
    match value {
        None => Ok(Home::Workspace),
        Some(org) if slack::EnterpriseId::is_well_formed(&org) => Ok(Home::Organization(slack::EnterpriseId::new(org))),
        Some(org) => Err(ConfigError::Invalid {
            name: "SLACK_ENTERPRISE_ID",
            reason: format!("{org:?} is not an Enterprise Grid organization id (E…)"),
        }),
    }
}

/// The AWS side of the ingress: its two clients and the ports on them.
pub struct Aws {
    dynamodb: aws_sdk_dynamodb::Client,
    sqs: aws_sdk_sqs::Client,
    claims: DynamoClaims,
    queue: SqsQueue,
    contexts: DynamoContexts,
    /// Sign-in states, taken by the OAuth callback.
    records: Arc<DynamoRecords>,
}

impl Aws {
    pub fn new(config: &Config, aws: &aws_config::SdkConfig) -> Self {
        let dynamodb = aws_sdk_dynamodb::Client::new(aws);
        let sqs = aws_sdk_sqs::Client::new(aws);
        let claims = DynamoClaims::new(dynamodb.clone(), &config.turns_table);
        let queue = SqsQueue::new(sqs.clone(), &config.work_queue_url);
        let contexts = DynamoContexts::new(dynamodb.clone(), &config.turns_table);
        let records = Arc::new(DynamoRecords::new(dynamodb.clone(), &config.turns_table));
        Self { dynamodb, sqs, claims, queue, contexts, records }
    }
}

/// The claims and the work queue, once the clients are built: what the
/// ingress logic holds, so that a request which needs no AWS call never
/// waits for them.
#[derive(Clone)]
struct DeferredAws(Arc<Deferred<Aws>>);

#[async_trait]
impl EventClaims for DeferredAws {
    async fn claim(&self, claim: &EventClaim, now_unix: i64) -> Result<ClaimOutcome, PortError> {
        self.0.get().await.claims.claim(claim, now_unix).await
    }
}

#[async_trait]
impl WorkQueue for DeferredAws {
    async fn enqueue(&self, message: &WorkMessage) -> Result<(), PortError> {
        self.0.get().await.queue.enqueue(message).await
    }
}

/// The turns table's versioned records, once the clients are built: the
/// OAuth callback's sign-in states.
#[async_trait]
impl VersionedRecords for DeferredAws {
    async fn get(&self, key: &RecordKey) -> Result<Option<StoredRecord>, PortError> {
        self.0.get().await.records.get(key).await
    }

    async fn put(&self, key: &RecordKey, write: &RecordWrite) -> Result<Put, PortError> {
        self.0.get().await.records.put(key, write).await
    }

    async fn put_part(&self, partition: &str, sort_key: &str, state: String, expires_at: i64) -> Result<(), PortError> {
        self.0.get().await.records.put_part(partition, sort_key, state, expires_at).await
    }

    async fn delete_part(&self, partition: &str, sort_key: &str) -> Result<(), PortError> {
        self.0.get().await.records.delete_part(partition, sort_key).await
    }

    async fn parts(&self, partition: &str, prefix: &str) -> Result<Vec<(String, String)>, PortError> {
        self.0.get().await.records.parts(partition, prefix).await
    }
}

#[async_trait]
impl UserContexts for DeferredAws {
    async fn remember(
        &self,
        team: &slack::TeamId,
        user: &slack::UserId,
        context: &UserContext,
    ) -> Result<(), PortError> {
        self.0.get().await.contexts.remember(team, user, context).await
    }

    async fn recall(
        &self,
        team: &slack::TeamId,
        user: &slack::UserId,
        now_unix: i64,
    ) -> Result<Option<UserContext>, PortError> {
        self.0.get().await.contexts.recall(team, user, now_unix).await
    }
}

/// Opens shortcuts' modals (`views.open`) with the bot token, read from
/// its secret when the first modal opens: the ingress's start reads no
/// more than it did, and a deployment where nobody uses the shortcut never
/// reads it. One form POST on the reqwest the ingress already links (for
/// Secrets Manager), rather than the whole Slack adapter, which would
/// cost the ingress a megabyte and its start-up.
struct SlackViews {
    token: env::SecretVar,
    base_url: String,
    http: reqwest::Client,
    bearer: tokio::sync::OnceCell<String>,
}

impl SlackViews {
    fn new(token: env::SecretVar, base_url: &str) -> Self {
        let http = https::client_builder()
            .connect_timeout(std::time::Duration::from_secs(1))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a client with rustls and a connect timeout builds");
        let base_url = base_url.trim_end_matches('/').to_owned();
        Self { token, base_url, http, bearer: tokio::sync::OnceCell::new() }
    }

    async fn bearer(&self) -> Result<&str, PortError> {
        let token = self
            .bearer
            .get_or_try_init(|| async {
                let [token] =
                    env::read_secrets([Some(self.token.clone())], adapters_secrets::SecretsManager::at_start_up)
                        .await
                        .map_err(|err| PortError::new("bot token", err.to_string()))?;
                Ok::<_, PortError>(token.unwrap_or_default())
            })
            .await?;
        Ok(token.as_str())
    }
}

#[async_trait]
impl ingress_logic::shortcuts::ViewOpener for SlackViews {
    /// Once, never retried: Slack honours a trigger for 3 s and once.
    async fn open(&self, trigger_id: &str, view: &Value) -> Result<(), PortError> {
        let failed = |detail: String| PortError::new("Slack views.open", detail);
        let view = view.to_string();
        let response = self
            .http
            .post(format!("{}/views.open", self.base_url))
            .bearer_auth(self.bearer().await?)
            .timeout(std::time::Duration::from_secs(2))
            .form(&[("trigger_id", trigger_id), ("view", view.as_str())])
            .send()
            .await
            .map_err(|err| failed(err.to_string()))?;
        let status = response.status();
        let answer: Value = response.json().await.map_err(|err| failed(format!("HTTP {status}: {err}")))?;
        if !status.is_success() || answer["ok"] != Value::Bool(true) {
            let error = answer["error"].as_str().unwrap_or("no error named");
            return Err(failed(format!("HTTP {status}: {error}")));
        }
        Ok(())
    }
}

/// The events the ingress takes.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum IngressEvent {
    HealthCheck(HealthCheck),
    /// An HTTP request, payload 2.0 (the function URL, or an HTTP API):
    /// from Slack, an alert webhook, or a person's browser signing in.
    Http(Box<ApiGatewayV2httpRequest>),
}

impl Events for IngressEvent {
    const EXPECTED: &'static str = "an HTTP request (payload 2.0) or the scheduled health check";
}

/// The ingress's cold start (`lambda_support::startup` says what runs on
/// which thread): from [`IngressStart::begin`], the AWS configuration is
/// loaded and the clients built on a helper thread; the ingress is
/// assembled at once on them, so a request that needs no AWS call (Slack's
/// `url_verification`, a bad signature, an event that starts nothing)
/// never waits for them.
pub struct IngressStart {
    config: Config,
    aws: DeferredAws,
    clock: Arc<dyn Clock>,
}

impl IngressStart {
    /// Starts the helper thread.
    pub fn begin(config: Config, clock: Arc<dyn Clock>) -> Self {
        let for_clients = config.clone();
        let aws = Deferred::spawn(move || async move {
            let sdk = adapters_aws::config::load(adapters_aws::config::ack_path_timeouts()).await;
            Aws::new(&for_clients, &sdk)
        });
        Self { config, aws: DeferredAws(Arc::new(aws)), clock }
    }
}

impl ColdStart for IngressStart {
    type Function = Ingress;
    type Event = IngressEvent;

    async fn assemble(&self) -> Result<Ingress, lambda_runtime::Error> {
        Ok(Ingress::assemble(self.config.clone(), self.aws.clone(), self.clock.clone()))
    }
}

pub struct Ingress {
    intake: Intake,
    /// `POST /alerts/alertmanager` and `/alerts/pagerduty`.
    alerts: AlertWebhooks,
    /// `GET /oauth/start` and `/oauth/callback/{provider}`: a person's browser signing in.
    sign_in: SignInPages,
    aws: DeferredAws,
    config: Config,
}

impl Ingress {
    /// The function on clients built already (tests bring the emulator's).
    pub fn new(config: Config, aws: &aws_config::SdkConfig, clock: Arc<dyn Clock>) -> Self {
        let clients = Aws::new(&config, aws);
        Self::assemble(config, DeferredAws(Arc::new(Deferred::ready(clients))), clock)
    }

    /// The function's one assembly: the ingress logic on DynamoDB claims and
    /// the SQS work queue (the local runner puts the same logic on its own
    /// ports).
    fn assemble(config: Config, aws: DeferredAws, clock: Arc<dyn Clock>) -> Self {
        let intake = Intake::new(
            config.signing_secret.clone(),
            Arc::new(aws.clone()),
            Arc::new(aws.clone()),
            Arc::new(aws.clone()),
            clock.clone(),
        )
        .with_every_question(EveryQuestionChannels::new(Arc::new(aws.clone()), clock.clone()))
        .with_forms(assistant_core::elicitation::Forms::new(Arc::new(aws.clone())))
        .with_home(config.home.clone());
        let intake = match &config.bot_token {
            Some(token) => intake.with_views(Arc::new(SlackViews::new(token.clone(), &config.slack_api_base_url))),
            None => intake,
        };
        let sign_in = SignInPages::new(
            ConnectStates::new(Arc::new(aws.clone())),
            Arc::new(aws.clone()),
            clock.clone(),
            BrowserKey::new(&config.signing_secret),
        );
        let alerts = AlertWebhooks::new(
            config.alertmanager_token.clone(),
            config.pagerduty_secret.clone(),
            Arc::new(aws.clone()),
            clock,
        );
        Self { intake, alerts, sign_in, aws, config }
    }

    /// One invocation given as JSON (tests, the local HTTP server).
    pub async fn handle(&self, event: Value) -> Result<Value, UnsupportedEvent> {
        Ok(self.handle_event(events::read(event)?).await)
    }

    /// One invocation: a health check, an HTTP request from Slack, or a
    /// person's browser back from a provider's sign-in.
    pub async fn handle_event(&self, event: IngressEvent) -> Value {
        let request = match event {
            IngressEvent::HealthCheck(_) => {
                return serde_json::to_value(self.health().await.published()).expect("health report serializes");
            }
            IngressEvent::Http(request) => request,
        };
        if let Some(path) = request.raw_path.as_deref().filter(|path| SignInPages::serves(path))
            && request.request_context.http.method == http::Method::GET
        {
            // A function URL hands cookies over on their own; a proxy may leave the header.
            let header = request.headers.get_all(header::COOKIE).iter().filter_map(|value| value.to_str().ok());
            let cookies: Vec<String> =
                request.cookies.iter().flatten().cloned().chain(header.map(String::from)).collect();
            let browser = BrowserRequest { path, query: request.raw_query_string.as_deref(), cookies: &cookies };
            let answer = self.sign_in.handle(browser).await;
            return serde_json::to_value(browser_response(answer)).expect("HTTP response serializes");
        }
        if let Some(path) = request.raw_path.as_deref().filter(|path| AlertWebhooks::serves(path)) {
            let alert = AlertRequest {
                method: &request.request_context.http.method,
                path,
                headers: &request.headers,
                body: request.body.as_deref(),
                is_base64_encoded: request.is_base64_encoded,
            };
            let reply = self.alerts.handle_http(alert).await;
            request_metrics(reply.counted).emit();
            return serde_json::to_value(http_response(reply)).expect("HTTP response serializes");
        }
        let reply = self
            .intake
            .handle(Request {
                headers: &request.headers,
                body: request.body.as_deref(),
                is_base64_encoded: request.is_base64_encoded,
            })
            .await;
        request_metrics(reply.counted).emit();
        serde_json::to_value(http_response(reply)).expect("HTTP response serializes")
    }

    /// Checks the table and the queue this function writes to, and nothing
    /// else.
    pub async fn health(&self) -> HealthReport {
        let aws = self.aws.0.get().await;
        let (table, queue) = tokio::join!(
            health::check("dynamodb", dynamodb::check_table(&aws.dynamodb, &self.config.turns_table)),
            health::check("sqs", sqs::check_queue(&aws.sqs, &self.config.work_queue_url)),
        );
        HealthReport::new(FUNCTION_NAME, VERSION, vec![table, queue])
    }
}

/// One EMF record per request: `Accepted`, `Duplicates`, `Rejected`,
/// `Foreign`.
fn request_metrics(counted: Counted) -> Emf {
    Emf::new(FUNCTION_NAME, &[])
        .count("Accepted", u64::from(counted == Counted::Accepted))
        .count("Duplicates", u64::from(counted == Counted::Duplicate))
        .count("Rejected", u64::from(counted == Counted::Rejected))
        .count("Foreign", u64::from(counted == Counted::Foreign))
}

/// A sign-in page as the function URL answers it: a cookie in `cookies`
/// (payload 2.0), a redirect in `Location`.
fn browser_response(answer: Answer) -> ApiGatewayV2httpResponse {
    let mut headers = HeaderMap::new();
    for (name, value) in Page::headers() {
        headers.insert(name, HeaderValue::from_static(value));
    }
    let mut status = answer.page.status;
    match answer.location.as_deref().map(HeaderValue::from_str) {
        Some(Ok(location)) => {
            headers.insert(header::LOCATION, location);
        }
        // A provider's authorization URL no header can carry: a redirect
        // without its address would strand the browser.
        Some(Err(_)) => {
            tracing::error!("a sign-in's authorization URL is not a valid Location: no redirect");
            status = 500;
        }
        None => {}
    }
    let mut response = ApiGatewayV2httpResponse::default();
    response.status_code = i64::from(status);
    response.headers = headers;
    response.cookies = answer.set_cookie.into_iter().collect();
    response.body = Some(Body::Text(answer.page.html()));
    response
}

fn http_response(reply: Reply) -> ApiGatewayV2httpResponse {
    let mut headers = HeaderMap::new();
    if reply.json.is_some() {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    if reply.no_retry {
        headers.insert("x-slack-no-retry", HeaderValue::from_static("1"));
    }
    let mut response = ApiGatewayV2httpResponse::default();
    response.status_code = i64::from(reply.status);
    response.headers = headers;
    response.body = reply.json.map(Body::Text);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(file: &str) -> Result<IngressEvent, UnsupportedEvent> {
        events::read(serde_json::from_str(file).expect("an event file is JSON"))
    }

    #[test]
    fn each_event_the_ingress_takes_is_read_as_its_kind_and_any_other_is_unsupported() {
        let mention = read(include_str!("../../../tests/events/ingress-app-mention.json"));
        assert!(matches!(mention, Ok(IngressEvent::Http(request)) if request.body.is_some()));
        let health = read(include_str!("../../../tests/events/scheduled-health-check.json"));
        assert!(matches!(health, Ok(IngressEvent::HealthCheck(_))));
        let batch = read(include_str!("../../../tests/events/worker-sqs-start-turn.json")).unwrap_err();
        assert_eq!(batch.expected, IngressEvent::EXPECTED);
        assert!(
            batch.to_string().starts_with("event is not an HTTP request (payload 2.0) or the scheduled"),
            "{batch}"
        );
    }

    #[test]
    fn an_org_wide_install_names_its_organization_and_anything_else_stops_the_start() {
        assert_eq!(home(None), Ok(Home::Workspace));
        assert_eq!(home(Some("E0GRIDORG1".into())), Ok(Home::Organization(slack::EnterpriseId::new("E0GRIDORG1"))));
        for wrong in ["T061EG9R6", "e0gridorg1", "E0 ORG", "E"] {
            let err = home(Some(wrong.into())).unwrap_err();
            assert!(err.to_string().contains("SLACK_ENTERPRISE_ID"), "{err}");
        }
    }
}
