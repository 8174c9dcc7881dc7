//! A simulated group for the planned-failover decision core: sites with flags, sets and
//! channels, an API object with a resourceVersion, a claim slot, and an applier that commits
//! a decision's record before it runs the decision's effects. Faults are plain field changes.
//! Every MySQL side effect is checked against the committed record that must announce it.

use std::collections::BTreeMap;

use bloodraven_crd::annotations::PLANNED_FAILOVER;
use bloodraven_crd::group::{
    FenceState, PlannedFailoverOutcome, PlannedFailoverPhase, PlannedFailoverReason,
    PlannedFailoverStatus, PromotionState, SiteRole,
};
use bloodraven_gtid::GtidSet;
use bloodraven_operator::planned::{
    Channel, ClaimSlot, Decision, Effect, FailoverRecord, HoldChange, Knobs, ManagerState, Memory,
    Observation, Probe, Reading, Report, RunRecord, SiteView, TargetHealth, Timings, step,
};
use jiff::{SignedDuration, Timestamp};

/// One simulated mysqld.
#[derive(Clone, Debug)]
pub(crate) struct Site {
    pub(crate) role: SiteRole,
    pub(crate) up: bool,
    pub(crate) uuid: String,
    pub(crate) read_only: bool,
    pub(crate) super_read_only: bool,
    pub(crate) gtid: GtidSet,
    /// The site it replicates from, and whether replication runs.
    pub(crate) channel: Option<(String, bool)>,
    pub(crate) in_spec: bool,
    pub(crate) next_gno: u64,
}

impl Site {
    fn writable(&self) -> bool {
        !self.read_only && !self.super_read_only
    }
}

/// The simulated group.
pub(crate) struct World {
    pub(crate) sites: BTreeMap<String, Site>,
    pub(crate) order: Vec<String>,
    pub(crate) active: Option<String>,
    pub(crate) last_failover: Result<Option<FailoverRecord>, String>,
    pub(crate) annotations: BTreeMap<String, String>,
    pub(crate) record: RunRecord,
    pub(crate) memory: Memory,
    pub(crate) claim: ClaimSlot,
    pub(crate) manager: ManagerState,
    pub(crate) knobs: Knobs,
    pub(crate) dragonfly: bool,
    pub(crate) target_health: TargetHealth,
    pub(crate) concurrent_operation: bool,
    pub(crate) resource_version: u64,
    pub(crate) now: Timestamp,
    pub(crate) timings: Timings,
    pub(crate) reports: Vec<Report>,
    pub(crate) status_writes_fail: bool,
    pub(crate) status_write_failing: bool,
    /// Failing status writes stay unsettled: a claim taken for one is kept.
    pub(crate) ambiguous_writes: bool,
    /// The first status write carrying each of these phases commits, but its answer is lost
    /// and its settlement stays unknown: the applier runs neither its annotations nor its
    /// effects (the lab's `Fault::fail_after_serving` with `body_contains` the phase).
    pub(crate) applied_unanswered: Vec<PlannedFailoverPhase>,
    pub(crate) fence_fails: bool,
    pub(crate) promote_fails: bool,
    /// The promotion clears super_read_only only (read_only stays ON): never confirmable.
    pub(crate) promote_partial: bool,
    pub(crate) unfence_fails: bool,
    pub(crate) refence_fails: bool,
    pub(crate) dns_fails: bool,
    /// Application writes on the writable active site each tick.
    pub(crate) app_writes: bool,
    pub(crate) run_counter: u32,
    /// Replicas whose threads run but apply nothing.
    pub(crate) lagging: std::collections::BTreeSet<String>,
    /// Every decision, in order.
    pub(crate) decisions: Vec<Decision>,
    /// Every effect the applier ran (a dropped write's effects are not), in order.
    pub(crate) ran: Vec<Effect>,
    /// Violations of "never a side effect without its record first".
    pub(crate) violations: Vec<String>,
    pub(crate) named_for_reassert: Vec<String>,
    pub(crate) named_last_target: Vec<String>,
}

pub(crate) const IAD: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
pub(crate) const PDX: &str = "7a1d0c22-71ca-11e1-9e33-c80aa9429562";
pub(crate) const FRA: &str = "9b2e1d33-71ca-11e1-9e33-c80aa9429562";
pub(crate) const OTHER: &str = "1f00aa00-71ca-11e1-9e33-c80aa9429562";

fn gtid(text: &str) -> GtidSet {
    text.parse().unwrap()
}

impl World {
    /// iad (PrimaryCandidate, writable, active), pdx (PrimaryCandidate, replica of iad), fra
    /// (DisasterRecovery, replica of iad), all holding `iad:1-100`.
    pub(crate) fn three_sites() -> World {
        let base = gtid(&format!("{IAD}:1-100"));
        let site = |role, uuid: &str, writable: bool, channel: Option<(String, bool)>| Site {
            role,
            up: true,
            uuid: uuid.to_owned(),
            read_only: !writable,
            super_read_only: !writable,
            gtid: base.clone(),
            channel,
            in_spec: true,
            next_gno: 101,
        };
        let mut sites = BTreeMap::new();
        sites.insert("iad".to_owned(), site(SiteRole::PrimaryCandidate, IAD, true, None));
        sites.insert(
            "pdx".to_owned(),
            site(SiteRole::PrimaryCandidate, PDX, false, Some(("iad".to_owned(), true))),
        );
        sites.insert(
            "fra".to_owned(),
            site(SiteRole::DisasterRecovery, FRA, false, Some(("iad".to_owned(), true))),
        );
        World {
            sites,
            order: vec!["iad".to_owned(), "pdx".to_owned(), "fra".to_owned()],
            active: Some("iad".to_owned()),
            last_failover: Ok(None),
            annotations: BTreeMap::new(),
            record: RunRecord::default(),
            memory: Memory::default(),
            claim: ClaimSlot::Free,
            manager: ManagerState::Ready,
            knobs: Knobs::default(),
            dragonfly: false,
            target_health: TargetHealth::default(),
            concurrent_operation: false,
            resource_version: 1,
            now: "2026-04-20T14:32:00Z".parse().unwrap(),
            timings: Timings::document(),
            reports: Vec::new(),
            status_writes_fail: false,
            status_write_failing: false,
            ambiguous_writes: false,
            applied_unanswered: Vec::new(),
            fence_fails: false,
            promote_fails: false,
            promote_partial: false,
            unfence_fails: false,
            refence_fails: false,
            dns_fails: false,
            app_writes: true,
            run_counter: 0,
            lagging: Default::default(),
            decisions: Vec::new(),
            ran: Vec::new(),
            violations: Vec::new(),
            named_for_reassert: Vec::new(),
            named_last_target: Vec::new(),
        }
    }

    pub(crate) fn site(&mut self, name: &str) -> &mut Site {
        self.sites.get_mut(name).unwrap()
    }

    pub(crate) fn request(&mut self, value: &str) {
        self.annotations.insert(PLANNED_FAILOVER.to_owned(), value.to_owned());
    }

    pub(crate) fn observe(&mut self) -> Observation {
        self.run_counter += 1;
        let sites = self
            .order
            .iter()
            .filter(|name| self.sites[*name].in_spec)
            .map(|name| {
                let site = &self.sites[name];
                let probe = if site.up {
                    Probe::Answered(Reading {
                        server_uuid: Some(site.uuid.clone()),
                        read_only: site.read_only,
                        super_read_only: site.super_read_only,
                        gtid_executed: site.gtid.to_string(),
                        channel: site.channel.as_ref().map(|(source, running)| Channel {
                            source_site: Some(source.clone()),
                            io_running: *running,
                            sql_running: *running,
                            applier_error: false,
                        }),
                        app_sessions: Some(0),
                    })
                } else {
                    Probe::Unreadable
                };
                SiteView { name: name.clone(), role: site.role.clone(), probe }
            })
            .collect();
        Observation {
            resource_version: self.resource_version.to_string(),
            generation: 7,
            annotations: self.annotations.clone(),
            new_run_id: format!("00000000-0000-4000-8000-{:012}", self.run_counter),
            sites,
            active_site: self.active.clone(),
            last_failover: self.last_failover.clone(),
            dragonfly_enabled: self.dragonfly,
            knobs: self.knobs.clone(),
            manager: self.manager,
            claim: self.claim.clone(),
            busy: Vec::new(),
            concurrent_operation: self.concurrent_operation,
            reservation_refused: None,
            deployment_hold: None,
            target_health: self.target_health.clone(),
            status_write_failing: self.status_write_failing,
            reports: std::mem::take(&mut self.reports),
        }
    }

    /// One pass: observe, decide, commit the record, run the effects; then one second of
    /// replication and application writes.
    pub(crate) fn pass(&mut self) -> Decision {
        let observation = self.observe();
        let record = RunRecord { memory: self.memory.clone(), ..self.record.clone() };
        let decision = step(&record, &observation, &self.timings, self.now);
        self.memory = decision.memory.clone();
        self.apply(&decision);
        self.decisions.push(decision.clone());
        self.tick(SignedDuration::from_secs(1));
        decision
    }

    /// A restarted operator process: memory lost; the claim slot is hydrated from the record.
    pub(crate) fn restart_operator(&mut self) {
        self.memory = Memory::default();
    }

    fn patch(&mut self, changes: &[bloodraven_operator::planned::AnnotationChange]) {
        for change in changes {
            match change {
                bloodraven_operator::planned::AnnotationChange::Set { key, value } => {
                    self.annotations.insert((*key).to_owned(), value.clone());
                }
                bloodraven_operator::planned::AnnotationChange::Remove { key, value } => {
                    if self.annotations.get(*key) == Some(value) {
                        self.annotations.remove(*key);
                    }
                }
            }
        }
        if !changes.is_empty() {
            self.resource_version += 1;
        }
    }

    fn apply(&mut self, decision: &Decision) {
        self.patch(&decision.bookkeeping);
        if let Some(write) = &decision.write {
            if self.status_writes_fail {
                self.status_write_failing = true;
                // A write proven not to have committed: its annotations and effects are
                // dropped, and a claim taken for it is released.
                if !self.ambiguous_writes
                    && decision.effects.iter().any(|e| matches!(e, Effect::TakeClaim { .. }))
                {
                    self.claim = ClaimSlot::Free;
                }
                return;
            }
            self.status_write_failing = false;
            if let Some(block) = &write.block {
                self.record.block = Some(block.clone());
            }
            match &write.hold {
                HoldChange::Keep => {}
                HoldChange::Set(hold, _) => {
                    self.record.hold = Some(hold.clone());
                    self.record.hold_condition = true;
                }
                HoldChange::Clear(_) => {
                    self.record.hold = None;
                    self.record.hold_condition = false;
                }
            }
            if let Some(last) = &write.last_failover {
                self.last_failover = Ok(Some(FailoverRecord {
                    time: last.time.as_ref().unwrap().0,
                    target: last.target.clone().unwrap(),
                    gtid: last.promotion_gtid_executed.clone().unwrap_or_default(),
                }));
                self.active = last.target.clone();
            }
            self.resource_version += 1;
            let phase = write.block.as_ref().and_then(|block| block.phase.clone());
            if let Some(at) = self.applied_unanswered.iter().position(|p| Some(p) == phase.as_ref())
            {
                self.applied_unanswered.remove(at);
                self.status_write_failing = true;
                return;
            }
        }
        self.patch(&decision.annotations);
        for effect in &decision.effects {
            self.check_announced(effect);
            self.ran.push(effect.clone());
            self.run(effect);
        }
    }

    /// "Every side effect runs only after the record that announces it has committed."
    fn check_announced(&mut self, effect: &Effect) {
        if !effect.touches_mysql() {
            return;
        }
        let block = self.record.block.clone().unwrap_or_default();
        let phase = block.phase.clone();
        let ok = match effect {
            Effect::Fence { server_uuid, .. } => {
                phase == Some(PlannedFailoverPhase::Fencing)
                    && block.fence.as_ref().and_then(|f| f.source_server_uuid.as_ref())
                        == Some(server_uuid)
                    && block.fence.as_ref().and_then(|f| f.state.clone())
                        == Some(FenceState::Intended)
            }
            Effect::KillAppConnections { .. } => phase == Some(PlannedFailoverPhase::Draining),
            Effect::Promote { server_uuid, .. } => {
                phase == Some(PlannedFailoverPhase::Promoting)
                    && block.promotion.as_ref().and_then(|p| p.target_server_uuid.as_ref())
                        == Some(server_uuid)
                    && block.promotion.as_ref().and_then(|p| p.state.clone())
                        == Some(PromotionState::Intended)
            }
            Effect::RefenceTarget { .. } | Effect::Unfence { .. } => {
                phase == Some(PlannedFailoverPhase::RollingBack)
                    && block.rollback.as_ref().is_some_and(|r| r.intent_time.is_some())
            }
            _ => true,
        };
        if !ok {
            self.violations.push(format!("{effect:?} ran under {phase:?}"));
        }
    }

    fn run(&mut self, effect: &Effect) {
        match effect {
            Effect::TakeClaim { run_id } => self.claim = ClaimSlot::Run(run_id.clone()),
            Effect::Fence { site, server_uuid } => {
                let fails = self.fence_fails;
                let s = self.site(site);
                if s.up && &s.uuid == server_uuid && !fails {
                    s.super_read_only = true;
                    s.read_only = true;
                    self.reports.push(Report::FenceSent { server_uuid: server_uuid.clone() });
                }
            }
            Effect::KillAppConnections { .. } => self.reports.push(Report::Drained(Ok(0))),
            Effect::Promote { site, server_uuid } => {
                let (fails, partial) = (self.promote_fails, self.promote_partial);
                let s = self.site(site);
                if !s.up || &s.uuid != server_uuid {
                    return;
                }
                if fails {
                    self.reports.push(Report::PromotionFailed("STOP REPLICA failed".to_owned()));
                    return;
                }
                s.channel = None;
                s.super_read_only = false;
                if !partial {
                    s.read_only = false;
                }
                self.reports.push(Report::WriteSent);
            }
            Effect::Publish { site, run_id } => {
                let dns_error = self.dns_fails.then(|| "DNSEndpoint update refused".to_owned());
                let fenced = self
                    .record
                    .block
                    .as_ref()
                    .and_then(|b| b.fence.as_ref())
                    .and_then(|f| f.gtid_set.clone())
                    .unwrap_or_default();
                self.active = Some(site.clone());
                self.last_failover =
                    Ok(Some(FailoverRecord { time: self.now, target: site.clone(), gtid: fenced }));
                let since = bloodraven_crd::annotations::CompactTime::truncating(self.now).unwrap();
                let value = bloodraven_crd::annotations::RunSince::new(
                    bloodraven_crd::annotations::PLANNED_FAILOVER_CONFIRMED,
                    run_id.clone(),
                    since,
                )
                .unwrap();
                self.annotations.insert(
                    bloodraven_crd::annotations::PLANNED_FAILOVER_CONFIRMED.to_owned(),
                    value.to_string(),
                );
                self.claim = ClaimSlot::Free;
                self.reports.push(Report::Published { dns_error, marked: true });
            }
            Effect::RefenceTarget { site } => {
                let fails = self.refence_fails;
                let s = self.site(site);
                if s.up && !fails {
                    s.super_read_only = true;
                    s.read_only = true;
                    self.reports.push(Report::TargetRefenced);
                }
            }
            Effect::Unfence { site, server_uuid, restore_channel_of } => {
                if self.unfence_fails {
                    return;
                }
                if let Some(target) = restore_channel_of {
                    let t = self.site(target);
                    if t.up {
                        t.channel = Some((site.clone(), true));
                    }
                }
                let s = self.site(site);
                if s.up && &s.uuid == server_uuid {
                    s.super_read_only = false;
                    s.read_only = false;
                    self.reports.push(Report::UnfenceSent);
                }
            }
            Effect::NameForReassert { site } => self.named_for_reassert.push(site.clone()),
            Effect::NameLastFailoverTarget { site } => self.named_last_target.push(site.clone()),
            Effect::ReleaseClaim { .. } | Effect::ReleaseHold { .. } => {
                self.claim = ClaimSlot::Free;
            }
            Effect::KeepClaimAsHold { run_id } => {
                self.claim = ClaimSlot::Hold(Some(run_id.clone()))
            }
        }
    }

    /// Time passes: application writes on the writable active site, replication catches up.
    pub(crate) fn tick(&mut self, by: SignedDuration) {
        self.now += by;
        if self.app_writes
            && let Some(active) = self.active.clone()
            && let Some(site) = self.sites.get_mut(&active)
            && site.up
            && site.writable()
        {
            let next = site.next_gno;
            site.gtid.union_with(&gtid(&format!("{}:{next}", site.uuid)));
            site.next_gno += 1;
        }
        let snapshot: BTreeMap<String, (bool, GtidSet)> =
            self.sites.iter().map(|(n, s)| (n.clone(), (s.up, s.gtid.clone()))).collect();
        for (name, site) in &mut self.sites {
            if self.lagging.contains(name) {
                continue;
            }
            if let Some((source, true)) = &site.channel
                && site.up
                && let Some((true, set)) = snapshot.get(source)
            {
                site.gtid.union_with(set);
            }
        }
    }

    pub(crate) fn block(&self) -> PlannedFailoverStatus {
        self.record.block.clone().unwrap_or_default()
    }

    pub(crate) fn phase(&self) -> Option<PlannedFailoverPhase> {
        self.record.block.as_ref().and_then(|b| b.phase.clone())
    }

    /// Passes until `done` holds, at most `limit` passes; says what it last saw.
    pub(crate) fn run_until(&mut self, limit: usize, done: impl Fn(&World) -> bool) {
        for _ in 0..limit {
            if done(self) {
                return;
            }
            self.pass();
        }
        assert!(
            done(self),
            "gave up after {limit} passes; phase {:?}, block {:?}, last events {:?}",
            self.phase(),
            self.record.block.as_ref().map(|b| (&b.result, &b.message, &b.rollback)),
            self.decisions.last().map(Decision::event_reasons)
        );
    }

    pub(crate) fn run_until_phase(&mut self, phase: PlannedFailoverPhase) {
        self.run_until(600, |w| w.phase() == Some(phase.clone()));
    }

    /// Passes until the run has a terminal record (or a terminal marker names it).
    pub(crate) fn run_to_end(&mut self) {
        self.run_until(2000, |w| {
            w.phase().is_some_and(|p| p.is_terminal())
                || w.annotations
                    .contains_key(bloodraven_crd::annotations::PLANNED_FAILOVER_TERMINAL)
        });
    }

    /// The terminal outcome and reason (from the record, or from the marker).
    pub(crate) fn ended(&self) -> (PlannedFailoverOutcome, Option<PlannedFailoverReason>) {
        if let Some(result) = self.record.block.as_ref().and_then(|b| b.result.as_ref())
            && self.phase().is_some_and(|p| p.is_terminal())
        {
            return (result.outcome.clone().unwrap(), result.reason.clone());
        }
        let marker = bloodraven_crd::annotations::TerminalMarker::parse(
            &self.annotations[bloodraven_crd::annotations::PLANNED_FAILOVER_TERMINAL],
        );
        let record = marker.record().unwrap();
        let reason =
            (!record.reason().is_empty()).then(|| PlannedFailoverReason::parse(record.reason()));
        (PlannedFailoverOutcome::parse(record.outcome()), reason)
    }

    /// Every Event reason emitted so far.
    pub(crate) fn events(&self) -> Vec<&'static str> {
        self.decisions.iter().flat_map(Decision::event_reasons).collect()
    }

    /// Sites whose flags read writable.
    pub(crate) fn writable_sites(&self) -> Vec<String> {
        self.sites.iter().filter(|(_, s)| s.writable()).map(|(n, _)| n.clone()).collect()
    }

    /// A block in `phase` for a run to pdx from iad, as a record written earlier (fence
    /// applied with iad's current set, lag wait started, promotion intent when Promoting).
    pub(crate) fn with_block(&mut self, phase: PlannedFailoverPhase) {
        use bloodraven_crd::group::{Fence, LagWait, Promotion, Rollback};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let now = Time(self.now);
        let fenced = self.sites["iad"].gtid.to_string();
        let mut block = PlannedFailoverStatus {
            run_id: Some("6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10".to_owned()),
            revision: Some(5),
            phase: Some(phase.clone()),
            target_site: Some("pdx".to_owned()),
            source_site: Some("iad".to_owned()),
            start_time: Some(now.clone()),
            claim_time: Some(now.clone()),
            claim_baseline: Some(Default::default()),
            fence: Some(Fence {
                state: Some(FenceState::Applied),
                intent_time: Some(now.clone()),
                source_server_uuid: Some(IAD.to_owned()),
                apply_time: Some(now.clone()),
                gtid_set: Some(fenced),
                ..Default::default()
            }),
            lag_wait: Some(LagWait { start_time: Some(now.clone()), ..Default::default() }),
            ..Default::default()
        };
        if matches!(phase, PlannedFailoverPhase::Promoting) {
            block.promotion = Some(Promotion {
                state: Some(PromotionState::Intended),
                intent_time: Some(now.clone()),
                target_server_uuid: Some(PDX.to_owned()),
                ..Default::default()
            });
        }
        if matches!(phase, PlannedFailoverPhase::RollingBack) {
            block.rollback =
                Some(Rollback { reason: None, intent_time: Some(now), ..Default::default() });
        }
        let iad = self.site("iad");
        iad.read_only = true;
        iad.super_read_only = true;
        self.record.block = Some(block);
        self.claim = ClaimSlot::Run("6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10".to_owned());
        // This process sent the fence (its memory says so).
        self.memory = Memory {
            run_id: Some("6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10".to_owned()),
            fence_sent_to: Some(IAD.to_owned()),
            ..Memory::default()
        };
    }

    /// Sets the rollback reason of a RollingBack block.
    pub(crate) fn rollback_reason(&mut self, reason: Option<PlannedFailoverReason>) {
        if let Some(block) = self.record.block.as_mut()
            && let Some(rollback) = block.rollback.as_mut()
        {
            rollback.reason = reason;
        }
    }
}
