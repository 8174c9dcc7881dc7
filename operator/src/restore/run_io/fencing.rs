//! Fencing: cancellation before the Job, the offline fence and its record, evicting the sessions
//! from before it, the fenced executed set, and every peer's receiver stopped.

use bloodraven_crashpoint::Step as CrashStep;
use bloodraven_crd::group::{MysqlFailoverGroupStatus, RestoreInPlaceReason, RestoreInPlaceStatus};
use jiff::Timestamp;
use serde_json::json;

use super::restoring::build_job;
use super::{RunContext, RunIoError, RunMemory, RunPassed, fail, time};
use crate::restore::core_run::{self, PeerAction, PeerStop};
use crate::restore::run_sql;

fn confirm_time(text: Option<&str>) -> Option<Timestamp> {
    text.and_then(|text| text.parse().ok())
}

pub(super) async fn fencing(
    ctx: &RunContext<'_>,
    status: &MysqlFailoverGroupStatus,
    run: &RestoreInPlaceStatus,
    memory: &mut RunMemory,
) -> Result<RunPassed, RunIoError> {
    let run_id = run.run_id.clone().unwrap_or_default();
    // Cancellation and re-authorisation before the Job exists.
    let spec = ctx.group.spec.restore_in_place.as_ref();
    let run_confirm = confirm_time(run.run_confirm.as_deref());
    match spec.map(|spec| (spec, confirm_time(Some(&spec.confirm)))) {
        None => {
            return fail(
                ctx,
                run,
                Some(RestoreInPlaceReason::RestoreInPlaceCanceled),
                false,
                "spec.restoreInPlace was removed before the restore Job was created; nothing was restored".into(),
                false,
            )
            .await;
        }
        Some((_, Some(confirm))) if run_confirm.is_some_and(|own| confirm < own) => {
            return fail(
                ctx,
                run,
                Some(RestoreInPlaceReason::RestoreInPlaceCanceled),
                false,
                "spec.restoreInPlace.confirm moved back before the restore Job was created; nothing was restored".into(),
                false,
            )
            .await;
        }
        Some((spec, Some(confirm))) if run_confirm.is_some_and(|own| confirm > own) => {
            ctx.write(
                json!({ "restoreInPlace": { "runConfirm": spec.confirm } }),
                "rebinding the run's confirm",
            )
            .await?;
            ctx.event(
                false,
                "RestoreInPlaceConfirmRebound",
                format!("the run in progress continues under confirm={}", spec.confirm),
            )
            .await;
            return Ok(RunPassed::Acted);
        }
        Some(_) => {}
    }
    let Some(site) = run.target_site.clone() else {
        return fail(ctx, run, None, false, "the run names no target site".into(), false).await;
    };
    let Some(pool) = ctx.pools.get(&site) else { return Ok(RunPassed::Idle) };
    // 1. The fence's record, with the offline_mode it puts back, before the fence.
    let fence = status
        .restore_offline_fence
        .as_ref()
        .filter(|fence| fence.run_id.as_deref() == Some(run_id.as_str()));
    let Some(fence) = fence else {
        let Ok(prior) = run_sql::offline_mode(pool, ctx.bounds).await else {
            return Ok(RunPassed::Idle);
        };
        ctx.write(
            json!({ "restoreOfflineFence": {
                "runID": run_id,
                "site": site,
                "priorOfflineMode": prior,
                "recordTime": time(ctx.now),
            }}),
            "recording the offline fence",
        )
        .await?;
        ctx.crash(CrashStep::OperatorRestoreAfterFenceRecord);
        return Ok(RunPassed::Acted);
    };
    // 2. The fence (every poll: a restarted mysqld comes back with it OFF). The first time in
    // this process it also marks which sessions came before it.
    let boundary = match run_sql::fence(pool, ctx.bounds).await {
        Ok(id) => id,
        Err(why) => {
            tracing::warn!(%site, %why, "offline fence not applied; retried next poll");
            return Ok(RunPassed::Idle);
        }
    };
    let boundary = match &memory.boundary {
        Some((run, id)) if *run == run_id => *id,
        _ => {
            memory.boundary = Some((run_id.clone(), boundary));
            boundary
        }
    };
    // 3. No session from before the fence left (but those that cannot be killed).
    let Ok(sessions) = run_sql::sessions(pool, boundary, ctx.bounds).await else {
        return Ok(RunPassed::Idle);
    };
    let eviction = core_run::evict(&sessions, &ctx.account.user, false);
    let mut killed = 0;
    let mut kept = Vec::new();
    for id in &eviction.kill {
        match run_sql::kill(pool, *id, ctx.bounds).await {
            Ok(()) => killed += 1,
            Err(why) => kept.push(format!("{id} ({why})")),
        }
    }
    if killed > 0 {
        tracing::info!(%site, killed, "offline fence: sessions from before the fence killed");
        return Ok(RunPassed::Acted);
    }
    let Some(queue) =
        status.restore_reclones.as_ref().filter(|q| q.run_id.as_deref() == Some(run_id.as_str()))
    else {
        return fail(
            ctx,
            run,
            None,
            false,
            "the run's reclone queue is gone from status; nothing was restored".into(),
            false,
        )
        .await;
    };
    // 4. The primary's executed set once fenced.
    let Some(fenced) = queue.fenced_gtid_executed.as_deref() else {
        let Ok(gtid) = run_sql::gtid_executed(pool, ctx.bounds).await else {
            return Ok(RunPassed::Idle);
        };
        ctx.write(
            json!({ "restoreReclones": { "fencedGtidExecuted": gtid.to_string() } }),
            "recording fencedGtidExecuted",
        )
        .await?;
        let mut note =
            format!("offline_mode is ON on {site}; no session from before the fence is left");
        if !kept.is_empty() {
            ctx.event(
                true,
                "RestoreOfflineFenceSessionsKept",
                format!(
                    "sessions the operator account cannot kill stay connected: {}",
                    kept.join(", ")
                ),
            )
            .await;
            note.push_str(" but the kept ones");
        }
        ctx.event(false, "RestoreOfflineFenceApplied", note).await;
        return Ok(RunPassed::Acted);
    };
    let fenced: bloodraven_gtid::GtidSet = fenced.parse().unwrap_or_default();
    // 5. Every peer's receiver stopped (a running one gets 30 s to receive the fenced set).
    let fenced_at = fence.record_time.as_ref().map_or(ctx.now, |t| t.0);
    let mut receivers = Vec::new();
    for peer in &queue.pending {
        let receiver = match ctx.pools.get(peer) {
            Some(pool) => run_sql::receiver(pool, ctx.bounds).await,
            None => core_run::Receiver::Unknown { why: "no address".into() },
        };
        receivers.push((peer.clone(), receiver));
    }
    match core_run::stop_peers(&receivers, &fenced, fenced_at, ctx.now) {
        PeerStop::Act(actions) => {
            let mut acted = false;
            for (peer, action) in actions {
                let PeerAction::Stop { behind } = action else { continue };
                let Some(pool) = ctx.pools.get(&peer) else { continue };
                match run_sql::exec(pool, crate::sql::STOP_REPLICA_IO_THREAD, ctx.bounds).await {
                    Ok(()) => acted = true,
                    Err(why) => tracing::warn!(%peer, %why, "stopping the receiver failed"),
                }
                if !behind.is_empty() {
                    ctx.event(
                        true,
                        "RestorePeerReplicationStoppedBehind",
                        format!("{peer}'s receiver was stopped before it received {behind}; it keeps its pre-restore data without those transactions"),
                    )
                    .await;
                }
            }
            Ok(if acted { RunPassed::Acted } else { RunPassed::Idle })
        }
        PeerStop::Failed { unverified } => {
            let names: Vec<String> =
                unverified.iter().map(|(site, why)| format!("{site} ({why})")).collect();
            fail(
                ctx,
                run,
                Some(RestoreInPlaceReason::RestoreInPlacePeerStopFailed),
                true,
                format!("the receivers of {} could not be verified stopped within two minutes; nothing was restored. Bring the peer back, then bump confirm", names.join(", ")),
                false,
            )
            .await
        }
        PeerStop::AllStopped => {
            // The Job is built before the mark: one that cannot be built never counts as
            // created (the confirm is consumed, as for a run that failed to stop its peers).
            if let Err(message) = build_job(ctx, run, &site).await? {
                return fail(ctx, run, None, true, message, false).await;
            }
            ctx.write(
                json!({ "restoreInPlace": {
                    "phase": "Restoring",
                    "jobCreating": true,
                    "message": format!("every peer's receiver is stopped; the restore Job loads the dump into {site}"),
                }}),
                "recording jobCreating",
            )
            .await?;
            ctx.event(
                false,
                "RestorePeerReplicationStopped",
                format!("the receivers of {} are stopped", queue.pending.join(", ")),
            )
            .await;
            ctx.crash(CrashStep::OperatorRestoreAfterJobCreatingRecord);
            Ok(RunPassed::Acted)
        }
    }
}
