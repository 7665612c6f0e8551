//! An SDK client built when a call first needs it ([`Later`]).

use std::sync::{Arc, Mutex, OnceLock};

/// An SDK client built the first time a call needs it, then shared by
/// every clone. Building one (its endpoint rules, runtime plugins and
/// HTTPS set-up) takes a few hundred microseconds of CPU: a cold start
/// builds the clients its first event uses, not the ones a later event
/// might (the worker's model and queues), and a process that never sends
/// to a queue never builds that client. Lambda gives a function a share
/// of a core in proportion to its memory (a 512 MB worker: under a third
/// of one), so a client built on a helper thread is not free either.
///
/// Two callers at once: one builds, the other waits for it (a few hundred
/// microseconds, once per process).
pub struct Later<C> {
    inner: Arc<Inner<C>>,
}

type Build<C> = Box<dyn FnOnce() -> C + Send>;

struct Inner<C> {
    client: OnceLock<C>,
    build: Mutex<Option<Build<C>>>,
}

impl<C> Later<C> {
    /// A client `build` makes when a call first needs it.
    pub fn new(build: impl FnOnce() -> C + Send + 'static) -> Self {
        Self { inner: Arc::new(Inner { client: OnceLock::new(), build: Mutex::new(Some(Box::new(build))) }) }
    }

    /// A client already built (tests, and functions whose first event uses it).
    pub fn ready(client: C) -> Self {
        Self { inner: Arc::new(Inner { client: OnceLock::from(client), build: Mutex::new(None) }) }
    }

    /// The client, built now if no call has needed it before.
    pub fn get(&self) -> &C {
        self.inner.client.get_or_init(|| {
            let build = self.inner.build.lock().expect("client builder lock").take();
            // `get_or_init` runs this once; only a client made `ready`
            // has no builder, and it is never uninitialized.
            build.expect("a client without a builder is built already")()
        })
    }

    /// Whether a call has needed the client yet (tests).
    pub fn is_built(&self) -> bool {
        self.inner.client.get().is_some()
    }
}

impl<C> Clone for Later<C> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone() }
    }
}

impl<C> From<C> for Later<C> {
    fn from(client: C) -> Self {
        Self::ready(client)
    }
}

impl<C> std::fmt::Debug for Later<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Later").field("built", &self.is_built()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn built_once_on_first_use_and_shared_by_clones() {
        let builds = Arc::new(AtomicUsize::new(0));
        let counted = builds.clone();
        let later = Later::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            String::from("client")
        });
        let clone = later.clone();
        assert!(!later.is_built());
        assert_eq!(builds.load(Ordering::SeqCst), 0, "nothing built until a call needs it");
        assert_eq!(clone.get(), "client");
        assert_eq!(later.get(), "client");
        assert!(later.is_built());
        assert_eq!(builds.load(Ordering::SeqCst), 1, "built once for every clone");
    }

    #[test]
    fn callers_on_several_threads_at_once_share_one_build() {
        let builds = Arc::new(AtomicUsize::new(0));
        let counted = builds.clone();
        let later = Later::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(20));
            7
        });
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let later = later.clone();
                std::thread::spawn(move || *later.get())
            })
            .collect();
        for thread in threads {
            assert_eq!(thread.join().unwrap(), 7);
        }
        assert_eq!(builds.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_ready_client_is_the_one_given() {
        let later: Later<&str> = "given".into();
        assert!(later.is_built());
        assert_eq!(*later.get(), "given");
    }
}
