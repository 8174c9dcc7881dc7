use bloodraven_crd::condition::{Condition, ConditionReason, ConditionStatus, ConditionType};
use bloodraven_crd::fixtures::{self, GroupFixture, time};
use bloodraven_crd::group::*;

use super::*;

fn now() -> Timestamp {
    "2026-04-20T14:40:00Z".parse().unwrap()
}

fn waiting_for_lag() -> PlannedFailoverStatus {
    let mut record = fixtures::succeeded_planned_failover();
    record.phase = Some(PlannedFailoverPhase::WaitingForLag);
    record.start_time = Some(time("2026-04-20T14:38:00Z"));
    record.lag_wait =
        Some(LagWait { start_time: Some(time("2026-04-20T14:38:30Z")), ..LagWait::default() });
    record.admission = Some(Admission {
        deadline_time: Some(time("2026-04-20T14:40:00Z")),
        ..Admission::default()
    });
    record.dragonfly = None;
    record.promotion = None;
    record.dns = None;
    record.result = None;
    record.message = Some("waiting for pdx to apply the fenced GTID set".to_owned());
    record
}

fn held() -> MysqlFailoverGroup {
    let hold = fixtures::manual_recovery_hold();
    let mut record = fixtures::succeeded_planned_failover();
    record.phase = Some(PlannedFailoverPhase::Failed);
    record.result = Some(PlannedFailoverResult {
        outcome: Some(PlannedFailoverOutcome::ManualRecoveryRequired),
        reason: Some(PlannedFailoverReason::ForeignWritable),
        warnings: vec![PlannedFailoverWarning::UnreachablePeers],
        completion_time: Some(time("2026-04-20T14:32:09Z")),
        ..PlannedFailoverResult::default()
    });
    let mut condition = Condition::new(ConditionType::AutomaticFailoverHeld, ConditionStatus::True);
    condition.reason = Some(ConditionReason::PlannedFailoverManualRecoveryRequired);
    condition.message = Some(fixtures::hold_message(
        fixtures::EXAMPLE_RUN_ID,
        "ForeignWritable",
        &hold.ambiguous_sites,
    ));
    GroupFixture::three_sites()
        .with_name("payments")
        .with_planned_failover(record)
        .with_hold(hold)
        .with_condition(condition)
        .build()
}

#[test]
fn list_shows_planned_phase_and_held_marker() {
    let healthy = GroupFixture::three_sites().build();
    let waiting = GroupFixture::three_sites()
        .with_name("carts")
        .with_planned_failover(waiting_for_lag())
        .build();
    let groups = [healthy, waiting, held()];
    insta::assert_snapshot!("list_table", list(&groups, now(), ListStyle::Table, true));
    insta::assert_snapshot!("list_wide", list(&groups, now(), ListStyle::Wide, false));
    assert!(list(&groups, now(), ListStyle::Table, false).contains("+held"));
    assert_eq!(list(&[], now(), ListStyle::Table, false), "No MysqlFailoverGroups found.\n");
}

#[test]
fn report_of_a_held_group_explains_the_hold() {
    let report = group(&held(), now());
    assert!(report.contains(fixtures::EXAMPLE_RUN_ID));
    assert!(report.contains("iad, pdx"));
    assert!(report.contains(
        "bloodraven.shipstream.io/acknowledge-planned-failover-hold=6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10"
    ));
    insta::assert_snapshot!("group_held", report);
}

#[test]
fn report_of_a_waiting_run_shows_the_countdown() {
    let waiting = GroupFixture::three_sites().with_planned_failover(waiting_for_lag()).build();
    let report = group(&waiting, now());
    assert!(report.contains("in 3m30s"), "{report}");
    insta::assert_snapshot!("group_waiting", report);
}

#[test]
fn report_of_a_healthy_group_matches_upstream_sections() {
    insta::assert_snapshot!("group_healthy", group(&GroupFixture::three_sites().build(), now()));
}

#[test]
fn report_of_every_scenario() {
    let epoch: Timestamp = crate::scenarios::SCENARIO_EPOCH.parse().unwrap();
    for name in crate::scenarios::NAMES.iter().filter(|name| **name != "fleet-1000") {
        let groups: Vec<MysqlFailoverGroup> = crate::scenarios::raw_objects(name)
            .unwrap()
            .into_iter()
            .filter(|object| object["kind"] == "MysqlFailoverGroup")
            .map(|object| serde_json::from_value(object).unwrap())
            .collect();
        let mut text = list(&groups, epoch, ListStyle::Wide, true);
        text.push('\n');
        text.push_str(&group(&groups[0], epoch));
        insta::assert_snapshot!(format!("scenario_{name}"), text);
    }
}
