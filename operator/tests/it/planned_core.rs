//! The planned-failover decision core: one test per outcome × reason pair of the catalog
//! (every pair is reached here, or listed in `NOT_REACHED` with the reason), the timings
//! against the document's table, and the README table that maps each pair to its test.

use bloodraven_crd::annotations::{
    ACKNOWLEDGE_PLANNED_FAILOVER_HOLD, PLANNED_FAILOVER, PLANNED_FAILOVER_STALL_SINCE,
    PLANNED_FAILOVER_TERMINAL,
};
use bloodraven_crd::catalog::planned_failover_run as run_catalog;
use bloodraven_crd::group::{
    OnCooldown, PlannedFailoverOutcome as Outcome, PlannedFailoverPhase as Phase,
    PlannedFailoverReason as Reason, PlannedFailoverWarning as Warning, SiteRole,
};
use bloodraven_operator::planned::{ClaimSlot, FailoverRecord, ManagerState, Metric, Timings};
use jiff::SignedDuration;

use crate::planned_world::{OTHER, World};

type Ended = (Outcome, Option<Reason>);

fn happy() -> World {
    let mut world = World::three_sites();
    world.request("pdx");
    world
}

/// Runs the world to its end and returns the outcome and reason.
fn end(mut world: World) -> (World, Ended) {
    world.run_to_end();
    assert!(
        world.violations.is_empty(),
        "side effects without their record: {:?}",
        world.violations
    );
    let ended = world.ended();
    (world, ended)
}

fn ended(world: World) -> Ended {
    end(world).1
}

/// A world whose run reached `phase`, then `fault` is applied.
fn at(phase: Phase, fault: impl FnOnce(&mut World)) -> World {
    let mut world = happy();
    world.run_until_phase(phase);
    fault(&mut world);
    world
}

/// A rollback record with `reason`, whose unfence never lands: SourceLeftFenced{reason}.
fn rollback_left_fenced(reason: Reason) -> Ended {
    let mut world = World::three_sites();
    world.with_block(Phase::RollingBack);
    world.rollback_reason(Some(reason));
    world.unfence_fails = true;
    ended(world)
}

/// A promotion that sent super_read_only=OFF but can never be confirmed (read_only stays ON).
fn partial_promotion(fault: impl FnOnce(&mut World)) -> World {
    let mut world = happy();
    world.promote_partial = true;
    world
        .run_until(600, |w| w.phase() == Some(Phase::Promoting) && !w.sites["pdx"].super_read_only);
    fault(&mut world);
    world
}

/// A promotion whose statements fail before any write.
fn failing_promotion(fault: impl FnOnce(&mut World)) -> World {
    let mut world = happy();
    world.promote_fails = true;
    world.run_until_phase(Phase::Promoting);
    world.pass();
    fault(&mut world);
    world
}

/// An Event-only refusal: no status block, one PlannedFailoverRejected, counted not-started.
fn refused_without_block(mut world: World, reason: Reason) -> Ended {
    let decision = world.pass();
    assert_eq!(decision.written_block(), None, "{reason:?} writes no status block");
    assert!(decision.event_reasons().contains(&"PlannedFailoverRejected"));
    assert!(
        decision
            .metrics
            .iter()
            .any(|m| matches!(m, Metric::Finished { result, .. } if result == "not-started"))
    );
    assert!(!world.annotations.contains_key(PLANNED_FAILOVER), "the request is removed");
    (Outcome::NotStarted, Some(reason))
}

// --- NotStarted ---

fn ns_invalid_annotation() -> Ended {
    let mut world = World::three_sites();
    world.request("pdx:maxLagWait=2h");
    refused_without_block(world, Reason::InvalidAnnotation)
}
fn ns_unknown_site() -> Ended {
    let mut world = World::three_sites();
    world.request("nope");
    ended(world)
}
fn ns_target_not_promotable() -> Ended {
    let mut world = World::three_sites();
    world.request("fra");
    ended(world)
}
fn ns_already_active() -> Ended {
    // Authority is unsettled (a failover in flight) when the request arrives; the failover
    // then promotes the target itself.
    let mut world = happy();
    world.active = None;
    world.pass();
    assert_eq!(world.phase(), Some(Phase::Admitting));
    world.active = Some("pdx".to_owned());
    ended(world)
}
fn ns_target_unhealthy() -> Ended {
    let mut world = happy();
    world.target_health.reclone_pending = true;
    ended(world)
}
fn ns_keyring_rotation() -> Ended {
    let mut world = happy();
    world.target_health.mid_rotation = true;
    ended(world)
}
fn ns_cooldown_active() -> Ended {
    let mut world = happy();
    world.last_failover = Ok(Some(FailoverRecord {
        time: world.now - SignedDuration::from_mins(1),
        target: "iad".to_owned(),
        gtid: String::new(),
    }));
    ended(world)
}
fn ns_concurrent_operation() -> Ended {
    let mut world = happy();
    world.concurrent_operation = true;
    ended(world)
}
fn ns_invalid_failover_state() -> Ended {
    let mut world = happy();
    world.last_failover = Err("status.lastFailover.time does not parse".to_owned());
    ended(world)
}
fn ns_canceled() -> Ended {
    let mut world = happy();
    world.knobs.on_cooldown = OnCooldown::Defer;
    world.last_failover = Ok(Some(FailoverRecord {
        time: world.now - SignedDuration::from_mins(1),
        target: "iad".to_owned(),
        gtid: String::new(),
    }));
    world.pass();
    assert_eq!(world.phase(), Some(Phase::Deferred));
    assert!(world.events().contains(&"PlannedFailoverDeferred"));
    world.annotations.remove(PLANNED_FAILOVER);
    ended(world)
}
fn ns_divergent_target() -> Ended {
    let mut world = happy();
    world.target_health.divergence_report = true;
    ended(world)
}
fn ns_manual_recovery_pending() -> Ended {
    let mut world = happy();
    world.claim = ClaimSlot::Hold(Some("6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10".to_owned()));
    world.record.hold_condition = true;
    refused_without_block(world, Reason::ManualRecoveryPending)
}
fn ns_admission_timeout() -> Ended {
    let mut world = happy();
    world.site("fra").up = false;
    let (world, ended) = end(world);
    assert!(world.events().contains(&"PlannedFailoverAdmissionDelayed"));
    assert!(world.block().message.unwrap().contains("PeerUnreadable"));
    ended
}
fn ns_legacy_run_refused() -> Ended {
    let mut world = World::three_sites();
    world.with_block(Phase::Pending);
    world.record.block.as_mut().unwrap().run_id = None;
    let (world, ended) = end(world);
    assert!(world.events().contains(&"PlannedFailoverLegacyRunRefused"));
    assert!(world.violations.is_empty() && world.named_for_reassert.is_empty());
    ended
}
fn ns_status_stalled() -> Ended {
    // The Fencing write stays ambiguous (never settled): the claim was taken and is kept, no
    // fence intent is durable.
    let mut world = happy();
    world.ambiguous_writes = true;
    world.status_writes_fail = true;
    world.pass(); // Admitting (refused)
    world.status_writes_fail = false;
    world.status_write_failing = false;
    world.pass(); // Admitting lands
    assert_eq!(world.phase(), Some(Phase::Admitting));
    world.claim = ClaimSlot::Run(world.block().run_id.unwrap());
    world.status_writes_fail = true;
    world.status_write_failing = true;
    ended(world)
}
fn ns_dragonfly_unsupported() -> Ended {
    let mut world = happy();
    world.dragonfly = true;
    let (world, ended) = end(world);
    assert!(world.block().message.unwrap().contains("spec.dragonfly.enabled"));
    ended
}

// --- RolledBack ---

fn rb_target_not_promotable() -> Ended {
    ended(failing_promotion(|w| w.site("pdx").role = SiteRole::ReadOnly))
}
fn rb_divergent_target() -> Ended {
    ended(at(Phase::WaitingForLag, |w| {
        let pdx = w.site("pdx");
        pdx.gtid.union_with(&format!("{OTHER}:1").parse().unwrap());
    }))
}
fn rb_authority_changed() -> Ended {
    // The source's fence was lifted, written through and set again before a write.
    ended(at(Phase::WaitingForLag, |w| {
        w.site("pdx").channel = Some(("iad".to_owned(), false));
        let iad = w.site("iad");
        iad.gtid.union_with(&format!("{}:500", crate::planned_world::IAD).parse().unwrap());
    }))
}
fn rb_fence_failed() -> Ended {
    let mut world = happy();
    world.fence_fails = true;
    ended(world)
}
fn rb_source_lost() -> Ended {
    let mut world = at(Phase::WaitingForLag, |w| {
        w.site("pdx").channel = Some(("iad".to_owned(), false));
        w.site("iad").up = false;
    });
    world.run_until_phase(Phase::RollingBack);
    // The source answers writable again (restarted to its boot state).
    let iad = world.site("iad");
    iad.up = true;
    iad.read_only = false;
    iad.super_read_only = false;
    ended(world)
}
fn rb_source_unfenced() -> Ended {
    ended(at(Phase::WaitingForLag, |w| {
        w.site("pdx").channel = Some(("iad".to_owned(), false));
        let iad = w.site("iad");
        iad.read_only = false;
        iad.super_read_only = false;
    }))
}
fn rb_target_lost() -> Ended {
    ended(at(Phase::WaitingForLag, |w| w.site("pdx").up = false))
}
fn rb_peer_unreadable() -> Ended {
    ended(failing_promotion(|w| w.site("fra").up = false))
}
fn rb_lag_timeout() -> Ended {
    // The target's threads run but it applies nothing (a slow applier).
    let mut world = happy();
    world.knobs.max_lag_wait = Ok(SignedDuration::from_secs(20));
    world.lagging.insert("pdx".to_owned());
    world.tick(SignedDuration::from_secs(1));
    ended(world)
}
fn rb_invalid_gtid() -> Ended {
    let mut world = World::three_sites();
    world.with_block(Phase::WaitingForLag);
    world.record.block.as_mut().unwrap().fence.as_mut().unwrap().gtid_set =
        Some("not a set".to_owned());
    ended(world)
}
fn rb_target_changed() -> Ended {
    ended(failing_promotion(|w| w.site("pdx").uuid = OTHER.to_owned()))
}
fn rb_promotion_aborted() -> Ended {
    ended(failing_promotion(|_| {}))
}
fn rb_status_stalled() -> Ended {
    let mut world = happy();
    world.fence_fails = true;
    world.run_until_phase(Phase::Fencing);
    world.status_writes_fail = true;
    ended(world)
}
fn rb_internal_error() -> Ended {
    rollback_rolled_back_without_reason()
}
fn rollback_rolled_back_without_reason() -> Ended {
    let mut world = World::three_sites();
    world.with_block(Phase::RollingBack);
    ended(world)
}

// --- SourceLeftFenced ---

fn slf_unknown_site() -> Ended {
    let (world, ended) = end(at(Phase::WaitingForLag, |w| {
        w.site("pdx").channel = Some(("iad".to_owned(), false));
        w.site("pdx").in_spec = false;
    }));
    assert!(world.named_for_reassert.is_empty(), "UnknownSite names nothing");
    ended
}
fn slf_legacy_run_refused() -> Ended {
    let mut world = World::three_sites();
    world.with_block(Phase::Draining);
    world.record.block.as_mut().unwrap().run_id = None;
    ended(world)
}
fn slf_source_lost() -> Ended {
    ended(at(Phase::WaitingForLag, |w| {
        w.site("pdx").channel = Some(("iad".to_owned(), false));
        w.site("iad").up = false;
    }))
}
fn slf_foreign_writable() -> Ended {
    ended(at(Phase::WaitingForLag, |w| {
        w.site("pdx").channel = Some(("iad".to_owned(), false));
        let fra = w.site("fra");
        fra.read_only = false;
        fra.super_read_only = false;
    }))
}
fn slf_manager_unavailable() -> Ended {
    let (world, ended) = end(at(Phase::WaitingForLag, |w| {
        w.site("pdx").channel = Some(("iad".to_owned(), false));
        w.knobs.max_lag_wait = Ok(SignedDuration::from_mins(30));
        w.manager = ManagerState::Absent;
    }));
    assert!(world.events().contains(&"PlannedFailoverStalledManagerAbsent"));
    ended
}
fn slf_status_stalled() -> Ended {
    let (world, ended) = end(at(Phase::WaitingForLag, |w| {
        w.site("pdx").channel = Some(("iad".to_owned(), false));
        w.status_writes_fail = true;
    }));
    assert!(world.events().contains(&"PlannedFailoverStatusStalled"));
    assert_eq!(
        world.named_for_reassert,
        ["iad"],
        "an attributable fence is named for the re-assert"
    );
    ended
}
fn slf_authority_changed() -> Ended {
    // Another actor fenced the source before this run's fence was sent.
    let mut world = happy();
    world.fence_fails = true;
    world.run_until_phase(Phase::Fencing);
    let iad = world.site("iad");
    iad.read_only = true;
    iad.super_read_only = true;
    let (world, ended) = end(world);
    assert!(world.block().result.unwrap().warnings.contains(&Warning::FenceNotAttributable));
    ended
}
fn slf_internal_error() -> Ended {
    let mut world = World::three_sites();
    world.with_block(Phase::RollingBack);
    world.unfence_fails = true;
    ended(world)
}

// --- PromotedUnconfirmed ---

fn pu_unknown_site() -> Ended {
    ended(partial_promotion(|w| w.site("pdx").in_spec = false))
}
fn pu_legacy_run_refused() -> Ended {
    let mut world = World::three_sites();
    world.with_block(Phase::Promoting);
    world.record.block.as_mut().unwrap().run_id = None;
    ended(world)
}
fn pu_source_lost() -> Ended {
    ended(partial_promotion(|w| w.site("iad").up = false))
}
fn pu_target_lost() -> Ended {
    let (world, ended) = end(partial_promotion(|w| w.site("pdx").up = false));
    assert_eq!(world.named_last_target, ["pdx"]);
    ended
}
fn pu_peer_unreadable() -> Ended {
    ended(partial_promotion(|w| {
        w.restart_operator();
        w.site("fra").up = false;
    }))
}
fn pu_promotion_unconfirmed() -> Ended {
    ended(partial_promotion(|_| {}))
}
fn pu_manager_unavailable() -> Ended {
    let (world, ended) = end(partial_promotion(|w| w.manager = ManagerState::Absent));
    assert!(world.named_last_target.is_empty(), "ManagerUnavailable names nothing");
    ended
}
fn pu_status_stalled() -> Ended {
    ended(partial_promotion(|w| w.status_writes_fail = true))
}
fn pu_internal_error() -> Ended {
    let mut world = World::three_sites();
    world.with_block(Phase::Promoting);
    world.record.block.as_mut().unwrap().fence.as_mut().unwrap().gtid_set =
        Some("garbage".to_owned());
    world.memory.write_possibly_sent = true;
    ended(world)
}

// --- ManualRecoveryRequired ---

fn mrr_authority_changed() -> Ended {
    let (world, ended) = end(partial_promotion(|w| {
        w.last_failover =
            Ok(Some(FailoverRecord { time: w.now, target: "fra".to_owned(), gtid: String::new() }));
    }));
    assert!(world.record.hold.is_some() && world.record.hold_condition);
    assert!(matches!(world.claim, ClaimSlot::Hold(Some(_))));
    ended
}
fn mrr_foreign_writable() -> Ended {
    ended(partial_promotion(|w| {
        let fra = w.site("fra");
        fra.read_only = false;
        fra.super_read_only = false;
    }))
}
fn mrr_execute_failed() -> Ended {
    ended(partial_promotion(|w| {
        w.site("pdx").gtid.union_with(&format!("{OTHER}:1-3").parse().unwrap())
    }))
}

// --- Succeeded ---

fn succeeded() -> Ended {
    let (world, ended) = end(happy());
    assert_eq!(world.writable_sites(), ["pdx"]);
    assert_eq!(world.active.as_deref(), Some("pdx"));
    let last = world.last_failover.clone().unwrap().unwrap();
    assert_eq!(last.target, "pdx");
    assert_eq!(last.gtid, world.block().fence.unwrap().gtid_set.unwrap());
    assert_eq!(world.claim, ClaimSlot::Free);
    let events = world.events();
    for event in [
        "PlannedFailoverStarted",
        "PlannedFailoverClaimGranted",
        "PlannedFailoverDrainStarted",
        "PlannedFailoverTargetCaughtUp",
        "PlannedFailoverSucceeded",
    ] {
        assert!(events.contains(&event), "{event} in {events:?}");
    }
    ended
}

/// Each pair the catalog allows and the test that reaches it.
/// (outcome, reason, the test that reaches it).
type Pair = (&'static str, &'static str, fn() -> Ended);

const PAIRS: &[Pair] = &[
    ("Succeeded", "", succeeded),
    ("NotStarted", "InvalidAnnotation", ns_invalid_annotation),
    ("NotStarted", "UnknownSite", ns_unknown_site),
    ("NotStarted", "TargetNotPromotable", ns_target_not_promotable),
    ("NotStarted", "AlreadyActive", ns_already_active),
    ("NotStarted", "TargetUnhealthy", ns_target_unhealthy),
    ("NotStarted", "KeyringRotation", ns_keyring_rotation),
    ("NotStarted", "CooldownActive", ns_cooldown_active),
    ("NotStarted", "ConcurrentOperation", ns_concurrent_operation),
    ("NotStarted", "InvalidFailoverState", ns_invalid_failover_state),
    ("NotStarted", "Canceled", ns_canceled),
    ("NotStarted", "DivergentTarget", ns_divergent_target),
    ("NotStarted", "ManualRecoveryPending", ns_manual_recovery_pending),
    ("NotStarted", "AdmissionTimeout", ns_admission_timeout),
    ("NotStarted", "LegacyRunRefused", ns_legacy_run_refused),
    ("NotStarted", "StatusStalled", ns_status_stalled),
    ("NotStarted", "DragonflyUnsupported", ns_dragonfly_unsupported),
    ("RolledBack", "TargetNotPromotable", rb_target_not_promotable),
    ("RolledBack", "DivergentTarget", rb_divergent_target),
    ("RolledBack", "AuthorityChanged", rb_authority_changed),
    ("RolledBack", "FenceFailed", rb_fence_failed),
    ("RolledBack", "SourceLost", rb_source_lost),
    ("RolledBack", "SourceUnfenced", rb_source_unfenced),
    ("RolledBack", "TargetLost", rb_target_lost),
    ("RolledBack", "PeerUnreadable", rb_peer_unreadable),
    ("RolledBack", "LagTimeout", rb_lag_timeout),
    ("RolledBack", "InvalidGTID", rb_invalid_gtid),
    ("RolledBack", "TargetChanged", rb_target_changed),
    ("RolledBack", "PromotionAborted", rb_promotion_aborted),
    ("RolledBack", "StatusStalled", rb_status_stalled),
    ("RolledBack", "InternalError", rb_internal_error),
    ("SourceLeftFenced", "UnknownSite", slf_unknown_site),
    ("SourceLeftFenced", "TargetNotPromotable", || {
        rollback_left_fenced(Reason::TargetNotPromotable)
    }),
    ("SourceLeftFenced", "DivergentTarget", || rollback_left_fenced(Reason::DivergentTarget)),
    ("SourceLeftFenced", "AuthorityChanged", slf_authority_changed),
    ("SourceLeftFenced", "LegacyRunRefused", slf_legacy_run_refused),
    ("SourceLeftFenced", "FenceFailed", || rollback_left_fenced(Reason::FenceFailed)),
    ("SourceLeftFenced", "SourceLost", slf_source_lost),
    ("SourceLeftFenced", "SourceUnfenced", || rollback_left_fenced(Reason::SourceUnfenced)),
    ("SourceLeftFenced", "TargetLost", || rollback_left_fenced(Reason::TargetLost)),
    ("SourceLeftFenced", "ForeignWritable", slf_foreign_writable),
    ("SourceLeftFenced", "PeerUnreadable", || rollback_left_fenced(Reason::PeerUnreadable)),
    ("SourceLeftFenced", "LagTimeout", || rollback_left_fenced(Reason::LagTimeout)),
    ("SourceLeftFenced", "InvalidGTID", || rollback_left_fenced(Reason::InvalidGtid)),
    ("SourceLeftFenced", "TargetChanged", || rollback_left_fenced(Reason::TargetChanged)),
    ("SourceLeftFenced", "PromotionAborted", || rollback_left_fenced(Reason::PromotionAborted)),
    ("SourceLeftFenced", "ManagerUnavailable", slf_manager_unavailable),
    ("SourceLeftFenced", "StatusStalled", slf_status_stalled),
    ("SourceLeftFenced", "InternalError", slf_internal_error),
    ("PromotedUnconfirmed", "UnknownSite", pu_unknown_site),
    ("PromotedUnconfirmed", "LegacyRunRefused", pu_legacy_run_refused),
    ("PromotedUnconfirmed", "SourceLost", pu_source_lost),
    ("PromotedUnconfirmed", "TargetLost", pu_target_lost),
    ("PromotedUnconfirmed", "PeerUnreadable", pu_peer_unreadable),
    ("PromotedUnconfirmed", "PromotionUnconfirmed", pu_promotion_unconfirmed),
    ("PromotedUnconfirmed", "ManagerUnavailable", pu_manager_unavailable),
    ("PromotedUnconfirmed", "StatusStalled", pu_status_stalled),
    ("PromotedUnconfirmed", "InternalError", pu_internal_error),
    ("ManualRecoveryRequired", "AuthorityChanged", mrr_authority_changed),
    ("ManualRecoveryRequired", "ForeignWritable", mrr_foreign_writable),
    ("ManualRecoveryRequired", "ExecuteFailed", mrr_execute_failed),
];

/// Pairs the catalog allows that no decision-core test reaches yet, with the reason.
const NOT_REACHED: &[(&str, &str, &str)] = &[
    (
        "NotStarted",
        "AuthorityChanged",
        "the Fencing record makes the fence intent durable before any check that finds authority moved; before the grant, moved authority is the AuthorityUnsettled wait",
    ),
    ("NotStarted", "InternalError", "admission has no record of its own to find inconsistent"),
    (
        "ManualRecoveryRequired",
        "InternalError",
        "no inconsistency of the run's own records is classified as a possible write with a hold",
    ),
    (
        "RolledBack",
        "DragonflySyncTimeout",
        "Dragonfly coordination is not built: a Dragonfly request ends NotStarted{DragonflyUnsupported}",
    ),
    ("SourceLeftFenced", "DragonflySyncTimeout", "Dragonfly coordination is not built"),
    ("RolledBack", "DragonflyPromotionFailed", "Dragonfly coordination is not built"),
    ("SourceLeftFenced", "DragonflyPromotionFailed", "Dragonfly coordination is not built"),
];

#[test]
fn every_outcome_reason_pair_is_reached_by_its_test() {
    let mut failures = Vec::new();
    for (outcome, reason, scenario) in PAIRS {
        let reason = (!reason.is_empty()).then_some(*reason);
        assert!(
            run_catalog::outcome_allows(outcome, reason),
            "{outcome}/{reason:?} is not a catalog pair"
        );
        let result = std::panic::catch_unwind(scenario);
        match result {
            Ok((got_outcome, got_reason)) => {
                let got = (
                    got_outcome.as_str().to_owned(),
                    got_reason.as_ref().map(|r| r.as_str().to_owned()),
                );
                if got != ((*outcome).to_owned(), reason.map(str::to_owned)) {
                    failures.push(format!("{outcome}/{reason:?}: the scenario ended {got:?}"));
                }
            }
            Err(_) => failures.push(format!("{outcome}/{reason:?}: the scenario panicked")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} pairs failed:\n{}",
        failures.len(),
        PAIRS.len(),
        failures.join("\n")
    );
}

#[test]
fn every_catalog_pair_has_a_test_or_a_stated_reason() {
    let mut missing = Vec::new();
    for (outcome, reason) in run_catalog::outcome_reason_pairs() {
        let tested = PAIRS.iter().any(|(o, r, _)| *o == outcome && *r == reason);
        let listed = NOT_REACHED.iter().any(|(o, r, _)| *o == outcome && *r == reason);
        if tested == listed {
            missing.push(format!(
                "{outcome}/{reason}: tested {tested}, listed as not reached {listed}"
            ));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// operator/README.md maps each pair to its test (section "Planned failover").
#[test]
fn the_readme_table_names_every_pair_and_its_test() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme
        .split("## Planned failover")
        .nth(1)
        .expect("operator/README.md has a \"## Planned failover\" section");
    let mut missing = Vec::new();
    for (outcome, reason, _) in PAIRS {
        let reason = if reason.is_empty() { "—" } else { reason };
        let row = format!("| {outcome} | {reason} |");
        if !section.contains(&row) {
            missing.push(row);
        }
    }
    for (outcome, reason, _) in NOT_REACHED {
        let row = format!("| {outcome} | {reason} |");
        if !section.contains(&row) {
            missing.push(row);
        }
    }
    assert!(missing.is_empty(), "README rows missing:\n{}", missing.join("\n"));
}

/// The README table's Drill column: every drill it names is a file of `crates/drill/drills`
/// that reaches the row's pair (waits for that outcome and reason; an already-active request
/// ends with the Skipped Event and no block, ambiguity 1).
#[test]
fn the_readme_drills_exist_and_reach_their_pair() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/operator/README.md")).unwrap();
    let section = readme.split("### Outcome × reason → test").nth(1).unwrap();
    let mut problems = Vec::new();
    let mut drills = 0;
    for line in section.lines().take_while(|l| !l.starts_with("##")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "", outcome, reason, test, drill, "".
        let [_, outcome, reason, _, drill, _] = cells[..] else { continue };
        let names: Vec<&str> = drill
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|name| name.starts_with("planned-"))
            .collect();
        for name in names {
            drills += 1;
            let path = format!("{root}/crates/drill/drills/{name}.yaml");
            let Ok(text) = std::fs::read_to_string(&path) else {
                problems.push(format!("{outcome}/{reason}: {path} does not exist"));
                continue;
            };
            let wanted = match (outcome, reason) {
                ("Succeeded", _) => "outcome: {outcome: Succeeded}".to_owned(),
                ("NotStarted", "AlreadyActive") => "PlannedFailoverSkipped".to_owned(),
                _ => format!("outcome: {{outcome: {outcome}, reason: {reason}}}"),
            };
            if !text.contains(&wanted) {
                problems.push(format!("{outcome}/{reason}: {name}.yaml has no `{wanted}`"));
            }
        }
    }
    assert!(drills > 0, "the README table names no drill: is the section heading intact?");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Planned-failover document, "Deadlines and worst-case write outage" (table Phase /
/// condition | Window or deadline), "Spec-level defaults", "Status stalls and the terminal
/// marker", "Operator restarts, manager restarts, leader changes" and "The automation hold".
#[test]
fn timings_are_the_documents() {
    let t = Timings::document();
    let s = SignedDuration::from_secs;
    let table: &[(&str, SignedDuration, SignedDuration)] = &[
        ("Admitting: 2 minutes from entering Admitting", t.admission_deadline, s(120)),
        ("Fencing: 30 seconds from fence.intentTime", t.fence_deadline, s(30)),
        (
            "the source does not answer: 10 seconds of consecutive failed probes",
            t.source_loss_window,
            s(10),
        ),
        ("Draining: settings.drainTimeout (30 seconds)", t.default_drain_timeout, s(30)),
        ("WaitingForLag: settings.maxLagWait (5 minutes)", t.default_max_lag_wait, s(300)),
        ("the target does not answer: 10 seconds", t.target_loss_window, s(10)),
        ("WaitingForDragonflySync: maxSyncWait (30 seconds)", t.default_max_sync_wait, s(30)),
        ("PromotingDragonfly: 40 seconds (gate waits)", t.dragonfly_gate_wait, s(40)),
        ("PromotingDragonfly: + 12 seconds", t.dragonfly_reply_grace, s(12)),
        (
            "Promoting before a write: 2 minutes from promotion.intentTime",
            t.promotion_abort,
            s(120),
        ),
        (
            "Promoting after a possible write, cannot be confirmed: 2 minutes",
            t.promotion_unconfirmed,
            s(120),
        ),
        ("RollingBack: 30 seconds from rollback.intentTime", t.rollback_deadline, s(30)),
        (
            "Status writes stall: 2 minutes from the durable stall-since time",
            t.status_stall,
            s(120),
        ),
        ("10 seconds for a run that already released its claim", t.status_stall_released, s(10)),
        ("retrying the terminal status record every 10 seconds", t.terminal_retry, s(10)),
        (
            "No topology manager: after 30 seconds ... PlannedFailoverStalledManagerAbsent",
            t.manager_absent_warning,
            s(30),
        ),
        ("No topology manager while holding the claim: 5 minutes", t.manager_absent_end, s(300)),
        ("PlannedFailoverHoldPersisted every 10 minutes", t.hold_reminder, s(600)),
        ("KillAppConnections runs on the source every second", t.drain_cadence, s(1)),
        ("One reconcile pass ... is bounded at 15 seconds", t.pass_bound, s(15)),
        ("30 seconds for the promotion statements", t.promotion_pass_bound, s(30)),
        ("each statement at 5 seconds", t.promotion_statement, s(5)),
        ("45 seconds for the confirmed tail", t.confirmed_tail_bound, s(45)),
        ("up to 5 seconds for each durable write", t.write_reserve, s(5)),
        ("30 seconds of settlement for each ambiguous write", t.settlement, s(30)),
        ("The default cooldown is 5 minutes", t.default_cooldown, s(300)),
        ("recorded within the last 2 minutes", t.authority_recent, s(120)),
    ];
    for (what, ours, document) in table {
        assert_eq!(ours, document, "{what}");
    }
    // "PromotingDragonfly ... (82 seconds by default)".
    assert_eq!(t.dragonfly_gate_wait + t.default_max_sync_wait + t.dragonfly_reply_grace, s(82));
    assert_eq!(t.setting(s(300)), s(300));
}

/// WaitingForLag reads the target again at `lag_poll` (ours, 100 ms), not at the 1 s idle
/// poll: the source is fenced meanwhile, so a target a few transactions behind cost a 1.04 s
/// write outage (bench `operator/planned/write_outage_median_1000wps`).
#[test]
fn the_lag_wait_reads_the_target_again_within_the_lag_poll() {
    let mut world = happy();
    world.lagging.insert("pdx".to_owned());
    world.run_until_phase(Phase::WaitingForLag);
    let decision = world.pass();
    assert_eq!(world.phase(), Some(Phase::WaitingForLag), "still waiting: {decision:?}");
    let t = Timings::document();
    assert_eq!(t.lag_poll, SignedDuration::from_millis(100));
    assert_eq!(decision.requeue_after, t.lag_poll);
    assert!(Timings::scaled(60).lag_poll <= Timings::scaled(60).poll);
}

#[test]
fn scaled_timings_divide_every_rule() {
    let t = Timings::scaled(60);
    assert_eq!(t.manager_absent_end, SignedDuration::from_secs(5));
    assert_eq!(t.admission_deadline, SignedDuration::from_secs(2));
    assert_eq!(t.setting(SignedDuration::from_mins(5)), SignedDuration::from_secs(5));
    assert_eq!(Timings::scaled(0), Timings::scaled(1));
    assert_eq!(Timings::scaled(1), Timings::document());
}

#[test]
fn a_hold_is_acknowledged_only_by_its_run() {
    let (mut world, _) = end(partial_promotion(|w| {
        let fra = w.site("fra");
        fra.read_only = false;
        fra.super_read_only = false;
    }));
    let run = world.record.hold.clone().unwrap().run_id.unwrap();
    // A new request during the hold is refused with an Event only.
    world.request("pdx");
    let decision = world.pass();
    assert_eq!(decision.written_block(), None);
    assert!(decision.event_reasons().contains(&"PlannedFailoverRejected"));
    // An acknowledgement naming another run is ignored and removed.
    world
        .annotations
        .insert(ACKNOWLEDGE_PLANNED_FAILOVER_HOLD.to_owned(), "someone-else".to_owned());
    let decision = world.pass();
    assert_eq!(decision.event_reasons(), ["PlannedFailoverHoldAcknowledgmentIgnored"]);
    assert!(!world.annotations.contains_key(ACKNOWLEDGE_PLANNED_FAILOVER_HOLD));
    assert!(world.record.hold.is_some());
    // Ten minutes later the reminder.
    world.tick(SignedDuration::from_mins(10));
    assert!(world.pass().event_reasons().contains(&"PlannedFailoverHoldPersisted"));
    // The right run clears it.
    world.annotations.insert(ACKNOWLEDGE_PLANNED_FAILOVER_HOLD.to_owned(), run);
    let decision = world.pass();
    assert_eq!(decision.event_reasons(), ["PlannedFailoverHoldAcknowledged"]);
    assert!(world.record.hold.is_none() && !world.record.hold_condition);
    assert_eq!(world.claim, ClaimSlot::Free);
    // An acknowledgement that finds no hold is ignored.
    world.annotations.insert(ACKNOWLEDGE_PLANNED_FAILOVER_HOLD.to_owned(), "late".to_owned());
    assert_eq!(world.pass().event_reasons(), ["PlannedFailoverHoldAcknowledgmentIgnored"]);
}

#[test]
fn an_orphan_hold_is_released() {
    let mut world = World::three_sites();
    world.claim = ClaimSlot::Hold(Some("gone".to_owned()));
    let decision = world.pass();
    assert_eq!(world.claim, ClaimSlot::Free);
    let logs: Vec<&str> = decision.logs.iter().map(|l| l.message).collect();
    assert_eq!(
        logs,
        [
            "planned failover: released an automation hold no durable record backs",
            "planned failover: claim released"
        ]
    );
    assert_eq!(decision.logs[1].fields[0], ("why", "orphanHold".to_owned()));
}

#[test]
fn a_restart_before_the_publishing_write_publishes_without_the_claim() {
    let mut world = happy();
    world.run_until(600, |w| {
        w.annotations.contains_key(bloodraven_crd::annotations::PLANNED_FAILOVER_CONFIRMED)
    });
    assert_eq!(world.phase(), Some(Phase::Promoting));
    world.restart_operator();
    let decision = world.pass();
    let logs: Vec<&str> = decision.logs.iter().map(|l| l.message).collect();
    assert!(logs.contains(&"planned failover: confirming recorded side effect"), "{logs:?}");
    assert!(
        logs.contains(
            &"planned failover: promotion already recorded; publishing without the claim"
        ),
        "{logs:?}"
    );
    assert_eq!(world.phase(), Some(Phase::Publishing));
    let (_, ended) = end(world);
    assert_eq!(ended, (Outcome::Succeeded, None));
}

#[test]
fn a_terminal_marker_ends_the_run_and_is_deleted_once_the_record_lands() {
    let mut world = partial_promotion(|w| w.status_writes_fail = true);
    world.run_until(400, |w| w.annotations.contains_key(PLANNED_FAILOVER_TERMINAL));
    world.status_writes_fail = false;
    world.run_until(30, |w| {
        w.phase() == Some(Phase::Failed) && !w.annotations.contains_key(PLANNED_FAILOVER_TERMINAL)
    });
    let result = world.block().result.unwrap();
    assert_eq!(result.outcome, Some(Outcome::PromotedUnconfirmed));
    assert!(result.warnings.contains(&Warning::StatusStalled));
}

#[test]
fn a_dns_failure_is_a_warning_of_success() {
    let mut world = happy();
    world.dns_fails = true;
    let (world, ended) = end(world);
    assert_eq!(ended, (Outcome::Succeeded, None));
    assert!(world.block().result.unwrap().warnings.contains(&Warning::DnsUpdateFailed));
    assert!(world.events().contains(&"PlannedFailoverDNSUpdateFailed"));
}

#[test]
fn the_request_annotation_is_removed_only_while_it_holds_the_evaluated_value() {
    let mut world = World::three_sites();
    world.request("pdx:bad=1");
    let observation = world.observe();
    // A newer request lands between the read and the removal.
    world.request("pdx");
    let decision = bloodraven_operator::planned::step(
        &Default::default(),
        &observation,
        &world.timings,
        world.now,
    );
    assert!(decision.annotations.iter().any(|c| matches!(c, bloodraven_operator::planned::AnnotationChange::Remove { value, .. } if value == "pdx:bad=1")));
}

#[test]
fn requests_during_a_live_run_are_removed() {
    let mut world = happy();
    world.lagging.insert("pdx".to_owned());
    world.tick(SignedDuration::from_secs(1));
    world.run_until_phase(Phase::WaitingForLag);
    // A leftover copy of the run's own request: removed silently.
    world.request("pdx");
    let decision = world.pass();
    assert!(decision.event_reasons().is_empty(), "{:?}", decision.event_reasons());
    assert!(!world.annotations.contains_key(PLANNED_FAILOVER));
    // Another request: removed with a Rejected Event; the run goes on.
    world.request("iad");
    let decision = world.pass();
    assert_eq!(decision.event_reasons(), ["PlannedFailoverRejected"]);
    assert!(!world.annotations.contains_key(PLANNED_FAILOVER));
    assert_eq!(world.phase(), Some(Phase::WaitingForLag));
}

/// "The first committed status write for the run removes it" (planned-failover-stall-since):
/// status writes refused while the target catches up (the promotion record cannot be written,
/// so nothing is promoted), then the API answers: the promotion record commits and takes the
/// stall-since with it, so a later failure starts a fresh 2-minute window.
#[test]
fn a_committed_status_write_removes_the_stall_since_annotation() {
    let mut world = happy();
    world.lagging.insert("pdx".to_owned());
    world.run_until_phase(Phase::WaitingForLag);
    world.status_writes_fail = true;
    world.lagging.clear();
    for _ in 0..5 {
        world.pass();
    }
    assert_eq!(world.phase(), Some(Phase::WaitingForLag), "no record committed");
    assert!(world.sites["pdx"].super_read_only, "no promotion without its record");
    assert!(world.annotations.contains_key(PLANNED_FAILOVER_STALL_SINCE), "the stall is recorded");
    world.status_writes_fail = false;
    world.pass();
    assert_eq!(world.phase(), Some(Phase::Promoting), "the promotion record committed");
    assert!(
        !world.annotations.contains_key(PLANNED_FAILOVER_STALL_SINCE),
        "the committed write removed the stall-since: {:?}",
        world.annotations
    );
    assert_eq!(ended(world), (Outcome::Succeeded, None));
}

#[test]
fn a_lost_source_that_answers_again_read_only_is_left_fenced_without_an_unfence() {
    // The lab kubelet restarts a SIGKILLed mysqld fenced within a second: the rollback finds
    // the same server read-only again. "A source lost for 10 seconds (SourceLost) is left
    // fenced with no unfence retries" (Rollback, step 4) holds for it too.
    let mut world = at(Phase::WaitingForLag, |w| {
        w.site("pdx").channel = Some(("iad".to_owned(), false));
        w.site("iad").up = false;
    });
    world.run_until_phase(Phase::RollingBack);
    world.site("iad").up = true;
    let (mut world, ended) = end(world);
    assert_eq!(ended, (Outcome::SourceLeftFenced, Some(Reason::SourceLost)));
    let iad = world.site("iad");
    assert!(iad.super_read_only && iad.read_only, "the restarted source stays fenced");
}

#[test]
fn the_pre_write_gate_runs_on_readings_taken_after_the_intent() {
    // A DisasterRecovery peer lost in the poll that finds the target caught up: the catch-up
    // pass records the intent and sends nothing; the gate then finds fra unreadable and the
    // run rolls back before any write to pdx.
    let mut world = happy();
    world.lagging.insert("pdx".to_owned());
    world.run_until_phase(Phase::WaitingForLag);
    world.lagging.remove("pdx");
    world.site("fra").up = false;
    let (mut world, ended) = end(world);
    assert_eq!(ended, (Outcome::RolledBack, Some(Reason::PeerUnreadable)));
    assert!(world.site("pdx").super_read_only, "nothing was written to pdx");
    let iad = world.site("iad");
    assert!(!iad.super_read_only && !iad.read_only, "iad unfenced");
}
