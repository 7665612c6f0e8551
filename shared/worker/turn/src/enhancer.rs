//! Prompt enhancement, from the first design this product comes from:
//! before a turn's first step, one call to a cheap model pulls the intent,
//! the services, the environment and the time range out of the question
//! ("show me errors in cast-core prod" → investigate errors, checkout-api,
//! prod, the last hour), forced through a tool's schema so the answer is
//! data, not prose. Services are resolved against an optional service
//! catalog in the bucket (names, aliases, owners, log groups, dashboards),
//! which `logs_query` also uses to find a service's log groups.
//!
//! ```json
//! "prompt_enhancer": {"model_id": "us.amazon.nova-micro-v1:0", "timeout_ms": 1500, "prompt_key": "config/enhancer.md"},
//! "service_catalog_key": "config/services.json"
//! ```
//!
//! The result reaches the main model as a clearly labelled block after
//! the question ("extracted by a helper model; the person's words win").
//! A timeout, a refusal or an unreadable answer leaves the turn to go on
//! without it: logged, and counted (`EnhancerFallbacks`). Its tokens and
//! cost are part of the turn's figures, its latency a metric of its own.

use assistant_core::catalog::ServiceCatalog;
use assistant_core::config_checks::ConfigError;
use assistant_core::model::{Model, ModelRequest, ToolSpec};
use assistant_core::turn::{Content, EnhancerRun, Message, Role, Usage};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};
use tools_registry::schema::Schema;
use tracing::{info, warn};

/// The bundled instructions, when `prompt_key` names none.
pub const DEFAULT_PROMPT: &str = include_str!("prompts/enhancer.md");
/// The tool the cheap model must answer with.
pub const TOOL_NAME: &str = "record_question";
/// Characters of the question the cheap model reads at most.
const MAX_QUESTION_CHARS: usize = 4_000;
const MAX_SERVICES: usize = 5;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawEnhancer")]
pub struct PromptEnhancerConfig {
    /// The cheap model (a Bedrock model or inference profile id).
    pub model_id: String,
    /// How long the turn waits for it (default 1500, 200 to 15000): it runs
    /// beside the thread and channel reads, before the first status line.
    pub timeout_ms: u64,
    /// An object holding its instructions; the bundled ones when absent.
    pub prompt_key: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEnhancer {
    model_id: String,
    timeout_ms: Option<u64>,
    prompt_key: Option<String>,
}

impl TryFrom<RawEnhancer> for PromptEnhancerConfig {
    type Error = ConfigError;

    fn try_from(raw: RawEnhancer) -> Result<Self, ConfigError> {
        if raw.model_id.trim().is_empty() {
            return Err(ConfigError::that("prompt_enhancer.model_id", "names the cheap model"));
        }
        let timeout_ms = raw.timeout_ms.unwrap_or(1_500);
        if !(200..=15_000).contains(&timeout_ms) {
            return Err(ConfigError::must("prompt_enhancer.timeout_ms", "be from 200 to 15000"));
        }
        if let Some(key) = &raw.prompt_key {
            assistant_core::config_checks::readable_object(key)
                .map_err(|why| ConfigError::that("prompt_enhancer.prompt_key", why))?;
        }
        Ok(Self { model_id: raw.model_id, timeout_ms, prompt_key: raw.prompt_key })
    }
}

/// A reply that does not match the extraction's schema: each violation.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.join("; "))]
struct Garbage(Vec<String>);

/// The cheap model and what it is told.
pub struct Enhancer {
    pub model: Arc<dyn Model>,
    pub model_id: String,
    pub timeout: Duration,
    pub prompt: String,
    pub catalog: Option<Arc<ServiceCatalog>>,
}

fn spec() -> ToolSpec {
    ToolSpec {
        name: TOOL_NAME.into(),
        description: "Record what the question is about.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "intent": {"type": "string", "enum": ["investigate", "status", "how_to", "change", "data_export", "other"]},
                "services": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 100}, "maxItems": MAX_SERVICES},
                "environment": {"type": "string", "maxLength": 40},
                "since_minutes": {"type": "integer", "minimum": 1, "maximum": 43200}
            },
            "required": ["intent"],
            "additionalProperties": false
        }),
    }
}

impl Enhancer {
    /// One call; the labelled block for the main model (when usable) and
    /// the record of the call.
    pub async fn run(&self, question: &str) -> (Option<String>, EnhancerRun) {
        let started = Instant::now();
        let question: String = question.chars().take(MAX_QUESTION_CHARS).collect();
        let messages = [Message { role: Role::User, content: vec![Content::Text(question)] }];
        let tools = [spec()];
        let request = ModelRequest {
            system: &self.prompt,
            tools: &tools,
            messages: &messages,
            max_tokens: 400,
            cache_conversation: false,
            force_tool: Some(TOOL_NAME),
            files: &assistant_core::model::NO_FILES,
        };
        let (block, usage, why) = match tokio::time::timeout(self.timeout, self.model.converse(request)).await {
            Err(_) => (None, Usage::default(), Some("timed out".to_owned())),
            Ok(Err(err)) => (None, Usage::default(), Some(format!("failed: {err}"))),
            Ok(Ok(reply)) => {
                let input =
                    reply.message.tool_uses().find(|call| call.name == TOOL_NAME).map(|call| call.input.clone());
                match input.map(|input| self.block(&input)) {
                    Some(Ok(block)) => (Some(block), reply.usage, None),
                    Some(Err(reason)) => (None, reply.usage, Some(format!("answered garbage: {reason}"))),
                    None => (None, reply.usage, Some("did not call record_question".to_owned())),
                }
            }
        };
        let latency_ms = started.elapsed().as_millis() as u64;
        match &why {
            None => info!(latency_ms, "prompt enhancer used"),
            Some(why) => warn!(latency_ms, reason = %why, "prompt enhancer skipped: the turn goes on without it"),
        }
        let run = EnhancerRun { model_id: self.model_id.clone(), usage, latency_ms, used: block.is_some() };
        (block, run)
    }

    /// The extraction, checked against the tool's schema, as a labelled
    /// block with each service resolved against the catalog.
    fn block(&self, input: &Value) -> Result<String, Garbage> {
        static SCHEMA: LazyLock<Schema> =
            LazyLock::new(|| Schema::compile(&spec().input_schema).expect("the enhancer's schema is valid"));
        let violations = SCHEMA.violations(input);
        if !violations.is_empty() {
            return Err(Garbage(violations));
        }
        let mut lines = vec![
            "[Question context, extracted from the question by a helper model. It may be wrong: the person's own words win.]".to_owned(),
            format!("intent: {}", input["intent"].as_str().unwrap_or("other")),
        ];
        for name in input["services"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            let line = match self.catalog.as_ref().and_then(|catalog| catalog.find(name)) {
                Some(service) => {
                    let mut known = format!("service: {}", service.name);
                    for (what, values) in [
                        ("aliases", &service.aliases),
                        ("owners", &service.owners),
                        ("log groups", &service.log_groups),
                        ("dashboards", &service.dashboards),
                    ] {
                        if !values.is_empty() {
                            known.push_str(&format!("; {what}: {}", values.join(", ")));
                        }
                    }
                    known
                }
                None if self.catalog.is_some() => format!("service: {name:?} (not in the service catalog)"),
                None => format!("service: {name:?}"),
            };
            lines.push(line);
        }
        if let Some(environment) = input["environment"].as_str().filter(|e| !e.trim().is_empty()) {
            lines.push(format!("environment: {environment}"));
        }
        if let Some(minutes) = input["since_minutes"].as_u64() {
            lines.push(format!("time range: the last {minutes} minutes"));
        }
        Ok(lines.join("\n"))
    }
}

/// The block after the question: the last message, the person's.
pub fn attach(transcript: &mut [Message], block: String) {
    if let Some(last) = transcript.last_mut().filter(|message| message.role == Role::User) {
        last.content.push(Content::Text(block));
    }
}

#[cfg(test)]
mod tests;
