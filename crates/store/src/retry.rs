//! A small bounded retry for transient store errors.
//!
//! The schedule is pure ([`RetryPolicy::backoff_after`]); only [`retry_transient`] sleeps, with
//! `tokio::time`, so tests can pause time. No jitter: the attempts are few and the callers
//! (one sidecar or Job per site) do not stampede.

use std::future::Future;
use std::time::Duration;

use crate::error::Result;

/// How many times to try and how long to wait in between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts, including the first (at least 1 is always made).
    pub attempts: u32,
    /// The wait after the first failed attempt; it doubles after each further failure.
    pub first_backoff: Duration,
    /// The longest single wait.
    pub max_backoff: Duration,
}

impl RetryPolicy {
    /// The spec's archive-read policy: 6 attempts over about 31 s (1 + 2 + 4 + 8 + 16 s).
    pub const ARCHIVE: RetryPolicy = RetryPolicy {
        attempts: 6,
        first_backoff: Duration::from_secs(1),
        max_backoff: Duration::from_secs(16),
    };

    /// One attempt, no retry.
    pub const NONE: RetryPolicy =
        RetryPolicy { attempts: 1, first_backoff: Duration::ZERO, max_backoff: Duration::ZERO };

    /// The wait after failed attempt number `attempt` (1-based), or `None` when that was the
    /// last attempt.
    pub fn backoff_after(&self, attempt: u32) -> Option<Duration> {
        if attempt == 0 || attempt >= self.attempts {
            return None;
        }
        let doublings = attempt.saturating_sub(1).min(31);
        let backoff = self.first_backoff.saturating_mul(1u32 << doublings);
        Some(backoff.min(self.max_backoff))
    }

    /// The sum of every wait: the longest time the policy spends sleeping.
    pub fn total_backoff(&self) -> Duration {
        (1..self.attempts)
            .filter_map(|attempt| self.backoff_after(attempt))
            .fold(Duration::ZERO, Duration::saturating_add)
    }
}

/// Runs `operation` until it succeeds, fails with a non-transient error, or the policy's
/// attempts are spent; returns the last result. Only [`crate::ErrorKind::Transient`] errors are
/// retried.
pub async fn retry_transient<T, F, Fut>(policy: RetryPolicy, mut operation: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut attempt = 1;
    loop {
        match operation().await {
            Err(error) if error.is_transient() => match policy.backoff_after(attempt) {
                Some(backoff) => {
                    tracing::debug!(attempt, ?backoff, %error, "transient store error, retrying");
                    tokio::time::sleep(backoff).await;
                    attempt += 1;
                }
                None => return Err(error),
            },
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::error::{Error, ErrorKind, Operation};

    fn transient() -> Error {
        Error::Transient {
            store: "test".into(),
            operation: Operation::Get,
            key: "k".into(),
            detail: "connection reset".into(),
        }
    }

    #[test]
    fn archive_policy_waits_about_31_seconds() {
        let policy = RetryPolicy::ARCHIVE;
        let waits: Vec<_> = (1..=6).map(|attempt| policy.backoff_after(attempt)).collect();
        let secs = |s| Some(Duration::from_secs(s));
        assert_eq!(waits, [secs(1), secs(2), secs(4), secs(8), secs(16), None]);
        assert_eq!(policy.total_backoff(), Duration::from_secs(31));
    }

    #[test]
    fn backoff_is_capped_and_never_overflows() {
        let policy = RetryPolicy {
            attempts: u32::MAX,
            first_backoff: Duration::from_secs(3),
            max_backoff: Duration::from_secs(10),
        };
        assert_eq!(policy.backoff_after(1), Some(Duration::from_secs(3)));
        assert_eq!(policy.backoff_after(2), Some(Duration::from_secs(6)));
        assert_eq!(policy.backoff_after(3), Some(Duration::from_secs(10)));
        assert_eq!(policy.backoff_after(100), Some(Duration::from_secs(10)));
        assert_eq!(policy.backoff_after(0), None);
        assert_eq!(RetryPolicy::NONE.backoff_after(1), None);
        assert_eq!(RetryPolicy::NONE.total_backoff(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn transient_errors_are_retried_until_success() {
        let calls = AtomicU32::new(0);
        let started = tokio::time::Instant::now();
        let result = retry_transient(RetryPolicy::ARCHIVE, || async {
            if calls.fetch_add(1, Ordering::SeqCst) < 3 { Err(transient()) } else { Ok(7) }
        })
        .await;
        assert_eq!(result.unwrap(), 7);
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        assert_eq!(started.elapsed(), Duration::from_secs(1 + 2 + 4));
    }

    #[tokio::test(start_paused = true)]
    async fn transient_errors_stop_after_the_last_attempt() {
        let calls = AtomicU32::new(0);
        let started = tokio::time::Instant::now();
        let result: Result<()> = retry_transient(RetryPolicy::ARCHIVE, || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(transient())
        })
        .await;
        assert_eq!(result.unwrap_err().kind(), ErrorKind::Transient);
        assert_eq!(calls.load(Ordering::SeqCst), 6);
        assert_eq!(started.elapsed(), Duration::from_secs(31));
    }

    #[tokio::test(start_paused = true)]
    async fn permanent_errors_are_not_retried() {
        let calls = AtomicU32::new(0);
        let result: Result<()> = retry_transient(RetryPolicy::ARCHIVE, || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(Error::NotFound {
                store: "test".into(),
                operation: Operation::Get,
                key: "k".into(),
            })
        })
        .await;
        assert_eq!(result.unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
