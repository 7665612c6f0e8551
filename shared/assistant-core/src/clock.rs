//! Wall-clock time as Unix seconds, behind a trait so tests and benchmarks
//! can pin it (signature windows and record expiry both depend on it).

use std::time::{SystemTime, UNIX_EPOCH};

pub trait Clock: Send + Sync {
    fn now_unix(&self) -> i64;

    /// Milliseconds since the epoch, for durations people wait through.
    fn now_millis(&self) -> i64 {
        self.now_unix() * 1_000
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix(&self) -> i64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or_default()
    }

    fn now_millis(&self) -> i64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or_default()
    }
}

/// A clock stopped at one instant, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default)]
pub struct FixedClock(i64);

impl FixedClock {
    pub fn at(unix: i64) -> Self {
        Self(unix)
    }
}

impl Clock for FixedClock {
    fn now_unix(&self) -> i64 {
        self.0
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_unix(&self) -> i64 {
        (**self).now_unix()
    }

    fn now_millis(&self) -> i64 {
        (**self).now_millis()
    }
}
