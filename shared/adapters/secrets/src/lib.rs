//! Secrets Manager behind the core's [`SecretStore`] port: the secrets the
//! assistant configuration names (`${secret:NAME}`), read once when the
//! worker starts.
//!
//! One call, `GetSecretValue`, over Secrets Manager's JSON protocol, signed
//! with SigV4 by the SDK's own signer (`aws-sigv4`) with the credentials and
//! region of the process's AWS configuration, and sent on the process's HTTP
//! client. The SDK's Secrets Manager client would do the same and add a
//! fifth client's code to a worker that must stay under 10 MB for one call
//! at start-up.
//!
//! `NAME` is looked up under the deployment's prefix (`SECRETS_PREFIX`,
//! which the template's IAM policy is scoped to), so a configuration can
//! name no other secret of the account. Throttling, 5xx answers and
//! transport errors are retried twice; a secret that does not exist is
//! `None`; a trailing line break is dropped; anything else (access denied,
//! a binary secret) is an error that names the secret and Secrets Manager's
//! error type, never a value.

use assistant_core::ports::{PortError, SecretStore};
use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use std::time::{Duration, SystemTime};

/// The prefix when the deployment sets none (`SECRETS_PREFIX`); the
/// template's default.
pub const DEFAULT_PREFIX: &str = "slack-assistant/tools/";
/// The endpoint variable of the SDK's convention for this service.
pub const ENDPOINT_VARIABLE: &str = "AWS_ENDPOINT_URL_SECRETS_MANAGER";
const TARGET: &str = "secretsmanager.GetSecretValue";
const CONTENT_TYPE: &str = "application/x-amz-json-1.1";
const ATTEMPTS: u32 = 3;
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);

pub struct SecretsManager {
    http: reqwest::Client,
    endpoint: String,
    region: Option<String>,
    credentials: Option<SharedCredentialsProvider>,
    prefix: String,
}

impl SecretsManager {
    /// Secrets under `prefix`, with the region, credentials and endpoint
    /// overrides (`AWS_ENDPOINT_URL_SECRETS_MANAGER`, `AWS_ENDPOINT_URL`) of
    /// the process's AWS configuration.
    pub fn new(aws: &SdkConfig, http: reqwest::Client, prefix: &str) -> Self {
        let region = aws.region().map(|region| region.to_string());
        let endpoint = std::env::var(ENDPOINT_VARIABLE)
            .ok()
            .filter(|url| !url.is_empty())
            .or_else(|| aws.endpoint_url().map(str::to_owned))
            .unwrap_or_else(|| {
                format!("https://secretsmanager.{}.amazonaws.com", region.as_deref().unwrap_or("us-east-1"))
            });
        Self { http, endpoint, region, credentials: aws.credentials_provider(), prefix: prefix.to_owned() }
    }

    /// One signed `GetSecretValue`.
    async fn attempt(&self, secret_id: &str) -> Result<Option<String>, Failure> {
        let region = self.region.as_deref().ok_or_else(|| Failure::Final("no AWS region is configured".into()))?;
        let credentials = self
            .credentials
            .as_ref()
            .ok_or_else(|| Failure::Final("no AWS credentials are configured".into()))?
            .provide_credentials()
            .await
            .map_err(|err| Failure::Final(format!("no AWS credentials: {err}")))?;
        let body = serde_json::to_vec(&serde_json::json!({ "SecretId": secret_id })).expect("a string serializes");
        let headers = [("content-type", CONTENT_TYPE), ("x-amz-target", TARGET)];
        let identity = credentials.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name("secretsmanager")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|err| Failure::Final(format!("cannot sign: {err}")))?
            .into();
        let signable = SignableRequest::new("POST", &self.endpoint, headers.into_iter(), SignableBody::Bytes(&body))
            .map_err(|err| Failure::Final(format!("cannot sign for {}: {err}", self.endpoint)))?;
        let (signature, _) =
            sign(signable, &params).map_err(|err| Failure::Final(format!("cannot sign: {err}")))?.into_parts();
        let mut request = self.http.post(&self.endpoint).timeout(ATTEMPT_TIMEOUT).body(body);
        for (name, value) in headers.into_iter().chain(signature.headers()) {
            request = request.header(name, value);
        }
        let response = request.send().await.map_err(|err| Failure::Retry(format!("unreachable: {err}")))?;
        let status = response.status();
        let error_header = response.headers().get("x-amzn-errortype").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let text = response.text().await.map_err(|err| Failure::Retry(format!("answer cut off: {err}")))?;
        if status.is_success() {
            let answer: Answer =
                serde_json::from_str(&text).map_err(|err| Failure::Final(format!("unreadable answer: {err}")))?;
            return match answer.secret_string {
                // A secret stored from a file (`file://token.txt`) often
                // ends in a newline no header may carry.
                Some(value) => Ok(Some(value.trim_end_matches(['\r', '\n']).to_owned())),
                None => Err(Failure::Final("it is a binary secret; only SecretString is supported".into())),
            };
        }
        let kind = error_kind(error_header.as_deref(), &text);
        match kind.as_str() {
            "ResourceNotFoundException" => Ok(None),
            "ThrottlingException" | "InternalServiceError" | "InternalFailure" | "ServiceUnavailable" => {
                Err(Failure::Retry(format!("HTTP {status} {kind}")))
            }
            _ if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS => {
                Err(Failure::Retry(format!("HTTP {status} {kind}")))
            }
            _ => Err(Failure::Final(format!("HTTP {status} {kind}"))),
        }
    }
}

/// Why an attempt failed, and whether another may succeed.
enum Failure {
    Retry(String),
    Final(String),
}

#[derive(serde::Deserialize)]
struct Answer {
    #[serde(rename = "SecretString")]
    secret_string: Option<String>,
}

/// Secrets Manager's error type, from the `x-amzn-ErrorType` header or the
/// body's `__type`, without a namespace (`…#ResourceNotFoundException`) or
/// a trailing `:url`.
fn error_kind(header: Option<&str>, body: &str) -> String {
    let from_body = || {
        serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|value| value.get("__type").and_then(|kind| kind.as_str()).map(str::to_owned))
    };
    let raw = header.map(str::to_owned).or_else(from_body).unwrap_or_else(|| "unknown error".to_owned());
    let raw = raw.split(':').next().unwrap_or_default();
    raw.rsplit('#').next().unwrap_or_default().to_owned()
}

#[async_trait]
impl SecretStore for SecretsManager {
    async fn secret(&self, name: &str) -> Result<Option<String>, PortError> {
        let secret_id = format!("{}{name}", self.prefix);
        let mut attempt = 1;
        loop {
            match self.attempt(&secret_id).await {
                Ok(value) => return Ok(value),
                Err(Failure::Retry(_)) if attempt < ATTEMPTS => {
                    tokio::time::sleep(Duration::from_millis(200 * 2u64.pow(attempt))).await;
                    attempt += 1;
                }
                Err(Failure::Retry(reason) | Failure::Final(reason)) => {
                    return Err(PortError::new("Secrets Manager GetSecretValue", format!("{secret_id}: {reason}")));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
