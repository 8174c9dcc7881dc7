//! Property test of the planned-failover decision core over random fault schedules: never two
//! writable sites after a run ends, never a side effect without its record first, and every
//! run ends within the document's worst-case bound (plus the time faults keep being injected).

use bloodraven_crd::annotations::PLANNED_FAILOVER_TERMINAL;
use bloodraven_crd::group::{PlannedFailoverOutcome, PlannedFailoverPhase};
use bloodraven_operator::planned::{ClaimSlot, ManagerState};
use jiff::SignedDuration;
use proptest::prelude::*;

use crate::planned_world::World;

#[derive(Clone, Debug)]
enum Fault {
    Down(&'static str),
    Up(&'static str),
    Lagging(&'static str, bool),
    StatusWritesFail(bool),
    ManagerAbsent(bool),
    RestartOperator,
    FenceFails(bool),
    PromoteFails(bool),
    PromotePartial(bool),
    UnfenceFails(bool),
    RefenceFails(bool),
    DnsFails(bool),
}

fn site() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("iad"), Just("pdx"), Just("fra")]
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        site().prop_map(Fault::Down),
        site().prop_map(Fault::Up),
        (site(), any::<bool>()).prop_map(|(s, on)| Fault::Lagging(s, on)),
        any::<bool>().prop_map(Fault::StatusWritesFail),
        any::<bool>().prop_map(Fault::ManagerAbsent),
        Just(Fault::RestartOperator),
        any::<bool>().prop_map(Fault::FenceFails),
        any::<bool>().prop_map(Fault::PromoteFails),
        any::<bool>().prop_map(Fault::PromotePartial),
        any::<bool>().prop_map(Fault::UnfenceFails),
        any::<bool>().prop_map(Fault::RefenceFails),
        any::<bool>().prop_map(Fault::DnsFails),
    ]
}

/// The last second at which a fault may be injected.
const FAULT_WINDOW: u64 = 20;

fn inject(world: &mut World, fault: &Fault) {
    match fault {
        Fault::Down(site) => world.site(site).up = false,
        Fault::Up(site) => world.site(site).up = true,
        Fault::Lagging(site, true) => {
            world.lagging.insert((*site).to_owned());
        }
        Fault::Lagging(site, false) => {
            world.lagging.remove(*site);
        }
        Fault::StatusWritesFail(on) => world.status_writes_fail = *on,
        Fault::ManagerAbsent(on) => {
            world.manager = if *on { ManagerState::Absent } else { ManagerState::Ready };
        }
        Fault::RestartOperator => world.restart_operator(),
        Fault::FenceFails(on) => world.fence_fails = *on,
        Fault::PromoteFails(on) => world.promote_fails = *on,
        Fault::PromotePartial(on) => world.promote_partial = *on,
        Fault::UnfenceFails(on) => world.unfence_fails = *on,
        Fault::RefenceFails(on) => world.refence_fails = *on,
        Fault::DnsFails(on) => world.dns_fails = *on,
    }
}

fn ended(world: &World) -> bool {
    world.phase().is_some_and(|phase| phase.is_terminal())
        || world.annotations.contains_key(PLANNED_FAILOVER_TERMINAL)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn runs_end_safely_and_in_time(mut faults in proptest::collection::vec((0..FAULT_WINDOW, fault()), 0..12)) {
        faults.sort_by_key(|(at, _)| *at);
        let mut world = World::three_sites();
        world.knobs.max_lag_wait = Ok(SignedDuration::from_secs(30));
        world.knobs.drain_timeout = Ok(SignedDuration::from_secs(5));
        world.request("pdx");
        let start = world.now;
        let t = world.timings;
        let bound = SignedDuration::from_secs(i64::try_from(FAULT_WINDOW).unwrap())
            + t.admission_deadline
            + t.worst_case_after_claim(SignedDuration::from_secs(5), SignedDuration::from_secs(30));
        let mut next = 0;
        // A run starts when its first record commits; with status writes refused from the
        // start there is no run to end.
        let mut run_start = None;
        while !ended(&world) {
            let elapsed = world.now.duration_since(start);
            while next < faults.len() && faults[next].0 as i64 <= elapsed.as_secs() {
                inject(&mut world, &faults[next].1);
                next += 1;
            }
            if run_start.is_none() && world.record.block.is_some() {
                run_start = Some(world.now);
            }
            let Some(run_start) = run_start else {
                if elapsed > bound {
                    prop_assert!(world.status_writes_fail, "no run started within {bound} although status writes work");
                    return Ok(());
                }
                world.pass();
                continue;
            };
            let running = world.now.duration_since(run_start);
            let owns_nothing = matches!(world.phase(), Some(PlannedFailoverPhase::Admitting | PlannedFailoverPhase::Deferred))
                && world.claim == ClaimSlot::Free;
            if running > bound && world.status_writes_fail && owns_nothing {
                // A waiting run owns nothing; with every status write refused it cannot even
                // record its admission timeout (the document bounds only runs that hold the claim).
                return Ok(());
            }
            prop_assert!(
                running <= bound,
                "the run did not end within {bound}: phase {:?}, message {:?}, faults {faults:?}",
                world.phase(), world.block().message
            );
            world.pass();
        }
        prop_assert!(world.violations.is_empty(), "side effects without their record: {:?}", world.violations);
        let writable = world.writable_sites();
        prop_assert!(writable.len() <= 1, "two writable sites after the run ended {:?}: {writable:?}; faults {faults:?}", world.ended());
        let (outcome, _) = world.ended();
        if outcome == PlannedFailoverOutcome::Succeeded {
            prop_assert_eq!(writable, vec!["pdx".to_owned()]);
        }
        if world.phase() == Some(PlannedFailoverPhase::Succeeded) {
            prop_assert_eq!(world.active.as_deref(), Some("pdx"));
        }
    }
}
