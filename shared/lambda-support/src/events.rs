//! The events a function takes, read into its own typed enum.
//!
//! Each function names the events it accepts in one enum (the scheduled
//! health check, an SQS batch, an HTTP request…), `#[serde(untagged)]` so
//! that serde tries each shape in turn, and implements [`Events`] for it.
//! An invocation whose payload is none of them (a misconfigured trigger) is
//! an [`UnsupportedEvent`]: the invocation fails with it, naming what the
//! function takes, and nothing else happens.

use serde::de::{Deserialize, DeserializeOwned, Deserializer, Error as _};

/// The events a function takes: an enum with one variant per kind of
/// event, read by serde.
pub trait Events: DeserializeOwned {
    /// What the function takes, for the error an unsupported event ends
    /// with: `"an SQS batch or the scheduled health check"`.
    const EXPECTED: &'static str;
}

/// An invocation whose event this function does not take (a misconfigured
/// trigger): the invocation fails with this, and nothing else happens.
#[derive(Debug, thiserror::Error)]
#[error("event is not {expected}: {source}")]
pub struct UnsupportedEvent {
    pub expected: &'static str,
    #[source]
    pub source: serde_json::Error,
}

impl From<UnsupportedEvent> for lambda_runtime::Diagnostic {
    fn from(err: UnsupportedEvent) -> Self {
        Self { error_type: "UnsupportedEvent".to_owned(), error_message: err.to_string() }
    }
}

/// `payload` as one of the events `E` a function takes (an invocation
/// given as JSON: tests, the local runner).
pub fn read<E: Events>(payload: serde_json::Value) -> Result<E, UnsupportedEvent> {
    E::deserialize(payload).map_err(|source| UnsupportedEvent { expected: E::EXPECTED, source })
}

/// An invocation's payload as the Lambda runtime reads it for
/// [`crate::startup::serve`]: one of the events `E`, or the
/// [`UnsupportedEvent`] the invocation fails with (rather than the
/// runtime's own deserialization error, which would not say what the
/// function takes).
pub(crate) struct Incoming<E>(pub(crate) Result<E, UnsupportedEvent>);

impl<'de, E: Events> Deserialize<'de> for Incoming<E> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Read straight from the runtime's bytes; an untagged enum has
        // consumed the whole payload whether a variant matched or not.
        let read = E::deserialize(deserializer);
        Ok(Self(read.map_err(|err| UnsupportedEvent { expected: E::EXPECTED, source: serde_json::Error::custom(err) })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::HealthCheck;

    #[derive(Debug, serde::Deserialize)]
    #[serde(untagged)]
    enum Taken {
        HealthCheck(#[allow(dead_code)] HealthCheck),
        Greeting { hello: String },
    }

    impl Events for Taken {
        const EXPECTED: &'static str = "a greeting or the scheduled health check";
    }

    #[test]
    fn an_event_is_read_as_the_variant_whose_shape_it_has() {
        let health = include_str!("../../../tests/events/scheduled-health-check.json");
        let health: serde_json::Value = serde_json::from_str(health).unwrap();
        assert!(matches!(read::<Taken>(health), Ok(Taken::HealthCheck(_))));
        let greeting = read::<Taken>(serde_json::json!({"hello": "world"})).unwrap();
        assert!(matches!(greeting, Taken::Greeting { hello } if hello == "world"));
    }

    #[test]
    fn an_event_of_another_shape_is_unsupported_and_says_what_is_taken() {
        // The runtime's path: straight from the payload's bytes.
        let incoming: Incoming<Taken> = serde_json::from_str(r#"{"Records": []}"#).unwrap();
        let err = incoming.0.unwrap_err();
        assert!(err.to_string().starts_with("event is not a greeting or the scheduled health check: "), "{err}");
        let diagnostic = lambda_runtime::Diagnostic::from(err);
        assert_eq!(diagnostic.error_type, "UnsupportedEvent");
        // The JSON path: the same error.
        let err = read::<Taken>(serde_json::json!({"detail-type": "Scheduled Event"})).unwrap_err();
        assert_eq!(err.expected, Taken::EXPECTED);
    }
}
