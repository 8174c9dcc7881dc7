//! A new request, Deferred, Admitting and the claim grant (planned-failover document,
//! "Lifecycle", "Admission", "Spec-level defaults", "Per-request override").

use bloodraven_crd::annotations::PLANNED_FAILOVER;
use bloodraven_crd::duration::Duration;
use bloodraven_crd::group::{
    Admission, AdmissionDeferReason, AdmissionWaitReason, ClaimBaseline, Fence, FenceState,
    OnCooldown, PlannedFailoverOutcome as Outcome, PlannedFailoverPhase as Phase,
    PlannedFailoverReason as Reason, PlannedFailoverSettings, PlannedFailoverStatus,
    PlannedFailoverWarning, SiteRole,
};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::decision::{AnnotationChange, Effect, Metric};
use super::model::{Busy, ClaimSlot, ManagerState, Probe, ReservationRefused};
use super::request::{Request, parse_request};
use super::{Pass, result_label};

/// Why validation refused a request.
pub(crate) struct Refusal {
    pub(crate) reason: Reason,
    pub(crate) message: String,
    /// For CooldownActive: when the cooldown ends.
    pub(crate) retry: Option<Timestamp>,
}

fn refusal(reason: Reason, message: String) -> Refusal {
    Refusal { reason, message, retry: None }
}

/// A wait: the reason and its detail.
pub(crate) type Wait = (AdmissionWaitReason, String);

fn duration_text(duration: SignedDuration) -> Duration {
    Duration::from_std(duration.unsigned_abs())
}

impl Pass<'_> {
    /// The request annotation, parsed (`None` when absent).
    fn request(&self) -> Option<Result<Request, super::RequestError>> {
        self.obs.annotation(PLANNED_FAILOVER).map(parse_request)
    }

    fn remove_request(&mut self, raw: &str) {
        self.decision
            .annotations
            .push(AnnotationChange::Remove { key: PLANNED_FAILOVER, value: raw.to_owned() });
    }

    /// A hold stands: a durable hold record, a True condition, a ManualRecoveryRequired marker
    /// or a hold in the claim slot.
    pub(crate) fn hold_standing(&self) -> bool {
        self.record.hold.is_some()
            || self.record.hold_condition
            || self.hold_marker_run().is_some()
            || matches!(self.obs.claim, ClaimSlot::Hold(_))
    }

    /// Authority is unsettled: no active site, or a failover record newer than `since` names
    /// another site than the active one.
    fn authority_unsettled(&self, since: Option<Timestamp>) -> Option<String> {
        let Some(active) = &self.obs.active_site else {
            return Some("status.activeSite is empty: a failover is in flight".to_owned());
        };
        let since = since.unwrap_or(self.now - self.t.authority_recent);
        if let Some(record) = self.obs.failover_record()
            && record.time > since
            && &record.target != active
        {
            return Some(format!(
                "the failover record names {:?} but status.activeSite is {active:?}: a failover is not yet published",
                record.target
            ));
        }
        None
    }

    /// A refused deployment admission reservation, as a wait.
    fn reservation_wait(&self) -> Option<Wait> {
        let refused = self.obs.reservation_refused?;
        let reason = match refused {
            ReservationRefused::TopologyPersistencePending => {
                AdmissionWaitReason::AuthorityUnsettled
            }
            ReservationRefused::UpdateInFlight => AdmissionWaitReason::UpdateInFlight,
            ReservationRefused::RestoreInFlight => AdmissionWaitReason::RestoreInFlight,
            ReservationRefused::ClaimHeld => AdmissionWaitReason::ClaimHeld,
        };
        Some((reason, format!("the deployment admission reservation was refused ({refused})")))
    }

    /// Request-only refusals: they need no status to decide.
    fn refuse_request_only(&self, target: &str) -> Option<Refusal> {
        let Some(site) = self.obs.site(target) else {
            return Some(refusal(
                Reason::UnknownSite,
                format!("planned failover refused: {target:?} is not a site of spec.sites"),
            ));
        };
        if site.role != SiteRole::PrimaryCandidate {
            return Some(refusal(
                Reason::TargetNotPromotable,
                format!(
                    "planned failover refused: {target:?} is a {} site; only PrimaryCandidate sites are promoted",
                    site.role.as_str()
                ),
            ));
        }
        None
    }

    /// The validation of "Admission": every reject-at-once reason.
    fn validate(&self, target: &str, cooldown_policy_applies: bool) -> Result<(), Refusal> {
        if let Some(refused) = self.refuse_request_only(target) {
            return Err(refused);
        }
        if self.obs.active_site.as_deref() == Some(target) {
            return Err(refusal(
                Reason::AlreadyActive,
                format!("planned failover refused: {target:?} is already the active primary"),
            ));
        }
        let health = &self.obs.target_health;
        if health.mid_rotation {
            return Err(refusal(
                Reason::KeyringRotation,
                format!(
                    "planned failover refused: {target:?} is mid keyring rotation; annotate again once it finished"
                ),
            ));
        }
        if health.divergence_report {
            return Err(refusal(
                Reason::DivergentTarget,
                format!(
                    "planned failover refused: {target:?} has a divergence report; reclone it or make the primary contain its set, then annotate again"
                ),
            ));
        }
        if health.reclone_pending || health.unhealthy {
            let why = if health.reclone_pending {
                "awaits its post-restore reclone"
            } else {
                "is not a healthy read-only replica"
            };
            return Err(refusal(
                Reason::TargetUnhealthy,
                format!("planned failover refused: {target:?} {why}"),
            ));
        }
        if self.obs.concurrent_operation {
            return Err(refusal(
                Reason::ConcurrentOperation,
                "planned failover refused: an in-place restore or ordered update is in progress"
                    .to_owned(),
            ));
        }
        let record = match &self.obs.last_failover {
            Err(error) => {
                return Err(refusal(
                    Reason::InvalidFailoverState,
                    format!(
                        "planned failover refused: the durable failover record cannot be read ({error}); repair status.lastFailover"
                    ),
                ));
            }
            Ok(record) => record,
        };
        if cooldown_policy_applies && let Some(record) = record {
            let until = record.time + self.t.setting(self.obs.knobs.cooldown);
            if until > self.now {
                return Err(Refusal {
                    reason: Reason::CooldownActive,
                    message: format!(
                        "planned failover refused: the failover cooldown runs until {until} (last failover to {:?} at {})",
                        record.target, record.time
                    ),
                    retry: Some(until),
                });
            }
        }
        Ok(())
    }

    /// The settings a run snapshots at acceptance; `Err` for a zero or out-of-range knob.
    fn settings(&self, request: &Request) -> Result<PlannedFailoverSettings, String> {
        let max_lag_wait = match request.max_lag_wait {
            Some(wait) => wait,
            None => self.obs.knobs.max_lag_wait.clone()?,
        };
        let drain_timeout = self.obs.knobs.drain_timeout.clone()?;
        Ok(PlannedFailoverSettings {
            max_lag_wait: Some(duration_text(max_lag_wait)),
            drain_timeout: Some(duration_text(drain_timeout)),
            on_cooldown: Some(self.obs.knobs.on_cooldown.clone()),
            ..PlannedFailoverSettings::default()
        })
    }

    /// A new block for `request`.
    fn new_block(&self, run_id: String, request: &Request) -> PlannedFailoverStatus {
        PlannedFailoverStatus {
            run_id: Some(run_id),
            target_site: Some(request.target.clone()),
            start_time: Some(self.now_time()),
            settings: self.settings(request).ok(),
            ..PlannedFailoverStatus::default()
        }
    }

    /// A request refused with an Event only (no status block), counted as not-started.
    fn reject_without_block(&mut self, target: &str, raw: &str, message: String) {
        self.decision.event("PlannedFailoverRejected", message);
        self.decision.metrics.push(Metric::Finished {
            target_site: target.to_owned(),
            result: result_label(Outcome::NotStarted.as_str()),
        });
        self.remove_request(raw);
    }

    /// The latest run ended SourceLeftFenced with its own fence, and the fence has not healed.
    fn unhealed_fence(&self) -> Option<String> {
        let block = self.block()?;
        let result = block.result.as_ref()?;
        if result.outcome != Some(Outcome::SourceLeftFenced)
            || result.warnings.contains(&PlannedFailoverWarning::FenceNotAttributable)
            || matches!(
                result.reason,
                Some(Reason::LegacyRunRefused | Reason::UnknownSite | Reason::AuthorityChanged)
            )
        {
            return None;
        }
        let source = block.source_site.as_deref()?;
        let writable = self
            .obs
            .site(source)
            .and_then(|site| site.probe.reading())
            .is_some_and(super::Reading::writable);
        let start = Self::at(block.start_time.as_ref());
        let failover_after = self
            .obs
            .failover_record()
            .is_some_and(|record| start.is_none_or(|start| record.time > start));
        (!writable && !failover_after).then(|| {
            format!(
                "planned failover refused: planned failover {} left source {source:?} fenced and the fence has not healed yet; the topology manager re-asserts it, or unfence it by hand, then re-annotate",
                block.run_id.as_deref().unwrap_or_default()
            )
        })
    }

    /// No live run: a new request, if any.
    pub(crate) fn idle_pass(&mut self) {
        self.clean_per_run_annotations();
        let Some(parsed) = self.request() else { return };
        let request = match parsed {
            Err(error) => {
                let target = error.requested_target().to_owned();
                let message = error.to_string();
                self.reject_without_block(&target, &error.input, message);
                return;
            }
            Ok(request) => request,
        };
        if self.hold_standing() {
            let run = self.hold_run().unwrap_or_default();
            let message = format!(
                "planned failover refused (ManualRecoveryPending): the automation hold of planned failover {run} stands; resolve the sites and acknowledge it first"
            );
            self.reject_without_block(&request.target, &request.raw, message);
            return;
        }
        if let Some(message) = self.unhealed_fence() {
            self.reject_without_block(&request.target, &request.raw, message);
            return;
        }
        if self.obs.active_site.as_deref() == Some(request.target.as_str()) {
            self.decision.event(
                "PlannedFailoverSkipped",
                format!(
                    "planned failover skipped: {:?} is already the active primary",
                    request.target
                ),
            );
            self.remove_request(&request.raw);
            return;
        }
        let run_id = self.obs.new_run_id.clone();
        let block = self.new_block(run_id, &request);
        self.accept(block, &request, true);
    }

    /// Admission of a new (or resumed Deferred) run.
    fn accept(&mut self, mut block: PlannedFailoverStatus, request: &Request, new: bool) {
        if self.obs.dragonfly_enabled {
            let message = "planned failover refused (DragonflyUnsupported): spec.dragonfly.enabled is true and this operator does not coordinate Dragonfly in a planned failover yet; disable Dragonfly for the group or move the primary by hand".to_owned();
            self.remove_request(&request.raw);
            self.end_block(
                block,
                Outcome::NotStarted,
                Some(Reason::DragonflyUnsupported),
                message,
                Vec::new(),
            );
            return;
        }
        if let Some(refused) = self.refuse_request_only(&request.target) {
            self.remove_request(&request.raw);
            self.end_block(
                block,
                Outcome::NotStarted,
                Some(refused.reason),
                refused.message,
                Vec::new(),
            );
            return;
        }
        if let Err(knob) = self.settings(request) {
            self.remove_request(&request.raw);
            let message = format!(
                "planned failover refused: {knob}; fix spec.plannedFailover and annotate again"
            );
            self.end_block(
                block,
                Outcome::NotStarted,
                Some(Reason::InvalidAnnotation),
                message,
                Vec::new(),
            );
            return;
        }
        let deadline = Time(self.now + self.t.admission_deadline);
        let unsettled = self
            .authority_unsettled(None)
            .map(|detail| (AdmissionWaitReason::AuthorityUnsettled, detail))
            .or_else(|| self.reservation_wait());
        if let Some(wait) = unsettled {
            // Admitted into the wait before validation: the annotation stays until validation.
            block.phase = Some(Phase::Admitting);
            block.admission =
                Some(Admission { deadline_time: Some(deadline), ..Admission::default() });
            self.decision.event(
                "PlannedFailoverStarted",
                format!(
                    "planned failover {} to {:?} accepted; waiting for admission",
                    block.run_id.as_deref().unwrap_or_default(),
                    request.target
                ),
            );
            self.set_wait(block, wait);
            return;
        }
        match self.validate(&request.target, true) {
            Err(refused)
                if refused.reason == Reason::CooldownActive
                    && self.obs.knobs.on_cooldown == OnCooldown::Defer =>
            {
                let retry = refused.retry.unwrap_or(self.now);
                self.defer(block, AdmissionDeferReason::CooldownActive, retry, refused.message);
            }
            Err(refused) => {
                self.remove_request(&request.raw);
                self.end_block(
                    block,
                    Outcome::NotStarted,
                    Some(refused.reason),
                    refused.message,
                    Vec::new(),
                );
            }
            Ok(()) => {
                if let Some((expiry, what)) = self.obs.deployment_hold.clone() {
                    let message = format!(
                        "planned failover deferred: the deployment failover-hold of {what} runs until {expiry}"
                    );
                    self.defer(block, AdmissionDeferReason::DeploymentHold, expiry, message);
                    return;
                }
                self.remove_request(&request.raw);
                block.phase = Some(Phase::Admitting);
                block.admission =
                    Some(Admission { deadline_time: Some(deadline), ..Admission::default() });
                block.message = Some(format!("admitting planned failover to {:?}", request.target));
                let verb = if new { "accepted" } else { "resumed" };
                self.decision.event(
                    "PlannedFailoverStarted",
                    format!(
                        "planned failover {} to {:?} {verb}",
                        block.run_id.as_deref().unwrap_or_default(),
                        request.target
                    ),
                );
                self.write(block);
            }
        }
    }

    fn defer(
        &mut self,
        mut block: PlannedFailoverStatus,
        reason: AdmissionDeferReason,
        retry: Timestamp,
        message: String,
    ) {
        let previous = self
            .block()
            .filter(|old| old.phase == Some(Phase::Deferred))
            .and_then(|old| old.admission.as_ref())
            .and_then(|admission| admission.defer_reason.clone());
        block.phase = Some(Phase::Deferred);
        block.admission = Some(Admission {
            defer_reason: Some(reason.clone()),
            retry_time: Some(Time(retry)),
            ..Admission::default()
        });
        block.message = Some(message.clone());
        if previous.as_ref() != Some(&reason) {
            self.decision.event("PlannedFailoverDeferred", message);
            self.decision.metrics.push(Metric::Deferred {
                reason: if reason == AdmissionDeferReason::CooldownActive {
                    "CooldownActive"
                } else {
                    "DeploymentHold"
                },
            });
        }
        self.decision.requeue_after = retry.duration_since(self.now).max(self.t.poll);
        self.write(block);
    }

    /// Records a wait reason (written, with an Event, only when it or its detail changes).
    fn set_wait(&mut self, mut block: PlannedFailoverStatus, (reason, detail): Wait) {
        let durable = block.admission.as_ref().and_then(|a| a.wait_reason.clone());
        let remembered = self.decision.memory.last_wait.clone();
        let changed = durable.as_ref() != Some(&reason)
            || remembered.as_ref().is_none_or(|(r, d)| r != reason.as_str() || d != &detail);
        let is_new =
            self.decision.write.is_some() || self.block().map(|b| &b.run_id) != Some(&block.run_id);
        if changed || is_new {
            let admission = block.admission.get_or_insert_with(Admission::default);
            admission.wait_reason = Some(reason.clone());
            let prefix = if block.phase == Some(Phase::Deferred) {
                "deferred; admission waiting"
            } else {
                "admission waiting"
            };
            block.message = Some(format!("{prefix} ({}): {detail}", reason.as_str()));
            self.decision.event(
                "PlannedFailoverAdmissionDelayed",
                format!(
                    "planned failover {} waits ({}): {detail}",
                    block.run_id.as_deref().unwrap_or_default(),
                    reason.as_str()
                ),
            );
            self.decision.memory.last_wait = Some((reason.as_str().to_owned(), detail));
            self.write(block);
        }
    }

    /// A Deferred run: cancelled, retargeted, moved to Admitting, or still waiting.
    pub(crate) fn deferred_pass(&mut self) {
        let Some(block) = self.block().cloned() else { return };
        let request = match self.request() {
            None => {
                let message = "planned failover canceled: the planned-failover annotation was removed while the run was Deferred".to_owned();
                self.end_block(
                    block,
                    Outcome::NotStarted,
                    Some(Reason::Canceled),
                    message,
                    Vec::new(),
                );
                return;
            }
            Some(Err(error)) => {
                let target = error.requested_target().to_owned();
                let message = error.to_string();
                self.reject_without_block(&target, &error.input, message);
                return;
            }
            Some(Ok(request)) => request,
        };
        // "A Deferred run instead takes a new request as its target when it resumes."
        let mut resumed = block.clone();
        resumed.target_site = Some(request.target.clone());
        resumed.settings = self.settings(&request).ok();
        resumed.admission = None;
        if let Some(detail) = self.authority_unsettled(Self::at(block.start_time.as_ref())) {
            resumed.phase = Some(Phase::Admitting);
            resumed.admission = Some(Admission {
                deadline_time: Some(Time(self.now + self.t.admission_deadline)),
                ..Admission::default()
            });
            self.set_wait(resumed, (AdmissionWaitReason::AuthorityUnsettled, detail));
            return;
        }
        if let Some(wait) = self.reservation_wait() {
            let mut still = block.clone();
            still.phase = Some(Phase::Deferred);
            self.set_wait(still, wait);
            return;
        }
        let retry = block.admission.as_ref().and_then(|a| Self::at(a.retry_time.as_ref()));
        if retry.is_some_and(|retry| retry > self.now) {
            // A deployment hold may have turned into a cooldown: re-derive the defer reason.
            let was_hold = block.admission.as_ref().and_then(|a| a.defer_reason.clone())
                == Some(AdmissionDeferReason::DeploymentHold);
            if was_hold && self.obs.deployment_hold.is_none() {
                self.accept(resumed, &request, false);
            }
            return;
        }
        self.accept(resumed, &request, false);
    }

    /// Who the claim could be granted against, or why the run waits.
    fn claim_wait(&mut self, target: &str) -> Result<(String, String), Wait> {
        let busy = self.obs.busy.iter().min().copied();
        if let Some(busy) = busy {
            let reason = match busy {
                Busy::Promotion => AdmissionWaitReason::PromotionInFlight,
                Busy::Update => AdmissionWaitReason::UpdateInFlight,
                Busy::Restore => AdmissionWaitReason::RestoreInFlight,
                Busy::Bootstrap => AdmissionWaitReason::BootstrapInFlight,
                Busy::Recovery => AdmissionWaitReason::RecoveryInFlight,
                Busy::KeyringAdmission => AdmissionWaitReason::KeyringRotation,
                Busy::DragonflyUpgrade => AdmissionWaitReason::DragonflyUpgradeInFlight,
            };
            return Err((reason, format!("another topology change holds the sites ({busy})")));
        }
        let manager = match self.obs.manager {
            ManagerState::Ready => None,
            ManagerState::Absent => Some(AdmissionWaitReason::ManagerAbsent),
            ManagerState::NotReady => Some(AdmissionWaitReason::ManagerNotReady),
            ManagerState::Retiring => Some(AdmissionWaitReason::ManagerRetiring),
            ManagerState::PredecessorBusy => Some(AdmissionWaitReason::PredecessorBusy),
        };
        if let Some(reason) = manager {
            return Err((reason, "the topology manager cannot grant the claim yet".to_owned()));
        }
        match &self.obs.claim {
            ClaimSlot::Free => {}
            ClaimSlot::Run(run) if *run == self.run_id() => {}
            ClaimSlot::Run(run) => {
                return Err((
                    AdmissionWaitReason::ClaimHeld,
                    format!("planned failover {run} holds the claim"),
                ));
            }
            ClaimSlot::Hold(run) => {
                return Err((
                    AdmissionWaitReason::ClaimHeld,
                    format!(
                        "the automation hold of planned failover {} holds the claim",
                        run.as_deref().unwrap_or("(unnamed)")
                    ),
                ));
            }
        }
        let Some(source) = self.obs.active_site.clone() else {
            return Err((
                AdmissionWaitReason::AuthorityUnsettled,
                "status.activeSite is empty".to_owned(),
            ));
        };
        let source_uuid = match self.obs.site(&source).map(|site| &site.probe) {
            None | Some(Probe::Unreadable) => {
                return Err((
                    AdmissionWaitReason::PeerUnreadable,
                    format!("source {source:?} did not answer"),
                ));
            }
            Some(Probe::Answered(reading)) => {
                if !reading.writable() {
                    return Err((
                        AdmissionWaitReason::AuthorityUnsettled,
                        format!("source {source:?} reads read-only"),
                    ));
                }
                match &reading.server_uuid {
                    None => {
                        return Err((
                            AdmissionWaitReason::PeerUnreadable,
                            format!("source {source:?} did not return @@server_uuid"),
                        ));
                    }
                    Some(uuid) => uuid.clone(),
                }
            }
        };
        match self.obs.site(target).map(|site| &site.probe) {
            None | Some(Probe::Unreadable) => {
                return Err((
                    AdmissionWaitReason::TargetNotReady,
                    format!("target {target:?} did not answer"),
                ));
            }
            Some(Probe::Answered(reading)) => {
                if reading.writable() {
                    return Err((
                        AdmissionWaitReason::AuthorityUnsettled,
                        format!("target {target:?} reads writable"),
                    ));
                }
                let ready = reading.server_uuid.is_some()
                    && reading.channel.as_ref().is_some_and(|channel| {
                        channel.healthy() && channel.source_site.as_deref() == Some(source.as_str())
                    });
                if !ready {
                    return Err((
                        AdmissionWaitReason::TargetNotReady,
                        format!(
                            "target {target:?} is not replicating from {source:?} with both threads running and no applier error"
                        ),
                    ));
                }
            }
        }
        let mut unreadable_reader = false;
        for site in &self.obs.sites {
            if site.name == source || site.name == target {
                continue;
            }
            let strict =
                matches!(site.role, SiteRole::PrimaryCandidate | SiteRole::DisasterRecovery);
            match &site.probe {
                Probe::Unreadable if strict => {
                    return Err((
                        AdmissionWaitReason::PeerUnreadable,
                        format!("peer {:?} did not answer", site.name),
                    ));
                }
                Probe::Unreadable => unreadable_reader = true,
                Probe::Answered(reading) if reading.writable() => {
                    return Err((
                        AdmissionWaitReason::AuthorityUnsettled,
                        format!("{:?} reads writable beside the source", site.name),
                    ));
                }
                Probe::Answered(_) => {}
            }
        }
        if unreadable_reader {
            self.warn(PlannedFailoverWarning::UnreachablePeers);
        }
        Ok((source, source_uuid))
    }

    /// An Admitting run: deadline, re-validation, waits, and the claim grant.
    pub(crate) fn admitting_pass(&mut self) {
        let Some(block) = self.block().cloned() else { return };
        let run_id = self.run_id();
        let target = self.target();
        if self.obs.status_write_failing && self.obs.claim == ClaimSlot::Run(run_id.clone()) {
            // The Fencing write is what stalls: the claim is taken, no fence intent is durable.
            if self.stall_check() {
                return;
            }
        }
        let deadline = block.admission.as_ref().and_then(|a| Self::at(a.deadline_time.as_ref()));
        let mut validated = true;
        if let Some(parsed) = self.request() {
            match parsed {
                Ok(request) if request.target == target => {
                    let same_wait = request.max_lag_wait.is_none()
                        || block
                            .settings
                            .as_ref()
                            .and_then(|s| s.max_lag_wait.as_ref())
                            .map(Duration::as_str)
                            == Some(
                                duration_text(request.max_lag_wait.unwrap_or_default()).as_str(),
                            );
                    if same_wait {
                        validated = false;
                    } else {
                        self.decision.event(
                            "PlannedFailoverRejected",
                            "planned-failover annotation ignored: a previous planned failover is still running",
                        );
                        self.remove_request(&request.raw);
                    }
                }
                Ok(request) => {
                    self.decision.event(
                        "PlannedFailoverRejected",
                        "planned-failover annotation ignored: a previous planned failover is still running",
                    );
                    self.remove_request(&request.raw);
                }
                Err(error) => {
                    let target = error.requested_target().to_owned();
                    let message = error.to_string();
                    self.reject_without_block(&target, &error.input, message);
                }
            }
        }
        if deadline.is_some_and(|deadline| self.now >= deadline) {
            let last = block
                .admission
                .as_ref()
                .and_then(|a| a.wait_reason.as_ref())
                .map_or("none", |r| r.as_str())
                .to_owned();
            let message = format!(
                "planned failover not started: the claim was not granted within {}; last wait reason {last}",
                self.t.admission_deadline
            );
            self.remove_own_request(&target);
            self.end(Outcome::NotStarted, Some(Reason::AdmissionTimeout), message);
            return;
        }
        if let Some((expiry, what)) = self.obs.deployment_hold.clone() {
            let message = format!(
                "planned failover not started: a deployment failover-hold of {what} (until {expiry}) appeared while the run was Admitting"
            );
            self.remove_own_request(&target);
            self.end(Outcome::NotStarted, Some(Reason::ConcurrentOperation), message);
            return;
        }
        let unsettled = self
            .authority_unsettled(Self::at(block.start_time.as_ref()))
            .map(|detail| (AdmissionWaitReason::AuthorityUnsettled, detail))
            .or_else(|| self.reservation_wait());
        if let Some(wait) = unsettled {
            self.set_wait(block, wait);
            return;
        }
        if let Err(refused) = self.validate(&target, true) {
            if refused.reason == Reason::CooldownActive
                && !validated
                && self.obs.knobs.on_cooldown == OnCooldown::Defer
            {
                let retry = refused.retry.unwrap_or(self.now);
                self.defer(block, AdmissionDeferReason::CooldownActive, retry, refused.message);
                return;
            }
            self.remove_own_request(&target);
            self.end(Outcome::NotStarted, Some(refused.reason), refused.message);
            return;
        }
        if !validated {
            self.remove_own_request(&target);
        }
        match self.claim_wait(&target) {
            Err(wait) => self.set_wait(block, wait),
            Ok((source, source_uuid)) => self.grant(block, source, source_uuid),
        }
    }

    /// While a run is live (Admitting or later): a leftover copy of its own request (the same
    /// target, with the same or no maxLagWait) is removed silently, any other request with a
    /// PlannedFailoverRejected Event.
    pub(crate) fn requests_while_live(&mut self) {
        let Some(parsed) = self.request() else { return };
        match parsed {
            Ok(request) => {
                let ours = self
                    .block()
                    .and_then(|b| b.settings.as_ref())
                    .and_then(|s| s.max_lag_wait.as_ref())
                    .and_then(|d| d.to_std().ok());
                let same_wait =
                    request.max_lag_wait.is_none_or(|wait| Some(wait.unsigned_abs()) == ours);
                if request.target != self.target() || !same_wait {
                    self.decision.event(
                        "PlannedFailoverRejected",
                        "planned-failover annotation ignored: a previous planned failover is still running",
                    );
                }
                self.remove_request(&request.raw);
            }
            Err(error) => {
                let target = error.requested_target().to_owned();
                let message = error.to_string();
                self.reject_without_block(&target, &error.input, message);
            }
        }
    }

    /// Removes the request annotation when it is this run's own.
    fn remove_own_request(&mut self, target: &str) {
        if let Some(Ok(request)) = self.request()
            && request.target == target
            && !self.decision.annotations.iter().any(|change| matches!(change, AnnotationChange::Remove { key, .. } if *key == PLANNED_FAILOVER))
        {
            self.remove_request(&request.raw);
        }
    }

    /// The claim is granted: the Fencing record, then the fence.
    fn grant(&mut self, mut block: PlannedFailoverStatus, source: String, source_uuid: String) {
        let run_id = self.run_id();
        let target = self.target();
        block.phase = Some(Phase::Fencing);
        block.source_site = Some(source.clone());
        block.claim_time = Some(self.now_time());
        block.claim_baseline = Some(match self.obs.failover_record() {
            Some(record) => ClaimBaseline {
                time: Some(Time(record.time)),
                target: Some(record.target.clone()),
                ..ClaimBaseline::default()
            },
            None => ClaimBaseline::default(),
        });
        if let Some(admission) = block.admission.as_mut() {
            admission.wait_reason = None;
        }
        block.fence = Some(Fence {
            state: Some(FenceState::Intended),
            intent_time: Some(self.now_time()),
            source_server_uuid: Some(source_uuid.clone()),
            ..Fence::default()
        });
        block.message = Some(format!("fencing {source:?}"));
        self.decision.event(
            "PlannedFailoverClaimGranted",
            format!(
                "planned failover {run_id}: claim granted; source {source:?}, target {target:?}"
            ),
        );
        self.write(block);
        self.decision.effects.push(Effect::TakeClaim { run_id });
        self.decision.effects.push(Effect::Fence { site: source, server_uuid: source_uuid });
    }
}
