//! The `test-fixtures` builders produce what they say.

use bloodraven_crd::fixtures::{self, BackupFixture, GroupFixture};
use bloodraven_crd::group::{PlannedFailoverPhase, SiteRole, SiteState};
use bloodraven_crd::{ConditionReason, ConditionType};

#[test]
fn three_sites_is_the_spec_example() {
    let group = GroupFixture::three_sites().build();
    let roles: Vec<_> = group.spec.sites.iter().map(|site| site.effective_role()).collect();
    assert_eq!(
        roles,
        [SiteRole::PrimaryCandidate, SiteRole::PrimaryCandidate, SiteRole::DisasterRecovery]
    );
    let status = group.status.unwrap();
    assert_eq!(status.active_site.as_deref(), Some("iad"));
    assert_eq!(status.site("iad").unwrap().state, Some(SiteState::Writable));
    assert_eq!(status.site("fra").unwrap().state, Some(SiteState::ReadOnly));
}

#[test]
fn with_active_site_moves_writability() {
    let status = GroupFixture::three_sites().with_active_site("pdx").build().status.unwrap();
    assert_eq!(status.active_site.as_deref(), Some("pdx"));
    assert_eq!(status.site("pdx").unwrap().state, Some(SiteState::Writable));
    assert_eq!(status.site("iad").unwrap().state, Some(SiteState::ReadOnly));
}

#[test]
fn with_hold_sets_record_and_condition() {
    let status =
        GroupFixture::three_sites().with_hold(fixtures::manual_recovery_hold()).build().status;
    let status = status.unwrap();
    let condition = status.condition(&ConditionType::AutomaticFailoverHeld).unwrap();
    assert!(condition.is_true());
    assert_eq!(condition.reason, Some(ConditionReason::PlannedFailoverManualRecoveryRequired));
    assert_eq!(condition.observed_generation, Some(7));
    assert_eq!(
        status.planned_failover_hold.unwrap().run_id.as_deref(),
        Some(fixtures::EXAMPLE_RUN_ID)
    );
}

#[test]
fn succeeded_example_is_terminal() {
    let record = fixtures::succeeded_planned_failover();
    assert!(record.phase.unwrap().is_terminal());
    assert!(!PlannedFailoverPhase::Publishing.is_terminal());
}

#[test]
fn backup_fixture() {
    let backup = BackupFixture::new("nightly-1", "orders", "nightly-s3")
        .succeeded("2026-04-16T02:09:41Z")
        .build();
    let status = backup.status.unwrap();
    assert_eq!(
        status.artifact_storage.unwrap().location.as_deref(),
        Some("s3://shipstream-backups/orders/nightly-1")
    );
}

#[test]
fn a_hold_record_or_a_true_condition_holds_automation() {
    use bloodraven_crd::{Condition, ConditionStatus};
    let plain = GroupFixture::three_sites().build().status.unwrap();
    assert!(!plain.automation_held());
    let held = GroupFixture::three_sites().with_hold(fixtures::manual_recovery_hold()).build();
    assert!(held.status.unwrap().automation_held());
    let condition_only = GroupFixture::three_sites()
        .with_condition(Condition::new(ConditionType::AutomaticFailoverHeld, ConditionStatus::True))
        .build();
    assert!(condition_only.status.unwrap().automation_held());
    let acknowledged = GroupFixture::three_sites()
        .with_condition(Condition::new(
            ConditionType::AutomaticFailoverHeld,
            ConditionStatus::False,
        ))
        .build();
    assert!(!acknowledged.status.unwrap().automation_held());
}

#[test]
fn a_terminal_marker_alone_can_carry_the_hold() {
    use bloodraven_crd::annotations::{PLANNED_FAILOVER_TERMINAL, TerminalRecord};
    let with_marker = |outcome: &str, reason: &str| {
        let record = TerminalRecord::new(fixtures::EXAMPLE_RUN_ID, outcome, reason, None).unwrap();
        let mut group = GroupFixture::three_sites().build();
        group
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(PLANNED_FAILOVER_TERMINAL.to_owned(), record.to_string());
        group
    };
    // planned failover, "The automation hold": a terminal marker that carries
    // ManualRecoveryRequired holds, with no plannedFailoverHold and no condition.
    let held = with_marker("ManualRecoveryRequired", "AuthorityChanged");
    assert!(!held.status.as_ref().unwrap().automation_held(), "the status alone shows no hold");
    assert!(held.automation_held());
    // Any other outcome, or a marker that proves nothing, holds nothing.
    assert!(!with_marker("SourceLeftFenced", "StatusStalled").automation_held());
    let mut garbage = GroupFixture::three_sites().build();
    garbage.metadata.annotations.get_or_insert_default().insert(
        PLANNED_FAILOVER_TERMINAL.to_owned(),
        r#"{"schemaVersion":2,"runID":"r","outcome":"ManualRecoveryRequired","reason":""}"#
            .to_owned(),
    );
    assert!(!garbage.automation_held());
    // The status evidence still holds on its own.
    let recorded = GroupFixture::three_sites().with_hold(fixtures::manual_recovery_hold()).build();
    assert!(recorded.automation_held());
    assert!(!GroupFixture::three_sites().build().automation_held());
}
