//! Secrets Manager behind the core's [`SecretStore`] port: the secrets the
//! assistant configuration names (`${secret:NAME}`), read once when the
//! worker starts, and the runtime contract's own (`SLACK_SIGNING_SECRET_ID`,
//! `SLACK_BOT_TOKEN_ID`…: a secret's name or ARN, [`SecretsManager::at_start_up`]),
//! read once when a function starts.
//!
//! One call, `GetSecretValue`, over Secrets Manager's JSON protocol,
//! signed by the process's one signer (`adapters-sigv4`) and sent on the
//! process's HTTP client. The SDK's Secrets Manager client would do the
//! same and add a fifth client's code to a worker that must stay small for
//! one call at start-up.
//!
//! `NAME` is looked up under the deployment's prefix (`SECRETS_PREFIX`,
//! which the template's IAM policy is scoped to), so a configuration can
//! name no other secret of the account. Throttling, 5xx answers and
//! transport errors are retried (a read); a secret that does not exist is
//! `None`; a trailing line break is dropped; anything else (access denied,
//! a binary secret) is an error that names the secret and Secrets Manager's
//! error type, never a value.

use adapters_sigv4::{AwsApi, Repeat, Service, Signer};
use assistant_core::ports::{PortError, SecretStore};
use async_trait::async_trait;

/// How long the start-up read waits for a connection.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The prefix when the deployment sets none (`SECRETS_PREFIX`); the
/// template's default.
pub const DEFAULT_PREFIX: &str = "slack-assistant/tools/";

pub const SECRETS_MANAGER: Service = Service {
    signing_name: "secretsmanager",
    endpoint_prefix: "secretsmanager",
    endpoint_variable: "AWS_ENDPOINT_URL_SECRETS_MANAGER",
    json_target: Some(("secretsmanager", "1.1")),
};

pub struct SecretsManager {
    api: AwsApi,
    prefix: String,
}

impl SecretsManager {
    /// Secrets under `prefix`, read as the process's AWS identity.
    pub fn new(signer: &Signer, http: reqwest::Client, prefix: &str) -> Self {
        Self { api: AwsApi::new(http, signer.clone(), SECRETS_MANAGER, None), prefix: prefix.to_owned() }
    }

    /// Secrets named in full, by name or ARN (the runtime contract's
    /// `*_ID` variables), read as the process's AWS identity on an HTTP
    /// client of their own: made at start-up only when a function is given
    /// such a variable, and dropped once its secrets are read. Both the
    /// SDK's configuration and the client trust compiled-in roots
    /// (`adapters_aws::config`, `https`): no certificate file is read on the
    /// way to a deployed function's first answer.
    pub async fn at_start_up() -> Box<dyn SecretStore> {
        let timeouts = aws_config::timeout::TimeoutConfig::builder().connect_timeout(CONNECT_TIMEOUT).build();
        let aws = adapters_aws::config::load(timeouts).await;
        let http = https::client_builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .expect("a client with rustls and a connect timeout builds");
        Box::new(Self::new(&Signer::new(&aws), http, ""))
    }
}

#[async_trait]
impl SecretStore for SecretsManager {
    async fn secret(&self, name: &str) -> Result<Option<String>, PortError> {
        let secret_id = format!("{}{name}", self.prefix);
        let failed =
            |reason: String| PortError::new("Secrets Manager GetSecretValue", format!("{secret_id}: {reason}"));
        let input = serde_json::json!({ "SecretId": secret_id });
        match self.api.call("GetSecretValue", &input, Repeat::Safe).await {
            Ok(answer) => match answer["SecretString"].as_str() {
                // A secret stored from a file (`file://token.txt`) often
                // ends in a newline no header may carry.
                Some(value) => Ok(Some(value.trim_end_matches(['\r', '\n']).to_owned())),
                None => Err(failed("it is a binary secret; only SecretString is supported".into())),
            },
            Err(err) if err.kind == "ResourceNotFoundException" => Ok(None),
            Err(err) => Err(failed(err.to_string())),
        }
    }
}

#[cfg(test)]
mod tests;
