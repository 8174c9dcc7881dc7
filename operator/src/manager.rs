//! The per-group topology manager: a tokio task per group that polls every `pollInterval`:
//! observe → plan → apply → publish (the `-primary` Service, pod labels, status).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bloodraven_crd::group::{LastFailover, SiteState};
use bloodraven_crd::{
    Condition, ConditionReason, ConditionStatus, ConditionType, MysqlFailoverGroup,
};
use bloodraven_facts::site_facts;
use bloodraven_gtid::GtidSet;
use bloodraven_workloads::{Resolver, SiteNames, ports};
use jiff::{SignedDuration, Timestamp};
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use mysql_async::Pool;

use crate::metrics::{GroupLabels, KindLabels, Metrics, SiteLabels, TargetSiteLabels};
use crate::observe::{self, Bounds, Pools};
use crate::publish::{publish_primary, publish_snapshot};
use crate::status::{FIELD_MANAGER, PollOutcome, alert_text, render, time};
use crate::topology::{Alert, Deferral, FenceWhy, History, PlanInput, PromoteWhy, Step, plan};
use crate::{apply, sql};
use bloodraven_crashpoint::Step as CrashStep;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// Fallbacks of `spec.pollInterval`, `spec.failureThreshold`, `spec.recoveryThreshold` (for a
/// group that does not carry them), and the site read bounds.
#[derive(Clone, Copy, Debug)]
pub struct Tuning {
    /// How often a group is polled.
    pub poll_interval: Duration,
    /// Unreachable polls before the active site counts as failed.
    pub failure_threshold: u32,
    /// Reachable polls before a read-only active site is re-asserted.
    pub recovery_threshold: u32,
    /// Connect and query bounds of one site read.
    pub bounds: Bounds,
    /// The planned-failover deadlines ([`crate::planned::Timings::document`]; drills scale
    /// them).
    pub planned: crate::planned::Timings,
    /// The bounds of a promotion: the receiver's stop and the applier's catch-up on what the
    /// candidate had received ([`apply::PromoteTimings::document`]).
    pub promote: apply::PromoteTimings,
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_secs(2),
            failure_threshold: 3,
            recovery_threshold: 2,
            bounds: Bounds { connect: Duration::from_millis(1500), query: Duration::from_secs(2) },
            planned: crate::planned::Timings::document(),
            promote: apply::PromoteTimings::document(),
        }
    }
}

/// A group's identity.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupKey {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// What `/active-site` answers for a group.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveSnapshot {
    /// The active site, when one is known.
    pub active_site: Option<String>,
    /// When the observation behind it was taken.
    pub observed_at: Timestamp,
    /// Incremented on every change of the active site seen by this operator process.
    pub topology_generation: u64,
}

/// The latest active site of every group this process manages.
pub type Published = Arc<Mutex<BTreeMap<GroupKey, ActiveSnapshot>>>;

/// What every group task shares.
pub struct Shared {
    /// The Kubernetes client.
    pub client: kube::Client,
    /// Service names → addresses (production DNS, the lab's proxy links).
    pub resolver: Arc<dyn Resolver>,
    /// Events.
    pub recorder: Recorder,
    /// Defaults.
    pub tuning: Tuning,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// The latest published active site per group (served by `/active-site`).
    pub published: Published,
    /// The per-group claim slots the planned-failover code sets and the managers obey.
    pub claims: ClaimSlots,
    /// The groups' pods (names and labels), kept by one watch.
    pub pods: crate::pods::PodCache,
    /// Each group's PITR render and the MysqlBackups (`/pitr-cutoff`, the archive roll-up).
    pub pitr: crate::pitr_archive::PitrRegistry,
}

/// The per-group claim slots (planned-failover document, "The claim"): one slot per group in
/// the operator process, shared by every topology-manager generation of the group (a manager
/// restarted with new credentials sees the same claim). The planned-failover code grants a run
/// the claim by [`ClaimSlots::set`] and releases it by [`ClaimSlots::clear`]; while a group's
/// slot holds a claim or hold, its topology manager defers emergency failover, split-brain
/// resolution, the re-assert and follower convergence; writable DisasterRecovery and ReadOnly
/// sites are still fenced. A process restart starts empty: the planned-failover code hydrates
/// the slot from the status before the manager's first poll.
#[derive(Clone, Debug, Default)]
pub struct ClaimSlots(Arc<Mutex<BTreeMap<GroupKey, Deferral>>>);

impl ClaimSlots {
    /// Puts `claim` (a run's claim, or the automation hold it became) in the group's slot.
    pub fn set(&self, key: &GroupKey, claim: Deferral) {
        self.lock().insert(key.clone(), claim);
    }

    /// Empties the group's slot.
    pub fn clear(&self, key: &GroupKey) {
        self.lock().remove(key);
    }

    /// What the group's slot holds.
    pub fn get(&self, key: &GroupKey) -> Option<Deferral> {
        self.lock().get(key).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<GroupKey, Deferral>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Shared").field("tuning", &self.tuning).finish_non_exhaustive()
    }
}

/// Why a poll could not run.
#[derive(Debug, thiserror::Error)]
pub enum PollError {
    /// The API server refused or failed a request.
    #[error("{what}: {source}")]
    Kube {
        /// What was being done.
        what: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The credentials Secret is missing or lacks a key.
    #[error(
        "credentials: {0}; create the Secret named by spec.credentials.operatorSecretName with \
         keys username, password, MYSQL_REPLICATION_USER, MYSQL_REPLICATION_PASSWORD"
    )]
    Credentials(String),
    /// A workload builder refused the group.
    #[error("building the group's objects: {0}")]
    Workload(#[from] bloodraven_workloads::WorkloadError),
}

pub(crate) fn kube_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> PollError {
    let what = what.into();
    move |source| PollError::Kube { what, source }
}

/// The state one group task keeps between polls.
#[derive(Debug, Default)]
pub struct GroupState {
    pools: Pools,
    history: History,
    last_alerts: Vec<String>,
    /// The `-primary` Service last applied (not applied again while unchanged, up to
    /// `publish::REAPPLY_AFTER`).
    primary_service: Option<crate::publish::AppliedService>,
    /// The credentials last read from the group's Secret (see `credentials::REREAD_AFTER`).
    credentials: Option<crate::credentials::CachedCredentials>,
    /// Whether every site answered the last poll (else the Secret is read again each poll).
    all_answered: bool,
    /// The status last applied at the end of a poll (not applied again while nothing but
    /// `lastSeen` changed and nobody else changed the group, up to `status::LAST_SEEN_REFRESH`).
    status: Option<crate::status::AppliedStatus>,
    /// The planned-failover applier's memory of the group's run.
    planned: crate::planned::io::PlannedState,
    /// The post-restore reclone queue's memory (the clone it runs, what it watched unstarted).
    reclone: crate::restore::queue_io::RecloneMemory,
    /// The in-place restore run's memory (settlement's first failed read, rejection re-check).
    restore_run: crate::restore::run_io::RunMemory,
    /// The `bloodraven_restore_reclone_pending` samples last set (removed when they go).
    restore_gauge: Vec<(String, String)>,
    /// The clones of the empty sites after a bootstrap restore succeeded.
    bootstrap_clones: crate::restore::bootstrap::io::CloneMemory,
}

/// Runs the topology manager of one group until the group is deleted.
pub async fn run_group(shared: Arc<Shared>, key: GroupKey) {
    let mut state = GroupState::default();
    loop {
        let started = Instant::now();
        let labels = GroupLabels { namespace: key.namespace.clone(), group: key.name.clone() };
        shared.metrics.polls.get_or_create(&labels).inc();
        let polled = poll_once(&shared, &key, &mut state).await;
        shared.metrics.poll_seconds.get_or_create(&labels).observe(started.elapsed().as_secs_f64());
        let interval = match polled {
            Ok(None) => break,
            Ok(Some(interval)) => interval,
            Err(error) => {
                tracing::warn!(
                    namespace = %key.namespace, group = %key.name, %error, "topology poll failed"
                );
                shared.tuning.poll_interval
            }
        };
        tokio::time::sleep(interval.saturating_sub(started.elapsed())).await;
    }
    tracing::info!(namespace = %key.namespace, group = %key.name, "group gone; manager stops");
    state.pools.close().await;
}

fn update_history(history: &mut History, facts: &[bloodraven_facts::SiteFacts]) {
    for fact in facts {
        match fact.state {
            SiteState::Unreachable => {
                *history.unreachable_polls.entry(fact.name.clone()).or_default() += 1;
                history.reachable_polls.remove(&fact.name);
            }
            SiteState::Writable | SiteState::ReadOnly => {
                *history.reachable_polls.entry(fact.name.clone()).or_default() += 1;
                history.unreachable_polls.remove(&fact.name);
            }
            _ => {}
        }
    }
}

async fn event(
    shared: &Shared,
    group: &MysqlFailoverGroup,
    warning: bool,
    reason: &str,
    note: String,
) {
    let reference = group.object_ref(&());
    let event = Event {
        type_: if warning { EventType::Warning } else { EventType::Normal },
        reason: reason.to_owned(),
        note: Some(note),
        action: reason.to_owned(),
        secondary: None,
    };
    if let Err(error) = shared.recorder.publish(&event, &reference).await {
        tracing::debug!(%error, reason, "event not recorded");
    }
}

/// One poll. `Ok(None)`: the group is gone; else the group's poll interval.
pub async fn poll_once(
    shared: &Shared,
    key: &GroupKey,
    state: &mut GroupState,
) -> Result<Option<Duration>, PollError> {
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(shared.client.clone(), &key.namespace);
    let Some(mut group) =
        groups.get_opt(&key.name).await.map_err(kube_error("reading the group"))?
    else {
        return Ok(None);
    };
    let refused = crate::publish::refuse_invalid(shared, &group, key).await?;
    if refused {
        // A refused spec stops the topology manager, but not a planned failover in flight
        // (its source may be fenced): the run, a hold or a terminal marker still gets its
        // pass (planned-failover document, "A reconcile that returns early").
        if !crate::planned::io::runs_on_early_return(&group, shared.claims.get(key).as_ref()) {
            return Ok(Some(shared.tuning.poll_interval));
        }
        // The refusal's status write moved the resourceVersion the pass's record is
        // conditioned on: read again.
        let Some(again) =
            groups.get_opt(&key.name).await.map_err(kube_error("reading the group"))?
        else {
            return Ok(None);
        };
        group = again;
    }
    // The spec's knobs win; the command line's defaults apply when the API server did not
    // default them (an older CRD) or a value is out of range.
    let tuning = Tuning {
        poll_interval: group
            .spec
            .poll_interval
            .as_ref()
            .and_then(|_| group.spec.effective_poll_interval().ok())
            .unwrap_or(shared.tuning.poll_interval),
        failure_threshold: group
            .spec
            .failure_threshold
            .map_or(shared.tuning.failure_threshold, |_| group.spec.effective_failure_threshold()),
        recovery_threshold: group
            .spec
            .recovery_threshold
            .map_or(shared.tuning.recovery_threshold, |_| {
                group.spec.effective_recovery_threshold()
            }),
        bounds: shared.tuning.bounds,
        planned: shared.tuning.planned,
        promote: shared.tuning.promote,
    };
    let status = group.status.clone().unwrap_or_default();
    let credentials = match crate::credentials::cached(
        &shared.client,
        &group,
        &mut state.credentials,
        state.all_answered,
    )
    .await
    {
        Ok(credentials) => credentials,
        Err(error) => {
            // Bad input the CRD cannot catch: say so on the group, then retry next poll.
            let condition = Condition {
                reason: Some(ConditionReason::from("SecretNotFound")),
                message: Some(error.to_string()),
                observed_generation: group.metadata.generation,
                last_transition_time: Some(time(Timestamp::now())),
                ..Condition::new(ConditionType::Ready, ConditionStatus::False)
            };
            // Server-side apply drops fields this manager stops sending: carry the record.
            let mut status =
                serde_json::json!({ "conditions": [condition], "sites": status.sites });
            if let Some(active) = &group.status.as_ref().and_then(|s| s.active_site.clone()) {
                status["activeSite"] = serde_json::Value::from(active.as_str());
            }
            if let Some(last) = group.status.as_ref().and_then(|s| s.last_failover.as_ref()) {
                status["lastFailover"] = serde_json::to_value(last).unwrap_or_default();
            }
            let body = serde_json::json!({
                "apiVersion": "shipstream.io/v1alpha1",
                "kind": "MysqlFailoverGroup",
                "status": status,
            });
            groups
                .patch_status(
                    &key.name,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(body),
                )
                .await
                .map_err(kube_error("applying the group's status"))?;
            return Err(error);
        }
    };

    // Addresses: each site's internal administrative Service, through the one seam.
    let mut addresses: BTreeMap<String, (String, u16)> = BTreeMap::new();
    let mut pools: BTreeMap<String, Pool> = BTreeMap::new();
    for site in &group.spec.sites {
        let service = SiteNames::new(&key.name, &site.name).internal_service;
        if let Some(address) = shared.resolver.resolve(&key.namespace, &service, ports::MYSQL) {
            let pool =
                state.pools.pool(&site.name, &address.host, address.port, &credentials.operator);
            addresses.insert(site.name.clone(), (address.host, address.port));
            pools.insert(site.name.clone(), pool);
        }
    }
    let targets = group
        .spec
        .sites
        .iter()
        .map(|site| (site.name.clone(), pools.get(&site.name).cloned()))
        .collect();
    let observation = observe::observe_group(targets, tuning.bounds).await;
    let now = Timestamp::now();
    let stale_after =
        SignedDuration::try_from(tuning.poll_interval * 3 + tuning.bounds.connect * 2)
            .unwrap_or(SignedDuration::from_secs(10));
    let facts = site_facts(&group.spec, &observation, now, stale_after);
    for fact in &facts {
        let labels = SiteLabels {
            namespace: key.namespace.clone(),
            group: key.name.clone(),
            site: fact.name.clone(),
        };
        let up = matches!(fact.state, SiteState::Writable | SiteState::ReadOnly);
        shared.metrics.site_up.get_or_create(&labels).set(i64::from(up));
    }
    update_history(&mut state.history, &facts);
    state.all_answered = observation.sites.iter().all(|site| site.reading.is_ok());
    state.history.last_failover =
        status.last_failover.as_ref().and_then(|last| last.time.as_ref()).map(|t| t.0);
    state.history.pending_failover = pending_failover(&status);
    // The planned failover first: it sets the claim slot the plan obeys, and a pass that
    // wrote or acted ends this poll (the next one observes again before anything is planned).
    let planned = crate::planned::io::pass(
        crate::planned::io::PassInput {
            shared,
            key,
            group: &group,
            groups: &groups,
            pools: &pools,
            addresses: &addresses,
            sites: &observation,
            facts: &facts,
            credentials: &credentials,
            bounds: tuning.bounds,
            timings: &tuning.planned,
            pending_failover: state.history.pending_failover.is_some(),
        },
        &mut state.planned,
    )
    .await;
    if refused {
        // Only the planned pass runs on a refused spec.
        return Ok(Some(match planned {
            crate::planned::io::Passed::Acted(after)
            | crate::planned::io::Passed::Waiting(after) => after.min(tuning.poll_interval),
            crate::planned::io::Passed::Idle => tuning.poll_interval,
        }));
    }
    let tuning = match planned {
        crate::planned::io::Passed::Acted(after) => return Ok(Some(after)),
        crate::planned::io::Passed::Waiting(after) => {
            Tuning { poll_interval: tuning.poll_interval.min(after), ..tuning }
        }
        crate::planned::io::Passed::Idle => tuning,
    };
    let scope = format!("{}/{}", key.namespace, key.name);
    let crash = |step: bloodraven_crashpoint::Step| bloodraven_crashpoint::hit_in(&scope, step);
    // The in-place restore run next (spec.restoreInPlace): its records in status come before
    // its side effects, and a pass that wrote or acted ends this poll.
    let run = crate::restore::run_io::RunContext {
        client: &shared.client,
        recorder: &shared.recorder,
        group: &group,
        pools: &pools,
        facts: &facts,
        account: &credentials.operator,
        bounds: tuning.bounds,
        planned_failover_in_flight: shared.claims.get(key).is_some(),
        scope: &scope,
        now,
    };
    match crate::restore::run_io::pass(&run, &mut state.restore_run).await {
        Ok(crate::restore::run_io::RunPassed::Acted) => return Ok(Some(tuning.poll_interval)),
        Ok(crate::restore::run_io::RunPassed::Idle) => {}
        Err(error) => {
            tracing::warn!(namespace = %key.namespace, group = %key.name, %error, "in-place restore");
            return Ok(Some(tuning.poll_interval));
        }
    }
    // The bootstrap restore (spec.initFromBackup): its record comes before its Job, and a pass
    // that wrote ends this poll. A failed pass does not stop the seeding below.
    let bootstrap = crate::restore::bootstrap::io::BootstrapContext {
        client: &shared.client,
        recorder: &shared.recorder,
        group: &group,
        facts: &facts,
        account: &credentials.operator,
        now,
    };
    match crate::restore::bootstrap::io::pass(&bootstrap).await {
        Ok(crate::restore::bootstrap::io::Passed::Acted) => {
            return Ok(Some(tuning.poll_interval));
        }
        Ok(crate::restore::bootstrap::io::Passed::Idle) => {}
        Err(error) => {
            tracing::warn!(namespace = %key.namespace, group = %key.name, %error, "bootstrap restore");
        }
    }
    let gated = crate::restore::bootstrap::gated(&group);

    let cooldown = group
        .spec
        .effective_failover_cooldown()
        .ok()
        .and_then(|cooldown| SignedDuration::try_from(cooldown).ok())
        .unwrap_or(SignedDuration::from_mins(5));
    let priorities = group
        .spec
        .split_brain_policy
        .as_ref()
        .map(|policy| policy.site_priorities.clone())
        .unwrap_or_default();
    // The claim slot first (a run's claim or its hold, set in process), then a durable hold.
    let deferral = shared
        .claims
        .get(key)
        .or_else(|| status.automation_held().then_some(Deferral::Hold { run_id: None }));
    // The restore's guards, from the status just read through the API server (a failed read
    // skips the poll, so a guard is only ever released by a confirming read).
    let restore_guards = crate::restore::guards::guards(&status);
    let mut excluded = restore_guards.excluded.clone();
    // After a bootstrap restore: the empty sites are cloned from the seed before convergence
    // repoints them (the load is not in the seed's binary log).
    let bootstrap_clones = if group.spec.init_from_backup.is_some() && !gated {
        crate::restore::bootstrap::clone_targets(&facts, status.active_site.as_deref(), &excluded)
    } else {
        Vec::new()
    };
    for site in &bootstrap_clones {
        excluded.insert(site.clone(), crate::restore::bootstrap::CLONE_PENDING.to_owned());
    }
    let default_seed =
        crate::restore::bootstrap::plan::default_seed(&group.spec.sites, &priorities);
    let steps = if gated {
        // While the bootstrap restore has not succeeded the manager only seeds.
        crate::restore::bootstrap::seed_steps(&crate::restore::bootstrap::SeedInput {
            facts: &facts,
            recorded_active: status.active_site.as_deref(),
            restore: &status.restore.clone().unwrap_or_default(),
            default_seed: default_seed.as_deref(),
            by_priority: default_seed.as_ref().is_some_and(|seed| priorities.contains(seed)),
        })
    } else {
        plan(&PlanInput {
            facts: &facts,
            recorded_active: status.active_site.as_deref(),
            priorities: &priorities,
            cooldown,
            failure_threshold: tuning.failure_threshold,
            recovery_threshold: tuning.recovery_threshold,
            history: &state.history,
            deferral: deferral.as_ref(),
            excluded: &excluded,
            restore: &restore_guards,
            addresses: &addresses,
            now,
        })
    };
    if steps.iter().any(|step| !matches!(step, Step::Alert(_))) {
        tracing::info!(namespace = %key.namespace, group = %key.name, ?steps, "topology plan");
    }

    // Apply.
    let mut active = status.active_site.clone();
    let mut last_failover = status.last_failover.clone();
    let mut failures = Vec::new();
    let mut blocked: Vec<(String, GtidSet)> = Vec::new();
    let mut promoted: Option<(String, GtidSet, bool)> = None;
    let mut alerts = Vec::new();
    let count = |family: &Family<KindLabels, Counter>, kind: &str| {
        Metrics::count(family, &key.namespace, &key.name, kind);
    };
    for step in &steps {
        match step {
            Step::Fence { site, why } => {
                let Some(pool) = pools.get(site) else { continue };
                match apply::fence(pool, site, tuning.bounds).await {
                    Ok(()) => {
                        count(&shared.metrics.actions, "fence");
                        let reason = match why {
                            FenceWhy::SplitBrainLoser { .. } => "SplitBrainDetected",
                            FenceWhy::NonCandidateWriter { .. } => "SiteFenced",
                        };
                        let note = fence_note(site, why);
                        event(shared, &group, true, reason, note).await;
                    }
                    Err(error) => {
                        count(&shared.metrics.action_failures, "fence");
                        failures.push(error.to_string());
                    }
                }
            }
            Step::Promote { site, by } => {
                let Some(pool) = pools.get(site) else { break };
                if let PromoteWhy::Emergency { failed, .. } = by {
                    // The durable intent first (lastFailover naming the target, no set yet):
                    // a restart between here and the recorded promotion finishes this
                    // failover instead of waiting out the cooldown, and a promotion is never
                    // made that no record announces.
                    crash(CrashStep::OperatorFailoverBeforeIntentRecord);
                    let intent = LastFailover {
                        time: Some(time(now)),
                        target: Some(site.clone()),
                        ..LastFailover::default()
                    };
                    let body = render(&PollOutcome {
                        facts: &facts,
                        active: active.as_deref(),
                        steps: &steps,
                        failures: &failures,
                        blocked: &blocked,
                        last_failover: Some(intent.clone()),
                        previous: &status.conditions,
                        previous_sites: &status.sites,
                        generation: group.metadata.generation,
                        now,
                    });
                    if let Err(error) = apply_status(&groups, &key.name, body).await {
                        count(&shared.metrics.action_failures, "failover");
                        failures.push(format!("recording the failover intent: {error}"));
                        break;
                    }
                    last_failover = Some(intent);
                    crash(CrashStep::OperatorFailoverAfterFenceRecord);
                    // Fence what can be fenced: the failed primary, in case it answers again
                    // (best effort, short bounds; it was unreachable for the whole threshold).
                    crash(CrashStep::OperatorFailoverBeforeFence);
                    if let Some(failed_pool) = pools.get(failed) {
                        match apply::fence(failed_pool, failed, FAILED_PRIMARY_FENCE_BOUNDS).await {
                            Ok(()) => {
                                count(&shared.metrics.actions, "fence");
                                let note =
                                    format!("failed primary {failed} fenced before failover");
                                event(shared, &group, true, "SiteFenced", note).await;
                            }
                            Err(error) => {
                                tracing::info!(
                                    namespace = %key.namespace, group = %key.name, %error,
                                    "the failed primary could not be fenced (expected while it is down)"
                                );
                            }
                        }
                    }
                    crash(CrashStep::OperatorFailoverAfterFence);
                    crash(CrashStep::OperatorFailoverBeforePromote);
                }
                match apply::promote(pool, site, tuning.bounds, tuning.promote).await {
                    Ok(gtid) => {
                        let emergency = matches!(by, PromoteWhy::Emergency { .. });
                        if emergency {
                            crash(CrashStep::OperatorFailoverAfterPromote);
                            shared
                                .metrics
                                .failovers
                                .get_or_create(&TargetSiteLabels {
                                    namespace: key.namespace.clone(),
                                    group: key.name.clone(),
                                    target_site: site.clone(),
                                })
                                .inc();
                        }
                        count(
                            &shared.metrics.actions,
                            if emergency { "failover" } else { "promote" },
                        );
                        let reason = if emergency { "FailoverExecuted" } else { "PrimaryPromoted" };
                        let note = format!("site {site} promoted: {by}");
                        event(shared, &group, emergency, reason, note).await;
                        promoted = Some((site.clone(), gtid, emergency));
                    }
                    Err(error) => {
                        count(&shared.metrics.action_failures, "promote");
                        failures.push(error.to_string());
                        // Nothing after a failed promotion: the next poll observes again.
                        break;
                    }
                }
            }
            Step::RecordActive { site, failover } => {
                active = Some(site.clone());
                if *failover {
                    let gtid = promoted
                        .as_ref()
                        .filter(|(promoted, _, _)| promoted == site)
                        .map(|(_, gtid, _)| gtid.to_string());
                    // The intent's time: the cooldown runs from the decision.
                    let at = last_failover
                        .as_ref()
                        .filter(|last| last.target.as_deref() == Some(site.as_str()))
                        .and_then(|last| last.time.clone())
                        .unwrap_or_else(|| time(now));
                    last_failover = Some(LastFailover {
                        time: Some(at),
                        target: Some(site.clone()),
                        promotion_gtid_executed: gtid,
                        ..LastFailover::default()
                    });
                    // Recorded at once, before the -primary Service moves.
                    crash(CrashStep::OperatorFailoverBeforeRecordActive);
                    let body = render(&PollOutcome {
                        facts: &facts,
                        active: active.as_deref(),
                        steps: &steps,
                        failures: &failures,
                        blocked: &blocked,
                        last_failover: last_failover.clone(),
                        previous: &status.conditions,
                        previous_sites: &status.sites,
                        generation: group.metadata.generation,
                        now,
                    });
                    if let Err(error) = apply_status(&groups, &key.name, body).await {
                        failures.push(format!("recording the promotion of {site}: {error}"));
                    } else {
                        crash(CrashStep::OperatorFailoverAfterRecordActive);
                    }
                } else if state.history.pending_failover.as_deref() == Some(site.as_str()) {
                    // A failover whose intent was recorded and whose promotion happened, but
                    // whose record did not land (an operator restart in between): finish the
                    // record with the promoted site's set as observed now.
                    let gtid = facts
                        .iter()
                        .find(|fact| &fact.name == site)
                        .and_then(|fact| fact.gtid_executed.as_ref())
                        .map(ToString::to_string);
                    if let Some(last) = last_failover.as_mut() {
                        last.promotion_gtid_executed = gtid;
                    }
                }
            }
            Step::Repoint { site, source, reason } => {
                let (Some(follower), Some(primary), Some((host, port))) =
                    (pools.get(site), pools.get(source), addresses.get(source))
                else {
                    continue;
                };
                let target = sql::SourceTarget {
                    host,
                    port: *port,
                    user: &credentials.replication.user,
                    password: &credentials.replication.password,
                };
                crash(CrashStep::OperatorRepointBefore);
                match apply::repoint(follower, site, primary, &target, tuning.bounds).await {
                    Ok(()) => {
                        crash(CrashStep::OperatorRepointAfter);
                        count(&shared.metrics.actions, "repoint");
                        let note = repoint_note(site, source, reason);
                        event(shared, &group, false, "FollowerRepointed", note).await;
                    }
                    Err(error) => {
                        count(&shared.metrics.action_failures, "repoint");
                        failures.push(error.to_string());
                    }
                }
            }
            Step::Block { site, divergent } => {
                count(&shared.metrics.actions, "block");
                blocked.push((site.clone(), divergent.clone()));
            }
            Step::StopReceiver { site } | Step::OfflineFence { site } => {
                let Some(pool) = pools.get(site) else { continue };
                let (statement, kind) = match step {
                    Step::StopReceiver { .. } => (sql::STOP_REPLICA_IO_THREAD, "restore-hold"),
                    _ => (crate::restore::io::OFFLINE_MODE_ON, "restore-fence"),
                };
                match crate::restore::io::run(pool, site, statement, tuning.bounds).await {
                    Ok(()) => count(&shared.metrics.actions, kind),
                    Err(error) => {
                        count(&shared.metrics.action_failures, kind);
                        failures.push(error.to_string());
                    }
                }
            }
            Step::Alert(alert) => alerts.push((alert_reason(alert), alert_text(alert))),
        }
    }
    let texts: Vec<String> = alerts.iter().map(|(_, text)| text.clone()).collect();
    if texts != state.last_alerts {
        for (reason, alert) in &alerts {
            tracing::warn!(namespace = %key.namespace, group = %key.name, alert, "topology alert");
            count(&shared.metrics.alerts, reason);
            event(shared, &group, true, reason, alert.clone()).await;
        }
        state.last_alerts = texts;
    }

    // Publish: the -primary Service, pod labels, then the status.
    let promoted_site = promoted.as_ref().map(|(site, _, _)| site.as_str());
    let emergency = promoted.as_ref().is_some_and(|(_, _, emergency)| *emergency);
    if emergency {
        crash(CrashStep::OperatorFailoverBeforeServiceSwap);
    }
    publish_primary(
        shared,
        &group,
        key,
        active.as_deref(),
        promoted_site,
        &facts,
        &mut state.primary_service,
    )
    .await?;
    crate::dns::reconcile(shared, &group, key, active.as_deref(), &facts).await;
    if emergency {
        crash(CrashStep::OperatorFailoverAfterServiceSwap);
    }
    // The post-restore reclone queue (status.restoreReclones), from the group read at the
    // start of the poll; its writes are conditional on that read (a conflict retries next poll).
    let queue = crate::restore::queue_io::QueueContext {
        client: &shared.client,
        recorder: &shared.recorder,
        group: &group,
        addresses: &addresses,
        account: &credentials.operator,
        planned_failover_in_flight: shared.claims.get(key).is_some(),
        now,
    };
    if let Err(error) = crate::restore::queue_io::poll(&queue, &mut state.reclone).await {
        tracing::warn!(namespace = %key.namespace, group = %key.name, %error, "reclone queue");
    }
    crate::restore::bootstrap::io::clones(
        &mut state.bootstrap_clones,
        &bootstrap_clones,
        status.active_site.as_deref(),
        &addresses,
        &credentials.operator,
        now,
    )
    .await;
    let mut body = render(&PollOutcome {
        facts: &facts,
        active: active.as_deref(),
        steps: &steps,
        failures: &failures,
        blocked: &blocked,
        last_failover,
        previous: &status.conditions,
        previous_sites: &status.sites,
        generation: group.metadata.generation,
        now,
    });
    // A standing reclone queue: Degraded/Ready say so, and the gauge names each queued site.
    crate::restore::signals::apply(&mut body, status.restore_reclones.as_ref(), now);
    if group.spec.init_from_backup.is_some() {
        crate::restore::bootstrap::apply_ready(
            &mut body,
            status.restore.as_ref(),
            gated,
            &bootstrap_clones,
            now,
        );
    }
    let samples = crate::restore::signals::gauge(status.restore_reclones.as_ref());
    let queued = |(site, phase): &(String, String)| crate::metrics::QueuedSiteLabels {
        namespace: key.namespace.clone(),
        group: key.name.clone(),
        site: site.clone(),
        phase: phase.clone(),
    };
    for gone in state.restore_gauge.iter().filter(|sample| !samples.contains(sample)) {
        shared.metrics.restore_reclone_pending.remove(&queued(gone));
    }
    for sample in &samples {
        shared.metrics.restore_reclone_pending.get_or_create(&queued(sample)).set(1);
    }
    state.restore_gauge = samples;
    let current = group.metadata.resource_version.as_deref();
    let masked = crate::status::without_last_seen(&body);
    if !state
        .status
        .as_ref()
        .is_some_and(|applied| applied.current(&masked, current, Instant::now()))
    {
        state.status = None;
        let resource_version = apply_status(&groups, &key.name, body).await?;
        state.status = resource_version.map(|resource_version| crate::status::AppliedStatus {
            masked,
            resource_version,
            at: Instant::now(),
        });
    }
    publish_snapshot(shared, key, active, now);
    Ok(Some(tuning.poll_interval))
}

/// The bounds of the best-effort fence of a failed primary before an emergency promotion:
/// short, since the site was unreachable for the whole failure threshold.
const FAILED_PRIMARY_FENCE_BOUNDS: Bounds =
    Bounds { connect: Duration::from_millis(500), query: Duration::from_millis(500) };

/// The status by server-side apply with our field manager.
/// Applies the group's status; returns the group's resourceVersion after the apply.
async fn apply_status(
    groups: &Api<MysqlFailoverGroup>,
    name: &str,
    body: serde_json::Value,
) -> Result<Option<String>, PollError> {
    groups
        .patch_status(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(body))
        .await
        .map(|group| group.metadata.resource_version)
        .map_err(kube_error("applying the group's status"))
}

/// A failover whose intent is durable and whose promotion is not recorded: `lastFailover`
/// names a target without `promotionGtidExecuted` and `activeSite` names another site.
fn pending_failover(status: &bloodraven_crd::group::MysqlFailoverGroupStatus) -> Option<String> {
    let last = status.last_failover.as_ref()?;
    let target = last.target.as_ref()?;
    (last.promotion_gtid_executed.is_none() && status.active_site.as_ref() != Some(target))
        .then(|| target.clone())
}

/// The note of a fence's Event.
fn fence_note(site: &str, why: &FenceWhy) -> String {
    format!("site {site} fenced: {why}")
}

/// The note of a repoint's Event.
fn repoint_note(site: &str, source: &str, reason: &bloodraven_facts::RepointReason) -> String {
    format!("site {site} repointed at {source}: {reason}")
}

/// The Event reason (upstream's names where research §8 has them) and metric label of an alert.
fn alert_reason(alert: &Alert) -> &'static str {
    match alert {
        Alert::NoPrimary { .. } | Alert::AwaitingCandidates { .. } => "NoPrimaryDetected",
        Alert::CandidatesIncomparable { .. } => "CandidatesIncomparable",
        Alert::SplitBrainUnresolved { .. } => "SplitBrainDetected",
        Alert::Cooldown { .. } => "FailoverCooldown",
        Alert::Deferred(_) => "AutomationDeferred",
        Alert::FollowerDiverged { .. } => "FollowerDiverged",
        Alert::ReassertBlocked { .. } => "ReassertBlocked",
        Alert::ActiveUnreachable { .. } => "ActiveSiteUnreachable",
        Alert::ActiveNotCandidate { .. } => "ActiveSiteNotCandidate",
        Alert::ActiveUnknown { .. } => "ActiveSiteUnknown",
        Alert::RestoreFrozen => "RestoreInPlaceRunning",
    }
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::group::SiteRole;
    use bloodraven_facts::{RepointReason, WinnerBy};

    use super::*;

    #[test]
    fn fence_and_repoint_notes_are_plain_words() {
        assert_eq!(
            fence_note("fra", &FenceWhy::NonCandidateWriter { role: SiteRole::DisasterRecovery }),
            "site fra fenced: a DisasterRecovery site answered writable; only PrimaryCandidates \
             take writes"
        );
        assert_eq!(
            fence_note(
                "pdx",
                &FenceWhy::SplitBrainLoser { winner: "iad".to_owned(), by: WinnerBy::Priority }
            ),
            "site pdx fenced: split brain lost to iad (it is the first writable candidate of \
             sitePriorities)"
        );
        assert_eq!(
            fence_note(
                "pdx",
                &FenceWhy::SplitBrainLoser {
                    winner: "iad".to_owned(),
                    by: WinnerBy::RecordedActive
                }
            ),
            "site pdx fenced: split brain lost to iad (it is the recorded active site)"
        );
        let reasons = [
            (RepointReason::NoChannel, "it had no replication channel"),
            (
                RepointReason::WrongSource { host: "fra-internal".to_owned(), port: 3306 },
                "it replicated from fra-internal:3306, not the primary",
            ),
            (RepointReason::NoAutoPosition, "its channel lacked GTID auto-positioning"),
            (
                RepointReason::Stopped { io_running: false, sql_running: false },
                "both replication threads were stopped",
            ),
            (
                RepointReason::Stopped { io_running: true, sql_running: false },
                "the SQL thread was stopped",
            ),
            (
                RepointReason::Stopped { io_running: false, sql_running: true },
                "the IO thread was stopped",
            ),
        ];
        for (reason, text) in reasons {
            assert_eq!(
                repoint_note("pdx", "iad", &reason),
                format!("site pdx repointed at iad: {text}")
            );
        }
    }

    #[test]
    fn a_first_primary_wait_is_reported_under_no_primary_detected() {
        let alert = Alert::AwaitingCandidates { silent: Vec::new(), failure_threshold: 3 };
        assert_eq!(alert_reason(&alert), "NoPrimaryDetected");
    }
}
