//! The bootstrap restore's decisions (pure): the group, its facts, the Job's state and the
//! target's Deployment come in; what to record in `status.restore` and what to do come out.
//!
//! Backup-and-restore document, "Restore at bootstrap": dynamic target resolution, the
//! rolled-out Deployment gate, the Job observed to completion whatever its target's state,
//! "A failed bootstrap restore" (Failed stays Failed until the Job is deleted, then the Job is
//! rebuilt) and "Applications wait for the restore".

use std::collections::BTreeMap;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::{
    PitrToken, PointInTimeResult, RestorePhase, RestoreStatus, SiteRole, SiteSpec, SiteState,
};
use bloodraven_facts::SiteFacts;
use serde_json::{Value, json};

/// Whether applications are kept off the group: `spec.initFromBackup` is set and
/// `status.restore.phase` is not Succeeded (unobserved, Pending, Running or Failed).
pub fn gated(group: &MysqlFailoverGroup) -> bool {
    group.spec.init_from_backup.is_some()
        && !succeeded(group.status.as_ref().and_then(|s| s.restore.as_ref()))
}

/// Whether the recorded bootstrap restore succeeded.
pub fn succeeded(restore: Option<&RestoreStatus>) -> bool {
    restore.and_then(|r| r.phase.as_ref()) == Some(&RestorePhase::Succeeded)
}

/// The default seed of a true fresh deploy: the first `splitBrainPolicy.sitePriorities` entry
/// naming a PrimaryCandidate, else the first PrimaryCandidate of `spec.sites`.
pub fn default_seed(sites: &[SiteSpec], priorities: &[String]) -> Option<String> {
    let candidate = |name: &str| {
        sites
            .iter()
            .any(|site| site.name == name && site.effective_role() == SiteRole::PrimaryCandidate)
    };
    priorities.iter().find(|name| candidate(name)).cloned().or_else(|| {
        sites
            .iter()
            .find(|site| site.effective_role() == SiteRole::PrimaryCandidate)
            .map(|site| site.name.clone())
    })
}

/// The restore Job's name: `mysql-<group>-restore` (a name over 63 characters keeps its first
/// 54 and `-` plus an 8-character hash).
pub fn job_name(group: &str) -> String {
    let name = format!("mysql-{group}-restore");
    if name.len() <= 63 {
        return name;
    }
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    let head: String = name.chars().take(54).collect();
    format!("{}-{:08x}", head.trim_end_matches('-'), hash & 0xffff_ffff)
}

/// The target site's Deployment, as far as the rollout gate needs it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rollout {
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `status.observedGeneration`.
    pub observed_generation: Option<i64>,
    /// `status.updatedReplicas`.
    pub updated_replicas: Option<i64>,
    /// `status.readyReplicas`.
    pub ready_replicas: Option<i64>,
}

/// The rolled-out Deployment gate: a fresh Deployment (generation ≤ 1) needs one ready replica
/// (its observedGeneration may lag); any other needs observedGeneration ≥ generation, one
/// updated and one ready replica.
pub fn rolled_out(rollout: &Rollout) -> bool {
    let ready = rollout.ready_replicas.unwrap_or(0) >= 1;
    if rollout.generation.unwrap_or(0) <= 1 {
        return ready;
    }
    ready
        && rollout.updated_replicas.unwrap_or(0) >= 1
        && rollout.observed_generation.unwrap_or(0) >= rollout.generation.unwrap_or(0)
}

/// The restore Job as the API server shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    /// No Job of that name.
    Absent,
    /// It runs (or waits for its pod).
    Running,
    /// It completed.
    Succeeded,
    /// It failed; the detail its status (or termination message) gave.
    Failed {
        /// What the Job said.
        detail: String,
    },
}

/// What one poll sees.
#[derive(Clone, Debug)]
pub struct View<'a> {
    /// The group's name (for messages and the Job's name).
    pub group: &'a str,
    /// Its namespace (for the recovery's commands).
    pub namespace: &'a str,
    /// `status.restore` (default when unobserved).
    pub restore: &'a RestoreStatus,
    /// `status.activeSite`.
    pub active_site: Option<&'a str>,
    /// This poll's facts.
    pub facts: &'a [SiteFacts],
    /// The default seed ([`default_seed`]).
    pub seed: Option<&'a str>,
    /// Each site's Deployment (missing: not found).
    pub rollouts: &'a BTreeMap<String, Rollout>,
    /// The restore Job.
    pub job: &'a JobState,
    /// With `pointInTime`: what the Job rendered, which its verdict must match
    /// ([`super::pitr::Expected::from_job`]; `None` without pointInTime).
    pub pitr: Option<&'a super::pitr::Expected>,
    /// The termination message of the Job's main container (the verdict) once it succeeded.
    pub verdict: Option<&'a str>,
}

/// What the poll does.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Nothing to record or do.
    Idle,
    /// Record Pending with this message; `unavailable` names an active site observed
    /// Unreachable or Unknown (the RestoreTargetUnavailable Event).
    Wait {
        /// Why.
        message: String,
        /// The refused active site.
        unavailable: Option<String>,
    },
    /// Record the Job (Running, `targetSite`, `jobName`, `startTime`) and only then create it.
    CreateJob {
        /// The seed it loads.
        site: String,
    },
    /// A Job exists that the record does not show Running: record Running.
    Running {
        /// The seed, as recorded or the active site.
        site: Option<String>,
    },
    /// The Job completed: record Succeeded; the empty sites are cloned from the seed next.
    Succeeded,
    /// The Job failed: record Failed, Ready=False/InitFromBackupFailed, the RestoreFailed
    /// Event with the recovery.
    Failed {
        /// The message, recovery included.
        message: String,
    },
    /// A point-in-time restore refused (a step's token, or a verdict not accepted): as
    /// [`Decision::Failed`], with the token as `status.restore.reason`.
    Refused {
        /// The token.
        reason: PitrToken,
        /// The refusal's line, recovery included.
        message: String,
    },
    /// A point-in-time restore's Job completed and its verdict was accepted: record Succeeded
    /// with `provenance.pointInTime`; the Warning Events of what it excluded or cut short.
    Replayed {
        /// The accepted verdict.
        point_in_time: Box<PointInTimeResult>,
    },
}

/// The recovery a failed bootstrap restore's Event and message give.
pub fn recovery(group: &str, namespace: &str, job: &str) -> String {
    format!(
        "If the cause is outside spec.initFromBackup (a missing Secret, the backup's profile, the \
         source's contents, the restore account), fix it; if the Job log shows \
         BLOODRAVEN_LOAD_START, empty the target first (kubectl delete pvc,pod -l \
         app.kubernetes.io/instance={group},app.kubernetes.io/name=mysql -n {namespace}, then wait \
         until every claim is Bound and every MySQL pod Running); then delete the Job {job} and \
         the operator rebuilds it. If the cause is in spec.initFromBackup, which cannot change, \
         delete the group (it never served) and create it again with the corrected block"
    )
}

/// One poll's decision. See the module documentation.
pub fn decide(view: &View<'_>) -> Decision {
    let phase = view.restore.phase.as_ref();
    if phase == Some(&RestorePhase::Succeeded) {
        return Decision::Idle;
    }
    let job = job_name(view.group);
    match view.job {
        // A Job that exists is observed to completion whatever its target's state.
        JobState::Succeeded => match view.pitr {
            None => Decision::Succeeded,
            // A refused verdict is recorded once and not re-read.
            Some(_) if phase == Some(&RestorePhase::Failed) => Decision::Idle,
            Some(expected) => match super::pitr::accept(expected, view.verdict) {
                Ok(point_in_time) => Decision::Replayed { point_in_time: Box::new(point_in_time) },
                Err(why) => Decision::Refused {
                    reason: PitrToken::PitrCoverageInvalid,
                    message: format!(
                        "PITRCoverageInvalid: {why} (restore Job {job}). {}",
                        recovery(view.group, view.namespace, &job)
                    ),
                },
            },
        },
        JobState::Failed { detail } => {
            if phase == Some(&RestorePhase::Failed) {
                return Decision::Idle;
            }
            if view.pitr.is_some()
                && let Some((reason, line)) = super::pitr::refusal_in(detail)
            {
                return Decision::Refused {
                    reason,
                    message: format!(
                        "{line} (restore Job {job}). {}",
                        recovery(view.group, view.namespace, &job)
                    ),
                };
            }
            let detail = if detail.is_empty() {
                "no detail in its status".to_owned()
            } else {
                detail.clone()
            };
            Decision::Failed {
                message: format!(
                    "the restore Job {job} failed: {detail}. {}",
                    recovery(view.group, view.namespace, &job)
                ),
            }
        }
        JobState::Running => {
            if phase == Some(&RestorePhase::Running)
                && view.restore.job_name.as_deref() == Some(job.as_str())
            {
                return Decision::Idle;
            }
            let site =
                view.restore.target_site.clone().or_else(|| view.active_site.map(str::to_owned));
            Decision::Running { site }
        }
        // No Job: never created, announced but not created (a restart in between), or deleted
        // by a human to retry: resolve the target again.
        JobState::Absent => resolve(view),
    }
}

/// Dynamic target-site resolution and the rollout gate.
fn resolve(view: &View<'_>) -> Decision {
    let wait = |message: String, unavailable: Option<String>| {
        let same = view.restore.phase.as_ref() == Some(&RestorePhase::Pending)
            && view.restore.message.as_deref() == Some(message.as_str());
        if same { Decision::Idle } else { Decision::Wait { message, unavailable } }
    };
    let Some(active) = view.active_site else {
        let seed = view.seed.unwrap_or("(no PrimaryCandidate)");
        return wait(
            format!(
                "waiting for the seed {seed}: every site must answer with no transactions before \
                 it is made writable and published as the active site{}",
                awaiting(view.facts)
            ),
            None,
        );
    };
    let fact = view.facts.iter().find(|fact| fact.name == active && fact.observed_at.is_some());
    match fact.map(|fact| &fact.state) {
        Some(SiteState::Writable) => {}
        None | Some(SiteState::ReadOnly) => {
            return wait(
                format!("waiting for the active site {active} to be observed writable"),
                None,
            );
        }
        Some(other) => {
            return wait(
                format!(
                    "the active site {active} is observed {}: the restore refuses to load a dump \
                     into a site that may be recovering, and waits",
                    other.as_str()
                ),
                Some(active.to_owned()),
            );
        }
    }
    match view.rollouts.get(active) {
        Some(rollout) if rolled_out(rollout) => Decision::CreateJob { site: active.to_owned() },
        Some(_) => {
            wait(format!("waiting for the Deployment of {active} to be fully rolled out"), None)
        }
        None => wait(format!("waiting for the Deployment of {active} to exist"), None),
    }
}

/// `: <site> <why>, …` for the sites that keep a fresh deploy from seeding, or "".
fn awaiting(facts: &[SiteFacts]) -> String {
    let not_ready: Vec<String> = facts
        .iter()
        .filter_map(|fact| {
            if !matches!(fact.state, SiteState::Writable | SiteState::ReadOnly) {
                Some(format!("{} is {}", fact.name, fact.state.as_str()))
            } else if !empty(fact) {
                Some(format!("{} holds transactions", fact.name))
            } else {
                None
            }
        })
        .collect();
    if not_ready.is_empty() { String::new() } else { format!(" ({})", not_ready.join(", ")) }
}

/// A site that answered with an empty `gtid_executed`.
pub fn empty(fact: &SiteFacts) -> bool {
    fact.gtid_executed.as_ref().is_some_and(bloodraven_gtid::GtidSet::is_empty)
}

/// The `status.restore` merge patch a decision records (`None`: nothing to record).
/// `now` is RFC 3339.
pub fn record(view: &View<'_>, decision: &Decision, now: &str) -> Option<Value> {
    let job = job_name(view.group);
    Some(match decision {
        Decision::Idle => return None,
        Decision::Wait { message, .. } => json!({
            "phase": "Pending",
            "reason": Value::Null,
            "message": message,
            "completionTime": Value::Null,
        }),
        Decision::CreateJob { site } => json!({
            "phase": "Running",
            "reason": Value::Null,
            "targetSite": site,
            "jobName": job,
            "startTime": now,
            "completionTime": Value::Null,
            "message": format!("restore Job {job} is loading the dump into {site}"),
        }),
        Decision::Running { site } => json!({
            "phase": "Running",
            "reason": Value::Null,
            "targetSite": site,
            "jobName": job,
            "message": format!("restore Job {job} is running"),
        }),
        Decision::Succeeded => json!({
            "phase": "Succeeded",
            "reason": Value::Null,
            "jobName": job,
            "completionTime": now,
            "message": format!("restore Job {job} succeeded; the other sites are cloned from the seed"),
        }),
        Decision::Failed { message } => json!({
            "phase": "Failed",
            "jobName": job,
            "completionTime": now,
            "message": message,
        }),
        Decision::Refused { reason, message } => json!({
            "phase": "Failed",
            "reason": reason.as_str(),
            "jobName": job,
            "completionTime": now,
            "message": message,
        }),
        Decision::Replayed { point_in_time } => {
            let outcome = point_in_time.outcome.as_ref().map_or("", |o| o.as_str());
            json!({
                "phase": "Succeeded",
                "reason": Value::Null,
                "jobName": job,
                "completionTime": now,
                "message": format!(
                    "restore Job {job} loaded the backup and replayed {} transaction(s) to {} ({outcome}); the other sites are cloned from the seed",
                    point_in_time.transactions.unwrap_or(0),
                    point_in_time.stop_time.as_deref().unwrap_or("the archive head"),
                ),
                "provenance": { "pointInTime": point_in_time },
            })
        }
    })
}

/// The `status.restore` merge patch of a Job that could not be built (no Job is created):
/// Failed, with the refusal's token as the reason when the message starts with one
/// (PITRBackupFiltered, PITRArchiveDestinationShared).
pub fn build_failed(site: &str, message: &str, now: &str) -> Value {
    let reason = super::pitr::refusal_in(message).map(|(token, _)| token.as_str().to_owned());
    json!({
        "phase": "Failed",
        "reason": reason,
        "targetSite": site,
        "jobName": Value::Null,
        "completionTime": now,
        "message": message,
    })
}
