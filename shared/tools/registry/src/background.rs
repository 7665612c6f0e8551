//! Work a worker's start begins that no answer waits for: publishing the
//! channels that answer every question, keeping and refreshing the MCP
//! servers' tool lists. It runs on the runtime that serves invocations,
//! beside their work, and no invocation waits for it: what Lambda freezes
//! between invocations goes on when the process thaws, and every piece of
//! it is a read or a put of the same item again, safe to finish late or to
//! lose (the next start does it again). [`Background::settle`] is for
//! callers that need it done (tests, `WorkerFunction::load`).

use std::sync::Mutex;
use std::time::Duration;
use tokio::task::JoinHandle;
use tracing::warn;

#[derive(Default)]
pub struct Background(Mutex<Vec<JoinHandle<()>>>);

impl Background {
    /// Starts `work` now (on the current Tokio runtime).
    pub fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        self.0.lock().expect("background lock").push(tokio::spawn(work));
    }

    /// Waits up to `within` for the work started so far. What is not done
    /// by then goes on unwatched (each piece bounds its own time).
    pub async fn settle(&self, within: Duration) {
        let running: Vec<JoinHandle<()>> = std::mem::take(&mut *self.0.lock().expect("background lock"));
        if running.is_empty() {
            return;
        }
        if tokio::time::timeout(within, futures_util::future::join_all(running)).await.is_err() {
            warn!(waited_ms = within.as_millis() as u64, "background start-up work still running: left to finish");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(start_paused = true)]
    async fn settle_waits_for_the_work_started_and_no_longer_than_it_is_told() {
        let done = Arc::new(AtomicUsize::new(0));
        let background = Background::default();
        for delay in [10, 20] {
            let done = done.clone();
            background.spawn(async move {
                tokio::time::sleep(Duration::from_millis(delay)).await;
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        background.settle(Duration::from_secs(1)).await;
        assert_eq!(done.load(Ordering::SeqCst), 2, "both finished before settle returned");

        let slow = done.clone();
        background.spawn(async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            slow.fetch_add(1, Ordering::SeqCst);
        });
        let started = tokio::time::Instant::now();
        background.settle(Duration::from_secs(2)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(2), "bounded");
        assert_eq!(done.load(Ordering::SeqCst), 2);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(done.load(Ordering::SeqCst), 3, "left to finish, not cancelled");
        background.settle(Duration::from_secs(1)).await;
    }
}
