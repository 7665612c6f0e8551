//! Work a worker's start begins that no answer waits for: publishing the
//! channels that answer every question, keeping and refreshing the MCP
//! servers' tool lists. It runs on the runtime that serves invocations,
//! and no invocation waits for it: it starts once the invocation in
//! progress has its answer ([`Background::release`]), so a cold start's
//! first answer does not share its thread with it (on the benchmark's
//! machine the publish beside the first invocation cost it about a
//! millisecond: a first `PutItem`'s signing and connection); what Lambda
//! freezes after the answer goes on when the process thaws, and every
//! piece of it is a read or a put of the same item again, safe to finish
//! late or to lose (the next start does it again). [`Background::settle`]
//! is for callers that need it done (tests, `WorkerFunction::load`).

use std::sync::Mutex;
use std::time::Duration;
use tokio::task::JoinHandle;
use tracing::warn;

pub struct Background {
    running: Mutex<Vec<JoinHandle<()>>>,
    /// Whether the work may run: set by the first [`Background::release`].
    released: tokio::sync::watch::Sender<bool>,
}

impl Default for Background {
    fn default() -> Self {
        Self { running: Mutex::default(), released: tokio::sync::watch::Sender::new(false) }
    }
}

impl Background {
    /// Spawns `work` (on the current Tokio runtime), to run once released.
    pub fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        let mut released = self.released.subscribe();
        let gated = async move {
            // The sender lives as long as this value; dropped, nobody waits.
            if released.wait_for(|released| *released).await.is_ok() {
                work.await;
            }
        };
        self.running.lock().expect("background lock").push(tokio::spawn(gated));
    }

    /// Lets the work spawned so far, and all spawned later, run: called
    /// when an invocation has its answer.
    pub fn release(&self) {
        self.released.send_replace(true);
    }

    /// Releases the work and waits up to `within` for it. What is not done
    /// by then goes on unwatched (each piece bounds its own time).
    pub async fn settle(&self, within: Duration) {
        self.release();
        let running: Vec<JoinHandle<()>> = std::mem::take(&mut *self.running.lock().expect("background lock"));
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
    async fn work_waits_for_the_answer_then_runs_and_later_work_runs_at_once() {
        let done = Arc::new(AtomicUsize::new(0));
        let background = Background::default();
        let counted = done.clone();
        background.spawn(async move {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(done.load(Ordering::SeqCst), 0, "held while the invocation runs");
        background.release();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(done.load(Ordering::SeqCst), 1, "run once released");
        let counted = done.clone();
        background.spawn(async move {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(done.load(Ordering::SeqCst), 2, "released for good");
    }

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
