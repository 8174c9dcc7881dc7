//! The workload's one schedule (pure: the caller passes `now`).
//!
//! Every session takes its next write from one [`Pacer`]: write `n` (its ticket, from 0) is due
//! `n / rate` after the first, so the sessions together write at the rate whatever each one's
//! latency, as long as enough of them are free. A session that finds its write overdue writes
//! at once; the schedule never runs more than its `slack` behind `now`, so after an outage
//! (every session stuck in a failing write) the workload catches up at most `slack × rate`
//! writes in a burst instead of the whole outage's worth.

use std::time::{Duration, Instant};

/// The shared schedule of a workload's writes.
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    period: Duration,
    slack: Duration,
    next_due: Option<Instant>,
    issued: u64,
}

impl Pacer {
    /// `rate_per_sec` writes per second (at least 1); the schedule lags `now` by at most `slack`.
    pub(crate) fn new(rate_per_sec: u32, slack: Duration) -> Self {
        Self {
            period: Duration::from_secs_f64(1.0 / f64::from(rate_per_sec.max(1))),
            slack,
            next_due: None,
            issued: 0,
        }
    }

    /// The next write: its ticket (0, 1, 2, …; every ticket once) and when it is due.
    pub(crate) fn take(&mut self, now: Instant) -> (u64, Instant) {
        let floor = now.checked_sub(self.slack).unwrap_or(now);
        let due = self.next_due.map_or(now, |next| next.max(floor));
        self.next_due = Some(due + self.period);
        let ticket = self.issued;
        self.issued += 1;
        (ticket, due)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::Pacer;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn writes_are_due_one_period_apart_from_the_first_take() {
        let start = Instant::now();
        let mut pacer = Pacer::new(1000, 100 * MS);
        let taken: Vec<(u64, Instant)> = (0..4).map(|_| pacer.take(start)).collect();
        assert_eq!(
            taken,
            [(0, start), (1, start + MS), (2, start + 2 * MS), (3, start + 3 * MS)],
            "several sessions asking at once get consecutive tickets, each one period later"
        );
    }

    #[test]
    fn a_late_session_writes_at_once_and_the_schedule_keeps_its_pace() {
        let start = Instant::now();
        let mut pacer = Pacer::new(100, 100 * MS);
        assert_eq!(pacer.take(start), (0, start));
        // 30 ms late (within the slack): the write is overdue, the next ones keep the schedule.
        assert_eq!(pacer.take(start + 40 * MS), (1, start + 10 * MS));
        assert_eq!(pacer.take(start + 40 * MS), (2, start + 20 * MS));
    }

    #[test]
    fn after_a_stall_the_schedule_catches_up_at_most_the_slack() {
        let start = Instant::now();
        let mut pacer = Pacer::new(1000, 100 * MS);
        let _ = pacer.take(start);
        // Every session was stuck for 2 s: the missed writes beyond the slack are dropped.
        let later = start + 2000 * MS;
        let (ticket, due) = pacer.take(later);
        assert_eq!((ticket, due), (1, later - 100 * MS));
        let overdue = (2..).map(|_| pacer.take(later)).take_while(|(_, due)| *due < later).count();
        assert_eq!(overdue, 99, "a burst of 100 ms of writes at 1,000/s, then the pace again");
        assert_eq!(pacer.take(later).1, later + MS);
    }
}
