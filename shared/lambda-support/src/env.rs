//! Environment variables of the runtime contract (`docs/src/runtime-contract.md`,
//! whose table `tests/docs.rs` holds to every name read here and in the
//! functions).

use assistant_core::ports::{NoSecrets, SecretStore};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("environment variable {0} is not set (see docs/src/runtime-contract.md)")]
    Missing(&'static str),
    #[error("environment variable {name} is invalid: {reason}")]
    Invalid { name: &'static str, reason: String },
    #[error("environment variable {name} names a secret that cannot be read: {reason}")]
    UnreadableSecret { name: &'static str, reason: String },
}

/// A variable that must be set and not blank.
pub fn required(name: &'static str) -> Result<String, ConfigError> {
    optional(name).ok_or(ConfigError::Missing(name))
}

/// A variable that may be absent; blank counts as absent.
pub fn optional(name: &'static str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}

/// A secret of the runtime contract: the value in its own variable
/// (`SLACK_BOT_TOKEN`: local runs, tests), or the name or ARN of the Secrets
/// Manager secret that holds it in the variable's `_ID` twin
/// (`SLACK_BOT_TOKEN_ID`: as the template deploys it, so that no function
/// configuration holds the value), read once at start-up. Its `Debug` never
/// prints a value.
#[derive(Clone, PartialEq, Eq)]
pub enum SecretVar {
    Value(String),
    Stored { variable: &'static str, secret_id: String },
}

impl std::fmt::Debug for SecretVar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Value(_) => f.write_str("Value(<redacted>)"),
            Self::Stored { variable, secret_id } => write!(f, "Stored({variable}={secret_id})"),
        }
    }
}

/// The secret `name` holds, or `id_variable` names; neither: `None`. Both
/// set stops the start: which one wins would be a guess.
pub fn secret(name: &'static str, id_variable: &'static str) -> Result<Option<SecretVar>, ConfigError> {
    pick_secret(name, id_variable, optional(name), optional(id_variable))
}

fn pick_secret(
    name: &'static str,
    id_variable: &'static str,
    value: Option<String>,
    id: Option<String>,
) -> Result<Option<SecretVar>, ConfigError> {
    match (value, id) {
        (None, None) => Ok(None),
        (Some(value), None) => Ok(Some(SecretVar::Value(value))),
        (None, Some(secret_id)) => Ok(Some(SecretVar::Stored { variable: id_variable, secret_id })),
        (Some(_), Some(_)) => Err(ConfigError::Invalid {
            name: id_variable,
            reason: format!("{name} is set too: set the secret's value or its Secrets Manager id, not both"),
        }),
    }
}

/// A secret that must be given one way or the other.
pub fn required_secret(name: &'static str, id_variable: &'static str) -> Result<SecretVar, ConfigError> {
    secret(name, id_variable)?.ok_or(ConfigError::Missing(name))
}

/// Whether any of `secrets` is to be read from a secret store.
pub fn any_stored<'a>(secrets: impl IntoIterator<Item = Option<&'a SecretVar>>) -> bool {
    secrets.into_iter().flatten().any(|secret| matches!(secret, SecretVar::Stored { .. }))
}

/// The values of `secrets`, in order: the stored ones read together (a
/// cold start waits for one round trip, not one a secret) from the store
/// `store` makes, which is made only when one of them is stored. The first
/// failure, in order, is the error.
pub async fn read_secrets<const N: usize>(
    secrets: [Option<SecretVar>; N],
    store: impl AsyncFnOnce() -> Box<dyn SecretStore>,
) -> Result<[Option<String>; N], ConfigError> {
    let store = if any_stored(secrets.iter().map(Option::as_ref)) { store().await } else { Box::new(NoSecrets) };
    let store = store.as_ref();
    let read = futures_util::future::join_all(secrets.map(|secret| read_optional(secret, store))).await;
    let values: Vec<Option<String>> = read.into_iter().collect::<Result<_, _>>()?;
    Ok(values.try_into().unwrap_or_else(|_| unreachable!("one value for each of the N secrets")))
}

impl SecretVar {
    /// The value: the variable's own, or the secret's, read from `store`
    /// (by the id as given: a name or an ARN). A secret that does not exist,
    /// cannot be read or is empty stops the start with an error naming the
    /// variable and the secret, never a value.
    pub async fn read(self, store: &dyn SecretStore) -> Result<String, ConfigError> {
        let (name, secret_id) = match self {
            Self::Value(value) => return Ok(value),
            Self::Stored { variable, secret_id } => (variable, secret_id),
        };
        let unreadable = |reason: String| ConfigError::UnreadableSecret { name, reason };
        match store.secret(&secret_id).await {
            Ok(Some(value)) if !value.trim().is_empty() => Ok(value),
            Ok(Some(_)) => Err(unreadable(format!("the secret {secret_id} is empty"))),
            Ok(None) => Err(unreadable(format!("Secrets Manager has no secret {secret_id}"))),
            Err(err) => Err(unreadable(err.to_string())),
        }
    }
}

/// [`SecretVar::read`] for a secret that may be absent.
pub async fn read_optional(secret: Option<SecretVar>, store: &dyn SecretStore) -> Result<Option<String>, ConfigError> {
    match secret {
        Some(secret) => secret.read(store).await.map(Some),
        None => Ok(None),
    }
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
    use assistant_core::ports::PortError;

    /// Secrets Manager as the start-up read sees it.
    struct Store;

    #[async_trait::async_trait]
    impl SecretStore for Store {
        async fn secret(&self, name: &str) -> Result<Option<String>, PortError> {
            match name {
                "slack/bot-token" => Ok(Some("xoxb-from-the-store".into())),
                "slack/empty" => Ok(Some(" \n".into())),
                "slack/denied" => Err(PortError::new(
                    "Secrets Manager GetSecretValue",
                    "slack/denied: HTTP 400 AccessDeniedException: not authorized",
                )),
                _ => Ok(None),
            }
        }
    }

    fn stored(secret_id: &str) -> SecretVar {
        SecretVar::Stored { variable: "SLACK_BOT_TOKEN_ID", secret_id: secret_id.into() }
    }

    #[test]
    fn a_secret_is_its_value_or_the_id_of_a_stored_one_never_both() {
        let pick = |value: Option<&str>, id: Option<&str>| {
            pick_secret("SLACK_BOT_TOKEN", "SLACK_BOT_TOKEN_ID", value.map(Into::into), id.map(Into::into))
        };
        assert_eq!(pick(None, None).unwrap(), None);
        assert_eq!(pick(Some("xoxb-1"), None).unwrap(), Some(SecretVar::Value("xoxb-1".into())));
        assert_eq!(pick(None, Some("slack/bot-token")).unwrap(), Some(stored("slack/bot-token")));
        let both = pick(Some("xoxb-1"), Some("slack/bot-token")).unwrap_err().to_string();
        assert!(both.contains("SLACK_BOT_TOKEN_ID") && both.contains("not both"), "{both}");
        assert!(!both.contains("xoxb-1"), "{both}");
        assert!(any_stored([Some(&SecretVar::Value("v".into())), None, Some(&stored("x"))]));
        assert!(!any_stored([Some(&SecretVar::Value("v".into())), None]));
        assert_eq!(format!("{:?}", SecretVar::Value("xoxb-1".into())), "Value(<redacted>)");
    }

    /// A store each of whose reads waits until `together` reads are under
    /// way: read one after another, they would wait forever.
    struct Together(tokio::sync::Barrier);

    #[async_trait::async_trait]
    impl SecretStore for Together {
        async fn secret(&self, name: &str) -> Result<Option<String>, PortError> {
            self.0.wait().await;
            Ok(Some(format!("value of {name}")))
        }
    }

    #[tokio::test]
    async fn a_start_reads_its_stored_secrets_together_and_keeps_their_order() {
        // GIVEN three secrets stored, as the ingress's are
        let secrets = [Some(stored("signing")), Some(stored("alertmanager")), Some(stored("pagerduty"))];
        // WHEN they are read from a store that answers only once all three asked
        let make = async || Box::new(Together(tokio::sync::Barrier::new(3))) as Box<dyn SecretStore>;
        let read = tokio::time::timeout(std::time::Duration::from_secs(5), read_secrets(secrets, make)).await;
        // THEN one round trip answered them all, each in its place
        let values = read.expect("read together, not one after another").unwrap();
        assert_eq!(values, ["signing", "alertmanager", "pagerduty"].map(|name| Some(format!("value of {name}"))));
    }

    #[tokio::test]
    async fn a_stored_secret_is_read_once_and_a_missing_denied_or_empty_one_names_the_variable() {
        assert_eq!(stored("slack/bot-token").read(&Store).await.unwrap(), "xoxb-from-the-store");
        let value = SecretVar::Value("xoxb-plain".into());
        let no_store = NoSecrets;
        assert_eq!(value.read(&no_store).await.unwrap(), "xoxb-plain", "a value needs no store");
        assert_eq!(read_optional(None, &no_store).await.unwrap(), None);
        let made = std::sync::atomic::AtomicBool::new(false);
        let make = async || {
            made.store(true, std::sync::atomic::Ordering::SeqCst);
            Box::new(Store) as Box<dyn SecretStore>
        };
        let values = read_secrets([Some(SecretVar::Value("v".into())), None], make).await.unwrap();
        assert_eq!(values, [Some("v".to_owned()), None]);
        assert!(!made.load(std::sync::atomic::Ordering::SeqCst), "no store without a stored secret");
        let values = read_secrets([Some(stored("slack/bot-token")), Some(SecretVar::Value("v".into()))], make).await;
        assert_eq!(values.unwrap(), [Some("xoxb-from-the-store".to_owned()), Some("v".to_owned())]);
        assert!(made.load(std::sync::atomic::Ordering::SeqCst));
        for (id, says) in [
            ("slack/missing", "Secrets Manager has no secret slack/missing"),
            ("slack/denied", "AccessDeniedException"),
            ("slack/empty", "the secret slack/empty is empty"),
        ] {
            let err = stored(id).read(&Store).await.unwrap_err().to_string();
            assert!(err.starts_with("environment variable SLACK_BOT_TOKEN_ID names a secret"), "{err}");
            assert!(err.contains(says), "{id}: {err}");
        }
    }

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
