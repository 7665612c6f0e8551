//! Slack's files, downloaded with the bot token (`shared/adapters/slack`).

use super::PortError;
use async_trait::async_trait;

/// Slack's files, downloaded with the bot token (`files:read`).
#[async_trait]
pub trait SlackFiles: Send + Sync {
    /// At most `max_bytes` of the file at `url` (its `url_private_download`).
    async fn download(&self, url: &str, max_bytes: u64) -> Result<Downloaded, DownloadError>;
}

/// A file's bytes: all of it, or its first `max_bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    pub body: Vec<u8>,
    /// The file went on past `max_bytes`; `body` is its start.
    pub cut: bool,
    /// What Slack said it served (`Content-Type`).
    pub content_type: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// Not a Slack file URL: the bot token is never sent there.
    #[error("not a Slack file URL: {0}")]
    NotSlack(String),
    /// Slack answered with its sign-in page or a refusal: the app lacks
    /// `files:read`, or the file is not shared where the bot can see it.
    #[error("Slack would not let the bot read the file ({0})")]
    NoAccess(String),
    #[error(transparent)]
    Failed(#[from] PortError),
}
