//! `/pitr-cutoff` (backup-and-restore document, "Binlog retention"): the retention proof a
//! sidecar's archiver pulls before it retires archived binlogs. Pure: the group's PITR render
//! and its MysqlBackups in, the answer out.
//!
//! The rules, in order:
//! - no `archive=` (an older sidecar sends `profile=`): 400, so retention defers until it rolls;
//! - a group this operator does not know, PITR off, or an `archive=` that is not the archive ID
//!   derived for the group and its PITR destination: 404;
//! - a request without the `gtid-v1` coverage capability: no cutoff (`coverageUnsupported`);
//! - any non-deleting group backup Pending, Running or of unknown phase: no cutoff
//!   (`backupInFlight`: an overlapping dump may still finish with an older snapshot);
//! - a successful, non-deleting backup with a missing or malformed `gtidExecuted`
//!   (`backupGtidsUnknown`) or without `startTime` (`backupStartTimeUnknown`): no cutoff;
//! - no successful, non-deleting backup: no cutoff (`noRetainedBackups`);
//! - otherwise the proof: `coverage: gtid-v1`, `retainedGTIDs` of every such backup and the
//!   minimum `startTime` as `cutoffTime`. Failed backups are terminal and hold nothing.

use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_gtid::GtidSet;
use bloodraven_workloads::pitr::PitrRender;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// The coverage capability of a proof.
pub const COVERAGE_GTID_V1: &str = "gtid-v1";

/// `retentionDeferredReason` values.
pub mod deferred {
    /// No successful, non-deleting backup of the group.
    pub const NO_RETAINED_BACKUPS: &str = "noRetainedBackups";
    /// A backup is Pending, Running or of unknown phase.
    pub const BACKUP_IN_FLIGHT: &str = "backupInFlight";
    /// A retained backup has no parsable `gtidExecuted`.
    pub const BACKUP_GTIDS_UNKNOWN: &str = "backupGtidsUnknown";
    /// A retained backup has no `startTime`.
    pub const BACKUP_START_TIME_UNKNOWN: &str = "backupStartTimeUnknown";
    /// The request lacks the `gtid-v1` capability.
    pub const COVERAGE_UNSUPPORTED: &str = "coverageUnsupported";
    /// The operator's view of the group's backups is not synced yet (a lookup error: never
    /// cached).
    pub const BACKUPS_UNKNOWN: &str = "backupsUnknown";
}

/// `/pitr-cutoff`'s query (every key optional so a bad request gets a sentence, not axum's).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct CutoffQuery {
    /// The group's namespace.
    pub namespace: Option<String>,
    /// The group's name.
    pub group: Option<String>,
    /// The caller's `BLOODRAVEN_PITR_ARCHIVE_ID`.
    pub archive: Option<String>,
    /// The caller's coverage capability (`gtid-v1`).
    pub coverage: Option<String>,
    /// What sidecars on an older render send instead of `archive`.
    pub profile: Option<String>,
}

/// The 200 answer: a proof, or no cutoff with a reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CutoffBody {
    /// The group's namespace.
    pub namespace: String,
    /// The group's name.
    pub group: String,
    /// The archive ID, echoed.
    pub archive: String,
    /// `gtid-v1` on a proof.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<String>,
    /// `gtidExecuted` of every retained backup (a proof only).
    #[serde(rename = "retainedGTIDs", default, skip_serializing_if = "Vec::is_empty")]
    pub retained_gtids: Vec<String>,
    /// The minimum retained backup `startTime` (a proof only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cutoff_time: Option<Timestamp>,
    /// Why there is no cutoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_deferred_reason: Option<String>,
}

/// The answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CutoffAnswer {
    /// 400, with a sentence.
    BadRequest(String),
    /// 404, with a sentence.
    NotFound(String),
    /// 200.
    Body(CutoffBody),
}

/// What the operator knows of the group's backups.
#[derive(Clone, Copy, Debug)]
pub enum Backups<'a> {
    /// The watch has not listed them yet (or failed): no cutoff, never cached.
    Unknown,
    /// The group's MysqlBackups (every one in the namespace whose `failoverGroupRef` names it).
    Known(&'a [MysqlBackup]),
}

fn in_flight(backup: &MysqlBackup) -> bool {
    match backup.status.as_ref().and_then(|status| status.phase.as_ref()) {
        Some(BackupPhase::Succeeded | BackupPhase::Failed) => false,
        Some(BackupPhase::Pending | BackupPhase::Running | BackupPhase::Unrecognized(_)) | None => {
            true
        }
    }
}

/// The answer to `query` for a group whose PITR render is `render` (`None`: unknown group or
/// PITR off) and whose backups are `backups`.
pub fn answer(
    query: &CutoffQuery,
    render: Option<&PitrRender>,
    backups: Backups<'_>,
) -> CutoffAnswer {
    let (Some(namespace), Some(group)) = (&query.namespace, &query.group) else {
        return CutoffAnswer::BadRequest(
            "pitr-cutoff needs namespace=, group=, archive= and coverage=gtid-v1".to_owned(),
        );
    };
    let Some(archive) = query.archive.as_ref().filter(|archive| !archive.is_empty()) else {
        let why = if query.profile.is_some() {
            "profile= is the older protocol: this operator answers archive=<BLOODRAVEN_PITR_ARCHIVE_ID>; retention defers until the sidecar rolls"
        } else {
            "archive= is missing: send the sidecar's BLOODRAVEN_PITR_ARCHIVE_ID"
        };
        return CutoffAnswer::BadRequest(why.to_owned());
    };
    let Some(render) = render.filter(|render| render.archive_id.as_str() == archive) else {
        return CutoffAnswer::NotFound(format!(
            "archive {archive} is not the PITR archive of group {namespace}/{group} on this operator (unknown group, PITR off, or another destination)"
        ));
    };
    let mut body = CutoffBody {
        namespace: namespace.clone(),
        group: group.clone(),
        archive: render.archive_id.to_string(),
        coverage: None,
        retained_gtids: Vec::new(),
        cutoff_time: None,
        retention_deferred_reason: None,
    };
    let defer = |mut body: CutoffBody, reason: &str| {
        body.retention_deferred_reason = Some(reason.to_owned());
        CutoffAnswer::Body(body)
    };
    if query.coverage.as_deref() != Some(COVERAGE_GTID_V1) {
        return defer(body, deferred::COVERAGE_UNSUPPORTED);
    }
    let Backups::Known(backups) = backups else {
        return defer(body, deferred::BACKUPS_UNKNOWN);
    };
    let live: Vec<&MysqlBackup> =
        backups.iter().filter(|backup| backup.metadata.deletion_timestamp.is_none()).collect();
    if live.iter().any(|backup| in_flight(backup)) {
        return defer(body, deferred::BACKUP_IN_FLIGHT);
    }
    let mut cutoff: Option<Timestamp> = None;
    let mut retained = Vec::new();
    for backup in live {
        let Some(status) = backup.status.as_ref() else { continue };
        if status.phase != Some(BackupPhase::Succeeded) {
            continue;
        }
        let Some(gtids) =
            status.gtid_executed.as_deref().and_then(|text| text.parse::<GtidSet>().ok())
        else {
            return defer(body, deferred::BACKUP_GTIDS_UNKNOWN);
        };
        let Some(start) = status.start_time.as_ref().map(|time| time.0) else {
            return defer(body, deferred::BACKUP_START_TIME_UNKNOWN);
        };
        cutoff = Some(cutoff.map_or(start, |known| known.min(start)));
        retained.push(gtids.to_string());
    }
    let Some(cutoff) = cutoff else {
        return defer(body, deferred::NO_RETAINED_BACKUPS);
    };
    body.coverage = Some(COVERAGE_GTID_V1.to_owned());
    body.retained_gtids = retained;
    body.cutoff_time = Some(cutoff);
    CutoffAnswer::Body(body)
}

#[cfg(test)]
mod tests {
    use bloodraven_archive::{ArchiveId, Destination};
    use bloodraven_crd::backup::{MysqlBackupSpec, MysqlBackupStatus};
    use bloodraven_crd::fixtures::time;
    use bloodraven_crd::group::LocalObjectReference;
    use bloodraven_workloads::pitr::{MODE_NONE, PitrStorage};

    use super::*;

    const A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

    fn render() -> PitrRender {
        let destination = Destination::Pvc {
            namespace: "orders".into(),
            claim: "b".into(),
            sub_path: String::new(),
        };
        let normalized = destination.normalize().unwrap();
        PitrRender {
            profile: "local".into(),
            archive_id: ArchiveId::derive("uid-1", &normalized),
            destination,
            normalized,
            group_uid: "uid-1".into(),
            encryption_mode: MODE_NONE,
            encryption: None,
            storage: PitrStorage::Pvc { claim: "b".into() },
            poll_interval: None,
        }
    }

    fn query(archive: Option<&str>) -> CutoffQuery {
        CutoffQuery {
            namespace: Some("orders".into()),
            group: Some("orders".into()),
            archive: archive.map(str::to_owned),
            coverage: Some(COVERAGE_GTID_V1.into()),
            profile: None,
        }
    }

    fn backup(
        name: &str,
        phase: Option<&str>,
        gtids: Option<&str>,
        start: Option<&str>,
    ) -> MysqlBackup {
        let mut backup = MysqlBackup::new(
            name,
            MysqlBackupSpec {
                failover_group_ref: LocalObjectReference { name: "orders".into() },
                profile_name: "nightly".into(),
                source_site: None,
                deletion_policy: None,
            },
        );
        backup.status = Some(MysqlBackupStatus {
            phase: phase.map(BackupPhase::parse),
            gtid_executed: gtids.map(str::to_owned),
            start_time: start.map(time),
            ..MysqlBackupStatus::default()
        });
        backup
    }

    fn reason(answer: CutoffAnswer) -> String {
        match answer {
            CutoffAnswer::Body(body) => {
                assert!(body.cutoff_time.is_none() && body.retained_gtids.is_empty(), "{body:?}");
                body.retention_deferred_reason.unwrap()
            }
            other => panic!("expected a deferral, got {other:?}"),
        }
    }

    #[test]
    fn the_archive_must_be_the_groups_own() {
        let render = render();
        let id = render.archive_id.to_string();
        assert!(matches!(
            answer(&query(None), Some(&render), Backups::Known(&[])),
            CutoffAnswer::BadRequest(_)
        ));
        let mut legacy = query(None);
        legacy.profile = Some("nightly".into());
        let CutoffAnswer::BadRequest(why) = answer(&legacy, Some(&render), Backups::Known(&[]))
        else {
            panic!("profile= must be a 400");
        };
        assert!(why.contains("profile="), "{why}");
        assert!(matches!(
            answer(
                &query(Some("ar1-aaaaaaaaaaaaaaaaaaaaaaaaaa")),
                Some(&render),
                Backups::Known(&[])
            ),
            CutoffAnswer::NotFound(_)
        ));
        assert!(matches!(
            answer(&query(Some(&id)), None, Backups::Known(&[])),
            CutoffAnswer::NotFound(_)
        ));
        // With no backups built yet: no cutoff, the document's reason, the archive echoed.
        let CutoffAnswer::Body(body) =
            answer(&query(Some(&id)), Some(&render), Backups::Known(&[]))
        else {
            panic!("expected 200");
        };
        assert_eq!(body.archive, id);
        assert_eq!(body.retention_deferred_reason.as_deref(), Some(deferred::NO_RETAINED_BACKUPS));
    }

    #[test]
    fn a_proof_carries_every_retained_backup_and_the_earliest_start() {
        let render = render();
        let id = render.archive_id.to_string();
        let backups = [
            backup(
                "b1",
                Some("Succeeded"),
                Some(&format!("{A}:1-20")),
                Some("2026-11-20T00:00:00Z"),
            ),
            backup(
                "b2",
                Some("Succeeded"),
                Some(&format!("{A}:1-10")),
                Some("2026-11-10T00:00:00Z"),
            ),
            backup("b3", Some("Failed"), None, None),
        ];
        let CutoffAnswer::Body(body) =
            answer(&query(Some(&id)), Some(&render), Backups::Known(&backups))
        else {
            panic!("expected 200");
        };
        assert_eq!(body.coverage.as_deref(), Some(COVERAGE_GTID_V1));
        assert_eq!(body.retained_gtids, [format!("{A}:1-20"), format!("{A}:1-10")]);
        assert_eq!(body.cutoff_time, Some("2026-11-10T00:00:00Z".parse().unwrap()));
        assert_eq!(body.retention_deferred_reason, None);
        let json = serde_json::to_value(&body).unwrap();
        assert!(json.get("retainedGTIDs").is_some(), "{json}");
        assert!(json.get("cutoffTime").is_some(), "{json}");
    }

    #[test]
    fn doubtful_backups_defer_and_deleting_ones_do_not_count() {
        let render = render();
        let id = render.archive_id.to_string();
        let ok = backup(
            "ok",
            Some("Succeeded"),
            Some(&format!("{A}:1-5")),
            Some("2026-11-10T00:00:00Z"),
        );
        let ask = |extra: MysqlBackup| {
            reason(answer(&query(Some(&id)), Some(&render), Backups::Known(&[ok.clone(), extra])))
        };
        assert_eq!(ask(backup("p", Some("Pending"), None, None)), deferred::BACKUP_IN_FLIGHT);
        assert_eq!(ask(backup("r", Some("Running"), None, None)), deferred::BACKUP_IN_FLIGHT);
        assert_eq!(ask(backup("u", Some("Paused"), None, None)), deferred::BACKUP_IN_FLIGHT);
        assert_eq!(ask(backup("n", None, None, None)), deferred::BACKUP_IN_FLIGHT);
        assert_eq!(
            ask(backup(
                "g",
                Some("Succeeded"),
                Some("not a gtid set"),
                Some("2026-11-10T00:00:00Z")
            )),
            deferred::BACKUP_GTIDS_UNKNOWN
        );
        assert_eq!(
            ask(backup("s", Some("Succeeded"), Some(&format!("{A}:1-5")), None)),
            deferred::BACKUP_START_TIME_UNKNOWN
        );
        // A running backup being deleted holds nothing.
        let mut deleting = backup("d", Some("Running"), None, None);
        deleting.metadata.deletion_timestamp = Some(time("2026-11-11T00:00:00Z"));
        let CutoffAnswer::Body(body) =
            answer(&query(Some(&id)), Some(&render), Backups::Known(&[ok.clone(), deleting]))
        else {
            panic!("expected 200");
        };
        assert!(body.cutoff_time.is_some(), "{body:?}");
        // Not synced yet, or a request without the capability: no cutoff.
        assert_eq!(
            reason(answer(&query(Some(&id)), Some(&render), Backups::Unknown)),
            deferred::BACKUPS_UNKNOWN
        );
        let mut old = query(Some(&id));
        old.coverage = None;
        assert_eq!(
            reason(answer(&old, Some(&render), Backups::Known(std::slice::from_ref(&ok)))),
            deferred::COVERAGE_UNSUPPORTED
        );
    }
}
