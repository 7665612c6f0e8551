//! Start-up work off the start-up path.
//!
//! Loading the AWS configuration and building SDK clients reads the
//! platform's root certificates and parses every one of them (the SDK does
//! it when a client is built, on purpose), a few milliseconds that a
//! request which needs no AWS call (Slack's `url_verification`, a bad
//! signature, an event that starts nothing) should not wait for. A
//! [`Deferred`] value is built on its own thread from the moment the process
//! starts, while the Lambda runtime registers and fetches the first event;
//! the first request that needs it awaits it, and finds it ready or nearly
//! so. No request waits longer than it would have had the value been built
//! before the runtime started.

use std::sync::Mutex;
use tokio::sync::{Notify, OnceCell, oneshot};

pub struct Deferred<T> {
    value: OnceCell<T>,
    pending: Mutex<Option<oneshot::Receiver<T>>>,
}

impl<T: Send + 'static> Deferred<T> {
    /// Starts building the value on a new thread with its own
    /// single-threaded Tokio runtime (what `build` creates is not tied to it:
    /// SDK clients use the runtime of the task that calls them).
    pub fn spawn<F, Fut>(build: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = T>,
    {
        let (sender, deferred) = Self::sent();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a single-threaded Tokio runtime builds");
            // The receiver is gone only if the process is shutting down.
            let _ = sender.send(runtime.block_on(build()));
        });
        deferred
    }

    /// A value another thread sends when it has it (one thread building
    /// several, the first of them sooner than the rest).
    pub fn sent() -> (oneshot::Sender<T>, Self) {
        let (sender, receiver) = oneshot::channel();
        (sender, Self { value: OnceCell::new(), pending: Mutex::new(Some(receiver)) })
    }

    /// A value already built (tests, and callers that hold one).
    pub fn ready(value: T) -> Self {
        Self { value: OnceCell::new_with(Some(value)), pending: Mutex::new(None) }
    }

    /// The value, once built.
    pub async fn get(&self) -> &T {
        self.value
            .get_or_init(|| async {
                let receiver = self.pending.lock().expect("deferred lock").take();
                receiver.expect("only the first caller takes the receiver").await.expect("the builder thread panicked")
            })
            .await
    }
}

/// A value built beside the runtime on the caller's own thread (work that
/// calls out: reading a configuration, building on [`Deferred`] clients),
/// so its connections belong to the runtime that keeps serving requests.
/// `main` joins [`Starting::build`] with the Lambda runtime's `run`, which
/// registers and polls for the first event meanwhile; callers of
/// [`Starting::get`] wait until it is built.
pub struct Starting<T> {
    value: OnceCell<T>,
    built: Notify,
}

impl<T> Default for Starting<T> {
    fn default() -> Self {
        Self { value: OnceCell::new(), built: Notify::new() }
    }
}

impl<T> Starting<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds the value; to be joined with what serves requests.
    pub async fn build(&self, build: impl Future<Output = T>) {
        let value = build.await;
        if self.value.set(value).is_ok() {
            self.built.notify_waiters();
        }
    }

    /// The value, once built.
    pub async fn get(&self) -> &T {
        loop {
            let built = self.built.notified();
            if let Some(value) = self.value.get() {
                return value;
            }
            built.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn the_value_is_built_once_off_the_caller_thread_and_shared() {
        let builds = Arc::new(AtomicUsize::new(0));
        let caller = std::thread::current().id();
        let counted = builds.clone();
        let deferred = Arc::new(Deferred::spawn(move || async move {
            counted.fetch_add(1, Ordering::SeqCst);
            std::thread::current().id()
        }));
        let (a, b) = tokio::join!(deferred.get(), deferred.get());
        assert_eq!(a, b);
        assert_ne!(*a, caller, "built on its own thread");
        assert_eq!(builds.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_value_sent_by_the_thread_that_builds_it_is_seen_before_the_rest_is_built() {
        let (send_first, first) = Deferred::sent();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let rest = Deferred::spawn(move || async move {
            send_first.send("first").expect("the receiver is held");
            released.recv().expect("the test releases the rest");
            "rest"
        });
        assert_eq!(*first.get().await, "first", "while the rest is still being built");
        release.send(()).unwrap();
        assert_eq!((*first.get().await, *rest.get().await), ("first", "rest"));
    }

    #[tokio::test]
    async fn callers_wait_for_a_starting_value_built_beside_them_on_their_thread() {
        let caller = std::thread::current().id();
        let starting = Starting::new();
        let build = starting.build(async {
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            std::thread::current().id()
        });
        let (_, a, b) = tokio::join!(build, starting.get(), starting.get());
        assert_eq!((*a, *b), (caller, caller), "built on the caller's thread, seen by both");
        assert_eq!(*starting.get().await, caller, "a later caller finds it at once");
    }
}
