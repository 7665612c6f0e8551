//! Slack canvases as the worker's [`Canvases`] port: a postmortem drafted
//! as a canvas (`canvases.create`), readable by its channel's members
//! (`canvases.access.set`), rewritten in place when asked again
//! (`canvases.edit`, one `replace`). Its link is the workspace's URL (from
//! the client's `auth.test`, asked once a process) with `docs/{team}/{canvas}`.
//!
//! A create is not retried after a 5xx or a reset: it may have made the
//! canvas, and the caller's record says so.

use crate::poster::post_error;
use crate::web::WebClient;
use assistant_core::delivery::PostError;
use assistant_core::ports::{Canvas, Canvases};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use slack::ChannelId;

#[derive(Debug)]
pub struct WebCanvases {
    client: WebClient,
}

impl WebCanvases {
    pub fn new(client: WebClient) -> Self {
        Self { client }
    }

    /// `{workspace url}/docs/{team}/`.
    async fn docs_base(&self) -> Result<String, PostError> {
        let auth = self.client.identity().await.map_err(post_error)?;
        match (&auth.url, auth.team()) {
            (Some(url), Some(team)) => Ok(format!("{}/docs/{team}/", url.trim_end_matches('/'))),
            _ => Err(PostError::Rejected { code: "auth_test_without_url_or_team".into() }),
        }
    }
}

fn markdown(text: &str) -> String {
    json!({"type": "markdown", "markdown": text}).to_string()
}

#[async_trait]
impl Canvases for WebCanvases {
    async fn create(&self, title: &str, text: &str, channel: &ChannelId) -> Result<Canvas, PostError> {
        #[derive(Deserialize)]
        struct Created {
            canvas_id: String,
        }
        let base = self.docs_base().await?;
        let content = markdown(text);
        let created: Created = self
            .client
            .call("canvases.create", &[("title", title), ("document_content", content.as_str())])
            .await
            .map_err(post_error)?;
        let channels = json!([channel.as_str()]).to_string();
        let access =
            [("canvas_id", created.canvas_id.as_str()), ("access_level", "read"), ("channel_ids", channels.as_str())];
        if let Err(err) = self.client.call::<Value>("canvases.access.set", &access).await {
            tracing::warn!(error = %err, "the canvas is made, but its channel may not read it: share it by hand");
        }
        Ok(Canvas { url: format!("{base}{}", created.canvas_id), id: created.canvas_id })
    }

    async fn replace(&self, canvas_id: &str, text: &str) -> Result<(), PostError> {
        let changes =
            json!([{"operation": "replace", "document_content": {"type": "markdown", "markdown": text}}]).to_string();
        let _: Value = self
            .client
            .call("canvases.edit", &[("canvas_id", canvas_id), ("changes", changes.as_str())])
            .await
            .map_err(post_error)?;
        Ok(())
    }
}
