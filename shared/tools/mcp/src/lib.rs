//! MCP servers' tools (`mcp_servers` in the assistant configuration): any
//! Model Context Protocol server a team runs becomes tools, without code.
//!
//! ```json
//! {
//!   "name": "grafana",
//!   "url": "https://mcp.internal.example.com/mcp",
//!   "headers": {"Authorization": "Bearer ${env:GRAFANA_MCP_TOKEN}"},
//!   "tools": ["*"],
//!   "requires_approval": "auto",
//!   "approvers": ["requester"],
//!   "timeout_secs": 30,
//!   "resources": true,
//!   "prompts": true
//! }
//! ```
//!
//! A server's tools come from the list kept for its configuration in the
//! artifact bucket, refreshed beside the work every few minutes (see
//! [`kept`]); with none kept, every server is asked at start-up,
//! concurrently and under one deadline, and a server that does not
//! answer, refuses our credentials or answers nonsense loses only its own
//! tools (one WARN line names it). Each
//! tool is offered as `{server}__{tool}`, made to fit the model's rules for
//! tool names (`[a-zA-Z0-9_-]`, at most 64 characters, unique), with the
//! server's description and input schema; `tools` (globs over the server's
//! own names) says which are offered, and the channel `tool_policy` then
//! applies to the namespaced names like to every other tool.
//!
//! A server is trusted as far as its configuration says. `requires_approval`
//! `"auto"` (the default) runs a tool at once only when the server marks it
//! `readOnlyHint: true`; anything else waits for a human's Approve (`true`
//! or `false` decide for every tool of the server: use `true` for a server
//! whose hints you do not trust). Results are made text for the model:
//! text parts joined, `structuredContent` kept as JSON, images, audio and
//! embedded resources named and sized, never pasted; `isError: true` is an
//! error result the model can act on. The registry redacts all of it, and
//! the worker moves large results to the artifact store.
//!
//! `"resources": true` adds `{server}__read_resource`, which reads the
//! server's resources, and names it in the links its results give (see
//! [`resources`]); `"prompts": true` offers its prompts as the DM's
//! suggested prompts (see [`prompts`]); `"tasks": true` calls the tools it
//! runs as tasks as tasks, which the turn polls (see [`tasks`]).
//!
//! `"auth": {"oauth": …}` makes a server act as the person who asked, with
//! their own token (see [`as_person`]); `"auth": "aws_iam"` signs every
//! request as the worker's role.

use assistant_core::approval::Approver;
use assistant_core::mcp::{
    LinkRequest, McpCallResult, McpConnector, McpContent, McpEndpoint, McpError, McpPromptInfo, McpSession,
    McpToolInfo, TaskSupport,
};
use assistant_core::model::ToolSpec;
use assistant_core::turn::{RunningTask, ToolOutput};
use futures_util::future::join_all;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tools_registry::references::{self, Reference};
use tools_registry::{
    Asks, CallContext, Effect, RunTool, TaskFuture, TaskPoll, Tool, ToolError, ToolFuture, Unoffered, glob_matches,
};
use tracing::{info, warn};

const DEFAULT_TIMEOUT_SECS: u64 = 30;
/// Longer than any step should wait for one tool.
const MAX_TIMEOUT_SECS: u64 = tools_registry::MAX_TOOL_TIME.as_secs();
/// How long start-up waits for all servers together (connect, initialize,
/// every page of `tools/list`).
pub const DISCOVERY_DEADLINE: Duration = Duration::from_secs(5);
/// Tools offered per server, at most: each costs prompt tokens on every
/// model call.
const MAX_TOOLS_PER_SERVER: usize = 64;
/// A server's description of a tool, at most (characters).
const MAX_DESCRIPTION_CHARS: usize = 2_000;
/// A resource link's name, at most (characters).
const MAX_LINK_NAME_CHARS: usize = 200;
/// Bedrock's limit on a tool name.
const MAX_TOOL_NAME: usize = 64;

/// One server as configured.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// `[a-zA-Z0-9_-]`, up to 32 characters: the prefix of its tools' names.
    pub name: String,
    /// The Streamable HTTP endpoint (`https://…/mcp`).
    pub url: String,
    /// Sent with every request; values may name `${env:NAME}` and
    /// `${secret:NAME}`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Globs over the server's tool names; default all.
    #[serde(default = "all_tools")]
    pub tools: Vec<String>,
    /// Globs over the server's tool names never offered, whatever `tools`
    /// says (`["delete_*", "merge_*"]`).
    #[serde(default)]
    pub deny: Vec<String>,
    #[serde(default)]
    pub requires_approval: RequiresApproval,
    /// Who may approve this server's calls; default: `approvals.approvers`.
    #[serde(default)]
    pub approvers: Option<Vec<Approver>>,
    /// `false`: its prompts never offer "Approve for this thread" (which
    /// grants the whole server's non-destructive tools to the thread).
    #[serde(default)]
    pub thread_grants: Option<bool>,
    /// Per call; default 30 s, at most 300 s.
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// `"aws_iam"`: every request signed with SigV4 as the worker's role
    /// (AgentCore Gateway, a server behind API Gateway or a function URL).
    #[serde(default)]
    pub auth: Option<tools_registry::auth::ToolAuth>,
    /// `true`: while a call runs, the server may ask the person who asked
    /// to open a link (MCP elicitation in URL mode), shown to them alone
    /// with a button; a call that needs a link opened first
    /// (`URLElicitationRequiredError`) shows it and tells the model.
    #[serde(default)]
    pub elicitation: bool,
    /// `true`: the server's resources are read with one more tool,
    /// `{server}__read_resource` (see [`resources`]).
    #[serde(default)]
    pub resources: bool,
    /// `true`: the server's prompts are offered as the DM's suggested
    /// prompts (see [`prompts`]).
    #[serde(default)]
    pub prompts: bool,
    /// `true`: the tools the server runs as tasks (`execution.taskSupport`
    /// `required` or `optional`) are called as tasks: the turn keeps the
    /// task's id and polls it, from a continuation when it outlasts an
    /// invocation, and cancels it when the turn gives up on it (see
    /// [`tasks`]).
    #[serde(default)]
    pub tasks: bool,
    /// How long a turn waits for one of its tasks before it cancels it;
    /// default and at most 900 s.
    #[serde(default)]
    pub task_wait_secs: Option<u64>,
}

fn all_tools() -> Vec<String> {
    vec!["*".to_owned()]
}

/// Which of a server's tools wait for a human's Approve.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RequiresApproval {
    /// Those the server does not mark `readOnlyHint: true`.
    #[default]
    Auto,
    Always,
    Never,
}

impl<'de> Deserialize<'de> for RequiresApproval {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Bool(true) => Ok(Self::Always),
            Value::Bool(false) => Ok(Self::Never),
            Value::String(word) if word == "auto" => Ok(Self::Auto),
            other => {
                Err(serde::de::Error::custom(format!("requires_approval must be \"auto\", true or false, not {other}")))
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum McpConfigError {
    #[error("mcp server {name:?}: {reason}")]
    Invalid { name: String, reason: String },
    #[error("mcp server {name}: a header's {reason}")]
    Unresolved { name: String, reason: references::Unresolved },
}

/// A server's configuration, checked; what to connect to.
fn endpoint(
    config: &McpServerConfig,
    lookup: &impl Fn(&Reference) -> Option<String>,
) -> Result<McpEndpoint, McpConfigError> {
    let invalid = |reason: &str| McpConfigError::Invalid { name: config.name.clone(), reason: reason.to_owned() };
    if config.name.is_empty()
        || config.name.len() > 32
        || !config.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(invalid("the name must be 1 to 32 of a-z, A-Z, 0-9, _ and -"));
    }
    let url = url::Url::parse(&config.url).map_err(|err| invalid(&format!("url {:?}: {err}", config.url)))?;
    if !matches!(url.scheme(), "https" | "http") || url.host_str().is_none() {
        return Err(invalid("the url must be http(s) with a host"));
    }
    if config.approvers.as_ref().is_some_and(Vec::is_empty) {
        return Err(invalid("approvers is empty: nobody could approve its calls"));
    }
    if config.task_wait_secs.is_some_and(|secs| secs == 0 || secs > tasks::MAX_TASK_WAIT.as_secs()) {
        return Err(invalid(&format!("task_wait_secs must be from 1 to {}", tasks::MAX_TASK_WAIT.as_secs())));
    }
    if config.task_wait_secs.is_some() && !config.tasks {
        return Err(invalid("task_wait_secs is set but tasks is not: no call runs as a task"));
    }
    if config.timeout_secs.is_some_and(|secs| secs == 0 || secs > MAX_TIMEOUT_SECS) {
        return Err(invalid(&format!("timeout_secs must be from 1 to {MAX_TIMEOUT_SECS}")));
    }
    let mut headers = Vec::new();
    for (name, value) in &config.headers {
        let value = references::resolve(value, lookup)
            .map_err(|reason| McpConfigError::Unresolved { name: config.name.clone(), reason })?;
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err()
            || reqwest::header::HeaderValue::from_str(&value).is_err()
        {
            return Err(invalid(&format!("header {name:?} is not a valid header")));
        }
        headers.push((name.clone(), value));
    }
    let signing = match &config.auth {
        Some(tools_registry::auth::ToolAuth::OAuth(_)) => {
            if config.headers.keys().any(|name| name.eq_ignore_ascii_case("authorization")) {
                return Err(invalid(
                    "a server that acts as the person (auth.oauth) may not set its own Authorization header",
                ));
            }
            if config.resources || config.prompts || config.tasks {
                return Err(invalid(
                    "resources, prompts and tasks are not yet used with a server that acts as the person (auth.oauth)",
                ));
            }
            None
        }
        Some(auth) => {
            if config.headers.keys().any(|name| name.eq_ignore_ascii_case("authorization")) {
                return Err(invalid("a server signed with aws_iam may not set its own Authorization header"));
            }
            Some(auth.scope_for(&url).map_err(|reason| invalid(&reason.to_string()))?)
        }
        None => None,
    };
    Ok(McpEndpoint {
        name: config.name.clone(),
        url: config.url.clone(),
        headers,
        signing,
        elicitation: config.elicitation,
        tasks: config.tasks,
    })
}

/// What a server's headers name (`${env:NAME}`, `${secret:NAME}`).
pub fn references(config: &McpServerConfig) -> Vec<Reference> {
    references::named(config.headers.values())
}

/// The servers' tools, discovered now. `taken` holds the names already
/// used by other tools; an unusable server loses only its own tools.
pub async fn mcp_tools(
    configs: &[McpServerConfig],
    connector: &dyn McpConnector,
    lookup: impl Fn(&Reference) -> Option<String>,
    taken: &HashSet<String>,
    deadline: Duration,
) -> Result<Vec<Tool>, McpConfigError> {
    Ok(discover_tools(configs, connector, lookup, taken, deadline).await?.0)
}

/// As [`mcp_tools`], with what is not offered and why: a server that is
/// down, a tool its `tools` do not list or its `deny` names.
pub async fn discover_tools(
    configs: &[McpServerConfig],
    connector: &dyn McpConnector,
    lookup: impl Fn(&Reference) -> Option<String>,
    taken: &HashSet<String>,
    deadline: Duration,
) -> Result<(Vec<Tool>, Vec<Unoffered>), McpConfigError> {
    let endpoints = checked(configs, &lookup)?;
    // A server that acts as the person lists its tools to a person's
    // token, not at start-up (see `as_person`).
    let found = join_all(configs.iter().zip(&endpoints).map(|(config, endpoint)| async move {
        if as_person::acts_as_person(config) {
            return None;
        }
        let found = discover(connector, endpoint, deadline, false).await;
        Some(found.map(|(session, listed, _)| (ServerSession::opened(endpoint.clone(), session, None), listed)))
    }))
    .await;
    Ok(offered(configs, &endpoints, found, taken))
}

/// Every server's endpoint, its headers resolved; each name once.
fn checked(
    configs: &[McpServerConfig],
    lookup: &impl Fn(&Reference) -> Option<String>,
) -> Result<Vec<McpEndpoint>, McpConfigError> {
    let endpoints = configs.iter().map(|config| endpoint(config, lookup)).collect::<Result<Vec<_>, _>>()?;
    let mut servers = HashSet::new();
    if let Some(twice) = configs.iter().find(|config| !servers.insert(&config.name)) {
        return Err(McpConfigError::Invalid { name: twice.name.clone(), reason: "two servers have this name".into() });
    }
    Ok(endpoints)
}

/// What each server listed (or why it could not), with its session.
type Found = Option<Result<(Arc<ServerSession>, Vec<McpToolInfo>), McpError>>;

/// The tools offered from what each server listed, namespaced; the rest in
/// the second list with why.
fn offered(
    configs: &[McpServerConfig],
    endpoints: &[McpEndpoint],
    found: Vec<Found>,
    taken: &HashSet<String>,
) -> (Vec<Tool>, Vec<Unoffered>) {
    let (mut tools, mut unoffered) = (Vec::new(), Vec::new());
    let mut names: HashSet<String> = taken.clone();
    for ((config, endpoint), found) in configs.iter().zip(endpoints).zip(found) {
        let Some(found) = found else { continue };
        let (session, listed) = match found {
            Ok(found) => found,
            Err(err) => {
                // A URL may carry a credential (`?token=`), an error the server's words.
                let redactor = redact::Redactor::global();
                let (url, reason) = (redactor.redact(&endpoint.url), redactor.redact(&err.to_string()).into_owned());
                warn!(server = %config.name, %url, error = %reason, "MCP server unavailable at start-up: its tools are not offered");
                unoffered
                    .push(Unoffered { name: format!("{}__*", config.name), reason: format!("server down: {reason}") });
                continue;
            }
        };
        let wanted = wanted(config, listed, &mut unoffered);
        let count = wanted.len();
        // Named first, so a server tool of the same name never takes it.
        let reader = config.resources.then(|| {
            let name = unique_name(&config.name, resources::READ_RESOURCE, &mut names);
            tools.push(resources::read_resource_tool(config, name.clone(), session.clone()));
            name
        });
        for info in wanted {
            let name = unique_name(&config.name, &info.name, &mut names);
            let runner = McpTool {
                tool: info.name.clone(),
                session: session.clone(),
                timeout: timeout(config),
                elicitation: config.elicitation,
                tasks: config.tasks.then(|| tasks::wait(config)),
                reader: reader.clone(),
                trusted_read_only: config.requires_approval == RequiresApproval::Auto && info.read_only == Some(true),
            };
            tools.push(tool(config, name, info, runner));
        }
        info!(server = %config.name, tools = count, "MCP server ready");
    }
    (tools, unoffered)
}

/// The listed tools the configuration offers (`tools`, not `deny`), at
/// most [`MAX_TOOLS_PER_SERVER`]; the rest in `unoffered`, with why.
fn wanted(config: &McpServerConfig, listed: Vec<McpToolInfo>, unoffered: &mut Vec<Unoffered>) -> Vec<McpToolInfo> {
    let mut wanted = Vec::new();
    for tool in listed {
        let denied = config.deny.iter().find(|glob| glob_matches(glob, &tool.name));
        let listed = config.tools.iter().any(|pattern| glob_matches(pattern, &tool.name));
        let reason = match (denied, listed) {
            (Some(glob), _) => format!("denied by mcp_servers[{}].deny {glob:?}", config.name),
            (None, false) => format!("not in mcp_servers[{}].tools", config.name),
            (None, true) => {
                wanted.push(tool);
                continue;
            }
        };
        unoffered.push(Unoffered { name: format!("{}__{}", config.name, tool.name), reason });
    }
    if wanted.len() > MAX_TOOLS_PER_SERVER {
        warn!(server = %config.name, offered = wanted.len(), kept = MAX_TOOLS_PER_SERVER, "MCP server offers more tools than are advertised: narrow its `tools`");
        wanted.truncate(MAX_TOOLS_PER_SERVER);
    }
    wanted
}

fn timeout(config: &McpServerConfig) -> Duration {
    Duration::from_secs(config.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS))
}

/// A session with the server, its tools and, when `with_prompts`, its
/// prompts (a server that fails to list them offers none).
async fn discover(
    connector: &dyn McpConnector,
    endpoint: &McpEndpoint,
    deadline: Duration,
    with_prompts: bool,
) -> Result<(Arc<dyn McpSession>, Vec<McpToolInfo>, Vec<McpPromptInfo>), McpError> {
    let work = async {
        let session = connector.connect(endpoint).await?;
        let tools = session.list_tools().await?;
        let prompts = match with_prompts {
            true => session.list_prompts().await.unwrap_or_else(|err| {
                let reason = redact::Redactor::global().redact(&err.to_string()).into_owned();
                warn!(server = %endpoint.name, error = %reason, "MCP server's prompts not listed: none are suggested");
                Vec::new()
            }),
            false => Vec::new(),
        };
        Ok((session, tools, prompts))
    };
    tokio::time::timeout(deadline, work).await.map_err(|_| McpError::TimedOut(deadline))?
}

fn tool(config: &McpServerConfig, name: String, info: McpToolInfo, runner: impl RunTool + 'static) -> Tool {
    let read_only = info.read_only == Some(true);
    let effect = match config.requires_approval {
        RequiresApproval::Auto if read_only => Effect::ReadOnly,
        RequiresApproval::Auto | RequiresApproval::Always => Effect::ChangesThings,
        RequiresApproval::Never => Effect::ReadOnly,
    };
    // MCP's default for a tool that is not read-only is "destructive".
    let destructive = !read_only && info.destructive != Some(false);
    let description = match info.description.trim() {
        "" => format!("The tool {} of the MCP server {}.", info.name, config.name),
        text => text.chars().take(MAX_DESCRIPTION_CHARS).collect(),
    };
    let spec = ToolSpec { name, description, input_schema: info.input_schema };
    Tool::with_servers_schema(spec, effect, timeout(config), runner)
        .with_approvers(config.approvers.clone())
        .destructive(destructive)
        .grantable_as((config.thread_grants != Some(false)).then(|| format!("{}__*", config.name)))
}

/// `{server}__{tool}` within the model's rules, not yet in `taken` (and
/// added to it). A name cut to fit keeps a hash of the whole, so two long
/// names stay two; the same server and tool always get the same name, so
/// a turn saved before a restart still names its tools.
fn unique_name(server: &str, tool: &str, taken: &mut HashSet<String>) -> String {
    let full: String = format!("{server}__{tool}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    let base = if full.len() <= MAX_TOOL_NAME {
        full
    } else {
        use sha2::Digest;
        let digest = hex::encode(&sha2::Sha256::digest(format!("{server}__{tool}"))[..4]);
        format!("{}_{digest}", &full[..MAX_TOOL_NAME - 9])
    };
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        let suffix = format!("_{n}");
        name = format!("{}{suffix}", &base[..base.len().min(MAX_TOOL_NAME - suffix.len())]);
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// A server's session: the one discovery opened, or one opened at the
/// first call when the server's tools came from its kept list; and what
/// the server's list says since it said its tools changed.
struct ServerSession {
    endpoint: McpEndpoint,
    connector: Option<Arc<dyn McpConnector>>,
    open: tokio::sync::Mutex<Option<Arc<dyn McpSession>>>,
    live: std::sync::Mutex<Live>,
    /// Keeps a changed list and tells the worker (a server whose tools
    /// come from a kept list; see `kept`).
    keeper: Option<kept::Keeper>,
}

/// The server's tools as listed after its last `tools/list_changed`, and
/// how many changes that listing answers.
#[derive(Default)]
struct Live {
    seen: u64,
    tools: Option<Vec<McpToolInfo>>,
}

impl ServerSession {
    fn opened(endpoint: McpEndpoint, session: Arc<dyn McpSession>, keeper: Option<kept::Keeper>) -> Arc<Self> {
        Arc::new(Self {
            endpoint,
            connector: None,
            open: tokio::sync::Mutex::new(Some(session)),
            live: Default::default(),
            keeper,
        })
    }

    fn at_first_call(
        endpoint: McpEndpoint,
        connector: Arc<dyn McpConnector>,
        keeper: Option<kept::Keeper>,
    ) -> Arc<Self> {
        Arc::new(Self {
            endpoint,
            connector: Some(connector),
            open: tokio::sync::Mutex::new(None),
            live: Default::default(),
            keeper,
        })
    }

    /// The session for a call; a failure to open it is the call's error.
    async fn for_call(&self) -> Result<Arc<dyn McpSession>, ToolError> {
        self.get().await.map_err(|err| call_error(&self.endpoint.name, err, false))
    }

    /// Lists the server's tools again when it said they changed since the
    /// last listing, and keeps the new list (the worker assembles itself
    /// anew from it before its next step). A listing that fails is tried
    /// again at the next call.
    async fn follow_changes(&self, session: &Arc<dyn McpSession>) {
        let changes = session.tool_list_changes();
        if self.live.lock().expect("live lock").seen >= changes {
            return;
        }
        let server = &self.endpoint.name;
        let tools = match tokio::time::timeout(DISCOVERY_DEADLINE, session.list_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(err)) => {
                let reason = redact::Redactor::global().redact(&err.to_string()).into_owned();
                warn!(%server, error = %reason, "MCP server changed its tools and could not be listed: tried again at its next call");
                return;
            }
            Err(_) => {
                warn!(%server, "MCP server changed its tools and did not list them in time: tried again at its next call");
                return;
            }
        };
        info!(%server, tools = tools.len(), "MCP server changed its tools: removed ones are refused, the next step offers the new list");
        {
            let mut live = self.live.lock().expect("live lock");
            if live.seen < changes {
                *live = Live { seen: changes, tools: Some(tools.clone()) };
            }
        }
        if let Some(keeper) = &self.keeper {
            keeper.keep(server, tools).await;
        }
    }

    /// Why the server's `tool` may not be called now, if its list since it
    /// changed says so: the tool is gone, or it no longer says it is
    /// read-only while it was offered to run without approval for that.
    fn refusal(&self, tool: &str, trusted_read_only: bool) -> Option<String> {
        let live = self.live.lock().expect("live lock");
        let server = &self.endpoint.name;
        match live.tools.as_ref()?.iter().find(|listed| listed.name == tool) {
            None => Some(format!(
                "The MCP server {server} no longer offers the tool {tool}: it changed its tools during this \
                 conversation. Do not call it again; the tools it offers now are offered from the next step."
            )),
            Some(listed) if trusted_read_only && listed.read_only != Some(true) => Some(format!(
                "The MCP server {server} changed the tool {tool}: it no longer says it only reads, so it now needs \
                 a person's approval. Call it again from the next step to ask for it."
            )),
            Some(_) => None,
        }
    }

    /// The session, opened now if it is not yet (once; a failed opening is
    /// tried again by the next call).
    async fn get(&self) -> Result<Arc<dyn McpSession>, McpError> {
        let mut open = self.open.lock().await;
        if let Some(session) = open.as_ref() {
            return Ok(session.clone());
        }
        let connector = self.connector.as_ref().ok_or_else(|| McpError::Unreachable("no session".into()))?;
        let session = tokio::time::timeout(DISCOVERY_DEADLINE, connector.connect(&self.endpoint))
            .await
            .map_err(|_| McpError::TimedOut(DISCOVERY_DEADLINE))??;
        *open = Some(session.clone());
        Ok(session)
    }
}

/// One server tool, ready to call.
struct McpTool {
    tool: String,
    session: Arc<ServerSession>,
    timeout: Duration,
    /// The server may ask the person who asked to open links.
    elicitation: bool,
    /// The tools the server runs as tasks are called as tasks, each waited
    /// for this long at most; `None`: tasks are off.
    tasks: Option<Duration>,
    /// The server's `read_resource` tool, which its results' links name.
    reader: Option<String>,
    /// Offered to run without approval because the server said it only
    /// reads (`"auto"`): a call after the server took that back is refused.
    trusted_read_only: bool,
}

impl RunTool for McpTool {
    fn run(&self, input: Value, context: CallContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let Value::Object(arguments) = input else {
                return Err("The input must be a JSON object.".into());
            };
            let session = self.session.for_call().await?;
            self.session.follow_changes(&session).await;
            if let Some(refusal) = self.session.refusal(&self.tool, self.trusted_read_only) {
                return Err(refusal.into());
            }
            if let Some(wait) = self.tasks {
                match session.task_support(&self.tool).await {
                    Ok(TaskSupport::Required | TaskSupport::Optional) => {
                        let started = session.start_task(&self.tool, arguments).await;
                        return started
                            .map(|task| ToolOutput::Task(tasks::running(task, wait)))
                            .map_err(|err| call_error(&self.session.endpoint.name, err, false));
                    }
                    Ok(TaskSupport::Forbidden) => {}
                    Err(err) => return Err(call_error(&self.session.endpoint.name, err, false)),
                }
            }
            let links = context.asks.as_ref().filter(|_| self.elicitation);
            let called = match links {
                Some(links) => session.call_tool_eliciting(&self.tool, arguments, self.timeout, links.0.clone()).await,
                None => session.call_tool(&self.tool, arguments, self.timeout).await,
            };
            // A change the server announced while answering is followed now,
            // so the next step sees it even if no call of it follows.
            self.session.follow_changes(&session).await;
            match called {
                Ok(result) => output(result, self.reader.as_deref()),
                Err(McpError::LinkRequired(requests)) => {
                    Err(links_first(&self.session.endpoint.name, &requests, links).await)
                }
                Err(err) => Err(call_error(&self.session.endpoint.name, err, false)),
            }
        })
    }

    fn poll_task<'a>(&'a self, task: &'a RunningTask) -> TaskFuture<'a, TaskPoll> {
        Box::pin(tasks::poll(&self.session, task, self.reader.as_deref()))
    }

    fn cancel_task<'a>(&'a self, task: &'a RunningTask) -> TaskFuture<'a, ()> {
        Box::pin(tasks::cancel(&self.session, task))
    }
}

/// A call that needs the person to open links first
/// (`URLElicitationRequiredError`): each one this bot may show is shown to
/// them alone, and the model is told what to say.
async fn links_first(server: &str, requests: &[LinkRequest], links: Option<&Asks>) -> ToolError {
    let Some(links) = links else {
        return format!(
            "The MCP server {server} needs the person who asked to open a link first, and this deployment does not \
             show a server's links (elicitation is off for it). Tell them an operator must turn it on; do not retry."
        )
        .into();
    };
    let mut shown = 0;
    for request in requests.iter().take(MAX_LINKS_SHOWN) {
        shown += usize::from(links.0.show_link(server, request).await);
    }
    if shown == 0 {
        return format!(
            "The MCP server {server} asked the person who asked to open a link this bot may not show (only https \
             links to a named host are shown). Tell them this tool cannot be used now; do not retry."
        )
        .into();
    }
    format!(
        "The MCP server {server} needs the person who asked to open {shown} link(s) first. They were shown to them \
         alone, in this thread, with a button. Tell them to open it and finish there, then ask again; do not call \
         the tool again now."
    )
    .into()
}

/// The most links one call shows the person.
const MAX_LINKS_SHOWN: usize = 3;

fn call_error(server: &str, err: McpError, as_person: bool) -> ToolError {
    let message = match err {
        McpError::Unauthorized { status } if as_person => format!(
            "The MCP server {server} refused the person's sign-in (HTTP {status}): it may have been revoked or lack \
             a permission. Tell them; they can disconnect it on the app's Home tab and connect again when asked."
        ),
        McpError::Unauthorized { status } => format!(
            "The MCP server {server} refused our credentials (HTTP {status}): its token is missing, wrong or revoked. Tell the person an operator must fix the server's credentials; do not retry."
        ),
        McpError::TimedOut(after) => {
            format!("The tool did not finish within {} s and was cancelled.", after.as_secs_f64())
        }
        McpError::Unreachable(reason) => format!("The MCP server {server} could not be reached: {reason}"),
        McpError::Server(reason) => format!("The MCP server {server} answered with an error: {reason}"),
        McpError::LinkRequired(_) => format!(
            "The MCP server {server} needs the person to open a link first, which is not shown for this kind of \
             call. Tell them; do not retry."
        ),
    };
    message.into()
}

/// What the model reads of a result; links and embedded resources name
/// `reader`, the server's `read_resource` tool, when it has one.
fn output(result: McpCallResult, reader: Option<&str>) -> Result<ToolOutput, ToolError> {
    let text = result.content.iter().map(|part| describe(part, reader)).collect::<Vec<_>>().join("\n");
    if result.is_error {
        return Err(if text.trim().is_empty() { "The tool failed without saying why.".into() } else { text.into() });
    }
    let only_text = result.content.iter().all(|part| matches!(part, McpContent::Text(_)));
    match result.structured {
        // Servers send the structured result again as text, for older
        // clients: once is enough.
        Some(structured)
            if only_text
                && (text.trim().is_empty()
                    || serde_json::from_str::<Value>(&text).ok() == Some(structured.clone())) =>
        {
            Ok(ToolOutput::Json(structured))
        }
        Some(structured) => Ok(ToolOutput::Json(serde_json::json!({ "structured": structured, "content": text }))),
        None => Ok(ToolOutput::Text(text)),
    }
}

fn describe(part: &McpContent, reader: Option<&str>) -> String {
    let read_with = |uri: &str| match reader {
        Some(reader) if !uri.is_empty() => format!("; read it with {reader}"),
        _ => String::new(),
    };
    match part {
        McpContent::Text(text) => text.clone(),
        McpContent::Media { kind, mime_type, bytes } => format!("[{kind}: {mime_type}, {} (not shown)]", size(*bytes)),
        McpContent::Resource { uri, mime_type, bytes } => format!(
            "[resource: {uri}, {}{} (not shown{})]",
            mime_type.as_deref().map(|m| format!("{m}, ")).unwrap_or_default(),
            size(*bytes),
            read_with(uri)
        ),
        McpContent::Link { uri, name, mime_type } => format!(
            "[link: {} <{uri}>{}{}]",
            name.chars().take(MAX_LINK_NAME_CHARS).collect::<String>(),
            mime_type.as_deref().map(|m| format!(", {m}")).unwrap_or_default(),
            read_with(uri)
        ),
    }
}

fn size(bytes: usize) -> String {
    match bytes {
        0..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{:.1} kB", bytes as f64 / 1e3),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

mod as_person;
mod kept;
pub mod prompts;
pub mod resources;
pub mod tasks;
pub use as_person::person_tools;
pub use kept::{KeptLists, REFRESH_AFTER_SECS, kept_or_discovered_tools, tool_list_key};

#[cfg(test)]
mod tests;
