//! The commit ledger and its verification (pure: values in, a report out; no IO, no clock).
//!
//! The workload ([`crate::workload`]) records every write attempt: *acknowledged* only when
//! COMMIT returned OK, with the GTID the server reported for it (`session_track_gtids =
//! OWN_GTID`), or failed with a classified cause and its time. [`verify`] compares the ledger
//! with the keys a site holds: every acknowledged write present (RPO 0) or the lost ones listed
//! with their GTIDs, the writes whose outcome is unknown, and the write outage window (the first
//! and last read-only rejection).

use std::collections::{BTreeMap, HashSet};
use std::time::SystemTime;

use bloodraven_gtid::{Gtid, GtidSet};

/// Why a write failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureKind {
    /// Error 1290 naming `--super-read-only` (what an account with SUPER or CONNECTION_ADMIN
    /// sees on a fenced site).
    SuperReadOnly,
    /// Error 1290 naming `--read-only`, or 1836 (read-only mode). An ordinary application
    /// account sees this on a `super_read_only` site too: MySQL names `--read-only` to anyone
    /// without SUPER.
    ReadOnly,
    /// Error 3032: `offline_mode`.
    OfflineMode,
    /// Connecting failed or the connection broke (refused, reset, closed).
    Connection,
    /// No answer in time (a hung server or a blackholed link).
    Timeout,
    /// Any other server error.
    Server,
}

impl FailureKind {
    /// Whether this is a fencing rejection (counts toward the write outage window).
    pub fn is_read_only(self) -> bool {
        matches!(self, Self::SuperReadOnly | Self::ReadOnly)
    }
}

/// Classifies a server error.
pub fn classify_server_error(code: u16, message: &str) -> FailureKind {
    match code {
        1290 if message.contains("super-read-only") || message.contains("super_read_only") => {
            FailureKind::SuperReadOnly
        }
        1290 | 1836 => FailureKind::ReadOnly,
        3032 => FailureKind::OfflineMode,
        _ => FailureKind::Server,
    }
}

/// The step a write was at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Connecting (the write was never sent).
    Connect,
    /// `BEGIN` or the `INSERT` (the write cannot have committed).
    Write,
    /// `COMMIT`: a connection error or timeout here leaves the outcome unknown.
    Commit,
}

/// How one write attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// COMMIT returned OK; the GTID from the OK packet (None if the server sent none).
    Acknowledged {
        /// The GTID the server assigned.
        gtid: Option<Gtid>,
    },
    /// The write failed.
    Failed {
        /// Why.
        kind: FailureKind,
        /// Where.
        stage: Stage,
        /// The error text.
        detail: String,
    },
}

/// One write attempt (one unique key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The unique key written.
    pub key: u64,
    /// When the attempt started.
    pub started_at: SystemTime,
    /// When its outcome was known.
    pub ended_at: SystemTime,
    /// The outcome.
    pub outcome: Outcome,
}

impl Attempt {
    /// Whether COMMIT returned OK.
    pub fn is_acknowledged(&self) -> bool {
        matches!(self.outcome, Outcome::Acknowledged { .. })
    }

    /// Whether the write may or may not have committed (COMMIT sent, no answer).
    pub fn is_in_doubt(&self) -> bool {
        matches!(
            self.outcome,
            Outcome::Failed {
                stage: Stage::Commit,
                kind: FailureKind::Connection | FailureKind::Timeout,
                ..
            }
        )
    }
}

/// Every write attempt of one writer, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ledger {
    /// The writer's name (stored with each row).
    pub writer: String,
    /// The attempts, in the order they were made.
    pub attempts: Vec<Attempt>,
}

impl Ledger {
    /// An empty ledger.
    pub fn new(writer: impl Into<String>) -> Self {
        Self { writer: writer.into(), attempts: Vec::new() }
    }

    /// One ledger of `writer` from the ledgers of concurrent sessions (disjoint keys): every
    /// attempt of each, ordered by start time (ties keep the input order).
    pub fn merge(writer: impl Into<String>, ledgers: Vec<Ledger>) -> Self {
        let mut attempts: Vec<Attempt> = ledgers.into_iter().flat_map(|l| l.attempts).collect();
        attempts.sort_by_key(|a| a.started_at);
        Self { writer: writer.into(), attempts }
    }

    /// Records an attempt.
    pub fn record(&mut self, attempt: Attempt) {
        self.attempts.push(attempt);
    }

    /// The acknowledged attempts.
    pub fn acknowledged(&self) -> impl Iterator<Item = &Attempt> {
        self.attempts.iter().filter(|a| a.is_acknowledged())
    }

    /// The GTIDs of the acknowledged writes.
    pub fn acknowledged_gtids(&self) -> GtidSet {
        let mut set = GtidSet::new();
        for a in &self.attempts {
            if let Outcome::Acknowledged { gtid: Some(g) } = &a.outcome {
                let _ = set.insert(g);
            }
        }
        set
    }
}

/// An acknowledged write the site does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostWrite {
    /// Its key.
    pub key: u64,
    /// The GTID it was acknowledged with.
    pub gtid: Option<Gtid>,
    /// When COMMIT returned OK.
    pub acknowledged_at: SystemTime,
}

/// A write whose COMMIT got no answer: it may or may not have committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InDoubtWrite {
    /// Its key.
    pub key: u64,
    /// Whether the site holds it.
    pub present: bool,
    /// When the attempt ended.
    pub at: SystemTime,
}

/// The write outage: the first and last read-only rejection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutageWindow {
    /// The first read-only (or super_read_only) failure.
    pub first: SystemTime,
    /// The last one.
    pub last: SystemTime,
    /// How many writes were rejected so.
    pub rejected: usize,
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Write attempts in the ledger.
    pub attempts: usize,
    /// Acknowledged writes.
    pub acknowledged: usize,
    /// Acknowledged writes the site holds.
    pub present: usize,
    /// Acknowledged writes the site does not hold, in ledger order.
    pub lost: Vec<LostWrite>,
    /// Writes whose COMMIT got no answer.
    pub in_doubt: Vec<InDoubtWrite>,
    /// Keys of writes that failed before COMMIT (so cannot have committed) yet are on the site:
    /// a broken ledger or a broken server.
    pub phantom: Vec<u64>,
    /// Failures by kind.
    pub failures: BTreeMap<FailureKind, usize>,
    /// The write outage window (read-only rejections), if any.
    pub outage: Option<OutageWindow>,
}

impl Report {
    /// Every acknowledged write is on the site.
    pub fn rpo_zero(&self) -> bool {
        self.lost.is_empty()
    }

    /// The GTIDs of the lost writes.
    pub fn lost_gtids(&self) -> GtidSet {
        let mut set = GtidSet::new();
        for w in &self.lost {
            if let Some(g) = &w.gtid {
                let _ = set.insert(g);
            }
        }
        set
    }

    /// The lost keys.
    pub fn lost_keys(&self) -> Vec<u64> {
        self.lost.iter().map(|w| w.key).collect()
    }
}

/// Compares the ledger with the keys a site holds (`site_keys`, any order, other writers' keys
/// allowed).
pub fn verify(ledger: &Ledger, site_keys: &[u64]) -> Report {
    let on_site: HashSet<u64> = site_keys.iter().copied().collect();
    let mut report = Report {
        attempts: ledger.attempts.len(),
        acknowledged: 0,
        present: 0,
        lost: Vec::new(),
        in_doubt: Vec::new(),
        phantom: Vec::new(),
        failures: BTreeMap::new(),
        outage: None,
    };
    for a in &ledger.attempts {
        let present = on_site.contains(&a.key);
        match &a.outcome {
            Outcome::Acknowledged { gtid } => {
                report.acknowledged += 1;
                if present {
                    report.present += 1;
                } else {
                    report.lost.push(LostWrite {
                        key: a.key,
                        gtid: *gtid,
                        acknowledged_at: a.ended_at,
                    });
                }
            }
            Outcome::Failed { kind, stage, .. } => {
                *report.failures.entry(*kind).or_default() += 1;
                if kind.is_read_only() {
                    let w = report.outage.get_or_insert(OutageWindow {
                        first: a.ended_at,
                        last: a.ended_at,
                        rejected: 0,
                    });
                    w.first = w.first.min(a.ended_at);
                    w.last = w.last.max(a.ended_at);
                    w.rejected += 1;
                }
                if a.is_in_doubt() {
                    report.in_doubt.push(InDoubtWrite { key: a.key, present, at: a.ended_at });
                } else if present && *stage != Stage::Commit {
                    report.phantom.push(a.key);
                }
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(s)
    }

    fn ack(key: u64, n: u64) -> Attempt {
        let gtid = format!("3e11fa47-71ca-11e1-9e33-c80aa9429562:{n}").parse().unwrap();
        Attempt {
            key,
            started_at: at(key),
            ended_at: at(key),
            outcome: Outcome::Acknowledged { gtid: Some(gtid) },
        }
    }

    fn failed(key: u64, kind: FailureKind, stage: Stage) -> Attempt {
        Attempt {
            key,
            started_at: at(key),
            ended_at: at(key),
            outcome: Outcome::Failed { kind, stage, detail: String::new() },
        }
    }

    #[test]
    fn names_exactly_the_lost_acknowledged_writes_with_their_gtids() {
        let mut l = Ledger::new("w");
        for k in 1..=5 {
            l.record(ack(k, k));
        }
        let r = verify(&l, &[1, 2, 4, 99]);
        assert!(!r.rpo_zero());
        assert_eq!(r.acknowledged, 5);
        assert_eq!(r.present, 3);
        assert_eq!(r.lost_keys(), vec![3, 5]);
        assert_eq!(r.lost_gtids().to_string(), "3e11fa47-71ca-11e1-9e33-c80aa9429562:3:5");
        assert!(verify(&l, &[1, 2, 3, 4, 5]).rpo_zero());
    }

    #[test]
    fn a_merged_ledger_keeps_every_session_attempt_in_start_order_and_names_a_lost_one() {
        let mut first = Ledger::new("w");
        let mut second = Ledger::new("w");
        for n in 0..3 {
            first.record(ack(1 + 2 * n, 1 + 2 * n));
            second.record(ack(2 + 2 * n, 2 + 2 * n));
        }
        let merged = Ledger::merge("w", vec![first, second]);
        assert_eq!(merged.attempts.iter().map(|a| a.key).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
        assert!(verify(&merged, &[1, 2, 3, 4, 5, 6]).rpo_zero());
        let report = verify(&merged, &[1, 2, 3, 5, 6]);
        assert_eq!(report.lost_keys(), vec![4], "the second session's lost write");
    }

    #[test]
    fn outage_window_spans_read_only_rejections_only() {
        let mut l = Ledger::new("w");
        l.record(ack(1, 1));
        l.record(failed(2, FailureKind::Connection, Stage::Connect));
        l.record(failed(3, FailureKind::SuperReadOnly, Stage::Write));
        l.record(failed(4, FailureKind::Timeout, Stage::Write));
        l.record(failed(7, FailureKind::ReadOnly, Stage::Commit));
        l.record(ack(8, 2));
        let r = verify(&l, &[1, 8]);
        let w = r.outage.unwrap();
        assert_eq!((w.first, w.last, w.rejected), (at(3), at(7), 2));
        assert_eq!(r.failures[&FailureKind::Connection], 1);
        assert!(r.rpo_zero());
    }

    #[test]
    fn commit_without_answer_is_in_doubt_and_a_rejected_write_on_site_is_phantom() {
        let mut l = Ledger::new("w");
        l.record(failed(1, FailureKind::Timeout, Stage::Commit));
        l.record(failed(2, FailureKind::Connection, Stage::Commit));
        l.record(failed(3, FailureKind::SuperReadOnly, Stage::Write));
        let r = verify(&l, &[1, 3]);
        assert_eq!(
            r.in_doubt.iter().map(|d| (d.key, d.present)).collect::<Vec<_>>(),
            vec![(1, true), (2, false)]
        );
        assert_eq!(r.phantom, vec![3]);
        assert!(r.rpo_zero(), "in-doubt writes are not acknowledged");
    }

    #[test]
    fn classifies_fencing_errors() {
        let sro = "The MySQL server is running with the --super-read-only option so it cannot execute this statement";
        assert_eq!(classify_server_error(1290, sro), FailureKind::SuperReadOnly);
        assert_eq!(
            classify_server_error(1290, "The MySQL server is running with the --read-only option"),
            FailureKind::ReadOnly
        );
        assert_eq!(classify_server_error(1836, "Running in read-only mode"), FailureKind::ReadOnly);
        assert_eq!(classify_server_error(3032, "offline"), FailureKind::OfflineMode);
        assert_eq!(classify_server_error(1062, "dup"), FailureKind::Server);
    }
}
