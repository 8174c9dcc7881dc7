//! The preflight of a point-in-time restore into a new group ([`WriteOp::RestorePitrToNewGroup`]):
//! what the API server and the operator would refuse before the restore Job runs. The planner's
//! verdict is the PITR workbench's (`crate::archive::workbench`), computed before the proposal.

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::BackupPhase;
use bloodraven_gtid::GtidSet;

use super::{Observed, Preflight, Verdict};

/// `pointInTime.stopTime` as the CRD admits it: a whole second in RFC 3339 with `Z` or a
/// `±HH:MM` offset.
const STOP_TIME: &str =
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$";

/// A DNS label (a group's name becomes part of its objects' names).
const NAME: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// The request the checks read.
pub(crate) struct Restore<'a> {
    pub name: &'a str,
    pub backup: &'a str,
    pub archive_profile: &'a str,
    pub stop_time: &'a str,
    pub exclude_gtids: &'a str,
}

fn matches(pattern: &str, text: &str) -> bool {
    regex::Regex::new(pattern).is_ok_and(|regex| regex.is_match(text))
}

pub(crate) fn restore(
    out: &mut Preflight,
    group: &MysqlFailoverGroup,
    observed: &Observed,
    request: &Restore<'_>,
) {
    let source = group.metadata.name.as_deref().unwrap_or_default();
    if request.name == source {
        out.push(
            "GroupName",
            Verdict::Refuse,
            format!(
                "the restore needs a new group: {source} exists, and its initFromBackup is \
                 fixed at creation; choose another name"
            ),
        );
    } else if request.name.len() > 63 || !matches(NAME, request.name) {
        out.push(
            "GroupName",
            Verdict::Refuse,
            format!(
                "{:?} is not a DNS label (lowercase letters, digits and '-', at most 63)",
                request.name
            ),
        );
    } else {
        out.push(
            "GroupName",
            Verdict::Pass,
            format!("a new group {} (the API server refuses a name in use)", request.name),
        );
    }
    if matches(STOP_TIME, request.stop_time) && request.stop_time.parse::<jiff::Timestamp>().is_ok()
    {
        out.push("StopTime", Verdict::Pass, format!("stopTime {} reads", request.stop_time));
    } else {
        out.push(
            "StopTime",
            Verdict::Refuse,
            format!(
                "stopTime {:?} is not a whole second in RFC 3339 with Z or ±HH:MM \
                 (2026-04-15T09:30:00Z)",
                request.stop_time
            ),
        );
    }
    let profiles: Vec<&str> = group
        .spec
        .backup
        .as_ref()
        .map(|backup| backup.profiles.iter().map(|profile| profile.name.as_str()).collect())
        .unwrap_or_default();
    if profiles.contains(&request.archive_profile) {
        out.push(
            "ArchiveProfile",
            Verdict::Pass,
            format!("{} is a backup profile of {source}", request.archive_profile),
        );
    } else {
        out.push(
            "ArchiveProfile",
            Verdict::Refuse,
            format!(
                "{:?} is not a backup profile of {source} ({}); pointInTime.archiveProfileName \
                 names the profile whose archive the restore reads",
                request.archive_profile,
                profiles.join(", ")
            ),
        );
    }
    let excluded = if request.exclude_gtids.is_empty() {
        out.push("ExcludeGtids", Verdict::Pass, "no excludeGtids");
        Some(GtidSet::new())
    } else {
        match request.exclude_gtids.parse::<GtidSet>() {
            Ok(set) => {
                out.push(
                    "ExcludeGtids",
                    Verdict::Pass,
                    format!("excludeGtids is a GTID set of {} transactions", set.count()),
                );
                Some(set)
            }
            Err(error) => {
                out.push(
                    "ExcludeGtids",
                    Verdict::Refuse,
                    format!("excludeGtids is not a GTID set: {error}"),
                );
                None
            }
        }
    };
    let Some(backup) = &observed.backup else {
        out.push(
            "BackupSucceeded",
            Verdict::Refuse,
            format!("backup {:?} was not found in {}", request.backup, group_namespace(group)),
        );
        return;
    };
    let status = backup.status.as_ref();
    let phase = status.and_then(|status| status.phase.clone());
    if phase == Some(BackupPhase::Succeeded) {
        out.push("BackupSucceeded", Verdict::Pass, format!("backup {} succeeded", request.backup));
    } else {
        out.push(
            "BackupSucceeded",
            Verdict::Refuse,
            format!(
                "backup {} is {}; only a Succeeded backup can be restored",
                request.backup,
                phase.as_ref().map_or("not started", |phase| phase.as_str())
            ),
        );
    }
    let dumped = status
        .and_then(|status| status.gtid_executed.as_deref())
        .and_then(|text| text.parse::<GtidSet>().ok());
    if let (Some(excluded), Some(dumped)) = (excluded, dumped) {
        let both = excluded.intersection(&dumped);
        if both.is_empty() {
            out.push(
                "PITRExcludeIntersectsBackup",
                Verdict::Pass,
                "excludeGtids holds nothing of the backup",
            );
        } else {
            out.push(
                "PITRExcludeIntersectsBackup",
                Verdict::Refuse,
                format!(
                    "excludeGtids holds {} of the backup's transactions ({both}): a dump cannot \
                     be un-applied; use a backup taken before them or on another site",
                    both.count()
                ),
            );
        }
    }
}

fn group_namespace(group: &MysqlFailoverGroup) -> &str {
    group.metadata.namespace.as_deref().unwrap_or_default()
}
