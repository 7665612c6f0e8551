//! The Home tab opened, or Disconnect clicked: the person's connections,
//! and their usage where budgets are set.

use super::Handler;
use crate::{Deadline, Outcome, Worker, WorkerError};
use assistant_core::messages::HomeAction;
use tracing::info;

impl Handler for HomeAction {
    async fn apply(&self, worker: &Worker, _deadline: &dyn Deadline) -> Result<Outcome, WorkerError> {
        worker.home(self).await
    }
}

impl Worker {
    /// The person's Home tab: their connections, each with Disconnect;
    /// after a Disconnect click, without that one (revoked at the
    /// provider where it offers revocation).
    pub(crate) async fn home(&self, home: &HomeAction) -> Result<Outcome, WorkerError> {
        let (connections, providers) = match &self.sign_in {
            Some(sign_in) => {
                if let Some(provider) = &home.disconnect {
                    let removed =
                        sign_in.disconnect(&home.team, &home.user, provider).await.map_err(WorkerError::SignIn)?;
                    info!(provider, user = %home.user, removed, "disconnect asked on the Home tab");
                }
                let connections =
                    sign_in.ports.vault.connections(&home.team, &home.user).await.map_err(WorkerError::SignIn)?;
                (connections, sign_in.providers.keys().cloned().collect())
            }
            None => (Vec::new(), Vec::new()),
        };
        let used = self.usage_for(&home.team, &home.user).await;
        let view = worker_identity::home::view(&connections, &providers, &used);
        self.agent.publish_home(&home.user, &view).await.map_err(WorkerError::Slack)?;
        Ok(Outcome::HomeShown)
    }
}
