//! Checks the assistant configuration's parts share (`worker-config`, the
//! enhancer, alerts, schedules, the tool families): the error a refused
//! part is, where a configuration object may live, and a named list's
//! bounds.

use std::fmt;

/// A refused part of the assistant configuration: the field it is about
/// (`aws_tools.logs.max_rows`, `alerts`, `schedules`) and the message the
/// operator reads, which names the field itself ("aws_tools.logs.max_rows
/// must be from 1 to 1000", "alerts: channel \"D1\" must be a channel id").
/// Serde reports it where the configuration is read (`#[serde(try_from)]`),
/// so its text is what `worker-config` shows; code asks [`Self::field`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    field: String,
    message: String,
}

impl ConfigError {
    /// `{field}: {problem}`, e.g. `alerts: match "x": "" needs a label name and a glob`.
    pub fn at(field: impl Into<String>, problem: impl fmt::Display) -> Self {
        let field = field.into();
        Self { message: format!("{field}: {problem}"), field }
    }

    /// `{field} {rest}`, e.g. `prompt_enhancer.model_id names the cheap model`.
    pub fn that(field: impl Into<String>, rest: impl fmt::Display) -> Self {
        let field = field.into();
        Self { message: format!("{field} {rest}"), field }
    }

    /// `{field} must {rule}`, e.g. `memory.retention_days must be 1 to 3650, not 0`.
    pub fn must(field: impl Into<String>, rule: impl fmt::Display) -> Self {
        Self::that(field, format_args!("must {rule}"))
    }

    /// The field refused, as the configuration spells it.
    pub fn field(&self) -> &str {
        &self.field
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// A key outside [`CONFIGURATION_OBJECTS`]: the worker's role could not read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must name an object under {CONFIGURATION_OBJECTS} (the worker's role reads no other configuration object)")]
pub struct NotReadable;

/// Where the objects a configuration names (prompts, the service catalog)
/// must live: of the bucket, the worker's role reads configuration under
/// `config/` alone (`docs/` holds the team's documents, `turns/` and
/// `cache/` its own; template.yaml). A key elsewhere would parse here and
/// be refused by IAM in AWS.
pub const CONFIGURATION_OBJECTS: &str = "config/";

/// `key`, when it names an object under [`CONFIGURATION_OBJECTS`].
pub fn readable_object(key: &str) -> Result<(), NotReadable> {
    if key.starts_with(CONFIGURATION_OBJECTS) && key.len() > CONFIGURATION_OBJECTS.len() {
        Ok(())
    } else {
        Err(NotReadable)
    }
}

/// A configuration list of at most `max` entries whose names differ.
pub fn named_list<T>(items: Vec<T>, field: &str, max: usize, name: impl Fn(&T) -> &str) -> Result<Vec<T>, ConfigError> {
    if items.len() > max {
        return Err(ConfigError::at(field, format_args!("at most {max}")));
    }
    for (n, item) in items.iter().enumerate() {
        if items[..n].iter().any(|earlier| name(earlier) == name(item)) {
            return Err(ConfigError::at(field, format_args!("two are named {}", name(item))));
        }
    }
    Ok(items)
}
