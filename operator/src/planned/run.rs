//! Fencing → Draining → WaitingForLag → Promoting → Publishing → Succeeded (planned-failover
//! document, "Lifecycle", "Deadlines and worst-case write outage").

use bloodraven_crd::annotations::{PLANNED_FAILOVER_CONFIRMED, RunSince};
use bloodraven_crd::group::{
    DnsPublication, DnsState, Drain, FenceState, LagWait, LastFailover,
    PlannedFailoverOutcome as Outcome, PlannedFailoverPhase as Phase,
    PlannedFailoverReason as Reason, PlannedFailoverWarning as Warning, Promotion, PromotionState,
    Rollback, SiteRole,
};
use bloodraven_gtid::GtidSet;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::Pass;
use super::decision::{Effect, Metric};
use super::model::{ClaimSlot, Probe, Reading};

/// What the source says at a pass of a fenced phase.
pub(crate) enum SourceState {
    /// Fenced by the run, holding exactly the fenced set (or less).
    Fenced,
    /// Not answering, inside its loss window.
    Waiting,
    /// Roll back with this reason.
    RollBack(Reason),
}

/// Parses a set printed by a server; an unparsable set is treated as foreign.
fn set(text: &str) -> Option<GtidSet> {
    text.parse().ok()
}

/// The transactions of `set` whose source is `uuid` (a server's own writes).
fn own_writes(set: &GtidSet, uuid: &str) -> GtidSet {
    let mut own = GtidSet::new();
    for (source, tag, start, end) in set.intervals() {
        if !source.to_string().eq_ignore_ascii_case(uuid) {
            continue;
        }
        let text = match tag {
            Some(tag) => format!("{source}:{tag}:{start}-{end}"),
            None => format!("{source}:{start}-{end}"),
        };
        if let Ok(part) = text.parse::<GtidSet>() {
            own.union_with(&part);
        }
    }
    own
}

impl Pass<'_> {
    /// A setting of the run's snapshot, with its default.
    fn run_setting(
        &self,
        pick: fn(
            &bloodraven_crd::group::PlannedFailoverSettings,
        ) -> Option<&bloodraven_crd::Duration>,
        default: SignedDuration,
    ) -> SignedDuration {
        let written = self
            .block()
            .and_then(|block| block.settings.as_ref())
            .and_then(pick)
            .and_then(|duration| duration.to_std().ok())
            .and_then(|duration| SignedDuration::try_from(duration).ok())
            .unwrap_or(default);
        self.t.setting(written)
    }

    /// Enters RollingBack with `reason`: the intent is durable before any rollback step.
    pub(crate) fn start_rollback(&mut self, reason: Reason, detail: String) {
        let Some(mut block) = self.block().cloned() else { return };
        block.phase = Some(Phase::RollingBack);
        block.rollback = Some(Rollback {
            reason: Some(reason.clone()),
            intent_time: Some(self.now_time()),
            ..Rollback::default()
        });
        if let Some(promotion) = block.promotion.as_mut() {
            promotion.warnings = self.warnings();
        }
        block.message = Some(format!("rolling back ({}): {detail}", reason.as_str()));
        self.decision.event(
            "PlannedFailoverRollbackStarted",
            format!(
                "planned failover {} rolls back ({}): {detail}",
                self.run_id(),
                reason.as_str()
            ),
        );
        self.write(block);
    }

    /// The fenced source's state in Draining, WaitingForLag and Promoting before a write.
    fn source_state(&mut self) -> SourceState {
        let source = self.source();
        let fence_uuid =
            self.block().and_then(|b| b.fence.as_ref()).and_then(|f| f.source_server_uuid.clone());
        let reading = self
            .site(&source)
            .and_then(|site| site.probe.reading())
            .filter(|r| r.server_uuid.is_some());
        let Some(reading) = reading else {
            return if self.source_lost(false) {
                SourceState::RollBack(Reason::SourceLost)
            } else {
                SourceState::Waiting
            };
        };
        self.source_lost(true);
        if reading.server_uuid != fence_uuid {
            self.warn(Warning::SourceReplaced);
            return SourceState::RollBack(Reason::AuthorityChanged);
        }
        if reading.writable() || !reading.super_read_only {
            return SourceState::RollBack(Reason::SourceUnfenced);
        }
        if let Some(Ok(fenced)) = self.fenced_set() {
            let past =
                set(&reading.gtid_executed).is_none_or(|executed| !executed.is_subset(&fenced));
            if past {
                return SourceState::RollBack(Reason::AuthorityChanged);
            }
        }
        SourceState::Fenced
    }

    /// A phase that holds the claim.
    pub(crate) fn claimed_pass(&mut self) {
        self.requests_while_live();
        self.retake_claim();
        let fresh = self.record.memory.run_id.as_deref() != Some(self.run_id().as_str());
        if fresh && !self.decision.memory.confirmed_side_effect {
            self.decision.memory.confirmed_side_effect = true;
            let phase = self
                .block()
                .and_then(|b| b.phase.clone())
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default();
            self.decision.log(
                "planned failover: confirming recorded side effect",
                vec![("run", self.run_id()), ("phase", phase)],
            );
            self.hydrate_memory();
        }
        if (self.obs.status_write_failing || self.stall_annotation().is_some())
            && self.stall_check()
        {
            return;
        }
        if self.manager_check() {
            return;
        }
        let phase = self.block().and_then(|b| b.phase.clone());
        let possible_write = self.decision.memory.write_possibly_sent;
        // "If the run's source or target is removed from spec.sites while it runs, the run
        // ends at once without MySQL access."
        let (source, target) = (self.source(), self.target());
        if self.site(&source).is_none() || self.site(&target).is_none() {
            let gone = if self.site(&source).is_none() { source } else { target };
            let message = format!(
                "planned failover ended: {gone:?} was removed from spec.sites while the run held the claim; check the remaining sites by hand"
            );
            let outcome = if possible_write {
                Outcome::PromotedUnconfirmed
            } else {
                Outcome::SourceLeftFenced
            };
            self.end(outcome, Some(Reason::UnknownSite), message);
            return;
        }
        match phase {
            Some(Phase::Fencing) => self.fencing(),
            Some(Phase::Draining) => self.draining(),
            Some(Phase::WaitingForLag) => self.waiting_for_lag(),
            Some(Phase::Promoting) => self.promoting(),
            Some(Phase::RollingBack) => self.rolling_back(),
            Some(Phase::WaitingForDragonflySync | Phase::PromotingDragonfly) => {
                // Never entered by this operator (Dragonfly requests end NotStarted); a block
                // in these phases is another writer's: nothing was written to the MySQL target.
                self.start_rollback(
                    Reason::DragonflyPromotionFailed,
                    "Dragonfly coordination is not built in this operator".to_owned(),
                );
            }
            _ => {}
        }
    }

    /// A durable record that holds the claim while the slot is free: the grant's Fencing
    /// write committed although its answer was lost (an ambiguous write whose settlement
    /// stayed unknown), so the `TakeClaim` it announced never ran. The claim is taken now,
    /// before any side effect of the pass, so the topology manager defers to the run. (From
    /// Promoting on, a free slot can mean the confirmed promotion released it: left alone.)
    fn retake_claim(&mut self) {
        let phase = self.block().and_then(|b| b.phase.clone());
        if self.obs.claim == ClaimSlot::Free
            && matches!(
                phase,
                Some(Phase::Fencing | Phase::Draining | Phase::WaitingForLag | Phase::RollingBack)
            )
        {
            self.decision.effects.insert(0, Effect::TakeClaim { run_id: self.run_id() });
        }
    }

    /// A restarted process re-derives what only its memory knew, from live state.
    fn hydrate_memory(&mut self) {
        let Some(block) = self.block() else { return };
        let source = self.source();
        let intent_uuid = block.fence.as_ref().and_then(|f| f.source_server_uuid.clone());
        if let Some(reading) = self.site(&source).and_then(|s| s.probe.reading())
            && reading.super_read_only
            && reading.server_uuid.is_some()
            && reading.server_uuid == intent_uuid
        {
            // "The fence is the run's ... when the durable intent names the server's current
            // @@server_uuid."
            self.decision.memory.fence_sent_to = reading.server_uuid.clone();
        }
        if block.promotion.is_some() {
            let target = self.target();
            let possible = match self.site(&target).map(|s| &s.probe) {
                Some(Probe::Answered(reading)) => reading.writable() || !reading.super_read_only,
                // Cannot prove nothing was written: don't guess.
                _ => true,
            };
            self.decision.memory.write_possibly_sent = possible;
        }
    }

    fn fencing(&mut self) {
        let Some(block) = self.block().cloned() else { return };
        let source = self.source();
        let intent_uuid =
            block.fence.as_ref().and_then(|f| f.source_server_uuid.clone()).unwrap_or_default();
        let intent =
            block.fence.as_ref().and_then(|f| Self::at(f.intent_time.as_ref())).unwrap_or(self.now);
        let expired = self.now.duration_since(intent) >= self.t.fence_deadline;
        let reading = self
            .site(&source)
            .and_then(|s| s.probe.reading())
            .filter(|r| r.server_uuid.is_some())
            .cloned();
        let Some(reading) = reading else {
            if self.source_lost(false) {
                self.start_rollback(
                    Reason::SourceLost,
                    format!("source {source:?} did not answer for {}", self.t.source_loss_window),
                );
            } else if expired {
                self.start_rollback(
                    Reason::FenceFailed,
                    format!(
                        "the fence on {source:?} was not proven within {}",
                        self.t.fence_deadline
                    ),
                );
            }
            return;
        };
        self.source_lost(true);
        if reading.server_uuid.as_deref() != Some(intent_uuid.as_str()) {
            if self.decision.memory.fence_sent_to.is_some() {
                self.warn(Warning::SourceReplaced);
            }
            self.start_rollback(
                Reason::AuthorityChanged,
                format!("source {source:?} is another server than the fence intent names"),
            );
            return;
        }
        if reading.super_read_only {
            let ours = self.decision.memory.fence_sent_to.as_deref() == Some(intent_uuid.as_str());
            if !ours {
                self.start_rollback(
                    Reason::AuthorityChanged,
                    format!("source {source:?} turned read-only before this run's fence was sent"),
                );
                return;
            }
            let foreign = self.writable_sites(&[&source]);
            if !foreign.is_empty() {
                self.start_rollback(
                    Reason::ForeignWritable,
                    format!("{foreign:?} answered writable after the fence"),
                );
                return;
            }
            if self.obs.sites.iter().any(|site| site.probe == Probe::Unreadable) {
                self.warn(Warning::UnreachablePeers);
            }
            let mut next = block;
            next.phase = Some(Phase::Draining);
            if let Some(fence) = next.fence.as_mut() {
                fence.state = Some(FenceState::Applied);
                fence.apply_time = Some(self.now_time());
                fence.gtid_set = Some(reading.gtid_executed.clone());
            }
            next.drain = Some(Drain { start_time: Some(self.now_time()), ..Drain::default() });
            next.message = Some(format!("draining {source:?}"));
            self.decision.event(
                "PlannedFailoverDrainStarted",
                format!(
                    "planned failover {}: {source:?} is fenced; draining connections",
                    self.run_id()
                ),
            );
            self.write(next);
            self.kill_app_connections(source);
            return;
        }
        if expired {
            self.start_rollback(
                Reason::FenceFailed,
                format!("the fence on {source:?} was not proven within {}", self.t.fence_deadline),
            );
            return;
        }
        self.decision.effects.push(Effect::Fence { site: source, server_uuid: intent_uuid });
    }

    fn draining(&mut self) {
        let Some(block) = self.block().cloned() else { return };
        let source = self.source();
        match self.source_state() {
            SourceState::RollBack(reason) => {
                self.start_rollback(reason, format!("source {source:?} while draining"));
                return;
            }
            SourceState::Waiting => return,
            SourceState::Fenced => {}
        }
        let foreign = self.writable_sites(&[&source]);
        if !foreign.is_empty() {
            self.start_rollback(Reason::ForeignWritable, format!("{foreign:?} answered writable"));
            return;
        }
        let drain_timeout =
            self.run_setting(|s| s.drain_timeout.as_ref(), self.t.default_drain_timeout);
        let start =
            block.drain.as_ref().and_then(|d| Self::at(d.start_time.as_ref())).unwrap_or(self.now);
        let remaining = self.decision.memory.drain_remaining.clone();
        let timed_out = self.now.duration_since(start) >= drain_timeout;
        if remaining == Some(Ok(0)) || timed_out {
            let mut next = block;
            let mut message = format!("waiting for {:?} to apply the fenced set", self.target());
            let count = match &remaining {
                Some(Ok(count)) => Some(i64::from(*count)),
                Some(Err(error)) => {
                    self.decision.log(
                        "planned failover: draining the source failed",
                        vec![("site", source.clone()), ("error", error.clone())],
                    );
                    message = format!(
                        "drain ended at drainTimeout: the connections remaining on {source:?} are unknown ({error}); {message}"
                    );
                    None
                }
                None => None,
            };
            next.drain = Some(Drain {
                start_time: Some(Time(start)),
                completion_time: Some(self.now_time()),
                remaining_connections: count,
                ..Drain::default()
            });
            next.lag_wait =
                Some(LagWait { start_time: Some(self.now_time()), ..LagWait::default() });
            next.phase = Some(Phase::WaitingForLag);
            next.message = Some(message);
            self.write(next);
            return;
        }
        self.kill_app_connections(source);
    }

    /// Announces KillAppConnections and when to look again: every `lag_poll` during the first
    /// `drain_cadence` of the drain, then every `drain_cadence`. The first kills run before the
    /// manager's poll publishes the fenced source without its primary label, so sessions the
    /// application re-dials meanwhile land on the source again; killing them again once the
    /// label is gone, rather than a second later, keeps that second out of the write outage.
    fn kill_app_connections(&mut self, source: String) {
        let first = *self.decision.memory.drain_first_kill.get_or_insert(self.now);
        self.decision.effects.push(Effect::KillAppConnections { site: source });
        self.decision.requeue_after = if self.now.duration_since(first) < self.t.drain_cadence {
            self.t.lag_poll.min(self.t.drain_cadence)
        } else {
            self.t.drain_cadence
        };
    }

    fn target_role_changed(&self) -> bool {
        self.site(&self.target()).is_some_and(|site| site.role != SiteRole::PrimaryCandidate)
    }

    fn waiting_for_lag(&mut self) {
        let Some(block) = self.block().cloned() else { return };
        let (source, target) = (self.source(), self.target());
        let fenced = match self.fenced_set() {
            Some(Ok(fenced)) => fenced,
            other => {
                let why = match other {
                    Some(Err(error)) => error,
                    _ => "fence.gtidSet is missing".to_owned(),
                };
                self.start_rollback(
                    Reason::InvalidGtid,
                    format!("the fenced set cannot be parsed: {why}"),
                );
                return;
            }
        };
        if self.target_role_changed() {
            self.start_rollback(
                Reason::TargetNotPromotable,
                format!("{target:?} is no longer a PrimaryCandidate"),
            );
            return;
        }
        match self.source_state() {
            SourceState::RollBack(reason) => {
                self.start_rollback(reason, format!("source {source:?} during the lag wait"));
                return;
            }
            SourceState::Waiting => return,
            SourceState::Fenced => {}
        }
        let foreign = self.writable_sites(&[&source]);
        if !foreign.is_empty() {
            self.start_rollback(Reason::ForeignWritable, format!("{foreign:?} answered writable"));
            return;
        }
        let reading = self
            .site(&target)
            .and_then(|s| s.probe.reading())
            .filter(|r| r.server_uuid.is_some())
            .cloned();
        let Some(reading) = reading else {
            if self.target_lost(false) {
                self.start_rollback(
                    Reason::TargetLost,
                    format!("target {target:?} did not answer for {}", self.t.target_loss_window),
                );
            }
            return;
        };
        self.target_lost(true);
        let Some(executed) = set(&reading.gtid_executed) else {
            self.start_rollback(
                Reason::DivergentTarget,
                format!("target {target:?} printed a set that does not parse"),
            );
            return;
        };
        if !executed.difference(&fenced).is_empty() {
            self.start_rollback(
                Reason::DivergentTarget,
                format!(
                    "target {target:?} holds transactions outside the fenced set: {}",
                    executed.difference(&fenced)
                ),
            );
            return;
        }
        let start = block
            .lag_wait
            .as_ref()
            .and_then(|l| Self::at(l.start_time.as_ref()))
            .unwrap_or(self.now);
        if fenced.is_subset(&executed) {
            let mut next = block;
            if let Some(lag) = next.lag_wait.as_mut() {
                lag.catch_up_time = Some(self.now_time());
            }
            let uuid = reading.server_uuid.clone().unwrap_or_default();
            next.promotion = Some(Promotion {
                state: Some(PromotionState::Intended),
                intent_time: Some(self.now_time()),
                target_server_uuid: Some(uuid),
                warnings: self.warnings(),
                ..Promotion::default()
            });
            next.phase = Some(Phase::Promoting);
            next.message = Some(format!("promoting {target:?}"));
            self.decision.event(
                "PlannedFailoverTargetCaughtUp",
                format!("planned failover {}: {target:?} applied the fenced set", self.run_id()),
            );
            self.decision.metrics.push(Metric::LagWait {
                target_site: target.clone(),
                seconds: self.now.duration_since(start).as_secs_f64(),
            });
            // The intent is durable first; the pre-write gate then runs on the next pass, on
            // readings taken after it committed (the write ends the manager's poll, so the next
            // pass observes every site again), and only that pass sends the promotion.
            self.write(next);
            return;
        }
        let max_lag_wait =
            self.run_setting(|s| s.max_lag_wait.as_ref(), self.t.default_max_lag_wait);
        if self.now.duration_since(start) >= max_lag_wait {
            self.start_rollback(
                Reason::LagTimeout,
                format!("target {target:?} did not apply the fenced set within {max_lag_wait}"),
            );
            return;
        }
        // The source is fenced while the target catches up: read it again soon.
        self.decision.requeue_after = self.decision.requeue_after.min(self.t.lag_poll);
    }

    /// The durable failover record is still the run's baseline (or the run's own).
    fn record_unchanged(&self) -> bool {
        let baseline = self.block().and_then(|b| b.claim_baseline.as_ref());
        let baseline_time = baseline.and_then(|b| Self::at(b.time.as_ref()));
        let baseline_target = baseline.and_then(|b| b.target.clone());
        match self.obs.failover_record() {
            None => baseline_time.is_none(),
            Some(record) => {
                (Some(record.time) == baseline_time
                    && Some(&record.target) == baseline_target.as_ref())
                    || self.record_is_own(record)
            }
        }
    }

    /// The failover record is this run's own: its target, the fenced set, a time not before
    /// the promotion intent.
    pub(crate) fn record_is_own(&self, record: &super::FailoverRecord) -> bool {
        let block = self.block();
        let fenced = block.and_then(|b| b.fence.as_ref()).and_then(|f| f.gtid_set.clone());
        let intent =
            block.and_then(|b| b.promotion.as_ref()).and_then(|p| Self::at(p.intent_time.as_ref()));
        record.target == self.target()
            && Some(&record.gtid) == fenced.as_ref()
            && intent.is_some_and(|intent| record.time >= intent)
    }

    /// The planned-failover-confirmed annotation names this run.
    pub(crate) fn confirmed_annotation(&self) -> Option<Timestamp> {
        let value = self.obs.annotation(PLANNED_FAILOVER_CONFIRMED)?;
        let since = RunSince::parse(PLANNED_FAILOVER_CONFIRMED, value).ok()?;
        (since.run_id() == self.run_id()).then(|| since.since().timestamp())
    }

    fn promoting(&mut self) {
        let Some(block) = self.block().cloned() else { return };
        // A restart before the Publishing write: the promotion may already be recorded.
        if self.decision.memory.confirmed_at.is_none() {
            let own = self.obs.failover_record().is_some_and(|record| self.record_is_own(record));
            if let Some(since) = self.confirmed_annotation().or(own.then_some(self.now)) {
                self.decision.log(
                    "planned failover: promotion already recorded; publishing without the claim",
                    vec![("run", self.run_id())],
                );
                self.decision.memory.confirmed_at = Some(since);
                self.decision.memory.claim_released = true;
                self.write_publishing(block);
                return;
            }
        }
        if self.decision.memory.confirmed_at.is_some() && self.decision.memory.claim_released {
            // Confirmed, recorded, published and marked: only the Publishing write is left.
            self.write_publishing(block);
        } else if self.decision.memory.write_possibly_sent {
            self.promoting_after_write(block);
        } else {
            self.promoting_before_write(block);
        }
    }

    fn promoting_before_write(&mut self, block: bloodraven_crd::group::PlannedFailoverStatus) {
        let (source, target) = (self.source(), self.target());
        let intent_uuid =
            block.promotion.as_ref().and_then(|p| p.target_server_uuid.clone()).unwrap_or_default();
        let intent = block
            .promotion
            .as_ref()
            .and_then(|p| Self::at(p.intent_time.as_ref()))
            .unwrap_or(self.now);
        if self.target_role_changed() {
            self.start_rollback(
                Reason::TargetNotPromotable,
                format!("{target:?} is no longer a PrimaryCandidate in spec.sites"),
            );
            return;
        }
        let Some(Ok(fenced)) = self.fenced_set() else {
            self.start_rollback(Reason::InvalidGtid, "the fenced set cannot be parsed".to_owned());
            return;
        };
        match self.source_state() {
            SourceState::RollBack(reason) => {
                self.start_rollback(reason, format!("source {source:?} at the pre-write gate"));
                return;
            }
            SourceState::Waiting => return,
            SourceState::Fenced => {}
        }
        let reading = self
            .site(&target)
            .and_then(|s| s.probe.reading())
            .filter(|r| r.server_uuid.is_some())
            .cloned();
        let Some(reading) = reading else {
            if self.target_lost(false) {
                self.start_rollback(
                    Reason::TargetLost,
                    format!("target {target:?} did not answer for {}", self.t.target_loss_window),
                );
            }
            return;
        };
        self.target_lost(true);
        if reading.server_uuid.as_deref() != Some(intent_uuid.as_str()) {
            self.start_rollback(
                Reason::TargetChanged,
                format!("target {target:?} is not the server the promotion intent recorded"),
            );
            return;
        }
        let foreign = self.writable_sites(&[&source]);
        if !foreign.is_empty() {
            self.start_rollback(
                Reason::ForeignWritable,
                format!("{foreign:?} answered writable before the promotion"),
            );
            return;
        }
        if set(&reading.gtid_executed).as_ref() != Some(&fenced) {
            self.start_rollback(
                Reason::TargetChanged,
                format!("target {target:?} does not hold exactly the fenced set"),
            );
            return;
        }
        if let Some(name) = self.unreadable_strict_peers(&[&source, &target]).into_iter().next() {
            self.start_rollback(
                Reason::PeerUnreadable,
                format!("peer {name:?} did not answer at the pre-write gate"),
            );
            return;
        }
        if !self.record_unchanged() {
            self.start_rollback(
                Reason::AuthorityChanged,
                "the durable failover record changed during the run".to_owned(),
            );
            return;
        }
        if self.decision.memory.promotion_failing
            && self.now.duration_since(intent) >= self.t.promotion_abort
        {
            self.start_rollback(
                Reason::PromotionAborted,
                format!(
                    "the promotion statements kept failing for {} with the target reachable",
                    self.t.promotion_abort
                ),
            );
            return;
        }
        self.decision.effects.push(Effect::Promote { site: target, server_uuid: intent_uuid });
    }

    fn promoting_after_write(&mut self, block: bloodraven_crd::group::PlannedFailoverStatus) {
        let (source, target) = (self.source(), self.target());
        let intent_uuid =
            block.promotion.as_ref().and_then(|p| p.target_server_uuid.clone()).unwrap_or_default();
        let intent = block
            .promotion
            .as_ref()
            .and_then(|p| Self::at(p.intent_time.as_ref()))
            .unwrap_or(self.now);
        let fenced = match self.fenced_set() {
            Some(Ok(fenced)) => fenced,
            _ => {
                self.end(
                    Outcome::PromotedUnconfirmed,
                    Some(Reason::InternalError),
                    "a promotion was sent but the run's fenced set cannot be parsed".to_owned(),
                );
                return;
            }
        };
        let reading = self
            .site(&target)
            .and_then(|s| s.probe.reading())
            .filter(|r| r.server_uuid.is_some())
            .cloned();
        let Some(reading) = reading else {
            if self.target_lost(false) {
                self.end(Outcome::PromotedUnconfirmed, Some(Reason::TargetLost), format!("super_read_only=OFF may have reached {target:?}, which did not answer for {}", self.t.target_loss_window));
            }
            return;
        };
        self.target_lost(true);
        if reading.server_uuid.as_deref() != Some(intent_uuid.as_str()) {
            self.end(Outcome::ManualRecoveryRequired, Some(Reason::ExecuteFailed), format!("target {target:?} is another server than the promotion intent recorded, after a possible write"));
            return;
        }
        if !self.record_unchanged() {
            self.end(
                Outcome::ManualRecoveryRequired,
                Some(Reason::AuthorityChanged),
                "the durable failover record changed after a possible write".to_owned(),
            );
            return;
        }
        let foreign = self.writable_sites(&[&target]);
        if !foreign.is_empty() {
            self.end(
                Outcome::ManualRecoveryRequired,
                Some(Reason::ForeignWritable),
                format!("{foreign:?} answered writable after a possible write to {target:?}"),
            );
            return;
        }
        let executed = set(&reading.gtid_executed).unwrap_or_default();
        let own = own_writes(&executed, &intent_uuid);
        let holds_own_writes = !own.difference(&fenced).is_empty();
        let source_reading = self
            .site(&source)
            .and_then(|s| s.probe.reading())
            .filter(|r| r.server_uuid.is_some())
            .cloned();
        match source_reading {
            None => {
                if holds_own_writes || self.source_lost(false) {
                    self.end(Outcome::PromotedUnconfirmed, Some(Reason::SourceLost), format!("source {source:?} did not answer at the pre-write gate; {target:?} may be writable and is named as the last failover target"));
                    return;
                }
            }
            Some(source_reading) => {
                self.source_lost(true);
                let source_set = set(&source_reading.gtid_executed).unwrap_or_default();
                let past = source_set
                    .difference(&fenced)
                    .difference(&own_writes(&source_set, &intent_uuid));
                if !past.is_empty() {
                    self.end(Outcome::ManualRecoveryRequired, Some(Reason::ForeignWritable), format!("source {source:?} holds transactions past the fenced set after a possible write: {past}"));
                    return;
                }
            }
        }
        let outside = executed.difference(&fenced).difference(&own);
        if !outside.is_empty() || !fenced.is_subset(&executed) {
            self.end(Outcome::ManualRecoveryRequired, Some(Reason::ExecuteFailed), format!("target {target:?} holds transactions outside the fenced set, or lacks some of it, after a possible write"));
            return;
        }
        if reading.writable() && reading.channel.is_some() {
            self.end(
                Outcome::ManualRecoveryRequired,
                Some(Reason::ExecuteFailed),
                format!("target {target:?} is writable with a replication channel"),
            );
            return;
        }
        let rerun = self.record.memory.run_id.as_deref() != Some(self.run_id().as_str());
        if let Some(name) = self.unreadable_strict_peers(&[&source, &target]).into_iter().next() {
            if rerun {
                self.end(
                    Outcome::PromotedUnconfirmed,
                    Some(Reason::PeerUnreadable),
                    format!(
                        "peer {name:?} did not answer at the re-run's gate after a possible write"
                    ),
                );
                return;
            }
            self.warn(Warning::UnreachablePeers);
        }
        if reading.writable() && reading.channel.is_none() {
            self.confirmed(block);
            return;
        }
        if self.now.duration_since(intent) >= self.t.promotion_unconfirmed {
            self.end(Outcome::PromotedUnconfirmed, Some(Reason::PromotionUnconfirmed), format!("super_read_only=OFF may have reached {target:?}, but the promotion was not confirmed within {}", self.t.promotion_unconfirmed));
            return;
        }
        self.decision.effects.push(Effect::Promote { site: target, server_uuid: intent_uuid });
    }

    /// Confirmed live: record, publish, mark, release; then the Publishing write.
    fn confirmed(&mut self, block: bloodraven_crd::group::PlannedFailoverStatus) {
        self.decision.memory.confirmed_at.get_or_insert(self.now);
        let marked = self.decision.memory.claim_released || self.confirmed_annotation().is_some();
        if marked {
            self.decision.memory.claim_released = true;
            self.write_publishing(block);
            return;
        }
        if self
            .obs
            .reports
            .iter()
            .any(|r| matches!(r, super::Report::Published { marked: false, .. }))
        {
            self.decision.log("planned failover: could not record the promotion's confirmation; keeping the claim", vec![("run", self.run_id())]);
        }
        self.decision.effects.push(Effect::Publish { site: self.target(), run_id: self.run_id() });
    }

    fn write_publishing(&mut self, mut block: bloodraven_crd::group::PlannedFailoverStatus) {
        let confirmed = self.decision.memory.confirmed_at.unwrap_or(self.now);
        if let Some(error) = self.decision.memory.dns_error.clone() {
            self.warn(Warning::DnsUpdateFailed);
            block.dns = Some(DnsPublication {
                state: Some(DnsState::Failed),
                attempt_time: Some(self.now_time()),
                last_error: Some(error),
                ..DnsPublication::default()
            });
        } else if !self.record.memory.claim_released
            && self.decision.memory.claim_released
            && self.decision.memory.dns_error.is_none()
            && self.obs.reports.iter().any(|r| matches!(r, super::Report::Published { .. }))
        {
            block.dns = Some(DnsPublication {
                state: Some(DnsState::Applied),
                attempt_time: Some(self.now_time()),
                ..DnsPublication::default()
            });
        }
        let warnings = self.warnings();
        let promotion = block.promotion.get_or_insert_with(Promotion::default);
        promotion.state = Some(PromotionState::Confirmed);
        promotion.confirmation_time = Some(Time(confirmed));
        promotion.warnings = warnings;
        block.phase = Some(Phase::Publishing);
        block.message = Some(format!("promoted {:?}; publishing", self.target()));
        self.decision.requeue_after = SignedDuration::ZERO;
        self.write(block);
    }

    /// Publishing: the terminal Succeeded write with `status.lastFailover`.
    pub(crate) fn publishing_pass(&mut self) {
        self.requests_while_live();
        if (self.obs.status_write_failing || self.stall_annotation().is_some())
            && self.stall_check()
        {
            return;
        }
        let Some(block) = self.block().cloned() else { return };
        let confirmed = block
            .promotion
            .as_ref()
            .and_then(|p| Self::at(p.confirmation_time.as_ref()))
            .unwrap_or(self.now);
        self.decision.memory.confirmed_at.get_or_insert(confirmed);
        self.succeed(block, Vec::new(), format!("promoted {:?}", self.target()));
    }

    /// The Succeeded record with the failover record, in one write.
    pub(crate) fn succeed(
        &mut self,
        block: bloodraven_crd::group::PlannedFailoverStatus,
        extra: Vec<Warning>,
        message: String,
    ) {
        let confirmed = self.decision.memory.confirmed_at.unwrap_or(self.now);
        let fenced = block.fence.as_ref().and_then(|f| f.gtid_set.clone());
        let last_failover = LastFailover {
            time: Some(Time(confirmed)),
            target: Some(self.target()),
            promotion_gtid_executed: fenced,
            ..LastFailover::default()
        };
        let newer = self.obs.failover_record().is_none_or(|record| record.time <= confirmed);
        self.end_block(block, Outcome::Succeeded, None, message, extra);
        if newer && let Some(write) = self.decision.write.as_mut() {
            write.last_failover = Some(last_failover);
        }
    }

    /// Whether a reading is a writable site (for rollback).
    pub(crate) fn reads_writable(probe: &Probe) -> bool {
        probe.reading().is_some_and(Reading::writable)
    }
}
