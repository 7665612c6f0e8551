//! Building the worker: the one way, used by the Lambda function
//! (`functions/worker`) and the local runner (`infra/local`) alike, so the
//! runner is the same bot: the same assistant configuration, system prompt,
//! tools and policy, whatever is behind the ports.

use crate::AssistantConfig;
use assistant_core::catalog::ServiceCatalog;
use assistant_core::mcp::McpConnector;
use assistant_core::model::OpenModel;
use assistant_core::ports::{ArtifactStore, Bounded, PortError, RequestSigner, SecretStore};
use assistant_core::pricing::ModelPrices;
use assistant_core::reading::ReadingBudget;
use assistant_core::signals::{AwsConnector, KnowledgeBases};
use std::collections::HashMap;
use std::sync::Arc;
use tools_registry::references::Reference;
use tools_registry::{ChannelRule, ToolDefinitionError, ToolPolicy, ToolRegistry, Unoffered};
use tracing::info;
use worker_identity::sign_in::Asking;
use worker_turn::enhancer::Enhancer;
use worker_turn::{Limits, Worker};

/// The system prompt used when the deployment configures none.
pub const DEFAULT_SYSTEM_PROMPT: &str = include_str!("prompts/system.md");

/// Everything outside the worker, as ports.
pub struct WorkerPorts {
    /// What the turn loop itself talks to (the table, the queues, the
    /// bucket, Slack, the model, the clock): handed to the worker as is.
    pub core: worker_turn::Ports,
    /// Opens the prompt enhancer's cheap model by its id.
    pub models: Arc<dyn OpenModel>,
    /// Opens the configured guardrail (`guardrail` in the configuration).
    pub guardrails: Arc<dyn assistant_core::guardrail::OpenGuardrail>,
    /// The process's HTTP client, shared by the HTTP tools. It must not
    /// follow redirects (`adapters_slack::http_client()` does not).
    pub http: reqwest::Client,
    /// Signs the calls of tools with `"auth": "aws_iam"` (the process's one
    /// AWS signer).
    pub signer: Arc<dyn RequestSigner>,
    /// Opens CloudWatch and Logs for the AWS tools, per account.
    pub aws: Arc<dyn AwsConnector>,
    /// Bedrock knowledge bases' `Retrieve`.
    pub knowledge: Arc<dyn KnowledgeBases>,
    /// Opens sessions with the configured MCP servers.
    pub mcp: Arc<dyn McpConnector>,
    /// Where `${secret:NAME}` in tools' headers is read, once, at start-up.
    pub secrets: Arc<dyn SecretStore>,
    /// The action tokens the ingress kept with its claims (Slack search as
    /// the person who asked).
    pub action_tokens: Arc<dyn assistant_core::ports::ActionTokens>,
    /// Slack canvases (`write_postmortem`).
    pub canvases: Arc<dyn assistant_core::ports::Canvases>,
    /// The sign-in of tools that act as the person who asked: the sealed
    /// token vault, the sign-in states, the providers' token endpoints.
    /// `None` where the deployment has no token key; then no tool may say
    /// `auth: {"oauth": …}`.
    pub sign_in: Option<worker_identity::sign_in::SignInPorts>,
    /// Where the channels that answer every question are published for the
    /// ingress (the turns table); none where no ingress reads them.
    pub every_question: Option<assistant_core::response_modes::EveryQuestionChannels>,
    /// Where settled turns are remembered per channel (`recall`,
    /// `forget_thread`); `None`: no memory and no such tools.
    pub memory: Option<assistant_core::memory::ChannelMemory>,
    /// Where alerts' incidents are kept, and how their threads become the
    /// bot's; `None`: alerts are dropped (the evals have none).
    pub incidents: Option<worker_incidents::IncidentPorts>,
}

/// Why the worker could not be built. Each names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot read {key} from the artifact store: {source}")]
    Read {
        key: String,
        #[source]
        source: PortError,
    },
    #[error("{key} is {bytes} bytes: an assistant configuration is at most {max} bytes", max = crate::fallback::MAX_CONFIG_BYTES)]
    TooLarge { key: String, bytes: u64 },
    #[error("{origin} is not a valid assistant configuration: {issues}")]
    Invalid {
        origin: String,
        #[source]
        issues: crate::ConfigIssues,
    },
    #[error("{origin} is not a valid assistant configuration: {source}")]
    Config {
        origin: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("the system prompt {0} named in the assistant configuration does not exist")]
    MissingPrompt(String),
    #[error("{0}, named in the assistant configuration, does not exist in the artifact bucket")]
    Missing(String),
    #[error("the tools cannot be defined: {0}")]
    Tools(#[from] ToolDefinitionError),
    #[error(transparent)]
    HttpTools(#[from] tools_http::HttpToolError),
    #[error(transparent)]
    McpServers(#[from] tools_mcp::McpConfigError),
    #[error(transparent)]
    SignIn(#[from] worker_identity::sign_in::SignInConfigError),
    #[error(
        "budgets are set, but the prices of model {model} are unknown, so no turn's cost could be counted: set model_prices"
    )]
    BudgetsUnpriced { model: String },
    #[error(
        "{tool} names ${{env:{variable}}}, which is not in the configuration's allowed_env: list it there (never AWS_* or SLACK_*)"
    )]
    EnvNotAllowed { tool: String, variable: String },
    #[error(
        "{tool} names ${{secret:{name}}}: a secret's name is 1 to 256 of a-z, A-Z, 0-9 and /_+=.@- (the deployment's prefix is added)"
    )]
    SecretName { tool: String, name: String },
    #[error("{tool} names ${{secret:{name}}}, which the secret store does not have: create it, or fix the name")]
    SecretMissing { tool: String, name: String },
    #[error("{tool} names ${{secret:{name}}}, which cannot be read: {source}")]
    SecretUnreadable {
        tool: String,
        name: String,
        #[source]
        source: PortError,
    },
}

impl StartupError {
    /// A read that failed (the bucket, a secret): the same start may well
    /// succeed in a moment, so it fails and is retried, where a
    /// configuration that is wrong falls back (see [`crate::config_fallback`]):
    /// a throttled read at a burst of cold starts must not put workers on
    /// the defaults.
    pub fn is_transient(&self) -> bool {
        matches!(self, StartupError::Read { .. } | StartupError::SecretUnreadable { .. })
    }
}

/// Secrets Manager's characters; the store adds the deployment's prefix.
fn is_secret_name(name: &str) -> bool {
    (1..=256).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || "/_+=.@-".contains(c))
}

/// Every secret the tools name, read once and concurrently. The values are
/// also given to the redactor, so a tool result that echoes one (an API
/// that reflects its request headers) never carries it further.
async fn read_secrets(
    store: &dyn SecretStore,
    named: &[(String, Vec<Reference>)],
) -> Result<HashMap<String, String>, StartupError> {
    let mut wanted: Vec<(&str, &str)> = Vec::new();
    for (tool, references) in named {
        for reference in references {
            if let Reference::Secret(name) = reference
                && !wanted.iter().any(|(_, known)| known == name)
            {
                wanted.push((tool, name));
            }
        }
    }
    let reads = wanted.iter().map(|(tool, name)| async move {
        match store.secret(name).await {
            Ok(Some(value)) => Ok((name.to_string(), value)),
            Ok(None) => Err(StartupError::SecretMissing { tool: tool.to_string(), name: name.to_string() }),
            Err(source) => {
                Err(StartupError::SecretUnreadable { tool: tool.to_string(), name: name.to_string(), source })
            }
        }
    });
    let secrets = futures_util::future::join_all(reads).await.into_iter().collect::<Result<HashMap<_, _>, _>>()?;
    if !secrets.is_empty() {
        info!(secrets = secrets.len(), "secrets read");
    }
    Ok(secrets)
}

/// The assistant configuration object at `key` in the artifact store, as
/// read at `now` (none there: the defaults apply, see
/// [`ReadConfiguration::parse`](crate::kept::ReadConfiguration::parse)).
/// One larger than [`MAX_CONFIG_BYTES`](crate::fallback::MAX_CONFIG_BYTES)
/// is refused unread.
pub async fn read_config(
    artifacts: &dyn ArtifactStore,
    key: &str,
    now: i64,
) -> Result<crate::kept::ReadConfiguration, StartupError> {
    let max = crate::fallback::MAX_CONFIG_BYTES;
    let found =
        artifacts.get_at_most(key, max).await.map_err(|source| StartupError::Read { key: key.to_owned(), source })?;
    let bytes = match found {
        Bounded::Absent => None,
        Bounded::Found(bytes) => Some(bytes),
        Bounded::TooLarge { bytes } => return Err(StartupError::TooLarge { key: key.to_owned(), bytes }),
    };
    Ok(crate::kept::ReadConfiguration { bytes, read_at: now })
}

/// An assistant configuration's JSON; `origin` names where it came from in
/// the error, which lists every field found wrong
/// ([`AssistantConfig::check`]).
pub fn parse_config(json: &[u8], origin: &str) -> Result<AssistantConfig, StartupError> {
    AssistantConfig::check(json).map_err(|issues| StartupError::Invalid { origin: origin.to_owned(), issues })
}

/// The `${env:…}` and `${secret:…}` each HTTP tool and MCP server names,
/// and every one the assembly refuses before reading anything: a variable
/// not in `allowed_env`, a secret's name Secrets Manager would refuse.
fn named_references(assistant: &AssistantConfig) -> (Vec<(String, Vec<Reference>)>, Vec<StartupError>) {
    let named: Vec<(String, Vec<Reference>)> = assistant
        .http_tools
        .iter()
        .map(|tool| (format!("http tool {}", tool.name), tools_http::references(tool)))
        .chain(
            assistant
                .mcp_servers
                .iter()
                .map(|server| (format!("mcp server {}", server.name), tools_mcp::references(server))),
        )
        .collect();
    let mut refused = Vec::new();
    for (tool, references) in &named {
        for reference in references {
            match reference {
                Reference::Env(variable) if !assistant.allowed_env.contains(variable) => {
                    refused.push(StartupError::EnvNotAllowed { tool: tool.clone(), variable: variable.clone() });
                }
                Reference::Secret(name) if !is_secret_name(name) => {
                    refused.push(StartupError::SecretName { tool: tool.clone(), name: name.clone() });
                }
                _ => {}
            }
        }
    }
    (named, refused)
}

/// What `local --config FILE --check` reports before an upload: every
/// field found wrong, with its path ([`AssistantConfig::check`]), then
/// what the assembly would refuse without reading anything (the tools'
/// variables and secrets' names, the HTTP tools' definitions). What needs
/// the deployment (the objects it names, the secrets' values, the MCP
/// servers) is checked when a worker starts, and reported then.
pub fn check_config(json: &[u8]) -> Result<AssistantConfig, Vec<String>> {
    let assistant =
        AssistantConfig::check(json).map_err(|issues| issues.0.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    let (_, refused) = named_references(&assistant);
    let mut problems: Vec<String> = refused.iter().map(ToString::to_string).collect();
    // Every reference stands for a value here: only the definitions are checked.
    let placeholder = |_: &Reference| Some("placeholder".to_owned());
    let signer: Arc<dyn RequestSigner> = Arc::new(assistant_core::ports::NoSigner);
    let http = reqwest::Client::new();
    for tool in &assistant.http_tools {
        let one = std::slice::from_ref(tool);
        if let Err(err) = tools_http::http_tools(one, http.clone(), signer.clone(), placeholder) {
            problems.push(err.to_string());
        }
    }
    match problems.is_empty() {
        true => Ok(assistant),
        false => Err(problems.into_iter().map(|problem| redact::redact(&problem).into_owned()).collect()),
    }
}

/// The worker for this configuration: its system prompt (read from the
/// artifact store when the configuration names one), the built-in, docs and
/// declared HTTP tools and the MCP servers' tools (from their kept lists,
/// or discovered now under [`tools_mcp::DISCOVERY_DEADLINE`]) under the
/// configured policy. `env`
/// resolves the `${env:NAME}` in HTTP tools' and MCP servers' headers (for
/// the names in `allowed_env` only), `ports.secrets` their `${secret:NAME}`.
pub async fn assemble(
    ports: WorkerPorts,
    assistant: &AssistantConfig,
    limits: Limits,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Worker, StartupError> {
    // The objects the configuration names, read together: the system
    // prompt, the service catalog and the enhancer's prompt.
    let read = |key: Option<&String>, missing: fn(String) -> StartupError| {
        let artifacts = ports.core.artifacts.clone();
        let key = key.cloned();
        async move {
            let Some(key) = key else { return Ok(None) };
            let found = artifacts.get(&key).await.map_err(|source| StartupError::Read { key: key.clone(), source })?;
            found.map(|bytes| Some((key.clone(), bytes))).ok_or(missing(key))
        }
    };
    let (system_prompt, catalog, enhancer_prompt) = futures_util::future::try_join3(
        read(assistant.system_prompt_key.as_ref(), StartupError::MissingPrompt),
        read(assistant.service_catalog_key.as_ref(), StartupError::Missing),
        read(assistant.prompt_enhancer.as_ref().and_then(|config| config.prompt_key.as_ref()), StartupError::Missing),
    )
    .await?;
    let system_prompt = match system_prompt {
        Some((_, prompt)) => String::from_utf8_lossy(&prompt).into_owned(),
        None => DEFAULT_SYSTEM_PROMPT.to_owned(),
    };
    let catalog = match catalog {
        Some((key, json)) => {
            let catalog: ServiceCatalog =
                serde_json::from_slice(&json).map_err(|source| StartupError::Config { origin: key, source })?;
            Some(Arc::new(catalog))
        }
        None => None,
    };
    let (named, refused) = named_references(assistant);
    if let Some(refused) = refused.into_iter().next() {
        return Err(refused);
    }
    let secrets = read_secrets(ports.secrets.as_ref(), &named).await?;
    // Only the variables the configuration lists are ever read.
    let lookup = |reference: &Reference| {
        let value = match reference {
            Reference::Env(name) => assistant.allowed_env.contains(name).then(|| env(name)).flatten(),
            Reference::Secret(name) => secrets.get(name).cloned(),
        };
        if let Some(value) = &value {
            redact::Redactor::global().remember(value);
        }
        value
    };
    let enhancer = match &assistant.prompt_enhancer {
        Some(config) => Some(Enhancer {
            model: ports.models.open(&config.model_id),
            model_id: config.model_id.clone(),
            timeout: std::time::Duration::from_millis(config.timeout_ms),
            prompt: match &enhancer_prompt {
                Some((_, prompt)) => String::from_utf8_lossy(prompt).into_owned(),
                None => worker_turn::enhancer::DEFAULT_PROMPT.to_owned(),
            },
            catalog: catalog.clone(),
        }),
        None => None,
    };
    let mut asking: Vec<Asking> =
        assistant.http_tools.iter().filter_map(|tool| Asking::tool(&tool.name, tool.auth.as_ref())).collect();
    for server in &assistant.mcp_servers {
        asking.extend(Asking::server(&server.name, &server.url, server.auth.as_ref())?);
    }
    let (providers, lost) =
        worker_identity::sign_in::providers(asking, ports.sign_in.as_ref(), &lookup, ports.core.clock.now_unix())
            .await?;
    let sign_in = match ports.sign_in {
        Some(ports) if !providers.is_empty() => Some(worker_identity::sign_in::SignIn { ports, providers }),
        _ => None,
    };
    let mut tools = vec![
        tools_registry::builtin::current_time(ports.core.clock.clone()),
        tools_files::read_attachment(ports.core.artifacts.clone()),
        tools_files::read_result(ports.core.artifacts.clone()),
        worker_turn::answer_files::attach_result_tool(),
        worker_turn::metric_charts::chart_result_tool(),
    ];
    if let Some(memory) = &ports.memory {
        tools.extend(tools_memory::memory_tools(memory.clone(), ports.core.clock.clone()));
    }
    tools.extend(tools_docs::docs_tools(ports.core.artifacts.clone(), &assistant.docs_prefix)?);
    // Read-only and off until configured: built in, like the docs tools.
    tools.extend(
        tools_aws::aws_tools(&assistant.aws_tools, ports.aws.as_ref(), ports.core.clock.clone(), catalog).await?,
    );
    tools.extend(tools_knowledge::knowledge_tools(&assistant.knowledge_bases, ports.knowledge.clone())?);
    let built_in: Vec<String> = tools.iter().map(|tool| tool.spec().name.clone()).collect();
    // Not among the built-ins a deployment without a policy allows: what a
    // listed channel says is shown wherever the tool is allowed, so a
    // `tool_policy` rule must name the channels that may read it.
    let slack_ports = tools_slack::SlackToolPorts {
        slack: ports.core.slack.clone(),
        agent: ports.core.agent.clone(),
        tokens: ports.action_tokens.clone(),
        clock: ports.core.clock.clone(),
    };
    tools.extend(tools_slack::slack_tools(&assistant.slack_tools, slack_ports));
    tools.extend(tools_http::http_tools(&assistant.http_tools, ports.http.clone(), ports.signer.clone(), lookup)?);
    let mut taken: std::collections::HashSet<String> = tools.iter().map(|tool| tool.spec().name.clone()).collect();
    // Published by every assembly of a configuration read from the bucket
    // (none is given a publisher otherwise), after the first invocation's
    // answer (not before it), so a setting removed is removed for the
    // ingress too. Not fatal: the ingress keeps what was published before.
    let background = tools_registry::background::Background::default();
    if let Some(every_question) = ports.every_question {
        let globs = assistant.every_question_channels();
        background.spawn(async move {
            match every_question.publish(&globs).await {
                Ok(()) => info!(channels = ?globs, "every-question channels published for the ingress"),
                Err(err) => {
                    tracing::warn!(error = %err, "every-question channels not published: the ingress keeps the last ones")
                }
            }
        });
    }
    // Marked when an MCP server's tools change under this worker.
    let changed = tools_registry::changes::ToolsChanged::default();
    let discovered = tools_mcp::kept_or_discovered_tools(
        &assistant.mcp_servers,
        ports.mcp.clone(),
        &lookup,
        &taken,
        tools_mcp::DISCOVERY_DEADLINE,
        tools_mcp::KeptLists {
            cache: ports.core.artifacts.clone(),
            clock: ports.core.clock.clone(),
            background: &background,
            changed: changed.clone(),
        },
    )
    .await;
    let (discovered, mut unoffered, servers_prompts) = discovered?;
    let suggested_prompts = tools_mcp::prompts::with_configured(servers_prompts, &assistant.suggested_prompts);
    taken.extend(discovered.iter().map(|tool| tool.spec().name.clone()));
    tools.extend(discovered);
    let no_providers = std::collections::BTreeMap::new();
    let (as_person, not_offered) = tools_mcp::person_tools(
        &assistant.mcp_servers,
        sign_in.as_ref().map_or(&no_providers, |sign_in| &sign_in.providers),
        &lost,
        ports.mcp.clone(),
        ports.core.artifacts.clone(),
        &lookup,
        &mut taken,
        ports.core.clock.clone(),
    )
    .await?;
    tools.extend(as_person);
    unoffered.extend(not_offered);
    if assistant.slack_tools.postmortems {
        match (&ports.memory, &ports.incidents) {
            (Some(memory), Some(incidents)) => tools.push(worker_incidents::postmortem::write_postmortem(
                worker_incidents::postmortem::PostmortemPorts {
                    memory: memory.clone(),
                    incidents: incidents.incidents.clone(),
                    turns: ports.core.store.clone(),
                    records: incidents.records.clone(),
                    canvases: ports.canvases.clone(),
                    clock: ports.core.clock.clone(),
                },
            )),
            _ => unoffered.push(Unoffered {
                name: worker_incidents::postmortem::WRITE_POSTMORTEM.into(),
                reason: "this worker keeps no channel memory or incidents to draft it from".into(),
            }),
        }
    }
    let aws = &assistant.aws_tools;
    for (name, on, field) in [
        ("cloudwatch_alarms", aws.alarms.is_some(), "aws_tools.alarms"),
        ("cloudwatch_metrics", aws.metrics.is_some(), "aws_tools.metrics"),
        ("logs_query", aws.logs.is_some(), "aws_tools.logs"),
        ("search_*", !assistant.knowledge_bases.is_empty(), "knowledge_bases"),
        ("read_channel", !assistant.slack_tools.read_channels.is_empty(), "slack_tools.read_channels"),
        ("post_message", !assistant.slack_tools.post_channels.is_empty(), "slack_tools.post_channels"),
    ] {
        if !on {
            unoffered.push(Unoffered { name: name.into(), reason: format!("not configured: add {field}") });
        }
    }
    // Without a policy, only the built-in read-only tools, in every channel.
    let configured_policy = assistant.policy();
    let tool_policy = configured_policy.is_some();
    let policy = configured_policy.unwrap_or_else(|| ToolPolicy::new(vec![ChannelRule::everyone("*", built_in)]));
    // Logged once, with where the configuration came from, by the function
    // that assembles the worker (`worker assembled`).
    let assembly = worker_turn::Assembly {
        prompt: assistant.system_prompt_key.clone().unwrap_or_else(|| "bundled".to_owned()),
        docs: assistant.docs_prefix.clone(),
        http_tools: assistant.http_tools.len(),
        mcp_servers: assistant.mcp_servers.len(),
        tools: tools.len(),
        tool_policy,
    };
    // A server's links and forms for the person who asked go to the
    // responder, which shows them to that person alone.
    let asking = tools_registry::AskingPorts {
        replies: ports.core.replies.clone(),
        forms: Some(ports.core.forms.clone()),
        clock: ports.core.clock.clone(),
    };
    let tools = ToolRegistry::new(tools, policy)?.with_asking(asking).watching(changed);
    // The ops channel's alerts, for the budgets' monthly alert too.
    let ops = ports.incidents.as_ref().and_then(|incidents| incidents.ops.clone());
    let incidents = ports.incidents.map(|incident_ports| {
        worker_incidents::IncidentDesk::new(
            assistant.alerts.clone(),
            assistant.schedules.clone(),
            incident_ports,
            ports.core.agent.clone(),
            ports.core.work.clone(),
            ports.core.artifacts.clone(),
            ports.core.clock.clone(),
        )
    });
    let prices = assistant.model_prices.or_else(|| ModelPrices::for_model(ports.core.model.id()));
    let reading = assistant.reading.unwrap_or_else(|| ReadingBudget::for_model(ports.core.model.id()));
    let limits = Limits { reading, ..limits };
    if assistant.budgets.is_some() && prices.is_none() {
        return Err(StartupError::BudgetsUnpriced { model: ports.core.model.id().to_owned() });
    }
    let budgets = assistant.budgets.clone().map(|config| {
        info!(budgets = ?config, "budgets applied");
        worker_turn::budgets::Budgeting { config, ops: ops.clone() }
    });
    let guarding = assistant.guardrail.clone().map(|config| {
        info!(id = %config.id, version = %config.version, apply_to = ?config.apply_to, "guardrail applied");
        worker_turn::guarding::Guarding { guardrail: ports.guardrails.open(&config.id, &config.version), config }
    });
    Ok(Worker::builder(ports.core)
        .tools(tools)
        .approvals(assistant.approvals.clone())
        .system_prompt(system_prompt)
        .limits(limits)
        .prices(prices)
        .suggested_prompts(suggested_prompts)
        .home_channels(assistant.home_channels.clone())
        .response_modes(assistant.response_mode.clone())
        .enhancer(enhancer)
        .unoffered(unoffered)
        .assembly(assembly)
        .sign_in(sign_in)
        .background(background)
        .memory(ports.memory)
        .incidents(incidents)
        .guarding(guarding)
        .budgets(budgets)
        .charts(assistant.charts)
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use assistant_core::model::Model;
    use testkit::clock::ManualClock;
    use testkit::memory::{MemoryArtifacts, MemoryQueue, MemorySecrets, MemorySlack, MemoryTimers};
    use testkit::model::ScriptedModel;

    fn ports() -> WorkerPorts {
        let tables = testkit::memory::tables();
        WorkerPorts {
            core: worker_turn::Ports {
                store: Arc::new(tables.turns),
                deliveries: Arc::new(tables.deliveries),
                agent: Arc::new(testkit::agent_memory::MemoryAgent::default()),
                streams: tables.streams,
                feedback: tables.feedback,
                grants: tables.grants,
                departures: tables.departures,
                response_urls: tables.response_urls,
                spending: tables.spending,
                forms: tables.forms,
                contexts: Arc::new(testkit::memory::MemoryContexts::default()),
                // Never called in these tests: no reply is scripted.
                model: Arc::new(ScriptedModel::default()),
                work: Arc::new(MemoryQueue::default()),
                replies: Arc::new(MemoryQueue::default()),
                artifacts: Arc::new(MemoryArtifacts::default()),
                slack: Arc::new(MemorySlack::default()),
                files: Arc::new(MemorySlack::default()),
                timers: Arc::new(MemoryTimers::default()),
                clock: Arc::new(ManualClock::at(0)),
                metrics: Arc::new(assistant_core::telemetry::NoMetrics),
            },
            action_tokens: Arc::new(testkit::memory::MemoryClaims::default()),
            canvases: Arc::new(testkit::memory::MemoryCanvases::default()),
            sign_in: None,
            every_question: None,
            memory: None,
            incidents: None,
            models: Arc::new(|_: &str| Arc::new(ScriptedModel::default()) as Arc<dyn Model>),
            guardrails: Arc::new(|_: &str, _: &str| {
                Arc::new(testkit::memory::MemoryGuardrail::default()) as Arc<dyn assistant_core::guardrail::Guardrail>
            }),
            http: reqwest::Client::new(),
            mcp: Arc::new(assistant_core::mcp::NoMcpServers),
            aws: Arc::new(testkit::signals_memory::MemoryAws(Default::default())),
            signer: Arc::new(assistant_core::ports::NoSigner),
            knowledge: Arc::new(testkit::signals_memory::MemorySignals::default()),
            secrets: Arc::new(assistant_core::ports::NoSecrets),
        }
    }

    /// The environment a worker might have: its own credentials, and a
    /// token a team's API needs.
    fn env(name: &str) -> Option<String> {
        match name {
            "AWS_SECRET_ACCESS_KEY" | "SLACK_BOT_TOKEN" | "STATUS_API_TOKEN" => Some(format!("value-of-{name}")),
            _ => None,
        }
    }

    const TOOL: &str = r#"{"name": "service_status", "description": "Status.", "input_schema": {"type": "object"},
        "url": "https://status.example.com/api", "headers": {"Authorization": "Bearer ${env:VARIABLE}"}}"#;

    fn config(variable: &str, allowed_env: &str) -> Vec<u8> {
        format!(r#"{{"tool_policy": [{{"channels": "*", "tools": ["*"]}}], "allowed_env": {allowed_env}, "http_tools": [{}]}}"#, TOOL.replace("VARIABLE", variable)).into_bytes()
    }

    #[tokio::test]
    async fn a_header_may_name_only_listed_variables_and_never_the_functions_credentials() {
        // Not listed: refused at start, naming the tool and the variable.
        for variable in ["AWS_SECRET_ACCESS_KEY", "SLACK_BOT_TOKEN", "STATUS_API_TOKEN"] {
            let assistant = parse_config(&config(variable, "[]"), "test").unwrap();
            let err = assemble(ports(), &assistant, Limits::default(), &env).await.err().expect("refused");
            let message = err.to_string();
            assert!(
                message.contains("service_status") && message.contains(variable) && message.contains("allowed_env"),
                "{message}"
            );
        }
        // Listing the function's own credentials is refused when the configuration is read.
        for variable in ["AWS_SECRET_ACCESS_KEY", "SLACK_BOT_TOKEN"] {
            let err = parse_config(&config(variable, &format!(r#"["{variable}"]"#)), "test").expect_err("refused");
            assert!(err.to_string().contains("allowed_env may not name"), "{err}");
        }
        // Listed: read.
        let assistant = parse_config(&config("STATUS_API_TOKEN", r#"["STATUS_API_TOKEN"]"#), "test").unwrap();
        assert!(assemble(ports(), &assistant, Limits::default(), &env).await.is_ok());
    }

    #[tokio::test]
    async fn budgets_for_a_model_whose_prices_are_unknown_stop_the_start_and_with_prices_apply() {
        let budgets = r#""budgets": {"per_person": {"daily_usd": 2}}"#;
        let assistant = parse_config(format!("{{{budgets}}}").as_bytes(), "test").unwrap();
        let err = assemble(ports(), &assistant, Limits::default(), &env).await.err().expect("refused");
        assert!(err.to_string().contains("set model_prices"), "{err}");
        let priced = format!(r#"{{{budgets}, "model_prices": {{"input_per_mtok": 3, "output_per_mtok": 15}}}}"#);
        let assistant = parse_config(priced.as_bytes(), "test").unwrap();
        assert!(assemble(ports(), &assistant, Limits::default(), &env).await.is_ok());
    }

    #[test]
    fn a_check_before_upload_reports_every_problem_it_can_find_without_the_deployment() {
        let good = config("STATUS_API_TOKEN", r#"["STATUS_API_TOKEN"]"#);
        assert_eq!(check_config(&good).unwrap().http_tools.len(), 1);
        let ftp = TOOL.replace("service_status", "ftp_status").replace("https://status", "ftp://status");
        let json = format!(
            r#"{{"allowed_env": ["STATUS_API_TOKEN"], "http_tools": [{}, {ftp}]}}"#,
            TOOL.replace("${env:VARIABLE}", "${secret:a b}")
        );
        let problems = check_config(json.as_bytes()).expect_err("refused");
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(
            problems[0].contains("http tool service_status names ${secret:a b}: a secret's name is"),
            "{problems:#?}"
        );
        assert!(problems[1].contains("http tool ftp_status names ${env:VARIABLE}, which is not in"), "{problems:#?}");
        assert!(problems[2].contains("http tool ftp_status: url must be http(s)"), "{problems:#?}");
        let misspelt = check_config(br#"{"tool_polcy": [], "docs_prefix": 3}"#).expect_err("refused");
        assert_eq!(misspelt.len(), 2, "{misspelt:#?}");
        assert!(misspelt[0].starts_with("docs_prefix: invalid type: integer `3`"), "{misspelt:#?}");
        assert!(misspelt[1].starts_with("tool_polcy: unknown field `tool_polcy`"), "{misspelt:#?}");
    }

    #[tokio::test]
    async fn without_a_tool_policy_only_the_built_in_read_only_tools_are_allowed() {
        let json = format!(
            r#"{{"http_tools": [{}], "slack_tools": {{"read_channels": ["C0INCIDENTS"]}}}}"#,
            TOOL.replace("${env:VARIABLE}", "public")
        );
        let assistant = parse_config(json.as_bytes(), "test").unwrap();
        let worker = assemble(ports(), &assistant, Limits::default(), &env).await.unwrap();
        let channel = slack::ChannelId::new("C0ANY");
        assert!(
            worker.tools().approval_rule(&channel, "read_channel").is_none(),
            "another channel's words: by policy only"
        );
        let advertised: Vec<String> = worker.tools().advertised(&channel).into_iter().map(|spec| spec.name).collect();
        assert_eq!(
            advertised,
            [
                "current_time",
                "read_attachment",
                "read_result",
                "attach_result",
                "chart_result",
                "list_docs",
                "read_doc",
                "search_docs"
            ],
            "allowed (read_attachment and read_result are offered only to turns with something to read, \
             chart_result only beside cloudwatch_metrics)"
        );
        assert!(worker.tools().approval_rule(&channel, "service_status").is_none(), "declared, but allowed nowhere");
    }

    fn two_tools_with_secrets(first: &str, second: &str) -> AssistantConfig {
        let tool = |name: &str, secret: &str| {
            TOOL.replace("service_status", name).replace("${env:VARIABLE}", &format!("${{secret:{secret}}}"))
        };
        let json = format!(
            r#"{{"tool_policy": [{{"channels": "*", "tools": ["*"]}}], "http_tools": [{}, {}]}}"#,
            tool("service_status", first),
            tool("deploy_status", second)
        );
        parse_config(json.as_bytes(), "test").unwrap()
    }

    #[tokio::test]
    async fn secrets_are_read_once_each_at_start_and_remembered_by_the_redactor() {
        let value = "team-api-key-7f3c9a1e5b";
        let secrets = Arc::new(MemorySecrets::with(&[("status/api-key", value)]));
        let assistant = two_tools_with_secrets("status/api-key", "status/api-key");
        let ports = WorkerPorts { secrets: secrets.clone(), ..ports() };
        assemble(ports, &assistant, Limits::default(), &env).await.expect("assembled");
        assert_eq!(secrets.reads(), ["status/api-key"], "two tools, one secret, one read");
        let echoed = format!("the API echoed {value} back");
        assert!(!redact::redact(&echoed).contains(value), "a configured secret is redacted wherever it appears");
    }

    #[tokio::test]
    async fn a_missing_unreadable_or_badly_named_secret_stops_the_start_with_its_name() {
        let secrets = || Arc::new(MemorySecrets::with(&[("present", "value-of-present")]));
        let start = |assistant: AssistantConfig, store: Arc<dyn SecretStore>| async move {
            let ports = WorkerPorts { secrets: store, ..ports() };
            assemble(ports, &assistant, Limits::default(), &env).await.err().expect("refused").to_string()
        };
        let missing = start(two_tools_with_secrets("present", "absent"), secrets()).await;
        assert!(missing.contains("deploy_status") && missing.contains("${secret:absent}"), "{missing}");
        assert!(missing.contains("does not have"), "{missing}");

        let unreadable =
            start(two_tools_with_secrets("present", "present"), Arc::new(assistant_core::ports::NoSecrets)).await;
        assert!(unreadable.contains("${secret:present}") && unreadable.contains("cannot be read"), "{unreadable}");

        for bad in ["a b", "", "tab\\tname", "quote\\\"d", &"x".repeat(257)] {
            let store = secrets();
            let refused = start(two_tools_with_secrets("present", bad), store.clone()).await;
            assert!(refused.contains("a secret's name is"), "{bad:?}: {refused}");
            assert!(store.reads().is_empty(), "nothing is read before every name is checked");
        }
    }
}
