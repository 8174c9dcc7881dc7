//! Table tests: one `preview` per operation with its exact JSON (and its effect when applied
//! to the object it was decided on), one preflight per admission reason.

use bloodraven_crd::annotations::PLANNED_FAILOVER;
use bloodraven_crd::fixtures::{BackupFixture, GroupFixture, manual_recovery_hold, time};
use bloodraven_crd::group::{
    LastFailover, OnCooldown, PlannedFailoverPhase, PlannedFailoverSpec, PlannedFailoverStatus,
    RecoveryState, RestoreInPlacePhase, RestoreInPlaceStatus, RestoreReclones,
    RestoreReclonesPhase, SiteState,
};
use bloodraven_crd::{MysqlFailoverGroup, backup::BackupPhase};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;

fn now() -> jiff::Timestamp {
    "2026-04-20T14:40:00Z".parse().unwrap()
}

fn orders() -> GroupRef {
    GroupRef::new("orders", "orders")
}

fn with_rv(mut group: MysqlFailoverGroup) -> MysqlFailoverGroup {
    group.metadata.resource_version = Some("41".to_owned());
    group
}

fn held_queue() -> RestoreReclones {
    RestoreReclones {
        phase: Some(RestoreReclonesPhase::Held),
        run_id: Some("r-7".to_owned()),
        pending: vec!["pdx".to_owned(), "fra".to_owned()],
        ..RestoreReclones::default()
    }
}

fn with_profile(group: MysqlFailoverGroup) -> MysqlFailoverGroup {
    let mut with = GroupFixture::three_sites().with_s3_profile("nightly").build();
    with.metadata = group.metadata;
    with.status = group.status;
    with
}

/// The object after the patch, as the API server would apply it (tests of `null` pass on a
/// missing member).
fn applied(patch: &Patch, group: &MysqlFailoverGroup) -> Value {
    let mut object = serde_json::to_value(group).unwrap();
    let operations: json_patch::Patch = serde_json::from_value(patch.body.clone()).unwrap();
    for operation in &operations.0 {
        if let json_patch::PatchOperation::Test(test) = operation
            && test.value.is_null()
            && object.pointer(test.path.as_str()).is_none()
        {
            continue;
        }
        json_patch::patch(&mut object, std::slice::from_ref(operation)).unwrap();
    }
    object
}

#[test]
fn preview_request_planned_failover() {
    let group = with_rv(GroupFixture::three_sites().build());
    let op = WriteOp::RequestPlannedFailover {
        group: orders(),
        target: "pdx".to_owned(),
        max_lag_wait: Some("30s".to_owned()),
    };
    let patch = preview(&op, &Observed::group(group.clone())).unwrap();
    assert_eq!(
        serde_json::to_value(&patch).unwrap(),
        json!({
            "verb": "PATCH",
            "path": "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups/orders",
            "contentType": "application/json-patch+json",
            "body": [
                { "op": "test", "path": "/status/activeSite", "value": "iad" },
                { "op": "test", "path": "/metadata/annotations", "value": null },
                { "op": "add", "path": "/metadata/annotations",
                  "value": { "bloodraven.shipstream.io/planned-failover": "pdx:maxLagWait=30s" } },
            ],
            "precondition": {
                "decidedOnResourceVersion": "41",
                "tests": [
                    { "path": "/status/activeSite", "value": "iad" },
                    { "path": "/metadata/annotations", "value": null },
                ],
            },
        })
    );
    let after = applied(&patch, &group);
    assert_eq!(after["metadata"]["annotations"][PLANNED_FAILOVER], "pdx:maxLagWait=30s");

    // With an annotations map, only the key is added (and tested absent).
    let group = with_rv(GroupFixture::three_sites().with_annotation("team", "db").build());
    let op = WriteOp::RequestPlannedFailover {
        group: orders(),
        target: "pdx".to_owned(),
        max_lag_wait: None,
    };
    let patch = preview(&op, &Observed::group(group.clone())).unwrap();
    assert_eq!(
        patch.body,
        json!([
            { "op": "test", "path": "/status/activeSite", "value": "iad" },
            { "op": "test", "path": "/metadata/annotations/bloodraven.shipstream.io~1planned-failover", "value": null },
            { "op": "add", "path": "/metadata/annotations/bloodraven.shipstream.io~1planned-failover", "value": "pdx" },
        ])
    );
    let after = applied(&patch, &group);
    assert_eq!(after["metadata"]["annotations"]["team"], "db", "other annotations kept");
    assert_eq!(after["metadata"]["annotations"][PLANNED_FAILOVER], "pdx");
}

#[test]
fn preview_refuses_a_bad_override_naming_its_position() {
    let group = GroupFixture::three_sites().build();
    let op = WriteOp::RequestPlannedFailover {
        group: orders(),
        target: "pdx".to_owned(),
        max_lag_wait: Some("2h".to_owned()),
    };
    let error = preview(&op, &Observed::group(group)).unwrap_err();
    assert!(
        error.to_string().contains("at byte 15") || error.to_string().contains("15"),
        "{error}"
    );
}

#[test]
fn preview_acknowledge_hold() {
    let group = with_rv(
        GroupFixture::three_sites()
            .with_annotation("team", "db")
            .with_hold(manual_recovery_hold())
            .build(),
    );
    let run = manual_recovery_hold().run_id.unwrap();
    let op = WriteOp::AcknowledgeHold { group: orders(), run_id: run.clone() };
    let patch = preview(&op, &Observed::group(group.clone())).unwrap();
    assert_eq!(
        serde_json::to_value(&patch).unwrap(),
        json!({
            "verb": "PATCH",
            "path": "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups/orders",
            "contentType": "application/json-patch+json",
            "body": [
                { "op": "test", "path": "/status/plannedFailoverHold/runID", "value": run },
                { "op": "test", "path": "/metadata/annotations/bloodraven.shipstream.io~1acknowledge-planned-failover-hold", "value": null },
                { "op": "add", "path": "/metadata/annotations/bloodraven.shipstream.io~1acknowledge-planned-failover-hold", "value": run },
            ],
            "precondition": {
                "decidedOnResourceVersion": "41",
                "tests": [
                    { "path": "/status/plannedFailoverHold/runID", "value": run },
                    { "path": "/metadata/annotations/bloodraven.shipstream.io~1acknowledge-planned-failover-hold", "value": null },
                ],
            },
        })
    );
    applied(&patch, &group);
}

#[test]
fn preview_reclone_queue_drain_and_release() {
    let group = with_rv(GroupFixture::three_sites().with_restore_reclones(held_queue()).build());
    let drain =
        preview(&WriteOp::RecloneQueueDrain { group: orders() }, &Observed::group(group.clone()))
            .unwrap();
    assert_eq!(
        serde_json::to_value(&drain).unwrap(),
        json!({
            "verb": "PATCH",
            "path": "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups/orders/status",
            "contentType": "application/json-patch+json",
            "body": [
                { "op": "test", "path": "/status/restoreReclones/runID", "value": "r-7" },
                { "op": "test", "path": "/status/restoreReclones/phase", "value": "Held" },
                { "op": "replace", "path": "/status/restoreReclones/phase", "value": "Draining" },
            ],
            "precondition": {
                "decidedOnResourceVersion": "41",
                "tests": [
                    { "path": "/status/restoreReclones/runID", "value": "r-7" },
                    { "path": "/status/restoreReclones/phase", "value": "Held" },
                ],
            },
        })
    );
    assert_eq!(applied(&drain, &group)["status"]["restoreReclones"]["phase"], "Draining");

    let release =
        preview(&WriteOp::RecloneQueueRelease { group: orders() }, &Observed::group(group.clone()))
            .unwrap();
    assert_eq!(release.path, drain.path);
    assert_eq!(
        release.body,
        json!([
            { "op": "test", "path": "/status/restoreReclones/runID", "value": "r-7" },
            { "op": "test", "path": "/status/restoreReclones/phase", "value": "Held" },
            { "op": "remove", "path": "/status/restoreReclones" },
        ])
    );
    assert!(applied(&release, &group)["status"].get("restoreReclones").is_none());

    let error = preview(
        &WriteOp::RecloneQueueDrain { group: orders() },
        &Observed::group(GroupFixture::three_sites().build()),
    )
    .unwrap_err();
    assert!(error.to_string().contains("status.restoreReclones"), "{error}");
}

#[test]
fn preview_backups_and_verification() {
    let group = with_rv(with_profile(GroupFixture::three_sites().build()));
    let name = WriteOp::backup_name("orders", "nightly", now());
    assert_eq!(name, "orders-nightly-console-20260420t144000z");
    let from_site = WriteOp::BackupFromSite {
        group: orders(),
        name: name.clone(),
        profile: "nightly".to_owned(),
        site: "pdx".to_owned(),
    };
    assert_eq!(
        serde_json::to_value(preview(&from_site, &Observed::group(group.clone())).unwrap())
            .unwrap(),
        json!({
            "verb": "POST",
            "path": "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlbackups",
            "contentType": "application/json",
            "body": {
                "apiVersion": "shipstream.io/v1alpha1",
                "kind": "MysqlBackup",
                "metadata": { "name": name, "namespace": "orders" },
                "spec": { "failoverGroupRef": { "name": "orders" }, "profileName": "nightly", "sourceSite": "pdx" },
            },
            "precondition": { "decidedOnResourceVersion": "41", "tests": [] },
        })
    );
    let plain = WriteOp::CreateBackup {
        group: orders(),
        name: name.clone(),
        profile: "nightly".to_owned(),
    };
    assert_eq!(
        preview(&plain, &Observed::group(group.clone())).unwrap().body,
        json!({
            "apiVersion": "shipstream.io/v1alpha1",
            "kind": "MysqlBackup",
            "metadata": { "name": name, "namespace": "orders" },
            "spec": { "failoverGroupRef": { "name": "orders" }, "profileName": "nightly" },
        })
    );

    let mut backup = BackupFixture::new("orders-nightly-20260420", "orders", "nightly").build();
    backup.metadata.resource_version = Some("77".to_owned());
    let verify_name = WriteOp::verification_name("orders-nightly-20260420", now());
    let verify = WriteOp::CreateVerification {
        group: orders(),
        name: verify_name.clone(),
        profile: "nightly".to_owned(),
        backup: "orders-nightly-20260420".to_owned(),
    };
    let observed = Observed { group: Some(group), backup: Some(backup), ..Observed::default() };
    assert_eq!(
        serde_json::to_value(preview(&verify, &observed).unwrap()).unwrap(),
        json!({
            "verb": "POST",
            "path": "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlbackupverifications",
            "contentType": "application/json",
            "body": {
                "apiVersion": "shipstream.io/v1alpha1",
                "kind": "MysqlBackupVerification",
                "metadata": { "name": "orders-nightly-20260420-verify-20260420t144000z", "namespace": "orders" },
                "spec": {
                    "failoverGroupRef": { "name": "orders" },
                    "profileName": "nightly",
                    "backupRef": { "name": "orders-nightly-20260420" },
                },
            },
            "precondition": { "decidedOnResourceVersion": "77", "tests": [] },
        })
    );
}

#[test]
fn preview_reclone() {
    let group = with_rv(GroupFixture::three_sites().with_annotation("team", "db").build());
    let patch = preview(
        &WriteOp::Reclone { group: orders(), site: "fra".to_owned() },
        &Observed::group(group.clone()),
    )
    .unwrap();
    assert_eq!(
        patch.body,
        json!([
            { "op": "test", "path": "/metadata/uid", "value": "8d0e8a34-5a8e-4c1e-9f59-0f3c2b1a7d11" },
            { "op": "test", "path": "/metadata/annotations/bloodraven.shipstream.io~1reclone-site", "value": null },
            { "op": "add", "path": "/metadata/annotations/bloodraven.shipstream.io~1reclone-site",
              "value": "fra:confirm=orders:uid=8d0e8a34-5a8e-4c1e-9f59-0f3c2b1a7d11" },
        ])
    );
    applied(&patch, &group);
}

fn request(target: &str) -> WriteOp {
    WriteOp::RequestPlannedFailover {
        group: orders(),
        target: target.to_owned(),
        max_lag_wait: None,
    }
}

#[test]
fn a_healthy_group_passes_every_admission_rule() {
    let preflight =
        preflight(&request("pdx"), &Observed::group(GroupFixture::three_sites().build()), now());
    assert_eq!(preflight.verdict(), Verdict::Pass, "{}", preflight.render());
    for rule in [
        "InvalidAnnotation",
        "UnknownSite",
        "TargetNotPromotable",
        "AlreadyActive",
        "KeyringRotation",
        "DivergentTarget",
        "TargetUnhealthy",
        "ConcurrentOperation",
        "ManualRecoveryPending",
        "InvalidFailoverState",
        "CooldownActive",
        "AuthorityUnsettled",
        "PeerUnreadable",
        "LagWait",
    ] {
        assert_eq!(preflight.rule(rule), Some(Verdict::Pass), "{rule}: {}", preflight.render());
    }
    assert!(
        preflight.render().contains("pdx is 0 transactions behind iad"),
        "{}",
        preflight.render()
    );
}

#[test]
fn every_admission_reason_of_the_planned_failover_document() {
    type Case = (&'static str, &'static str, fn() -> Observed, &'static str, Verdict);
    let base = || GroupFixture::three_sites();
    let cases: Vec<Case> = vec![
        (
            "bad override",
            "pdx",
            || Observed::group(GroupFixture::three_sites().build()),
            "InvalidAnnotation",
            Verdict::Refuse,
        ),
        (
            "unknown site",
            "sfo",
            || Observed::group(GroupFixture::three_sites().build()),
            "UnknownSite",
            Verdict::Refuse,
        ),
        (
            "DR site",
            "fra",
            || Observed::group(GroupFixture::three_sites().build()),
            "TargetNotPromotable",
            Verdict::Refuse,
        ),
        (
            "already active",
            "iad",
            || Observed::group(GroupFixture::three_sites().build()),
            "AlreadyActive",
            Verdict::Refuse,
        ),
        (
            "keyring rotation",
            "pdx",
            || Observed {
                rotating_sites: vec!["pdx".to_owned()],
                ..Observed::group(GroupFixture::three_sites().build())
            },
            "KeyringRotation",
            Verdict::Refuse,
        ),
        (
            "divergence report",
            "pdx",
            || {
                let mut group = GroupFixture::three_sites().build();
                let site = group
                    .status
                    .as_mut()
                    .unwrap()
                    .sites
                    .iter_mut()
                    .find(|s| s.name == "pdx")
                    .unwrap();
                site.recovery_state = Some(RecoveryState::RecoveryBlocked);
                Observed::group(group)
            },
            "DivergentTarget",
            Verdict::Refuse,
        ),
        (
            "divergent GTID sets",
            "pdx",
            || {
                let mut group = GroupFixture::three_sites().build();
                let site = group
                    .status
                    .as_mut()
                    .unwrap()
                    .sites
                    .iter_mut()
                    .find(|s| s.name == "pdx")
                    .unwrap();
                site.gtid_executed = Some(format!(
                    "{},aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee:1-3",
                    site.gtid_executed.clone().unwrap()
                ));
                Observed::group(group)
            },
            "DivergentTarget",
            Verdict::Refuse,
        ),
        (
            "reclone pending (Held)",
            "pdx",
            || {
                Observed::group(
                    GroupFixture::three_sites().with_restore_reclones(held_queue()).build(),
                )
            },
            "TargetUnhealthy",
            Verdict::Refuse,
        ),
        (
            "not replicating",
            "pdx",
            || {
                let mut group = GroupFixture::three_sites().build();
                let site = group
                    .status
                    .as_mut()
                    .unwrap()
                    .sites
                    .iter_mut()
                    .find(|s| s.name == "pdx")
                    .unwrap();
                site.replicating = Some(false);
                Observed::group(group)
            },
            "TargetUnhealthy",
            Verdict::Refuse,
        ),
        (
            "in-place restore",
            "pdx",
            || {
                let mut group = GroupFixture::three_sites().build();
                group.status.as_mut().unwrap().restore_in_place = Some(RestoreInPlaceStatus {
                    phase: Some(RestoreInPlacePhase::Restoring),
                    ..RestoreInPlaceStatus::default()
                });
                Observed::group(group)
            },
            "ConcurrentOperation",
            Verdict::Refuse,
        ),
        (
            "hold standing",
            "pdx",
            || {
                Observed::group(
                    GroupFixture::three_sites().with_hold(manual_recovery_hold()).build(),
                )
            },
            "ManualRecoveryPending",
            Verdict::Refuse,
        ),
        (
            "unreadable failover record",
            "pdx",
            || {
                Observed::group(
                    GroupFixture::three_sites().with_last_failover(LastFailover::default()).build(),
                )
            },
            "InvalidFailoverState",
            Verdict::Refuse,
        ),
        (
            "cooldown, Reject",
            "pdx",
            || {
                Observed::group(
                    GroupFixture::three_sites()
                        .with_last_failover(LastFailover {
                            time: Some(time("2026-04-20T14:38:00Z")),
                            target: Some("iad".to_owned()),
                            ..LastFailover::default()
                        })
                        .build(),
                )
            },
            "CooldownActive",
            Verdict::Refuse,
        ),
        (
            "cooldown, Defer",
            "pdx",
            || {
                Observed::group(
                    GroupFixture::three_sites()
                        .with_planned_failover_spec(PlannedFailoverSpec {
                            on_cooldown: Some(OnCooldown::Defer),
                            ..PlannedFailoverSpec::default()
                        })
                        .with_last_failover(LastFailover {
                            time: Some(time("2026-04-20T14:38:00Z")),
                            target: Some("iad".to_owned()),
                            ..LastFailover::default()
                        })
                        .build(),
                )
            },
            "Cooldown",
            Verdict::Wait,
        ),
        (
            "a run holds the claim",
            "pdx",
            || {
                Observed::group(
                    GroupFixture::three_sites()
                        .with_planned_failover(PlannedFailoverStatus {
                            run_id: Some("run-1".to_owned()),
                            phase: Some(PlannedFailoverPhase::WaitingForLag),
                            ..PlannedFailoverStatus::default()
                        })
                        .build(),
                )
            },
            "ClaimHeld",
            Verdict::Wait,
        ),
        (
            "a failover in flight",
            "pdx",
            || {
                let mut group = GroupFixture::three_sites().build();
                group.status.as_mut().unwrap().active_site = None;
                Observed::group(group)
            },
            "AuthorityUnsettled",
            Verdict::Wait,
        ),
        (
            "a peer down",
            "pdx",
            || {
                Observed::group(
                    GroupFixture::three_sites()
                        .with_site_state("fra", SiteState::Unreachable)
                        .build(),
                )
            },
            "PeerUnreadable",
            Verdict::Wait,
        ),
        (
            "lag beyond maxLagWait",
            "pdx",
            || {
                let mut group = GroupFixture::three_sites().build();
                let site = group
                    .status
                    .as_mut()
                    .unwrap()
                    .sites
                    .iter_mut()
                    .find(|s| s.name == "pdx")
                    .unwrap();
                site.seconds_behind_source = Some(900);
                Observed::group(group)
            },
            "LagWait",
            Verdict::Wait,
        ),
        (
            "a request already written",
            "pdx",
            || {
                Observed::group(
                    GroupFixture::three_sites().with_annotation(PLANNED_FAILOVER, "pdx").build(),
                )
            },
            "RequestPending",
            Verdict::Refuse,
        ),
    ];
    let _ = base;
    for (name, target, observed, rule, verdict) in cases {
        let op = if name == "bad override" {
            WriteOp::RequestPlannedFailover {
                group: orders(),
                target: target.to_owned(),
                max_lag_wait: Some("0s".to_owned()),
            }
        } else {
            request(target)
        };
        let preflight = preflight(&op, &observed(), now());
        assert_eq!(preflight.rule(rule), Some(verdict), "{name}: {}", preflight.render());
        assert_eq!(preflight.verdict(), verdict, "{name}: {}", preflight.render());
        assert_eq!(preflight.confirmable(), verdict != Verdict::Refuse, "{name}");
        let line = &preflight.checks.iter().find(|check| check.rule == rule).unwrap().line;
        assert!(!line.is_empty(), "{name}");
    }
}

#[test]
fn acknowledgement_rules() {
    let run = manual_recovery_hold().run_id.unwrap();
    let held = || GroupFixture::three_sites().with_hold(manual_recovery_hold()).build();
    let ack =
        |run_id: &str| WriteOp::AcknowledgeHold { group: orders(), run_id: run_id.to_owned() };
    let ok = preflight(&ack(&run), &Observed::group(held()), now());
    assert!(ok.confirmable(), "{}", ok.render());
    assert_eq!(ok.rule("OneWritable"), Some(Verdict::Pass));

    let wrong = preflight(&ack("another-run"), &Observed::group(held()), now());
    assert_eq!(wrong.rule("RunMatches"), Some(Verdict::Refuse), "{}", wrong.render());
    assert!(wrong.render().contains("PlannedFailoverHoldAcknowledgmentIgnored"));

    let none = preflight(&ack(&run), &Observed::group(GroupFixture::three_sites().build()), now());
    assert_eq!(none.rule("HoldStanding"), Some(Verdict::Refuse), "{}", none.render());

    let split = GroupFixture::three_sites()
        .with_hold(manual_recovery_hold())
        .with_site_state("pdx", SiteState::Writable)
        .build();
    let split = preflight(&ack(&run), &Observed::group(split), now());
    assert_eq!(split.rule("OneWritable"), Some(Verdict::Refuse), "{}", split.render());
    assert!(split.render().contains("iad, pdx are writable"), "{}", split.render());
}

#[test]
fn queue_decision_rules() {
    let drain = WriteOp::RecloneQueueDrain { group: orders() };
    let release = WriteOp::RecloneQueueRelease { group: orders() };
    let held = GroupFixture::three_sites().with_restore_reclones(held_queue()).build();
    assert!(preflight(&drain, &Observed::group(held.clone()), now()).confirmable());
    assert!(preflight(&release, &Observed::group(held), now()).confirmable());
    let armed = GroupFixture::three_sites()
        .with_restore_reclones(RestoreReclones {
            phase: Some(RestoreReclonesPhase::Armed),
            ..held_queue()
        })
        .build();
    for op in [&drain, &release] {
        let checks = preflight(op, &Observed::group(armed.clone()), now());
        assert_eq!(checks.rule("QueueHeld"), Some(Verdict::Refuse), "{}", checks.render());
    }
    let none = preflight(&drain, &Observed::group(GroupFixture::three_sites().build()), now());
    assert_eq!(none.rule("QueuePresent"), Some(Verdict::Refuse));
    // Primary down: draining is refused, releasing accepts the stale copy.
    let down = GroupFixture::three_sites()
        .with_restore_reclones(held_queue())
        .with_site_state("iad", SiteState::Unreachable)
        .build();
    assert_eq!(
        preflight(&drain, &Observed::group(down.clone()), now()).rule("PrimaryWritable"),
        Some(Verdict::Refuse)
    );
    let released = preflight(&release, &Observed::group(down), now());
    assert!(released.confirmable(), "{}", released.render());
    assert!(released.render().contains("accepts the stale copy"));
    assert!(
        data_loss_statement(&release, false)
            .unwrap()
            .contains("replicates whatever the failed restore did to it")
    );
    assert!(data_loss_statement(&release, true).unwrap().contains("stale copy"));
    assert_eq!(risk(&release), Risk::DataLoss);
    assert_eq!(confirmation_name(&release), "orders");
    assert_eq!(confirmation_name(&request("pdx")), "pdx");
}

#[test]
fn backup_and_verification_rules() {
    let group = with_profile(GroupFixture::three_sites().build());
    let backup = |profile: &str| WriteOp::CreateBackup {
        group: orders(),
        name: "b".to_owned(),
        profile: profile.to_owned(),
    };
    assert!(preflight(&backup("nightly"), &Observed::group(group.clone()), now()).confirmable());
    let unknown = preflight(&backup("weekly"), &Observed::group(group.clone()), now());
    assert_eq!(unknown.rule("Profile"), Some(Verdict::Refuse));
    assert!(unknown.render().contains("choose one of nightly"));
    let no_profiles =
        preflight(&backup("nightly"), &Observed::group(GroupFixture::three_sites().build()), now());
    assert_eq!(no_profiles.rule("Profile"), Some(Verdict::Refuse));

    let verify = WriteOp::CreateVerification {
        group: orders(),
        name: "v".to_owned(),
        profile: "nightly".to_owned(),
        backup: "orders-nightly-20260420".to_owned(),
    };
    let mut succeeded = BackupFixture::new("orders-nightly-20260420", "orders", "nightly").build();
    succeeded.status = Some(serde_json::from_value(json!({ "phase": "Succeeded" })).unwrap());
    let observed = Observed {
        group: Some(group.clone()),
        backup: Some(succeeded.clone()),
        ..Observed::default()
    };
    assert!(preflight(&verify, &observed, now()).confirmable());
    succeeded.status.as_mut().unwrap().phase = Some(BackupPhase::Running);
    let observed = Observed { group: Some(group), backup: Some(succeeded), ..Observed::default() };
    assert_eq!(preflight(&verify, &observed, now()).rule("BackupSucceeded"), Some(Verdict::Refuse));
}

#[test]
fn reclone_rules() {
    let reclone = |site: &str| WriteOp::Reclone { group: orders(), site: site.to_owned() };
    let group = GroupFixture::three_sites().build();
    assert!(preflight(&reclone("fra"), &Observed::group(group.clone()), now()).confirmable());
    assert_eq!(
        preflight(&reclone("iad"), &Observed::group(group.clone()), now()).rule("NotPrimary"),
        Some(Verdict::Refuse)
    );
    let held = GroupFixture::three_sites().with_restore_reclones(held_queue()).build();
    assert_eq!(
        preflight(&reclone("fra"), &Observed::group(held), now()).rule("RecloneRejected"),
        Some(Verdict::Refuse)
    );
}
