//! A newer operator's tokens and fields survive a read-modify-write of the fields we own.

use bloodraven_crd::group::*;
use bloodraven_crd::{ConditionReason, MysqlBackupStatus, MysqlBackupVerificationStatus};
use pretty_assertions::assert_eq;
use serde_json::json;

/// A status as a newer operator might write it: unknown tokens in every open enum the group
/// status uses, and unknown fields at the top level and in nested records.
fn newer_status() -> serde_json::Value {
    json!({
        "activeSite": "iad",
        "topologyGeneration": 42,
        "sites": [
            {"name": "iad", "state": "fenced-by-operator", "sourceConvergenceState": "Rerouting",
             "sourceConvergenceReason": "ChannelRenamed", "recoveryState": "RecoveryDeferred",
             "servingHealthy": true},
        ],
        "conditions": [
            {"type": "QuorumLost", "status": "True", "reason": "BrandNewReason",
             "message": "m", "severity": "high"},
        ],
        "plannedFailover": {
            "runID": "r1",
            "phase": "Quiescing",
            "admission": {"waitReason": "LeaseRenewing", "deferReason": "FreezeWindow",
                          "queuePosition": 3},
            "fence": {"state": "Lifted", "method": "offline_mode"},
            "promotion": {"state": "Doubted", "warnings": ["GhostWarning"]},
            "dragonfly": {"sessions": "Partial", "takeover": {"state": "Retried",
                          "method": "Failover"}, "sourceOffsetState": "Estimated"},
            "dns": {"state": "Skipped"},
            "rollback": {"reason": "MoonPhase"},
            "result": {"outcome": "PartiallySucceeded", "reason": "CosmicRay",
                       "warnings": ["UnreachablePeers", "NewWarning"], "exitCode": 3},
            "settings": {"onCooldown": "Queue", "dragonfly": {"onSyncTimeout": "Retry"}},
            "futureBlock": {"nested": [1, 2, 3]},
        },
        "plannedFailoverHold": {"runID": "r0", "reason": "AnotherReason", "acknowledger": "x"},
        "restoreReclones": {"phase": "Paused", "pending": ["pdx"], "note": "n"},
        "restoreInPlace": {"phase": "Verifying", "reason": "RestoreInPlaceNew",
                           "scope": "Table"},
        "restore": {"phase": "Replaying", "reason": "PITRNewRefusal",
                    "provenance": {"pointInTime": {"outcome": "HeadCovered", "mode": "Gtid",
                                                   "encryptionMode": "Kms"}}},
        "pitr": {"archive": {"state": "Migrating", "reason": "ArchiveNew",
                             "encryptionMode": "Kms"},
                 "sites": [{"site": "iad", "historyIntegrity": {"violation": "NewFilter"}}],
                 "bindings": [{"access": "Audit", "phase": "Revoked", "reason": "Expired"}]},
        "backupSchedules": [{"name": "nightly", "lastBackupPhase": "Uploading"}],
    })
}

#[test]
fn unknown_tokens_and_fields_survive_read_modify_write() {
    let original = newer_status();
    let mut status: MysqlFailoverGroupStatus = serde_json::from_value(original.clone()).unwrap();

    // The tokens are recognised as unknown, not mapped to a known value.
    let record = status.planned_failover.as_ref().unwrap();
    assert_eq!(record.phase, Some(PlannedFailoverPhase::Unrecognized("Quiescing".to_owned())));
    let result = record.result.as_ref().unwrap();
    assert!(!result.outcome.as_ref().unwrap().is_known());
    assert_eq!(result.warnings[0], PlannedFailoverWarning::UnreachablePeers);
    assert!(!result.warnings[1].is_known());
    assert_eq!(
        status.conditions[0].reason,
        Some(ConditionReason::Unrecognized("BrandNewReason".to_owned()))
    );
    assert_eq!(status.sites[0].state.as_ref().unwrap().as_str(), "fenced-by-operator");

    // Modify the fields we own.
    status.active_site = Some("pdx".to_owned());
    status.sites[0].replicating = Some(true);
    status.planned_failover.as_mut().unwrap().message = Some("edited".to_owned());

    let mut expected = original;
    expected["activeSite"] = json!("pdx");
    expected["sites"][0]["replicating"] = json!(true);
    expected["plannedFailover"]["message"] = json!("edited");
    assert_eq!(serde_json::to_value(&status).unwrap(), expected);
}

#[test]
fn backup_and_verification_status_keep_unknowns() {
    let backup = json!({
        "phase": "Uploading",
        "artifactStorage": {"type": "GCS", "location": "gs://b/x", "generation": 4,
                            "passphraseSecretKeyRef": {"name": "k", "key": "p", "keyVersion": 2}},
        "conditions": [{"type": "Ready", "status": "Maybe", "reason": "NewPendingReason"}],
        "checksum": "abc",
    });
    let typed: MysqlBackupStatus = serde_json::from_value(backup.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), backup);

    let verification = json!({
        "phase": "Replaying",
        "backupRef": {"name": "b", "generation": 2},
        "pointInTime": {"outcome": "Shortened", "extraCounter": 1},
        "conditions": [{"type": "Verified", "status": "False", "reason": "PITRNewToken"}],
    });
    let typed: MysqlBackupVerificationStatus =
        serde_json::from_value(verification.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), verification);
}

/// Every open enum maps a known value to a variant and keeps an unknown one verbatim.
macro_rules! check_open_enums {
    ($($ty:ty),+ $(,)?) => {$(
        for known in <$ty>::KNOWN {
            let value: $ty = serde_json::from_value(json!(known)).unwrap();
            assert!(value.is_known(), "{} {known}", stringify!($ty));
            assert_eq!(value.as_str(), *known);
            assert_eq!(serde_json::to_value(&value).unwrap(), json!(known));
        }
        let unknown: $ty = serde_json::from_value(json!("NotAValue-v9")).unwrap();
        assert!(!unknown.is_known(), "{}", stringify!($ty));
        assert_eq!(serde_json::to_value(&unknown).unwrap(), json!("NotAValue-v9"));
    )+};
}

#[test]
fn every_open_enum_round_trips_known_and_unknown_values() {
    use bloodraven_crd::backup::{BackupPhase, DeletionPolicy};
    use bloodraven_crd::verification::VerificationPhase;
    use bloodraven_crd::{ConditionStatus, ConditionType};
    check_open_enums!(
        ConditionType,
        ConditionStatus,
        ConditionReason,
        SiteRole,
        ServiceType,
        OnCooldown,
        OnSyncTimeout,
        StorageType,
        Compression,
        PlannedFailoverPhase,
        PlannedFailoverOutcome,
        PlannedFailoverReason,
        PlannedFailoverWarning,
        AdmissionWaitReason,
        AdmissionDeferReason,
        FenceState,
        PromotionState,
        DnsState,
        SourceOffsetState,
        TakeoverState,
        TakeoverMethod,
        DragonflySessions,
        PitrToken,
        RestorePhase,
        PointInTimeOutcome,
        PointInTimeMode,
        EncryptionMode,
        RestoreInPlacePhase,
        RestoreInPlaceReason,
        RestoreScope,
        RestoreReclonesPhase,
        SiteState,
        SourceConvergenceState,
        SourceConvergenceReason,
        RecoveryState,
        ArchiveState,
        ArchiveRefusal,
        HistoryViolation,
        BindingAccess,
        BindingPhase,
        BindingReason,
        BackupPhase,
        DeletionPolicy,
        VerificationPhase,
    );
}

#[test]
fn outcome_metric_labels_are_kebab_case() {
    assert_eq!(PlannedFailoverOutcome::RolledBack.metric_label(), "rolled-back");
    assert_eq!(
        PlannedFailoverOutcome::ManualRecoveryRequired.metric_label(),
        "manual-recovery-required"
    );
    assert_eq!(PlannedFailoverOutcome::Succeeded.metric_label(), "succeeded");
}

/// A PITR commit time is kept as the operator wrote it: a read-modify-write neither drops
/// trailing zeros nor rewrites an offset, and a value this version cannot parse does not make
/// the whole status unreadable.
#[test]
fn point_in_time_commit_times_keep_their_text() {
    for written in [
        "2026-04-20T14:32:09.120000Z",
        "2026-04-20T14:32:09.123456+00:00",
        "2026-04-20T14:32:09Z",
        "not-a-time-v9",
    ] {
        let verification = json!({
            "pointInTime": {"outcome": "TargetCovered", "newestReplayedCommitTime": written},
        });
        let typed: MysqlBackupVerificationStatus =
            serde_json::from_value(verification.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap(), verification, "{written}");
    }
}

#[test]
fn point_in_time_commit_times_parse_on_demand() {
    let result: PointInTimeResult = serde_json::from_value(
        json!({"newestReplayedCommitTime": "2026-04-20T14:32:09.123456+00:00"}),
    )
    .unwrap();
    let parsed = result.newest_replayed_commit_timestamp().unwrap().unwrap();
    assert_eq!(parsed.to_string(), "2026-04-20T14:32:09.123456Z");
    let garbled: PointInTimeResult =
        serde_json::from_value(json!({"newestReplayedCommitTime": "not-a-time-v9"})).unwrap();
    assert!(garbled.newest_replayed_commit_timestamp().unwrap().is_err());
}
