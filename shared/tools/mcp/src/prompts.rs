//! A server's prompts as the DM's suggested prompts (`"prompts": true`):
//! what a person sees when they open the bot's DM, beside the configured
//! `suggested_prompts`, with no model call.
//!
//! The prompts come from `prompts/list`, listed and kept with the server's
//! tools (see [`super::kept`]: a start does not wait for them). A prompt
//! that needs an argument is left out (a button cannot fill it). Each
//! offered one is a button titled with the prompt's title (or name) that
//! sends its description (or title): a server's words, so both are
//! redacted and cut to Slack's bounds
//! ([`MAX_SUGGESTED_TITLE_CHARS`], [`MAX_SUGGESTED_MESSAGE_CHARS`]), and a
//! prompt with nothing left to show is left out. The servers' prompts come
//! first, in the configuration's order, then the configured ones, at most
//! [`MAX_SUGGESTED_PROMPTS`] in all ([`with_configured`]).

use super::McpServerConfig;
use assistant_core::mcp::McpPromptInfo;
use assistant_core::ports::{
    MAX_SUGGESTED_MESSAGE_CHARS, MAX_SUGGESTED_PROMPTS, MAX_SUGGESTED_TITLE_CHARS, SuggestedPrompt,
};

/// The suggested prompts of the servers with `"prompts": true`, from what
/// each listed (`listed[i]` is `configs[i]`'s), at most
/// [`MAX_SUGGESTED_PROMPTS`].
pub fn suggested(configs: &[McpServerConfig], listed: &[Vec<McpPromptInfo>]) -> Vec<SuggestedPrompt> {
    configs
        .iter()
        .zip(listed)
        .filter(|(config, _)| config.prompts)
        .flat_map(|(_, prompts)| prompts.iter().filter(|prompt| !prompt.needs_arguments).filter_map(suggestion))
        .take(MAX_SUGGESTED_PROMPTS)
        .collect()
}

/// The servers' prompts first, then the configured ones, at most
/// [`MAX_SUGGESTED_PROMPTS`].
pub fn with_configured(servers: Vec<SuggestedPrompt>, configured: &[SuggestedPrompt]) -> Vec<SuggestedPrompt> {
    servers.into_iter().chain(configured.iter().cloned()).take(MAX_SUGGESTED_PROMPTS).collect()
}

fn suggestion(prompt: &McpPromptInfo) -> Option<SuggestedPrompt> {
    let shown = |text: Option<&String>, max: usize| -> Option<String> {
        let text = text.map(|text| text.trim()).filter(|text| !text.is_empty())?;
        let redacted = redact::Redactor::global().redact(text);
        let one_line = redacted.split_whitespace().collect::<Vec<_>>().join(" ");
        Some(one_line.chars().take(max).collect())
    };
    let title = shown(prompt.title.as_ref(), MAX_SUGGESTED_TITLE_CHARS)
        .or_else(|| shown(Some(&prompt.name), MAX_SUGGESTED_TITLE_CHARS))?;
    let message = shown(prompt.description.as_ref(), MAX_SUGGESTED_MESSAGE_CHARS).unwrap_or_else(|| title.clone());
    Some(SuggestedPrompt { title, message })
}
