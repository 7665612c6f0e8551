//! MCP servers over Streamable HTTP behind the core's MCP port, with the
//! official Rust SDK (`rmcp`) on the process's own HTTP client (no
//! redirects, internal-address guard: see `adapters_slack::http_client`).
//!
//! rmcp does the protocol: `initialize`, session ids, SSE or JSON answers,
//! re-initializing an expired session (HTTP 404) and retrying the request
//! once, and telling the server `notifications/cancelled` when a call's
//! future is dropped (our timeout). This adapter only translates: the
//! SDK's types to the core's, and its errors to [`McpError`] (401/403 as
//! [`McpError::Unauthorized`], so a revoked token reads as one). A server
//! behind AWS IAM gets each request signed ([`signed`]). What a server says
//! unasked that we act on: `notifications/tools/list_changed`, counted for
//! the tools' layer ([`McpSession::tool_list_changes`]). Tasks (2025-11-25)
//! go over a small JSON-RPC client of our own ([`tasks`]): rmcp speaks a
//! later tasks extension.

use assistant_core::mcp::{
    Elicitor, McpCallResult, McpConnector, McpContent, McpEndpoint, McpError, McpPromptInfo, McpResourcePart,
    McpSession, McpTask, McpTaskState, McpToolInfo, TaskSupport,
};
use assistant_core::ports::{NoSigner, RequestSigner};
use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ReadResourceRequestParams,
    ReadResourceResponse, ResourceContents,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, StreamableHttpClientTransportConfig,
};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

mod client;
mod signed;
mod tasks;

/// The largest JSON answer or SSE event accepted from a server. A tool
/// result past a few hundred kilobytes goes to S3 anyway; this bounds the
/// memory one misbehaving server can take.
const MAX_MCP_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Opens Streamable HTTP sessions on one shared HTTP client.
pub struct StreamableHttpConnector {
    http: reqwest::Client,
    /// Signs the requests of servers with `"auth": "aws_iam"`.
    signer: Arc<dyn RequestSigner>,
}

impl StreamableHttpConnector {
    /// `http` must not follow redirects: a server's `Authorization` header
    /// must never travel to where it redirects.
    pub fn new(http: reqwest::Client) -> Self {
        Self { http, signer: Arc::new(NoSigner) }
    }

    /// Signs the requests to servers behind AWS IAM with `signer` (the
    /// process's one signer).
    pub fn with_signer(mut self, signer: Arc<dyn RequestSigner>) -> Self {
        self.signer = signer;
        self
    }
}

#[async_trait]
impl McpConnector for StreamableHttpConnector {
    async fn connect(&self, endpoint: &McpEndpoint) -> Result<Arc<dyn McpSession>, McpError> {
        let mut headers = HashMap::new();
        for (name, value) in &endpoint.headers {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| McpError::Server(format!("{name:?} is not a header name")))?;
            let mut value = http::HeaderValue::from_str(value)
                .map_err(|_| McpError::Server(format!("header {name} has an invalid value")))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let config = StreamableHttpClientTransportConfig::with_uri(endpoint.url.as_str())
            .custom_headers(headers)
            .reinit_on_expired_session(true)
            .max_json_response_size(MAX_MCP_ANSWER_BYTES)
            .max_sse_event_size(MAX_MCP_ANSWER_BYTES);
        let client = Arc::new(client::Client::new(&endpoint.name, endpoint.elicitation));
        let service = match &endpoint.signing {
            Some(scope) => {
                let signed =
                    signed::SignedHttp { http: self.http.clone(), signer: self.signer.clone(), scope: scope.clone() };
                client.clone().serve(StreamableHttpClientTransport::with_client(signed, config)).await
            }
            None => client.clone().serve(StreamableHttpClientTransport::with_client(self.http.clone(), config)).await,
        }
        .map_err(|err| classify(&err))?;
        let tasks = endpoint.tasks.then(|| tasks::Tasks::new(self.http.clone(), endpoint.clone(), self.signer.clone()));
        Ok(Arc::new(Session { service, client, tasks }))
    }
}

/// One server's session; rmcp re-initializes it when the server forgot it.
struct Session {
    service: RunningService<RoleClient, Arc<client::Client>>,
    client: Arc<client::Client>,
    /// Task requests, where the configuration runs tools as tasks.
    tasks: Option<tasks::Tasks>,
}

impl Session {
    fn tasks(&self) -> Result<&tasks::Tasks, McpError> {
        self.tasks.as_ref().ok_or_else(|| McpError::Server("tasks are not turned on for this server".into()))
    }
}

#[async_trait]
impl McpSession for Session {
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
        let tools = self.service.list_all_tools().await.map_err(|err| classify(&err))?;
        Ok(tools
            .into_iter()
            .map(|tool| {
                let annotations = tool.annotations.as_ref();
                McpToolInfo {
                    name: tool.name.into_owned(),
                    description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
                    input_schema: Value::Object((*tool.input_schema).clone()),
                    read_only: annotations.and_then(|a| a.read_only_hint),
                    destructive: annotations.and_then(|a| a.destructive_hint),
                }
            })
            .collect())
    }

    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<McpCallResult, McpError> {
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        // Dropping the call on timeout sends `notifications/cancelled`.
        let answer = tokio::time::timeout(timeout, self.service.call_tool_once(params))
            .await
            .map_err(|_| McpError::TimedOut(timeout))?
            .map_err(|err| match &err {
                rmcp::ServiceError::McpError(error) => {
                    client::links_required(error).map_or_else(|| classify(&err), McpError::LinkRequired)
                }
                _ => classify(&err),
            })?;
        let result = match answer {
            CallToolResponse::Complete(result) => result,
            _ => {
                return Err(McpError::Server(
                    "the tool asked for input or a task, which this client does not offer".into(),
                ));
            }
        };
        Ok(call_result(result))
    }

    async fn call_tool_eliciting(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
        elicitor: Arc<dyn Elicitor>,
    ) -> Result<McpCallResult, McpError> {
        // The server's requests while the call runs go to this person.
        let _asking = self.client.asking(elicitor, tokio::time::Instant::now() + timeout);
        self.call_tool(name, arguments, timeout).await
    }

    async fn read_resource(&self, uri: &str, timeout: Duration) -> Result<Vec<McpResourcePart>, McpError> {
        let params = ReadResourceRequestParams::new(uri);
        // Dropping the read on timeout sends `notifications/cancelled`.
        let answer = tokio::time::timeout(timeout, self.service.read_resource_once(params))
            .await
            .map_err(|_| McpError::TimedOut(timeout))?
            .map_err(|err| classify(&err))?;
        let ReadResourceResponse::Complete(result) = answer else {
            return Err(McpError::Server(
                "the server asked for input to read it, which this client does not offer".into(),
            ));
        };
        Ok(result.contents.into_iter().map(resource_part).collect())
    }

    async fn list_prompts(&self) -> Result<Vec<McpPromptInfo>, McpError> {
        let prompts = self.service.list_all_prompts().await.map_err(|err| classify(&err))?;
        Ok(prompts
            .into_iter()
            .map(|prompt| McpPromptInfo {
                needs_arguments: prompt.arguments.iter().flatten().any(|argument| argument.required == Some(true)),
                name: prompt.name,
                title: prompt.title,
                description: prompt.description,
            })
            .collect())
    }

    fn tool_list_changes(&self) -> u64 {
        self.client.tool_list_changes()
    }

    async fn task_support(&self, tool: &str) -> Result<TaskSupport, McpError> {
        match &self.tasks {
            Some(tasks) => tasks.support(tool).await,
            None => Ok(TaskSupport::Forbidden),
        }
    }

    async fn start_task(&self, name: &str, arguments: Map<String, Value>) -> Result<McpTask, McpError> {
        self.tasks()?.start(name, arguments).await
    }

    async fn task_state(&self, task: &McpTask) -> Result<(McpTaskState, Duration), McpError> {
        self.tasks()?.state(task).await
    }

    async fn task_result(&self, task: &McpTask) -> Result<McpCallResult, McpError> {
        let result = self.tasks()?.result(task).await?;
        let result: CallToolResult = serde_json::from_value(result)
            .map_err(|_| McpError::Server("the task's result is not a tool's result".into()))?;
        Ok(call_result(result))
    }

    async fn cancel_task(&self, task: &McpTask) -> Result<(), McpError> {
        self.tasks()?.cancel(task).await
    }
}

fn call_result(result: CallToolResult) -> McpCallResult {
    McpCallResult {
        content: result.content.into_iter().map(content).collect(),
        structured: result.structured_content,
        is_error: result.is_error.unwrap_or(false),
    }
}

fn resource_part(contents: ResourceContents) -> McpResourcePart {
    match contents {
        ResourceContents::TextResourceContents { uri, mime_type, text, .. } => {
            McpResourcePart::Text { uri, mime_type, text }
        }
        ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
            McpResourcePart::Blob { uri, mime_type, bytes: decoded_len(&blob) }
        }
        // A kind newer than this client: sized, never pasted.
        other => McpResourcePart::Blob { uri: String::new(), mime_type: None, bytes: json_len(&other) },
    }
}

fn content(block: ContentBlock) -> McpContent {
    match block {
        ContentBlock::Text(text) => McpContent::Text(text.text),
        ContentBlock::Image(image) => {
            McpContent::Media { kind: "image", bytes: decoded_len(&image.data), mime_type: image.mime_type }
        }
        ContentBlock::Audio(audio) => {
            McpContent::Media { kind: "audio", bytes: decoded_len(&audio.data), mime_type: audio.mime_type }
        }
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { uri, mime_type, text, .. } => {
                McpContent::Resource { uri, mime_type, bytes: text.len() }
            }
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                McpContent::Resource { uri, mime_type, bytes: decoded_len(&blob) }
            }
            other => McpContent::Resource { uri: String::new(), mime_type: None, bytes: json_len(&other) },
        },
        ContentBlock::ResourceLink(link) => {
            McpContent::Link { uri: link.uri, name: link.name, mime_type: link.mime_type }
        }
        // A kind newer than this client: named, never pasted.
        other => McpContent::Text(format!("[content of a kind this client does not know: {} bytes]", json_len(&other))),
    }
}

/// How large something is on the wire.
fn json_len(value: &impl serde::Serialize) -> usize {
    serde_json::to_vec(value).map_or(0, |json| json.len())
}

/// The size of base64 data once decoded, without decoding it.
fn decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// Our error for one of the SDK's, found along its source chain: an
/// authentication challenge or an unchallenged 401/403 is `Unauthorized`;
/// a failed connection is `Unreachable`; anything else the server said is
/// `Server`.
fn classify(err: &(dyn StdError + 'static)) -> McpError {
    let mut unreachable = false;
    let mut source = Some(err);
    while let Some(current) = source {
        if current.downcast_ref::<AuthRequiredError>().is_some() {
            return McpError::Unauthorized { status: 401 };
        }
        if current.downcast_ref::<InsufficientScopeError>().is_some() {
            return McpError::Unauthorized { status: 403 };
        }
        // rmcp reports an unchallenged 401/403 as an unexpected response
        // whose message starts with the status.
        let message = current.to_string();
        for status in [401, 403] {
            if message.contains(&format!("HTTP {status} ")) || message.ends_with(&format!("HTTP {status}")) {
                return McpError::Unauthorized { status };
            }
        }
        if current.downcast_ref::<reqwest::Error>().is_some_and(|e| e.is_connect() || e.is_timeout()) {
            unreachable = true;
        }
        source = current.source();
    }
    if unreachable { McpError::Unreachable(err.to_string()) } else { McpError::Server(err.to_string()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_sizes_come_from_the_base64_length() {
        use base64::Engine;
        for len in [0, 1, 2, 3, 4, 5, 100, 1001] {
            let data = base64::engine::general_purpose::STANDARD.encode(vec![7u8; len]);
            assert_eq!(decoded_len(&data), len, "{len}");
        }
    }
}
