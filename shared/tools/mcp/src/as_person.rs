//! MCP servers that act as the person who asked (`"auth": {"oauth": …}`):
//! every call is made with the asker's own token, so the server's audit
//! trail and permissions are theirs (GitHub's, Atlassian's and Sentry's
//! hosted servers accept nothing else).
//!
//! Such a server answers nothing without a person's token, so its tools are
//! not listed at start-up. They come from the list a person's token last
//! read, kept in the artifact bucket (`cache/mcp-tools/{server}.json`, for
//! the server's URL). Until anyone has connected, the server offers one
//! tool, `{server}__connect`: calling it asks the person to sign in (as any
//! tool acting as them does), then lists the server's tools with their
//! token and keeps the list; workers started after that offer them (a
//! worker lives minutes to hours; Lambda starts new ones as it needs).
//!
//! Each call opens its own session with the person's token: a session
//! belongs to whoever initialized it, and is never shared between people.

use super::kept::{self, ToolList};
use super::{
    DISCOVERY_DEADLINE, McpConfigError, McpServerConfig, call_error, endpoint, output, timeout, tool, unique_name,
    wanted,
};
use assistant_core::mcp::{McpConnector, McpEndpoint};
use assistant_core::model::ToolSpec;
use assistant_core::oauth::OAuthProvider;
use assistant_core::ports::ArtifactStore;
use assistant_core::turn::ToolOutput;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use tools_registry::auth::ToolAuth;
use tools_registry::references::Reference;
use tools_registry::{CallContext, Effect, RunTool, Tool, ToolError, ToolFuture, Unoffered};
use tracing::info;

pub(super) fn acts_as_person(config: &McpServerConfig) -> bool {
    matches!(config.auth, Some(ToolAuth::OAuth(_)))
}

/// The tools of the servers that act as the person: from their kept lists,
/// or each server's `connect` tool. A server whose sign-in could not be set
/// up (`lost`: its metadata unreachable now, say) offers nothing.
#[allow(clippy::too_many_arguments)]
pub async fn person_tools(
    configs: &[McpServerConfig],
    providers: &BTreeMap<String, OAuthProvider>,
    lost: &[(String, String)],
    connector: Arc<dyn McpConnector>,
    cache: Arc<dyn ArtifactStore>,
    lookup: impl Fn(&Reference) -> Option<String>,
    taken: &mut HashSet<String>,
    clock: Arc<dyn assistant_core::Clock>,
) -> Result<(Vec<Tool>, Vec<Unoffered>), McpConfigError> {
    let (mut tools, mut unoffered) = (Vec::new(), Vec::new());
    for config in configs.iter().filter(|config| acts_as_person(config)) {
        let endpoint = endpoint(config, &lookup)?;
        let Some(ToolAuth::OAuth(oauth)) = &config.auth else { continue };
        let provider = oauth.provider.clone();
        if !providers.contains_key(&provider) {
            let reason = lost
                .iter()
                .find(|(server, _)| *server == config.name)
                .map_or_else(|| "its sign-in is not set up".to_owned(), |(_, reason)| reason.clone());
            unoffered.push(Unoffered { name: format!("{}__*", config.name), reason: format!("sign-in: {reason}") });
            continue;
        }
        let person = PersonSession { endpoint, connector: connector.clone() };
        match kept::read(cache.as_ref(), config, None).await.map(|list| list.tools) {
            Some(listed) => {
                let wanted = wanted(config, listed, &mut unoffered);
                info!(server = %config.name, tools = wanted.len(), "MCP server acting as the person: its kept tool list");
                for info in wanted {
                    let name = unique_name(&config.name, &info.name, taken);
                    let runner = PersonTool {
                        server: config.name.clone(),
                        tool: info.name.clone(),
                        person: person.clone(),
                        timeout: timeout(config),
                    };
                    tools.push(tool(config, name, info, runner).acting_as(Some(provider.clone())));
                }
            }
            None => {
                info!(server = %config.name, "MCP server acting as the person: nobody has connected yet, it offers `connect`");
                let name = unique_name(&config.name, "connect", taken);
                let spec = ToolSpec {
                    name,
                    description: format!(
                        "Connect the asking person's {server} account: the tools of the MCP server {server} act as \
                         them. Call it when the question needs {server}. The person is asked to sign in; {server}'s \
                         tools are offered from their next question.",
                        server = config.name
                    ),
                    input_schema: serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
                };
                let runner = ConnectTool {
                    config: config.clone(),
                    person: person.clone(),
                    cache: cache.clone(),
                    clock: clock.clone(),
                };
                let connect = Tool::new(spec, Effect::ReadOnly, DISCOVERY_DEADLINE * 2, runner)
                    .map_err(|err| McpConfigError::Invalid { name: config.name.clone(), reason: err.to_string() })?;
                tools.push(connect.acting_as(Some(provider.clone())));
            }
        }
    }
    Ok((tools, unoffered))
}

/// Sessions with one server, each opened with one person's token.
#[derive(Clone)]
struct PersonSession {
    endpoint: McpEndpoint,
    connector: Arc<dyn McpConnector>,
}

impl PersonSession {
    /// A session as the person whose token `context` carries; what the
    /// model reads when there is none.
    async fn open(&self, context: &CallContext) -> Result<Arc<dyn assistant_core::mcp::McpSession>, ToolError> {
        let Some(token) = &context.access_token else {
            return Err("This tool acts as the person who asked, and has no sign-in of theirs.".into());
        };
        let mut endpoint = self.endpoint.clone();
        endpoint.headers.push(("Authorization".to_owned(), format!("Bearer {}", token.expose())));
        self.connector.connect(&endpoint).await.map_err(|err| call_error(&self.endpoint.name, err, true))
    }
}

/// One of the server's tools, called as the person.
struct PersonTool {
    server: String,
    tool: String,
    person: PersonSession,
    timeout: std::time::Duration,
}

impl RunTool for PersonTool {
    fn run(&self, input: Value, context: CallContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let Value::Object(arguments) = input else {
                return Err("The input must be a JSON object.".into());
            };
            let session = self.person.open(&context).await?;
            match session.call_tool(&self.tool, arguments, self.timeout).await {
                Ok(result) => output(result, None),
                Err(err) => Err(call_error(&self.server, err, true)),
            }
        })
    }
}

/// `{server}__connect`: run once the person is signed in; lists the
/// server's tools with their token and keeps the list.
struct ConnectTool {
    config: McpServerConfig,
    person: PersonSession,
    cache: Arc<dyn ArtifactStore>,
    clock: Arc<dyn assistant_core::Clock>,
}

impl RunTool for ConnectTool {
    fn run(&self, _input: Value, context: CallContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let server = &self.config.name;
            let session = self.person.open(&context).await?;
            let listed = session.list_tools().await.map_err(|err| call_error(server, err, true))?;
            let mut unoffered = Vec::new();
            let names: Vec<String> =
                wanted(&self.config, listed.clone(), &mut unoffered).into_iter().map(|tool| tool.name).collect();
            let list = ToolList {
                url: self.config.url.clone(),
                config: String::new(),
                listed_at: self.clock.now_unix(),
                tools: listed,
                prompts: Vec::new(),
            };
            kept::keep(self.cache.as_ref(), server, &list).await;
            info!(server = %server, tools = names.len(), "connected as the person: the server's tool list is kept");
            Ok(ToolOutput::Text(format!(
                "Connected: the person is signed in to {server}. Its tools ({}) are offered from their next \
                 question: tell them to ask again.",
                names.join(", ")
            )))
        })
    }
}
