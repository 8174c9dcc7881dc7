//! [`preflight`]: why an operation may not do what the user wants, from watched state.
//!
//! One [`Check`] per rule of the spec, each pass, wait or refuse with one line. A refused
//! operation cannot be confirmed; the line says what would change the answer. For a planned
//! failover the rules are those of the planned-failover document's "Admission": every reason
//! that rejects at once (named by its `PlannedFailoverReason` token) and every wait (named by
//! its `AdmissionWaitReason` token, or `Cooldown`/`RunInFlight`), then the target's GTID
//! distance and the expected lag wait against `maxLagWait`.

use bloodraven_crd::annotations::{
    ACKNOWLEDGE_PLANNED_FAILOVER_HOLD, PLANNED_FAILOVER, PlannedFailoverRequest, RECLONE_SITE,
};
use bloodraven_crd::backup::BackupPhase;
use bloodraven_crd::group::{
    OnCooldown, PlannedFailoverReason as Reason, RecoveryState, RestoreInPlacePhase,
    RestoreReclonesPhase, SiteRole, SiteState, SiteStatus,
};
use bloodraven_crd::{ConditionType, MysqlFailoverGroup};
use bloodraven_gtid::GtidSet;
use jiff::Timestamp;
use serde::Serialize;

use super::{Observed, WriteOp};

mod pitr;

/// The answer of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Verdict {
    Pass,
    Wait,
    Refuse,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Wait => "wait",
            Verdict::Refuse => "refuse",
        }
    }
}

/// One rule and its answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// The rule: a reason token of the spec (`UnknownSite`, `ClaimHeld`) or a short name.
    pub rule: String,
    pub verdict: Verdict,
    /// One line: what was found and, unless it passes, what would change the answer.
    pub line: String,
}

/// Every check of an operation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Preflight {
    pub checks: Vec<Check>,
}

impl Preflight {
    /// The worst verdict (Pass when there is no check).
    pub fn verdict(&self) -> Verdict {
        self.checks.iter().map(|check| check.verdict).max().unwrap_or(Verdict::Pass)
    }

    /// Whether the operation may be confirmed: nothing refuses.
    pub fn confirmable(&self) -> bool {
        self.verdict() != Verdict::Refuse
    }

    /// The checks with this verdict.
    pub fn with(&self, verdict: Verdict) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(move |check| check.verdict == verdict)
    }

    /// The verdict of a rule, when it was checked.
    pub fn rule(&self, rule: &str) -> Option<Verdict> {
        self.checks.iter().find(|check| check.rule == rule).map(|check| check.verdict)
    }

    /// `pass  UnknownSite: ...` lines.
    pub fn render(&self) -> String {
        self.checks
            .iter()
            .map(|check| format!("{:<6} {}: {}", check.verdict.as_str(), check.rule, check.line))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn push(&mut self, rule: &str, verdict: Verdict, line: impl Into<String>) {
        self.checks.push(Check { rule: rule.to_owned(), verdict, line: line.into() });
    }
}

/// The checklist of `op` on `observed` at `now`.
pub fn preflight(op: &WriteOp, observed: &Observed, now: Timestamp) -> Preflight {
    let mut out = Preflight::default();
    let Some(group) = observed.group.as_ref() else {
        out.push("GroupRead", Verdict::Refuse, format!("group {} was not read", op.group()));
        return out;
    };
    match op {
        WriteOp::RequestPlannedFailover { target, max_lag_wait, .. } => {
            planned_failover(&mut out, group, observed, target, max_lag_wait.as_deref(), now)
        }
        WriteOp::AcknowledgeHold { run_id, .. } => acknowledge(&mut out, group, run_id),
        WriteOp::RecloneQueueDrain { .. } => queue_decision(&mut out, group, true),
        WriteOp::RecloneQueueRelease { .. } => queue_decision(&mut out, group, false),
        WriteOp::BackupFromSite { profile, site, .. } => {
            backup(&mut out, group, profile);
            known_site(&mut out, group, site, "SourceSite");
            if let Some(state) = site_state(group, site)
                && matches!(state, SiteState::Unreachable | SiteState::Unknown)
            {
                out.push(
                    "SourceReachable",
                    Verdict::Refuse,
                    format!(
                        "{site} is {}; the backup would fail NoHealthySource: bring it back first",
                        state.as_str()
                    ),
                );
            }
        }
        WriteOp::CreateBackup { profile, .. } => backup(&mut out, group, profile),
        WriteOp::CreateVerification { backup, .. } => verification(&mut out, observed, backup),
        WriteOp::Reclone { site, .. } => reclone(&mut out, group, site),
        WriteOp::RestorePitrToNewGroup {
            name,
            backup,
            archive_profile,
            stop_time,
            exclude_gtids,
            ..
        } => pitr::restore(
            &mut out,
            group,
            observed,
            &pitr::Restore { name, backup, archive_profile, stop_time, exclude_gtids },
        ),
    }
    out
}

fn annotation<'a>(group: &'a MysqlFailoverGroup, key: &str) -> Option<&'a String> {
    group.metadata.annotations.as_ref().and_then(|annotations| annotations.get(key))
}

fn site_status<'a>(group: &'a MysqlFailoverGroup, site: &str) -> Option<&'a SiteStatus> {
    group.status.as_ref().and_then(|status| status.site(site))
}

fn site_state(group: &MysqlFailoverGroup, site: &str) -> Option<SiteState> {
    site_status(group, site).and_then(|status| status.state.clone())
}

fn known_site(out: &mut Preflight, group: &MysqlFailoverGroup, site: &str, rule: &str) -> bool {
    if group.spec.site(site).is_none() {
        let names: Vec<&str> = group.spec.sites.iter().map(|site| site.name.as_str()).collect();
        out.push(
            rule,
            Verdict::Refuse,
            format!("{site:?} is not a site of spec.sites ({})", names.join(", ")),
        );
        return false;
    }
    out.push(rule, Verdict::Pass, format!("{site} is a site of the group"));
    true
}

fn planned_failover(
    out: &mut Preflight,
    group: &MysqlFailoverGroup,
    observed: &Observed,
    target: &str,
    max_lag_wait: Option<&str>,
    now: Timestamp,
) {
    let status = group.status.clone().unwrap_or_default();
    let text = match max_lag_wait {
        Some(wait) => format!("{target}:maxLagWait={wait}"),
        None => target.to_owned(),
    };
    // InvalidAnnotation
    let request = match PlannedFailoverRequest::parse(&text) {
        Ok(request) => {
            out.push(
                Reason::InvalidAnnotation.as_str(),
                Verdict::Pass,
                format!("the request {text:?} reads"),
            );
            Some(request)
        }
        Err(error) => {
            out.push(
                Reason::InvalidAnnotation.as_str(),
                Verdict::Refuse,
                format!("{error}; write <site> or <site>:maxLagWait=<1s..1h>"),
            );
            None
        }
    };
    // UnknownSite, TargetNotPromotable
    let Some(spec) = group.spec.site(target) else {
        let names: Vec<&str> = group.spec.sites.iter().map(|site| site.name.as_str()).collect();
        out.push(
            Reason::UnknownSite.as_str(),
            Verdict::Refuse,
            format!("{target:?} is not a site of spec.sites; choose one of {}", names.join(", ")),
        );
        return;
    };
    out.push(
        Reason::UnknownSite.as_str(),
        Verdict::Pass,
        format!("{target} is a site of spec.sites"),
    );
    let role = spec.effective_role();
    if role == SiteRole::PrimaryCandidate {
        out.push(
            Reason::TargetNotPromotable.as_str(),
            Verdict::Pass,
            format!("{target} is a PrimaryCandidate"),
        );
    } else {
        out.push(
            Reason::TargetNotPromotable.as_str(),
            Verdict::Refuse,
            format!(
                "{target} is a {} site; only PrimaryCandidate sites are promoted",
                role.as_str()
            ),
        );
    }
    // AlreadyActive
    let active = status.active_site.clone();
    if active.as_deref() == Some(target) {
        out.push(
            Reason::AlreadyActive.as_str(),
            Verdict::Refuse,
            format!("{target} is already the active primary"),
        );
    } else {
        out.push(
            Reason::AlreadyActive.as_str(),
            Verdict::Pass,
            format!("{target} is not the active primary"),
        );
    }
    // KeyringRotation
    if observed.rotating_sites.iter().any(|site| site == target) {
        out.push(
            Reason::KeyringRotation.as_str(),
            Verdict::Refuse,
            format!("{target} is mid keyring rotation; request again once it finished"),
        );
    } else {
        out.push(
            Reason::KeyringRotation.as_str(),
            Verdict::Pass,
            format!("no keyring rotation of {target} is known (the operator re-checks)"),
        );
    }
    // DivergentTarget: a divergence report, or transactions the active site lacks.
    let target_status = status.site(target);
    let active_set = active.as_deref().and_then(|active| gtid_set(status.site(active)));
    let target_set = gtid_set(target_status);
    let distance = match (&active_set, &target_set) {
        (Some(primary), Some(site)) => Some(bloodraven_facts::distance(primary, site)),
        _ => None,
    };
    let report = target_status.is_some_and(|site| {
        site.recovery_state == Some(RecoveryState::RecoveryBlocked)
            || site.divergent_gtid.as_deref().is_some_and(|gtid| !gtid.is_empty())
    });
    match (&distance, report) {
        (_, true) => out.push(
            Reason::DivergentTarget.as_str(),
            Verdict::Refuse,
            format!("{target} has a divergence report; reclone it or make the primary contain its set, then request again"),
        ),
        (Some(distance), false) if !distance.is_contained() => out.push(
            Reason::DivergentTarget.as_str(),
            Verdict::Refuse,
            format!("{target} has transactions the primary lacks ({}); reclone it first", distance.ahead),
        ),
        _ => out.push(Reason::DivergentTarget.as_str(), Verdict::Pass, format!("{target} has nothing the primary lacks")),
    }
    // TargetUnhealthy: queued for a post-restore reclone (Armed, Draining or Held), or not a
    // replicating read-only replica.
    let queued = status
        .restore_reclones
        .as_ref()
        .filter(|queue| queue.pending.iter().any(|site| site == target));
    let target_state = target_status.and_then(|site| site.state.clone());
    let replicating = target_status.and_then(|site| site.replicating);
    if let Some(queue) = queued {
        let phase = queue.phase.as_ref().map_or("", |phase| phase.as_str());
        out.push(
            Reason::TargetUnhealthy.as_str(),
            Verdict::Refuse,
            format!(
                "{target} awaits its post-restore reclone (queue {phase}); decide the queue first"
            ),
        );
    } else if target_state != Some(SiteState::ReadOnly) || replicating != Some(true) {
        let state = target_state.as_ref().map_or("unknown", SiteState::as_str);
        out.push(
            Reason::TargetUnhealthy.as_str(),
            Verdict::Refuse,
            format!("{target} is not a healthy read-only replica (state {state}, replicating {}); repair it first", replicating.map_or("unknown".to_owned(), |r| r.to_string())),
        );
    } else {
        out.push(
            Reason::TargetUnhealthy.as_str(),
            Verdict::Pass,
            format!("{target} is a replicating read-only replica"),
        );
    }
    // ConcurrentOperation
    let restoring =
        status.restore_in_place.as_ref().and_then(|restore| restore.phase.clone()).filter(
            |phase| !matches!(phase, RestoreInPlacePhase::Succeeded | RestoreInPlacePhase::Failed),
        );
    match restoring {
        Some(phase) => out.push(
            Reason::ConcurrentOperation.as_str(),
            Verdict::Refuse,
            format!(
                "an in-place restore is in progress ({}); request again once it ended",
                phase.as_str()
            ),
        ),
        None => out.push(
            Reason::ConcurrentOperation.as_str(),
            Verdict::Pass,
            "no in-place restore is in progress",
        ),
    }
    // ManualRecoveryPending
    if group.automation_held() {
        out.push(
            Reason::ManualRecoveryPending.as_str(),
            Verdict::Refuse,
            "an automation hold stands; resolve it and acknowledge it first (the hold centre)",
        );
    } else {
        out.push(
            Reason::ManualRecoveryPending.as_str(),
            Verdict::Pass,
            "no automation hold stands",
        );
    }
    // InvalidFailoverState, CooldownActive
    let cooldown = group.spec.effective_failover_cooldown();
    match (&status.last_failover, cooldown) {
        (Some(record), _) if record.time.is_none() => out.push(
            Reason::InvalidFailoverState.as_str(),
            Verdict::Refuse,
            "status.lastFailover has no time; repair status.lastFailover",
        ),
        (_, Err(error)) => out.push(
            Reason::InvalidFailoverState.as_str(),
            Verdict::Refuse,
            format!("spec.failoverCooldown cannot be used ({error}); fix the spec"),
        ),
        (record, Ok(cooldown)) => {
            out.push(
                Reason::InvalidFailoverState.as_str(),
                Verdict::Pass,
                "the failover record reads",
            );
            let until = record
                .as_ref()
                .and_then(|record| record.time.as_ref())
                .and_then(|time| time.0.checked_add(cooldown).ok())
                .filter(|until| *until > now);
            let on_cooldown =
                group.spec.planned_failover.clone().unwrap_or_default().effective_on_cooldown();
            match until {
                Some(until) if on_cooldown == OnCooldown::Defer => out.push(
                    "Cooldown",
                    Verdict::Wait,
                    format!("the failover cooldown runs until {until}; onCooldown: Defer defers the run until then"),
                ),
                Some(until) => out.push(
                    Reason::CooldownActive.as_str(),
                    Verdict::Refuse,
                    format!("the failover cooldown runs until {until} (onCooldown: Reject); request again after it"),
                ),
                None => out.push(Reason::CooldownActive.as_str(), Verdict::Pass, "no failover cooldown runs"),
            }
        }
    }
    // Waits: a request already written, a failover in flight, a run in flight, unreadable peers.
    if let Some(value) = annotation(group, PLANNED_FAILOVER) {
        out.push(
            "RequestPending",
            Verdict::Refuse,
            format!(
                "a planned-failover request {value:?} is already written; wait for it or remove it"
            ),
        );
    }
    match &active {
        None => out.push(
            "AuthorityUnsettled",
            Verdict::Wait,
            "status.activeSite is empty: a failover is in flight; the run waits up to 2 minutes for it",
        ),
        Some(active) => out.push("AuthorityUnsettled", Verdict::Pass, format!("{active} is the active primary")),
    }
    if let Some(run) = status
        .planned_failover
        .as_ref()
        .filter(|run| run.phase.as_ref().is_some_and(|phase| !phase.is_terminal()))
    {
        out.push(
            "ClaimHeld",
            Verdict::Wait,
            format!(
                "planned failover {} is {}; a new request waits for the claim",
                run.run_id.as_deref().unwrap_or("?"),
                run.phase.as_ref().map_or("", |phase| phase.as_str())
            ),
        );
    }
    let unreadable: Vec<&str> = group
        .spec
        .sites
        .iter()
        .filter(|site| {
            site.name != target
                && matches!(
                    site.effective_role(),
                    SiteRole::PrimaryCandidate | SiteRole::DisasterRecovery
                )
        })
        .filter(|site| {
            site_state(group, &site.name)
                .is_none_or(|state| matches!(state, SiteState::Unreachable | SiteState::Unknown))
        })
        .map(|site| site.name.as_str())
        .collect();
    if unreadable.is_empty() {
        out.push(
            "PeerUnreadable",
            Verdict::Pass,
            "every PrimaryCandidate and DisasterRecovery site answers",
        );
    } else {
        out.push(
            "PeerUnreadable",
            Verdict::Wait,
            format!("{} does not answer; the run waits up to 2 minutes, then ends AdmissionTimeout: bring it back first", unreadable.join(", ")),
        );
    }
    // The target's distance and the expected lag wait.
    let max_wait = request
        .as_ref()
        .and_then(PlannedFailoverRequest::max_lag_wait)
        .and_then(|wait| wait.to_std())
        .or_else(|| {
            group.spec.planned_failover.clone().unwrap_or_default().effective_max_lag_wait().ok()
        });
    let lag = target_status.and_then(|site| site.seconds_behind_source);
    let behind = distance.as_ref().map(|distance| distance.behind);
    let line = format!(
        "{target} is {} behind {}; lag {} against maxLagWait {}",
        behind.map_or("an unknown number of transactions".to_owned(), |b| format!(
            "{b} transactions"
        )),
        active.as_deref().unwrap_or("the primary"),
        lag.map_or("unknown".to_owned(), |lag| format!("{lag}s")),
        max_wait.map_or("unknown".to_owned(), |wait| format!("{}s", wait.as_secs())),
    );
    match (lag, max_wait) {
        (Some(lag), Some(wait)) if u64::try_from(lag).unwrap_or(0) >= wait.as_secs() => out.push(
            "LagWait",
            Verdict::Wait,
            format!(
                "{line}: the run would likely end LagTimeout; wait for the replica to catch up"
            ),
        ),
        _ => out.push("LagWait", Verdict::Pass, line),
    }
}

fn gtid_set(site: Option<&SiteStatus>) -> Option<GtidSet> {
    site.and_then(|site| site.gtid_executed.as_deref()).and_then(|text| text.parse().ok())
}

fn acknowledge(out: &mut Preflight, group: &MysqlFailoverGroup, run_id: &str) {
    let status = group.status.clone().unwrap_or_default();
    match &status.planned_failover_hold {
        Some(hold) => {
            let held = hold.run_id.as_deref().unwrap_or_default();
            if held == run_id {
                out.push(
                    "HoldStanding",
                    Verdict::Pass,
                    format!(
                        "the hold of run {held} stands ({}) since {}",
                        hold.reason.as_ref().map_or("no reason", |reason| reason.as_str()),
                        hold.hold_time.as_ref().map_or("?".to_owned(), |time| time.0.to_string())
                    ),
                );
            } else {
                out.push(
                    "RunMatches",
                    Verdict::Refuse,
                    format!("the standing hold is run {held}; an acknowledgement naming {run_id} is ignored (PlannedFailoverHoldAcknowledgmentIgnored)"),
                );
            }
        }
        None if group.automation_held()
            && status
                .condition(&ConditionType::AutomaticFailoverHeld)
                .is_some_and(|c| c.is_true()) =>
        {
            out.push(
                "HoldStanding",
                Verdict::Refuse,
                "AutomaticFailoverHeld is True without status.plannedFailoverHold: it names no run, so no acknowledgement clears it; remove the condition by hand once the sites are resolved",
            );
        }
        None if group.automation_held() => out.push(
            "HoldStanding",
            Verdict::Pass,
            format!("a terminal marker carries the hold; acknowledging run {run_id}"),
        ),
        None => out.push(
            "HoldStanding",
            Verdict::Refuse,
            format!("no automation hold stands; an acknowledgement of {run_id} would be ignored"),
        ),
    }
    if let Some(value) = annotation(group, ACKNOWLEDGE_PLANNED_FAILOVER_HOLD) {
        out.push(
            "AcknowledgementPending",
            Verdict::Refuse,
            format!("an acknowledgement {value:?} is already written; wait for the operator"),
        );
    }
    // The spec's guidance: exactly one writable site, the others fenced (read-only).
    let writable: Vec<&str> = status
        .sites
        .iter()
        .filter(|site| site.state == Some(SiteState::Writable))
        .map(|site| site.name.as_str())
        .collect();
    match writable.as_slice() {
        [one] => out.push("OneWritable", Verdict::Pass, format!("exactly one site is writable: {one}")),
        [] => out.push(
            "OneWritable",
            Verdict::Refuse,
            "no site is writable: confirm every site is read-only, unfence the most complete one by hand, then acknowledge",
        ),
        many => out.push(
            "OneWritable",
            Verdict::Refuse,
            format!("{} are writable: resolve the split brain by hand (fence all but one), then acknowledge", many.join(", ")),
        ),
    }
    let unfenced: Vec<&str> = status
        .sites
        .iter()
        .filter(|site| !matches!(site.state, Some(SiteState::Writable | SiteState::ReadOnly)))
        .map(|site| site.name.as_str())
        .collect();
    if unfenced.is_empty() {
        out.push("OthersFenced", Verdict::Pass, "every other site answers read-only");
    } else {
        out.push(
            "OthersFenced",
            Verdict::Wait,
            format!(
                "{} does not answer read-only; check it is fenced before acknowledging",
                unfenced.join(", ")
            ),
        );
    }
}

fn queue_decision(out: &mut Preflight, group: &MysqlFailoverGroup, drain: bool) {
    let status = group.status.clone().unwrap_or_default();
    let Some(queue) = &status.restore_reclones else {
        out.push(
            "QueuePresent",
            Verdict::Refuse,
            "there is no status.restoreReclones: nothing to decide",
        );
        return;
    };
    let phase = queue.phase.clone();
    let pending = queue.pending.join(", ");
    match (&phase, drain) {
        (Some(RestoreReclonesPhase::Held), _) => out.push(
            "QueueHeld",
            Verdict::Pass,
            format!("the queue of restore {} is Held with {pending}", queue.run_id.as_deref().unwrap_or("?")),
        ),
        (Some(RestoreReclonesPhase::Armed), _) => out.push(
            "QueueHeld",
            Verdict::Refuse,
            "the queue is Armed: its restore still runs; it drains by itself once the restore succeeds",
        ),
        (Some(RestoreReclonesPhase::Draining), true) => {
            out.push("QueueHeld", Verdict::Refuse, "the queue is already Draining")
        }
        (_, true) => out.push(
            "QueueHeld",
            Verdict::Refuse,
            format!("the queue phase is {}; only a Held queue is set to Draining", phase.as_ref().map_or("unset", |phase| phase.as_str())),
        ),
        (_, false) => out.push(
            "QueueHeld",
            Verdict::Pass,
            format!("the queue phase is {}", phase.as_ref().map_or("unset", |phase| phase.as_str())),
        ),
    }
    let primary = status
        .active_site
        .as_deref()
        .filter(|active| site_state(group, active) == Some(SiteState::Writable));
    match (primary, drain) {
        (Some(active), true) => out.push("PrimaryWritable", Verdict::Pass, format!("the held sites are recloned from {active}")),
        (None, true) => out.push(
            "PrimaryWritable",
            Verdict::Refuse,
            "no writable primary to reclone from; bring the primary back first (or release the queue to accept the stale copy)",
        ),
        (Some(active), false) => out.push(
            "PrimaryWritable",
            Verdict::Pass,
            format!("the held sites resume replicating from {active} (release the hold)"),
        ),
        (None, false) => out.push(
            "PrimaryWritable",
            Verdict::Pass,
            "the primary is down: clearing the queue accepts the stale copy and lets automatic failover proceed",
        ),
    }
}

fn backup(out: &mut Preflight, group: &MysqlFailoverGroup, profile: &str) {
    let profiles: Vec<&str> = group
        .spec
        .backup
        .as_ref()
        .map(|backup| backup.profiles.iter().map(|profile| profile.name.as_str()).collect())
        .unwrap_or_default();
    if profiles.contains(&profile) {
        out.push("Profile", Verdict::Pass, format!("{profile} is a backup profile of the group"));
    } else if profiles.is_empty() {
        out.push(
            "Profile",
            Verdict::Refuse,
            "the group has no backup profile (spec.backup.profiles); add one first",
        );
    } else {
        out.push(
            "Profile",
            Verdict::Refuse,
            format!(
                "{profile:?} is not a backup profile of the group; choose one of {}",
                profiles.join(", ")
            ),
        );
    }
}

fn verification(out: &mut Preflight, observed: &Observed, name: &str) {
    let Some(backup) = &observed.backup else {
        out.push("Backup", Verdict::Refuse, format!("backup {name:?} was not found"));
        return;
    };
    let phase = backup.status.as_ref().and_then(|status| status.phase.clone());
    if phase == Some(BackupPhase::Succeeded) {
        out.push("BackupSucceeded", Verdict::Pass, format!("backup {name} succeeded"));
    } else {
        out.push(
            "BackupSucceeded",
            Verdict::Refuse,
            format!(
                "backup {name} is {}; only a Succeeded backup can be verified",
                phase.as_ref().map_or("not started", |phase| phase.as_str())
            ),
        );
    }
}

fn reclone(out: &mut Preflight, group: &MysqlFailoverGroup, site: &str) {
    if !known_site(out, group, site, "UnknownSite") {
        return;
    }
    let status = group.status.clone().unwrap_or_default();
    if status.active_site.as_deref() == Some(site) {
        out.push(
            "NotPrimary",
            Verdict::Refuse,
            format!("{site} is the active primary; a primary is never recloned"),
        );
    } else {
        out.push("NotPrimary", Verdict::Pass, format!("{site} is not the active primary"));
    }
    if let Some(queue) = status.restore_reclones.as_ref().filter(|queue| {
        queue.pending.iter().any(|pending| pending == site)
            && matches!(queue.phase, Some(RestoreReclonesPhase::Armed | RestoreReclonesPhase::Held))
    }) {
        out.push(
            "RecloneRejected",
            Verdict::Refuse,
            format!("{site} is queued in a {} reclone queue: the request would be refused; set the queue to Draining instead", queue.phase.as_ref().map_or("", |phase| phase.as_str())),
        );
    }
    if let Some(value) = annotation(group, RECLONE_SITE) {
        out.push(
            "ReclonePending",
            Verdict::Refuse,
            format!("a reclone request {value:?} is already written; wait for it"),
        );
    }
    if status
        .planned_failover
        .as_ref()
        .is_some_and(|run| run.phase.as_ref().is_some_and(|phase| !phase.is_terminal()))
    {
        out.push(
            "PlannedFailoverInFlight",
            Verdict::Wait,
            "a planned failover is in flight; the reclone waits for it",
        );
    }
}
