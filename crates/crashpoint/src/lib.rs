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
    /// Operator failover: the fence record is durable, the old primary is not fenced yet.
    OperatorFailoverAfterFenceRecord,
    /// Operator failover: the old primary is fenced, the candidate is not promoted yet.
    OperatorFailoverAfterFence,
    /// Operator failover: the candidate is promoted (writable), the status and the `-primary`
    /// Service do not say so yet.
    OperatorFailoverAfterPromote,
    /// Operator failover: the `-primary` Service points at the new primary, the status is not
    /// written yet.
    OperatorFailoverAfterServiceSwap,
    /// Operator switchover: the old primary is read-only, the candidate has not caught up yet.
    OperatorSwitchoverAfterDemote,
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
        Step::OperatorFailoverAfterFenceRecord,
        Step::OperatorFailoverAfterFence,
        Step::OperatorFailoverAfterPromote,
        Step::OperatorFailoverAfterServiceSwap,
        Step::OperatorSwitchoverAfterDemote,
        Step::SidecarArchiveAfterObjectWrite,
        Step::SidecarArchiveAfterManifestWrite,
        Step::SidecarRetireBetweenWrites,
        Step::SidecarDescriptorDuringCreate,
    ];

    /// The step's name, as `BLOODRAVEN_CRASH_AT` and drill files spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Step::OperatorFailoverAfterFenceRecord => "operator.failover.after-fence-record",
            Step::OperatorFailoverAfterFence => "operator.failover.after-fence",
            Step::OperatorFailoverAfterPromote => "operator.failover.after-promote",
            Step::OperatorFailoverAfterServiceSwap => "operator.failover.after-service-swap",
            Step::OperatorSwitchoverAfterDemote => "operator.switchover.after-demote",
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
