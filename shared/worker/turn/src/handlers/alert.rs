//! An alert (or a CloudWatch alarm's state change): its incident opened,
//! noted or closed.

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::incidents::AlertNotice;
use assistant_core::incidents::CloudwatchAlarm;
use tracing::{field, warn};

impl Handler for CloudwatchAlarm {
    /// A CloudWatch alarm's state change: an alert when it enters or
    /// leaves ALARM, nothing otherwise.
    async fn apply(&self, worker: &Worker, _deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        match assistant_core::incidents::sources::cloudwatch(&self.event) {
            Ok(Some(notice)) => worker.alerted(&notice).await,
            Ok(None) => Ok(Outcome::Ignored { reason: "alarm_state_not_an_alert" }),
            Err(err) => Err(WorkerError::Malformed(err.to_string())),
        }
    }
}

impl Handler for AlertNotice {
    async fn apply(&self, worker: &Worker, _deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.alerted(self).await
    }
}

impl Worker {
    /// An alert: its incident opened, noted or closed in its channel
    /// ([`crate::incidents`]).
    pub(crate) async fn alerted(
        &self,
        notice: &assistant_core::incidents::AlertNotice,
    ) -> Result<Outcome, WorkerError> {
        let Some(desk) = &self.incidents else {
            warn!(source = %notice.source, "an alert reached a worker without an incident desk: dropped");
            return Ok(Outcome::Ignored { reason: "no_incident_desk" });
        };
        tracing::Span::current().record("event_id", field::display(&notice.delivery));
        desk.handle(notice).await.map(Outcome::Incident).map_err(WorkerError::Incident)
    }
}
