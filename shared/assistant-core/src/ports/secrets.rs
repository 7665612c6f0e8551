//! Secrets the assistant configuration names (Secrets Manager in AWS;
//! `shared/adapters/secrets`).

use super::PortError;
use async_trait::async_trait;

/// Secrets the assistant configuration names (`${secret:NAME}`), read once
/// at start-up (Secrets Manager in AWS). The store decides where `NAME`
/// lives (the deployment's prefix); the configuration never names more.
#[async_trait]
pub trait SecretStore: Send + Sync {
    /// The secret's text, `None` when there is no secret of that name.
    async fn secret(&self, name: &str) -> Result<Option<String>, PortError>;
}

/// A deployment without a secret store: every `${secret:…}` is refused.
pub struct NoSecrets;

#[async_trait]
impl SecretStore for NoSecrets {
    async fn secret(&self, name: &str) -> Result<Option<String>, PortError> {
        Err(PortError::new("reading a secret", format!("no secret store is configured to read {name}")))
    }
}
