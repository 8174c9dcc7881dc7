//! The restore's guards in the topology plan, from status: the freeze, the replication hold,
//! the promotion exclusion and the `offline_mode` fence.

use std::collections::BTreeMap;

use bloodraven_crd::group::{
    MysqlFailoverGroupStatus, RestoreInPlacePhase, RestoreInPlaceStatus, RestoreOfflineFence,
    RestoreReclones, RestoreReclonesPhase, RestoreScope, SiteRole, SiteState,
};
use bloodraven_facts::{ReplicaObservation, SiteFacts};
use bloodraven_operator::restore::guards::{NO_GUARDS, RestoreGuards, guards};
use bloodraven_operator::topology::{Alert, History, PlanInput, PromoteWhy, Step, plan};
use jiff::{SignedDuration, Timestamp};

const A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

fn now() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

fn site(name: &str, state: SiteState, gtid: &str, io_running: bool, offline: bool) -> SiteFacts {
    SiteFacts {
        name: name.into(),
        role: SiteRole::PrimaryCandidate,
        state,
        unreachable: None,
        offline_mode: offline,
        gtid_executed: Some(gtid.parse().unwrap()),
        replica: (name != "iad").then(|| ReplicaObservation {
            source_host: "iad-internal".into(),
            source_port: 3306,
            io_running,
            sql_running: true,
            auto_position: true,
            ..ReplicaObservation::default()
        }),
        observed_at: Some(now()),
    }
}

fn status(
    run: RestoreInPlacePhase,
    queue: Option<RestoreReclonesPhase>,
    fence: bool,
) -> MysqlFailoverGroupStatus {
    MysqlFailoverGroupStatus {
        active_site: Some("iad".into()),
        restore_in_place: Some(RestoreInPlaceStatus {
            phase: Some(run),
            scope: Some(RestoreScope::FullInstance),
            ..RestoreInPlaceStatus::default()
        }),
        restore_reclones: queue.map(|phase| RestoreReclones {
            phase: Some(phase),
            pending: vec!["pdx".into(), "sea".into()],
            ..RestoreReclones::default()
        }),
        restore_offline_fence: fence.then(|| RestoreOfflineFence {
            site: Some("iad".into()),
            ..RestoreOfflineFence::default()
        }),
        ..MysqlFailoverGroupStatus::default()
    }
}

fn run_plan(facts: &[SiteFacts], guards: &RestoreGuards, unreachable_polls: u32) -> Vec<Step> {
    let mut history = History::default();
    history.unreachable_polls.insert("iad".into(), unreachable_polls);
    let addresses: BTreeMap<String, (String, u16)> = ["iad", "pdx", "sea"]
        .iter()
        .map(|s| ((*s).to_owned(), (format!("{s}-internal"), 3306)))
        .collect();
    plan(&PlanInput {
        facts,
        recorded_active: Some("iad"),
        priorities: &[],
        cooldown: SignedDuration::from_mins(5),
        failure_threshold: 3,
        recovery_threshold: 2,
        history: &history,
        deferral: None,
        excluded: &guards.excluded,
        addresses: &addresses,
        restore: guards,
        now: now(),
    })
}

#[test]
fn while_restoring_the_manager_is_frozen_holds_receivers_and_reasserts_the_fence() {
    let facts = [
        site("iad", SiteState::Writable, &format!("{A}:1-10"), false, false),
        site("pdx", SiteState::ReadOnly, &format!("{A}:1-10"), true, false),
        site("sea", SiteState::ReadOnly, &format!("{A}:1-10"), false, false),
    ];
    let guards =
        guards(&status(RestoreInPlacePhase::Restoring, Some(RestoreReclonesPhase::Armed), true));
    assert_eq!(
        run_plan(&facts, &guards, 0),
        [
            Step::OfflineFence { site: "iad".into() },
            Step::StopReceiver { site: "pdx".into() },
            Step::Alert(Alert::RestoreFrozen),
        ]
    );
    // The fence already up: not re-sent.
    let mut fenced = facts.clone();
    fenced[0].offline_mode = true;
    assert!(!run_plan(&fenced, &guards, 0).contains(&Step::OfflineFence { site: "iad".into() }));
}

#[test]
fn a_frozen_manager_does_not_fail_over() {
    let facts = [
        site("iad", SiteState::Unreachable, &format!("{A}:1-10"), false, false),
        site("pdx", SiteState::ReadOnly, &format!("{A}:1-10"), false, false),
        site("sea", SiteState::ReadOnly, &format!("{A}:1-10"), false, false),
    ];
    assert!(
        guards(&status(RestoreInPlacePhase::Resuming, Some(RestoreReclonesPhase::Armed), false))
            .frozen
    );
    // The freeze alone (no queued site), so the promotion exclusion cannot hide it.
    let frozen = RestoreGuards { frozen: true, ..RestoreGuards::default() };
    let steps = run_plan(&facts, &frozen, 10);
    assert!(!steps.iter().any(|s| matches!(s, Step::Promote { .. })), "{steps:?}");
    // Without the restore, the same poll fails over.
    let steps = run_plan(&facts, &NO_GUARDS, 10);
    assert!(
        steps.iter().any(|s| matches!(s, Step::Promote { by: PromoteWhy::Emergency { .. }, .. }))
    );
}

#[test]
fn held_sites_are_never_promoted_nor_repointed_and_their_receivers_stay_stopped() {
    // Held after a failed restore: the run is terminal, the manager unfrozen.
    let held =
        guards(&status(RestoreInPlacePhase::Failed, Some(RestoreReclonesPhase::Held), false));
    assert!(!held.frozen);
    // The primary is down and only queued sites remain: no failover.
    let facts = [
        site("iad", SiteState::Unreachable, &format!("{A}:1-10"), false, false),
        site("pdx", SiteState::ReadOnly, &format!("{A}:1-10"), false, false),
        site("sea", SiteState::ReadOnly, &format!("{A}:1-10"), false, false),
    ];
    let steps = run_plan(&facts, &held, 10);
    assert!(!steps.iter().any(|s| matches!(s, Step::Promote { .. })), "{steps:?}");
    assert!(steps.iter().any(|s| matches!(s, Step::Alert(Alert::NoPrimary { .. }))), "{steps:?}");
    // The primary is up, someone started pdx's receiver by hand: re-stopped, never repointed.
    let facts = [
        site("iad", SiteState::Writable, &format!("{A}:1-12"), false, false),
        site("pdx", SiteState::ReadOnly, &format!("{A}:1-10"), true, false),
        site("sea", SiteState::ReadOnly, &format!("{A}:1-10"), false, false),
    ];
    let steps = run_plan(&facts, &held, 0);
    assert_eq!(steps, [Step::StopReceiver { site: "pdx".into() }]);
    // Started by hand while its source refuses it (Replica_IO_Running: Connecting): re-stopped
    // too, before it can receive.
    let mut connecting = facts.clone();
    if let Some(replica) = connecting[1].replica.as_mut() {
        replica.io_running = false;
        replica.io_connecting = true;
    }
    let steps = run_plan(&connecting, &held, 0);
    assert_eq!(steps, [Step::StopReceiver { site: "pdx".into() }]);
    // The queue removed by a human: replication resumes (the stopped receivers are repointed).
    let released = guards(&status(RestoreInPlacePhase::Failed, None, false));
    let steps = run_plan(&facts, &released, 0);
    assert!(
        steps.iter().any(|s| matches!(s, Step::Repoint { site, .. } if site == "sea")),
        "{steps:?}"
    );
}
