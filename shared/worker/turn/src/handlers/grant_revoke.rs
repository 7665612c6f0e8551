//! "Revoke" on a thread's grant: the thread's tools ask again.

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::messages::{GrantRevoke, ReplyMessage};
use tracing::{Span, field, info, warn};

impl Handler for GrantRevoke {
    fn name_on(&self, span: &Span) {
        span.record("turn_id", field::display(&self.button.turn_id));
    }

    async fn apply(&self, worker: &Worker, _deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.revoke_grant(self).await
    }
}

impl Worker {
    /// A Revoke click under a grant's notice: the grant ends if the clicker
    /// gave it or may approve its tools; anyone else is told, only them.
    pub(crate) async fn revoke_grant(&self, click: &GrantRevoke) -> Result<Outcome, WorkerError> {
        let scope = &click.button.scope;
        let now = click.action_ts.unix_secs().unwrap_or_else(|| self.clock.now_unix());
        let for_user = click.button.for_user.as_ref();
        let found = self
            .grants
            .revocable(&click.thread, scope, for_user, &click.user, now)
            .await
            .map_err(WorkerError::Grants)?;
        let Some(grant) = found else {
            info!(scope = %scope, user = %click.user, "revoke of a grant not in force: nothing to do");
            return Ok(Outcome::Ignored { reason: "no_grant" });
        };
        let approvers = self.approvals.approvers_for(self.tools.rule_for_scope(scope));
        let may = click.user == grant.granted_by
            || self.approvals.names(self.slack.as_ref(), &click.user, approvers, self.clock.now_unix()).await;
        if !may {
            warn!(scope = %scope, user = %click.user, "revoke by someone who may not: the grant stands");
            let refused = ReplyMessage::RevokeRefused {
                turn_id: click.button.turn_id.clone(),
                thread: click.thread.clone(),
                user: click.user.clone(),
                scope: scope.clone(),
            };
            if let Err(err) = self.replies.send(&refused).await {
                warn!(error = %err, "the refused clicker was not told why");
            }
            return Ok(Outcome::Ignored { reason: "not_an_approver" });
        }
        let revoked = self.grants.revoke(&click.thread, grant, &click.user, now).await.map_err(WorkerError::Grants)?;
        info!(scope = %scope, user = %click.user, granted_by = %revoked.granted_by, "thread grant revoked");
        let told = ReplyMessage::GrantRevoked {
            turn_id: click.button.turn_id.clone(),
            thread: click.thread.clone(),
            grant: revoked,
            user: click.user.clone(),
        };
        self.replies.send(&told).await.map_err(WorkerError::Queue)?;
        Ok(Outcome::GrantRevoked)
    }
}
