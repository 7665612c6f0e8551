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
//!   "http_tools": [ … see [`crate::http_tools`] … ]
//! }
//! ```
//!
//! Every field is optional: no object at all means the bundled prompt,
//! documents under `docs/`, and every tool in every channel.

use crate::http_tools::HttpToolConfig;
use crate::tools::{ChannelRule, ToolPolicy};
use serde::Deserialize;

pub const DEFAULT_CONFIG_KEY: &str = "config/assistant.json";

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssistantConfig {
    /// An object holding the system prompt; the bundled one when absent.
    #[serde(default)]
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
}

fn default_docs_prefix() -> String {
    "docs/".to_owned()
}

impl Default for AssistantConfig {
    fn default() -> Self {
        Self { system_prompt_key: None, docs_prefix: default_docs_prefix(), tool_policy: None, http_tools: Vec::new() }
    }
}

impl AssistantConfig {
    pub fn parse(json: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(json)
    }

    pub fn policy(&self) -> ToolPolicy {
        self.tool_policy.clone().map(ToolPolicy::new).unwrap_or_else(ToolPolicy::allow_all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slack::ChannelId;

    #[test]
    fn an_empty_object_means_the_defaults() {
        let config = AssistantConfig::parse(b"{}").unwrap();
        assert_eq!(config, AssistantConfig::default());
        assert!(config.policy().allows(&ChannelId::new("C1"), "anything"));
    }

    #[test]
    fn the_policy_comes_from_the_rules_and_typos_are_refused() {
        let config = AssistantConfig::parse(
            br#"{"docs_prefix": "kb/", "tool_policy": [{"channels": "C0INC*", "tools": ["*"]}, {"channels": "*", "tools": ["current_time"]}]}"#,
        )
        .unwrap();
        assert_eq!(config.docs_prefix, "kb/");
        assert!(config.policy().allows(&ChannelId::new("C0INC1"), "read_doc"));
        assert!(!config.policy().allows(&ChannelId::new("C0GENERAL"), "read_doc"));
        assert!(
            AssistantConfig::parse(br#"{"tool_polcy": []}"#).is_err(),
            "a misspelt field is an error, not a default"
        );
    }
}
