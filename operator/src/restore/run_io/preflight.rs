//! Preflight: whether a confirm starts a run, and accepting it (the queue armed, Fencing recorded).

use bloodraven_crd::group::{
    MysqlFailoverGroupStatus, RestoreInPlacePhase, RestoreInPlaceStatus, SiteState,
};
use kube::ResourceExt;
use serde_json::json;

use super::{RECHECK_REJECTED, RunContext, RunIoError, RunMemory, RunPassed, time};
use crate::restore::core::queue_order;
use crate::restore::core_run::{self, Arm, PeerReadiness, Preflight, PreflightInput};
use crate::restore::queue_io::merge_value;
use crate::restore::run_sql;

pub(super) async fn start(
    ctx: &RunContext<'_>,
    status: &MysqlFailoverGroupStatus,
    run: &RestoreInPlaceStatus,
    memory: &mut RunMemory,
) -> Result<RunPassed, RunIoError> {
    let Some(spec) = ctx.group.spec.restore_in_place.as_ref() else {
        return Ok(RunPassed::Idle);
    };
    let schemas = spec.load_options.as_ref().and_then(|o| o.include_schemas.as_ref());
    if schemas.is_some_and(|s| !s.is_empty()) {
        tracing::debug!(group = %ctx.group.name_any(), "a per-schema in-place restore is not built in this operator");
        return Ok(RunPassed::Idle);
    }
    if let Some(at) = memory.rejected_at
        && ctx.now.duration_since(at) < RECHECK_REJECTED
    {
        return Ok(RunPassed::Idle);
    }
    // Cheap first: nothing is read from MySQL for a confirm that starts nothing.
    let quick = core_run::preflight(&PreflightInput {
        confirm: &spec.confirm,
        confirm_token_used: run.confirm_token_used.as_deref(),
        active: Some(("", true)),
        primary_grants: None,
        peers: &[],
        concurrent: None,
        previous_queue: None,
    });
    if matches!(quick, Preflight::NotNewer | Preflight::ConfirmIgnored { .. }) {
        return Ok(RunPassed::Idle);
    }
    let active = status.active_site.clone();
    let writable = active.as_deref().is_some_and(|active| {
        ctx.facts.iter().any(|f| f.name == active && f.state == SiteState::Writable)
    });
    let mut primary_grants = None;
    let mut peers = Vec::new();
    if let Some(active) = active.as_deref() {
        if let Some(pool) = ctx.pools.get(active) {
            primary_grants = run_sql::grants(pool, ctx.bounds).await.ok();
        }
        let priorities = ctx
            .group
            .spec
            .split_brain_policy
            .as_ref()
            .map(|policy| policy.site_priorities.clone())
            .unwrap_or_default();
        for site in queue_order(&ctx.group.spec.sites, &priorities, active) {
            let readiness = match ctx.pools.get(&site) {
                Some(pool) => match run_sql::grants(pool, ctx.bounds).await {
                    Ok(grants) => PeerReadiness::Reachable { grants },
                    Err(_) => PeerReadiness::Unreachable,
                },
                None => PeerReadiness::Unreachable,
            };
            peers.push((site, readiness));
        }
    }
    let decision = core_run::preflight(&PreflightInput {
        confirm: &spec.confirm,
        confirm_token_used: run.confirm_token_used.as_deref(),
        active: active.as_deref().map(|active| (active, writable)),
        primary_grants: primary_grants.as_ref(),
        peers: &peers,
        concurrent: ctx.planned_failover_in_flight.then_some("a planned failover"),
        previous_queue: status.restore_reclones.as_ref(),
    });
    let waiting = |reason: Option<&str>, message: &str| {
        json!({ "restoreInPlace": {
            "phase": "Preflight",
            "reason": reason,
            "message": message,
            "scope": "FullInstance",
        }})
    };
    match decision {
        Preflight::NotNewer | Preflight::ConfirmIgnored { .. } => Ok(RunPassed::Idle),
        Preflight::Wait { message } => {
            if run.phase == Some(RestoreInPlacePhase::Preflight)
                && run.message.as_deref() == Some(message.as_str())
            {
                return Ok(RunPassed::Idle);
            }
            ctx.write(waiting(None, &message), "recording the waiting preflight").await?;
            Ok(RunPassed::Acted)
        }
        Preflight::Rejected { message } => {
            memory.rejected_at = Some(ctx.now);
            if run.message.as_deref() != Some(message.as_str()) {
                ctx.write(
                    waiting(Some("RestoreInPlaceRejected"), &message),
                    "recording the rejected preflight",
                )
                .await?;
                ctx.event(true, "RestoreInPlaceRejected", message).await;
            }
            Ok(RunPassed::Acted)
        }
        Preflight::Accept => {
            memory.rejected_at = None;
            let Some(active) = active else { return Ok(RunPassed::Idle) };
            let run_id = uuid::Uuid::new_v4().simple().to_string();
            let order = peers.into_iter().map(|(site, _)| site).collect();
            match core_run::arm(status.restore_reclones.as_ref(), order, &run_id) {
                Arm::HoldStale(held) => {
                    let Some(queue) = merge_value(Some(&held)) else { return Ok(RunPassed::Idle) };
                    ctx.write(json!({ "restoreReclones": queue }), "holding a stale Armed queue")
                        .await?;
                    ctx.event(
                        true,
                        "RestoreReclonesHeld",
                        format!(
                            "a reclone queue still Armed from an earlier restore ({}) is held: whether that restore changed the primary is unknown",
                            held.pending.join(", ")
                        ),
                    )
                    .await;
                    Ok(RunPassed::Acted)
                }
                Arm::Armed(queue) => {
                    let Some(queue_value) = merge_value(Some(&queue)) else {
                        return Ok(RunPassed::Idle);
                    };
                    ctx.write(
                        json!({
                            "restoreInPlace": {
                                "phase": "Fencing",
                                "reason": null,
                                "runID": run_id,
                                "runConfirm": spec.confirm,
                                "jobCreating": null,
                                "jobName": null,
                                "targetSite": active,
                                "scope": "FullInstance",
                                "schema": null,
                                "startTime": time(ctx.now),
                                "completionTime": null,
                                "message": format!("fencing {active}: offline_mode, then every peer's receiver"),
                            },
                            "restoreReclones": queue_value,
                        }),
                        "accepting the restore",
                    )
                    .await?;
                    tracing::info!(group = %ctx.group.name_any(), run = %run_id, %active, queue = ?queue.pending, "in-place restore accepted");
                    Ok(RunPassed::Acted)
                }
            }
        }
    }
}
