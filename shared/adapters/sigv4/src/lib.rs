//! AWS requests signed by hand on the process's HTTP client: one
//! [`Signer`] for the process, and [`AwsApi`], a caller of AWS's JSON
//! protocols (`awsJson1_0`, `awsJson1_1`, REST-JSON) built on it.
//!
//! The worker must stay small and start fast: each SDK client adds its own
//! code and start-up for a handful of calls. The SDK's own signer
//! (`aws-sigv4`) and credential chain (the role's credentials, refreshed by
//! `aws-config`) are already linked for DynamoDB, SQS and Bedrock; a JSON
//! body and one header are all the rest of these calls need. S3 signs by
//! rules of its own ([`Signer::sign_s3`]), for `adapters-s3`.
//!
//! The same signer signs the team's AWS-signed tools (`"auth": "aws_iam"`:
//! API Gateway with IAM auth, Lambda function URLs, AgentCore Gateway) as
//! the worker's role, and, through [`Signer::assuming`], a role in a second
//! account.
//!
//! Retries: throttling is retried (nothing was applied); a 5xx, a reset or
//! a timeout is retried only for calls that are safe to repeat
//! ([`Repeat::Safe`]). Answers are read up to a byte limit, never whole
//! whatever their size.

use assistant_core::ports::{AwsScope, PortError, RequestSigner, UnsignedRequest};
use assistant_core::retry::{Backoff, Failed, Verdict, retry};
use aws_config::SdkConfig;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings, UriPathNormalizationMode,
    sign,
};
use aws_sigv4::sign::v4;
use std::time::{Duration, SystemTime};
use tracing::warn;

/// Signs requests as the process's AWS identity (or a role it assumed).
#[derive(Clone)]
pub struct Signer {
    credentials: Option<SharedCredentialsProvider>,
    region: Option<String>,
    /// The configuration's endpoint override (`AWS_ENDPOINT_URL`, or set
    /// in code by the local runner), for every service without its own.
    endpoint_url: Option<String>,
    /// The configuration's app name (`AWS_SDK_UA_APP_ID`), sent as the
    /// SDK's own clients send it (`app/…` in `x-amz-user-agent`).
    app_name: Option<String>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("region", &self.region).finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("no AWS region is configured")]
    NoRegion,
    #[error("no AWS credentials are configured")]
    NoCredentials,
    #[error("no AWS credentials: {0}")]
    Credentials(String),
    #[error("cannot sign {url}: {reason}")]
    Unsignable { url: String, reason: String },
}

impl Signer {
    /// The credentials and region of the process's AWS configuration.
    pub fn new(aws: &SdkConfig) -> Self {
        Self {
            credentials: aws.credentials_provider(),
            region: aws.region().map(|region| region.to_string()),
            endpoint_url: aws.endpoint_url().map(str::to_owned),
            app_name: aws.app_name().map(ToString::to_string),
        }
    }

    /// A signer with fixed credentials (tests, tools).
    pub fn with_credentials(credentials: impl ProvideCredentials + 'static, region: &str) -> Self {
        Self {
            credentials: Some(SharedCredentialsProvider::new(credentials)),
            region: Some(region.to_owned()),
            endpoint_url: None,
            app_name: None,
        }
    }

    /// Signs as `role_arn`, assumed with this process's credentials
    /// (STS `AssumeRole`, refreshed before expiry): another account's
    /// read-only role. The role's trust policy must name the worker's role.
    pub async fn assuming(aws: &SdkConfig, role_arn: &str, session_name: &str) -> Self {
        let provider = aws_config::sts::AssumeRoleProvider::builder(role_arn)
            .session_name(session_name)
            .configure(aws)
            .build()
            .await;
        Self { credentials: Some(SharedCredentialsProvider::new(provider)), ..Self::new(aws) }
    }

    /// The same identity, calling services at `url` (a test's fake).
    pub fn with_endpoint_url(mut self, url: &str) -> Self {
        self.endpoint_url = Some(url.to_owned());
        self
    }

    /// The process's region, where a call names none.
    pub fn region(&self) -> Option<&str> {
        self.region.as_deref()
    }

    /// The configuration's endpoint override, for every service without
    /// its own variable.
    pub fn endpoint_url(&self) -> Option<&str> {
        self.endpoint_url.as_deref()
    }

    /// Adds SigV4 headers (`authorization`, `x-amz-date`, and
    /// `x-amz-security-token` for temporary credentials) to `request`, for
    /// `service` in `region` (the process's when `None`). Every header the
    /// request already has is signed; a body that is not in memory is
    /// signed as `UNSIGNED-PAYLOAD`.
    pub async fn sign(
        &self,
        request: &mut reqwest::Request,
        service: &str,
        region: Option<&str>,
    ) -> Result<(), SignError> {
        self.sign_as(request, service, region, Convention::Standard).await
    }

    /// [`Signer::sign`] as S3 wants it ([`Convention::S3`]), in the
    /// process's region: the body's SHA-256 sent as `x-amz-content-sha256`,
    /// the path signed as sent.
    pub async fn sign_s3(&self, request: &mut reqwest::Request) -> Result<(), SignError> {
        self.sign_as(request, "s3", None, Convention::S3).await
    }

    async fn sign_as(
        &self,
        request: &mut reqwest::Request,
        service: &str,
        region: Option<&str>,
        convention: Convention,
    ) -> Result<(), SignError> {
        let url = request.url().to_string();
        let unsignable = |reason: String| SignError::Unsignable { url: url.clone(), reason };
        if let Some(app) = &self.app_name {
            let agent = reqwest::header::HeaderValue::from_str(&format!("app/{app}"))
                .map_err(|err| unsignable(err.to_string()))?;
            request.headers_mut().entry("x-amz-user-agent").or_insert(agent);
        }
        let headers: Vec<(String, String)> = request
            .headers()
            .iter()
            .map(|(name, value)| Ok((name.as_str().to_owned(), value.to_str()?.to_owned())))
            .collect::<Result<_, reqwest::header::ToStrError>>()
            .map_err(|err| unsignable(err.to_string()))?;
        let body = match request.body().and_then(reqwest::Body::as_bytes) {
            Some(bytes) => Some(bytes),
            None if request.body().is_none() => Some(&[][..]),
            None => None,
        };
        let request_parts = Unsigned { method: request.method().as_str(), url: &url, headers: &headers, body };
        let signature = self.headers_at(request_parts, service, region, convention, SystemTime::now()).await?;
        for (name, value) in signature {
            let value = reqwest::header::HeaderValue::from_str(&value).map_err(|err| unsignable(err.to_string()))?;
            let name =
                reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|err| unsignable(err.to_string()))?;
            request.headers_mut().insert(name, value);
        }
        Ok(())
    }

    /// The signature headers for a request as it will be sent: `headers`
    /// are signed, `body` hashed (`None`: `UNSIGNED-PAYLOAD`).
    pub async fn headers_for(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Option<&[u8]>,
        service: &str,
        region: Option<&str>,
    ) -> Result<Vec<(String, String)>, SignError> {
        let request = Unsigned { method, url, headers, body };
        self.headers_at(request, service, region, Convention::Standard, SystemTime::now()).await
    }

    /// The signature headers for `request` signed at `time`.
    async fn headers_at(
        &self,
        request: Unsigned<'_>,
        service: &str,
        region: Option<&str>,
        convention: Convention,
        time: SystemTime,
    ) -> Result<Vec<(String, String)>, SignError> {
        let Unsigned { method, url, headers, body } = request;
        let region = region.or(self.region.as_deref()).ok_or(SignError::NoRegion)?;
        let credentials = self
            .credentials
            .as_ref()
            .ok_or(SignError::NoCredentials)?
            .provide_credentials()
            .await
            .map_err(|err| SignError::Credentials(err.to_string()))?;
        let unsignable = |reason: String| SignError::Unsignable { url: url.to_owned(), reason };
        let body = match body {
            Some(bytes) => SignableBody::Bytes(bytes),
            None => SignableBody::UnsignedPayload,
        };
        let identity = credentials.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name(service)
            .time(time)
            .settings(convention.settings())
            .build()
            .map_err(|err| unsignable(err.to_string()))?
            .into();
        let signable = SignableRequest::new(
            method,
            url,
            headers.iter().map(|(name, value)| (name.as_str(), value.as_str())),
            body,
        )
        .map_err(|err| unsignable(err.to_string()))?;
        let (instructions, _) = sign(signable, &params).map_err(|err| unsignable(err.to_string()))?.into_parts();
        Ok(instructions.headers().map(|(name, value)| (name.to_owned(), value.to_owned())).collect())
    }
}

/// A request as it will be sent, before its signature.
#[derive(Clone, Copy)]
struct Unsigned<'a> {
    method: &'a str,
    url: &'a str,
    headers: &'a [(String, String)],
    /// `None`: a body not in memory, signed as `UNSIGNED-PAYLOAD`.
    body: Option<&'a [u8]>,
}

/// How a service checks signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Convention {
    /// Every service but S3: the path encoded a second time and normalized.
    Standard,
    /// S3 ("Signature Calculations for the Authorization Header", Amazon
    /// S3 API Reference): the path as sent, never normalized (a key may
    /// hold `//` or `./`), and every request carries its payload's hash in
    /// `x-amz-content-sha256`, which S3 checks against the body.
    S3,
}

impl Convention {
    fn settings(self) -> SigningSettings {
        let mut settings = SigningSettings::default();
        if self == Convention::S3 {
            settings.percent_encoding_mode = PercentEncodingMode::Single;
            settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
            settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        }
        settings
    }
}

#[async_trait::async_trait]
impl RequestSigner for Signer {
    async fn sign(&self, request: UnsignedRequest<'_>, scope: &AwsScope) -> Result<Vec<(String, String)>, PortError> {
        self.headers_for(
            request.method,
            request.url,
            request.headers,
            Some(request.body),
            &scope.service,
            scope.region.as_deref(),
        )
        .await
        .map_err(|err| PortError::new("signing a request", err.to_string()).with_source(err))
    }
}

/// One AWS service as the SDK's conventions name it.
#[derive(Debug, Clone, Copy)]
pub struct Service {
    /// The SigV4 signing name (`monitoring`, `logs`, `bedrock`).
    pub signing_name: &'static str,
    /// The host's first label (`monitoring`, `logs`, `bedrock-agent-runtime`).
    pub endpoint_prefix: &'static str,
    /// The service's endpoint variable (`AWS_ENDPOINT_URL_CLOUDWATCH_LOGS`);
    /// `AWS_ENDPOINT_URL` applies when it is unset.
    pub endpoint_variable: &'static str,
    /// `awsJson` protocols' target prefix (`Logs_20140328`) and version
    /// (`1.1`); `None`: REST-JSON.
    pub json_target: Option<(&'static str, &'static str)>,
}

/// Whether a call may be sent again when its outcome is unknown (a 5xx, a
/// reset, a timeout after the request left).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// A read, or a write whose repetition changes nothing.
    Safe,
    /// Retried only when AWS said it did nothing (throttling).
    OnlyIfRefused,
}

/// Why a call failed; `kind` is AWS's error type without its namespace.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{operation}: {}{kind}{}", status.map(|s| format!("HTTP {s} ")).unwrap_or_default(), if message.is_empty() { String::new() } else { format!(": {message}") })]
pub struct AwsError {
    pub operation: String,
    pub status: Option<u16>,
    pub kind: String,
    pub message: String,
}

/// Attempts of one call at most.
pub const ATTEMPTS: u32 = 3;
/// Tries of one call: [`ATTEMPTS`], waiting 200 ms, then 400 ms.
pub const BACKOFF: Backoff = Backoff::new(ATTEMPTS, Duration::from_millis(200));
/// Each attempt's time limit.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of one answer read at most unless a call says otherwise.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// A service's JSON API, signed, on the process's HTTP client.
#[derive(Debug, Clone)]
pub struct AwsApi {
    http: reqwest::Client,
    signer: Signer,
    service: Service,
    endpoint: String,
    region: Option<String>,
    max_answer_bytes: usize,
}

impl AwsApi {
    /// `service` in `region` (the signer's when `None`), at the endpoint the
    /// SDK's conventions name: the service's variable, the configuration's
    /// endpoint override, `AWS_ENDPOINT_URL`, else AWS's public endpoint.
    pub fn new(http: reqwest::Client, signer: Signer, service: Service, region: Option<&str>) -> Self {
        Self::with_endpoint(http, signer, service, region, &|name| std::env::var(name).ok())
    }

    /// As [`AwsApi::new`], with the environment given (tests).
    pub fn with_endpoint(
        http: reqwest::Client,
        signer: Signer,
        service: Service,
        region: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Self {
        let region = region.map(str::to_owned).or_else(|| signer.region.clone());
        let endpoint = env(service.endpoint_variable)
            .filter(|url| !url.is_empty())
            .or_else(|| signer.endpoint_url.clone())
            .or_else(|| env("AWS_ENDPOINT_URL").filter(|url| !url.is_empty()))
            .unwrap_or_else(|| {
                format!(
                    "https://{}.{}.amazonaws.com",
                    service.endpoint_prefix,
                    region.as_deref().unwrap_or("us-east-1")
                )
            });
        Self {
            http,
            signer,
            service,
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            region,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        }
    }

    /// The largest answer read (default [`DEFAULT_MAX_ANSWER_BYTES`]); a
    /// larger one is an error, never read whole.
    pub fn max_answer_bytes(mut self, bytes: usize) -> Self {
        self.max_answer_bytes = bytes;
        self
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// An `awsJson` operation (`DescribeAlarms`): `POST /` with its target.
    pub async fn call(
        &self,
        operation: &str,
        input: &serde_json::Value,
        repeat: Repeat,
    ) -> Result<serde_json::Value, AwsError> {
        let Some((prefix, version)) = self.service.json_target else {
            return Err(self.local_error(operation, "not an awsJson service"));
        };
        let target = format!("{prefix}.{operation}");
        let content_type = format!("application/x-amz-json-{version}");
        let headers = [("content-type", content_type.as_str()), ("x-amz-target", target.as_str())];
        self.send(operation, "/", &headers, input, repeat).await
    }

    /// A REST-JSON operation: `POST {path}` (the path's variables already
    /// percent-encoded by the caller).
    pub async fn post(
        &self,
        operation: &str,
        path: &str,
        input: &serde_json::Value,
        repeat: Repeat,
    ) -> Result<serde_json::Value, AwsError> {
        self.send(operation, path, &[("content-type", "application/json")], input, repeat).await
    }

    async fn send(
        &self,
        operation: &str,
        path: &str,
        headers: &[(&str, &str)],
        input: &serde_json::Value,
        repeat: Repeat,
    ) -> Result<serde_json::Value, AwsError> {
        let body = serde_json::to_vec(input).expect("a JSON value serializes");
        let url = format!("{}{path}", self.endpoint);
        let again = |failed: Failed<'_, Failure>| {
            let again = match failed.error {
                Failure::Refused(_) => true,
                Failure::Unknown(_) => repeat == Repeat::Safe,
                Failure::Final(_) => false,
            };
            if !again {
                return Verdict::Stop;
            }
            warn!(operation, attempt = failed.attempt, error = %failed.error.error(), "AWS call failed: retrying");
            Verdict::Retry
        };
        retry(&BACKOFF, |_| self.attempt(operation, &url, headers, &body), again).await.map_err(Failure::into_error)
    }

    async fn attempt(
        &self,
        operation: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<serde_json::Value, Failure> {
        let mut request = self.http.post(url).timeout(ATTEMPT_TIMEOUT).body(body.to_vec());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let mut request =
            request.build().map_err(|err| Failure::Final(self.local_error(operation, &err.to_string())))?;
        self.signer
            .sign(&mut request, self.service.signing_name, self.region.as_deref())
            .await
            .map_err(|err| Failure::Final(self.local_error(operation, &err.to_string())))?;
        let transport = |err: &dyn std::fmt::Display| AwsError {
            operation: operation.to_owned(),
            status: None,
            kind: "unreachable".into(),
            message: err.to_string(),
        };
        let mut response = self.http.execute(request).await.map_err(|err| Failure::Unknown(transport(&err)))?;
        let status = response.status();
        let error_header = response.headers().get("x-amzn-errortype").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let read = read_at_most(&mut response, self.max_answer_bytes as u64).await;
        let Some(bytes) = read.map_err(|err| Failure::Unknown(transport(&err)))? else {
            return Err(Failure::Final(AwsError {
                operation: operation.to_owned(),
                status: Some(status.as_u16()),
                kind: "AnswerTooLarge".into(),
                message: format!("the answer is larger than {} bytes and was not read", self.max_answer_bytes),
            }));
        };
        if status.is_success() {
            if bytes.is_empty() {
                return Ok(serde_json::Value::Object(Default::default()));
            }
            return serde_json::from_slice(&bytes).map_err(|err| {
                Failure::Final(AwsError {
                    operation: operation.to_owned(),
                    status: Some(status.as_u16()),
                    kind: "UnreadableAnswer".into(),
                    message: err.to_string(),
                })
            });
        }
        let (kind, message) = error_of(error_header.as_deref(), &bytes);
        let error = AwsError { operation: operation.to_owned(), status: Some(status.as_u16()), kind, message };
        Err(if is_throttling(&error.kind) || status.as_u16() == 429 {
            Failure::Refused(error)
        } else if status.is_server_error() {
            Failure::Unknown(error)
        } else {
            Failure::Final(error)
        })
    }

    fn local_error(&self, operation: &str, message: &str) -> AwsError {
        AwsError {
            operation: operation.to_owned(),
            status: None,
            kind: "ClientError".into(),
            message: message.to_owned(),
        }
    }
}

/// An answer's body of at most `max` bytes; `None` when it is longer (read
/// no further).
pub async fn read_at_most(response: &mut reqwest::Response, max: u64) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if (bytes.len() + chunk.len()) as u64 > max {
            return Ok(None);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}

/// Why an attempt failed, and what another attempt risks.
enum Failure {
    /// AWS did nothing (throttled): always safe to retry.
    Refused(AwsError),
    /// Maybe applied (5xx, reset, timeout).
    Unknown(AwsError),
    Final(AwsError),
}

impl Failure {
    fn error(&self) -> &AwsError {
        match self {
            Failure::Refused(error) | Failure::Unknown(error) | Failure::Final(error) => error,
        }
    }

    fn into_error(self) -> AwsError {
        match self {
            Failure::Refused(error) | Failure::Unknown(error) | Failure::Final(error) => error,
        }
    }
}

fn is_throttling(kind: &str) -> bool {
    matches!(
        kind,
        "ThrottlingException"
            | "Throttling"
            | "TooManyRequestsException"
            | "RequestLimitExceeded"
            | "LimitExceededException"
    )
}

/// AWS's error type (from `x-amzn-ErrorType` or the body's `__type`/`code`),
/// without a namespace (`…#ResourceNotFoundException`) or a trailing `:url`,
/// and its message, cut short.
pub fn error_of(header: Option<&str>, body: &[u8]) -> (String, String) {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let field = |names: &[&str]| {
        parsed.as_ref().and_then(|value| names.iter().find_map(|name| value.get(*name).and_then(|v| v.as_str())))
    };
    let raw = header.or_else(|| field(&["__type", "code"])).unwrap_or("UnknownError");
    let raw = raw.split(':').next().unwrap_or_default();
    let kind = raw.rsplit('#').next().unwrap_or_default().to_owned();
    let message: String = field(&["message", "Message"]).unwrap_or_default().chars().take(300).collect();
    (kind, message)
}

#[cfg(test)]
mod tests;
