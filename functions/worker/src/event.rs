//! The events the worker takes, read into one typed enum: an SQS batch
//! from the work queue, the minute's approval sweep, the health check.

use aws_lambda_events::sqs::SqsEvent;
use lambda_support::events::Events;
use lambda_support::health::HealthCheck;
use serde::Deserialize;

/// The events the worker takes, read once, for [`Arrival::prepare`] and
/// the handling both.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum WorkerEvent {
    HealthCheck(HealthCheck),
    ApprovalSweep(ApprovalSweep),
    Batch(SqsEvent),
}

impl Events for WorkerEvent {
    const EXPECTED: &'static str = "an SQS batch, the approval sweep or the scheduled health check";
}

/// The scheduled event that sweeps due approval deadlines and configured
/// schedules (`template.yaml`, `ApprovalSweep`: `{"source":
/// "slack-assistant", "detail-type": "Approval Sweep"}`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ApprovalSweep {
    pub(crate) source: SlackAssistant,
    #[serde(rename = "detail-type")]
    pub(crate) detail_type: SweepDetail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) enum SlackAssistant {
    #[serde(rename = "slack-assistant")]
    SlackAssistant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) enum SweepDetail {
    #[serde(rename = "Approval Sweep")]
    ApprovalSweep,
}
