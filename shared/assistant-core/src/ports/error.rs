//! The error every port returns, and the question every function asks of
//! an error: would handling the same message again succeed?

use std::error::Error as StdError;
use std::fmt;

/// An error that knows whether handling the same message again may
/// succeed: what decides between an SQS retry and the dead-letter queue.
pub trait Retryable: fmt::Display {
    fn is_retryable(&self) -> bool;
}

/// A storage or queue operation failed. Carries the operation and the
/// adapter's error, so logs say what failed and why.
#[derive(Debug)]
pub struct PortError {
    operation: &'static str,
    detail: String,
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl PortError {
    pub fn new(operation: &'static str, detail: impl Into<String>) -> Self {
        Self { operation, detail: detail.into(), source: None }
    }

    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }
}

impl fmt::Display for PortError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.operation, self.detail)
    }
}

impl StdError for PortError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|s| s as &(dyn StdError + 'static))
    }
}
