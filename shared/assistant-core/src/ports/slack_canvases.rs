//! Slack canvases, through the Web API (`shared/adapters/slack`).

use crate::delivery::PostError;
use async_trait::async_trait;
use slack::ChannelId;

/// A canvas the bot made: its file id and where people open it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canvas {
    pub id: String,
    pub url: String,
}

/// Slack canvases (a postmortem's draft).
#[async_trait]
pub trait Canvases: Send + Sync {
    /// Makes a canvas titled `title` holding `markdown`, readable by
    /// `channel`'s members. Not retried after a 5xx or a reset: it may exist.
    async fn create(&self, title: &str, markdown: &str, channel: &ChannelId) -> Result<Canvas, PostError>;

    /// Replaces the canvas's whole content (the same again changes nothing).
    async fn replace(&self, canvas_id: &str, markdown: &str) -> Result<(), PostError>;
}
