//! The artifact bucket (S3 in AWS; `shared/adapters/s3`): large tool
//! results, files, prompts and configuration objects.

use super::PortError;
use async_trait::async_trait;

/// Objects too large for a turn's item (large tool results), and
/// configuration (S3 in AWS).
#[async_trait]
pub trait ArtifactStore: Send + Sync {
    async fn put(&self, key: &str, body: Vec<u8>, content_type: &'static str) -> Result<(), PortError>;

    /// The object, `None` when there is none under `key`.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, PortError>;

    /// The object when it holds at most `max` bytes. A store that knows an
    /// object's size before its body (S3) does not read a larger one's.
    async fn get_at_most(&self, key: &str, max: u64) -> Result<Bounded, PortError> {
        Ok(match self.get(key).await? {
            None => Bounded::Absent,
            Some(bytes) if bytes.len() as u64 > max => Bounded::TooLarge { bytes: bytes.len() as u64 },
            Some(bytes) => Bounded::Found(bytes),
        })
    }

    /// Keys and sizes under `prefix`, in key order, at most `max`.
    async fn list(&self, prefix: &str, max: usize) -> Result<Vec<(String, u64)>, PortError>;
}

/// An object read with [`ArtifactStore::get_at_most`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bounded {
    Absent,
    Found(Vec<u8>),
    /// Larger than asked for (its size): its body was not read.
    TooLarge {
        bytes: u64,
    },
}
