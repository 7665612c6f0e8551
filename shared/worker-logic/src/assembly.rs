//! Building the worker: the one way, used by the Lambda function
//! (`functions/worker`) and the local runner (`infra/local`) alike, so the
//! runner is the same bot: the same assistant configuration, system prompt,
//! tools and policy, whatever is behind the ports.

use crate::approvals::Approvals;
use crate::config::AssistantConfig;
use crate::tools::{ToolDefinitionError, ToolRegistry};
use crate::worker::{Limits, Worker};
use crate::{builtin_tools, docs_tools, http_tools};
use assistant_core::Clock;
use assistant_core::model::Model;
use assistant_core::ports::{
    ApprovalTimers, ArtifactStore, DeliveryLog, PortError, ReplyQueue, SlackReader, TurnStore, WorkQueue,
};
use std::sync::Arc;
use tracing::info;

/// The system prompt used when the deployment configures none.
pub const DEFAULT_SYSTEM_PROMPT: &str = include_str!("prompts/system.md");

/// Everything outside the worker, as ports.
pub struct WorkerPorts {
    pub store: Arc<dyn TurnStore>,
    pub deliveries: Arc<dyn DeliveryLog>,
    pub model: Arc<dyn Model>,
    pub work: Arc<dyn WorkQueue>,
    pub replies: Arc<dyn ReplyQueue>,
    /// Large tool results, the system prompt and the docs.
    pub artifacts: Arc<dyn ArtifactStore>,
    pub slack: Arc<dyn SlackReader>,
    pub timers: Arc<dyn ApprovalTimers>,
    pub clock: Arc<dyn Clock>,
    /// The process's HTTP client, shared by the HTTP tools.
    pub http: reqwest::Client,
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
    #[error("{origin} is not a valid assistant configuration: {source}")]
    Config {
        origin: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("the system prompt {0} named in the assistant configuration does not exist")]
    MissingPrompt(String),
    #[error("the tools cannot be defined: {0}")]
    Tools(#[from] ToolDefinitionError),
    #[error(transparent)]
    HttpTools(#[from] http_tools::HttpToolError),
}

/// The assistant configuration at `key` in the artifact store; the
/// defaults when there is none.
pub async fn load_config(artifacts: &dyn ArtifactStore, key: &str) -> Result<AssistantConfig, StartupError> {
    match artifacts.get(key).await.map_err(|source| StartupError::Read { key: key.to_owned(), source })? {
        Some(json) => parse_config(&json, key),
        None => Ok(AssistantConfig::default()),
    }
}

/// An assistant configuration's JSON; `origin` names where it came from in
/// the error.
pub fn parse_config(json: &[u8], origin: &str) -> Result<AssistantConfig, StartupError> {
    AssistantConfig::parse(json).map_err(|source| StartupError::Config { origin: origin.to_owned(), source })
}

/// The worker for this configuration: its system prompt (read from the
/// artifact store when the configuration names one), the built-in, docs and
/// declared HTTP tools under the configured policy. `env` resolves the
/// `${env:NAME}` in HTTP tools' headers.
pub async fn assemble(
    ports: WorkerPorts,
    assistant: &AssistantConfig,
    limits: Limits,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Worker, StartupError> {
    let system_prompt = match &assistant.system_prompt_key {
        Some(key) => {
            let prompt = ports
                .artifacts
                .get(key)
                .await
                .map_err(|source| StartupError::Read { key: key.clone(), source })?
                .ok_or_else(|| StartupError::MissingPrompt(key.clone()))?;
            String::from_utf8_lossy(&prompt).into_owned()
        }
        None => DEFAULT_SYSTEM_PROMPT.to_owned(),
    };
    let mut tools = vec![builtin_tools::current_time(ports.clock.clone())];
    tools.extend(docs_tools::docs_tools(ports.artifacts.clone(), &assistant.docs_prefix)?);
    tools.extend(http_tools::http_tools(&assistant.http_tools, ports.http.clone(), env)?);
    let tools = ToolRegistry::new(tools, assistant.policy())?;
    info!(
        prompt = assistant.system_prompt_key.as_deref().unwrap_or("bundled"),
        docs = %assistant.docs_prefix,
        http_tools = assistant.http_tools.len(),
        "assistant configured"
    );
    Ok(Worker {
        store: ports.store,
        deliveries: ports.deliveries,
        model: ports.model,
        work: ports.work,
        replies: ports.replies,
        artifacts: ports.artifacts,
        slack: ports.slack,
        timers: ports.timers,
        tools,
        approvals: Approvals::new(assistant.approvals.clone()),
        clock: ports.clock,
        system_prompt,
        limits,
    })
}
