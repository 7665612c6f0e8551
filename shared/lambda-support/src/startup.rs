//! A function's start-up, and what it does beside the Lambda runtime's
//! registration.
//!
//! The runtime's examples build their clients in `main`, then call
//! `run(service_fn(handler))`. Here the same `main` calls [`configure`] and
//! [`serve`], and nothing slow stands before the runtime's first poll:
//! the AWS SDK's configuration and its clients (each with its root store,
//! endpoint rules, retry and identity set-up) and the HTTP client for Slack
//! and the tools are built on helper threads ([`Deferred::spawn`]) while
//! `main`'s thread registers with the Runtime API and waits for the first
//! event; the
//! function is assembled from them on `main`'s thread, beside the runtime
//! ([`ColdStart::assemble`]), so its connections belong to the runtime that
//! serves requests; the first event waits only for what is left.
//!
//! What runs where on a cold start:
//!
//! | thread | what |
//! |---|---|
//! | `main` | [`configure`]: logging, the environment's configuration (and the secrets it names); then [`serve`]: the runtime (registration, `/next`, each invocation) joined with the assembly |
//! | helpers, each with its own current-thread Tokio runtime | what a function's [`ColdStart`] value spawns when it is made: the SDK's configuration and the clients a first event needs (the others are built when a call first needs them, `adapters_aws::Later`), an HTTP client; a helper may hand over its first part before the rest ([`Deferred::sent`]) |
//!
//! And on each event, before it is handled: [`ColdStart::read_ahead`]
//! starts beside the wait for the assembly (the worker reads the turns its
//! batch names, and on the first event the configuration it keeps, in one
//! request: a [`FirstRead`]), so a cold start's first read overlaps its
//! assembly instead of following it. Warm, the assembly is done and only
//! the read-ahead runs.
//!
//! The benchmark (`infra/bench.sh`) measures what this buys: process start
//! to ready, and the first invocation, against a hello-world binary.

use crate::events::{Events, Incoming, UnsupportedEvent};
use lambda_runtime::streaming::Body;
use lambda_runtime::{Error, FunctionResponse, LambdaEvent, service_fn};
use serde::Serialize;
use std::fmt::Display;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, OnceCell, oneshot};

/// First thing in `main`: installs logging ([`crate::logging`]), keeps
/// name lookups to glibc's built-in modules ([`crate::name_services`]),
/// then reads the function's configuration with `from_env` (which only
/// starts when both are in place). A configuration that cannot be read is
/// logged, and `main` returns it: the start fails, naming why.
pub async fn configure<C, E: Display>(from_env: impl Future<Output = Result<C, E>>) -> Result<C, E> {
    crate::logging::init();
    crate::name_services::pin();
    from_env.await.inspect_err(|err| tracing::error!("cannot start: {err}"))
}

/// How a function starts: what it builds on helper threads from the
/// moment the process starts (its constructor spawns them), the function
/// assembled from that, and what an event starts before the function is
/// needed.
pub trait ColdStart {
    /// What handles the events once assembled.
    type Function;
    /// The events the function takes.
    type Event: Events;

    /// The function, built on `main`'s thread beside the runtime's
    /// registration and first poll, from what the helpers build. An error
    /// ends [`serve`] with it, logged: `main` returns it, and the process
    /// exits as a failed init does.
    fn assemble(&self) -> impl Future<Output = Result<Self::Function, Error>>;

    /// Work an event starts before the function is needed: on a cold start
    /// it runs beside the assembly. None by default.
    fn read_ahead(&self, event: &Self::Event) -> impl Future<Output = ()> {
        let _ = event;
        async {}
    }
}

/// The Lambda runtime's `run`, for a function that starts as `start` says:
/// the runtime registers and polls for events while the function is
/// assembled; each event is read into [`ColdStart::Event`] (one of another
/// shape fails its invocation with [`UnsupportedEvent`]), read ahead, and
/// handled by `handler` once the function is assembled.
pub async fn serve<S, H, R>(start: S, handler: H) -> Result<(), Error>
where
    S: ColdStart,
    H: AsyncFn(&S::Function, LambdaEvent<S::Event>) -> R,
    R: Serialize,
{
    let function = Starting::new();
    let assemble = async {
        let assembled = start.assemble().await.inspect_err(|err| tracing::error!("cannot start: {err}"))?;
        function.set(assembled);
        Ok(())
    };
    let (function, start, handler) = (&function, &start, &handler);
    let run = lambda_runtime::run(service_fn(move |event: LambdaEvent<Incoming<S::Event>>| async move {
        let LambdaEvent { payload: Incoming(event), context } = event;
        let event = event?;
        let (function, ()) = tokio::join!(function.get(), start.read_ahead(&event));
        // Boxed: a handling's future is deep, and the runtime's own deeper.
        let response = Box::pin(handler(function, LambdaEvent::new(event, context))).await;
        Ok::<_, UnsupportedEvent>(FunctionResponse::<R, Body>::BufferedResponse(response))
    }));
    tokio::try_join!(assemble, run).map(|((), ())| ())
}

/// A value built on a helper thread from the moment it is spawned, while
/// `main`'s thread goes on (registering with the runtime, fetching the
/// first event); the first caller that needs it awaits it, and finds it
/// ready or nearly so. No caller waits longer than it would have had the
/// value been built before the runtime started.
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

    /// A value another thread sends when it has it (one helper building
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

/// A value set once on the caller's own thread (the function [`serve`]
/// assembles, a first read), which callers await until it is set.
pub struct Starting<T> {
    value: OnceCell<T>,
    set: Notify,
}

impl<T> Default for Starting<T> {
    fn default() -> Self {
        Self { value: OnceCell::new(), set: Notify::new() }
    }
}

impl<T> Starting<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the value and wakes those waiting for it; a second value is
    /// dropped.
    pub fn set(&self, value: T) {
        if self.value.set(value).is_ok() {
            self.set.notify_waiters();
        }
    }

    /// The value, once set.
    pub async fn get(&self) -> &T {
        loop {
            let set = self.set.notified();
            if let Some(value) = self.value.get() {
                return value;
            }
            set.await;
        }
    }
}

/// What the assembly needs once and the first event can read beside its
/// own reads, in one request: read by the first event's read-ahead, or
/// alone by the assembly when no event comes within a grace (a start before
/// any event). Whoever [`FirstRead::ask`]s first reads it and sets it.
pub struct FirstRead<T> {
    asked: AtomicBool,
    found: Starting<T>,
}

impl<T> Default for FirstRead<T> {
    fn default() -> Self {
        Self { asked: AtomicBool::new(false), found: Starting::new() }
    }
}

impl<T> FirstRead<T> {
    /// True to the first caller only, who is to read the value and
    /// [`FirstRead::set`] it.
    pub fn ask(&self) -> bool {
        !self.asked.swap(true, Ordering::SeqCst)
    }

    /// What the first caller read.
    pub fn set(&self, value: T) {
        self.found.set(value);
    }

    /// The value the first read found; when none has within `grace` and
    /// nobody has asked, `read_alone` reads it.
    pub async fn get(&self, grace: Duration, read_alone: impl Future<Output = T>) -> &T {
        tokio::select! {
            biased;
            found = self.found.get() => return found,
            () = tokio::time::sleep(grace) => {}
        }
        if self.ask() {
            self.set(read_alone.await);
        }
        self.found.get().await
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
    async fn callers_wait_for_a_starting_value_set_beside_them_on_their_thread() {
        let caller = std::thread::current().id();
        let starting = Starting::new();
        let set = async {
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            starting.set(std::thread::current().id());
        };
        let ((), a, b) = tokio::join!(set, starting.get(), starting.get());
        assert_eq!((*a, *b), (caller, caller), "set on the caller's thread, seen by both");
        starting.set(std::thread::current().id());
        assert_eq!(*starting.get().await, caller, "a later caller finds the first value at once");
    }

    const GRACE: Duration = Duration::from_millis(100);

    #[tokio::test(start_paused = true)]
    async fn the_first_event_reads_what_the_assembly_needs_and_the_assembly_takes_it() {
        let first = FirstRead::default();
        let event = async {
            assert!(first.ask(), "the first event asks");
            tokio::time::sleep(GRACE * 3).await;
            first.set("read with the event's own");
        };
        let assembly = first.get(GRACE, async { panic!("an asked-for value is not read again") });
        let ((), found) = tokio::join!(event, assembly);
        assert_eq!(*found, "read with the event's own", "past the grace: someone asked");
        assert!(!first.ask(), "a later event reads its own only");
    }

    #[tokio::test(start_paused = true)]
    async fn with_no_event_within_the_grace_the_assembly_reads_alone() {
        let first = FirstRead::default();
        let started = tokio::time::Instant::now();
        assert_eq!(*first.get(GRACE, async { "read alone" }).await, "read alone");
        assert_eq!(started.elapsed(), GRACE);
        assert!(!first.ask(), "the first event then reads its own only");
        assert_eq!(*first.get(GRACE, async { "again" }).await, "read alone");
    }
}
