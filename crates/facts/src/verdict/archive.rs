//! The PITR archive: its state derived from the `PITRArchiveReady` condition, the status's
//! archive identity and what the archive itself shows, never `Verified` while any says
//! otherwise; failing archivers; nothing archived recently.

use bloodraven_crd::group::ArchiveState;
use bloodraven_crd::{ConditionStatus, ConditionType, MysqlFailoverGroup};
use jiff::SignedDuration;

use super::{Finding, Inputs, Kind, Severity, since};

/// Nothing archived for this long, with PITR enabled, is stale.
pub const ARCHIVE_STALE_AFTER: SignedDuration = SignedDuration::from_secs(3_600);

/// What the archive itself showed when the console read it (`Coverage` over the store).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArchiveEvidence {
    /// Gaps, each described with its site and the GTID set missing (in full).
    pub gaps: Vec<String>,
    /// The refusal token the archive opened with, when it refused.
    pub refusal: Option<String>,
}

/// The archive's state as the facts say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DerivedArchive {
    /// `Verified`, `NotReady(<reason>)`, `Refused(<reason>)`, `Gap`, `AwaitingDescriptor`, or
    /// `-` when the group has no archive.
    pub state: String,
    /// Whether the facts agree it is good.
    pub ok: bool,
}

/// Derives the archive's state.
pub fn derived_archive(
    group: &MysqlFailoverGroup,
    evidence: Option<&ArchiveEvidence>,
) -> DerivedArchive {
    let status = group.status.as_ref();
    let condition = status.and_then(|status| status.condition(&ConditionType::PitrArchiveReady));
    let archive =
        status.and_then(|status| status.pitr.as_ref()).and_then(|pitr| pitr.archive.as_ref());
    if condition.is_none() && archive.is_none() && evidence.is_none() {
        return DerivedArchive { state: "-".to_owned(), ok: true };
    }
    let bad = |state: String| DerivedArchive { state, ok: false };
    if let Some(token) = evidence.and_then(|evidence| evidence.refusal.as_deref()) {
        return bad(format!("Refused({token})"));
    }
    if let Some(archive) = archive
        && archive.state == Some(ArchiveState::Refused)
    {
        return bad(format!(
            "Refused({})",
            archive.reason.as_ref().map_or("?", |reason| reason.as_str())
        ));
    }
    if let Some(condition) = condition
        && condition.status != ConditionStatus::True
    {
        return bad(format!(
            "NotReady({})",
            condition.reason.as_ref().map_or(condition.status.as_str(), |reason| reason.as_str())
        ));
    }
    if evidence.is_some_and(|evidence| !evidence.gaps.is_empty()) {
        return bad("Gap".to_owned());
    }
    match archive.and_then(|archive| archive.state.as_ref()) {
        Some(ArchiveState::Verified) => DerivedArchive { state: "Verified".to_owned(), ok: true },
        Some(state) => bad(state.as_str().to_owned()),
        None => bad("Unknown".to_owned()),
    }
}

pub(super) fn check(inputs: &Inputs<'_>, derived: &DerivedArchive, out: &mut Vec<Finding>) {
    let now = inputs.now;
    let Some(status) = inputs.group.status.as_ref() else { return };
    let condition = status.condition(&ConditionType::PitrArchiveReady);
    let pitr = status.pitr.as_ref();
    if !derived.ok {
        let (severity, kind) = if derived.state.starts_with("Refused") {
            (Severity::Critical, Kind::ArchiveNotReady)
        } else if derived.state == "Gap" {
            (Severity::Warning, Kind::ArchiveDamaged)
        } else {
            (Severity::Warning, Kind::ArchiveNotReady)
        };
        let mut facts = Vec::new();
        if let Some(condition) = condition {
            facts.push(format!(
                "PITRArchiveReady={}{}",
                condition.status.as_str(),
                condition
                    .reason
                    .as_ref()
                    .map(|reason| format!(" ({})", reason.as_str()))
                    .unwrap_or_default()
            ));
        }
        if let Some(state) =
            pitr.and_then(|pitr| pitr.archive.as_ref()).and_then(|archive| archive.state.as_ref())
        {
            facts.push(format!("status.pitr.archive.state={}", state.as_str()));
        }
        let message = condition.and_then(|condition| condition.message.as_deref());
        out.push(
            Finding::new(
                severity,
                kind,
                format!(
                    "the PITR archive is {}{}",
                    derived.state,
                    message.map(|message| format!(": {message}")).unwrap_or_default()
                ),
            )
            .fact(facts.join("; "))
            .action("point-in-time restores may not reach the present: read the archivers' last errors below and the sidecar logs"),
        );
    }
    if let Some(evidence) = inputs.archive {
        for gap in &evidence.gaps {
            out.push(
                Finding::new(Severity::Warning, Kind::ArchiveDamaged, format!("the archive has a gap: {gap}"))
                    .fact("the archive's coverage")
                    .action("no restore can cross the gap; take a new backup so restores can start after it"),
            );
        }
    }
    let Some(pitr) = pitr else { return };
    for site in &pitr.sites {
        let failing = site.consecutive_failed_scans.unwrap_or(0) >= 2
            || site.store_ready == Some(false)
            || site.last_error.as_deref().is_some_and(|error| !error.is_empty());
        if failing {
            out.push(
                Finding::new(
                    Severity::Warning,
                    Kind::ArchiverFailing,
                    format!(
                        "the archiver on {} fails: {}",
                        site.site,
                        site.last_error.as_deref().unwrap_or("the store is not ready")
                    ),
                )
                .site(&site.site)
                .fact(format!(
                    "status.pitr.sites[{}].consecutiveFailedScans={}; uploadFailures={}",
                    site.site,
                    site.consecutive_failed_scans.unwrap_or(0),
                    site.upload_failures.unwrap_or(0)
                ))
                .action("read the site's sidecar log; a refusal names its token first"),
            );
        }
    }
    let enabled = inputs
        .group
        .spec
        .backup
        .as_ref()
        .and_then(|backup| backup.pitr.as_ref())
        .is_some_and(|pitr| pitr.enabled.unwrap_or(false));
    if enabled
        && let Some(newest) = pitr.newest_archived_time.as_ref()
        && now.duration_since(newest.0) > ARCHIVE_STALE_AFTER
    {
        out.push(
            Finding::new(
                Severity::Warning,
                Kind::ArchiveStale,
                format!("nothing was archived since {}", since(now, newest.0)),
            )
            .fact("status.pitr.newestArchivedTime")
            .action("the recovery point falls behind: check the primary's archiver"),
        );
    }
}
