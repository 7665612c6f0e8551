//! Encryption of a person's tokens at rest (KMS in AWS; `shared/adapters/kms`).

use super::PortError;
use async_trait::async_trait;

/// Encrypts a small secret (a person's tokens) bound to a context: it opens
/// only with the same context. KMS envelope encryption in AWS.
#[async_trait]
pub trait KeySealer: Send + Sync {
    async fn seal(&self, plaintext: &[u8], context: &[(&'static str, &str)]) -> Result<String, PortError>;
    async fn open(&self, sealed: &str, context: &[(&'static str, &str)]) -> Result<Vec<u8>, PortError>;
}
