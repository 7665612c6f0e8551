//! The AWS services every function uses, behind the core's ports: one
//! module per service, each translating domain types to SDK calls at this
//! edge. The binaries build one SDK client per service per process (see
//! [`config`]) and lend it to these adapters, some built only when a call
//! first needs them ([`Later`]). Bedrock and S3, which only
//! the worker uses, are their own crates beside this one
//! (`shared/adapters/bedrock`, `shared/adapters/s3`), so the ingress and
//! the responder link neither.

pub mod config;
pub mod dynamodb;
pub mod http_client;
pub mod later;
pub mod provision;
pub mod sqs;

pub use later::Later;

use assistant_core::ports::PortError;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use std::error::Error as StdError;

/// One line saying why an SDK call failed: the service's error code and
/// message, or the transport's cause chain (timeout, connection refused).
/// An SDK error's own `Display` says only "service error", and its cause
/// chain includes the whole raw response.
pub fn summarize<E, R>(err: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + StdError + 'static,
    R: std::fmt::Debug,
{
    match err.as_service_error() {
        Some(service) => {
            format!("{}: {}", service.code().unwrap_or("UnknownError"), service.message().unwrap_or("no message"))
        }
        None => DisplayErrorContext(err).to_string(),
    }
}

pub fn port_error<E, R>(operation: &'static str, err: SdkError<E, R>) -> PortError
where
    E: ProvideErrorMetadata + StdError + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    PortError::new(operation, summarize(&err)).with_source(err)
}

/// For the SDK's builder errors (a required field left unset: a bug here).
pub fn build_error(what: &'static str, err: impl StdError + Send + Sync + 'static) -> PortError {
    PortError::new(what, err.to_string()).with_source(err)
}
