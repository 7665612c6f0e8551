//! The scheduled health check every function answers.
//!
//! An EventBridge schedule sends `{"detail-type":"Scheduled Event",
//! "source":"aws.events",…}`; the function checks each dependency it uses,
//! touches nothing else, and returns
//! `{"status":"ok"|"degraded","function":…,"version":…,"checks":[{"name":…,"ok":…,"ms":…}]}`.

use serde::{Deserialize, Serialize};
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// A dependency that does not answer within this is reported as down.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// The scheduled EventBridge event the health check arrives as: its
/// `detail-type` is `Scheduled Event` and its `source` `aws.events`; the
/// rest (`time`, `resources`, `detail`…) is not read. A variant of each
/// function's events ([`crate::events`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct HealthCheck {
    #[serde(rename = "detail-type")]
    detail_type: ScheduledEvent,
    source: AwsEvents,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum ScheduledEvent {
    #[serde(rename = "Scheduled Event")]
    ScheduledEvent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum AwsEvents {
    #[serde(rename = "aws.events")]
    AwsEvents,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Degraded,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    pub ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthReport {
    pub status: Status,
    pub function: &'static str,
    pub version: &'static str,
    pub checks: Vec<Check>,
}

impl HealthReport {
    pub fn new(function: &'static str, version: &'static str, checks: Vec<Check>) -> Self {
        let status = if checks.iter().all(|check| check.ok) { Status::Ok } else { Status::Degraded };
        Self { status, function, version, checks }
    }

    /// The failing checks and why: `s3: dispatch failure; slack: invalid_auth`.
    fn failing(&self) -> String {
        let failing: Vec<String> = self
            .checks
            .iter()
            .filter(|check| !check.ok)
            .map(|check| format!("{}: {}", check.name, check.error.as_deref().unwrap_or("failed")))
            .collect();
        failing.join("; ")
    }

    /// Alerts the ops channel when degraded: once an hour per set of
    /// failing checks (the reference carries them and the hour).
    pub async fn alert(&self, alerts: Option<&assistant_core::alerts::OpsAlerts>, now_unix: i64) {
        let Some(alerts) = alerts.filter(|_| self.status == Status::Degraded) else { return };
        let failing: Vec<&str> = self.checks.iter().filter(|check| !check.ok).map(|check| check.name).collect();
        let reference = format!("health-{}-{}-{}", self.function, failing.join("+"), now_unix / 3_600);
        let what = format!("The {}'s health check is degraded: {}.", self.function, self.failing());
        let alert = assistant_core::alerts::Alert { reference: &reference, what: &what, thread: None };
        match alerts.raise(alert).await {
            assistant_core::alerts::Raised::Failed(reason) => tracing::error!(reason, "ops alert not posted"),
            raised => tracing::info!(?raised, "ops alert for the health check"),
        }
    }

    /// The report as operators see it: one log line (ERROR when degraded,
    /// naming the failing checks) and the `HealthDegraded` metric (0 or 1,
    /// by `Function`; the template's `HealthDegradedAlarm` watches it).
    pub fn published(self) -> Self {
        let checks = serde_json::to_string(&self.checks).unwrap_or_default();
        match self.status {
            Status::Ok => tracing::info!(%checks, "health: ok"),
            Status::Degraded => tracing::error!(%checks, failing = %self.failing(), "health: degraded"),
        }
        crate::metrics::Emf::new(self.function, &[])
            .count("HealthDegraded", u64::from(self.status == Status::Degraded))
            .emit();
        self
    }
}

/// Runs one check with a time limit and records how long it took.
pub async fn check<F>(name: &'static str, probe: F) -> Check
where
    F: Future<Output = Result<(), String>>,
{
    let started = Instant::now();
    let outcome = tokio::time::timeout(CHECK_TIMEOUT, probe).await;
    let ms = started.elapsed().as_millis() as u64;
    let error = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(error)) => Some(error),
        Err(_) => Some(format!("no answer within {} s", CHECK_TIMEOUT.as_secs())),
    };
    Check { name, ok: error.is_none(), ms, error }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_only_the_scheduled_event() {
        let read = |event| serde_json::from_value::<HealthCheck>(event).is_ok();
        let file = include_str!("../../../tests/events/scheduled-health-check.json");
        assert!(read(serde_json::from_str(file).unwrap()));
        assert!(read(serde_json::json!({"detail-type": "Scheduled Event", "source": "aws.events"})));
        assert!(!read(serde_json::json!({"detail-type": "Scheduled Event", "source": "my.app"})));
        assert!(!read(serde_json::json!({"detail-type": "Approval Sweep", "source": "aws.events"})));
        assert!(!read(serde_json::json!({"body": "{}"})));
    }

    #[tokio::test]
    async fn a_failed_check_degrades_the_report() {
        let up = check("dynamodb", async { Ok(()) }).await;
        let down = check("sqs", async { Err("AccessDenied".to_owned()) }).await;
        let report = HealthReport::new("ingress", "1.0.0", vec![up.clone(), down]);
        assert_eq!(report.status, Status::Degraded);
        assert_eq!(HealthReport::new("ingress", "1.0.0", vec![up]).status, Status::Ok);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["status"], "degraded");
        assert_eq!(json["checks"][1]["error"], "AccessDenied");
    }

    #[tokio::test(start_paused = true)]
    async fn a_hung_dependency_is_reported_down_after_the_timeout() {
        let hung = check("sqs", std::future::pending()).await;
        assert!(!hung.ok);
        assert_eq!(hung.ms, CHECK_TIMEOUT.as_millis() as u64);
    }
}
