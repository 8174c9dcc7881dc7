//! How runs end: terminal records and what they release or hold, the automation hold and its
//! acknowledgement, status stalls and the terminal marker, manager absence, legacy blocks.

use bloodraven_crd::annotations::{
    ACKNOWLEDGE_PLANNED_FAILOVER_HOLD, CompactTime, PLANNED_FAILOVER_MANAGER_ABSENT_SINCE,
    PLANNED_FAILOVER_PER_RUN, PLANNED_FAILOVER_STALL_SINCE, PLANNED_FAILOVER_TERMINAL, RunSince,
    TerminalMarker, TerminalRecord,
};
use bloodraven_crd::group::{
    PlannedFailoverHold, PlannedFailoverOutcome as Outcome, PlannedFailoverPhase as Phase,
    PlannedFailoverReason as Reason, PlannedFailoverResult, PlannedFailoverStatus,
    PlannedFailoverWarning as Warning,
};
use bloodraven_crd::{Condition, ConditionReason, ConditionStatus, ConditionType};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::decision::{AnnotationChange, Effect, HoldChange, Metric, StatusWrite};
use super::model::{ClaimSlot, ManagerState};
use super::request::parse_acknowledgement;
use super::{Pass, result_label};

impl Pass<'_> {
    /// Ends the current run.
    pub(crate) fn end(&mut self, outcome: Outcome, reason: Option<Reason>, message: String) {
        let block = self.block().cloned().unwrap_or_default();
        self.end_block(block, outcome, reason, message, Vec::new());
    }

    /// The terminal record of `block`, with what it releases, names or holds.
    pub(crate) fn end_block(
        &mut self,
        mut block: PlannedFailoverStatus,
        outcome: Outcome,
        reason: Option<Reason>,
        message: String,
        extra: Vec<Warning>,
    ) {
        for warning in extra {
            self.warn(warning);
        }
        let held_claim =
            self.holds_claim() && block.run_id == self.block().and_then(|b| b.run_id.clone());
        let warnings = self.warnings();
        let run_id = block.run_id.clone().unwrap_or_default();
        let target = block.target_site.clone().unwrap_or_default();
        let source = block.source_site.clone();
        block.phase =
            Some(if outcome == Outcome::Succeeded { Phase::Succeeded } else { Phase::Failed });
        block.result = Some(PlannedFailoverResult {
            outcome: Some(outcome.clone()),
            reason: reason.clone(),
            warnings: warnings.clone(),
            completion_time: Some(self.now_time()),
            ..PlannedFailoverResult::default()
        });
        if let Some(promotion) = block.promotion.as_mut() {
            promotion.warnings = warnings.clone();
        }
        block.message = Some(message.clone());
        let start = Self::at(block.start_time.as_ref());
        self.write(block);
        let reason_text = reason.as_ref().map_or("", |r| r.as_str()).to_owned();
        let tag = if reason_text.is_empty() {
            outcome.as_str().to_owned()
        } else {
            format!("{}:{reason_text}", outcome.as_str())
        };
        match outcome {
            Outcome::Succeeded => {
                let listed = if warnings.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; warnings: {}",
                        warnings.iter().map(|w| w.as_str()).collect::<Vec<_>>().join(", ")
                    )
                };
                self.decision.event(
                    "PlannedFailoverSucceeded",
                    format!("planned failover {run_id}: {message}{listed}"),
                );
                if warnings.contains(&Warning::DnsUpdateFailed) {
                    self.decision.event("PlannedFailoverDNSUpdateFailed", format!("planned failover {run_id}: the promotion succeeded but DNS did not update"));
                }
            }
            Outcome::NotStarted => {
                self.decision.event(
                    "PlannedFailoverRejected",
                    format!("planned failover {run_id} {tag}: {message}"),
                );
            }
            Outcome::ManualRecoveryRequired => {
                self.decision.event("PlannedFailoverManualRecoveryRequired", format!("planned failover {run_id} {tag}: {message}; automatic failover is held until acknowledged"));
            }
            Outcome::PromotedUnconfirmed => {
                self.decision.event(
                    "PlannedFailoverPromotionConfirmationFailed",
                    format!("planned failover {run_id} {tag}: {message}"),
                );
                self.decision.event(
                    "PlannedFailoverFailed",
                    format!("planned failover {run_id} {tag}: {message}"),
                );
            }
            _ => {
                self.decision.event(
                    "PlannedFailoverFailed",
                    format!("planned failover {run_id} {tag}: {message}"),
                );
            }
        }
        self.decision.metrics.push(Metric::Finished {
            target_site: target.clone(),
            result: result_label(outcome.as_str()),
        });
        if let Some(start) = start {
            self.decision.metrics.push(Metric::Duration {
                target_site: target.clone(),
                seconds: self.now.duration_since(start).as_secs_f64(),
            });
        }
        if outcome == Outcome::ManualRecoveryRequired {
            self.set_hold(
                &run_id,
                reason.clone().unwrap_or(Reason::InternalError),
                source.as_deref(),
                &target,
            );
            return;
        }
        if !held_claim {
            return;
        }
        self.name_after_end(&outcome, reason.as_ref(), source.as_deref(), &target, &warnings);
        self.decision.effects.push(Effect::ReleaseClaim { why: "terminal" });
        self.decision.log(
            "planned failover: claim released",
            vec![("why", "terminal".to_owned()), ("run", run_id)],
        );
    }

    /// What a SourceLeftFenced or PromotedUnconfirmed end names for the topology manager.
    fn name_after_end(
        &mut self,
        outcome: &Outcome,
        reason: Option<&Reason>,
        source: Option<&str>,
        target: &str,
        warnings: &[Warning],
    ) {
        let manual = matches!(
            reason,
            Some(Reason::UnknownSite | Reason::LegacyRunRefused | Reason::SourceLost)
        ) || warnings.contains(&Warning::FenceNotAttributable)
            || (reason == Some(&Reason::AuthorityChanged)
                && self.decision.memory.fence_sent_to.is_none());
        match outcome {
            Outcome::SourceLeftFenced if !manual => {
                let Some(source) = source else { return };
                let history_allows =
                    self.obs.failover_record().is_none_or(|record| record.target == source);
                if history_allows {
                    self.decision.effects.push(Effect::NameForReassert { site: source.to_owned() });
                    self.decision.log(
                        "planned failover: named fenced source for re-assert",
                        vec![("site", source.to_owned())],
                    );
                }
            }
            Outcome::PromotedUnconfirmed
                if !matches!(
                    reason,
                    Some(
                        Reason::ManagerUnavailable | Reason::UnknownSite | Reason::LegacyRunRefused
                    )
                ) =>
            {
                let baseline = self.block().and_then(|b| b.claim_baseline.as_ref());
                let baseline_time = baseline.and_then(|b| Self::at(b.time.as_ref()));
                let unchanged = self.obs.failover_record().is_none_or(|record| {
                    Some(record.time) == baseline_time || self.record_is_own(record)
                });
                if unchanged {
                    self.decision
                        .effects
                        .push(Effect::NameLastFailoverTarget { site: target.to_owned() });
                } else {
                    self.decision.log("planned failover: a failover was recorded during the run; the unconfirmed target is not named", vec![("site", target.to_owned())]);
                }
            }
            _ => {}
        }
    }

    /// Records the hold and its condition in the terminal write; the claim becomes the hold.
    fn set_hold(&mut self, run_id: &str, reason: Reason, source: Option<&str>, target: &str) {
        let mut ambiguous = vec![target.to_owned()];
        if let Some(source) = source {
            ambiguous.push(source.to_owned());
        }
        for site in self.writable_sites(&[]).into_iter().chain(
            self.obs
                .sites
                .iter()
                .filter(|s| s.probe == super::Probe::Unreadable)
                .map(|s| s.name.clone()),
        ) {
            if !ambiguous.contains(&site) {
                ambiguous.push(site);
            }
        }
        let hold = PlannedFailoverHold {
            run_id: Some(run_id.to_owned()),
            reason: Some(reason.clone()),
            source_site: source.map(str::to_owned),
            target_site: Some(target.to_owned()),
            ambiguous_sites: ambiguous.clone(),
            hold_time: Some(self.now_time()),
            ..PlannedFailoverHold::default()
        };
        let mut condition =
            Condition::new(ConditionType::AutomaticFailoverHeld, ConditionStatus::True);
        condition.reason = Some(ConditionReason::PlannedFailoverManualRecoveryRequired);
        condition.observed_generation = Some(self.obs.generation);
        condition.message = Some(format!(
            "planned failover run {run_id} ended ManualRecoveryRequired ({}); writable or ambiguous sites: {}. Automatic failover is held: resolve the split brain by hand, then annotate {ACKNOWLEDGE_PLANNED_FAILOVER_HOLD}={run_id}",
            reason.as_str(),
            ambiguous.join(", ")
        ));
        if let Some(write) = self.decision.write.as_mut() {
            write.hold = HoldChange::Set(hold, condition);
        }
        self.decision.effects.push(Effect::KeepClaimAsHold { run_id: run_id.to_owned() });
    }

    /// The run a ManualRecoveryRequired terminal marker holds for.
    pub(crate) fn hold_marker_run(&self) -> Option<String> {
        let marker = TerminalMarker::parse(self.obs.annotation(PLANNED_FAILOVER_TERMINAL)?);
        let record = marker.record()?;
        (record.outcome() == Outcome::ManualRecoveryRequired.as_str())
            .then(|| record.run_id().to_owned())
    }

    /// The run the standing hold names.
    pub(crate) fn hold_run(&self) -> Option<String> {
        self.record
            .hold
            .as_ref()
            .and_then(|h| h.run_id.clone())
            .or_else(|| self.hold_marker_run())
            .or_else(|| match &self.obs.claim {
                ClaimSlot::Hold(run) => run.clone(),
                _ => None,
            })
    }

    /// Acknowledgements, orphan holds and reminders, before the run itself.
    pub(crate) fn hold_pass(&mut self) {
        let standing = self.hold_standing();
        if let Some(raw) = self.obs.annotation(ACKNOWLEDGE_PLANNED_FAILOVER_HOLD).map(str::to_owned)
        {
            self.decision.annotations.push(AnnotationChange::Remove {
                key: ACKNOWLEDGE_PLANNED_FAILOVER_HOLD,
                value: raw.clone(),
            });
            let acked = match parse_acknowledgement(&raw) {
                Ok(run) => run,
                Err(error) => {
                    self.decision
                        .event("PlannedFailoverHoldAcknowledgmentIgnored", error.to_string());
                    return;
                }
            };
            let held_run = self.hold_run();
            if let ClaimSlot::Run(other) = &self.obs.claim
                && *other != acked
            {
                self.decision.event("PlannedFailoverHoldAcknowledgmentIgnored", format!("acknowledgement for {acked} ignored: the claim is held for planned failover {other}"));
                return;
            }
            if !standing {
                self.decision.event("PlannedFailoverHoldAcknowledgmentIgnored", format!("no automation hold is standing for planned failover {acked}; nothing was resumed"));
                return;
            }
            if held_run.as_deref() != Some(acked.as_str()) {
                self.decision.event(
                    "PlannedFailoverHoldAcknowledgmentIgnored",
                    format!("acknowledgement for {acked} ignored: the standing hold belongs to planned failover {}", held_run.as_deref().unwrap_or("(unnamed; remove the condition by hand)")),
                );
                return;
            }
            self.acknowledge(&acked);
            return;
        }
        if let ClaimSlot::Hold(run) = &self.obs.claim
            && self.record.hold.is_none()
            && !self.record.hold_condition
            && self.hold_marker_run().is_none()
        {
            let run = run.clone().unwrap_or_default();
            self.decision.log(
                "planned failover: released an automation hold no durable record backs",
                vec![("run", run.clone())],
            );
            self.decision.log(
                "planned failover: claim released",
                vec![("why", "orphanHold".to_owned()), ("run", run)],
            );
            self.decision.effects.push(Effect::ReleaseHold { why: "orphanHold" });
            return;
        }
        if standing {
            let held_at = self.record.hold.as_ref().and_then(|h| Self::at(h.hold_time.as_ref()));
            let last = self.decision.memory.hold_reminded_at.or(held_at);
            match last {
                None => self.decision.memory.hold_reminded_at = Some(self.now),
                Some(last) if self.now.duration_since(last) >= self.t.hold_reminder => {
                    let run = self.hold_run().unwrap_or_else(|| "(unnamed)".to_owned());
                    self.decision.event("PlannedFailoverHoldPersisted", format!("the automation hold of planned failover {run} still stands; resolve the sites and acknowledge it"));
                    self.decision.memory.hold_reminded_at = Some(self.now);
                }
                Some(_) => {}
            }
            self.decision.requeue_after = self.decision.requeue_after.min(self.t.hold_reminder);
        }
    }

    fn acknowledge(&mut self, run_id: &str) {
        let mut condition =
            Condition::new(ConditionType::AutomaticFailoverHeld, ConditionStatus::False);
        condition.reason = Some(ConditionReason::PlannedFailoverHoldAcknowledged);
        condition.observed_generation = Some(self.obs.generation);
        condition.message =
            Some(format!("the automation hold of planned failover {run_id} was acknowledged"));
        let mut block = None;
        if let Some(marker) = self.obs.annotation(PLANNED_FAILOVER_TERMINAL) {
            self.decision.annotations.push(AnnotationChange::Remove {
                key: PLANNED_FAILOVER_TERMINAL,
                value: marker.to_owned(),
            });
            // "writes the terminal record if only the marker carried the hold"
            if let Some(current) = self.block()
                && current.run_id.as_deref() == Some(run_id)
                && !current.phase.as_ref().is_some_and(Phase::is_terminal)
            {
                let mut ended = current.clone();
                ended.phase = Some(Phase::Failed);
                ended.result = Some(PlannedFailoverResult {
                    outcome: Some(Outcome::ManualRecoveryRequired),
                    reason: self.marker_record().map(|r| Reason::parse(r.reason())),
                    warnings: vec![Warning::StatusStalled],
                    completion_time: Some(self.now_time()),
                    ..PlannedFailoverResult::default()
                });
                block = Some(ended);
            }
        }
        self.decision.write = Some(StatusWrite {
            resource_version: self.obs.resource_version.clone(),
            block,
            hold: HoldChange::Clear(condition),
            last_failover: None,
        });
        self.decision.effects.push(Effect::ReleaseHold { why: "acknowledged" });
        self.decision.event(
            "PlannedFailoverHoldAcknowledged",
            format!(
                "the automation hold of planned failover {run_id} was acknowledged and cleared"
            ),
        );
        self.decision.log(
            "planned failover: claim released",
            vec![("why", "acknowledged".to_owned()), ("run", run_id.to_owned())],
        );
        self.decision.memory.hold_reminded_at = None;
    }

    fn marker_record(&self) -> Option<TerminalRecord> {
        TerminalMarker::parse(self.obs.annotation(PLANNED_FAILOVER_TERMINAL)?).record().cloned()
    }

    /// A terminal marker naming the current run ends it: the terminal status record is written
    /// from the marker (retried every 10 seconds), and a non-hold marker is deleted once the
    /// terminal record landed. True when the marker decided the pass.
    pub(crate) fn marker_ends_run(&mut self) -> bool {
        if self.decision.write.is_some() {
            return true;
        }
        let Some(record) = self.marker_record() else { return false };
        let Some(block) = self.block() else { return false };
        if block.run_id.as_deref() != Some(record.run_id()) {
            return false;
        }
        let raw = self.obs.annotation(PLANNED_FAILOVER_TERMINAL).unwrap_or_default().to_owned();
        let hold = record.outcome() == Outcome::ManualRecoveryRequired.as_str();
        if block.phase.as_ref().is_some_and(Phase::is_terminal) {
            if !hold {
                self.decision
                    .annotations
                    .push(AnnotationChange::Remove { key: PLANNED_FAILOVER_TERMINAL, value: raw });
            }
            return true;
        }
        let mut ended = block.clone();
        let mut warnings: Vec<Warning> =
            record.warnings().unwrap_or_default().iter().map(|w| Warning::parse(w)).collect();
        if !warnings.contains(&Warning::StatusStalled) {
            warnings.push(Warning::StatusStalled);
        }
        let outcome = Outcome::parse(record.outcome());
        ended.phase =
            Some(if outcome == Outcome::Succeeded { Phase::Succeeded } else { Phase::Failed });
        ended.result = Some(PlannedFailoverResult {
            outcome: Some(outcome.clone()),
            reason: (!record.reason().is_empty()).then(|| Reason::parse(record.reason())),
            warnings,
            completion_time: Some(self.now_time()),
            ..PlannedFailoverResult::default()
        });
        ended.message =
            Some(format!("ended by terminal marker: {}:{}", record.outcome(), record.reason()));
        let confirmed = ended
            .promotion
            .as_ref()
            .and_then(|p| Self::at(p.confirmation_time.as_ref()))
            .or(self.confirmed_annotation());
        let fenced = ended.fence.as_ref().and_then(|f| f.gtid_set.clone());
        self.write(ended);
        let target = self.target();
        if outcome == Outcome::Succeeded
            && let (Some(time), Some(write)) = (confirmed, self.decision.write.as_mut())
        {
            write.last_failover = Some(bloodraven_crd::group::LastFailover {
                time: Some(Time(time)),
                target: Some(target),
                promotion_gtid_executed: fenced,
                ..Default::default()
            });
        }
        if hold && self.record.hold.is_none() {
            let mut sites: Vec<String> = vec![self.target()];
            if !self.source().is_empty() {
                sites.push(self.source());
            }
            for site in &self.obs.sites {
                if !sites.contains(&site.name) {
                    sites.push(site.name.clone());
                }
            }
            let hold_record = PlannedFailoverHold {
                run_id: Some(record.run_id().to_owned()),
                reason: Some(Reason::parse(record.reason())),
                source_site: Some(self.source()).filter(|s| !s.is_empty()),
                target_site: Some(self.target()),
                ambiguous_sites: sites,
                hold_time: Some(self.now_time()),
                ..PlannedFailoverHold::default()
            };
            let mut condition =
                Condition::new(ConditionType::AutomaticFailoverHeld, ConditionStatus::True);
            condition.reason = Some(ConditionReason::PlannedFailoverManualRecoveryRequired);
            condition.observed_generation = Some(self.obs.generation);
            if let Some(write) = self.decision.write.as_mut() {
                write.hold = HoldChange::Set(hold_record, condition);
            }
        }
        self.decision.requeue_after = self.t.terminal_retry;
        true
    }

    /// The stall-since annotation of this run.
    pub(crate) fn stall_annotation(&self) -> Option<Timestamp> {
        let since = RunSince::parse(
            PLANNED_FAILOVER_STALL_SINCE,
            self.obs.annotation(PLANNED_FAILOVER_STALL_SINCE)?,
        )
        .ok()?;
        (since.run_id() == self.run_id()).then(|| since.since().timestamp())
    }

    /// "The first committed status write for the run removes it": the run's stall-since goes
    /// with every status write of the run (annotations commit only after their write, and are
    /// dropped with a write that fails), so a later failure starts a fresh stall window.
    pub(crate) fn stall_since_goes_with_the_write(&mut self) {
        let Some(write) = &self.decision.write else { return };
        let run = write
            .block
            .as_ref()
            .and_then(|block| block.run_id.clone())
            .unwrap_or_else(|| self.run_id());
        let set_now = self.decision.bookkeeping.iter().find_map(|change| match change {
            AnnotationChange::Set { key, value } if *key == PLANNED_FAILOVER_STALL_SINCE => {
                Some(value.clone())
            }
            _ => None,
        });
        let Some(value) = set_now
            .or_else(|| self.obs.annotation(PLANNED_FAILOVER_STALL_SINCE).map(str::to_owned))
        else {
            return;
        };
        let ours = RunSince::parse(PLANNED_FAILOVER_STALL_SINCE, &value)
            .is_ok_and(|since| !run.is_empty() && since.run_id() == run);
        let queued = self.decision.annotations.iter().any(|change| {
            matches!(change, AnnotationChange::Remove { key, .. } if *key == PLANNED_FAILOVER_STALL_SINCE)
        });
        if ours && !queued {
            self.decision
                .annotations
                .push(AnnotationChange::Remove { key: PLANNED_FAILOVER_STALL_SINCE, value });
        }
    }

    fn set_run_since(&mut self, key: &'static str) {
        if let Some(since) = CompactTime::truncating(self.now)
            && let Ok(value) = RunSince::new(key, self.run_id(), since)
        {
            self.decision.bookkeeping.push(AnnotationChange::Set { key, value: value.to_string() });
        }
    }

    /// Status stalls (true when the stall decided the pass).
    pub(crate) fn stall_check(&mut self) -> bool {
        let since = self.stall_annotation();
        if !self.obs.status_write_failing {
            return false;
        }
        let Some(since) = since else {
            self.set_run_since(PLANNED_FAILOVER_STALL_SINCE);
            return false;
        };
        let released = self.decision.memory.claim_released
            || self.block().and_then(|b| b.phase.as_ref()) == Some(&Phase::Publishing);
        let window = if released { self.t.status_stall_released } else { self.t.status_stall };
        if self.now.duration_since(since) < window {
            return false;
        }
        let memory = &self.decision.memory;
        let phase = self.block().and_then(|b| b.phase.clone());
        let (outcome, reason) = if memory.confirmed_at.is_some() || phase == Some(Phase::Publishing)
        {
            let durable = self.confirmed_annotation().is_some()
                || self.obs.failover_record().is_some_and(|record| self.record_is_own(record));
            if !durable {
                self.decision.log("planned failover: status stalled, but the promotion's failover record is not durable yet; retrying", vec![("run", self.run_id())]);
                return true;
            }
            (Outcome::Succeeded, None)
        } else if memory.write_possibly_sent {
            (Outcome::PromotedUnconfirmed, Some(Reason::StatusStalled))
        } else if phase == Some(Phase::Admitting) {
            (Outcome::NotStarted, Some(Reason::StatusStalled))
        } else if memory.fence_sent_to.is_none()
            && memory.run_id.as_deref() == Some(self.run_id().as_str())
            && self.record.memory.run_id.is_some()
        {
            (Outcome::RolledBack, Some(Reason::StatusStalled))
        } else {
            (Outcome::SourceLeftFenced, Some(Reason::StatusStalled))
        };
        if let Some(other) = self.hold_marker_run()
            && other != self.run_id()
        {
            // Another run's hold evidence is never replaced: keep retrying, keep the claim.
            return true;
        }
        let mut warnings: Vec<String> =
            self.warnings().iter().map(|w| w.as_str().to_owned()).collect();
        if !warnings.iter().any(|w| w == Warning::StatusStalled.as_str()) {
            warnings.push(Warning::StatusStalled.as_str().to_owned());
        }
        let Ok(marker) = TerminalRecord::new(
            self.run_id(),
            outcome.as_str(),
            reason.as_ref().map_or("", |r| r.as_str()),
            Some(warnings),
        ) else {
            return true;
        };
        self.decision.annotations.push(AnnotationChange::Set {
            key: PLANNED_FAILOVER_TERMINAL,
            value: marker.to_string(),
        });
        let target = self.target();
        let source = self.source();
        self.decision.metrics.push(Metric::Finished {
            target_site: target.clone(),
            result: result_label(outcome.as_str()),
        });
        if outcome == Outcome::ManualRecoveryRequired {
            self.decision.effects.push(Effect::KeepClaimAsHold { run_id: self.run_id() });
        } else {
            let warnings = self.warnings();
            self.name_after_end(&outcome, reason.as_ref(), Some(&source), &target, &warnings);
            if !released {
                self.decision.effects.push(Effect::ReleaseClaim { why: "terminalMarker" });
                self.decision.log(
                    "planned failover: claim released",
                    vec![("why", "terminalMarker".to_owned()), ("run", self.run_id())],
                );
            }
        }
        self.decision.log(
            "planned failover: status stalled; ended the run with a terminal marker",
            vec![("run", self.run_id()), ("outcome", outcome.as_str().to_owned())],
        );
        self.decision.event("PlannedFailoverStatusStalled", format!("planned failover {}: status writes failed since {since}; ended the run {}{} with a terminal marker", self.run_id(), outcome.as_str(), reason.as_ref().map(|r| format!(":{}", r.as_str())).unwrap_or_default()));
        self.decision.write = None;
        self.decision.requeue_after = self.t.terminal_retry;
        true
    }

    /// No topology manager (true when the absence decided the pass: no MySQL access).
    pub(crate) fn manager_check(&mut self) -> bool {
        let key = PLANNED_FAILOVER_MANAGER_ABSENT_SINCE;
        let annotation = self
            .obs
            .annotation(key)
            .and_then(|value| RunSince::parse(key, value).ok())
            .filter(|since| since.run_id() == self.run_id());
        if self.obs.manager != ManagerState::Absent {
            if let Some(since) = annotation {
                self.decision
                    .annotations
                    .push(AnnotationChange::Remove { key, value: since.to_string() });
            }
            self.decision.memory.manager_absent_warned = false;
            return false;
        }
        let Some(since) = annotation.map(|s| s.since().timestamp()) else {
            self.set_run_since(key);
            return true;
        };
        let absent = self.now.duration_since(since);
        if absent >= self.t.manager_absent_warning && !self.decision.memory.manager_absent_warned {
            self.decision.memory.manager_absent_warned = true;
            self.decision.event(
                "PlannedFailoverStalledManagerAbsent",
                format!(
                    "planned failover {} holds the claim and no topology manager ran for {absent}",
                    self.run_id()
                ),
            );
        }
        if absent < self.t.manager_absent_end {
            return true;
        }
        let Some(block) = self.block().cloned() else { return true };
        let recorded_during_run = self.obs.failover_record().is_some_and(|record| {
            let baseline = block.claim_baseline.as_ref().and_then(|b| Self::at(b.time.as_ref()));
            Some(record.time) != baseline && !self.record_is_own(record)
        });
        if self.decision.memory.confirmed_at.is_some() {
            if recorded_during_run {
                self.end(
                    Outcome::ManualRecoveryRequired,
                    Some(Reason::AuthorityChanged),
                    "a failover was recorded during the run while no topology manager ran"
                        .to_owned(),
                );
            } else {
                let message = format!(
                    "promoted {:?}; no topology manager for {}, so the failover record is applied by this terminal write and DNS is left to the next manager",
                    self.target(),
                    self.t.manager_absent_end
                );
                self.succeed(block, Vec::new(), message);
            }
            return true;
        }
        let message = format!(
            "no topology manager ran for the group for {} while the run held the claim",
            self.t.manager_absent_end
        );
        match block.phase {
            Some(Phase::Promoting) if self.decision.memory.write_possibly_sent => {
                self.end(Outcome::PromotedUnconfirmed, Some(Reason::ManagerUnavailable), message);
            }
            Some(Phase::RollingBack) => {
                let reason = block
                    .rollback
                    .as_ref()
                    .and_then(|r| r.reason.clone())
                    .unwrap_or(Reason::ManagerUnavailable);
                self.end(Outcome::SourceLeftFenced, Some(reason), message);
            }
            _ => self.end(Outcome::SourceLeftFenced, Some(Reason::ManagerUnavailable), message),
        }
        true
    }

    /// A non-terminal block an older operator wrote: refused, never resumed.
    pub(crate) fn refuse_legacy(&mut self, phase: Phase) {
        let advice = "check which site is writable; if none is, unfence the site with the most complete GTID set by hand (confirm no other site is writable first); re-annotate only once a site is writable";
        let (outcome, message) = match phase {
            Phase::Pending | Phase::Validating | Phase::Deferred | Phase::Admitting => (
                Outcome::NotStarted,
                format!(
                    "planned failover in phase {:?} was written by an older operator and is refused; annotate again",
                    phase.as_str()
                ),
            ),
            Phase::Promoting | Phase::Resuming | Phase::Publishing => (
                Outcome::PromotedUnconfirmed,
                format!(
                    "planned failover in phase {:?} was written by an older operator and is refused: its promotion may have made the target writable; {advice}",
                    phase.as_str()
                ),
            ),
            _ => (
                Outcome::SourceLeftFenced,
                format!(
                    "planned failover in phase {:?} was written by an older operator and is refused: {advice}",
                    phase.as_str()
                ),
            ),
        };
        self.decision.event("PlannedFailoverLegacyRunRefused", message.clone());
        // A legacy Deferred request's annotation is left in place: it re-runs as a new request.
        self.end(outcome, Some(Reason::LegacyRunRefused), message);
    }

    /// The per-run annotations of an ended run are removed by the next pass.
    pub(crate) fn clean_per_run_annotations(&mut self) {
        let run = self.run_id();
        if run.is_empty() {
            return;
        }
        for key in PLANNED_FAILOVER_PER_RUN {
            if let Some(value) = self.obs.annotation(key)
                && RunSince::parse(key, value).is_ok_and(|since| since.run_id() == run)
            {
                self.decision
                    .annotations
                    .push(AnnotationChange::Remove { key, value: value.to_owned() });
            }
        }
    }
}
