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

/// `OPS_CHANNEL_ID`: the channel operators are alerted in, if any. A value
/// that is not a channel id (`C…`, `G…`) stops the start.
pub fn ops_channel() -> Result<Option<String>, ConfigError> {
    parse_ops_channel(optional("OPS_CHANNEL_ID"))
}

fn parse_ops_channel(value: Option<String>) -> Result<Option<String>, ConfigError> {
    let Some(channel) = value else { return Ok(None) };
    let valid = channel.len() <= 24
        && channel.starts_with(['C', 'G', 'D'])
        && channel.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if !valid {
        return Err(ConfigError::Invalid {
            name: "OPS_CHANNEL_ID",
            reason: format!("{channel:?} is not a Slack channel id (C…)"),
        });
    }
    Ok(Some(channel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ops_channel_is_a_channel_id_or_nothing() {
        assert_eq!(parse_ops_channel(None).unwrap(), None);
        assert_eq!(parse_ops_channel(Some("C0OPS123".into())).unwrap().as_deref(), Some("C0OPS123"));
        for bad in ["#ops", "C0OPS<!channel>", "c0ops", "U0PERSON", "C0OPS 1", &format!("C{}", "1".repeat(30))] {
            let err = parse_ops_channel(Some(bad.into())).unwrap_err().to_string();
            assert!(err.contains("OPS_CHANNEL_ID") && err.contains("not a Slack channel id"), "{bad}: {err}");
        }
    }
}
