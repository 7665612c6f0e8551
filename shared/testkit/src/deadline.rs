//! The one test double of an invocation's deadline ([`Budget`]): plenty
//! of time, or time for a given number of checks and then none.

use assistant_core::deadline::Deadline;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Plenty of time, unless told otherwise: `steps` checks pass, then none.
pub struct Budget {
    checks_with_time: AtomicU32,
}

impl Budget {
    /// All the time a turn wants (a Lambda invocation's fifteen minutes).
    pub fn plenty() -> Self {
        Self { checks_with_time: AtomicU32::new(u32::MAX) }
    }

    /// Time for `n` checks (a step each), then five seconds: too little
    /// for another step.
    pub fn steps(n: u32) -> Self {
        Self { checks_with_time: AtomicU32::new(n) }
    }
}

impl Deadline for Budget {
    fn time_left(&self) -> Duration {
        let left = self.checks_with_time.load(Ordering::SeqCst);
        if left == 0 {
            return Duration::from_secs(5);
        }
        if left != u32::MAX {
            self.checks_with_time.store(left - 1, Ordering::SeqCst);
        }
        Duration::from_secs(15 * 60)
    }
}
