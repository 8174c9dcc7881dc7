//! The applier of the planned-failover decision core: the IO around [`crate::planned::step`].
//!
//! One pass runs inside the topology manager's poll, after its observation and before its
//! plan: it builds the [`Observation`](crate::planned::Observation) from what the poll already
//! read (plus each site's `@@server_uuid`), calls `step`, commits the bookkeeping annotations,
//! then the status write (conditioned on the resourceVersion of the poll's uncached read), then
//! the annotations that go with it, and only then runs the effects the record announces. A
//! pass that wrote a record or changed a site ends the poll there, so the next poll observes again before the
//! topology manager plans anything. The claim slot is hydrated from the status on a manager's
//! first pass (before its first plan) and kept in step with the record after each pass.
//!
//! | File | Concern |
//! | --- | --- |
//! | `observe.rs` | the observation, the record, the claim slot's hydration |
//! | `write.rs` | the status write and the annotation patches |
//! | `settle.rs` | settling an ambiguous status write: re-reads and the status fence |
//! | `effects.rs` | Fence, KillAppConnections, Promote, RefenceTarget, Unfence on MySQL |
//! | `samples.rs` | the decision's metric samples into the operator's registry |

mod effects;
mod observe;
mod samples;
mod settle;
mod write;

pub use write::PLANNED_FIELD_MANAGER;

use std::collections::BTreeMap;
use std::time::Duration;

use bloodraven_crashpoint::Step as CrashStep;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::annotations::{CompactTime, PLANNED_FAILOVER_CONFIRMED, RunSince};
use bloodraven_crd::catalog::planned_failover_run::{EventType as CatalogEventType, LogLevel};
use bloodraven_crd::group::{LastFailover, PlannedFailoverPhase};
use bloodraven_facts::{GroupObservation, SiteFacts};
use jiff::Timestamp;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use mysql_async::Pool;

use crate::credentials::Credentials;
use crate::manager::{GroupKey, Shared};
use crate::observe::Bounds;
use crate::planned::{
    AnnotationChange, Decision, Effect, Memory, Report, StatusWrite, Timings, step,
};
use crate::status::{FIELD_MANAGER, PollOutcome, render};
use crate::topology::Deferral;
use write::Written;

/// What one group's planned-failover applier keeps between passes (lost on restart, as the
/// core's [`Memory`] expects).
#[derive(Debug, Default)]
pub struct PlannedState {
    memory: Memory,
    reports: Vec<Report>,
    status_write_failing: bool,
    hydrated: bool,
}

/// What a pass did, for the manager's poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passed {
    /// Nothing planned is going on.
    Idle,
    /// A run or hold is live but nothing was written or sent: the topology manager polls on,
    /// and polls again within this.
    Waiting(Duration),
    /// A record was written or an effect ran: the poll ends, the next one within this.
    Acted(Duration),
}

/// What a pass reads from the manager's poll.
pub struct PassInput<'a> {
    /// Shared clients and the claim slots.
    pub shared: &'a Shared,
    /// The group.
    pub key: &'a GroupKey,
    /// The group as the poll read it (uncached).
    pub group: &'a MysqlFailoverGroup,
    /// The group API.
    pub groups: &'a Api<MysqlFailoverGroup>,
    /// Each site's pool.
    pub pools: &'a BTreeMap<String, Pool>,
    /// Each site's internal Service address.
    pub addresses: &'a BTreeMap<String, (String, u16)>,
    /// The poll's site readings.
    pub sites: &'a GroupObservation,
    /// The poll's facts.
    pub facts: &'a [SiteFacts],
    /// The group's accounts.
    pub(crate) credentials: &'a Credentials,
    /// Read bounds.
    pub bounds: Bounds,
    /// The planned-failover timings.
    pub timings: &'a Timings,
    /// An emergency failover's intent is recorded and not finished.
    pub pending_failover: bool,
}

/// How soon the pass after one that made progress runs: at once, but never a busy loop.
const PROMPTLY: Duration = Duration::from_millis(10);

/// When the next pass is due: promptly after a committed record, an effect that changed a
/// site or the publication, or a drain that left no session (the next record is ready to be
/// written; waiting a cadence there would only lengthen the write outage); else when the
/// decision asks (at least one millisecond).
fn next_pass(decision: &Decision, committed: bool, reports: &[Report]) -> Duration {
    let progressed = committed
        || decision.effects.iter().any(|effect| {
            matches!(
                effect,
                Effect::Fence { .. }
                    | Effect::Promote { .. }
                    | Effect::Publish { .. }
                    | Effect::RefenceTarget { .. }
                    | Effect::Unfence { .. }
            )
        })
        || reports.contains(&Report::Drained(Ok(0)));
    if progressed {
        return PROMPTLY;
    }
    Duration::try_from(decision.requeue_after)
        .unwrap_or(Duration::ZERO)
        .max(Duration::from_millis(1))
}

/// A core duration as a timer's (zero when negative).
fn std_duration(duration: jiff::SignedDuration) -> Duration {
    Duration::try_from(duration).unwrap_or(Duration::ZERO)
}

/// Whether the group's planned-failover record is the record of run `run_id`.
fn names_run(group: &MysqlFailoverGroup, run_id: &str) -> bool {
    group
        .status
        .as_ref()
        .and_then(|s| s.planned_failover.as_ref())
        .is_some_and(|block| block.run_id.as_deref() == Some(run_id))
}

/// Whether the group's record holds the claim for `run_id`.
fn holds_claim(group: &MysqlFailoverGroup, run_id: &str) -> bool {
    group.status.as_ref().and_then(|s| s.planned_failover.as_ref()).is_some_and(|block| {
        block.run_id.as_deref() == Some(run_id)
            && matches!(
                block.phase,
                Some(
                    PlannedFailoverPhase::Fencing
                        | PlannedFailoverPhase::Draining
                        | PlannedFailoverPhase::WaitingForLag
                        | PlannedFailoverPhase::Promoting
                        | PlannedFailoverPhase::RollingBack
                )
            )
    })
}

/// Whether a poll that returns early (a refused spec) still runs the planned pass: a run in
/// flight, a hold or its acknowledgement, a terminal marker or a deadline annotation, or a
/// held claim slot. A bare new request waits for a poll that reaches the regular step.
pub fn runs_on_early_return(group: &MysqlFailoverGroup, claim: Option<&Deferral>) -> bool {
    observe::relevant_beyond_request(group, claim)
}

/// One pass of the group's planned failover.
pub async fn pass(input: PassInput<'_>, state: &mut PlannedState) -> Passed {
    let PassInput { shared, key, group, .. } = input;
    if !state.hydrated {
        state.hydrated = true;
        if shared.claims.get(key).is_none()
            && let Some(claim) = observe::hydrated_claim(group)
        {
            tracing::info!(
                namespace = %key.namespace, group = %key.name, %claim,
                "planned failover: claim slot hydrated from the status"
            );
            shared.claims.set(key, claim);
        }
    }
    let claim = shared.claims.get(key);
    if !observe::relevant(group, claim.as_ref()) {
        return Passed::Idle;
    }
    let uuids = observe::server_uuids(input.pools, input.bounds).await;
    let observation = observe::observation(
        group,
        observe::Inputs {
            sites: input.sites,
            uuids: &uuids,
            addresses: input.addresses,
            claim: claim.as_ref(),
            pending_failover: input.pending_failover,
            status_write_failing: state.status_write_failing,
            reports: std::mem::take(&mut state.reports),
        },
    );
    let record = observe::run_record(group, state.memory.clone());
    let now = observe::now();
    let decision = step(&record, &observation, input.timings, now);
    state.memory = decision.memory.clone();
    log_lines(key, &decision);
    let (latest, committed) = commit(&input, state, &decision, now).await;
    let after = next_pass(&decision, committed, &state.reports);
    // The slot follows the record: a claim whose run the record names but which no longer
    // holds it is released (a Publishing or terminal record after a restart that hydrated
    // it). A claim for a run the record does not name was not set here: left to its owner.
    if let Some(Deferral::Claim { run_id }) = shared.claims.get(key)
        && names_run(&latest, &run_id)
        && !holds_claim(&latest, &run_id)
        && !decision.effects.iter().any(|e| matches!(e, Effect::TakeClaim { .. }))
    {
        shared.claims.clear(key);
    }
    if ends_poll(&decision) { Passed::Acted(after) } else { Passed::Waiting(after) }
}

/// Whether the decision ends the manager's poll: it wrote a record, or changed a site's flags
/// or the published primary (the poll's readings are stale then). The drain alone does not:
/// the rest of the poll publishes the fenced source without its `role=primary` label, so the
/// `-primary` Service sheds it and the drain can reach zero sessions.
fn ends_poll(decision: &Decision) -> bool {
    decision.write.is_some()
        || decision.effects.iter().any(|effect| {
            matches!(
                effect,
                Effect::Fence { .. }
                    | Effect::Promote { .. }
                    | Effect::Publish { .. }
                    | Effect::RefenceTarget { .. }
                    | Effect::Unfence { .. }
            )
        })
}

/// Commits the decision, then runs its effects once the record committed. Returns the group
/// as last written (or as read, when nothing committed) and whether a status write committed.
async fn commit(
    input: &PassInput<'_>,
    state: &mut PlannedState,
    decision: &Decision,
    now: Timestamp,
) -> (MysqlFailoverGroup, bool) {
    let PassInput { key, groups, group, .. } = *input;
    let mut latest = group.clone();
    if !decision.bookkeeping.is_empty() {
        match write::annotations(groups, &latest, &decision.bookkeeping, false).await {
            Ok(group) => latest = group,
            Err(error) => tracing::warn!(
                namespace = %key.namespace, group = %key.name, %error,
                "planned failover: bookkeeping annotations not written"
            ),
        }
    }
    if let Some(status_write) = &decision.write {
        // The bookkeeping of this same decision is the only change since the read.
        let version = latest.metadata.resource_version.clone().unwrap_or_default();
        let reserve = std_duration(input.timings.write_reserve);
        let written = write::status(groups, &latest, &version, status_write, reserve).await;
        // What the write was conditioned on (the bookkeeping may have moved the read's).
        let conditioned = StatusWrite { resource_version: version, ..status_write.clone() };
        match written {
            Written::Committed(group) => {
                state.status_write_failing = false;
                latest = *group;
            }
            Written::Conflict => {
                // A conflict may be the retry of an attempt that committed (the client
                // retries a 503): the record decides, not the answer.
                match settle::ambiguous_write(groups, key, &conditioned, reserve, reserve).await {
                    settle::Settled::Landed(group) => {
                        state.status_write_failing = false;
                        latest = *group;
                    }
                    _ => {
                        tracing::info!(
                            namespace = %key.namespace, group = %key.name,
                            "planned failover: the group changed since the read; deciding again"
                        );
                        return (latest, false);
                    }
                }
            }
            Written::Ambiguous(why) => {
                tracing::warn!(
                    namespace = %key.namespace, group = %key.name, why,
                    "planned failover: status write ambiguous; settling"
                );
                let budget = std_duration(input.timings.settlement);
                match settle::ambiguous_write(groups, key, &conditioned, budget, reserve).await {
                    settle::Settled::Landed(group) => {
                        state.status_write_failing = false;
                        latest = *group;
                    }
                    settle::Settled::NotLanded(group) => {
                        // A failed write for the stall window; nothing it announced runs.
                        state.status_write_failing = true;
                        return (*group, false);
                    }
                    settle::Settled::Unknown => {
                        state.status_write_failing = true;
                        return (latest, false);
                    }
                }
            }
            Written::Failed(error) => {
                state.status_write_failing = true;
                tracing::warn!(
                    namespace = %key.namespace, group = %key.name, %error,
                    "planned failover: status write failed; its effects are not run"
                );
                return (latest, false);
            }
        }
    }
    events(input.shared, &latest, decision).await;
    samples::record(&input.shared.metrics, key, &decision.metrics);
    if !decision.annotations.is_empty() {
        match write::annotations(groups, &latest, &decision.annotations, true).await {
            Ok(group) => latest = group,
            Err(error) => tracing::warn!(
                namespace = %key.namespace, group = %key.name, %error,
                "planned failover: annotations of the record not written"
            ),
        }
    }
    let scope = format!("{}/{}", key.namespace, key.name);
    for effect in &decision.effects {
        if let Some(step) = crash_before(effect) {
            bloodraven_crashpoint::hit_in(&scope, step);
        }
        let reports = run_effect(input, &latest, effect, now).await;
        state.reports.extend(reports);
        if let Some(step) = crash_after(effect) {
            bloodraven_crashpoint::hit_in(&scope, step);
        }
    }
    (latest, decision.write.is_some())
}

/// The crash point just before `effect` runs: its announcing record is durable (named
/// planned-failover crash points, `bloodraven-crashpoint`).
fn crash_before(effect: &Effect) -> Option<CrashStep> {
    match effect {
        Effect::Fence { .. } => Some(CrashStep::OperatorPlannedAfterFenceRecord),
        Effect::Promote { .. } => Some(CrashStep::OperatorPlannedAfterPromotionRecord),
        Effect::Publish { .. } => Some(CrashStep::OperatorPlannedBeforePublish),
        _ => None,
    }
}

/// The crash point just after `effect` ran, before the next record.
fn crash_after(effect: &Effect) -> Option<CrashStep> {
    match effect {
        Effect::Fence { .. } => Some(CrashStep::OperatorPlannedAfterFence),
        Effect::Promote { .. } => Some(CrashStep::OperatorPlannedAfterPromote),
        Effect::Publish { .. } => Some(CrashStep::OperatorPlannedAfterPublish),
        _ => None,
    }
}

/// Runs one effect; returns its reports.
async fn run_effect(
    input: &PassInput<'_>,
    latest: &MysqlFailoverGroup,
    effect: &Effect,
    now: Timestamp,
) -> Vec<Report> {
    let PassInput { shared, key, pools, bounds, .. } = *input;
    let credentials = input.credentials;
    tracing::debug!(namespace = %key.namespace, group = %key.name, ?effect, "planned failover: effect");
    let (reports, result) = match effect {
        Effect::TakeClaim { run_id } => {
            shared.claims.set(key, Deferral::Claim { run_id: run_id.clone() });
            (Vec::new(), Ok(()))
        }
        Effect::Fence { site, server_uuid } => {
            let fenced = effects::fence(pools.get(site), site, server_uuid, bounds).await;
            if fenced.1.is_ok() {
                shed_primary(shared, key, site).await;
            }
            fenced
        }
        Effect::KillAppConnections { site } => {
            let accounts = [&credentials.operator, &credentials.replication];
            let report =
                effects::kill_app_connections(pools.get(site), site, &accounts, bounds).await;
            (vec![report], Ok(()))
        }
        Effect::Promote { site, server_uuid } => {
            effects::promote(pools.get(site), site, server_uuid, bounds).await
        }
        Effect::Publish { site, run_id } => {
            (vec![publish(input, latest, site, run_id, now).await], Ok(()))
        }
        Effect::RefenceTarget { site } => {
            effects::refence_target(pools.get(site), site, bounds).await
        }
        Effect::Unfence { site, server_uuid, restore_channel_of } => {
            let restore = restore_channel_of.as_deref().map(|target| effects::Restore {
                target_pool: pools.get(target),
                target,
                source_address: input.addresses.get(site),
                replication: &credentials.replication,
            });
            effects::unfence(pools.get(site), site, server_uuid, restore, bounds).await
        }
        Effect::NameForReassert { site } => {
            // The source stays status.activeSite: the topology manager re-asserts it once
            // the claim is gone.
            tracing::info!(namespace = %key.namespace, group = %key.name, site, "planned failover: source named for the re-assert");
            (Vec::new(), Ok(()))
        }
        Effect::NameLastFailoverTarget { site } => {
            tracing::info!(namespace = %key.namespace, group = %key.name, site, "planned failover: target named as the last failover target");
            (Vec::new(), Ok(()))
        }
        Effect::ReleaseClaim { why } | Effect::ReleaseHold { why } => {
            tracing::info!(namespace = %key.namespace, group = %key.name, why, "planned failover: claim slot released");
            shared.claims.clear(key);
            (Vec::new(), Ok(()))
        }
        Effect::KeepClaimAsHold { run_id } => {
            shared.claims.set(key, Deferral::Hold { run_id: Some(run_id.clone()) });
            (Vec::new(), Ok(()))
        }
    };
    if let Err(error) = result {
        tracing::warn!(namespace = %key.namespace, group = %key.name, %error, "planned failover: effect failed");
    }
    reports
}

/// Strips the fenced source's `role=primary` pod label, so the `-primary` Service sheds it
/// (new application sessions cannot reach it while the drain kills the old ones). The
/// topology manager does not put it back: it labels only a writable active site.
async fn shed_primary(shared: &Shared, key: &GroupKey, site: &str) {
    use bloodraven_workloads::labels;
    use kube::ResourceExt as _;
    let pods = match shared.pods.of_group(&shared.client, &key.namespace, &key.name).await {
        Ok(pods) => pods,
        Err(error) => {
            tracing::warn!(namespace = %key.namespace, group = %key.name, %error, "planned failover: listing the group's pods to shed the source failed");
            return;
        }
    };
    let api: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(shared.client.clone(), &key.namespace);
    for pod in pods {
        let pod_labels = pod.labels();
        if pod_labels.get(labels::SITE).map(String::as_str) != Some(site)
            || pod_labels.get(labels::ROLE).map(String::as_str) != Some(labels::ROLE_PRIMARY)
        {
            continue;
        }
        let patch = serde_json::json!({
            "metadata": { "labels": { labels::ROLE: labels::ROLE_REPLICA } }
        });
        let name = pod.name_any();
        if let Err(error) = api.patch(&name, &PatchParams::default(), &Patch::Merge(patch)).await {
            tracing::warn!(namespace = %key.namespace, group = %key.name, pod = name, %error, "planned failover: shedding the source's role=primary label failed");
        }
    }
}

/// Publish: record the confirmed promotion as the topology manager's (activeSite and
/// lastFailover, under its field manager), publish DNS, write the confirmed annotation, then
/// release the claim.
async fn publish(
    input: &PassInput<'_>,
    latest: &MysqlFailoverGroup,
    site: &str,
    run_id: &str,
    now: Timestamp,
) -> Report {
    let PassInput { shared, key, groups, facts, .. } = *input;
    let status = latest.status.clone().unwrap_or_default();
    let fenced = status
        .planned_failover
        .as_ref()
        .and_then(|block| block.fence.as_ref())
        .and_then(|fence| fence.gtid_set.clone());
    let last = LastFailover {
        time: Some(crate::status::time(now)),
        target: Some(site.to_owned()),
        promotion_gtid_executed: fenced,
        ..LastFailover::default()
    };
    let body = render(&PollOutcome {
        facts,
        active: Some(site),
        steps: &[],
        failures: &[],
        blocked: &[],
        last_failover: Some(last),
        previous: &status.conditions,
        previous_sites: &status.sites,
        generation: latest.metadata.generation,
        now,
    });
    let recorded = groups
        .patch_status(&key.name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(body))
        .await;
    let latest = match recorded {
        Ok(group) => group,
        Err(error) => {
            tracing::warn!(namespace = %key.namespace, group = %key.name, %error, "planned failover: recording the promotion failed");
            return Report::Published { dns_error: None, marked: false };
        }
    };
    crate::dns::reconcile(shared, &latest, key, Some(site), facts).await;
    let marked = match CompactTime::truncating(now)
        .and_then(|since| RunSince::new(PLANNED_FAILOVER_CONFIRMED, run_id, since).ok())
    {
        Some(value) => {
            let change = [AnnotationChange::Set {
                key: PLANNED_FAILOVER_CONFIRMED,
                value: value.to_string(),
            }];
            match write::annotations(groups, &latest, &change, false).await {
                Ok(_) => true,
                Err(error) => {
                    tracing::warn!(namespace = %key.namespace, group = %key.name, %error, "planned failover: the confirmed annotation was not written");
                    false
                }
            }
        }
        None => false,
    };
    if marked {
        shared.claims.clear(key);
    }
    Report::Published { dns_error: None, marked }
}

/// The decision's log lines, at their catalog levels, fields first.
fn log_lines(key: &GroupKey, decision: &Decision) {
    for line in &decision.logs {
        let fields: Vec<String> =
            line.fields.iter().map(|(name, value)| format!("{name}={value}")).collect();
        let fields = fields.join(" ");
        match line.level {
            LogLevel::Info => {
                tracing::info!(namespace = %key.namespace, group = %key.name, fields, "{}", line.message)
            }
            LogLevel::Warn => {
                tracing::warn!(namespace = %key.namespace, group = %key.name, fields, "{}", line.message)
            }
            LogLevel::Error => {
                tracing::error!(namespace = %key.namespace, group = %key.name, fields, "{}", line.message)
            }
        }
    }
}

/// The decision's Events.
async fn events(shared: &Shared, group: &MysqlFailoverGroup, decision: &Decision) {
    let reference = group.object_ref(&());
    for event in &decision.events {
        let published = Event {
            type_: match event.event_type {
                CatalogEventType::Normal => EventType::Normal,
                CatalogEventType::Warning => EventType::Warning,
            },
            reason: event.reason.to_owned(),
            note: Some(event.message.clone()),
            action: event.reason.to_owned(),
            secondary: None,
        };
        if let Err(error) = shared.recorder.publish(&published, &reference).await {
            tracing::debug!(%error, reason = event.reason, "event not recorded");
        }
    }
}
