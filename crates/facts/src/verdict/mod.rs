//! The verdict on a group: what is wrong, the fact each finding rests on, and what to do next.
//!
//! Computed from the group's status as facts, never from its summary fields alone: the
//! `Ready` condition, `status.pitr.archive.state` and the like are checked against the sites,
//! conditions, backups and clock, and a summary that disagrees is itself a finding
//! ([`Kind::SummaryDisagrees`]). Pure: values in, values out, `now` passed in.

mod archive;
mod backups;
mod planned;
mod restore;
mod sites;
mod summary;

use bloodraven_crd::{MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};
use jiff::Timestamp;

pub use archive::{ARCHIVE_STALE_AFTER, ArchiveEvidence, DerivedArchive, derived_archive};
pub use backups::{BACKUP_STALE_AFTER, newest_success};
pub use planned::{InFlight, acknowledge_command, in_flight};
pub use restore::{Choice, RECLONE_STALL_AFTER, held_queue_choices};
pub use sites::{LEASE_SILENT_AFTER, MIN_STALE_AFTER, facts_from_status, stale_after};

/// How bad a finding is. Ordered: `Info < Warning < Critical`. The same scale ranks runbooks
/// (`bloodraven-runbook` re-exports it; files spell it `info`, `warning`, `critical`).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Severity {
    /// Expected and in progress (a draining queue, a run on schedule); no action needed now.
    Info,
    /// Degraded or about to be: act within the shift.
    Warning,
    /// Writes are down, data is at risk, or automation waits for a human: act now.
    Critical,
}

impl Severity {
    /// Every severity, lowest first.
    pub const ALL: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Critical];

    /// The lower-case word (`info`, `warning`, `critical`), as `--fail-on` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }

    /// The text marker that keeps the meaning without colour (`NO_COLOR`).
    pub fn marker(self) -> &'static str {
        match self {
            Severity::Info => "[i]",
            Severity::Warning => "[!]",
            Severity::Critical => "[!!]",
        }
    }

    /// Parses a severity word (any case).
    pub fn parse(text: &str) -> Result<Severity, UnknownSeverity> {
        Severity::ALL
            .into_iter()
            .find(|severity| severity.as_str().eq_ignore_ascii_case(text))
            .ok_or_else(|| UnknownSeverity(text.to_owned()))
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A severity word that is not `info`, `warning` or `critical`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown severity {0:?}: use info, warning or critical")]
pub struct UnknownSeverity(pub String);

/// What a finding is about. `as_str` is the stable code `status -o json` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The group has no status yet (the operator has not reconciled it).
    NoStatus,
    /// No site is writable.
    NoWriter,
    /// More than one site is writable.
    SplitBrain,
    /// The only writer is not `status.activeSite`.
    WriterMoved,
    /// A ReadOnly or DisasterRecovery site is writable.
    NonCandidateWritable,
    /// A site does not answer.
    SiteUnreachable,
    /// A site's last observation is too old to say anything, or its state is unknown.
    SiteStale,
    /// A site holds transactions the primary does not.
    SiteDiverged,
    /// No site was observed recently: the operator may not be running.
    OperatorSilent,
    /// Automation is held for a human.
    AutomationHeld,
    /// A planned failover is running.
    PlannedFailoverInFlight,
    /// The latest planned failover ended other than Succeeded.
    PlannedFailoverFailed,
    /// The peer reclone queue is Held.
    RecloneHeld,
    /// A reclone has sat unstarted, or failed.
    RecloneStuck,
    /// The reclone queue drains.
    RecloneDraining,
    /// The bootstrap restore failed or was refused.
    RestoreRefused,
    /// The in-place restore failed.
    RestoreInPlaceFailed,
    /// The archive is not ready (condition or archive state).
    ArchiveNotReady,
    /// The archive itself shows a gap or refuses.
    ArchiveDamaged,
    /// An archiver fails to scan or upload.
    ArchiverFailing,
    /// Nothing archived recently.
    ArchiveStale,
    /// A schedule's latest backup failed.
    BackupFailing,
    /// The newest successful backup is too old.
    BackupTooOld,
    /// The latest verification failed.
    VerificationFailed,
    /// A summary field of the object disagrees with the facts.
    SummaryDisagrees,
}

impl Kind {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::NoStatus => "NoStatus",
            Kind::NoWriter => "NoWriter",
            Kind::SplitBrain => "SplitBrain",
            Kind::WriterMoved => "WriterMoved",
            Kind::NonCandidateWritable => "NonCandidateWritable",
            Kind::SiteUnreachable => "SiteUnreachable",
            Kind::SiteStale => "SiteStale",
            Kind::SiteDiverged => "SiteDiverged",
            Kind::OperatorSilent => "OperatorSilent",
            Kind::AutomationHeld => "AutomationHeld",
            Kind::PlannedFailoverInFlight => "PlannedFailoverInFlight",
            Kind::PlannedFailoverFailed => "PlannedFailoverFailed",
            Kind::RecloneHeld => "RecloneHeld",
            Kind::RecloneStuck => "RecloneStuck",
            Kind::RecloneDraining => "RecloneDraining",
            Kind::RestoreRefused => "RestoreRefused",
            Kind::RestoreInPlaceFailed => "RestoreInPlaceFailed",
            Kind::ArchiveNotReady => "ArchiveNotReady",
            Kind::ArchiveDamaged => "ArchiveDamaged",
            Kind::ArchiverFailing => "ArchiverFailing",
            Kind::ArchiveStale => "ArchiveStale",
            Kind::BackupFailing => "BackupFailing",
            Kind::BackupTooOld => "BackupTooOld",
            Kind::VerificationFailed => "VerificationFailed",
            Kind::SummaryDisagrees => "SummaryDisagrees",
        }
    }
}

/// One thing that is wrong (or in progress), why we say so, and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// How bad.
    pub severity: Severity,
    /// What it is about.
    pub kind: Kind,
    /// The site it is about, when one.
    pub site: Option<String>,
    /// The specific cause, first: "iad is writable again after the fence; pdx was being
    /// promoted".
    pub cause: String,
    /// The fields it rests on, as `path=value` (`status.sites[pdx].state=writable`).
    pub fact: String,
    /// What to do next.
    pub action: String,
    /// A complete, copyable command, when one applies (one line, never to be wrapped).
    pub command: Option<String>,
}

impl Finding {
    fn new(severity: Severity, kind: Kind, cause: impl Into<String>) -> Self {
        Finding {
            severity,
            kind,
            site: None,
            cause: cause.into(),
            fact: String::new(),
            action: String::new(),
            command: None,
        }
    }

    fn site(mut self, site: &str) -> Self {
        self.site = Some(site.to_owned());
        self
    }

    fn fact(mut self, fact: impl Into<String>) -> Self {
        self.fact = fact.into();
        self
    }

    fn action(mut self, action: impl Into<String>) -> Self {
        self.action = action.into();
        self
    }

    fn command(mut self, command: impl Into<String>) -> Self {
        self.command = Some(command.into());
        self
    }

    /// The next-action line: the cause, then what to do, then the command.
    pub fn next_action(&self) -> String {
        let mut line = self.cause.clone();
        if !self.action.is_empty() {
            line.push_str(": ");
            line.push_str(&self.action);
        }
        if let Some(command) = &self.command {
            line.push_str(": ");
            line.push_str(command);
        }
        line
    }
}

/// Everything the verdict reads. `backups` and `verifications` may hold other groups' objects:
/// only those whose `failoverGroupRef` names this group in its namespace count.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// The group.
    pub group: &'a MysqlFailoverGroup,
    /// `MysqlBackup`s.
    pub backups: &'a [MysqlBackup],
    /// `MysqlBackupVerification`s.
    pub verifications: &'a [MysqlBackupVerification],
    /// What the archive itself shows, when it was read.
    pub archive: Option<&'a ArchiveEvidence>,
    /// When the operator's leader Lease was last renewed, when known.
    pub operator_lease_renewed: Option<Timestamp>,
    /// The present.
    pub now: Timestamp,
}

impl<'a> Inputs<'a> {
    /// Inputs with the group only (no backups, verifications, archive or lease).
    pub fn group(group: &'a MysqlFailoverGroup, now: Timestamp) -> Self {
        Inputs {
            group,
            backups: &[],
            verifications: &[],
            archive: None,
            operator_lease_renewed: None,
            now,
        }
    }

    fn name(&self) -> &str {
        self.group.metadata.name.as_deref().unwrap_or("-")
    }

    fn namespace(&self) -> &str {
        self.group.metadata.namespace.as_deref().unwrap_or("default")
    }

    /// `kubectl <verb> mfg <name> -n <namespace>`: the start of every command.
    fn kubectl(&self, verb: &str) -> String {
        format!("kubectl {verb} mfg {} -n {}", self.name(), self.namespace())
    }
}

/// The findings on one group, worst first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Worst first; equal severities keep the order they were found in (planned failover and
    /// hold, sites, restore, archive, backups, summaries).
    pub findings: Vec<Finding>,
    /// The archive's state as the facts say.
    pub archive: DerivedArchive,
}

impl Verdict {
    /// The worst severity, `None` when there is no finding.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|finding| finding.severity).max()
    }

    /// Whether any finding is at or above `severity`.
    pub fn at_least(&self, severity: Severity) -> bool {
        self.worst().is_some_and(|worst| worst >= severity)
    }

    /// How many findings have `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings.iter().filter(|finding| finding.severity == severity).count()
    }

    /// The problems: findings at Warning or above.
    pub fn problems(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|finding| finding.severity >= Severity::Warning)
    }

    /// The first (worst) finding.
    pub fn headline(&self) -> Option<&Finding> {
        self.findings.first()
    }

    /// Whether a finding of `kind` was made.
    pub fn has(&self, kind: Kind) -> bool {
        self.findings.iter().any(|finding| finding.kind == kind)
    }
}

/// The verdict on a group.
pub fn verdict(inputs: &Inputs<'_>) -> Verdict {
    let mut findings = Vec::new();
    let archive = archive::derived_archive(inputs.group, inputs.archive);
    if inputs.group.status.is_none() {
        findings.push(
            Finding::new(
                Severity::Warning,
                Kind::NoStatus,
                "the operator has not written a status",
            )
            .fact("status=<absent>")
            .action("check that the operator runs and watches this namespace"),
        );
    } else {
        let in_flight = planned::in_flight(inputs.group);
        // The hold first: under a hold, the acknowledgement is the way out of what the
        // sites show.
        planned::check(inputs, in_flight.as_ref(), &mut findings);
        sites::check(inputs, in_flight.as_ref(), &mut findings);
        restore::check(inputs, &mut findings);
        archive::check(inputs, &archive, &mut findings);
        backups::check(inputs, &mut findings);
        summary::check(inputs, &archive, &mut findings);
    }
    findings.sort_by_key(|finding| std::cmp::Reverse(finding.severity));
    Verdict { findings, archive }
}

/// A timestamp in the one format the console prints: RFC 3339, whole seconds, zone `Z`.
pub fn format_time(time: Timestamp) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A span of whole seconds: `45s`, `12m`, `3h45m`, `2d6h`.
pub fn format_span(seconds: i64) -> String {
    let seconds = seconds.max(0);
    let (days, hours, minutes) = (seconds / 86_400, seconds / 3_600 % 24, seconds / 60 % 60);
    if days > 0 {
        if hours > 0 { format!("{days}d{hours}h") } else { format!("{days}d") }
    } else if seconds >= 3_600 {
        if minutes > 0 {
            format!("{}h{minutes}m", seconds / 3_600)
        } else {
            format!("{}h", seconds / 3_600)
        }
    } else if seconds >= 60 {
        format!("{}m", seconds / 60)
    } else {
        format!("{seconds}s")
    }
}

/// `T (N ago)`.
fn since(now: Timestamp, then: Timestamp) -> String {
    format!("{} ({} ago)", format_time(then), format_span(now.as_second() - then.as_second()))
}
