//! `topology::plan` over hand-built facts: one test per rule of the topology document, and
//! properties across random observations.

use std::collections::BTreeMap;

use bloodraven_crd::group::{SiteRole, SiteState};
use bloodraven_facts::{
    Ineligible, ReplicaObservation, RepointReason, SelectedBy, SiteFacts, WinnerBy,
};
use bloodraven_gtid::GtidSet;
use bloodraven_operator::topology::{
    Alert, Deferral, FenceWhy, History, PlanInput, PromoteWhy, Step, plan,
};
use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;

use SiteState::{ReadOnly, Unknown, Unreachable, Writable};

const A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
const B: &str = "4e11fa47-71ca-11e1-9e33-c80aa9429562";

fn set(text: &str) -> GtidSet {
    text.parse().unwrap()
}

fn now() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

fn site(
    name: &str,
    role: SiteRole,
    state: SiteState,
    gtid: &str,
    source: Option<&str>,
) -> SiteFacts {
    SiteFacts {
        name: name.into(),
        role,
        state,
        unreachable: None,
        offline_mode: false,
        gtid_executed: Some(set(gtid)),
        replica: source.map(|source| ReplicaObservation {
            source_host: format!("{source}-internal"),
            source_port: 3306,
            io_running: true,
            sql_running: true,
            auto_position: true,
            ..ReplicaObservation::default()
        }),
        observed_at: Some(now()),
    }
}

fn cand(name: &str, state: SiteState, gtid: &str, source: Option<&str>) -> SiteFacts {
    site(name, SiteRole::PrimaryCandidate, state, gtid, source)
}

/// A world to plan in: three sites iad/pdx (candidates) and fra (DR), iad recorded active.
struct World {
    facts: Vec<SiteFacts>,
    recorded: Option<String>,
    priorities: Vec<String>,
    history: History,
    deferral: Option<Deferral>,
    excluded: BTreeMap<String, String>,
    addresses: BTreeMap<String, (String, u16)>,
}

impl World {
    fn new(facts: Vec<SiteFacts>) -> Self {
        let addresses = facts
            .iter()
            .map(|site| (site.name.clone(), (format!("{}-internal", site.name), 3306)))
            .collect();
        World {
            facts,
            recorded: Some("iad".into()),
            priorities: vec!["iad".into(), "pdx".into()],
            history: History::default(),
            deferral: None,
            excluded: BTreeMap::new(),
            addresses,
        }
    }

    fn failed_for(mut self, site: &str, polls: u32) -> Self {
        self.history.unreachable_polls.insert(site.into(), polls);
        self
    }

    fn plan(&self) -> Vec<Step> {
        plan(&PlanInput {
            facts: &self.facts,
            recorded_active: self.recorded.as_deref(),
            priorities: &self.priorities,
            cooldown: SignedDuration::from_mins(5),
            failure_threshold: 3,
            recovery_threshold: 2,
            history: &self.history,
            deferral: self.deferral.as_ref(),
            excluded: &self.excluded,
            addresses: &self.addresses,
            restore: &bloodraven_operator::restore::guards::NO_GUARDS,
            now: now(),
        })
    }
}

fn healthy() -> Vec<SiteFacts> {
    vec![
        cand("iad", Writable, &format!("{A}:1-100"), None),
        cand("pdx", ReadOnly, &format!("{A}:1-100"), Some("iad")),
        site("fra", SiteRole::DisasterRecovery, ReadOnly, &format!("{A}:1-90"), Some("iad")),
    ]
}

#[test]
fn a_healthy_star_needs_nothing() {
    assert_eq!(World::new(healthy()).plan(), vec![]);
}

#[test]
fn the_failed_primary_is_replaced_by_the_freshest_candidate_after_the_threshold() {
    let mut facts = healthy();
    facts[0].state = Unreachable;
    facts[0].gtid_executed = None;
    let waiting = World::new(facts.clone()).failed_for("iad", 2).plan();
    assert_eq!(
        waiting,
        vec![Step::Alert(Alert::ActiveUnreachable { site: "iad".into(), polls: 2 })]
    );
    let acting = World::new(facts).failed_for("iad", 3).plan();
    assert_eq!(
        acting,
        vec![
            Step::Promote {
                site: "pdx".into(),
                by: PromoteWhy::Emergency { failed: "iad".into(), by: SelectedBy::OnlyCandidate }
            },
            Step::RecordActive { site: "pdx".into(), failover: true },
        ],
        "fra is DisasterRecovery and is never promoted"
    );
}

#[test]
fn a_candidate_with_a_relay_backlog_outranks_one_that_executed_more() {
    // sfo executed 1-95 and received nothing more; pdx executed only 1-80 (its applier lags)
    // but received 1-100. Promoting pdx (which applies its relay log first) keeps 1-100.
    let mut pdx = cand("pdx", ReadOnly, &format!("{A}:1-80"), Some("iad"));
    pdx.replica.as_mut().unwrap().retrieved_gtid_set = set(&format!("{A}:1-100"));
    let mut sfo = cand("sfo", ReadOnly, &format!("{A}:1-95"), Some("iad"));
    sfo.replica.as_mut().unwrap().retrieved_gtid_set = set(&format!("{A}:1-95"));
    let mut world = World::new(vec![cand("iad", Unreachable, "", None), pdx, sfo]);
    world.facts[0].gtid_executed = None;
    world.priorities = vec!["sfo".into()];
    assert_eq!(
        world.failed_for("iad", 3).plan(),
        vec![
            Step::Promote {
                site: "pdx".into(),
                by: PromoteWhy::Emergency { failed: "iad".into(), by: SelectedBy::Freshness }
            },
            Step::RecordActive { site: "pdx".into(), failover: true },
        ]
    );
}

#[test]
fn both_candidates_down_is_no_primary_and_no_action() {
    let mut facts = healthy();
    facts[0].state = Unreachable;
    facts[1].state = Unreachable;
    let steps = World::new(facts).failed_for("iad", 5).plan();
    assert!(
        matches!(steps.as_slice(), [Step::Alert(Alert::NoPrimary { failed: Some(failed), .. })] if failed == "iad"),
        "{steps:?}"
    );
}

#[test]
fn the_cooldown_stops_a_second_failover() {
    let mut facts = healthy();
    facts[0].state = Unreachable;
    let mut world = World::new(facts).failed_for("iad", 3);
    world.history.last_failover = Some(now() - SignedDuration::from_mins(2));
    assert_eq!(
        world.plan(),
        vec![Step::Alert(Alert::Cooldown {
            until: now() + SignedDuration::from_mins(3),
            would_promote: "pdx".into()
        })]
    );
    world.history.last_failover = Some(now() - SignedDuration::from_mins(5));
    assert!(
        matches!(world.plan().first(), Some(Step::Promote { .. })),
        "the cooldown's end is outside it"
    );
}

#[test]
fn a_claim_or_hold_defers_everything_but_the_role_fences() {
    let mut facts = healthy();
    facts[0].state = Unreachable;
    facts[2].state = Writable;
    let mut world = World::new(facts).failed_for("iad", 9);
    world.deferral = Some(Deferral::Hold { run_id: Some("r1".into()) });
    assert_eq!(
        world.plan(),
        vec![
            Step::Fence {
                site: "fra".into(),
                why: FenceWhy::NonCandidateWriter { role: SiteRole::DisasterRecovery }
            },
            Step::Alert(Alert::Deferred(Deferral::Hold { run_id: Some("r1".into()) })),
        ]
    );
}

#[test]
fn split_brain_keeps_the_recorded_active_site_and_fences_the_rest() {
    let mut facts = healthy();
    facts[1].state = Writable;
    let steps = World::new(facts.clone()).plan();
    assert_eq!(
        steps,
        vec![Step::Fence {
            site: "pdx".into(),
            why: FenceWhy::SplitBrainLoser { winner: "iad".into(), by: WinnerBy::RecordedActive }
        }]
    );
    // No record: the priorities decide, and the winner is recorded.
    let mut world = World::new(facts);
    world.recorded = None;
    world.priorities = vec!["pdx".into()];
    assert_eq!(
        world.plan(),
        vec![
            Step::Fence {
                site: "iad".into(),
                why: FenceWhy::SplitBrainLoser { winner: "pdx".into(), by: WinnerBy::Priority }
            },
            Step::RecordActive { site: "pdx".into(), failover: false },
        ]
    );
    world.priorities.clear();
    assert!(matches!(world.plan().as_slice(), [Step::Alert(Alert::SplitBrainUnresolved { .. })]));
}

#[test]
fn a_moved_writer_is_adopted_and_followers_converge_on_it() {
    let facts = vec![
        cand("iad", ReadOnly, &format!("{A}:1-100"), Some("iad")),
        cand("pdx", Writable, &format!("{A}:1-120"), None),
        site("fra", SiteRole::DisasterRecovery, ReadOnly, &format!("{A}:1-90"), Some("pdx")),
    ];
    assert_eq!(
        World::new(facts).plan(),
        vec![
            Step::RecordActive { site: "pdx".into(), failover: false },
            Step::Repoint {
                site: "iad".into(),
                source: "pdx".into(),
                reason: RepointReason::WrongSource { host: "iad-internal".into(), port: 3306 }
            },
        ]
    );
}

#[test]
fn a_chained_follower_is_repointed_and_a_diverged_one_blocked() {
    let facts = vec![
        cand("iad", Writable, &format!("{A}:1-100"), None),
        cand("pdx", ReadOnly, &format!("{A}:1-100,{B}:1"), Some("iad")),
        site("fra", SiteRole::DisasterRecovery, ReadOnly, &format!("{A}:1-90"), Some("pdx")),
    ];
    assert_eq!(
        World::new(facts).plan(),
        vec![
            Step::Block { site: "pdx".into(), divergent: set(&format!("{B}:1")) },
            Step::Alert(Alert::FollowerDiverged {
                site: "pdx".into(),
                divergent: set(&format!("{B}:1"))
            }),
            Step::Repoint {
                site: "fra".into(),
                source: "iad".into(),
                reason: RepointReason::WrongSource { host: "pdx-internal".into(), port: 3306 }
            },
        ]
    );
}

#[test]
fn a_guarded_follower_is_left_alone() {
    let mut facts = healthy();
    facts[2].replica = None;
    let mut world = World::new(facts);
    world.excluded.insert("fra".into(), "RestorePeerHold".into());
    assert_eq!(world.plan(), vec![]);
}

#[test]
fn a_new_group_gets_its_first_primary_by_priority() {
    let facts = vec![
        cand("iad", ReadOnly, "", None),
        cand("pdx", ReadOnly, "", None),
        site("fra", SiteRole::DisasterRecovery, ReadOnly, "", None),
    ];
    let mut world = World::new(facts);
    world.recorded = None;
    world.priorities = vec!["pdx".into()];
    assert_eq!(
        world.plan(),
        vec![
            Step::Promote {
                site: "pdx".into(),
                by: PromoteWhy::FirstPrimary { by: SelectedBy::Priority }
            },
            Step::RecordActive { site: "pdx".into(), failover: false },
        ]
    );
}

#[test]
fn a_fenced_active_site_is_reasserted_only_when_nobody_is_ahead() {
    let mut facts = healthy();
    facts[0].state = ReadOnly;
    let mut world = World::new(facts);
    world.history.reachable_polls.insert("iad".into(), 1);
    assert_eq!(world.plan(), vec![], "below the recovery threshold");
    world.history.reachable_polls.insert("iad".into(), 2);
    assert_eq!(world.plan(), vec![Step::Promote { site: "iad".into(), by: PromoteWhy::Reassert }]);
    world.facts[1].gtid_executed = Some(set(&format!("{A}:1-101")));
    assert_eq!(
        world.plan(),
        vec![Step::Alert(Alert::ReassertBlocked { site: "iad".into(), ahead: vec!["pdx".into()] })]
    );
}

#[test]
fn an_unknown_active_site_is_waited_for() {
    let mut facts = healthy();
    facts[0].state = Unknown;
    assert_eq!(
        World::new(facts).plan(),
        vec![Step::Alert(Alert::ActiveUnknown { site: "iad".into() })]
    );
}

#[test]
fn a_new_group_waits_for_every_candidate_before_its_first_primary() {
    let facts = vec![
        cand("iad", Unreachable, "", None),
        cand("pdx", ReadOnly, "", None),
        site("fra", SiteRole::DisasterRecovery, ReadOnly, "", None),
    ];
    let mut world = World::new(facts);
    world.recorded = None;
    world.history.reachable_polls.insert("pdx".into(), 2);
    assert_eq!(
        world.plan(),
        vec![Step::Alert(Alert::AwaitingCandidates {
            silent: vec![("iad".into(), Ineligible::State(Unreachable))],
            failure_threshold: 3,
        })],
        "iad has not answered yet and pdx answered for fewer polls than failureThreshold"
    );
    // iad answers: the priorities choose it.
    world.facts[0].state = ReadOnly;
    assert_eq!(
        world.plan(),
        vec![
            Step::Promote {
                site: "iad".into(),
                by: PromoteWhy::FirstPrimary { by: SelectedBy::Priority }
            },
            Step::RecordActive { site: "iad".into(), failover: false },
        ]
    );
    // iad stays silent for the detection bound after pdx answered: pdx is chosen alone.
    world.facts[0].state = Unreachable;
    world.history.reachable_polls.insert("pdx".into(), 3);
    assert_eq!(
        world.plan(),
        vec![
            Step::Promote {
                site: "pdx".into(),
                by: PromoteWhy::FirstPrimary { by: SelectedBy::OnlyCandidate }
            },
            Step::RecordActive { site: "pdx".into(), failover: false },
        ]
    );
}

#[test]
fn a_new_group_promotes_the_freshest_candidate_before_the_priorities() {
    let facts = vec![
        cand("iad", ReadOnly, &format!("{A}:1-5"), None),
        cand("pdx", ReadOnly, &format!("{A}:1-7"), None),
        site("fra", SiteRole::DisasterRecovery, ReadOnly, "", None),
    ];
    let mut world = World::new(facts);
    world.recorded = None;
    let steps = world.plan();
    assert!(
        matches!(steps.first(), Some(Step::Promote { site, .. }) if site == "pdx"),
        "pdx holds a superset of iad's transactions: {steps:?}"
    );
}

#[test]
fn a_pending_failover_is_finished_despite_its_own_cooldown() {
    let mut facts = healthy();
    facts[0].state = Unreachable;
    let mut world = World::new(facts).failed_for("iad", 3);
    // The intent was recorded a second ago (lastFailover names pdx), then the operator stopped
    // before promoting.
    world.history.last_failover = Some(now() - SignedDuration::from_secs(1));
    world.history.pending_failover = Some("pdx".into());
    assert!(
        matches!(world.plan().first(), Some(Step::Promote { site, .. }) if site == "pdx"),
        "{:?}",
        world.plan()
    );
    // A pending failover to another site does not lift the cooldown.
    world.history.pending_failover = Some("iad".into());
    assert!(matches!(world.plan().as_slice(), [Step::Alert(Alert::Cooldown { .. })]));
}

#[test]
fn a_planned_failover_claim_defers_failover_split_brain_and_convergence_but_not_role_fences() {
    let claim = Deferral::Claim { run_id: "run-1".into() };
    // Emergency failover: the active site is down past the threshold.
    let mut facts = healthy();
    facts[0].state = Unreachable;
    let mut world = World::new(facts).failed_for("iad", 9);
    world.deferral = Some(claim.clone());
    assert_eq!(world.plan(), vec![Step::Alert(Alert::Deferred(claim.clone()))]);
    // Split brain: nobody is fenced; a writable DR site still is.
    let mut facts = healthy();
    facts[1].state = Writable;
    facts[2].state = Writable;
    let mut world = World::new(facts);
    world.deferral = Some(claim.clone());
    assert_eq!(
        world.plan(),
        vec![
            Step::Fence {
                site: "fra".into(),
                why: FenceWhy::NonCandidateWriter { role: SiteRole::DisasterRecovery }
            },
            Step::Alert(Alert::Deferred(claim.clone())),
        ]
    );
    // Convergence: a follower on the wrong source is left alone.
    let mut facts = healthy();
    facts[2].replica.as_mut().unwrap().source_host = "pdx-internal".into();
    let mut world = World::new(facts);
    world.deferral = Some(claim.clone());
    assert_eq!(world.plan(), vec![Step::Alert(Alert::Deferred(claim))]);
}

/// Per site: role, state, transactions of A and B.
type ArbitrarySite = (u8, u8, u64, u64);

fn arbitrary_world() -> impl Strategy<Value = (Vec<ArbitrarySite>, Option<usize>, u32, bool)> {
    // Per site: role (0..3), state (0..4), transactions of A and B; the recorded active index;
    // unreachable polls of the active site; a hold.
    (
        prop::collection::vec((0u8..3, 0u8..4, 0u64..5, 0u64..3), 2..6),
        any::<Option<usize>>(),
        0u32..5,
        any::<bool>(),
    )
}

proptest! {
    /// Whatever the observation: at most one promotion; a promotion only of a read-only
    /// PrimaryCandidate and only when no candidate is writable; the winner is never fenced;
    /// under a hold only non-candidate writers are fenced and nothing is promoted or repointed.
    #[test]
    fn plans_are_safe((sites, recorded, polls, held) in arbitrary_world()) {
        let roles = [SiteRole::PrimaryCandidate, SiteRole::DisasterRecovery, SiteRole::ReadOnly];
        let states = [Writable, ReadOnly, Unreachable, Unknown];
        let facts: Vec<SiteFacts> = sites.iter().enumerate().map(|(index, (role, state, a, b))| {
            let mut text = String::new();
            if *a > 0 { text.push_str(&format!("{A}:1-{a}")); }
            if *b > 0 { if !text.is_empty() { text.push(','); } text.push_str(&format!("{B}:1-{b}")); }
            site(&format!("s{index}"), roles[*role as usize].clone(), states[*state as usize].clone(), &text, None)
        }).collect();
        let mut world = World::new(facts.clone());
        world.recorded = recorded.map(|index| format!("s{}", index % facts.len()));
        world.priorities = vec!["s1".into(), "s0".into()];
        if let Some(active) = &world.recorded { world.history.unreachable_polls.insert(active.clone(), polls); }
        world.history.reachable_polls = facts.iter().map(|site| (site.name.clone(), 2)).collect();
        if held { world.deferral = Some(Deferral::Hold { run_id: None }); }
        let steps = world.plan();

        let promoted: Vec<&String> = steps.iter().filter_map(|step| match step {
            Step::Promote { site, .. } => Some(site), _ => None }).collect();
        prop_assert!(promoted.len() <= 1, "{steps:?}");
        for site in &promoted {
            let fact = facts.iter().find(|fact| &&fact.name == site).unwrap();
            prop_assert_eq!(&fact.role, &SiteRole::PrimaryCandidate);
            prop_assert_eq!(&fact.state, &ReadOnly);
            prop_assert!(!facts.iter().any(|fact| fact.is_candidate() && fact.is_writable()));
        }
        let fenced: Vec<&String> = steps.iter().filter_map(|step| match step {
            Step::Fence { site, .. } => Some(site), _ => None }).collect();
        for step in &steps {
            if let Step::RecordActive { site, .. } = step {
                prop_assert!(!fenced.contains(&site), "{steps:?}");
            }
        }
        if held {
            prop_assert!(steps.iter().all(|step| matches!(step,
                Step::Fence { why: FenceWhy::NonCandidateWriter { .. }, .. } | Step::Alert(Alert::Deferred(_)))), "{steps:?}");
        }
    }
}
