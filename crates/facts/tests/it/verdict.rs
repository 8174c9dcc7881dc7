//! Table tests of the verdict over hand-built objects, most of them contradictory: the summary
//! says healthy, the facts say not; the verdict follows the facts and names the disagreement.

use bloodraven_crd::annotations::PLANNED_FAILOVER_TERMINAL;
use bloodraven_crd::backup::BackupPhase;
use bloodraven_crd::fixtures::{EXAMPLE_RUN_ID, GroupFixture, manual_recovery_hold, time};
use bloodraven_crd::group::{
    ArchiveIdentity, ArchiveState, BackupScheduleStatus, Fence, FenceState, LagWait, PitrStatus,
    PlannedFailoverOutcome, PlannedFailoverPhase, PlannedFailoverReason, PlannedFailoverResult,
    PlannedFailoverSettings, PlannedFailoverStatus, RestoreReclones, RestoreReclonesPhase,
    SiteState,
};
use bloodraven_crd::{
    Condition, ConditionReason, ConditionStatus, ConditionType, Duration, MysqlFailoverGroup,
};
use bloodraven_facts::verdict::{
    self as judge_mod, ArchiveEvidence, Inputs, Kind, Severity, Verdict,
};
use jiff::Timestamp;

/// One minute after the fixture's sites were last seen.
fn now() -> Timestamp {
    "2026-04-20T14:31:00Z".parse().unwrap()
}

fn judge(group: &MysqlFailoverGroup) -> Verdict {
    judge_mod::verdict(&Inputs::group(group, now()))
}

fn kinds(verdict: &Verdict) -> Vec<(Severity, Kind)> {
    verdict.findings.iter().map(|finding| (finding.severity, finding.kind)).collect()
}

fn finding(verdict: &Verdict, kind: Kind) -> &bloodraven_facts::verdict::Finding {
    verdict
        .findings
        .iter()
        .find(|finding| finding.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?} in {:#?}", verdict.findings))
}

fn waiting_for_lag(max_lag_wait: &str) -> PlannedFailoverStatus {
    PlannedFailoverStatus {
        run_id: Some(EXAMPLE_RUN_ID.to_owned()),
        phase: Some(PlannedFailoverPhase::WaitingForLag),
        source_site: Some("iad".to_owned()),
        target_site: Some("pdx".to_owned()),
        settings: Some(PlannedFailoverSettings {
            max_lag_wait: Some(Duration::new(max_lag_wait)),
            ..PlannedFailoverSettings::default()
        }),
        fence: Some(Fence {
            state: Some(FenceState::Applied),
            apply_time: Some(time("2026-04-20T14:29:00Z")),
            ..Fence::default()
        }),
        lag_wait: Some(LagWait {
            start_time: Some(time("2026-04-20T14:29:30Z")),
            ..LagWait::default()
        }),
        ..PlannedFailoverStatus::default()
    }
}

#[test]
fn a_healthy_group_has_no_finding() {
    let verdict = judge(&GroupFixture::three_sites().build());
    assert_eq!(kinds(&verdict), vec![], "{:#?}", verdict.findings);
    assert_eq!(verdict.worst(), None);
}

#[test]
fn ready_true_with_a_read_only_active_site_is_no_writer_and_the_summary_disagrees() {
    let group = GroupFixture::three_sites().with_site_state("iad", SiteState::ReadOnly).build();
    let verdict = judge(&group);
    assert_eq!(
        kinds(&verdict),
        vec![(Severity::Critical, Kind::NoWriter), (Severity::Warning, Kind::SummaryDisagrees)]
    );
    assert!(finding(&verdict, Kind::NoWriter).cause.contains("active site iad is read-only"));
    assert!(finding(&verdict, Kind::SummaryDisagrees).cause.starts_with("Ready=True disagrees"));
}

#[test]
fn writers_and_readers() {
    type Case<'a> = (&'a str, &'a [(&'a str, SiteState)], &'a [Kind]);
    let table: [Case<'_>; 4] = [
        ("split brain", &[("pdx", SiteState::Writable)], &[Kind::SplitBrain]),
        (
            "a writable DR site beside the primary",
            &[("fra", SiteState::Writable)],
            &[Kind::SplitBrain, Kind::NonCandidateWritable],
        ),
        (
            "the writer moved",
            &[("iad", SiteState::ReadOnly), ("pdx", SiteState::Writable)],
            &[Kind::WriterMoved],
        ),
        (
            "only the DR site writes",
            &[("iad", SiteState::ReadOnly), ("fra", SiteState::Writable)],
            &[Kind::NoWriter, Kind::NonCandidateWritable],
        ),
    ];
    for (name, states, expected) in table {
        let mut fixture = GroupFixture::three_sites();
        for (site, state) in states {
            fixture = fixture.with_site_state(site, state.clone());
        }
        let verdict = judge(&fixture.build());
        for kind in expected {
            assert!(verdict.has(*kind), "{name}: no {kind:?} in {:#?}", verdict.findings);
        }
    }
}

#[test]
fn unreachable_sites_weigh_by_whether_they_are_active() {
    let verdict =
        judge(&GroupFixture::three_sites().with_site_state("pdx", SiteState::Unreachable).build());
    let pdx = finding(&verdict, Kind::SiteUnreachable);
    assert_eq!((pdx.severity, pdx.site.as_deref()), (Severity::Warning, Some("pdx")));
    assert!(pdx.cause.contains("last seen 2026-04-20T14:30:00Z (1m ago)"), "{}", pdx.cause);

    let verdict =
        judge(&GroupFixture::three_sites().with_site_state("iad", SiteState::Unreachable).build());
    assert_eq!(finding(&verdict, Kind::SiteUnreachable).severity, Severity::Critical);
    assert!(verdict.has(Kind::NoWriter));
}

#[test]
fn a_status_nobody_updates_says_so_once_instead_of_trusting_its_states() {
    let group = GroupFixture::three_sites().build();
    let later: Timestamp = "2026-04-20T15:30:00Z".parse().unwrap();
    let verdict = judge_mod::verdict(&Inputs::group(&group, later));
    assert_eq!(
        kinds(&verdict),
        vec![
            (Severity::Critical, Kind::OperatorSilent),
            (Severity::Warning, Kind::SummaryDisagrees)
        ]
    );
    // A silent leader Lease is named even while the sites look fresh.
    let verdict = verdict_with_lease(&group, "2026-04-20T14:25:00Z");
    assert!(finding(&verdict, Kind::OperatorSilent).cause.contains("Lease"));
}

fn verdict_with_lease(group: &MysqlFailoverGroup, renewed: &str) -> Verdict {
    let mut inputs = Inputs::group(group, now());
    inputs.operator_lease_renewed = Some(renewed.parse().unwrap());
    judge_mod::verdict(&inputs)
}

#[test]
fn holds_from_the_record_the_marker_alone_and_the_condition_alone() {
    let verdict = judge(&GroupFixture::three_sites().with_hold(manual_recovery_hold()).build());
    let held = finding(&verdict, Kind::AutomationHeld);
    assert_eq!(held.severity, Severity::Critical);
    assert_eq!(
        held.command.as_deref(),
        Some(
            "kubectl annotate mfg orders -n orders bloodraven.shipstream.io/acknowledge-planned-failover-hold=6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10"
        )
    );
    assert!(held.cause.contains("ambiguous sites iad, pdx"), "{}", held.cause);

    let marker = format!(
        r#"{{"schemaVersion":1,"runID":"{EXAMPLE_RUN_ID}","outcome":"ManualRecoveryRequired","reason":"StatusStalled"}}"#
    );
    let group =
        GroupFixture::three_sites().with_annotation(PLANNED_FAILOVER_TERMINAL, &marker).build();
    let held = judge(&group).findings.into_iter().find(|f| f.kind == Kind::AutomationHeld);
    let held = held.expect("a marker-only hold is a hold");
    assert!(held.cause.contains("terminal marker only"), "{}", held.cause);
    assert!(held.command.unwrap().ends_with(&format!("hold={EXAMPLE_RUN_ID}")));

    // A marker that proves nothing holds nothing.
    let group = GroupFixture::three_sites()
        .with_annotation(PLANNED_FAILOVER_TERMINAL, r#"{"schemaVersion":2}"#)
        .build();
    assert!(!judge(&group).has(Kind::AutomationHeld));

    let group = GroupFixture::three_sites()
        .with_condition(Condition::new(ConditionType::AutomaticFailoverHeld, ConditionStatus::True))
        .build();
    let verdict = judge(&group);
    let held = finding(&verdict, Kind::AutomationHeld);
    assert!(held.cause.contains("names no run"), "{}", held.cause);
    assert!(held.command.as_deref().unwrap().contains(r#""path":"/status/conditions/1""#));
}

#[test]
fn a_planned_failover_in_flight_says_since_when_writes_are_blocked_and_the_deadline() {
    let group = GroupFixture::three_sites()
        .with_site_state("iad", SiteState::ReadOnly)
        .with_planned_failover(waiting_for_lag("5m0s"))
        .build();
    let verdict = judge(&group);
    // No NoWriter: the fence explains it; Ready=True while writes are blocked disagrees.
    assert_eq!(
        kinds(&verdict),
        vec![
            (Severity::Warning, Kind::PlannedFailoverInFlight),
            (Severity::Warning, Kind::SummaryDisagrees)
        ]
    );
    let run = finding(&verdict, Kind::PlannedFailoverInFlight);
    assert!(
        run.cause.contains("writes blocked since 2026-04-20T14:29:00Z (2m ago)"),
        "{}",
        run.cause
    );
    assert!(run.action.contains("deadline 2026-04-20T14:34:30Z (in 3m)"), "{}", run.action);

    let group = GroupFixture::three_sites()
        .with_site_state("iad", SiteState::ReadOnly)
        .with_planned_failover(waiting_for_lag("30s"))
        .build();
    let run = judge(&group).findings.remove(0);
    assert_eq!((run.kind, run.severity), (Kind::PlannedFailoverInFlight, Severity::Critical));
    assert!(run.action.contains("passed"), "{}", run.action);
}

#[test]
fn the_source_writable_again_after_the_fence_is_named_as_such() {
    let mut group =
        GroupFixture::three_sites().with_planned_failover(waiting_for_lag("5m0s")).build();
    group.status.as_mut().unwrap().active_site = None;
    let verdict = judge(&group);
    let moved = finding(&verdict, Kind::WriterMoved);
    assert_eq!(moved.severity, Severity::Critical);
    assert_eq!(moved.cause, "iad is writable again after the fence; pdx was being promoted");
}

#[test]
fn failed_outcomes() {
    let table = [
        (
            PlannedFailoverOutcome::RolledBack,
            Some(PlannedFailoverReason::LagTimeout),
            Severity::Warning,
        ),
        (
            PlannedFailoverOutcome::SourceLeftFenced,
            Some(PlannedFailoverReason::TargetLost),
            Severity::Critical,
        ),
        (
            PlannedFailoverOutcome::NotStarted,
            Some(PlannedFailoverReason::CooldownActive),
            Severity::Warning,
        ),
    ];
    for (outcome, reason, severity) in table {
        let record = PlannedFailoverStatus {
            phase: Some(PlannedFailoverPhase::Failed),
            source_site: Some("iad".to_owned()),
            target_site: Some("pdx".to_owned()),
            result: Some(PlannedFailoverResult {
                outcome: Some(outcome.clone()),
                reason: reason.clone(),
                completion_time: Some(time("2026-04-20T14:20:00Z")),
                ..PlannedFailoverResult::default()
            }),
            ..PlannedFailoverStatus::default()
        };
        let verdict = judge(&GroupFixture::three_sites().with_planned_failover(record).build());
        let failed = finding(&verdict, Kind::PlannedFailoverFailed);
        assert_eq!(failed.severity, severity, "{outcome:?}");
        assert!(failed.cause.contains(outcome.as_str()), "{}", failed.cause);
        assert!(!failed.action.is_empty());
    }
    let succeeded = bloodraven_crd::fixtures::succeeded_planned_failover();
    assert!(
        !judge(&GroupFixture::three_sites().with_planned_failover(succeeded).build())
            .has(Kind::PlannedFailoverFailed)
    );
}

#[test]
fn a_held_reclone_queue_is_critical_and_offers_the_draining_patch() {
    let queue = RestoreReclones {
        phase: Some(RestoreReclonesPhase::Held),
        pending: vec!["pdx".to_owned(), "fra".to_owned()],
        ..RestoreReclones::default()
    };
    let verdict = judge(&GroupFixture::three_sites().with_restore_reclones(queue).build());
    let held = finding(&verdict, Kind::RecloneHeld);
    assert_eq!(held.severity, Severity::Critical);
    assert_eq!(
        held.command.as_deref(),
        Some(
            r#"kubectl patch mfg orders -n orders --subresource=status --type=merge -p '{"status":{"restoreReclones":{"phase":"Draining"}}}'"#
        )
    );
    let queue = RestoreReclones {
        phase: Some(RestoreReclonesPhase::Draining),
        pending: vec!["pdx".to_owned()],
        ..RestoreReclones::default()
    };
    let verdict = judge(&GroupFixture::three_sites().with_restore_reclones(queue).build());
    assert_eq!(finding(&verdict, Kind::RecloneDraining).severity, Severity::Info);
}

fn with_archive(state: ArchiveState, ready: ConditionStatus) -> MysqlFailoverGroup {
    let mut condition = Condition::new(ConditionType::PitrArchiveReady, ready);
    condition.reason = Some(ConditionReason::parse("ArchiverError"));
    let mut group = GroupFixture::three_sites().with_condition(condition).build();
    group.status.as_mut().unwrap().pitr = Some(PitrStatus {
        archive: Some(ArchiveIdentity { state: Some(state), ..ArchiveIdentity::default() }),
        ..PitrStatus::default()
    });
    group
}

#[test]
fn the_archive_is_never_verified_while_a_condition_or_the_archive_says_otherwise() {
    let verdict = judge(&with_archive(ArchiveState::Verified, ConditionStatus::False));
    assert_eq!(verdict.archive.state, "NotReady(ArchiverError)");
    assert!(!verdict.archive.ok);
    assert!(verdict.has(Kind::ArchiveNotReady));
    assert!(
        finding(&verdict, Kind::SummaryDisagrees).cause.contains("archive.state=Verified"),
        "{:#?}",
        verdict.findings
    );

    let group = with_archive(ArchiveState::Verified, ConditionStatus::True);
    assert_eq!(judge(&group).archive.state, "Verified");
    let evidence = ArchiveEvidence {
        gaps: vec!["pdx lacks 3e11fa47-71ca-11e1-9e33-c80aa9429562:200-260".to_owned()],
        refusal: None,
    };
    let mut inputs = Inputs::group(&group, now());
    inputs.archive = Some(&evidence);
    let verdict = judge_mod::verdict(&inputs);
    assert_eq!(verdict.archive.state, "Gap");
    assert!(verdict.findings.iter().any(|f| f.kind == Kind::ArchiveDamaged
        && f.cause.contains("3e11fa47-71ca-11e1-9e33-c80aa9429562:200-260")));

    let verdict = judge(&with_archive(ArchiveState::Refused, ConditionStatus::True));
    assert!(verdict.archive.state.starts_with("Refused"));
    assert_eq!(finding(&verdict, Kind::ArchiveNotReady).severity, Severity::Critical);
}

#[test]
fn a_failing_backup_schedule_is_named() {
    let mut group = GroupFixture::three_sites().build();
    group.status.as_mut().unwrap().backup_schedules = vec![BackupScheduleStatus {
        name: "nightly".to_owned(),
        last_backup_name: Some("orders-nightly-20260420".to_owned()),
        last_backup_phase: Some(BackupPhase::Failed),
        ..BackupScheduleStatus::default()
    }];
    let verdict = judge(&group);
    let failing = finding(&verdict, Kind::BackupFailing);
    assert_eq!(
        failing.command.as_deref(),
        Some("kubectl describe mysqlbackup orders-nightly-20260420 -n orders")
    );
}

#[test]
fn findings_come_worst_first_and_severities_parse() {
    let group = GroupFixture::three_sites()
        .with_site_state("pdx", SiteState::Unreachable)
        .with_hold(manual_recovery_hold())
        .build();
    let verdict = judge(&group);
    let severities: Vec<Severity> = verdict.findings.iter().map(|f| f.severity).collect();
    let mut sorted = severities.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(severities, sorted);
    assert!(verdict.at_least(Severity::Critical));
    assert_eq!(Severity::parse("Warning"), Ok(Severity::Warning));
    assert!(
        Severity::parse("fatal").unwrap_err().to_string().contains("info, warning or critical")
    );
    assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Critical);
}

#[test]
fn no_status_is_a_finding() {
    let verdict = judge(&GroupFixture::three_sites().without_status().build());
    assert_eq!(kinds(&verdict), vec![(Severity::Warning, Kind::NoStatus)]);
}
