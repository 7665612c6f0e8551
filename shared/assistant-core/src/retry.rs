//! The one retry loop. Every call that may succeed if made again (a 5xx,
//! a throttled read, a lost answer, a conditional write that lost a race)
//! goes through [`retry`]: the caller says how often and how long to wait
//! ([`Backoff`]) and, for each failure, whether another try may help
//! ([`Verdict`]); the loop counts the tries and waits. A server that says
//! when to come back (Slack's `Retry-After`) is heard with
//! [`Verdict::RetryAfter`].
//!
//! Read-modify-write loops on versioned records, which retry at once
//! whenever another writer won, use [`retry_races`].
//!
//! The waits are `tokio::time::sleep`, so tests that pause time run every
//! backoff in no time.

use std::future::Future;
use std::time::Duration;

/// How often a call is tried and how long the loop waits between tries:
/// `first` after the first failure, doubling after each, never over `cap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Tries in all, the first included (at least one is made).
    pub attempts: u32,
    /// The wait after the first failed try.
    pub first: Duration,
    /// No wait is longer.
    pub cap: Duration,
}

impl Backoff {
    /// `attempts` tries, waiting `first`, then twice as long each time.
    pub const fn new(attempts: u32, first: Duration) -> Self {
        Self { attempts, first, cap: Duration::MAX }
    }

    /// `attempts` tries one after another: a lost race is read again at once.
    pub const fn immediate(attempts: u32) -> Self {
        Self::new(attempts, Duration::ZERO)
    }

    /// The same, no wait longer than `cap`.
    pub const fn capped(self, cap: Duration) -> Self {
        Self { cap, ..self }
    }

    /// The wait after the `failed`th failed try (1 for the first):
    /// `first × 2^(failed − 1)`, at most `cap`.
    pub fn wait_after(&self, failed: u32) -> Duration {
        let doublings = failed.saturating_sub(1).min(31);
        self.first.saturating_mul(1 << doublings).min(self.cap)
    }
}

/// A failed try, as the classifier sees it.
#[derive(Debug)]
pub struct Failed<'a, E> {
    pub error: &'a E,
    /// Which try failed (1 for the first).
    pub attempt: u32,
    /// What the backoff would wait before the next.
    pub wait: Duration,
}

/// Whether to try again after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Another try cannot help: the error is the answer.
    Stop,
    /// Try again after the backoff's wait.
    Retry,
    /// Try again after the wait the server asked for.
    RetryAfter(Duration),
}

/// Runs `attempt` (given the try's number, 1 for the first) until it
/// succeeds, `verdict` says [`Verdict::Stop`], or `policy.attempts` tries
/// have failed; then returns the last error. `verdict` is asked only when
/// another try is allowed, so a caller that logs or counts retries there
/// logs each retry made and no other.
pub async fn retry<T, E, Fut>(
    policy: &Backoff,
    mut attempt: impl FnMut(u32) -> Fut,
    mut verdict: impl FnMut(Failed<'_, E>) -> Verdict,
) -> Result<T, E>
where
    Fut: Future<Output = Result<T, E>>,
{
    let mut tried = 1;
    loop {
        let error = match attempt(tried).await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        if tried >= policy.attempts {
            return Err(error);
        }
        let wait = match verdict(Failed { error: &error, attempt: tried, wait: policy.wait_after(tried) }) {
            Verdict::Stop => return Err(error),
            Verdict::Retry => policy.wait_after(tried),
            Verdict::RetryAfter(wait) => wait,
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        tried += 1;
    }
}

/// One try of a read-modify-write: it lost the race to another writer
/// (read again and retry), or it failed.
#[derive(Debug)]
pub enum Raced<E> {
    Lost,
    Failed(E),
}

impl<E> Raced<E> {
    /// A failure, converted to the caller's error: `.map_err(Raced::failed)?`.
    pub fn failed(error: impl Into<E>) -> Self {
        Self::Failed(error.into())
    }
}

impl<E> From<E> for Raced<E> {
    fn from(error: E) -> Self {
        Self::Failed(error)
    }
}

/// Runs a read-modify-write up to `attempts` times, at once after each
/// lost race; a failure ends it. `Ok(None)`: every try lost.
pub async fn retry_races<T, E, Fut>(attempts: u32, attempt: impl FnMut(u32) -> Fut) -> Result<Option<T>, E>
where
    Fut: Future<Output = Result<T, Raced<E>>>,
{
    let lost = |failed: Failed<'_, Raced<E>>| match failed.error {
        Raced::Lost => Verdict::Retry,
        Raced::Failed(_) => Verdict::Stop,
    };
    match retry(&Backoff::immediate(attempts), attempt, lost).await {
        Ok(value) => Ok(Some(value)),
        Err(Raced::Lost) => Ok(None),
        Err(Raced::Failed(error)) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use tokio::time::Instant;

    #[derive(Debug, PartialEq)]
    enum Error {
        Busy,
        Later(u64),
        Refused,
    }

    /// Runs `retry` over failures given in order (then success), and says
    /// when each try began, in ms after the start.
    async fn run(policy: Backoff, failures: Vec<Error>) -> (Result<&'static str, Error>, Vec<u128>) {
        let start = Instant::now();
        let failures = Mutex::new(failures.into_iter());
        let began = Mutex::new(Vec::new());
        let result = retry(
            &policy,
            |attempt| {
                began.lock().unwrap().push((attempt, start.elapsed().as_millis()));
                let next = failures.lock().unwrap().next();
                async move { next.map_or(Ok("done"), Err) }
            },
            |failed| match failed.error {
                Error::Busy => Verdict::Retry,
                Error::Later(secs) => Verdict::RetryAfter(Duration::from_secs(*secs)),
                Error::Refused => Verdict::Stop,
            },
        )
        .await;
        let began = began.into_inner().unwrap();
        assert!(began.iter().enumerate().all(|(i, (attempt, _))| *attempt as usize == i + 1), "{began:?}");
        (result, began.into_iter().map(|(_, at)| at).collect())
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_doubles_from_the_first_and_stops_at_the_cap() {
        let policy = Backoff::new(5, Duration::from_millis(100));
        let (result, began) = run(policy, vec![Error::Busy, Error::Busy, Error::Busy]).await;
        assert_eq!(result, Ok("done"));
        assert_eq!(began, [0, 100, 300, 700], "100, 200, 400 ms between the tries");

        let capped = policy.capped(Duration::from_millis(250));
        let (_, began) = run(capped, vec![Error::Busy, Error::Busy, Error::Busy]).await;
        assert_eq!(began, [0, 100, 300, 550]);
        assert_eq!((1..=4).map(|n| capped.wait_after(n).as_millis()).collect::<Vec<_>>(), [100, 200, 250, 250]);
        assert_eq!(Backoff::new(40, Duration::from_secs(1)).wait_after(40), Duration::from_secs(1 << 31));
    }

    #[tokio::test(start_paused = true)]
    async fn the_tries_are_counted_and_the_last_error_is_returned() {
        let (result, began) =
            run(Backoff::new(3, Duration::from_millis(10)), (0..5).map(|_| Error::Busy).collect()).await;
        assert_eq!(result, Err(Error::Busy));
        assert_eq!(began, [0, 10, 30], "three tries, no wait after the last");

        let (result, began) = run(Backoff::new(0, Duration::from_millis(10)), vec![Error::Busy]).await;
        assert_eq!((result, began.len()), (Err(Error::Busy), 1), "at least one try");
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_the_server_asks_for_is_the_wait() {
        let (result, began) =
            run(Backoff::new(4, Duration::from_millis(100)), vec![Error::Later(2), Error::Busy, Error::Later(1)]).await;
        assert_eq!(result, Ok("done"));
        assert_eq!(began, [0, 2_000, 2_200, 3_200], "2 s asked, the backoff's 200 ms (its second wait), 1 s asked");
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_no_retry_can_help_is_returned_at_once() {
        let (result, began) = run(Backoff::new(5, Duration::from_millis(100)), vec![Error::Busy, Error::Refused]).await;
        assert_eq!(result, Err(Error::Refused));
        assert_eq!(began, [0, 100]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_classifier_is_asked_only_when_another_try_is_allowed() {
        let asked = Mutex::new(Vec::new());
        let result: Result<(), Error> = retry(
            &Backoff::new(3, Duration::from_millis(10)),
            |_| async { Err(Error::Busy) },
            |failed| {
                asked.lock().unwrap().push((failed.attempt, failed.wait.as_millis()));
                Verdict::Retry
            },
        )
        .await;
        assert_eq!(result, Err(Error::Busy));
        assert_eq!(asked.into_inner().unwrap(), [(1, 10), (2, 20)]);
    }

    #[tokio::test(start_paused = true)]
    async fn lost_races_are_tried_again_at_once_and_a_failure_ends_them() {
        let start = Instant::now();
        let tries = Mutex::new(0);
        let won = retry_races(3, |attempt| {
            *tries.lock().unwrap() += 1;
            async move { if attempt < 3 { Err(Raced::<Error>::Lost) } else { Ok(attempt) } }
        })
        .await;
        assert_eq!((won, start.elapsed()), (Ok(Some(3)), Duration::ZERO));

        let lost = retry_races(3, |_| async { Err::<(), _>(Raced::<Error>::Lost) }).await;
        assert_eq!(lost, Ok(None), "every try lost");

        *tries.lock().unwrap() = 0;
        let failed = retry_races(3, |_| {
            *tries.lock().unwrap() += 1;
            async { Err::<(), _>(Raced::failed(Error::Refused)) }
        })
        .await;
        assert_eq!((failed, *tries.lock().unwrap()), (Err(Error::Refused), 1));
    }
}
