//! How long the current invocation has left: the Lambda context's
//! deadline in the function, a test's budget in the tests.

use std::time::Duration;

pub trait Deadline: Send + Sync {
    fn time_left(&self) -> Duration;
}
