//! `topology::plan` on 16 sites (issue 12, goal ≤ 50 µs): a healthy star (nothing to do), an
//! emergency failover (the active site unreachable past the threshold: choose among 7
//! reachable candidates, repoint 14 followers), and a split brain (three writable candidates).
//! GTID sets carry one interval per former primary (8 server UUIDs), as a group that has
//! failed over between its candidates looks.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benchmark setup")]

use std::collections::BTreeMap;
use std::hint::black_box;

use bloodraven_crd::group::{SiteRole, SiteState};
use bloodraven_facts::{ReplicaObservation, SiteFacts};
use bloodraven_gtid::GtidSet;
use bloodraven_operator::topology::{History, PlanInput, plan};
use criterion::{Criterion, criterion_group, criterion_main};
use jiff::{SignedDuration, Timestamp};

const SITES: usize = 16;
const CANDIDATES: usize = 8;

fn now() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

fn name(index: usize) -> String {
    format!("site{index:02}")
}

/// Every former primary's UUID with `1-<n>`; the current primary's range grows with `head`.
fn gtid(head: u64) -> GtidSet {
    let text = (0..CANDIDATES)
        .map(|index| {
            let end = if index == 0 { head } else { 1_000 + index as u64 };
            format!("{:08x}-71ca-11e1-9e33-c80aa9429562:1-{end}", index + 1)
        })
        .collect::<Vec<_>>()
        .join(",");
    text.parse().unwrap()
}

/// Site 0 is the recorded active primary; 1..8 are candidates, 8..16 DR and readers.
fn world(active_state: SiteState, writable_extra: usize) -> Vec<SiteFacts> {
    (0..SITES)
        .map(|index| {
            let role = match index {
                i if i < CANDIDATES => SiteRole::PrimaryCandidate,
                i if i < 12 => SiteRole::DisasterRecovery,
                _ => SiteRole::ReadOnly,
            };
            let state = match index {
                0 => active_state.clone(),
                i if i <= writable_extra => SiteState::Writable,
                _ => SiteState::ReadOnly,
            };
            let answered = state != SiteState::Unreachable;
            SiteFacts {
                name: name(index),
                role,
                state,
                unreachable: None,
                offline_mode: false,
                // Followers lag a little, by index, so the freshest candidate is unique.
                gtid_executed: answered.then(|| gtid(100_000 - index as u64)),
                replica: (index != 0 && answered).then(|| ReplicaObservation {
                    source_host: format!("{}-internal", name(0)),
                    source_port: 3306,
                    io_running: true,
                    sql_running: true,
                    auto_position: true,
                    ..ReplicaObservation::default()
                }),
                observed_at: answered.then(now),
            }
        })
        .collect()
}

struct Fixture {
    facts: Vec<SiteFacts>,
    priorities: Vec<String>,
    history: History,
    excluded: BTreeMap<String, String>,
    addresses: BTreeMap<String, (String, u16)>,
}

impl Fixture {
    fn new(facts: Vec<SiteFacts>, unreachable_polls: u32) -> Self {
        let addresses = facts
            .iter()
            .map(|site| (site.name.clone(), (format!("{}-internal", site.name), 3306)))
            .collect();
        let mut history = History::default();
        history.unreachable_polls.insert(name(0), unreachable_polls);
        Fixture {
            facts,
            priorities: (0..CANDIDATES).map(name).collect(),
            history,
            excluded: BTreeMap::new(),
            addresses,
        }
    }

    fn input(&self) -> PlanInput<'_> {
        PlanInput {
            facts: &self.facts,
            recorded_active: Some("site00"),
            priorities: &self.priorities,
            cooldown: SignedDuration::from_mins(5),
            failure_threshold: 3,
            recovery_threshold: 2,
            history: &self.history,
            deferral: None,
            excluded: &self.excluded,
            addresses: &self.addresses,
            restore: &bloodraven_operator::restore::guards::NO_GUARDS,
            now: now(),
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("plan/16_sites");
    let cases = [
        ("healthy_star", Fixture::new(world(SiteState::Writable, 0), 0)),
        ("emergency_failover", Fixture::new(world(SiteState::Unreachable, 0), 3)),
        ("split_brain_3_writable", Fixture::new(world(SiteState::Writable, 2), 0)),
    ];
    for (label, fixture) in &cases {
        let steps = plan(&fixture.input());
        if *label == "healthy_star" {
            assert!(steps.is_empty(), "a healthy star plans nothing: {steps:?}");
        } else {
            assert!(!steps.is_empty(), "{label} plans steps");
        }
        group.bench_function(*label, |b| b.iter(|| plan(black_box(&fixture.input()))));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
