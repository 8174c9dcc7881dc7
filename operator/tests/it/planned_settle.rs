//! Ambiguous status writes in the planned-failover decision core (issue 13, the document's
//! "An ambiguous status write ... is settled before anything else happens"): a write that
//! committed although its answer was lost, and whose settlement stayed unknown, so the applier
//! ran none of the effects it announced. The next pass decides from the re-read record: it
//! must neither assume the write failed (and redo or drop its record) nor assume it succeeded
//! (and skip the effect it announced), and it never repeats an effect that already ran
//! without confirming it live. (What a re-read proves is `planned::settle`'s unit tests.)

use bloodraven_crd::group::{
    PlannedFailoverOutcome as Outcome, PlannedFailoverPhase as Phase, PromotionState,
};
use bloodraven_operator::planned::{ClaimSlot, Effect};

use crate::planned_world::World;

/// The effects the applier ran that `wanted` picks.
fn ran(world: &World, wanted: fn(&Effect) -> bool) -> Vec<&Effect> {
    world.ran.iter().filter(|e| wanted(e)).collect()
}

/// Runs `world` until its run ends; checks the invariants every ambiguous-write run keeps.
fn run_to_success(world: &mut World) {
    world.run_to_end();
    assert!(world.violations.is_empty(), "effects without their record: {:?}", world.violations);
    assert_eq!(world.ended(), (Outcome::Succeeded, None), "{:?}", world.block());
    assert!(world.applied_unanswered.is_empty(), "every armed write was reached");
    assert_eq!(world.writable_sites(), ["pdx"], "exactly one writable site: the target");
}

#[test]
fn a_fencing_record_that_committed_unanswered_retakes_the_claim_and_sends_the_fence_once() {
    let mut world = World::three_sites();
    world.request("pdx");
    world.applied_unanswered = vec![Phase::Fencing];
    // Up to the grant: its Fencing record commits, its answer is lost, nothing it announced
    // (TakeClaim, Fence) ran.
    world.run_until_phase(Phase::Fencing);
    assert_eq!(world.claim, ClaimSlot::Free, "the grant's effects did not run");
    assert!(!world.sites["iad"].super_read_only, "the fence was not sent");
    assert!(world.status_write_failing);

    // The next pass decides from the durable Fencing record: the claim is taken again before
    // anything is sent, and the fence is sent (confirmed live: iad still writable).
    let next = world.pass();
    assert_eq!(
        next.effects.first(),
        Some(&Effect::TakeClaim { run_id: world.block().run_id.clone().unwrap() }),
        "the claim comes first: {:?}",
        next.effects
    );
    assert!(next.effects.iter().any(|e| matches!(e, Effect::Fence { .. })), "{:?}", next.effects);
    assert!(matches!(world.claim, ClaimSlot::Run(_)), "the topology manager defers to the run");

    // The claim is held through every phase that needs it.
    world.run_until(600, |w| {
        assert!(
            !matches!(w.phase(), Some(Phase::Fencing | Phase::Draining | Phase::WaitingForLag))
                || matches!(w.claim, ClaimSlot::Run(_)),
            "{:?} without the claim",
            w.phase()
        );
        w.phase().is_some_and(|p| p.is_terminal())
    });
    run_to_success(&mut world);
    let fences = ran(&world, |e| matches!(e, Effect::Fence { .. }));
    assert_eq!(fences.len(), 1, "the fence is sent once, never skipped: {fences:?}");
}

#[test]
fn a_promotion_intent_that_committed_unanswered_sends_the_promotion_once() {
    let mut world = World::three_sites();
    world.request("pdx");
    world.applied_unanswered = vec![Phase::Promoting];
    world.run_until_phase(Phase::Promoting);
    let block = world.block();
    assert_eq!(
        block.promotion.as_ref().and_then(|p| p.state.clone()),
        Some(PromotionState::Intended),
        "the intent is durable"
    );
    assert!(world.sites["pdx"].super_read_only, "nothing was sent to the target yet");
    assert!(world.sites["pdx"].channel.is_some());

    // The next pass finds the intent durable and the target untouched: it promotes (never
    // skipped) and does not write the intent again.
    let next = world.pass();
    assert!(
        next.effects.iter().any(|e| matches!(e, Effect::Promote { .. })),
        "the promotion is sent from the durable intent: {:?}",
        next.effects
    );
    assert!(
        next.write.as_ref().and_then(|w| w.block.as_ref()).is_none_or(|b| b.revision
            != block.revision.map(|r| r + 1)
            || b.phase != Some(Phase::Promoting)
            || b.promotion.as_ref().and_then(|p| p.state.clone())
                != Some(PromotionState::Intended)),
        "the intent is not written twice"
    );
    run_to_success(&mut world);
    let promotions = ran(&world, |e| matches!(e, Effect::Promote { .. }));
    assert_eq!(promotions.len(), 1, "the promotion is sent once: {promotions:?}");
}

#[test]
fn a_restarted_process_after_an_unanswered_promotion_intent_confirms_before_it_promotes() {
    // The intent committed unanswered, then the process restarted (its memory lost, the slot
    // hydrated from the record): the restart classifies the live target before sending.
    let mut world = World::three_sites();
    world.request("pdx");
    world.applied_unanswered = vec![Phase::Promoting];
    world.run_until_phase(Phase::Promoting);
    world.restart_operator();
    let next = world.pass();
    assert!(
        next.logs.iter().any(|l| l.message == "planned failover: confirming recorded side effect"),
        "{:?}",
        next.logs
    );
    run_to_success(&mut world);
    let promotions = ran(&world, |e| matches!(e, Effect::Promote { .. }));
    assert_eq!(promotions.len(), 1, "{promotions:?}");
}

#[test]
fn every_record_of_a_run_committed_unanswered_once_still_succeeds() {
    // Each durable transition of the run, in turn, committed with its answer lost.
    for phase in [Phase::Fencing, Phase::Draining, Phase::WaitingForLag, Phase::Promoting] {
        let mut world = World::three_sites();
        world.request("pdx");
        world.applied_unanswered = vec![phase.clone()];
        run_to_success(&mut world);
        for effect in
            [(|e: &Effect| matches!(e, Effect::Fence { .. })) as fn(&Effect) -> bool, |e| {
                matches!(e, Effect::Promote { .. })
            }]
        {
            let sent = ran(&world, effect);
            assert_eq!(sent.len(), 1, "{phase:?} unanswered: {sent:?}");
        }
    }
}
