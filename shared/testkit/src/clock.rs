//! The one test clock: it stands where a test puts it ([`ManualClock::at`])
//! and moves only when told ([`ManualClock::set`]).

use std::sync::atomic::{AtomicI64, Ordering};

#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn at(unix: i64) -> Self {
        Self(AtomicI64::new(unix))
    }

    pub fn set(&self, unix: i64) {
        self.0.store(unix, Ordering::SeqCst);
    }
}

impl assistant_core::Clock for ManualClock {
    fn now_unix(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}
