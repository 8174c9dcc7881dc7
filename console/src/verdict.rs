//! The console's side of the verdict (`bloodraven_facts::verdict`): one verdict per group from
//! the objects the console holds, and its JSON form, printed by `status -o json|yaml` under
//! the key [`VERDICT_KEY`] of each item.

use bloodraven_crd::{MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};
use bloodraven_facts::verdict::{self, Inputs, Severity, Verdict};
use jiff::Timestamp;
use serde_json::{Value, json};

pub use bloodraven_facts::verdict::{Finding, Kind};

/// The key under which `status -o json|yaml` adds the verdict to each group.
pub const VERDICT_KEY: &str = "bloodravenVerdict";

/// The verdict on `group`, reading the backups and verifications that name it.
pub fn of(
    group: &MysqlFailoverGroup,
    backups: &[MysqlBackup],
    verifications: &[MysqlBackupVerification],
    now: Timestamp,
) -> Verdict {
    of_with_lease(group, backups, verifications, None, now)
}

/// [`of`], also judging the operator's leader Lease: renewed more than
/// [`verdict::LEASE_SILENT_AFTER`] before `now` is an `OperatorSilent` finding (critical) on
/// every group, since no operator acts on any of them.
pub fn of_with_lease(
    group: &MysqlFailoverGroup,
    backups: &[MysqlBackup],
    verifications: &[MysqlBackupVerification],
    operator_lease_renewed: Option<Timestamp>,
    now: Timestamp,
) -> Verdict {
    verdict::verdict(&Inputs {
        group,
        backups,
        verifications,
        archive: None,
        operator_lease_renewed,
        now,
    })
}

/// `HEALTHY`, `INFO`, `WARNING` or `CRITICAL` with its text marker (`[!!] CRITICAL`), the
/// word the fleet and `status` show.
pub fn label(verdict: &Verdict) -> String {
    match verdict.worst() {
        None => "ok".to_owned(),
        Some(severity) => format!("{} {}", severity.marker(), severity.as_str()),
    }
}

/// Counts of findings by severity over many verdicts: `(critical, warning, info)` groups,
/// each group counted once at its worst severity.
pub fn fleet_counts<'a>(verdicts: impl IntoIterator<Item = &'a Verdict>) -> [usize; 3] {
    let mut counts = [0; 3];
    for verdict in verdicts {
        match verdict.worst() {
            Some(Severity::Critical) => counts[0] += 1,
            Some(Severity::Warning) => counts[1] += 1,
            Some(Severity::Info) => counts[2] += 1,
            None => {}
        }
    }
    counts
}

/// The verdict as JSON: `{"worst": "critical"|null, "archive": "...", "findings": [...]}`.
pub fn to_json(verdict: &Verdict) -> Value {
    json!({
        "worst": verdict.worst().map(Severity::as_str),
        "archive": verdict.archive.state,
        "findings": verdict.findings.iter().map(|finding| json!({
            "severity": finding.severity.as_str(),
            "kind": finding.kind.as_str(),
            "site": finding.site,
            "cause": finding.cause,
            "fact": finding.fact,
            "action": finding.action,
            "command": finding.command,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(all(test, feature = "lab"))]
mod tests;
