use std::collections::BTreeMap;

use bloodraven_crd::group::{SiteRole, SiteState};
use bloodraven_facts::{
    EmergencyChoice, Ineligible, ReplicaObservation, SelectedBy, SiteFacts,
    choose_emergency_target, freshness,
};
use bloodraven_gtid::GtidSet;
use proptest::prelude::*;

use crate::{A, B, candidate, site};

use SiteState::{ReadOnly, Unreachable, Writable};

fn choose(facts: &[SiteFacts], priorities: &[&str]) -> EmergencyChoice {
    let priorities: Vec<String> = priorities.iter().map(|name| name.to_string()).collect();
    choose_emergency_target(facts, "iad", &priorities, &BTreeMap::new())
}

fn promote(site: &str, by: SelectedBy) -> EmergencyChoice {
    EmergencyChoice::Promote { site: site.into(), by }
}

#[test]
fn the_freshest_candidate_wins_over_priority_and_order() {
    let facts = [
        candidate("iad", Unreachable, &format!("{A}:1-100")),
        candidate("pdx", ReadOnly, &format!("{A}:1-90")),
        candidate("sfo", ReadOnly, &format!("{A}:1-95")),
    ];
    assert_eq!(choose(&facts, &["iad", "pdx"]), promote("sfo", SelectedBy::Freshness));
}

/// `candidate` with a replication channel whose receiver wrote `retrieved` to the relay log.
fn received(name: &str, executed: &str, retrieved: &str) -> SiteFacts {
    let mut site = candidate(name, ReadOnly, executed);
    site.replica = Some(ReplicaObservation {
        io_running: true,
        sql_running: true,
        retrieved_gtid_set: retrieved.parse().unwrap(),
        ..ReplicaObservation::default()
    });
    site
}

#[test]
fn a_relay_backlog_counts_toward_freshness() {
    // pdx's applier lags: it executed 1-80 but received 1-100; sfo executed and received 1-95.
    // Promoting pdx (after it applies its relay log) keeps 5 more transactions than sfo.
    let facts = [
        candidate("iad", Unreachable, &format!("{A}:1-100")),
        received("pdx", &format!("{A}:1-80"), &format!("{A}:1-100")),
        received("sfo", &format!("{A}:1-95"), &format!("{A}:1-95")),
    ];
    assert_eq!(choose(&facts, &["sfo"]), promote("pdx", SelectedBy::Freshness));
    assert_eq!(freshness(&facts[1]).to_string(), format!("{A}:1-100"));
    // Received equals executed elsewhere: the same set, so priorities decide.
    let facts = [
        candidate("iad", Unreachable, &format!("{A}:1-100")),
        received("pdx", &format!("{A}:1-80"), &format!("{A}:1-95")),
        received("sfo", &format!("{A}:1-95"), &format!("{A}:1-95")),
    ];
    assert_eq!(choose(&facts, &["sfo"]), promote("sfo", SelectedBy::Priority));
}

#[test]
fn equal_sets_fall_to_priorities_then_to_declared_order() {
    let gtid = format!("{A}:1-100");
    let facts = [
        candidate("iad", Unreachable, &gtid),
        candidate("pdx", ReadOnly, &gtid),
        candidate("sfo", ReadOnly, &gtid),
    ];
    assert_eq!(choose(&facts, &["iad", "sfo", "pdx"]), promote("sfo", SelectedBy::Priority));
    assert_eq!(choose(&facts, &["iad"]), promote("pdx", SelectedBy::DeclaredOrder));
    assert_eq!(choose(&facts, &[]), promote("pdx", SelectedBy::DeclaredOrder));
}

#[test]
fn priority_applies_only_among_the_freshest() {
    // pdx and sfo are equally fresh; lax lags. lax is listed first but cannot win.
    let facts = [
        candidate("iad", Unreachable, &format!("{A}:1-100")),
        candidate("lax", ReadOnly, &format!("{A}:1-50")),
        candidate("pdx", ReadOnly, &format!("{A}:1-90")),
        candidate("sfo", ReadOnly, &format!("{A}:1-90")),
    ];
    assert_eq!(choose(&facts, &["lax", "sfo"]), promote("sfo", SelectedBy::Priority));
}

#[test]
fn incomparable_candidates_are_not_guessed_between() {
    let facts = [
        candidate("iad", Unreachable, &format!("{A}:1-100")),
        candidate("pdx", ReadOnly, &format!("{A}:1-90,{B}:1")),
        candidate("sfo", ReadOnly, &format!("{A}:1-95")),
    ];
    assert_eq!(
        choose(&facts, &["pdx"]),
        EmergencyChoice::Incomparable { sites: vec![("pdx".into(), 1), ("sfo".into(), 5)] }
    );
}

#[test]
fn no_reachable_candidate_is_no_primary_and_disaster_recovery_is_never_chosen() {
    let gtid = format!("{A}:1-100");
    let facts = [
        candidate("iad", Unreachable, &gtid),
        candidate("pdx", Unreachable, &gtid),
        site("fra", SiteRole::DisasterRecovery, ReadOnly, &gtid),
        site("reader", SiteRole::ReadOnly, ReadOnly, &gtid),
    ];
    assert_eq!(
        choose(&facts, &["fra"]),
        EmergencyChoice::NoCandidate {
            ineligible: vec![("pdx".into(), Ineligible::State(Unreachable))]
        }
    );
}

#[test]
fn guards_and_writable_or_unreadable_candidates_are_ineligible() {
    let gtid = format!("{A}:1-100");
    let mut unreadable = candidate("lax", ReadOnly, &gtid);
    unreadable.gtid_executed = None;
    let facts = [
        candidate("iad", Unreachable, &gtid),
        candidate("pdx", ReadOnly, &gtid),
        candidate("sfo", Writable, &gtid),
        unreadable,
    ];
    let excluded = BTreeMap::from([("pdx".to_string(), "RestorePeerHold".to_string())]);
    assert_eq!(
        choose_emergency_target(&facts, "iad", &[], &excluded),
        EmergencyChoice::NoCandidate {
            ineligible: vec![
                ("pdx".into(), Ineligible::Excluded("RestorePeerHold".into())),
                ("sfo".into(), Ineligible::State(Writable)),
                ("lax".into(), Ineligible::NoGtidSet),
            ]
        }
    );
}

fn arbitrary_candidates() -> impl Strategy<Value = Vec<(u64, u64, bool, u64)>> {
    // Per site: transactions of A (1..=a), of B (1..=b), whether it is reachable, and how far
    // its receiver got in A (1..=r; beyond `a` it is a relay backlog not yet applied).
    prop::collection::vec((0u64..6, 0u64..3, any::<bool>(), 0u64..8), 1..6)
}

proptest! {
    /// Whatever the sets, a promoted site holds (executed or received) every transaction every
    /// eligible candidate executed or received: an emergency failover never drops a
    /// transaction it could have kept. And a choice is made exactly when the eligible
    /// candidates have a maximum.
    #[test]
    fn the_promoted_site_contains_every_eligible_set(sites in arbitrary_candidates()) {
        let set_of = |a: u64, b: u64| {
            let mut text = String::new();
            if a > 0 { text.push_str(&format!("{A}:1-{a}")); }
            if b > 0 { if !text.is_empty() { text.push(','); } text.push_str(&format!("{B}:1-{b}")); }
            text.parse::<GtidSet>().unwrap()
        };
        let mut facts = vec![candidate("iad", Unreachable, &format!("{A}:1-9"))];
        for (index, (a, b, up, r)) in sites.iter().enumerate() {
            let mut fact = candidate(&format!("s{index}"), if *up { ReadOnly } else { Unreachable }, "");
            fact.gtid_executed = Some(set_of(*a, *b));
            fact.replica = Some(ReplicaObservation {
                retrieved_gtid_set: set_of(*r, 0),
                ..ReplicaObservation::default()
            });
            facts.push(fact);
        }
        let holds = |site: &SiteFacts| site.gtid_executed.as_ref().unwrap().union(&site.replica.as_ref().unwrap().retrieved_gtid_set);
        let eligible: Vec<&SiteFacts> = facts.iter().filter(|site| site.name != "iad" && site.state == ReadOnly).collect();
        let has_maximum = eligible.iter().any(|site| eligible.iter().all(|other| {
            holds(site).is_superset(&holds(other))
        }));
        match choose(&facts, &[]) {
            EmergencyChoice::Promote { site, .. } => {
                let chosen = facts.iter().find(|fact| fact.name == site).unwrap();
                prop_assert_eq!(&chosen.state, &ReadOnly);
                for other in &eligible {
                    prop_assert!(holds(chosen).is_superset(&holds(other)));
                }
            }
            EmergencyChoice::NoCandidate { .. } => prop_assert!(eligible.is_empty()),
            EmergencyChoice::Incomparable { .. } => prop_assert!(!eligible.is_empty() && !has_maximum),
        }
    }
}
