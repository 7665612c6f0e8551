//! MCP servers in memory: a connector that serves, refuses or hangs per
//! URL, and sessions that list fixed tools and answer scripted results,
//! serve fixed resources, recording every call and read.

use assistant_core::mcp::{
    McpCallResult, McpConnector, McpEndpoint, McpError, McpPromptInfo, McpResourcePart, McpSession, McpToolInfo,
};
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A server's session: its tools, and the next answer to a call (none
/// scripted: the call times out).
pub struct MemoryMcpSession {
    tools: Mutex<Vec<McpToolInfo>>,
    /// `notifications/tools/list_changed` sent so far.
    changes: std::sync::atomic::AtomicU64,
    answer: Mutex<Option<Result<McpCallResult, McpError>>>,
    calls: Mutex<Vec<(String, Map<String, Value>)>>,
    resources: Mutex<BTreeMap<String, Vec<McpResourcePart>>>,
    reads: Mutex<Vec<String>>,
    prompts: Mutex<Option<Vec<McpPromptInfo>>>,
}

impl MemoryMcpSession {
    pub fn new(tools: Vec<McpToolInfo>) -> Arc<Self> {
        Arc::new(Self {
            tools: Mutex::new(tools),
            changes: Default::default(),
            answer: Mutex::default(),
            calls: Mutex::default(),
            resources: Mutex::default(),
            reads: Mutex::default(),
            prompts: Mutex::default(),
        })
    }

    /// What the next call answers.
    pub fn answers(&self, answer: Result<McpCallResult, McpError>) {
        *self.answer.lock().unwrap() = Some(answer);
    }

    /// The server offers `tools` from now on, and says so
    /// (`notifications/tools/list_changed`).
    pub fn change_tools(&self, tools: Vec<McpToolInfo>) {
        *self.tools.lock().unwrap() = tools;
        self.changes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Offers `prompts` (none set: the server offers no prompts).
    pub fn offers_prompts(&self, prompts: Vec<McpPromptInfo>) {
        *self.prompts.lock().unwrap() = Some(prompts);
    }

    /// Serves `parts` at `uri` (any other URI: "not found").
    pub fn serves(&self, uri: &str, parts: Vec<McpResourcePart>) {
        self.resources.lock().unwrap().insert(uri.to_owned(), parts);
    }

    /// Every URI asked for so far.
    pub fn reads(&self) -> Vec<String> {
        self.reads.lock().unwrap().clone()
    }

    /// Every call so far: tool name and arguments.
    pub fn calls(&self) -> Vec<(String, Map<String, Value>)> {
        self.calls.lock().unwrap().clone()
    }
}

#[async_trait]
impl McpSession for MemoryMcpSession {
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
        Ok(self.tools.lock().unwrap().clone())
    }

    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<McpCallResult, McpError> {
        self.calls.lock().unwrap().push((name.to_owned(), arguments));
        self.answer.lock().unwrap().take().unwrap_or(Err(McpError::TimedOut(timeout)))
    }

    async fn read_resource(&self, uri: &str, _timeout: Duration) -> Result<Vec<McpResourcePart>, McpError> {
        self.reads.lock().unwrap().push(uri.to_owned());
        let found = self.resources.lock().unwrap().get(uri).cloned();
        found.ok_or_else(|| McpError::Server(format!("Resource not found: {uri}")))
    }

    async fn list_prompts(&self) -> Result<Vec<McpPromptInfo>, McpError> {
        let prompts = self.prompts.lock().unwrap().clone();
        prompts.ok_or_else(|| McpError::Server("Method not found: prompts/list".into()))
    }

    fn tool_list_changes(&self) -> u64 {
        self.changes.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// How the server at a URL behaves when connected to.
pub enum MemoryMcpServer {
    Serves(Arc<MemoryMcpSession>),
    /// Refuses our credentials (401).
    Refuses,
    /// Accepts the connection and never answers.
    Hangs,
}

/// Servers by URL; any other URL is unreachable. Records every endpoint
/// connected to.
#[derive(Default)]
pub struct MemoryMcp {
    servers: BTreeMap<String, MemoryMcpServer>,
    connected: Mutex<Vec<McpEndpoint>>,
}

impl MemoryMcp {
    pub fn with(mut self, url: &str, server: MemoryMcpServer) -> Self {
        self.servers.insert(url.to_owned(), server);
        self
    }

    pub fn connected(&self) -> Vec<McpEndpoint> {
        self.connected.lock().unwrap().clone()
    }
}

#[async_trait]
impl McpConnector for MemoryMcp {
    async fn connect(&self, endpoint: &McpEndpoint) -> Result<Arc<dyn McpSession>, McpError> {
        self.connected.lock().unwrap().push(endpoint.clone());
        match self.servers.get(&endpoint.url) {
            Some(MemoryMcpServer::Serves(session)) => Ok(session.clone()),
            Some(MemoryMcpServer::Refuses) => Err(McpError::Unauthorized { status: 401 }),
            Some(MemoryMcpServer::Hangs) => std::future::pending().await,
            None => Err(McpError::Unreachable("connection refused".into())),
        }
    }
}
