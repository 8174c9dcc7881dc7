//! `restore::core_run` and `restore::guards`: preflight, arming, the fence, the peers'
//! receivers, the settlement of a failed run, and the guards status imposes.

use std::collections::BTreeSet;

use bloodraven_crd::group::{
    MysqlFailoverGroupStatus, ReplacedQueue, RestoreInPlacePhase, RestoreInPlaceStatus,
    RestoreOfflineFence, RestoreReclones, RestoreReclonesPhase, RestoreScope,
};
use bloodraven_gtid::GtidSet;
use bloodraven_operator::restore::core_run::{
    Arm, FailedRun, PEER_CATCH_UP, PEER_STOP_BOUND, POD_WAIT, PRIMARY_READ_WAIT, PeerAction,
    PeerReadiness, PeerStop, Preflight, PreflightInput, PrimaryRead, Privilege, Receiver, Session,
    Settlement, arm, evict, missing, preflight, release, release_statement, settle, stop_peers,
};
use bloodraven_operator::restore::guards::{PEER_HOLD, guards};
use jiff::{SignedDuration, Timestamp};

const A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

fn set(text: &str) -> GtidSet {
    text.parse().unwrap()
}

fn now() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

fn grants(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|g| (*g).to_owned()).collect()
}

fn queue(phase: RestoreReclonesPhase, pending: &[&str]) -> RestoreReclones {
    RestoreReclones {
        phase: Some(phase),
        run_id: Some("run-1".into()),
        pending: pending.iter().map(|s| (*s).to_owned()).collect(),
        fenced_gtid_executed: Some(format!("{A}:1-10")),
        ..RestoreReclones::default()
    }
}

#[test]
fn privileges_super_stands_in_for_all_but_process() {
    use Privilege::*;
    let needs = [ConnectionAdmin, SystemVariablesAdmin, Process, ReplicationSlaveAdmin];
    assert!(missing(&grants(&["ALL PRIVILEGES"]), &needs).is_empty());
    assert_eq!(missing(&grants(&["SUPER"]), &needs), [Process]);
    assert!(missing(&grants(&["SUPER", "PROCESS"]), &needs).is_empty());
    assert_eq!(
        missing(&grants(&["PROCESS", "CONNECTION_ADMIN"]), &needs),
        [SystemVariablesAdmin, ReplicationSlaveAdmin]
    );
}

#[test]
fn preflight_table() {
    let all = grants(&["ALL PRIVILEGES"]);
    let narrow = grants(&["SUPER"]);
    let ok_peer = vec![("pdx".to_owned(), PeerReadiness::Reachable { grants: all.clone() })];
    let base = PreflightInput {
        confirm: "2026-11-30T12:00:00Z",
        confirm_token_used: Some("2026-11-29T12:00:00Z"),
        active: Some(("iad", true)),
        primary_grants: Some(&all),
        peers: &ok_peer,
        concurrent: None,
        previous_queue: None,
    };
    assert_eq!(preflight(&base), Preflight::Accept);
    // Not newer: equal or older confirms start nothing.
    let same = PreflightInput { confirm_token_used: Some("2026-11-30T12:00:00Z"), ..base.clone() };
    assert_eq!(preflight(&same), Preflight::NotNewer);
    let bad = PreflightInput { confirm: "yesterday", ..base.clone() };
    assert!(matches!(preflight(&bad), Preflight::ConfirmIgnored { .. }));
    let read_only = PreflightInput { active: Some(("iad", false)), ..base.clone() };
    assert!(matches!(preflight(&read_only), Preflight::Wait { .. }));
    let lacking = PreflightInput { primary_grants: Some(&narrow), ..base.clone() };
    match preflight(&lacking) {
        Preflight::Rejected { message } => assert!(message.contains("PROCESS"), "{message}"),
        other => panic!("{other:?}"),
    }
    let peer_lacking =
        vec![("pdx".to_owned(), PeerReadiness::Reachable { grants: grants(&["PROCESS"]) })];
    match preflight(&PreflightInput { peers: &peer_lacking, ..base.clone() }) {
        Preflight::Rejected { message } => {
            assert!(message.contains("pdx") && message.contains("REPLICATION_SLAVE_ADMIN"));
        }
        other => panic!("{other:?}"),
    }
    let unreachable = vec![("pdx".to_owned(), PeerReadiness::Unreachable)];
    assert_eq!(
        preflight(&PreflightInput { peers: &unreachable, ..base.clone() }),
        Preflight::Wait { message: "waiting for peer pdx to be reachable".into() }
    );
    match preflight(&PreflightInput { concurrent: Some("ordered update"), ..base.clone() }) {
        Preflight::Wait { message } => assert!(message.contains("ordered update")),
        other => panic!("{other:?}"),
    }
    let mut draining = queue(RestoreReclonesPhase::Draining, &["fra"]);
    draining.current = Some(Default::default());
    assert!(matches!(
        preflight(&PreflightInput { previous_queue: Some(&draining), ..base }),
        Preflight::Wait { .. }
    ));
}

#[test]
fn arming_records_every_peer_and_a_replaced_queue() {
    let order = vec!["pdx".to_owned(), "fra".to_owned()];
    let Arm::Armed(armed) = arm(None, order.clone(), "run-2") else { panic!() };
    assert_eq!(armed.phase, Some(RestoreReclonesPhase::Armed));
    assert_eq!(armed.pending, order);
    assert_eq!(armed.replaced, None);

    let earlier = queue(RestoreReclonesPhase::Draining, &["fra"]);
    let Arm::Armed(armed) = arm(Some(&earlier), order.clone(), "run-2") else { panic!() };
    let replaced = armed.replaced.unwrap();
    assert_eq!(replaced.pending, ["fra"]);
    assert_eq!(replaced.phase, Some(RestoreReclonesPhase::Draining));

    // A queue still Armed from an earlier run whose settlement was lost is put Held first.
    let stale = queue(RestoreReclonesPhase::Armed, &["pdx", "fra"]);
    match arm(Some(&stale), order.clone(), "run-2") {
        Arm::HoldStale(held) => {
            assert_eq!(held.phase, Some(RestoreReclonesPhase::Held));
            assert_eq!(held.pending, ["pdx", "fra"]);
        }
        other => panic!("{other:?}"),
    }
    // This run's own queue (a retried write) is kept.
    let own = queue(RestoreReclonesPhase::Armed, &["pdx"]);
    assert_eq!(arm(Some(&own), order, "run-1"), Arm::Armed(own.clone()));
    // Success releases it: Draining, the replaced record dropped.
    let mut with_replaced = own;
    with_replaced.replaced = Some(ReplacedQueue::default());
    let released = release(&with_replaced);
    assert_eq!(released.phase, Some(RestoreReclonesPhase::Draining));
    assert_eq!(released.replaced, None);
}

#[test]
fn peers_get_thirty_seconds_to_receive_the_fenced_set_and_two_minutes_to_stop() {
    let fenced = set(&format!("{A}:1-10"));
    let behind = Receiver::Running { received: set(&format!("{A}:1-8")) };
    let caught_up = Receiver::Running { received: set(&format!("{A}:1-10")) };
    let peers = vec![
        ("pdx".to_owned(), behind.clone()),
        ("sea".to_owned(), caught_up),
        ("fra".to_owned(), Receiver::Connecting),
        ("ord".to_owned(), Receiver::Stopped),
    ];
    let at = |secs| now() + SignedDuration::from_secs(secs);
    match stop_peers(&peers, &fenced, now(), at(5)) {
        PeerStop::Act(actions) => assert_eq!(
            actions,
            vec![
                ("pdx".to_owned(), PeerAction::CatchUp),
                ("sea".to_owned(), PeerAction::Stop { behind: GtidSet::new() }),
                ("fra".to_owned(), PeerAction::Stop { behind: GtidSet::new() }),
                ("ord".to_owned(), PeerAction::Stopped),
            ]
        ),
        other => panic!("{other:?}"),
    }
    let after = now() + PEER_CATCH_UP;
    match stop_peers(&[("pdx".to_owned(), behind)], &fenced, now(), after) {
        PeerStop::Act(actions) => {
            assert_eq!(actions[0].1, PeerAction::Stop { behind: set(&format!("{A}:9-10")) });
        }
        other => panic!("{other:?}"),
    }
    let stopped = [("pdx".to_owned(), Receiver::Stopped)];
    assert_eq!(stop_peers(&stopped, &fenced, now(), at(1)), PeerStop::AllStopped);
    let lost = [("pdx".to_owned(), Receiver::Unknown { why: "refused".into() })];
    assert!(matches!(stop_peers(&lost, &fenced, now(), at(119)), PeerStop::Act(_)));
    match stop_peers(&lost, &fenced, now(), now() + PEER_STOP_BOUND) {
        PeerStop::Failed { unverified } => {
            assert_eq!(unverified, [("pdx".into(), "refused".into())])
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_fence_puts_back_what_it_recorded_and_evicts_the_right_sessions() {
    assert_eq!(release_statement(Some(true)), "SET GLOBAL offline_mode = ON");
    assert_eq!(release_statement(Some(false)), "SET GLOBAL offline_mode = OFF");
    assert_eq!(release_statement(None), "SET GLOBAL offline_mode = OFF");
    let session = |id, user: &str, dump, system, before| Session {
        id,
        user: user.into(),
        dump_thread: dump,
        system_user: system,
        before_fence: before,
    };
    let sessions = [
        session(1, "app", false, false, true),
        session(2, "operator", false, false, true),
        session(3, "repl", true, false, true),
        session(4, "dba", false, true, true),
        session(5, "app", false, false, false),
    ];
    let eviction = evict(&sessions, "operator", false);
    assert_eq!(eviction.kill, [1]);
    assert_eq!(eviction.kept, [(4, "dba".to_owned())]);
    assert!(!eviction.applied);
    let eviction = evict(&sessions[1..], "operator", false);
    assert!(eviction.applied, "only kept SYSTEM_USER sessions remain: applied");
    assert_eq!(evict(&sessions, "operator", true).kill, [1, 4]);
}

fn run<'a>(
    queue: &'a RestoreReclones,
    job_creating: bool,
    pods: Option<bool>,
    primary: PrimaryRead,
    since_end: SignedDuration,
) -> FailedRun<'a> {
    FailedRun {
        queue,
        job_creating,
        pods_terminated: pods,
        primary,
        ended: now(),
        now: now() + since_end,
    }
}

#[test]
fn settlement_of_a_failed_run() {
    let armed = queue(RestoreReclonesPhase::Armed, &["pdx", "fra"]);
    let unchanged = PrimaryRead::Read(set(&format!("{A}:1-10")));
    let changed = PrimaryRead::Read(set(&format!("{A}:1-12")));
    let zero = SignedDuration::ZERO;
    // Never created its Job: discarded.
    assert_eq!(settle(&run(&armed, false, None, changed.clone(), zero)), Settlement::Discard);
    // Job failed before its DROP (pods done, primary unchanged): discarded.
    assert_eq!(
        settle(&run(&armed, true, Some(true), unchanged.clone(), zero)),
        Settlement::Discard
    );
    // After its DROP: Held with every peer.
    match settle(&run(&armed, true, Some(true), changed.clone(), zero)) {
        Settlement::Hold(held) => {
            assert_eq!(held.phase, Some(RestoreReclonesPhase::Held));
            assert_eq!(held.pending, ["pdx", "fra"]);
        }
        other => panic!("{other:?}"),
    }
    // A pod still running: Armed (wait) for ten minutes, then Held.
    let pods_up = POD_WAIT - SignedDuration::from_secs(1);
    assert!(matches!(
        settle(&run(&armed, true, Some(false), unchanged.clone(), pods_up)),
        Settlement::Wait { .. }
    ));
    assert!(matches!(
        settle(&run(&armed, true, None, unchanged.clone(), POD_WAIT)),
        Settlement::Hold(_)
    ));
    // An unreadable primary: two minutes from the first failed read, then Held.
    let unreadable = PrimaryRead::Unreadable { since: now() };
    assert!(matches!(
        settle(&run(&armed, true, Some(true), unreadable.clone(), SignedDuration::from_secs(60))),
        Settlement::Wait { .. }
    ));
    assert!(matches!(
        settle(&run(&armed, true, Some(true), unreadable, PRIMARY_READ_WAIT)),
        Settlement::Hold(_)
    ));
    // A replaced earlier queue: drains again when the primary is unchanged…
    let mut replacing = armed.clone();
    replacing.replaced = Some(ReplacedQueue {
        phase: Some(RestoreReclonesPhase::Draining),
        run_id: Some("run-0".into()),
        pending: vec!["fra".into()],
        ..ReplacedQueue::default()
    });
    match settle(&run(&replacing, false, None, changed.clone(), zero)) {
        Settlement::Restore(earlier) => {
            assert_eq!(earlier.phase, Some(RestoreReclonesPhase::Draining));
            assert_eq!(earlier.pending, ["fra"]);
            assert_eq!(earlier.run_id.as_deref(), Some("run-0"));
        }
        other => panic!("{other:?}"),
    }
    // …and is put back Held with the failed run's other peers when the primary changed.
    match settle(&run(&replacing, true, Some(true), changed, zero)) {
        Settlement::Hold(held) => assert_eq!(held.pending, ["pdx", "fra"]),
        other => panic!("{other:?}"),
    }
}

fn status(
    run: Option<RestoreInPlacePhase>,
    queue_phase: Option<RestoreReclonesPhase>,
    fence: bool,
) -> MysqlFailoverGroupStatus {
    MysqlFailoverGroupStatus {
        restore_in_place: run.map(|phase| RestoreInPlaceStatus {
            phase: Some(phase),
            scope: Some(RestoreScope::FullInstance),
            ..RestoreInPlaceStatus::default()
        }),
        restore_reclones: queue_phase.map(|phase| queue(phase, &["pdx", "fra"])),
        restore_offline_fence: fence.then(|| RestoreOfflineFence {
            site: Some("iad".into()),
            prior_offline_mode: Some(false),
            ..RestoreOfflineFence::default()
        }),
        ..MysqlFailoverGroupStatus::default()
    }
}

#[test]
fn guards_follow_the_status() {
    use RestoreInPlacePhase::*;
    use RestoreReclonesPhase::{Armed, Draining, Held};
    let sites = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
    assert!(guards(&MysqlFailoverGroupStatus::default()).is_empty());

    // Fencing: queued sites excluded and clone-blocked; receivers not re-stopped yet (the run
    // gives them their catch-up); the fence re-asserted; the manager frozen.
    let fencing = guards(&status(Some(Fencing), Some(Armed), true));
    assert_eq!(fencing.excluded.get("pdx").map(String::as_str), Some(PEER_HOLD));
    assert_eq!(fencing.clone_block, sites(&["pdx", "fra"]));
    assert!(fencing.hold_receivers.is_empty());
    assert!(fencing.frozen);
    assert_eq!(fencing.offline_fence.as_deref(), Some("iad"));

    let restoring = guards(&status(Some(Restoring), Some(Armed), true));
    assert_eq!(restoring.hold_receivers, sites(&["pdx", "fra"]));

    // Failed but not settled (queue still Armed): every guard stays, the fence included.
    let unsettled = guards(&status(Some(Failed), Some(Armed), true));
    assert_eq!(unsettled.hold_receivers, sites(&["pdx", "fra"]));
    assert_eq!(unsettled.offline_fence.as_deref(), Some("iad"));
    assert!(!unsettled.frozen);

    // Held: held receivers, no clones, out of promotion; the fence is being released.
    let held = guards(&status(Some(Failed), Some(Held), true));
    assert_eq!(held.hold_receivers, sites(&["pdx", "fra"]));
    assert_eq!(held.clone_block, sites(&["pdx", "fra"]));
    assert_eq!(held.offline_fence, None);

    // Draining: out of promotion only; their own reclone restarts them.
    let draining = guards(&status(Some(Succeeded), Some(Draining), false));
    assert_eq!(draining.excluded.len(), 2);
    assert!(draining.hold_receivers.is_empty() && draining.clone_block.is_empty());

    // The queue removed by a human: every guard released.
    assert!(guards(&status(Some(Failed), None, false)).is_empty());

    // An unknown queue phase keeps every guard.
    let mut odd = status(Some(Succeeded), Some(Draining), false);
    if let Some(queue) = odd.restore_reclones.as_mut() {
        queue.phase = Some(RestoreReclonesPhase::from("Paused"));
    }
    let odd = guards(&odd);
    assert_eq!(odd.hold_receivers, sites(&["pdx", "fra"]));
    assert_eq!(odd.clone_block, sites(&["pdx", "fra"]));
}
