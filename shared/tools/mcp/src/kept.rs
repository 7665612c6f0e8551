//! Servers' tool lists kept in the artifact bucket
//! (`cache/mcp-tools/{server}.json`), so a worker's start does not wait on
//! its servers.
//!
//! A server with the worker's own credentials is listed live only when no
//! list is kept for its configuration (its URL, its headers as configured,
//! its auth): the first start, or the first after the configuration
//! changed. Otherwise its tools are offered from the kept list at once and
//! its session opens at the first call. A list older than
//! [`REFRESH_AFTER_SECS`] is listed again beside the first invocation's
//! work and kept, for the workers that assemble after it (a warm worker
//! assembles again every few minutes: `functions/worker`), so a server
//! that changed its tools is picked up within minutes. A server that is
//! down keeps its tools offered from the list; their calls fail with the
//! reason, which the model reads. Keeping a list is a plain put of the
//! same key: a put whose answer was lost is either there for the next
//! start or listed again by it.
//!
//! A server that says its tools changed (`notifications/tools/list_changed`,
//! heard while a session is open) is listed again right after the call
//! that heard it (or before its next call), its list kept
//! with the time, and the worker's [`ToolsChanged`] marked: the function
//! assembles the worker anew from the kept lists before its next
//! invocation, so the next step offers the new list under the same rules
//! (a new tool that is not read-only waits for approval). Until then a
//! call of a tool the new list lacks is refused with why.

use super::{Found, McpConfigError, McpServerConfig, ServerSession, as_person, checked, discover, offered};
use assistant_core::Clock;
use assistant_core::mcp::{McpConnector, McpEndpoint, McpPromptInfo, McpToolInfo};
use assistant_core::ports::ArtifactStore;
use assistant_core::ports::SuggestedPrompt;
use futures_util::future::join_all;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tools_registry::background::Background;
use tools_registry::changes::ToolsChanged;
use tools_registry::references::Reference;
use tools_registry::{Tool, Unoffered};
use tracing::{info, warn};

/// A kept list older than this is listed again (seconds).
pub const REFRESH_AFTER_SECS: i64 = 300;

/// Where a server's tool list is kept.
pub fn tool_list_key(server: &str) -> String {
    format!("cache/mcp-tools/{server}.json")
}

/// A kept tool list: for the server at `url` only, and, for a server with
/// the worker's credentials, for the configuration `config` fingerprints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ToolList {
    pub url: String,
    /// [`fingerprint`] of the configuration it was listed for; empty for
    /// a list a person's token read (`as_person`).
    #[serde(default)]
    pub config: String,
    pub listed_at: i64,
    pub tools: Vec<McpToolInfo>,
    /// Its prompts, listed for a server with `"prompts": true`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<McpPromptInfo>,
}

/// What a server's list depends on: its URL, its headers as configured
/// (not their resolved values: a rotated secret lists the same tools) and
/// its auth.
pub(super) fn fingerprint(config: &McpServerConfig) -> String {
    use sha2::Digest;
    let mut described = format!("{}\n{:?}\n{:?}", config.url, config.headers, config.auth);
    // Only when on, so the lists kept before prompts existed stay good.
    if config.prompts {
        described.push_str("\nprompts");
    }
    hex::encode(&sha2::Sha256::digest(described)[..12])
}

/// The server's kept list, if one was kept for its URL (and `config`, when
/// given). A list that cannot be read or parsed is no list.
pub(super) async fn read(cache: &dyn ArtifactStore, config: &McpServerConfig, print: Option<&str>) -> Option<ToolList> {
    let bytes = match cache.get(&tool_list_key(&config.name)).await {
        Ok(found) => found?,
        Err(err) => {
            warn!(server = %config.name, error = %err, "the kept tool list cannot be read");
            return None;
        }
    };
    let list: ToolList = serde_json::from_slice(&bytes)
        .inspect_err(|err| warn!(server = %config.name, error = %err, "the kept tool list does not parse"))
        .ok()?;
    (list.url == config.url && print.is_none_or(|print| list.config == print)).then_some(list)
}

/// Keeps `list` as the server's.
pub(super) async fn keep(cache: &dyn ArtifactStore, server: &str, list: &ToolList) {
    let json = serde_json::to_vec(list).expect("tool lists are JSON");
    match cache.put(&tool_list_key(server), json, "application/json").await {
        Ok(()) => info!(server, tools = list.tools.len(), "the server's tool list is kept"),
        Err(err) => warn!(server, error = %err, "the tool list was read but not kept: the next start lists it again"),
    }
}

/// What a start needs to use and keep lists.
pub struct KeptLists<'a> {
    pub cache: Arc<dyn ArtifactStore>,
    pub clock: Arc<dyn Clock>,
    /// Where the lists' refreshes and puts run.
    pub background: &'a Background,
    /// Marked when a server's list changed and was kept anew.
    pub changed: ToolsChanged,
}

/// Keeps a server's list again when it changed during a session, and
/// tells the worker.
pub(super) struct Keeper {
    cache: Arc<dyn ArtifactStore>,
    clock: Arc<dyn Clock>,
    /// The list as kept before (its URL and configuration).
    list: ToolList,
    changed: ToolsChanged,
}

impl Keeper {
    pub(super) async fn keep(&self, server: &str, tools: Vec<McpToolInfo>) {
        let list = ToolList { listed_at: self.clock.now_unix(), tools, ..self.list.clone() };
        keep(self.cache.as_ref(), server, &list).await;
        self.changed.mark();
    }
}

/// The servers' tools (those with the worker's credentials): from their
/// kept lists, or listed now when none is kept for their configuration.
/// See the module's rules.
pub async fn kept_or_discovered_tools(
    configs: &[McpServerConfig],
    connector: Arc<dyn McpConnector>,
    lookup: impl Fn(&Reference) -> Option<String>,
    taken: &HashSet<String>,
    deadline: Duration,
    kept: KeptLists<'_>,
) -> Result<(Vec<Tool>, Vec<Unoffered>, Vec<SuggestedPrompt>), McpConfigError> {
    let endpoints = checked(configs, &lookup)?;
    let now = kept.clock.now_unix();
    let found: Vec<(Found, Vec<McpPromptInfo>)> = join_all(configs.iter().zip(&endpoints).map(|(config, endpoint)| {
        let (connector, kept) = (connector.clone(), &kept);
        async move {
            if as_person::acts_as_person(config) {
                return (None, Vec::new());
            }
            let print = fingerprint(config);
            let keeper = || Keeper {
                cache: kept.cache.clone(),
                clock: kept.clock.clone(),
                list: ToolList {
                    url: config.url.clone(),
                    config: print.clone(),
                    listed_at: 0,
                    tools: Vec::new(),
                    prompts: Vec::new(),
                },
                changed: kept.changed.clone(),
            };
            if let Some(list) = read(kept.cache.as_ref(), config, Some(&print)).await {
                let age = now - list.listed_at;
                info!(server = %config.name, age_secs = age, "MCP server's tools from its kept list");
                if !(0..REFRESH_AFTER_SECS).contains(&age) {
                    kept.background.spawn(refresh(
                        connector.clone(),
                        endpoint.clone(),
                        config.prompts,
                        list.clone(),
                        kept.cache.clone(),
                        kept.clock.clone(),
                        deadline,
                    ));
                }
                let mut keeper = keeper();
                keeper.list.prompts = list.prompts.clone();
                let session = ServerSession::at_first_call(endpoint.clone(), connector, Some(keeper));
                return (Some(Ok((session, list.tools))), list.prompts);
            }
            let found = discover(connector.as_ref(), endpoint, deadline, config.prompts).await;
            let mut prompts = Vec::new();
            if let Ok((_, tools, listed)) = &found {
                prompts = listed.clone();
                let list = ToolList {
                    url: config.url.clone(),
                    config: print.clone(),
                    listed_at: now,
                    tools: tools.clone(),
                    prompts: listed.clone(),
                };
                let (cache, server) = (kept.cache.clone(), config.name.clone());
                kept.background.spawn(async move { keep(cache.as_ref(), &server, &list).await });
            }
            let mut keeper = keeper();
            keeper.list.prompts = prompts.clone();
            let found = found
                .map(|(session, tools, _)| (ServerSession::opened(endpoint.clone(), session, Some(keeper)), tools));
            (Some(found), prompts)
        }
    }))
    .await;
    let (found, prompts): (Vec<Found>, Vec<Vec<McpPromptInfo>>) = found.into_iter().unzip();
    let suggested = super::prompts::suggested(configs, &prompts);
    let (tools, unoffered) = offered(configs, &endpoints, found, taken);
    Ok((tools, unoffered, suggested))
}

/// Lists the server again and keeps what it says; a server that does not
/// answer keeps its old list (and its old age: the next start tries again).
async fn refresh(
    connector: Arc<dyn McpConnector>,
    endpoint: McpEndpoint,
    with_prompts: bool,
    old: ToolList,
    cache: Arc<dyn ArtifactStore>,
    clock: Arc<dyn Clock>,
    deadline: Duration,
) {
    let server = endpoint.name.clone();
    match discover(connector.as_ref(), &endpoint, deadline, with_prompts).await {
        Ok((_, tools, prompts)) => {
            if tools != old.tools {
                info!(
                    server,
                    before = old.tools.len(),
                    now = tools.len(),
                    "MCP server changed its tools: workers assembled from now on offer the new ones"
                );
            }
            let list = ToolList { listed_at: clock.now_unix(), tools, prompts, ..old };
            keep(cache.as_ref(), &server, &list).await;
        }
        Err(err) => {
            let reason = redact::Redactor::global().redact(&err.to_string()).into_owned();
            warn!(server, error = %reason, "MCP server not listed again: its kept list stays in use");
        }
    }
}
