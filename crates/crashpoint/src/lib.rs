//! Named crash points: one seam for "kill the process right here", shared by the operator and
//! the sidecar (issue 11, item 7).
//!
//! Code calls [`hit`] with one of the [`Step`]s at the moment a crash would hurt most (after a
//! durable record, before its side effect). Normally `hit` does nothing and compiles to nothing.
//! Built with the test-only cargo feature `crash-points` and run with
//! `BLOODRAVEN_CRASH_AT=<step>[:<n>]`, the process writes one line naming the step to stderr
//! and aborts (SIGABRT) the `n`-th time (default 1) that step is reached.
//!
//! Binaries call [`check_env`] first thing, so that a misspelt `BLOODRAVEN_CRASH_AT` stops the
//! drill at startup instead of never firing. Without the feature the variable is never read
//! (not even by `check_env`); a drill runner that needs a crash checks the binary was built
//! with it (the binary can report [`ENABLED`]).
//!
//! To add a step: a variant in [`Step`], its name in [`Step::name`], its entry in [`Step::ALL`]
//! (a unit test checks the list is complete and the names unique).

use std::fmt;
use std::str::FromStr;

/// The environment variable that arms a crash point.
pub const ENV: &str = "BLOODRAVEN_CRASH_AT";

/// Whether this build has crash points (the `crash-points` feature).
pub const ENABLED: bool = cfg!(feature = "crash-points");

/// A place where a drill may kill the process. Names are `<binary>.<operation>.<moment>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Step {
    /// Operator failover: the failover is decided, its intent (`status.lastFailover` naming
    /// the target) is not written yet.
    OperatorFailoverBeforeIntentRecord,
    /// Operator failover: the intent record (which announces the fence and the promotion) is
    /// durable, the old primary is not fenced yet.
    OperatorFailoverAfterFenceRecord,
    /// Operator failover: about to fence the failed primary (best effort).
    OperatorFailoverBeforeFence,
    /// Operator failover: the old primary is fenced (or the attempt failed), the candidate is
    /// not promoted yet.
    OperatorFailoverAfterFence,
    /// Operator failover: about to promote the candidate.
    OperatorFailoverBeforePromote,
    /// Operator failover: the candidate is promoted (writable), the status and the `-primary`
    /// Service do not say so yet.
    OperatorFailoverAfterPromote,
    /// Operator failover: the promotion is read back; `status.activeSite` is not written yet.
    OperatorFailoverBeforeRecordActive,
    /// Operator failover: `status.activeSite` names the new primary; the `-primary` Service
    /// is not moved yet.
    OperatorFailoverAfterRecordActive,
    /// Operator failover: about to move the `-primary` Service to the new primary.
    OperatorFailoverBeforeServiceSwap,
    /// Operator failover: the `-primary` Service points at the new primary, the rest of the
    /// poll (the status of every site) is not written yet.
    OperatorFailoverAfterServiceSwap,
    /// Operator repoint: the follower is about to be stopped and pointed at the primary.
    OperatorRepointBefore,
    /// Operator repoint: the follower replicates from the primary again (`START REPLICA`).
    OperatorRepointAfter,
    /// Operator switchover: the old primary is read-only, the candidate has not caught up yet.
    OperatorSwitchoverAfterDemote,
    /// Planned failover: the Fencing record (`fence.state: Intended`) is durable, the fence is
    /// not sent yet.
    OperatorPlannedAfterFenceRecord,
    /// Planned failover: `super_read_only=ON` is sent to the source (and read back); the
    /// Draining record is not written yet.
    OperatorPlannedAfterFence,
    /// Planned failover: the Promoting record (`promotion.state: Intended`) is durable, no
    /// promotion statement is sent yet.
    OperatorPlannedAfterPromotionRecord,
    /// Planned failover: the promotion statements ran on the target; it is not confirmed by a
    /// live read yet.
    OperatorPlannedAfterPromote,
    /// Planned failover: the promotion is confirmed live; nothing is published yet (no
    /// `activeSite`, DNS or `planned-failover-confirmed`).
    OperatorPlannedBeforePublish,
    /// Planned failover: the promotion is published (`activeSite`, `lastFailover`, DNS, the
    /// confirmed marker, claim released); the Succeeded record is not written yet.
    OperatorPlannedAfterPublish,
    /// In-place restore: `status.restoreOfflineFence` is durable, `offline_mode` is not set yet.
    OperatorRestoreAfterFenceRecord,
    /// In-place restore: every peer's receiver is stopped and `jobCreating` is durable; no Job
    /// is created yet.
    OperatorRestoreAfterJobCreatingRecord,
    /// In-place restore: the Job's Secret exists, the Job is about to be created.
    OperatorRestoreBeforeJobCreate,
    /// In-place restore: the Job is created, its name is not in status yet.
    OperatorRestoreAfterJobCreate,
    /// In-place restore: `offline_mode` is put back; the Succeeded record (and the queue's
    /// Draining) is not written yet.
    OperatorRestoreAfterFenceRelease,
    /// Sidecar archive: a binlog object is written, the manifest does not list it yet.
    SidecarArchiveAfterObjectWrite,
    /// Sidecar archive: the manifest is written, local bookkeeping is not updated yet.
    SidecarArchiveAfterManifestWrite,
    /// Sidecar retention: between the writes that retire archived objects.
    SidecarRetireBetweenWrites,
    /// Sidecar: while a descriptor file is being created (written, not yet renamed in place).
    SidecarDescriptorDuringCreate,
}

impl Step {
    /// Every step, in declaration order.
    pub const ALL: &'static [Step] = &[
        Step::OperatorFailoverBeforeIntentRecord,
        Step::OperatorFailoverAfterFenceRecord,
        Step::OperatorFailoverBeforeFence,
        Step::OperatorFailoverAfterFence,
        Step::OperatorFailoverBeforePromote,
        Step::OperatorFailoverAfterPromote,
        Step::OperatorFailoverBeforeRecordActive,
        Step::OperatorFailoverAfterRecordActive,
        Step::OperatorFailoverBeforeServiceSwap,
        Step::OperatorFailoverAfterServiceSwap,
        Step::OperatorRepointBefore,
        Step::OperatorRepointAfter,
        Step::OperatorSwitchoverAfterDemote,
        Step::OperatorPlannedAfterFenceRecord,
        Step::OperatorPlannedAfterFence,
        Step::OperatorPlannedAfterPromotionRecord,
        Step::OperatorPlannedAfterPromote,
        Step::OperatorPlannedBeforePublish,
        Step::OperatorPlannedAfterPublish,
        Step::OperatorRestoreAfterFenceRecord,
        Step::OperatorRestoreAfterJobCreatingRecord,
        Step::OperatorRestoreBeforeJobCreate,
        Step::OperatorRestoreAfterJobCreate,
        Step::OperatorRestoreAfterFenceRelease,
        Step::SidecarArchiveAfterObjectWrite,
        Step::SidecarArchiveAfterManifestWrite,
        Step::SidecarRetireBetweenWrites,
        Step::SidecarDescriptorDuringCreate,
    ];

    /// The step's name, as `BLOODRAVEN_CRASH_AT` and drill files spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Step::OperatorFailoverBeforeIntentRecord => "operator.failover.before-intent-record",
            Step::OperatorFailoverAfterFenceRecord => "operator.failover.after-fence-record",
            Step::OperatorFailoverBeforeFence => "operator.failover.before-fence",
            Step::OperatorFailoverAfterFence => "operator.failover.after-fence",
            Step::OperatorFailoverBeforePromote => "operator.failover.before-promote",
            Step::OperatorFailoverAfterPromote => "operator.failover.after-promote",
            Step::OperatorFailoverBeforeRecordActive => "operator.failover.before-record-active",
            Step::OperatorFailoverAfterRecordActive => "operator.failover.after-record-active",
            Step::OperatorFailoverBeforeServiceSwap => "operator.failover.before-service-swap",
            Step::OperatorFailoverAfterServiceSwap => "operator.failover.after-service-swap",
            Step::OperatorRepointBefore => "operator.repoint.before",
            Step::OperatorRepointAfter => "operator.repoint.after",
            Step::OperatorSwitchoverAfterDemote => "operator.switchover.after-demote",
            Step::OperatorPlannedAfterFenceRecord => "operator.planned.after-fence-record",
            Step::OperatorPlannedAfterFence => "operator.planned.after-fence",
            Step::OperatorPlannedAfterPromotionRecord => "operator.planned.after-promotion-record",
            Step::OperatorPlannedAfterPromote => "operator.planned.after-promote",
            Step::OperatorPlannedBeforePublish => "operator.planned.before-publish",
            Step::OperatorPlannedAfterPublish => "operator.planned.after-publish",
            Step::OperatorRestoreAfterFenceRecord => "operator.restore.after-fence-record",
            Step::OperatorRestoreAfterJobCreatingRecord => {
                "operator.restore.after-job-creating-record"
            }
            Step::OperatorRestoreBeforeJobCreate => "operator.restore.before-job-create",
            Step::OperatorRestoreAfterJobCreate => "operator.restore.after-job-create",
            Step::OperatorRestoreAfterFenceRelease => "operator.restore.after-fence-release",
            Step::SidecarArchiveAfterObjectWrite => "sidecar.archive.after-object-write",
            Step::SidecarArchiveAfterManifestWrite => "sidecar.archive.after-manifest-write",
            Step::SidecarRetireBetweenWrites => "sidecar.retire.between-writes",
            Step::SidecarDescriptorDuringCreate => "sidecar.descriptor.during-create",
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Step {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Step::ALL
            .iter()
            .copied()
            .find(|step| step.name() == text)
            .ok_or_else(|| Error::UnknownStep { text: text.to_owned() })
    }
}

/// Where to crash: a step and which time it is reached (from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrashAt {
    /// The step.
    pub step: Step,
    /// Abort the `nth` time the step is reached (1 = the first time).
    pub nth: u64,
}

impl FromStr for CrashAt {
    type Err = Error;

    /// Parses `<step>[:<n>]`, `n` ≥ 1.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (step, nth) = match text.rsplit_once(':') {
            Some((step, nth)) => {
                let nth = nth.parse::<u64>().ok().filter(|nth| *nth >= 1).ok_or_else(|| {
                    Error::BadCount { text: text.to_owned(), count: nth.to_owned() }
                })?;
                (step, nth)
            }
            None => (text, 1),
        };
        Ok(CrashAt { step: step.parse()?, nth })
    }
}

/// A `BLOODRAVEN_CRASH_AT` that cannot be obeyed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The step name is not one of [`Step::ALL`].
    #[error(
        "{ENV}: {text:?} is not a crash point; known steps: {}",
        Step::ALL.iter().map(|step| step.name()).collect::<Vec<_>>().join(", ")
    )]
    UnknownStep {
        /// The step text as given.
        text: String,
    },
    /// The `:<n>` suffix is not a whole number ≥ 1.
    #[error("{ENV}={text:?}: the count {count:?} after ':' is not a whole number >= 1")]
    BadCount {
        /// The whole value.
        text: String,
        /// The count part.
        count: String,
    },
    /// The value is not UTF-8.
    #[error("{ENV} is not valid UTF-8; write <step>[:<n>]")]
    NotUnicode,
}

/// Validates `BLOODRAVEN_CRASH_AT` (if set) at startup; binaries call it first and exit with
/// the error otherwise. Returns the armed crash point, if any. Without the `crash-points`
/// feature it reads nothing and returns `Ok(None)`.
///
/// # Errors
/// An unknown step, a bad count, or non-UTF-8 text.
pub fn check_env() -> Result<Option<CrashAt>, Error> {
    if !ENABLED {
        return Ok(None);
    }
    match std::env::var(ENV) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(Error::NotUnicode),
        Ok(text) => text.parse().map(Some),
    }
}

/// Marks `step`. Without the `crash-points` feature this does nothing (and reads nothing).
#[cfg(not(feature = "crash-points"))]
#[inline(always)]
pub fn hit(step: Step) {
    let _ = step;
}

/// Marks `step` reached by the unit of work `scope` (the operator passes
/// `<namespace>/<group>`). Without the `crash-points` feature this does nothing.
#[cfg(not(feature = "crash-points"))]
#[inline(always)]
pub fn hit_in(scope: &str, step: Step) {
    let _ = (scope, step);
}

/// Marks `step` reached by the unit of work `scope`: aborts the process like [`hit`] when
/// `BLOODRAVEN_CRASH_AT` names it, and panics (ending the task or thread running `scope`)
/// when [`arm`] armed it for `scope` in this process.
#[cfg(feature = "crash-points")]
pub fn hit_in(scope: &str, step: Step) {
    armed::hit(step);
    in_process::hit(scope, step);
}

#[cfg(feature = "crash-points")]
pub use in_process::{arm, disarm, fired};

/// Marks `step`: aborts the process if `BLOODRAVEN_CRASH_AT` names it and this is the n-th hit.
#[cfg(feature = "crash-points")]
pub fn hit(step: Step) {
    armed::hit(step);
}

#[cfg(feature = "crash-points")]
mod armed {
    use std::io::Write;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::{CrashAt, Step};

    /// `BLOODRAVEN_CRASH_AT`, read once.
    fn armed() -> Option<CrashAt> {
        static ARMED: OnceLock<Option<CrashAt>> = OnceLock::new();
        *ARMED.get_or_init(|| match super::check_env() {
            Ok(armed) => armed,
            Err(error) => {
                // Reported once (no logger is guaranteed here); `check_env` at startup is where
                // binaries stop on it.
                let _ = writeln!(
                    std::io::stderr(),
                    "bloodraven-crashpoint: {error}; no crash point armed"
                );
                None
            }
        })
    }

    pub(super) fn hit(step: Step) {
        static HITS: AtomicU64 = AtomicU64::new(0);
        let Some(at) = armed() else { return };
        if at.step != step {
            return;
        }
        let count = HITS.fetch_add(1, Ordering::SeqCst) + 1;
        if count == at.nth {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "bloodraven-crashpoint: aborting at {step} (hit {count})");
            let _ = stderr.flush();
            std::process::abort();
        }
    }
}

/// In-process crash points for tests that run several units of work (operator groups) in one
/// process: a crash ends only the armed unit's task, by a panic, so the test can start a fresh
/// one in its place. Armings are keyed by scope, so concurrent tests do not see each other's.
#[cfg(feature = "crash-points")]
mod in_process {
    use std::collections::BTreeMap;
    use std::sync::{Mutex, MutexGuard, PoisonError};

    use super::{CrashAt, Step};

    struct Scopes {
        /// Armed: the crash point and the hits of its step counted since arming.
        armed: BTreeMap<String, (CrashAt, u64)>,
        /// Crashed: the step each scope crashed at.
        fired: BTreeMap<String, Step>,
    }

    fn scopes() -> MutexGuard<'static, Scopes> {
        static SCOPES: Mutex<Scopes> =
            Mutex::new(Scopes { armed: BTreeMap::new(), fired: BTreeMap::new() });
        SCOPES.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Arms `at` for `scope`: the `at.nth` hit of `at.step` by `scope` from now on panics. One
    /// arming per scope (a new one replaces it); it fires once, then is gone.
    pub fn arm(scope: &str, at: CrashAt) {
        let mut scopes = scopes();
        scopes.fired.remove(scope);
        scopes.armed.insert(scope.to_owned(), (at, 0));
    }

    /// Removes `scope`'s arming and its fired record.
    pub fn disarm(scope: &str) {
        let mut scopes = scopes();
        scopes.armed.remove(scope);
        scopes.fired.remove(scope);
    }

    /// The step `scope` crashed at since it was armed, if it did.
    pub fn fired(scope: &str) -> Option<Step> {
        scopes().fired.get(scope).copied()
    }

    pub(super) fn hit(scope: &str, step: Step) {
        let fire = {
            let mut scopes = scopes();
            let fire = match scopes.armed.get_mut(scope) {
                Some((at, count)) if at.step == step => {
                    *count += 1;
                    *count == at.nth
                }
                _ => false,
            };
            if fire {
                scopes.armed.remove(scope);
                scopes.fired.insert(scope.to_owned(), step);
            }
            fire
        };
        if fire {
            // The armed crash: ends the scope's task (or thread) by design.
            panic!("bloodraven-crashpoint: crashed at {step} in {scope}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_step_is_listed_once_with_a_unique_parseable_name() {
        let names: BTreeSet<&str> = Step::ALL.iter().map(|step| step.name()).collect();
        assert_eq!(names.len(), Step::ALL.len(), "duplicate step names");
        for step in Step::ALL {
            assert_eq!(step.name().parse::<Step>(), Ok(*step));
            assert!(
                step.name().starts_with("operator.") || step.name().starts_with("sidecar."),
                "{step} does not name its binary"
            );
        }
    }

    #[test]
    fn crash_at_parses_step_and_count() {
        assert_eq!(
            "sidecar.retire.between-writes".parse::<CrashAt>(),
            Ok(CrashAt { step: Step::SidecarRetireBetweenWrites, nth: 1 })
        );
        assert_eq!(
            "operator.failover.after-promote:3".parse::<CrashAt>(),
            Ok(CrashAt { step: Step::OperatorFailoverAfterPromote, nth: 3 })
        );
    }

    #[cfg(feature = "crash-points")]
    #[test]
    fn an_in_process_arming_fires_once_at_the_nth_hit_of_its_scope_only() {
        let at = CrashAt { step: Step::OperatorRepointAfter, nth: 2 };
        arm("unit-test/a", at);
        hit_in("unit-test/b", Step::OperatorRepointAfter);
        hit_in("unit-test/b", Step::OperatorRepointAfter);
        hit_in("unit-test/a", Step::OperatorRepointBefore);
        hit_in("unit-test/a", Step::OperatorRepointAfter);
        assert_eq!(fired("unit-test/a"), None);
        let crashed =
            std::panic::catch_unwind(|| hit_in("unit-test/a", Step::OperatorRepointAfter));
        assert!(crashed.is_err(), "the second hit in scope a panics");
        assert_eq!(fired("unit-test/a"), Some(Step::OperatorRepointAfter));
        assert_eq!(fired("unit-test/b"), None);
        // Fired once: the arming is gone.
        hit_in("unit-test/a", Step::OperatorRepointAfter);
        disarm("unit-test/a");
        assert_eq!(fired("unit-test/a"), None);
    }

    #[test]
    fn bad_crash_at_is_an_error_naming_the_input() {
        let unknown = "operator.failover.after-lunch".parse::<CrashAt>().unwrap_err();
        assert!(
            matches!(&unknown, Error::UnknownStep { text } if text == "operator.failover.after-lunch")
        );
        assert!(unknown.to_string().contains("operator.failover.after-promote"), "{unknown}");
        for count in ["0", "x", "-1", ""] {
            let text = format!("sidecar.retire.between-writes:{count}");
            assert_eq!(
                text.parse::<CrashAt>(),
                Err(Error::BadCount { text: text.clone(), count: count.to_owned() })
            );
        }
    }
}
