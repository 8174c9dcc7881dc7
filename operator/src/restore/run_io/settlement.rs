//! The end of a run: a failed run's queue settled (discarded, restored or held), then any
//! fence still recorded released.

use bloodraven_crd::group::{
    MysqlFailoverGroupStatus, RestoreInPlacePhase, RestoreInPlaceStatus, RestoreReclones,
    RestoreReclonesPhase,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use super::restoring::job_outcome;
use super::resuming::release_or_report;
use super::{RunContext, RunIoError, RunMemory, RunPassed, kube};
use crate::restore::core_run::{self, FailedRun, PrimaryRead, Settlement};
use crate::restore::job::RUN_LABEL;
use crate::restore::queue_io::merge_value;
use crate::restore::run_sql;

/// Whether every pod of the run's Job has terminated (`None`: unknown).
async fn pods_terminated(
    ctx: &RunContext<'_>,
    run: &RestoreInPlaceStatus,
) -> Result<Option<bool>, RunIoError> {
    let namespace = ctx.group.namespace().unwrap_or_default();
    if let Some(name) = run.job_name.as_deref() {
        let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
        if let Some(job) = jobs.get_opt(name).await.map_err(kube("reading the restore Job"))? {
            let active = job.status.as_ref().and_then(|s| s.active).unwrap_or(0);
            return Ok(Some(active == 0 && job_outcome(&job).is_some()));
        }
    }
    let Some(run_id) = run.run_id.as_deref() else { return Ok(None) };
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let listed = pods
        .list(&ListParams::default().labels(&format!("{RUN_LABEL}={run_id}")))
        .await
        .map_err(kube("listing the restore Job's pods"))?;
    Ok(Some(listed.items.iter().all(|pod| {
        matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"))
    })))
}

pub(super) async fn ended(
    ctx: &RunContext<'_>,
    status: &MysqlFailoverGroupStatus,
    run: &RestoreInPlaceStatus,
    memory: &mut RunMemory,
) -> Result<RunPassed, RunIoError> {
    let run_id = run.run_id.as_deref();
    // A failed run's queue is settled before the fence is released.
    if run.phase == Some(RestoreInPlacePhase::Failed)
        && let Some(queue) = status.restore_reclones.as_ref().filter(|q| {
            q.run_id.as_deref() == run_id && q.phase == Some(RestoreReclonesPhase::Armed)
        })
    {
        let job_creating = run.job_creating == Some(true);
        let pods = if job_creating { pods_terminated(ctx, run).await? } else { Some(true) };
        let site = run.target_site.clone().unwrap_or_default();
        let read = match ctx.pools.get(&site) {
            Some(pool) => run_sql::gtid_executed(pool, ctx.bounds).await.ok(),
            None => None,
        };
        let primary = match read {
            Some(gtid) => {
                memory.unreadable_since = None;
                PrimaryRead::Read(gtid)
            }
            None => {
                PrimaryRead::Unreadable { since: *memory.unreadable_since.get_or_insert(ctx.now) }
            }
        };
        let settled = core_run::settle(&FailedRun {
            queue,
            job_creating,
            pods_terminated: pods,
            primary,
            ended: run.completion_time.as_ref().map_or(ctx.now, |t| t.0),
            now: ctx.now,
        });
        return settle(ctx, queue, settled).await;
    }
    if status.restore_offline_fence.is_some() {
        if !release_or_report(ctx, status).await? {
            return Ok(RunPassed::Acted);
        }
        ctx.write(json!({ "restoreOfflineFence": null }), "clearing the offline fence record")
            .await?;
        ctx.event(
            false,
            "RestoreOfflineFenceReleased",
            "offline_mode is back to its recorded value".into(),
        )
        .await;
        return Ok(RunPassed::Acted);
    }
    Ok(RunPassed::Idle)
}

async fn settle(
    ctx: &RunContext<'_>,
    queue: &RestoreReclones,
    settled: Settlement,
) -> Result<RunPassed, RunIoError> {
    let (value, reason, note) = match settled {
        Settlement::Wait { message } => {
            tracing::info!(group = %ctx.group.name_any(), message, "failed restore: settlement waits");
            return Ok(RunPassed::Idle);
        }
        Settlement::Discard => (
            Value::Null,
            "RestoreReclonesDiscarded",
            format!(
                "the failed restore left the primary unchanged; {} resume replicating",
                queue.pending.join(", ")
            ),
        ),
        Settlement::Restore(earlier) => (
            merge_value(Some(&earlier)).unwrap_or(Value::Null),
            "RestoreReclonesRestored",
            format!(
                "the failed restore never touched the primary; the earlier queue ({}) drains again",
                earlier.pending.join(", ")
            ),
        ),
        Settlement::Hold(held) => (
            merge_value(Some(&held)).unwrap_or(Value::Null),
            "RestoreReclonesHeld",
            format!(
                "the failed restore may have changed the primary; {} are held with their pre-restore data. Decide: back up a held site and restore from it, set status.restoreReclones.phase to Draining to keep the primary's data, or remove status.restoreReclones",
                held.pending.join(", ")
            ),
        ),
    };
    if value.is_null() && reason != "RestoreReclonesDiscarded" {
        return Ok(RunPassed::Idle);
    }
    ctx.write(json!({ "restoreReclones": value }), "settling the failed restore's queue").await?;
    let warning = reason == "RestoreReclonesHeld";
    ctx.event(warning, reason, note).await;
    Ok(RunPassed::Acted)
}
