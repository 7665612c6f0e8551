//! Slack's files as the worker's [`SlackFiles`] port: a file's
//! `url_private_download`, fetched with the bot token.
//!
//! The token goes to Slack's file host only (`https://files.slack.com`, or,
//! for a local Slack such as the tests' fake, the Web API's own origin):
//! a URL anywhere else is refused before any request, whatever the event
//! or history said. Reading stops at the caller's byte limit, so a 50 MB
//! log costs its first few MB. Slack answers a bot that may not read a
//! file (no `files:read`, or a file not shared where the bot is) with a
//! redirect to its sign-in page or an error status: that is
//! [`DownloadError::NoAccess`], which the worker turns into a note.

use crate::web::BotToken;
use assistant_core::ports::{DownloadError, Downloaded, PortError, SlackFiles};
use async_trait::async_trait;
use reqwest::Url;
use std::time::Duration;

/// Slack's file host.
pub const FILES_ORIGIN: &str = "https://files.slack.com";
/// One download, all of it, at most.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct WebFiles {
    http: reqwest::Client,
    token: BotToken,
    /// Origins the token may be sent to.
    origins: Vec<String>,
}

fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

impl WebFiles {
    /// `api_base` is the Web API's base URL: a local Slack serves files
    /// from its own origin.
    pub fn new(http: reqwest::Client, api_base: &str, token: BotToken) -> Self {
        let mut origins = vec![FILES_ORIGIN.to_owned()];
        if let Ok(api) = Url::parse(api_base)
            && api.host_str() != Some("slack.com")
        {
            origins.push(origin(&api));
        }
        Self { http, token, origins }
    }

    fn allowed(&self, url: &str) -> Result<Url, DownloadError> {
        let parsed = Url::parse(url).map_err(|_| DownloadError::NotSlack(url.chars().take(200).collect()))?;
        if !self.origins.contains(&origin(&parsed)) || !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(DownloadError::NotSlack(origin(&parsed)));
        }
        Ok(parsed)
    }
}

#[async_trait]
impl SlackFiles for WebFiles {
    async fn download(&self, url: &str, max_bytes: u64) -> Result<Downloaded, DownloadError> {
        let url = self.allowed(url)?;
        let failed = |detail: String| DownloadError::Failed(PortError::new("Slack file download", detail));
        let mut response = self
            .http
            .get(url)
            .bearer_auth(self.token.expose())
            .timeout(DOWNLOAD_TIMEOUT)
            .send()
            .await
            .map_err(|err| failed(err.to_string()))?;
        let status = response.status();
        if status.is_redirection() || matches!(status.as_u16(), 401 | 403 | 404 | 410) {
            return Err(DownloadError::NoAccess(format!("HTTP {}", status.as_u16())));
        }
        if !status.is_success() {
            return Err(failed(format!("HTTP {}", status.as_u16())));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let mut body = Vec::new();
        let mut cut = false;
        while let Some(chunk) = response.chunk().await.map_err(|err| failed(err.to_string()))? {
            let room = (max_bytes as usize).saturating_sub(body.len());
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                cut = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Downloaded { body, cut, content_type })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(api: &str) -> WebFiles {
        WebFiles::new(crate::http_client(), api, BotToken::new("xoxb-test"))
    }

    #[test]
    fn the_token_goes_to_slacks_file_host_only() {
        let production = files(crate::DEFAULT_BASE_URL);
        assert!(production.allowed("https://files.slack.com/files-pri/T1-F1/download/a.png").is_ok());
        for hostile in [
            "https://files.slack.com.evil.example/files-pri/T1-F1/download/a.png",
            "http://files.slack.com/files-pri/T1-F1/download/a.png",
            "https://evil.example/files-pri/T1-F1/download/a.png",
            "https://user@files.slack.com/x",
            "https://slack.com/api/files.info",
            "file:///etc/passwd",
            "not a url",
        ] {
            assert!(
                matches!(production.allowed(hostile), Err(DownloadError::NotSlack(_))),
                "{hostile} must be refused"
            );
        }
        let local = files("http://127.0.0.1:4000/api");
        assert!(local.allowed("http://127.0.0.1:4000/files/F1/a.png").is_ok(), "a local Slack serves its own files");
        assert!(local.allowed("http://127.0.0.1:4001/files/F1/a.png").is_err(), "another port is another origin");
    }
}
