//! Planned failover: the pure decision core (issue 13, the planned-failover document).
//!
//! [`step`]`(&RunRecord, &Observation, &Timings, now) -> Decision` decides one pass: the next
//! durable record (a status write conditioned on the resourceVersion of the uncached read the
//! observation came from, and metadata changes) and the side effects that record announces.
//! Nothing here does IO or reads a clock but [`io`], the applier, which commits the record first
//! and runs the effects only once it committed, so a restart always lands on a record whose
//! side effect is done or provably not started; the next pass confirms it live.
//!
//! | File | Concern |
//! | --- | --- |
//! | `timings.rs` | every deadline, loss window and cadence as one [`Timings`] value |
//! | `request.rs` | the annotation grammar of a request and an acknowledgement, with errors naming input and position |
//! | `model.rs` | [`RunRecord`], [`Memory`], [`Observation`] |
//! | `decision.rs` | [`Decision`], [`Effect`], writes, Events, logs, metrics |
//! | `admission.rs` | a new request, Deferred, Admitting and the claim grant |
//! | `run.rs` | Fencing → Draining → WaitingForLag → Promoting → Publishing → Succeeded |
//! | `rollback.rs` | RollingBack |
//! | `end.rs` | terminal records, the hold, the terminal marker, stalls, manager absence, legacy blocks |
//! | `settle.rs` | what an uncached re-read proves about an ambiguous status write |

mod admission;
mod decision;
mod end;
pub mod io;
mod model;
mod request;
mod rollback;
mod run;
mod settle;
mod timings;

pub use decision::{
    AnnotationChange, Decision, Effect, Event, HoldChange, Log, Metric, StatusWrite,
};
pub use model::{
    Busy, Channel, ClaimSlot, FailoverRecord, Knobs, ManagerState, Memory, Observation, Probe,
    Reading, Report, ReservationRefused, RunRecord, SiteView, TargetHealth,
};
pub use request::{Request, RequestError, parse_acknowledgement, parse_request};
pub use settle::{Reread, Settlement, settle};
pub use timings::Timings;

use bloodraven_crd::group::{
    PlannedFailoverPhase, PlannedFailoverStatus, PlannedFailoverWarning, SiteRole,
};
use bloodraven_gtid::GtidSet;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Decides one pass of the group's planned failover.
pub fn step(
    record: &RunRecord,
    observation: &Observation,
    timings: &Timings,
    now: Timestamp,
) -> Decision {
    let mut pass = Pass::new(record, observation, timings, now);
    pass.fold_reports();
    pass.hold_pass();
    pass.run_pass();
    pass.stall_since_goes_with_the_write();
    pass.decision
}

/// One pass under construction.
pub(crate) struct Pass<'a> {
    pub(crate) record: &'a RunRecord,
    pub(crate) obs: &'a Observation,
    pub(crate) t: &'a Timings,
    pub(crate) now: Timestamp,
    pub(crate) decision: Decision,
}

impl<'a> Pass<'a> {
    fn new(record: &'a RunRecord, obs: &'a Observation, t: &'a Timings, now: Timestamp) -> Self {
        let run_id = record.block.as_ref().and_then(|block| block.run_id.clone());
        let memory = if record.memory.run_id.is_some() && record.memory.run_id == run_id {
            record.memory.clone()
        } else {
            Memory { run_id, hold_reminded_at: record.memory.hold_reminded_at, ..Memory::default() }
        };
        Pass { record, obs, t, now, decision: Decision::idle(memory, t.poll) }
    }

    /// Folds the applier's reports of the last announced effect into the memory.
    fn fold_reports(&mut self) {
        let memory = &mut self.decision.memory;
        for report in &self.obs.reports {
            match report {
                Report::FenceSent { server_uuid } => {
                    memory.fence_sent_to = Some(server_uuid.clone())
                }
                Report::Drained(remaining) => memory.drain_remaining = Some(remaining.clone()),
                Report::WriteSent => memory.write_possibly_sent = true,
                Report::PromotionFailed(_) => memory.promotion_failing = true,
                Report::TargetRefenced => memory.target_refenced = true,
                Report::UnfenceSent => memory.unfence_sent = true,
                Report::Published { dns_error, marked } => {
                    memory.dns_error = dns_error.clone();
                    memory.claim_released = *marked;
                }
            }
        }
    }

    /// The durable block.
    pub(crate) fn block(&self) -> Option<&'a PlannedFailoverStatus> {
        self.record.block.as_ref()
    }

    /// The run's ID.
    pub(crate) fn run_id(&self) -> String {
        self.block().and_then(|block| block.run_id.clone()).unwrap_or_default()
    }

    /// The run's target site.
    pub(crate) fn target(&self) -> String {
        self.block().and_then(|block| block.target_site.clone()).unwrap_or_default()
    }

    /// The run's source site.
    pub(crate) fn source(&self) -> String {
        self.block().and_then(|block| block.source_site.clone()).unwrap_or_default()
    }

    /// A durable time field as an instant.
    pub(crate) fn at(time: Option<&Time>) -> Option<Timestamp> {
        time.map(|time| time.0)
    }

    /// `now` as a status time.
    pub(crate) fn now_time(&self) -> Time {
        Time(self.now)
    }

    /// Writes `block` as the next record (revision bumped), keeping the hold.
    pub(crate) fn write(&mut self, mut block: PlannedFailoverStatus) {
        block.revision = Some(self.block().and_then(|b| b.revision).unwrap_or(0) + 1);
        self.decision.write = Some(StatusWrite {
            resource_version: self.obs.resource_version.clone(),
            block: Some(block),
            hold: HoldChange::Keep,
            last_failover: None,
        });
    }

    /// Adds a warning to the run's memory once.
    pub(crate) fn warn(&mut self, warning: PlannedFailoverWarning) {
        if !self.decision.memory.warnings.contains(&warning) {
            self.decision.memory.warnings.push(warning);
        }
    }

    /// The run's warnings: the durable ones of the block, then this process's.
    pub(crate) fn warnings(&self) -> Vec<PlannedFailoverWarning> {
        let mut warnings: Vec<PlannedFailoverWarning> = self
            .block()
            .and_then(|block| block.promotion.as_ref())
            .map(|promotion| promotion.warnings.clone())
            .unwrap_or_default();
        for warning in &self.decision.memory.warnings {
            if !warnings.contains(warning) {
                warnings.push(warning.clone());
            }
        }
        warnings
    }

    /// The site named `name`, when it is still in `spec.sites`.
    pub(crate) fn site(&self, name: &str) -> Option<&'a SiteView> {
        self.obs.site(name)
    }

    /// Every PrimaryCandidate and DisasterRecovery site other than `except` that did not
    /// answer.
    pub(crate) fn unreadable_strict_peers(&self, except: &[&str]) -> Vec<String> {
        self.obs
            .sites
            .iter()
            .filter(|site| !except.contains(&site.name.as_str()))
            .filter(|site| {
                matches!(site.role, SiteRole::PrimaryCandidate | SiteRole::DisasterRecovery)
            })
            .filter(|site| site.probe == Probe::Unreadable)
            .map(|site| site.name.clone())
            .collect()
    }

    /// Every site other than `except` that answers writable.
    pub(crate) fn writable_sites(&self, except: &[&str]) -> Vec<String> {
        self.obs
            .sites
            .iter()
            .filter(|site| !except.contains(&site.name.as_str()))
            .filter(|site| site.probe.reading().is_some_and(Reading::writable))
            .map(|site| site.name.clone())
            .collect()
    }

    /// Whether a loss window that started at `since` (or starts now) has expired.
    pub(crate) fn window_expired(
        since: Option<Timestamp>,
        now: Timestamp,
        window: SignedDuration,
    ) -> bool {
        since.is_some_and(|since| now.duration_since(since) >= window)
    }

    /// Counts a source observation toward the source-loss window; true once it expired.
    pub(crate) fn source_lost(&mut self, answered: bool) -> bool {
        let memory = &mut self.decision.memory;
        if answered {
            memory.source_failing_since = None;
            return false;
        }
        let since = *memory.source_failing_since.get_or_insert(self.now);
        Self::window_expired(Some(since), self.now, self.t.source_loss_window)
    }

    /// Counts a target observation toward the target-loss window; true once it expired.
    pub(crate) fn target_lost(&mut self, answered: bool) -> bool {
        let memory = &mut self.decision.memory;
        if answered {
            memory.target_failing_since = None;
            return false;
        }
        let since = *memory.target_failing_since.get_or_insert(self.now);
        Self::window_expired(Some(since), self.now, self.t.target_loss_window)
    }

    /// The fenced set, parsed.
    pub(crate) fn fenced_set(&self) -> Option<Result<GtidSet, String>> {
        let text = self.block()?.fence.as_ref()?.gtid_set.as_ref()?;
        Some(text.parse::<GtidSet>().map_err(|error| error.to_string()))
    }

    /// Whether the run holds (or, once released, held) the claim: Fencing and later,
    /// non-terminal.
    pub(crate) fn holds_claim(&self) -> bool {
        matches!(
            self.block().and_then(|block| block.phase.as_ref()),
            Some(
                PlannedFailoverPhase::Fencing
                    | PlannedFailoverPhase::Draining
                    | PlannedFailoverPhase::WaitingForLag
                    | PlannedFailoverPhase::WaitingForDragonflySync
                    | PlannedFailoverPhase::PromotingDragonfly
                    | PlannedFailoverPhase::Promoting
                    | PlannedFailoverPhase::RollingBack
            )
        )
    }

    /// Dispatches on the durable phase.
    fn run_pass(&mut self) {
        let phase = self.block().and_then(|block| block.phase.clone());
        let has_run_id = self.block().is_some_and(|block| block.run_id.is_some());
        if let Some(phase) = &phase
            && !phase.is_terminal()
            && (!has_run_id
                || matches!(
                    phase,
                    PlannedFailoverPhase::Pending
                        | PlannedFailoverPhase::Validating
                        | PlannedFailoverPhase::Resuming
                        | PlannedFailoverPhase::Unrecognized(_)
                ))
        {
            self.refuse_legacy(phase.clone());
            return;
        }
        if self.marker_ends_run() {
            return;
        }
        match phase {
            None | Some(PlannedFailoverPhase::Succeeded | PlannedFailoverPhase::Failed) => {
                self.idle_pass();
            }
            Some(PlannedFailoverPhase::Deferred) => self.deferred_pass(),
            Some(PlannedFailoverPhase::Admitting) => self.admitting_pass(),
            Some(PlannedFailoverPhase::Publishing) => self.publishing_pass(),
            Some(_) => self.claimed_pass(),
        }
    }
}

/// The kebab-case result label of an outcome token.
pub(crate) fn result_label(outcome: &str) -> String {
    bloodraven_crd::group::PlannedFailoverOutcome::parse(outcome).metric_label()
}
