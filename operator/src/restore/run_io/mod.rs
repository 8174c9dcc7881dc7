//! The full-instance in-place restore run's IO (backup-and-restore document, "Full-instance
//! in-place restore" through "Observing the state machine"): Preflight → Fencing → Restoring →
//! Resuming → Succeeded, or Failed and the settlement of its queue, driven by
//! `spec.restoreInPlace` and `status.restoreInPlace`.
//!
//! One pass runs inside the topology manager's poll, before its plan, like the planned-failover
//! applier: the decisions are the pure [`super::core_run`]; every record goes to status
//! (a merge patch conditioned on the resourceVersion of the poll's read) BEFORE the side effect
//! it announces, and a pass that wrote or acted ends the poll, so the next one reads again.
//! The guards ([`super::guards`]) follow from the records.
//!
//! One file per phase: `preflight` (accepting a run), `fencing` (the offline fence and the
//! peers' receivers), `restoring` (the restore Job), `resuming` (releasing the fence), and
//! `settlement` (a run that ended: a failed run's queue, a leftover fence).

mod fencing;
mod preflight;
mod restoring;
mod resuming;
mod settlement;

use std::collections::BTreeMap;

use bloodraven_crashpoint::Step as CrashStep;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::{
    RestoreInPlacePhase, RestoreInPlaceReason, RestoreInPlaceStatus, RestoreScope,
};
use bloodraven_facts::SiteFacts;
use jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::Recorder;
use mysql_async::Pool;
use serde_json::{Value, json};

use super::queue_io::publish;
use super::{core_run, run_sql};
use crate::observe::{Account, Bounds};

/// A rejected restore is checked again after this long.
pub const RECHECK_REJECTED: SignedDuration = SignedDuration::from_mins(1);

/// What this process remembers about the run between polls.
#[derive(Debug, Default)]
pub struct RunMemory {
    /// The first failed read of the primary during a failed run's settlement.
    unreadable_since: Option<Timestamp>,
    /// When preflight last rejected the run (re-checked about once a minute).
    rejected_at: Option<Timestamp>,
    /// The run whose fence this process applied, and the last connection id from before it.
    boundary: Option<(String, u64)>,
}

/// Why a pass failed (the next poll retries).
#[derive(Debug, thiserror::Error)]
pub enum RunIoError {
    /// An API call failed.
    #[error("in-place restore: {what} failed: {source}; the next poll retries")]
    Kube {
        /// What was being done.
        what: &'static str,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
}

fn kube(what: &'static str) -> impl FnOnce(kube::Error) -> RunIoError {
    move |source| RunIoError::Kube { what, source }
}

/// A pass's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunPassed {
    /// Nothing written or done: the poll goes on.
    Idle,
    /// A record was written or a side effect ran: the poll ends here.
    Acted,
}

/// Everything one pass needs from the manager.
pub struct RunContext<'a> {
    /// The client.
    pub client: &'a kube::Client,
    /// Events.
    pub recorder: &'a Recorder,
    /// The group as just read from the API server.
    pub group: &'a MysqlFailoverGroup,
    /// Each site's pool.
    pub pools: &'a BTreeMap<String, Pool>,
    /// This poll's facts.
    pub facts: &'a [SiteFacts],
    /// The operator account (the restore account).
    pub account: &'a Account,
    /// The bounds of one MySQL read.
    pub bounds: Bounds,
    /// A planned failover is in flight (preflight waits).
    pub planned_failover_in_flight: bool,
    /// Crash-point scope (`<namespace>/<group>`).
    pub scope: &'a str,
    /// The time of this poll.
    pub now: Timestamp,
}

impl RunContext<'_> {
    fn groups(&self) -> Api<MysqlFailoverGroup> {
        Api::namespaced(self.client.clone(), &self.group.namespace().unwrap_or_default())
    }

    /// Merge-patches `status` conditioned on the resourceVersion the poll read.
    async fn write(&self, status: Value, what: &'static str) -> Result<(), RunIoError> {
        let body = json!({
            "metadata": { "resourceVersion": self.group.resource_version() },
            "status": status,
        });
        self.groups()
            .patch_status(&self.group.name_any(), &PatchParams::default(), &Patch::Merge(body))
            .await
            .map_err(kube(what))?;
        Ok(())
    }

    async fn event(&self, warning: bool, reason: &str, note: String) {
        publish(self.recorder, self.group, warning, reason, note).await;
    }

    fn crash(&self, step: CrashStep) {
        bloodraven_crashpoint::hit_in(self.scope, step);
    }
}

fn time(now: Timestamp) -> String {
    now.to_string()
}

/// The replication hold, first in every pass: a pass that acts ends the poll before the
/// topology manager's plan, whose guards re-stop held receivers, and a run acts on nearly
/// every poll from Restoring on. So a receiver that runs or connects on a held site (started
/// by hand, or left running across an operator restart) is stopped here before the pass can
/// create the restore Job or move on. A failed stop is retried on the next poll.
async fn hold_receivers(ctx: &RunContext<'_>, status: &bloodraven_crd::MysqlFailoverGroupStatus) {
    for site in super::guards::guards(status).hold_receivers {
        let Some(pool) = ctx.pools.get(&site) else { continue };
        let state = match run_sql::receiver(pool, ctx.bounds).await {
            core_run::Receiver::Running { .. } => "running",
            core_run::Receiver::Connecting => "connecting",
            core_run::Receiver::Stopped | core_run::Receiver::Unknown { .. } => continue,
        };
        match run_sql::exec(pool, crate::sql::STOP_REPLICA_IO_THREAD, ctx.bounds).await {
            Ok(()) => {
                tracing::warn!(%site, state, "a held receiver was started; stopped it again");
            }
            Err(why) => {
                tracing::warn!(%site, %why, "re-stopping a held receiver failed; retried next poll");
            }
        }
    }
}

/// One pass. See the module documentation.
pub async fn pass(ctx: &RunContext<'_>, memory: &mut RunMemory) -> Result<RunPassed, RunIoError> {
    let status = ctx.group.status.clone().unwrap_or_default();
    let run = status.restore_in_place.clone().unwrap_or_default();
    if run.scope.as_ref() == Some(&RestoreScope::Schema) {
        return Ok(RunPassed::Idle);
    }
    hold_receivers(ctx, &status).await;
    let passed = match run.phase.as_ref() {
        Some(RestoreInPlacePhase::Fencing) => fencing::fencing(ctx, &status, &run, memory).await?,
        Some(RestoreInPlacePhase::Restoring) => restoring::restoring(ctx, &status, &run).await?,
        Some(RestoreInPlacePhase::Resuming) => resuming::resuming(ctx, &status, &run).await?,
        Some(RestoreInPlacePhase::Failed | RestoreInPlacePhase::Succeeded) => {
            settlement::ended(ctx, &status, &run, memory).await?
        }
        _ => RunPassed::Idle,
    };
    if passed == RunPassed::Acted {
        return Ok(passed);
    }
    if matches!(
        run.phase.as_ref(),
        None | Some(
            RestoreInPlacePhase::Preflight
                | RestoreInPlacePhase::Failed
                | RestoreInPlacePhase::Succeeded
        )
    ) {
        return preflight::start(ctx, &status, &run, memory).await;
    }
    Ok(RunPassed::Idle)
}

/// Ends the run Failed (from fencing or restoring). `consumed`: the confirm counts as used.
async fn fail(
    ctx: &RunContext<'_>,
    run: &RestoreInPlaceStatus,
    reason: Option<RestoreInPlaceReason>,
    consumed: bool,
    message: String,
    withdraw_job_mark: bool,
) -> Result<RunPassed, RunIoError> {
    let mut record = json!({
        "phase": "Failed",
        "reason": reason.as_ref().map(|r| r.as_str()),
        "completionTime": time(ctx.now),
        "message": message,
    });
    if consumed {
        record["confirmTokenUsed"] = json!(run.run_confirm);
    }
    if withdraw_job_mark {
        record["jobCreating"] = Value::Null;
    }
    ctx.write(json!({ "restoreInPlace": record }), "recording the failed restore").await?;
    let event = reason.as_ref().map_or("RestoreFailed", |r| r.as_str()).to_owned();
    ctx.event(true, &event, message).await;
    Ok(RunPassed::Acted)
}
