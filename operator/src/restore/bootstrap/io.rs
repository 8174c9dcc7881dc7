//! The bootstrap restore's IO, one pass per topology poll (before the plan): read the restore
//! Job and the sites' Deployments, ask [`super::plan::decide`], record `status.restore` (a
//! merge patch conditioned on the resourceVersion of the poll's read) BEFORE the side effect it
//! announces, then create the Job or publish the Event. After success, the empty sites are
//! cloned from the seed in the background ([`clones`]).

use std::collections::BTreeMap;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_crd::group::{PointInTimeOutcome, PointInTimeResult};
use bloodraven_facts::SiteFacts;
use bloodraven_workloads::names::SiteNames;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::events::Recorder;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::job::{BootstrapJobInput, build};
use super::pitr::{Expected, earliest_failure, main_message};
use super::plan::{Decision, JobState, Rollout, View, decide, default_seed, job_name, record};
use crate::observe::Account;
use crate::restore::clone::reclone_site;
use crate::restore::queue_io::publish;

/// A failed clone is retried this long after its failure.
pub const RETRY_AFTER: SignedDuration = SignedDuration::from_mins(1);

/// Why a pass failed (the next poll retries).
#[derive(Debug, thiserror::Error)]
pub enum BootstrapIoError {
    /// An API call failed.
    #[error("bootstrap restore: {what} failed: {source}; the next poll retries")]
    Kube {
        /// What was being done.
        what: &'static str,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
}

fn kube(what: &'static str) -> impl FnOnce(kube::Error) -> BootstrapIoError {
    move |source| BootstrapIoError::Kube { what, source }
}

/// A pass's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passed {
    /// Nothing recorded or done.
    Idle,
    /// A record was written or a Job created: the poll ends here.
    Acted,
}

/// What the pass needs from the manager.
pub struct BootstrapContext<'a> {
    /// The client.
    pub client: &'a kube::Client,
    /// Events.
    pub recorder: &'a Recorder,
    /// The group as just read.
    pub group: &'a MysqlFailoverGroup,
    /// This poll's facts.
    pub facts: &'a [SiteFacts],
    /// The operator account (the restore account, and the clone's).
    pub account: &'a Account,
    /// The time of this poll.
    pub now: Timestamp,
}

impl BootstrapContext<'_> {
    fn namespace(&self) -> String {
        self.group.namespace().unwrap_or_default()
    }

    async fn write(&self, restore: Value) -> Result<(), BootstrapIoError> {
        let body = json!({
            "metadata": { "resourceVersion": self.group.resource_version() },
            "status": { "restore": restore },
        });
        let groups: Api<MysqlFailoverGroup> =
            Api::namespaced(self.client.clone(), &self.namespace());
        groups
            .patch_status(&self.group.name_any(), &PatchParams::default(), &Patch::Merge(body))
            .await
            .map_err(kube("recording status.restore"))?;
        Ok(())
    }
}

/// The Job's state: its conditions, else its counters.
pub fn job_state(job: Option<&Job>) -> JobState {
    let Some(job) = job else { return JobState::Absent };
    let Some(status) = job.status.as_ref() else { return JobState::Running };
    for condition in status.conditions.iter().flatten().filter(|c| c.status == "True") {
        match condition.type_.as_str() {
            "Complete" | "SuccessCriteriaMet" => return JobState::Succeeded,
            "Failed" | "FailureTarget" => {
                let detail = [condition.reason.as_deref(), condition.message.as_deref()]
                    .into_iter()
                    .flatten()
                    .filter(|text| !text.is_empty())
                    .collect::<Vec<_>>()
                    .join(": ");
                return JobState::Failed { detail };
            }
            _ => {}
        }
    }
    if status.succeeded.unwrap_or(0) > 0 {
        return JobState::Succeeded;
    }
    if status.failed.unwrap_or(0) > 0 && status.active.unwrap_or(0) == 0 {
        return JobState::Failed { detail: String::new() };
    }
    JobState::Running
}

/// One pass. See the module documentation.
pub async fn pass(ctx: &BootstrapContext<'_>) -> Result<Passed, BootstrapIoError> {
    let group = ctx.group;
    if group.spec.init_from_backup.is_none() {
        return Ok(Passed::Idle);
    }
    let status = group.status.clone().unwrap_or_default();
    let restore = status.restore.clone().unwrap_or_default();
    if super::plan::succeeded(Some(&restore)) {
        return Ok(Passed::Idle);
    }
    let namespace = ctx.namespace();
    let group_name = group.name_any();
    let name = job_name(&group_name);
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    let job = jobs.get_opt(&name).await.map_err(kube("reading the restore Job"))?;
    let expected = job.as_ref().and_then(Expected::from_job);
    let mut state = job_state(job.as_ref());
    let mut verdict = None;
    if expected.is_some() && matches!(state, JobState::Succeeded | JobState::Failed { .. }) {
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
        let listed = pods
            .list(&ListParams::default().labels(&format!("job-name={name}")))
            .await
            .map_err(kube("listing the restore Job's pods"))?;
        let pod = listed.items.iter().max_by_key(|pod| pod.metadata.creation_timestamp.clone());
        match &mut state {
            JobState::Failed { detail } => {
                if let Some(found) = pod.and_then(earliest_failure) {
                    *detail = found;
                }
            }
            _ => verdict = pod.and_then(|pod| main_message(pod, "restore")),
        }
    }
    let job = state;
    let mut rollouts = BTreeMap::new();
    if job == JobState::Absent {
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
        for site in &group.spec.sites {
            let deployment = SiteNames::new(&group_name, &site.name).deployment;
            let Some(found) =
                deployments.get_opt(&deployment).await.map_err(kube("reading a Deployment"))?
            else {
                continue;
            };
            let status = found.status.unwrap_or_default();
            rollouts.insert(
                site.name.clone(),
                Rollout {
                    generation: found.metadata.generation,
                    observed_generation: status.observed_generation,
                    updated_replicas: status.updated_replicas.map(i64::from),
                    ready_replicas: status.ready_replicas.map(i64::from),
                },
            );
        }
    }
    let priorities = group
        .spec
        .split_brain_policy
        .as_ref()
        .map(|policy| policy.site_priorities.clone())
        .unwrap_or_default();
    let seed = default_seed(&group.spec.sites, &priorities);
    let view = View {
        group: &group_name,
        namespace: &namespace,
        restore: &restore,
        active_site: status.active_site.as_deref(),
        facts: ctx.facts,
        seed: seed.as_deref(),
        rollouts: &rollouts,
        job: &job,
        pitr: expected.as_ref(),
        verdict: verdict.as_deref(),
    };
    let decision = decide(&view);
    let now = ctx.now.to_string();
    match &decision {
        Decision::Idle => Ok(Passed::Idle),
        Decision::CreateJob { site } => {
            let built = match build_job(ctx, site).await? {
                Ok(built) => built,
                Err(message) => {
                    // No Job: record the failure once (a fix outside the block is retried
                    // on the next pass; an unchanged refusal is not written again).
                    if restore.phase == Some(bloodraven_crd::group::RestorePhase::Failed)
                        && restore.message.as_deref() == Some(message.as_str())
                    {
                        return Ok(Passed::Idle);
                    }
                    ctx.write(super::plan::build_failed(site, &message, &now)).await?;
                    publish(ctx.recorder, group, true, "RestoreBuildFailed", message).await;
                    return Ok(Passed::Acted);
                }
            };
            if let Some(patch) = record(&view, &decision, &now) {
                ctx.write(patch).await?;
            }
            let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
            match secrets.create(&PostParams::default(), &built.secret).await {
                Ok(_) => {}
                Err(kube::Error::Api(answer)) if answer.code == 409 => {
                    let secret_name = built.secret.name_any();
                    secrets
                        .replace(&secret_name, &PostParams::default(), &built.secret)
                        .await
                        .map_err(kube("replacing the restore Job's Secret"))?;
                }
                Err(error) => return Err(kube("creating the restore Job's Secret")(error)),
            }
            match jobs.create(&PostParams::default(), &built.job).await {
                Ok(_) => {}
                Err(kube::Error::Api(answer)) if answer.code == 409 => {}
                Err(error) => return Err(kube("creating the restore Job")(error)),
            }
            tracing::info!(namespace, group = %group_name, site, job = %name, "bootstrap restore Job created");
            Ok(Passed::Acted)
        }
        other => {
            if let Some(patch) = record(&view, other, &now) {
                ctx.write(patch).await?;
            }
            match other {
                Decision::Wait { message, unavailable: Some(site) } => {
                    let note = format!("restore target {site} unavailable: {message}");
                    publish(ctx.recorder, group, true, "RestoreTargetUnavailable", note).await;
                }
                Decision::Failed { message } => {
                    tracing::warn!(namespace, group = %group_name, %message, "bootstrap restore failed");
                    publish(ctx.recorder, group, true, "RestoreFailed", message.clone()).await;
                }
                Decision::Refused { reason, message } => {
                    tracing::warn!(namespace, group = %group_name, reason = reason.as_str(), %message, "point-in-time bootstrap restore refused");
                    publish(ctx.recorder, group, true, "RestoreFailed", message.clone()).await;
                }
                Decision::Replayed { point_in_time } => {
                    tracing::info!(
                        namespace,
                        group = %group_name,
                        transactions = point_in_time.transactions.unwrap_or(0),
                        sha256 = point_in_time.gtid_executed_sha256.as_deref().unwrap_or(""),
                        "point-in-time bootstrap restore certified"
                    );
                    for (reason, note) in replay_warnings(point_in_time) {
                        publish(ctx.recorder, group, true, reason, note).await;
                    }
                }
                _ => {}
            }
            Ok(Passed::Acted)
        }
    }
}

/// The Warning Events of an accepted replay: excluded divergent transactions, on-history
/// exclusions and a partial outcome.
pub fn replay_warnings(result: &PointInTimeResult) -> Vec<(&'static str, String)> {
    let mut warnings = Vec::new();
    let divergent = result.excluded_divergent_transaction_count.unwrap_or(0);
    if divergent > 0 {
        warnings.push((
            "PITRDivergentHistoryExcluded",
            format!(
                "the replay excluded {divergent} transaction(s) that were not on the target history (pointInTime.excludedDivergentTransactionCount)"
            ),
        ));
    }
    let on_history = result.on_history_exclusion_count.unwrap_or(0);
    if on_history > 0 {
        warnings.push((
            "PITROnHistoryTransactionsExcluded",
            format!(
                "{on_history} excluded transaction(s) on the target history precede replayed ones; later row images may carry their effects, so the result is not certified for them; check the affected rows"
            ),
        ));
    }
    if result.outcome == Some(PointInTimeOutcome::Partial) {
        warnings.push((
            "PITRReplayTruncated",
            format!(
                "nothing was archived at or after the requested target {}; replayed to the archive head, newestReplayedCommitTime {}",
                result.stop_time.as_deref().unwrap_or("?"),
                result.newest_replayed_commit_time.as_deref().unwrap_or("unknown")
            ),
        ));
    }
    warnings
}

/// The Job for `site`, or why it cannot be built.
async fn build_job(
    ctx: &BootstrapContext<'_>,
    site: &str,
) -> Result<Result<super::job::BootstrapJob, String>, BootstrapIoError> {
    let Some(init) = ctx.group.spec.init_from_backup.as_ref() else {
        return Ok(Err("spec.initFromBackup is gone".to_owned()));
    };
    let Some(backup_name) = init.source.backup_ref.as_ref().map(|r| r.name.clone()) else {
        return Ok(Err(super::job::BootstrapJobError::NoBackupRef.to_string()));
    };
    let backups: Api<MysqlBackup> = Api::namespaced(ctx.client.clone(), &ctx.namespace());
    let Some(backup) =
        backups.get_opt(&backup_name).await.map_err(kube("reading the MysqlBackup"))?
    else {
        return Ok(Err(format!(
            "MysqlBackup {backup_name} (spec.initFromBackup.source.backupRef) does not exist in namespace {}",
            ctx.namespace()
        )));
    };
    let Some(site_spec) = ctx.group.spec.sites.iter().find(|s| s.name == site) else {
        return Ok(Err(format!("the target site {site} is not in spec.sites")));
    };
    let mut credentials = BTreeMap::new();
    credentials.insert("username".to_owned(), ByteString(ctx.account.user.clone().into_bytes()));
    credentials
        .insert("password".to_owned(), ByteString(ctx.account.password.clone().into_bytes()));
    let image = ctx
        .group
        .spec
        .sidecar
        .as_ref()
        .and_then(|sidecar| sidecar.image.clone())
        .unwrap_or_else(|| bloodraven_workloads::DEFAULT_SIDECAR_IMAGE.to_owned());
    Ok(build(&BootstrapJobInput {
        group: ctx.group,
        backup: &backup,
        site: site_spec,
        image,
        operator_credentials: &credentials,
    })
    .map_err(|error| error.to_string()))
}

/// What this process remembers about the post-bootstrap clones.
#[derive(Debug, Default)]
pub struct CloneMemory {
    running: BTreeMap<String, JoinHandle<Result<(), String>>>,
    failed_at: BTreeMap<String, Timestamp>,
}

/// Starts a background clone from `donor` into every site of `targets` that has none running
/// and did not fail within [`RETRY_AFTER`]; collects finished clones. Returns the sites whose
/// clone still runs.
pub async fn clones(
    memory: &mut CloneMemory,
    targets: &[String],
    donor: Option<&str>,
    addresses: &BTreeMap<String, (String, u16)>,
    account: &Account,
    now: Timestamp,
) {
    let finished: Vec<String> = memory
        .running
        .iter()
        .filter(|(_, task)| task.is_finished())
        .map(|(s, _)| s.clone())
        .collect();
    for site in finished {
        let Some(task) = memory.running.remove(&site) else { continue };
        match task.await {
            Ok(Ok(())) => {
                tracing::info!(site, "bootstrap clone finished");
                memory.failed_at.remove(&site);
            }
            Ok(Err(error)) => {
                tracing::warn!(site, %error, "bootstrap clone failed; retried in a minute");
                memory.failed_at.insert(site, now);
            }
            Err(error) => {
                tracing::warn!(site, %error, "bootstrap clone task ended");
                memory.failed_at.insert(site, now);
            }
        }
    }
    let Some(donor) = donor else { return };
    let Some(donor_address) = addresses.get(donor).cloned() else { return };
    for site in targets {
        if memory.running.contains_key(site)
            || memory.failed_at.get(site).is_some_and(|at| now < *at + RETRY_AFTER)
        {
            continue;
        }
        let Some(recipient) = addresses.get(site).cloned() else { continue };
        tracing::info!(site, donor, "bootstrap clone starts");
        let task = tokio::spawn(clone_site(recipient, donor_address.clone(), account.clone()));
        memory.running.insert(site.clone(), task);
    }
}

/// The clone of one site ([`reclone_site`]), its error as the bootstrap records it.
async fn clone_site(
    recipient: (String, u16),
    donor: (String, u16),
    account: Account,
) -> Result<(), String> {
    reclone_site(&recipient, &donor, &account.user, &account.password)
        .await
        .map_err(|error| error.to_string())
}
