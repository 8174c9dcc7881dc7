//! The bootstrap restore's pure core (`spec.initFromBackup`): target resolution, the rollout
//! gate, the Job recorded before it is created and observed to completion, failure and the
//! retry after the Job is deleted; the manager's seeding while gated, the clones after
//! success, and the Ready condition.

use std::collections::BTreeMap;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::{RestorePhase, RestoreStatus, SiteRole, SiteSpec, SiteState};
use bloodraven_facts::{ReplicaObservation, SiteFacts};
use bloodraven_operator::restore::bootstrap::plan::{
    Decision, JobState, Rollout, View, decide, default_seed, gated, job_name, record, rolled_out,
};
use bloodraven_operator::restore::bootstrap::{SeedInput, apply_ready, clone_targets, seed_steps};
use bloodraven_operator::topology::{PromoteWhy, Step};
use jiff::Timestamp;
use serde_json::json;

const A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

fn now() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

fn site(name: &str, state: SiteState, gtid: &str) -> SiteFacts {
    SiteFacts {
        name: name.into(),
        role: SiteRole::PrimaryCandidate,
        state,
        unreachable: None,
        offline_mode: false,
        gtid_executed: Some(gtid.parse().unwrap()),
        replica: None,
        observed_at: Some(now()),
    }
}

fn restore(phase: Option<RestorePhase>) -> RestoreStatus {
    RestoreStatus { phase, ..RestoreStatus::default() }
}

fn ready() -> BTreeMap<String, Rollout> {
    ["iad", "pdx", "fra"]
        .iter()
        .map(|s| {
            let rollout = Rollout {
                generation: Some(1),
                observed_generation: Some(1),
                updated_replicas: Some(1),
                ready_replicas: Some(1),
            };
            ((*s).to_owned(), rollout)
        })
        .collect()
}

fn view<'a>(
    restore: &'a RestoreStatus,
    active: Option<&'a str>,
    facts: &'a [SiteFacts],
    rollouts: &'a BTreeMap<String, Rollout>,
    job: &'a JobState,
) -> View<'a> {
    View {
        group: "orders",
        namespace: "orders",
        restore,
        active_site: active,
        facts,
        seed: Some("iad"),
        rollouts,
        job,
        pitr: None,
        verdict: None,
    }
}

/// (active site, facts, the target or the refused site of a wait).
type Case<'a> = (Option<&'a str>, &'a [SiteFacts], Result<&'a str, Option<&'a str>>);

#[test]
fn the_target_is_the_writable_active_site_and_waits_otherwise() {
    let unseen = RestoreStatus::default();
    let rollouts = ready();
    let absent = JobState::Absent;
    let writable = [site("iad", SiteState::Writable, ""), site("pdx", SiteState::ReadOnly, "")];
    let read_only = [site("iad", SiteState::ReadOnly, ""), site("pdx", SiteState::ReadOnly, "")];
    let down = [site("iad", SiteState::Unreachable, ""), site("pdx", SiteState::ReadOnly, "")];
    let unknown = [site("iad", SiteState::Unknown, ""), site("pdx", SiteState::ReadOnly, "")];
    let mut unobserved = writable.clone();
    unobserved[0].observed_at = None;
    // (active, facts, expected): rules 1–4 of dynamic target-site resolution.
    let cases: Vec<Case<'_>> = vec![
        (Some("iad"), &writable, Ok("iad")),
        (Some("iad"), &read_only, Err(None)),
        (Some("iad"), &unobserved, Err(None)),
        (Some("iad"), &down, Err(Some("iad"))),
        (Some("iad"), &unknown, Err(Some("iad"))),
        (None, &writable, Err(None)),
    ];
    for (active, facts, expected) in cases {
        let decision = decide(&view(&unseen, active, facts, &rollouts, &absent));
        match (expected, decision) {
            (Ok(target), Decision::CreateJob { site }) => assert_eq!(site, target),
            (Err(refused), Decision::Wait { unavailable, message }) => {
                assert_eq!(unavailable.as_deref(), refused, "{message}");
            }
            (expected, decision) => panic!("{active:?}: expected {expected:?}, got {decision:?}"),
        }
    }
}

#[test]
fn a_fresh_deploy_waits_for_the_seed_naming_what_keeps_it() {
    let unseen = RestoreStatus::default();
    let rollouts = ready();
    let facts = [site("iad", SiteState::ReadOnly, ""), site("pdx", SiteState::Unreachable, "")];
    let decision = decide(&view(&unseen, None, &facts, &rollouts, &JobState::Absent));
    let Decision::Wait { message, unavailable: None } = decision else { panic!("{decision:?}") };
    assert!(message.contains("waiting for the seed iad"), "{message}");
    assert!(message.contains("pdx is unreachable"), "{message}");
    // The same wait is not recorded twice.
    let pending = RestoreStatus {
        phase: Some(RestorePhase::Pending),
        message: Some(message),
        ..RestoreStatus::default()
    };
    assert_eq!(decide(&view(&pending, None, &facts, &rollouts, &JobState::Absent)), Decision::Idle);
}

#[test]
fn the_rollout_gate() {
    let r = |generation, observed, updated, ready| Rollout {
        generation: Some(generation),
        observed_generation: Some(observed),
        updated_replicas: Some(updated),
        ready_replicas: Some(ready),
    };
    // Fresh: one ready replica, observedGeneration may lag.
    assert!(rolled_out(&r(1, 0, 0, 1)));
    assert!(!rolled_out(&r(1, 1, 1, 0)));
    // Later generations: observed, updated and ready.
    assert!(rolled_out(&r(3, 3, 1, 1)));
    assert!(!rolled_out(&r(3, 2, 1, 1)), "mid-rollout");
    assert!(!rolled_out(&r(3, 3, 0, 1)));
    assert!(!rolled_out(&r(3, 3, 1, 0)));
    // A target whose Deployment is not rolled out waits.
    let unseen = RestoreStatus::default();
    let facts = [site("iad", SiteState::Writable, "")];
    let mut rollouts = ready();
    rollouts.insert("iad".into(), r(2, 1, 1, 1));
    let decision = decide(&view(&unseen, Some("iad"), &facts, &rollouts, &JobState::Absent));
    assert!(matches!(&decision, Decision::Wait { message, .. } if message.contains("rolled out")));
    rollouts.remove("iad");
    let decision = decide(&view(&unseen, Some("iad"), &facts, &rollouts, &JobState::Absent));
    assert!(matches!(decision, Decision::Wait { .. }), "no Deployment: wait");
}

#[test]
fn the_job_is_recorded_before_it_is_created_then_observed_to_completion() {
    let unseen = RestoreStatus::default();
    let rollouts = ready();
    let facts = [site("iad", SiteState::Writable, ""), site("pdx", SiteState::ReadOnly, "")];
    let absent = JobState::Absent;
    let v = view(&unseen, Some("iad"), &facts, &rollouts, &absent);
    let decision = decide(&v);
    assert_eq!(decision, Decision::CreateJob { site: "iad".into() });
    let patch = record(&v, &decision, "2026-11-30T12:00:00Z").unwrap();
    assert_eq!(patch["phase"], "Running");
    assert_eq!(patch["targetSite"], "iad");
    assert_eq!(patch["jobName"], job_name("orders"));
    assert_eq!(patch["startTime"], "2026-11-30T12:00:00Z");

    // Running and recorded: nothing to do, whatever the target's state (even unreachable).
    let running = RestoreStatus {
        phase: Some(RestorePhase::Running),
        job_name: Some(job_name("orders")),
        target_site: Some("iad".into()),
        ..RestoreStatus::default()
    };
    let down = [site("iad", SiteState::Unreachable, ""), site("pdx", SiteState::ReadOnly, "")];
    assert_eq!(
        decide(&view(&running, Some("iad"), &down, &rollouts, &JobState::Running)),
        Decision::Idle
    );
    // A Job the record does not show (a restart before the record): recorded Running.
    assert_eq!(
        decide(&view(&unseen, Some("iad"), &down, &rollouts, &JobState::Running)),
        Decision::Running { site: Some("iad".into()) }
    );
    // Completion.
    let v = view(&running, Some("iad"), &down, &rollouts, &JobState::Succeeded);
    assert_eq!(decide(&v), Decision::Succeeded);
    let patch = record(&v, &Decision::Succeeded, "2026-11-30T12:05:00Z").unwrap();
    assert_eq!(patch["phase"], "Succeeded");
    assert_eq!(patch["completionTime"], "2026-11-30T12:05:00Z");
    // Succeeded is terminal: nothing more, even with the Job gone.
    let done = restore(Some(RestorePhase::Succeeded));
    assert_eq!(decide(&view(&done, Some("iad"), &facts, &rollouts, &absent)), Decision::Idle);
}

#[test]
fn a_failed_job_fails_the_restore_once_and_deleting_it_rebuilds() {
    let rollouts = ready();
    let facts = [site("iad", SiteState::Writable, A), site("pdx", SiteState::ReadOnly, "")];
    let running = RestoreStatus {
        phase: Some(RestorePhase::Running),
        job_name: Some(job_name("orders")),
        target_site: Some("iad".into()),
        ..RestoreStatus::default()
    };
    let failed_job = JobState::Failed { detail: "BackoffLimitExceeded".into() };
    let decision = decide(&view(&running, Some("iad"), &facts, &rollouts, &failed_job));
    let Decision::Failed { message } = &decision else { panic!("{decision:?}") };
    assert!(message.contains("BackoffLimitExceeded"), "{message}");
    assert!(message.contains("BLOODRAVEN_LOAD_START"), "the recovery: {message}");
    assert!(message.contains(&format!("delete the Job {}", job_name("orders"))), "{message}");
    let v = view(&running, Some("iad"), &facts, &rollouts, &failed_job);
    let patch = record(&v, &decision, "2026-11-30T12:05:00Z").unwrap();
    assert_eq!(patch["phase"], "Failed");
    // Recorded once.
    let failed = RestoreStatus { phase: Some(RestorePhase::Failed), ..running.clone() };
    assert_eq!(decide(&view(&failed, Some("iad"), &facts, &rollouts, &failed_job)), Decision::Idle);
    // The human deleted the Job: it is rebuilt against the (writable) seed.
    assert_eq!(
        decide(&view(&failed, Some("iad"), &facts, &rollouts, &JobState::Absent)),
        Decision::CreateJob { site: "iad".into() }
    );
}

#[test]
fn the_group_is_gated_until_the_restore_succeeded() {
    let mut group: MysqlFailoverGroup =
        bloodraven_crd::fixtures::GroupFixture::three_sites().build();
    group.status.get_or_insert_with(Default::default).restore = None;
    assert!(!gated(&group), "no initFromBackup: never gated");
    group.spec.init_from_backup =
        Some(serde_json::from_value(json!({"source": {"backupRef": {"name": "b"}}})).unwrap());
    assert!(gated(&group), "unobserved");
    for (phase, expected) in [
        (RestorePhase::Pending, true),
        (RestorePhase::Running, true),
        (RestorePhase::Failed, true),
        (RestorePhase::Succeeded, false),
    ] {
        let status = group.status.get_or_insert_with(Default::default);
        status.restore = Some(restore(Some(phase.clone())));
        assert_eq!(gated(&group), expected, "{phase:?}");
    }
}

fn spec(name: &str, role: SiteRole) -> SiteSpec {
    serde_json::from_value(json!({"name": name, "role": role.as_str(), "serverID": 1})).unwrap()
}

#[test]
fn the_default_seed_is_the_first_priority_candidate_else_the_first_candidate() {
    let sites = [
        spec("fra", SiteRole::DisasterRecovery),
        spec("iad", SiteRole::PrimaryCandidate),
        spec("pdx", SiteRole::PrimaryCandidate),
    ];
    assert_eq!(default_seed(&sites, &[]).as_deref(), Some("iad"));
    assert_eq!(default_seed(&sites, &["fra".into(), "pdx".into()]).as_deref(), Some("pdx"));
    assert_eq!(default_seed(&sites[..1], &[]), None);
}

fn seed_input<'a>(
    facts: &'a [SiteFacts],
    active: Option<&'a str>,
    restore: &'a RestoreStatus,
) -> SeedInput<'a> {
    SeedInput {
        facts,
        recorded_active: active,
        restore,
        default_seed: Some("iad"),
        by_priority: false,
    }
}

#[test]
fn seeding_waits_for_every_site_empty_then_promotes_only_the_seed() {
    let unseen = RestoreStatus::default();
    // One site not answering, or one holding transactions: nothing.
    let waiting = [
        site("iad", SiteState::ReadOnly, ""),
        site("pdx", SiteState::Unreachable, ""),
        site("fra", SiteState::ReadOnly, ""),
    ];
    assert!(seed_steps(&seed_input(&waiting, None, &unseen)).is_empty());
    let dirty = [
        site("iad", SiteState::ReadOnly, ""),
        site("pdx", SiteState::ReadOnly, &format!("{A}:1-3")),
        site("fra", SiteState::ReadOnly, ""),
    ];
    assert!(seed_steps(&seed_input(&dirty, None, &unseen)).is_empty());
    // Every site empty: the seed is promoted and published, nothing else.
    let fresh = [
        site("iad", SiteState::ReadOnly, ""),
        site("pdx", SiteState::Writable, ""),
        site("fra", SiteState::ReadOnly, ""),
    ];
    let steps = seed_steps(&seed_input(&fresh, None, &unseen));
    assert!(matches!(&steps[0], Step::Fence { site, .. } if site == "pdx"), "{steps:?}");
    assert!(
        matches!(&steps[1], Step::Promote { site, by: PromoteWhy::FirstPrimary { .. } } if site == "iad"),
        "{steps:?}"
    );
    assert_eq!(steps[2], Step::RecordActive { site: "iad".into(), failover: false });
    assert_eq!(steps.len(), 3);
}

#[test]
fn a_seed_that_came_back_fenced_is_lifted_only_while_the_others_are_pristine() {
    let running = RestoreStatus {
        phase: Some(RestorePhase::Running),
        job_name: Some(job_name("orders")),
        target_site: Some("iad".into()),
        ..RestoreStatus::default()
    };
    // Part of the load is in the seed; the others are empty and read-only.
    let restarted = [
        site("iad", SiteState::ReadOnly, &format!("{A}:1-40")),
        site("pdx", SiteState::ReadOnly, ""),
    ];
    let steps = seed_steps(&seed_input(&restarted, Some("iad"), &running));
    assert_eq!(steps, vec![Step::Promote { site: "iad".into(), by: PromoteWhy::Reassert }]);
    // Another site has a replication channel (history): the fence stays.
    let mut replicating = restarted.clone();
    replicating[1].replica = Some(ReplicaObservation::default());
    assert!(seed_steps(&seed_input(&replicating, Some("iad"), &running)).is_empty());
    // The active site is down: no other site is ever promoted while gated.
    let down = [site("iad", SiteState::Unreachable, ""), site("pdx", SiteState::ReadOnly, "")];
    assert!(seed_steps(&seed_input(&down, Some("iad"), &running)).is_empty());
    // The seed is the recorded target, even when activeSite names another site.
    let steps = seed_steps(&seed_input(&restarted, Some("pdx"), &running));
    assert_eq!(steps, vec![Step::Promote { site: "iad".into(), by: PromoteWhy::Reassert }]);
}

#[test]
fn after_success_the_empty_sites_are_cloned_from_the_seed() {
    let facts = [
        site("iad", SiteState::Writable, &format!("{A}:1-40")),
        site("pdx", SiteState::ReadOnly, ""),
        site("fra", SiteState::ReadOnly, &format!("{A}:1-40")),
        site("sea", SiteState::Unreachable, ""),
    ];
    let none = BTreeMap::new();
    assert_eq!(clone_targets(&facts, Some("iad"), &none), vec!["pdx".to_owned()]);
    let held: BTreeMap<String, String> = [("pdx".to_owned(), "RestorePeerHold".to_owned())].into();
    assert!(clone_targets(&facts, Some("iad"), &held).is_empty(), "another guard holds it");
    // An empty seed (an empty backup): nothing to clone; convergence repoints them.
    let empty_seed = [site("iad", SiteState::Writable, ""), site("pdx", SiteState::ReadOnly, "")];
    assert!(clone_targets(&empty_seed, Some("iad"), &none).is_empty());
    assert!(clone_targets(&facts, None, &none).is_empty());
}

#[test]
fn ready_says_why_the_group_waits() {
    let body = || {
        json!({ "status": { "conditions": [
            { "type": "Ready", "status": "True", "reason": "Ready", "message": "ok" },
            { "type": "Degraded", "status": "False", "reason": "Healthy", "message": "fine" },
        ]}})
    };
    let ready_of = |body: &serde_json::Value| body["status"]["conditions"][0].clone();
    let running = RestoreStatus {
        phase: Some(RestorePhase::Running),
        message: Some("restore Job x is loading".into()),
        ..RestoreStatus::default()
    };
    let mut rendered = body();
    apply_ready(&mut rendered, Some(&running), true, &[], now());
    let ready = ready_of(&rendered);
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "InitFromBackupInProgress");
    assert!(ready["message"].as_str().unwrap().contains("restore Job x is loading"));
    assert_eq!(rendered["status"]["conditions"][1]["status"], "False", "Degraded untouched");
    let failed = RestoreStatus { phase: Some(RestorePhase::Failed), ..running };
    let mut rendered = body();
    apply_ready(&mut rendered, Some(&failed), true, &[], now());
    assert_eq!(ready_of(&rendered)["reason"], "InitFromBackupFailed");
    // Succeeded with sites still to clone: not Ready yet; then nothing changes.
    let mut rendered = body();
    apply_ready(&mut rendered, None, false, &["pdx".to_owned()], now());
    assert_eq!(ready_of(&rendered)["reason"], "InitFromBackupInProgress");
    let mut rendered = body();
    apply_ready(&mut rendered, None, false, &[], now());
    assert_eq!(rendered, body());
}
