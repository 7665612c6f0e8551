//! Loading the shared AWS configuration once per process.
//!
//! Endpoints come from the SDK's own variables (`AWS_ENDPOINT_URL`,
//! `AWS_ENDPOINT_URL_<SERVICE>`), which is how tests and the local runner
//! point the real clients at a local emulator.

use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, SdkConfig};
use std::time::Duration;

/// For the ingress acknowledgement path: Slack gives up after 3 s, so the
/// path's two calls together (claim, enqueue: 2 × 0.8 s) stay well under
/// it, retries included.
pub fn ack_path_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_millis(300))
        .operation_attempt_timeout(Duration::from_millis(400))
        .operation_timeout(Duration::from_millis(800))
        .build()
}

/// For the worker: a model call may stream for minutes, but a connection
/// that does not open or an attempt that never ends must not hold the turn.
pub fn worker_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(3))
        .operation_attempt_timeout(Duration::from_secs(180))
        .build()
}

/// For the responder: short calls, retried by SQS when they fail.
pub fn responder_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(2))
        .operation_attempt_timeout(Duration::from_secs(5))
        .operation_timeout(Duration::from_secs(15))
        .build()
}

pub async fn load(timeouts: TimeoutConfig) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest()).timeout_config(timeouts).load().await
}
