//! Resuming: the fence put back as recorded, then Succeeded and the queue released.

use bloodraven_crashpoint::Step as CrashStep;
use bloodraven_crd::group::{MysqlFailoverGroupStatus, RestoreInPlaceStatus, RestoreReclonesPhase};
use kube::ResourceExt;
use serde_json::json;

use super::{RunContext, RunIoError, RunPassed, time};
use crate::restore::core_run::{self};
use crate::restore::queue_io::merge_value;
use crate::restore::run_sql;

/// Puts `offline_mode` back as the fence recorded it and reads it back.
async fn release_fence(
    ctx: &RunContext<'_>,
    site: &str,
    prior: Option<bool>,
) -> Result<(), String> {
    let pool = ctx.pools.get(site).ok_or_else(|| format!("no address for {site}"))?;
    run_sql::exec(pool, core_run::release_statement(prior), ctx.bounds)
        .await
        .map_err(|why| why.to_string())?;
    let now = run_sql::offline_mode(pool, ctx.bounds).await.map_err(|why| why.to_string())?;
    if now != prior.unwrap_or(false) {
        return Err(format!("offline_mode reads {now} after it was put back"));
    }
    Ok(())
}

pub(super) async fn release_or_report(
    ctx: &RunContext<'_>,
    status: &MysqlFailoverGroupStatus,
) -> Result<bool, RunIoError> {
    let Some(fence) = status.restore_offline_fence.as_ref() else { return Ok(true) };
    let site = fence.site.clone().unwrap_or_default();
    match release_fence(ctx, &site, fence.prior_offline_mode).await {
        Ok(()) => Ok(true),
        Err(why) => {
            ctx.event(
                true,
                "RestoreOfflineFenceReleaseFailed",
                format!("offline_mode on {site} could not be put back ({why}); retrying. Once status.restoreInPlace is terminal you may run SET GLOBAL offline_mode = OFF yourself"),
            )
            .await;
            Ok(false)
        }
    }
}

pub(super) async fn resuming(
    ctx: &RunContext<'_>,
    status: &MysqlFailoverGroupStatus,
    run: &RestoreInPlaceStatus,
) -> Result<RunPassed, RunIoError> {
    if !release_or_report(ctx, status).await? {
        return Ok(RunPassed::Acted);
    }
    ctx.crash(CrashStep::OperatorRestoreAfterFenceRelease);
    let run_id = run.run_id.as_deref();
    let queue = status
        .restore_reclones
        .as_ref()
        .filter(|q| q.run_id.as_deref() == run_id && q.phase == Some(RestoreReclonesPhase::Armed));
    let mut body = json!({
        "restoreOfflineFence": null,
        "restoreInPlace": {
            "phase": "Succeeded",
            "reason": null,
            "confirmTokenUsed": run.run_confirm,
            "completionTime": time(ctx.now),
            "message": "restored; the peers are recloned from the restored primary (status.restoreReclones)",
        },
    });
    if let Some(queue) = queue.map(core_run::release)
        && let Some(value) = merge_value(Some(&queue))
    {
        body["restoreReclones"] = value;
    }
    ctx.write(body, "recording the succeeded restore").await?;
    if status.restore_offline_fence.is_some() {
        ctx.event(
            false,
            "RestoreOfflineFenceReleased",
            "offline_mode is back to its recorded value".into(),
        )
        .await;
    }
    tracing::info!(group = %ctx.group.name_any(), "in-place restore succeeded; the queue drains");
    Ok(RunPassed::Acted)
}
