//! Environment variables of the runtime contract (see DESIGN.md).

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("environment variable {0} is not set (see the configuration table in README.md)")]
    Missing(&'static str),
    #[error("environment variable {name} is invalid: {reason}")]
    Invalid { name: &'static str, reason: String },
}

/// A variable that must be set and not blank.
pub fn required(name: &'static str) -> Result<String, ConfigError> {
    optional(name).ok_or(ConfigError::Missing(name))
}

/// A variable that may be absent; blank counts as absent.
pub fn optional(name: &'static str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}
