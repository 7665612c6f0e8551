//! MCP (Model Context Protocol) servers as a port: the worker discovers a
//! server's tools and calls them through [`McpConnector`] and
//! [`McpSession`], never knowing the wire (`shared/adapters/mcp` speaks
//! Streamable HTTP with the official SDK; `testkit` has an in-memory double).
//!
//! What a server says is untrusted: its names, descriptions, schemas,
//! annotations and results are data the worker checks, caps and redacts.

use async_trait::async_trait;
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Where a server is and what to send it. `headers` hold resolved secrets
/// (`Authorization: Bearer …`): `Debug` shows their names only.
#[derive(Clone, PartialEq, Eq)]
pub struct McpEndpoint {
    /// The configuration's name for the server (logs and errors).
    pub name: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// Each request signed with SigV4 for this scope (`"auth": "aws_iam"`).
    pub signing: Option<crate::ports::AwsScope>,
}

impl fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("McpEndpoint")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("headers", &names)
            .finish()
    }
}

/// One tool as the server lists it (kept as JSON where a server's list
/// is cached).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct McpToolInfo {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// `readOnlyHint`; `None` when the server gives no annotation.
    pub read_only: Option<bool>,
    /// `destructiveHint`; `None` when the server gives no annotation.
    pub destructive: Option<bool>,
}

/// One piece of a tool's result.
#[derive(Debug, Clone, PartialEq)]
pub enum McpContent {
    Text(String),
    /// An image or audio clip: kind (`image`, `audio`), MIME type and the
    /// decoded size; the data itself is never kept.
    Media {
        kind: &'static str,
        mime_type: String,
        bytes: usize,
    },
    /// An embedded resource: its URI, MIME type and size (text or blob).
    Resource {
        uri: String,
        mime_type: Option<String>,
        bytes: usize,
    },
    /// A link to a resource the server holds.
    Link {
        uri: String,
        name: String,
        mime_type: Option<String>,
    },
}

/// A `tools/call` result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpCallResult {
    pub content: Vec<McpContent>,
    /// `structuredContent`, as sent.
    pub structured: Option<Value>,
    /// `isError: true`: the tool ran and failed; the content says why.
    pub is_error: bool,
}

/// Why a server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// HTTP 401 or 403: the configured credentials are missing, wrong or
    /// revoked.
    #[error("the server refused our credentials (HTTP {status})")]
    Unauthorized { status: u16 },
    #[error("the server could not be reached: {0}")]
    Unreachable(String),
    #[error("the server did not answer within {} s", .0.as_secs_f64())]
    TimedOut(Duration),
    /// A JSON-RPC error or an answer that is not MCP.
    #[error("the server answered with an error: {0}")]
    Server(String),
}

/// An initialized session with one server. Implementations re-initialize
/// an expired session themselves and retry the request once.
#[async_trait]
pub trait McpSession: Send + Sync {
    /// Every tool the server offers (all pages of `tools/list`).
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError>;

    /// Calls `name`; past `timeout` the request is cancelled (the server is
    /// told) and the answer is [`McpError::TimedOut`].
    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<McpCallResult, McpError>;
}

/// Opens sessions (`initialize`).
#[async_trait]
pub trait McpConnector: Send + Sync {
    async fn connect(&self, endpoint: &McpEndpoint) -> Result<Arc<dyn McpSession>, McpError>;
}

/// For deployments and tests with no MCP servers: every connection fails.
pub struct NoMcpServers;

#[async_trait]
impl McpConnector for NoMcpServers {
    async fn connect(&self, endpoint: &McpEndpoint) -> Result<Arc<dyn McpSession>, McpError> {
        Err(McpError::Unreachable(format!("no MCP client in this build ({})", endpoint.name)))
    }
}
