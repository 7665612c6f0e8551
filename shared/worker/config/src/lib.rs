//! The assistant configuration and the worker built from it.
//!
//! - this module: the configuration's shape and checks ([`AssistantConfig`]);
//! - [`kept`]: the copy of it a cold worker reads with its first turns;
//! - [`fallback`]: a broken upload never takes the bot down (the last good
//!   configuration, reported);
//! - [`assembly`]: the worker built from its ports and the configuration;
//!   `functions/worker`, the local runner, the tests and the benchmark all
//!   call it.
//!
//! The top of the worker's crates: it may use every tool family, identity,
//! incidents and the turn loop; nothing uses it but the function, the
//! local runner, the tests, the benchmark and the evaluations.
//!
//! What a deployment configures about the assistant itself, kept as one
//! JSON object in the artifact bucket (`config/assistant.json` unless
//! `ASSISTANT_CONFIG_KEY` says otherwise) so a team changes it without a
//! deploy:
//!
//! ```json
//! {
//!   "system_prompt_key": "config/system-prompt.md",
//!   "docs_prefix": "docs/",
//!   "tool_policy": [
//!     { "channels": "C0INCIDENTS*", "tools": ["*"] },
//!     { "channels": "*", "tools": ["current_time", "*_docs", "read_doc"] }
//!   ],
//!   "http_tools": [ … see [`tools_http`] … ],
//!   "mcp_servers": [ … see [`tools_mcp`] … ],
//!   "aws_tools": { … see [`tools_aws`] … },
//!   "knowledge_bases": [ { "name": "code", "id": "KB12345678", "description": "Our services' code and READMEs", "max_results": 5 } ],
//!   "approvals": { "approvers": ["requester"], "expires_after_secs": 3600, "allow_self_approval": true },
//!   "suggested_prompts": [ { "title": "Why is a service failing?", "message": "Why is checkout-api failing?" } ],
//!   "charts": true,
//!   "budgets": { "per_person": { "daily_usd": 2, "monthly_usd": 20 }, "deployment": { "monthly_usd": 500, "alert_at": 0.8 }, "admins": ["U061F7AUR"] }
//! }
//! ```
//!
//! Every field is optional: no object at all means the bundled prompt,
//! documents under `docs/`, and only the built-in read-only tools in every
//! channel (a declared tool is usable only where a `tool_policy` allows it).

pub mod assembly;
pub mod fallback;
pub mod kept;

pub use assembly::{StartupError, WorkerPorts, assemble};

pub use assistant_core::config_checks::CONFIGURATION_OBJECTS;
use assistant_core::config_checks::{ConfigError, named_list, readable_object};
use assistant_core::ports::SuggestedPrompt;
use assistant_core::pricing::ModelPrices;
use assistant_core::reading::ReadingBudget;
use assistant_core::response_modes::{ResponseMode, ResponseRule};
use serde::Deserialize;
use tools_aws::AwsToolsConfig;
use tools_http::HttpToolConfig;
use tools_knowledge::KnowledgeBaseConfig;
use tools_mcp::McpServerConfig;
use tools_registry::{ChannelRule, ToolPolicy};
pub use worker_turn::approvals::ApprovalsConfig;
pub use worker_turn::default_prompts;
use worker_turn::enhancer::PromptEnhancerConfig;

pub const DEFAULT_CONFIG_KEY: &str = "config/assistant.json";

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssistantConfig {
    /// An object holding the system prompt; the bundled one when absent.
    #[serde(default, deserialize_with = "configuration_object")]
    pub system_prompt_key: Option<String>,
    /// Where the documents the docs tools read live.
    #[serde(default = "default_docs_prefix")]
    pub docs_prefix: String,
    /// Which tools which channels may use (first matching rule decides).
    #[serde(default)]
    pub tool_policy: Option<Vec<ChannelRule>>,
    /// HTTP API tools: a team's APIs, declared without code.
    #[serde(default)]
    pub http_tools: Vec<HttpToolConfig>,
    /// MCP servers whose tools the model may call.
    #[serde(default)]
    pub mcp_servers: Vec<McpServerConfig>,
    /// The account's alarms, metrics and logs as built-in read-only tools;
    /// each off until named.
    #[serde(default)]
    pub aws_tools: AwsToolsConfig,
    /// Slack as a tool: `read_channel` over the channels named here.
    #[serde(default)]
    pub slack_tools: tools_slack::SlackToolsConfig,
    /// Bedrock knowledge bases, a `search_{name}` tool each.
    #[serde(default, deserialize_with = "knowledge_bases")]
    pub knowledge_bases: Vec<KnowledgeBaseConfig>,
    /// Who may approve calls that change things, and for how long.
    #[serde(default)]
    pub approvals: ApprovalsConfig,
    /// A cheap model's reading of the question before the first step.
    #[serde(default)]
    pub prompt_enhancer: Option<PromptEnhancerConfig>,
    /// The bucket object listing the team's services (names, aliases,
    /// owners, log groups, dashboards): the enhancer resolves services
    /// with it, `logs_query` finds a service's log groups.
    #[serde(default, deserialize_with = "configuration_object")]
    pub service_catalog_key: Option<String>,
    /// Channel globs (`C0ONCALL*`) that are the team's place for these
    /// questions: the model is told to answer there and never send people
    /// elsewhere.
    #[serde(default)]
    pub home_channels: Vec<String>,
    /// When the bot speaks, per channel (globs; the first rule whose
    /// `channels` match decides; default `thread_replies`). DMs are always
    /// answered.
    #[serde(default, deserialize_with = "response_rules")]
    pub response_mode: Vec<ResponseRule>,
    /// Which alerts open an incident thread in which channel, with what
    /// instructions ([`worker_incidents`]).
    #[serde(default, deserialize_with = "worker_incidents::alert_rules")]
    pub alerts: Vec<worker_incidents::AlertRule>,
    /// Questions the bot asks itself in a channel on a cron schedule
    /// ([`worker_incidents::schedules`]).
    #[serde(default, deserialize_with = "worker_incidents::schedules::schedules")]
    pub schedules: Vec<worker_incidents::schedules::Schedule>,
    /// The environment variables `${env:NAME}` may name (HTTP tools' and
    /// MCP servers' headers). Never `AWS_*` or `SLACK_*`: whoever can write the
    /// configuration must not be able to send the function's own
    /// credentials to a host of their choosing.
    #[serde(default, deserialize_with = "allowed_env")]
    pub allowed_env: Vec<String>,
    /// The model's prices (US dollars per million tokens), for each turn's
    /// estimated cost; known Bedrock models are priced without it.
    #[serde(default, deserialize_with = "model_prices")]
    pub model_prices: Option<ModelPrices>,
    /// What a person sees when they open the bot's DM: up to four prompts,
    /// each a `title` on a button and the `message` it sends. No model
    /// call is made to show them.
    #[serde(default = "default_prompts", deserialize_with = "suggested_prompts")]
    pub suggested_prompts: Vec<SuggestedPrompt>,
    /// How long the channels' memory of settled turns is kept.
    #[serde(default)]
    pub memory: MemoryConfig,
    /// How much of tool results the model reads: `result_tokens` for one
    /// result whole, `turn_tokens` for all of a turn's (previews and
    /// `read_result`'s reads included). Default: sized for the model's
    /// context window (`assistant_core::reading::ReadingBudget::for_model`).
    #[serde(default, deserialize_with = "reading")]
    pub reading: Option<ReadingBudget>,
    /// A Bedrock guardrail the worker applies (`ApplyGuardrail`) to the
    /// kinds named: the question, tool results, files' text, the answer
    /// (`assistant_core::guardrail`).
    #[serde(default, deserialize_with = "guardrail")]
    pub guardrail: Option<assistant_core::guardrail::GuardrailConfig>,
    /// Whether a table of numbers in an answer may be shown beside it as
    /// Slack's data visualization block, and a table over the table
    /// block's rows as data tables (`responder_logic::charts`); default on.
    #[serde(default = "charts_on")]
    pub charts: bool,
    /// Spend per person, per channel and for the deployment, per day and
    /// per month, charged before each model call
    /// (`assistant_core::budgets`); none by default.
    #[serde(default, deserialize_with = "budgets")]
    pub budgets: Option<assistant_core::budgets::BudgetsConfig>,
}

fn charts_on() -> bool {
    true
}

/// `memory` in the configuration: `{"retention_days": 90}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawMemory")]
pub struct MemoryConfig {
    pub retention_days: u32,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self { retention_days: (assistant_core::memory::DEFAULT_RETENTION_SECS / (24 * 3600)) as u32 }
    }
}

impl MemoryConfig {
    pub fn retention_secs(self) -> i64 {
        i64::from(self.retention_days) * 24 * 3600
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMemory {
    retention_days: u32,
}

impl TryFrom<RawMemory> for MemoryConfig {
    type Error = ConfigError;

    fn try_from(raw: RawMemory) -> Result<Self, ConfigError> {
        if !(1..=3650).contains(&raw.retention_days) {
            return Err(ConfigError::must(
                "memory.retention_days",
                format_args!("be 1 to 3650, not {}", raw.retention_days),
            ));
        }
        Ok(Self { retention_days: raw.retention_days })
    }
}

fn response_rules<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<ResponseRule>, D::Error> {
    let rules = Vec::<ResponseRule>::deserialize(deserializer)?;
    if let Some(rule) = rules.iter().find(|rule| rule.channels.trim().is_empty() || rule.channels.starts_with('D')) {
        return Err(serde::de::Error::custom(format!(
            "response_mode: channels {:?} must be a glob over channel ids, not empty and not a DM (DMs are always answered)",
            rule.channels
        )));
    }
    Ok(rules)
}

impl AssistantConfig {
    /// The channel globs whose rule is `every_question` (what the ingress
    /// needs to know).
    pub fn every_question_channels(&self) -> Vec<String> {
        self.response_mode
            .iter()
            .filter(|rule| rule.mode == ResponseMode::EveryQuestion)
            .map(|rule| rule.channels.clone())
            .collect()
    }
}

fn suggested_prompts<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<SuggestedPrompt>, D::Error> {
    let prompts = Vec::<SuggestedPrompt>::deserialize(deserializer)?;
    use assistant_core::ports::{MAX_SUGGESTED_MESSAGE_CHARS, MAX_SUGGESTED_PROMPTS, MAX_SUGGESTED_TITLE_CHARS};
    if !(1..=MAX_SUGGESTED_PROMPTS).contains(&prompts.len()) {
        return Err(serde::de::Error::custom(format!("suggested_prompts: 1 to {MAX_SUGGESTED_PROMPTS} prompts")));
    }
    for (index, prompt) in prompts.iter().enumerate() {
        let (title, message) = (prompt.title.trim(), prompt.message.trim());
        if title.is_empty()
            || title.chars().count() > MAX_SUGGESTED_TITLE_CHARS
            || message.is_empty()
            || message.chars().count() > MAX_SUGGESTED_MESSAGE_CHARS
        {
            return Err(serde::de::Error::custom(format!(
                "suggested_prompts[{index}] needs a title of 1 to {MAX_SUGGESTED_TITLE_CHARS} characters and a message of 1 to {MAX_SUGGESTED_MESSAGE_CHARS}"
            )));
        }
    }
    Ok(prompts)
}

/// Knowledge bases the model chooses among at most.
const MAX_KNOWLEDGE_BASES: usize = 10;

fn configuration_object<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let key = Option::<String>::deserialize(deserializer)?;
    if let Some(key) = &key {
        readable_object(key).map_err(serde::de::Error::custom)?;
    }
    Ok(key)
}

fn knowledge_bases<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<KnowledgeBaseConfig>, D::Error> {
    let bases = Vec::<KnowledgeBaseConfig>::deserialize(deserializer)?;
    named_list(bases, "knowledge_bases", MAX_KNOWLEDGE_BASES, |base| &base.name).map_err(serde::de::Error::custom)
}

fn model_prices<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<ModelPrices>, D::Error> {
    let prices = ModelPrices::deserialize(deserializer)?;
    let all = [prices.input_per_mtok, prices.output_per_mtok, prices.cache_read_per_mtok, prices.cache_write_per_mtok];
    if all.iter().any(|price| !price.is_finite() || *price < 0.0) {
        return Err(serde::de::Error::custom("model_prices: every price is a number of dollars, 0 or more"));
    }
    Ok(Some(prices))
}

fn reading<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<ReadingBudget>, D::Error> {
    let budget = ReadingBudget::deserialize(deserializer)?;
    match budget.problem() {
        Some(problem) => Err(serde::de::Error::custom(format!("reading: {problem}"))),
        None => Ok(Some(budget)),
    }
}

fn budgets<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<assistant_core::budgets::BudgetsConfig>, D::Error> {
    let config = assistant_core::budgets::BudgetsConfig::deserialize(deserializer)?;
    match config.problem() {
        Some(problem) => Err(serde::de::Error::custom(problem)),
        None => Ok(Some(config)),
    }
}

fn guardrail<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<assistant_core::guardrail::GuardrailConfig>, D::Error> {
    let config = assistant_core::guardrail::GuardrailConfig::deserialize(deserializer)?;
    match config.problem() {
        Some(problem) => Err(serde::de::Error::custom(format!("guardrail: {problem}"))),
        None => Ok(Some(config)),
    }
}

fn allowed_env<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    let names = Vec::<String>::deserialize(deserializer)?;
    for name in &names {
        let upper = name.to_ascii_uppercase();
        if upper.starts_with("AWS_") || upper.starts_with("SLACK_") {
            return Err(serde::de::Error::custom(format!(
                "allowed_env may not name {name}: AWS_* and SLACK_* variables hold the function's own credentials"
            )));
        }
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(serde::de::Error::custom(format!("allowed_env: {name:?} is not a variable name")));
        }
    }
    Ok(names)
}

fn default_docs_prefix() -> String {
    "docs/".to_owned()
}

impl Default for AssistantConfig {
    fn default() -> Self {
        Self {
            system_prompt_key: None,
            docs_prefix: default_docs_prefix(),
            tool_policy: None,
            http_tools: Vec::new(),
            mcp_servers: Vec::new(),
            aws_tools: AwsToolsConfig::default(),
            slack_tools: Default::default(),
            knowledge_bases: Vec::new(),
            home_channels: Vec::new(),
            response_mode: Vec::new(),
            prompt_enhancer: None,
            service_catalog_key: None,
            approvals: ApprovalsConfig::default(),
            alerts: Vec::new(),
            schedules: Vec::new(),
            allowed_env: Vec::new(),
            model_prices: None,
            suggested_prompts: default_prompts(),
            memory: MemoryConfig::default(),
            reading: None,
            guardrail: None,
            charts: true,
            budgets: None,
        }
    }
}

impl AssistantConfig {
    pub fn parse(json: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(json)
    }

    /// The configuration in `json`, or everything found wrong with it: the
    /// first error of each top-level field, with its path. What the worker
    /// reports of a broken upload, and what `local --config FILE --check`
    /// prints before one.
    pub fn check(json: &[u8]) -> Result<Self, ConfigIssues> {
        let text = std::str::from_utf8(json).map_err(|err| {
            ConfigIssues(vec![ConfigIssue::whole(format!(
                "not UTF-8 text (the bytes from offset {} are not)",
                err.valid_up_to()
            ))])
        })?;
        let first = match from_text(text) {
            Ok(config) => return Ok(config),
            Err(issue) => issue,
        };
        // An object of fields (else the first error is all there is to
        // say): each field on its own, so one upload shows every mistake.
        let Ok(fields) = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text) else {
            return Err(ConfigIssues(vec![first]));
        };
        // As text again, not from the `Value`: one deserializer of the
        // whole configuration in the binary, not two.
        let issues: Vec<ConfigIssue> = fields
            .into_iter()
            .filter_map(|(name, value)| {
                let alone = serde_json::Value::Object(std::iter::once((name, value)).collect());
                from_text(&alone.to_string()).err()
            })
            .collect();
        // None alone (a field given twice): the whole text's error.
        Err(ConfigIssues(if issues.is_empty() { vec![first] } else { issues }))
    }

    /// The configured channel rules; `None`: only the built-in read-only
    /// tools (the assembly decides which those are).
    pub fn policy(&self) -> Option<ToolPolicy> {
        self.tool_policy.clone().map(ToolPolicy::new)
    }
}

fn from_text(text: &str) -> Result<AssistantConfig, ConfigIssue> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let config = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|err| ConfigIssue::at(err.path().to_string(), err.inner()))?;
    deserializer.end().map_err(|err| ConfigIssue::at(".".into(), &err))?;
    // serde reads a struct from a list too, field by field in order: `[]`
    // would be the defaults.
    if !text.trim_start().starts_with('{') {
        return Err(ConfigIssue::whole("the configuration is one JSON object of fields, {...}".into()));
    }
    Ok(config)
}

/// One thing wrong in an assistant configuration's text: where
/// (`http_tools[0].url`; `.` for the whole text) and why. It never quotes a
/// value from the text (where serde would, it says "a string"), so it may
/// go to logs, the health check and the ops channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigIssue {
    pub path: String,
    pub reason: String,
}

impl ConfigIssue {
    fn whole(reason: String) -> Self {
        Self { path: ".".into(), reason }
    }

    fn at(path: String, err: &serde_json::Error) -> Self {
        let message = err.to_string();
        if !err.is_data() {
            // Syntax: where in the text is what helps (no value is quoted).
            return Self::whole(format!("not JSON: {message}"));
        }
        let position = format!(" at line {} column {}", err.line(), err.column());
        let message = message.strip_suffix(&position).unwrap_or(&message);
        Self { path, reason: did_you_mean(&without_values(message)) }
    }
}

/// serde's "unknown field `tool_polcy`, expected one of `system_prompt_key`,
/// …" as "unknown field `tool_polcy` (did you mean `tool_policy`?)" when one
/// of the fields it lists is a typo away.
fn did_you_mean(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else { return message.to_owned() };
    let Some((unknown, expected)) = rest.split_once("`, expected ") else { return message.to_owned() };
    let closest = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|field| (edit_distance(unknown, field), field))
        .filter(|(distance, field)| *distance <= 2.max(field.len() / 4))
        .min();
    match closest {
        Some((_, field)) => format!("unknown field `{unknown}` (did you mean `{field}`?)"),
        None => message.to_owned(),
    }
}

/// Levenshtein's distance, over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, a) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, b) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(a != *b)).min(above + 1).min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

impl std::fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

/// Everything [`AssistantConfig::check`] found wrong, at least one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigIssues(pub Vec<ConfigIssue>);

impl std::fmt::Display for ConfigIssues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (n, issue) in self.0.iter().enumerate() {
            write!(f, "{}{issue}", if n == 0 { "" } else { "; " })?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigIssues {}

/// A serde message without the values it quotes from the text: a value
/// may be a token pasted in the wrong field. `string "…"` becomes "a
/// string", an unknown variant's name is left out, any other quoted text
/// (our own checks quote what they refuse) becomes "a value", and what is
/// left passes the redactor. Field names (`unknown field `tool_polcy``) stay: they are
/// what to fix.
fn without_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    loop {
        let string = rest.find("string \"").map(|at| (at, "string \"", "a string", '"'));
        let variant = rest.find("unknown variant `").map(|at| (at, "unknown variant `", "unknown variant", '`'));
        let other = rest.find('"').map(|at| (at, "\"", "a value", '"'));
        let Some((at, opening, instead, closing)) =
            [string, variant, other].into_iter().flatten().min_by_key(|found| found.0)
        else {
            break;
        };
        out.push_str(&rest[..at]);
        out.push_str(instead);
        let quoted = &rest[at + opening.len()..];
        // Debug-escaped (`\"` inside a string): the first closing that is not.
        let mut escaped = false;
        let end = quoted
            .char_indices()
            .find(|&(_, c)| {
                let closes = c == closing && !escaped;
                escaped = c == '\\' && !escaped;
                closes
            })
            .map_or(quoted.len(), |(at, _)| at + 1);
        rest = &quoted[end..];
    }
    out.push_str(rest);
    redact::redact(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_our_own_checks_refuse_is_not_quoted_back() {
        // GIVEN a token pasted where a variable's name belongs
        let pasted = br#"{"allowed_env": ["STATUS_TOKEN=abc123secretvalue"]}"#;
        // THEN the issue says where and what is wrong, never the text
        let issues = AssistantConfig::check(pasted).unwrap_err().0;
        let said = format!("{issues:?}");
        assert!(!said.contains("abc123secretvalue") && !said.contains("STATUS_TOKEN="), "{said}");
        assert_eq!(issues[0].path, "allowed_env", "{said}");
    }

    #[test]
    fn charts_are_on_unless_the_configuration_turns_them_off_and_only_a_boolean_does() {
        assert!(AssistantConfig::check(b"{}").unwrap().charts, "on by default");
        assert!(!AssistantConfig::check(br#"{"charts": false}"#).unwrap().charts);
        for json in [r#"{"charts": "sk-live-4242"}"#, r#"{"charts": 0}"#, r#"{"charts": {"max": 2}}"#] {
            let issues = AssistantConfig::check(json.as_bytes()).expect_err(json).0;
            let said = format!("{issues:?}");
            assert_eq!(issues[0].path, "charts", "{said}");
            assert!(!said.contains("sk-live-4242") && said.contains("boolean"), "{said}");
        }
    }

    #[test]
    fn budgets_out_of_range_or_misspelt_are_refused_by_their_path_and_their_values_not_quoted() {
        let refused = |json: &str| AssistantConfig::check(json.as_bytes()).expect_err(json).0;
        for (json, reason) in [
            (r#"{"budgets": {"per_person": {"daily_usd": 4242424242}}}"#, "must be more than 0"),
            (r#"{"budgets": {"per_person": {"daily_usd": 2}, "admins": ["sk-live-4242"]}}"#, "by their ids"),
            (r#"{"budgets": {"per_person": {"weekly_usd": 2}}}"#, "unknown field"),
            (r#"{"budgets": {}}"#, "names no daily_usd"),
        ] {
            let issues = refused(json);
            let said = format!("{issues:?}");
            assert!(issues.iter().any(|issue| issue.reason.contains(reason)), "{json}: {said}");
            assert!(issues.iter().all(|issue| issue.path.starts_with("budgets")), "{said}");
            assert!(!said.contains("sk-live") && !said.contains("4242424242"), "{said}");
        }
        let ok = br#"{"budgets": {"deployment": {"monthly_usd": 500}}}"#;
        let budgets = AssistantConfig::check(ok).unwrap().budgets.unwrap();
        assert_eq!(budgets.deployment.unwrap().alert_at, assistant_core::budgets::DEFAULT_ALERT_AT);
        assert!(AssistantConfig::check(b"{}").unwrap().budgets.is_none(), "none by default");
    }

    #[test]
    fn a_guardrail_bedrock_would_refuse_is_refused_at_the_check_and_its_value_not_quoted() {
        let refused = |json: &str| AssistantConfig::check(json.as_bytes()).expect_err(json).0;
        for (json, reason) in [
            (r#"{"guardrail": {"id": "sk-live-4242", "version": "1", "apply_to": ["answer"]}}"#, "id is neither"),
            (r#"{"guardrail": {"id": "gr0abc", "version": "0", "apply_to": ["answer"]}}"#, "version is neither"),
            (r#"{"guardrail": {"id": "gr0abc", "version": "1", "apply_to": []}}"#, "names nothing"),
            (r#"{"guardrail": {"id": "gr0abc", "version": "1", "apply_to": ["tools"]}}"#, "unknown variant"),
            (
                r#"{"guardrail": {"id": "gr0abc", "version": "1", "apply_to": ["answer"], "mode": "x"}}"#,
                "unknown field",
            ),
        ] {
            let issues = refused(json);
            let said = format!("{issues:?}");
            assert!(issues.iter().any(|issue| issue.reason.contains(reason)), "{json}: {said}");
            assert!(issues.iter().all(|issue| issue.path.starts_with("guardrail")), "{said}");
            assert!(!said.contains("sk-live"), "{said}");
        }
        let ok = br#"{"guardrail": {"id": "gr0abc", "version": "DRAFT", "apply_to": ["tool_results", "files"]}}"#;
        assert_eq!(AssistantConfig::check(ok).unwrap().guardrail.unwrap().apply_to.len(), 2);
    }

    #[test]
    fn a_check_names_every_wrong_field_by_its_path_and_quotes_no_value() {
        let issues = |json: &str| AssistantConfig::check(json.as_bytes()).expect_err(json).0;
        let found = issues(
            r#"{"tool_polcy": [], "docs_prefix": "kb/", "http_tools": [{"name": "a", "description": "A.", "input_schema": {}, "url": 7}],
                "approvals": {"thread_grants": "Bearer xoxb-1234567890-abcdefghijkl"}, "response_mode": [{"channels": "C1", "mode": "sk-live-4242"}]}"#,
        );
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(found.len(), 4, "{shown:#?}");
        let path_of = |needle: &str| {
            found.iter().find(|issue| issue.reason.contains(needle)).map(|issue| issue.path.as_str()).unwrap_or("none")
        };
        assert_eq!(path_of("unknown field `tool_polcy` (did you mean `tool_policy`?)"), "tool_polcy", "{shown:#?}");
        assert_eq!(path_of("invalid type: integer `7`, expected a string"), "http_tools[0].url", "{shown:#?}");
        assert_eq!(path_of("invalid type: a string, expected a boolean"), "approvals.thread_grants", "{shown:#?}");
        assert_eq!(path_of("unknown variant, expected one of"), "response_mode[0].mode", "{shown:#?}");
        for issue in &shown {
            assert!(!issue.contains("xoxb") && !issue.contains("sk-live") && !issue.contains("line 1"), "{issue}");
        }
        assert_eq!(AssistantConfig::check(br#"{"docs_prefix": "kb/"}"#).unwrap().docs_prefix, "kb/");
    }

    #[test]
    fn the_objects_a_configuration_names_are_ones_the_workers_role_may_read() {
        // GIVEN keys under config/, which template.yaml lets the worker read
        let good =
            br#"{"system_prompt_key": "config/prompts/payments.md", "service_catalog_key": "config/services.json",
            "prompt_enhancer": {"model_id": "us.amazon.nova-micro-v1:0", "prompt_key": "config/enhancer.md"}}"#;
        let config = AssistantConfig::check(good).unwrap();
        assert_eq!(config.system_prompt_key.as_deref(), Some("config/prompts/payments.md"));
        // WHEN a key names any other object (the role would be refused in
        // AWS), or the prefix alone
        for (bad, path) in [
            (r#"{"system_prompt_key": "prompts/payments.md"}"#, "system_prompt_key"),
            (r#"{"system_prompt_key": "turns/T1-Ev1/result.json"}"#, "system_prompt_key"),
            (r#"{"service_catalog_key": "config/"}"#, "service_catalog_key"),
            (r#"{"prompt_enhancer": {"model_id": "m", "prompt_key": "docs/enhancer.md"}}"#, "prompt_enhancer"),
        ] {
            // THEN the upload is refused, saying where and why
            let issues = AssistantConfig::check(bad.as_bytes()).unwrap_err().0;
            assert_eq!(issues.len(), 1, "{bad}: {issues:?}");
            assert_eq!(issues[0].path, path, "{bad}");
            assert!(issues[0].reason.contains("must name an object under config/"), "{bad}: {}", issues[0].reason);
        }
    }

    #[test]
    fn an_unknown_field_a_typo_away_from_a_known_one_is_named_and_another_lists_them_all() {
        let reason = |json: &str| AssistantConfig::check(json.as_bytes()).expect_err(json).0[0].reason.clone();
        assert_eq!(reason(r#"{"docs_prefx": "kb/"}"#), "unknown field `docs_prefx` (did you mean `docs_prefix`?)");
        assert_eq!(
            reason(r#"{"approvals": {"aprovers": ["requester"]}}"#),
            "unknown field `aprovers` (did you mean `approvers`?)"
        );
        let far = reason(r#"{"colour": "blue"}"#);
        assert!(far.starts_with("unknown field `colour`, expected one of `system_prompt_key`"), "{far}");
        assert_eq!((edit_distance("", "ab"), edit_distance("kitten", "sitting"), edit_distance("ab", "ab")), (2, 3, 0));
    }

    #[test]
    fn text_that_is_not_a_configuration_is_one_issue_about_the_whole() {
        for (text, says) in [
            (&b"{\"docs_prefix\": \"kb/\"\xff}"[..], "not UTF-8 text (the bytes from offset 21 are not)"),
            (b"\xef\xbb\xbf{}", "not JSON: expected value at line 1 column 1"),
            (b"docs_prefix: kb/", "not JSON: expected value at line 1 column 1"),
            (b"{\"docs_prefix\": \"kb/\"", "not JSON: EOF while parsing an object at line 1 column 21"),
            (b"{} {}", "not JSON: trailing characters at line 1 column 4"),
            (b"", "not JSON: EOF while parsing a value at line 1 column 0"),
            (b"[]", "the configuration is one JSON object of fields, {...}"),
            (br#"[null, "kb/"]"#, "the configuration is one JSON object of fields, {...}"),
            (b"null", "invalid type: null, expected struct AssistantConfig"),
            (br#"{"docs_prefix": "a", "docs_prefix": "b"}"#, "duplicate field `docs_prefix`"),
        ] {
            let issues = AssistantConfig::check(text).expect_err(says).0;
            assert_eq!(issues.len(), 1, "{issues:?}");
            assert_eq!(issues[0].reason, says, "{:?}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn response_modes_are_first_match_with_thread_replies_by_default_and_dms_are_not_rules() {
        let config = AssistantConfig::parse(
            br#"{"response_mode": [{"channels": "C0ASK1", "mode": "mentions_only"}, {"channels": "C0ASK*", "mode": "every_question"}]}"#,
        )
        .unwrap();
        let mode = |channel| assistant_core::response_modes::mode_in(&config.response_mode, channel);
        assert_eq!(mode("C0ASK1"), ResponseMode::MentionsOnly);
        assert_eq!(mode("C0ASK2"), ResponseMode::EveryQuestion);
        assert_eq!(mode("C0ELSE"), ResponseMode::ThreadReplies);
        assert_eq!(config.every_question_channels(), ["C0ASK*"]);
        for bad in [
            r#"{"response_mode": [{"channels": "D*", "mode": "mentions_only"}]}"#,
            r#"{"response_mode": [{"channels": "", "mode": "mentions_only"}]}"#,
            r#"{"response_mode": [{"channels": "C1", "mode": "always"}]}"#,
            r#"{"response_mode": [{"channels": "C1", "mode": "mentions_only", "extra": 1}]}"#,
        ] {
            assert!(AssistantConfig::parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }
    use slack::ChannelId;

    #[test]
    fn memory_is_kept_ninety_days_unless_the_configuration_says_otherwise() {
        assert_eq!(AssistantConfig::parse(b"{}").unwrap().memory.retention_secs(), 90 * 24 * 3600);
        let config = AssistantConfig::parse(br#"{"memory": {"retention_days": 30}}"#).unwrap();
        assert_eq!(config.memory.retention_secs(), 30 * 24 * 3600);
        for bad in [
            r#"{"memory": {"retention_days": 0}}"#,
            r#"{"memory": {"retention_days": 4000}}"#,
            r#"{"memory": {"days": 3}}"#,
        ] {
            assert!(AssistantConfig::parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_empty_object_means_the_defaults() {
        let config = AssistantConfig::parse(b"{}").unwrap();
        assert_eq!(config, AssistantConfig::default());
        assert_eq!(config.policy(), None, "no rules: the assembly allows only the built-in read-only tools");
    }

    #[test]
    fn the_policy_comes_from_the_rules_and_typos_are_refused() {
        let config = AssistantConfig::parse(
            br#"{"docs_prefix": "kb/", "tool_policy": [{"channels": "C0INC*", "tools": ["*"]}, {"channels": "*", "tools": ["current_time"]}]}"#,
        )
        .unwrap();
        assert_eq!(config.docs_prefix, "kb/");
        let policy = config.policy().unwrap();
        assert!(policy.allows(&ChannelId::new("C0INC1"), "read_doc"));
        assert!(!policy.allows(&ChannelId::new("C0GENERAL"), "read_doc"));
        assert!(
            AssistantConfig::parse(br#"{"tool_polcy": []}"#).is_err(),
            "a misspelt field is an error, not a default"
        );
    }

    #[test]
    fn allowed_env_never_names_the_functions_own_credentials() {
        let config = AssistantConfig::parse(br#"{"allowed_env": ["STATUS_API_TOKEN"]}"#).unwrap();
        assert_eq!(config.allowed_env, ["STATUS_API_TOKEN"]);
        for bad in ["AWS_SECRET_ACCESS_KEY", "aws_session_token", "SLACK_BOT_TOKEN", "", "A B", "X;Y"] {
            let json = serde_json::json!({ "allowed_env": [bad] }).to_string();
            let err = AssistantConfig::parse(json.as_bytes()).unwrap_err().to_string();
            assert!(err.contains("allowed_env"), "{bad}: {err}");
        }
    }

    #[test]
    fn approvals_default_to_the_requester_for_an_hour_and_bad_ones_are_refused() {
        assert_eq!(AssistantConfig::parse(b"{}").unwrap().approvals, ApprovalsConfig::default());
        let config = AssistantConfig::parse(
            br#"{"approvals": {"approvers": ["requester", "U061F7AUR", "S0614TZR7"], "allow_self_approval": false}}"#,
        )
        .unwrap();
        assert_eq!(config.approvals.approvers.len(), 3);
        assert_eq!((config.approvals.expires_after_secs, config.approvals.allow_self_approval), (3_600, false));
        assert_eq!((config.approvals.thread_grants, config.approvals.grant_minutes), (true, 60), "grants by default");
        let off = AssistantConfig::parse(br#"{"approvals": {"thread_grants": false, "grant_minutes": 15}}"#).unwrap();
        assert_eq!((off.approvals.thread_grants, off.approvals.grant_minutes), (false, 15));
        for bad in [
            r#"{"approvals": {"grant_minutes": 0}}"#,
            r#"{"approvals": {"grant_minutes": 1441}}"#,
            r#"{"approvals": {"thread_grants": "yes"}}"#,
            r#"{"approvals": {"approvers": []}}"#,
            r#"{"approvals": {"approvers": ["everyone"]}}"#,
            r#"{"approvals": {"approvers": ["<!channel>"]}}"#,
            r#"{"approvals": {"expires_after_secs": 0}}"#,
            r#"{"approvals": {"expires_after_secs": 99999999}}"#,
            r#"{"approvals": {"aprovers": ["requester"]}}"#,
        ] {
            assert!(AssistantConfig::parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn model_prices_are_dollars_per_million_tokens_and_nothing_else() {
        let config =
            AssistantConfig::parse(br#"{"model_prices": {"input_per_mtok": 3, "output_per_mtok": 15}}"#).unwrap();
        let prices = config.model_prices.unwrap();
        assert_eq!((prices.input_per_mtok, prices.output_per_mtok, prices.cache_read_per_mtok), (3.0, 15.0, 0.0));
        for bad in [
            r#"{"model_prices": {"input_per_mtok": -1, "output_per_mtok": 15}}"#,
            r#"{"model_prices": {"input_per_mtok": 3, "output_per_mtok": 1e400}}"#,
            r#"{"model_prices": {"input_per_mtok": 3, "output_per_mtok": 15, "discount": 0.5}}"#,
            r#"{"model_prices": {"input_per_mtok": "3"}}"#,
        ] {
            assert!(AssistantConfig::parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn suggested_prompts_default_to_three_and_bad_ones_are_refused() {
        assert_eq!(AssistantConfig::parse(b"{}").unwrap().suggested_prompts, default_prompts());
        let config = AssistantConfig::parse(
            br#"{"suggested_prompts": [{"title": "Deploys", "message": "What shipped today?"}]}"#,
        )
        .unwrap();
        assert_eq!(config.suggested_prompts[0].message, "What shipped today?");
        let five = serde_json::json!({"suggested_prompts": vec![serde_json::json!({"title": "t", "message": "m"}); 5]});
        let long_title = serde_json::json!({"suggested_prompts": [{"title": "x".repeat(76), "message": "m"}]});
        for bad in [
            r#"{"suggested_prompts": []}"#.to_owned(),
            five.to_string(),
            long_title.to_string(),
            r#"{"suggested_prompts": [{"title": " ", "message": "m"}]}"#.to_owned(),
            r#"{"suggested_prompts": [{"title": "t"}]}"#.to_owned(),
            r#"{"suggested_prompts": [{"title": "t", "message": "m", "icon": "x"}]}"#.to_owned(),
        ] {
            assert!(AssistantConfig::parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
