//! Planned failover: a run in flight (writes blocked since, deadline), a run that ended other
//! than Succeeded, and the automation hold (status record, condition, or terminal marker).

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::annotations::{
    ACKNOWLEDGE_PLANNED_FAILOVER_HOLD, PLANNED_FAILOVER_TERMINAL, TerminalMarker,
};
use bloodraven_crd::catalog;
use bloodraven_crd::group::{PlannedFailoverOutcome, PlannedFailoverPhase};
use bloodraven_crd::{ConditionType, MysqlFailoverGroupStatus};
use jiff::Timestamp;

use super::{Finding, Inputs, Kind, Severity, format_span, format_time, since};

/// A planned failover that has not ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// `runID`.
    pub run_id: Option<String>,
    /// The phase.
    pub phase: PlannedFailoverPhase,
    /// The site being demoted.
    pub source: Option<String>,
    /// The site being promoted.
    pub target: Option<String>,
    /// When the source's fence was applied (writes blocked since), when it was.
    pub fenced_at: Option<Timestamp>,
    /// The deadline of the current step and what it bounds.
    pub deadline: Option<(Timestamp, &'static str)>,
}

impl InFlight {
    /// Whether the source is fenced and nothing is promoted yet: no writer is expected.
    pub fn blocks_writes(&self) -> bool {
        self.fenced_at.is_some()
            && !matches!(
                self.phase,
                PlannedFailoverPhase::Publishing | PlannedFailoverPhase::Resuming
            )
    }
}

fn add(start: Timestamp, duration: std::time::Duration) -> Timestamp {
    let seconds = i64::try_from(duration.as_secs()).unwrap_or(i64::MAX);
    Timestamp::from_second(start.as_second().saturating_add(seconds)).unwrap_or(start)
}

/// The run in flight, when the latest record is not terminal.
pub fn in_flight(group: &MysqlFailoverGroup) -> Option<InFlight> {
    let record = group.status.as_ref()?.planned_failover.as_ref()?;
    let phase = record.phase.clone()?;
    if phase.is_terminal() {
        return None;
    }
    let fenced_at = record
        .fence
        .as_ref()
        .filter(|fence| fence.state.as_ref().is_some_and(|state| state.as_str() == "Applied"))
        .and_then(|fence| fence.apply_time.as_ref().or(fence.intent_time.as_ref()))
        .map(|time| time.0);
    let settings = record.settings.as_ref();
    let deadline = match phase {
        PlannedFailoverPhase::WaitingForLag => record
            .lag_wait
            .as_ref()
            .and_then(|wait| wait.start_time.as_ref())
            .zip(
                settings
                    .and_then(|settings| settings.max_lag_wait.as_ref())
                    .and_then(|wait| wait.to_std().ok()),
            )
            .map(|(start, wait)| {
                (
                    add(start.0, wait),
                    "maxLagWait: the run rolls back (LagTimeout) and unfences the source",
                )
            }),
        PlannedFailoverPhase::Draining => record
            .drain
            .as_ref()
            .and_then(|drain| drain.start_time.as_ref())
            .zip(
                settings
                    .and_then(|settings| settings.drain_timeout.as_ref())
                    .and_then(|timeout| timeout.to_std().ok()),
            )
            .map(|(start, timeout)| {
                (
                    add(start.0, timeout),
                    "drainTimeout: remaining connections are killed and the run goes on",
                )
            }),
        PlannedFailoverPhase::Admitting | PlannedFailoverPhase::Deferred => {
            record.admission.as_ref().and_then(|admission| admission.deadline_time.as_ref()).map(
                |deadline| {
                    (deadline.0, "admission deadline: the run ends NotStarted (AdmissionTimeout)")
                },
            )
        }
        _ => None,
    };
    Some(InFlight {
        run_id: record.run_id.clone(),
        phase,
        source: record.source_site.clone(),
        target: record.target_site.clone(),
        fenced_at,
        deadline,
    })
}

/// The hold's acknowledgement command for `run_id`.
pub fn acknowledge_command(inputs: &Inputs<'_>, run_id: &str) -> String {
    format!("{} {ACKNOWLEDGE_PLANNED_FAILOVER_HOLD}={run_id}", inputs.kubectl("annotate"))
}

pub(super) fn check(inputs: &Inputs<'_>, in_flight: Option<&InFlight>, out: &mut Vec<Finding>) {
    let now = inputs.now;
    let Some(status) = inputs.group.status.as_ref() else { return };
    if let Some(run) = in_flight {
        out.push(in_flight_finding(inputs, run));
    }
    hold(inputs, status, out);
    if let Some(record) = status.planned_failover.as_ref()
        && record.phase.as_ref().is_some_and(PlannedFailoverPhase::is_terminal)
        && let Some(result) = record.result.as_ref()
        && let Some(outcome) = result.outcome.as_ref()
        && !matches!(
            outcome,
            PlannedFailoverOutcome::Succeeded | PlannedFailoverOutcome::ManualRecoveryRequired
        )
    {
        let reason = result.reason.as_ref().map(|reason| reason.as_str());
        let severity = match outcome {
            PlannedFailoverOutcome::SourceLeftFenced
            | PlannedFailoverOutcome::PromotedUnconfirmed => Severity::Critical,
            _ => Severity::Warning,
        };
        let ended = result
            .completion_time
            .as_ref()
            .map(|time| format!(", ended {}", since(now, time.0)))
            .unwrap_or_default();
        let remedy = reason
            .and_then(|reason| catalog::lookup(catalog::Kind::PlannedFailoverReason, reason))
            .or_else(|| catalog::lookup(catalog::Kind::PlannedFailoverOutcome, outcome.as_str()))
            .map_or("read the run's Events", |entry| entry.remedy);
        out.push(
            Finding::new(
                severity,
                Kind::PlannedFailoverFailed,
                format!(
                    "planned failover {} -> {} ended {}{}{ended}",
                    record.source_site.as_deref().unwrap_or("?"),
                    record.target_site.as_deref().unwrap_or("?"),
                    outcome.as_str(),
                    reason.map(|reason| format!(" ({reason})")).unwrap_or_default()
                ),
            )
            .fact(format!(
                "status.plannedFailover.result.outcome={}{}",
                outcome.as_str(),
                reason.map(|reason| format!(", reason={reason}")).unwrap_or_default()
            ))
            .action(remedy)
            .command(inputs.kubectl("describe")),
        );
    }
}

fn in_flight_finding(inputs: &Inputs<'_>, run: &InFlight) -> Finding {
    let now = inputs.now;
    let route = format!(
        "{} -> {}",
        run.source.as_deref().unwrap_or("?"),
        run.target.as_deref().unwrap_or("?")
    );
    let mut cause = format!("planned failover {route} in {}", run.phase.as_str());
    let mut severity = Severity::Info;
    if let Some(fenced) = run.fenced_at
        && run.blocks_writes()
    {
        cause.push_str(&format!(": writes blocked since {}", since(now, fenced)));
        severity = Severity::Warning;
    }
    let action = match run.deadline {
        Some((deadline, what)) if deadline < now => {
            severity = Severity::Critical;
            format!(
                "the deadline {} passed {} ago and the run has not moved ({what}): the operator may be stalled",
                format_time(deadline),
                format_span(now.as_second() - deadline.as_second())
            )
        }
        Some((deadline, what)) => format!(
            "deadline {} (in {}), then {what}",
            format_time(deadline),
            format_span(deadline.as_second() - now.as_second())
        ),
        None => "the run proceeds on its own; watch it".to_owned(),
    };
    Finding::new(severity, Kind::PlannedFailoverInFlight, cause)
        .fact(format!(
            "status.plannedFailover.phase={}; runID={}",
            run.phase.as_str(),
            run.run_id.as_deref().unwrap_or("<none>")
        ))
        .action(action)
        .command(format!("kubectl get mfg {} -n {} -w", inputs.name(), inputs.namespace()))
}

fn hold(inputs: &Inputs<'_>, status: &MysqlFailoverGroupStatus, out: &mut Vec<Finding>) {
    if !inputs.group.automation_held() {
        return;
    }
    let condition_true = status
        .condition(&ConditionType::AutomaticFailoverHeld)
        .is_some_and(bloodraven_crd::Condition::is_true);
    let marker = inputs
        .group
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(PLANNED_FAILOVER_TERMINAL))
        .map(|value| TerminalMarker::parse(value));
    let action = "automatic failover is suspended: resolve the sites by hand (keep the one with the acknowledged writes, fence the other), then acknowledge the run";
    if let Some(hold) = status.planned_failover_hold.as_ref() {
        let run = hold.run_id.as_deref().unwrap_or("<runID>");
        let standing = hold
            .hold_time
            .as_ref()
            .map(|time| format!(", standing since {}", since(inputs.now, time.0)))
            .unwrap_or_default();
        let ambiguous = if hold.ambiguous_sites.is_empty() {
            String::new()
        } else {
            format!("; ambiguous sites {}", hold.ambiguous_sites.join(", "))
        };
        out.push(
            Finding::new(
                Severity::Critical,
                Kind::AutomationHeld,
                format!(
                    "automation held: planned failover {} -> {} ended ManualRecoveryRequired ({}){ambiguous}{standing}",
                    hold.source_site.as_deref().unwrap_or("?"),
                    hold.target_site.as_deref().unwrap_or("?"),
                    hold.reason.as_ref().map_or("?", |reason| reason.as_str())
                ),
            )
            .fact(format!(
                "status.plannedFailoverHold.runID={run}; AutomaticFailoverHeld={}",
                if condition_true { "True" } else { "not True" }
            ))
            .action(action)
            .command(acknowledge_command(inputs, run)),
        );
    } else if let Some(record) = marker.as_ref().and_then(TerminalMarker::record).filter(|record| {
        record.outcome() == PlannedFailoverOutcome::ManualRecoveryRequired.as_str()
    }) {
        out.push(
            Finding::new(
                Severity::Critical,
                Kind::AutomationHeld,
                format!(
                    "automation held by the terminal marker only: run {} ended ManualRecoveryRequired ({}) but could not write its status",
                    record.run_id(),
                    record.reason()
                ),
            )
            .fact(format!("annotation {PLANNED_FAILOVER_TERMINAL} outcome=ManualRecoveryRequired"))
            .action(action)
            .command(acknowledge_command(inputs, record.run_id())),
        );
    } else {
        let index = status
            .conditions
            .iter()
            .position(|condition| condition.type_ == ConditionType::AutomaticFailoverHeld)
            .unwrap_or(0);
        out.push(
            Finding::new(
                Severity::Critical,
                Kind::AutomationHeld,
                "automation held by the AutomaticFailoverHeld condition alone: it names no run, so no acknowledgement clears it",
            )
            .fact("status.conditions[AutomaticFailoverHeld]=True; no status.plannedFailoverHold")
            .action("resolve the sites by hand, then remove the condition")
            .command(format!(
                "{} --subresource=status --type=json -p '[{{\"op\":\"remove\",\"path\":\"/status/conditions/{index}\"}}]'",
                inputs.kubectl("patch")
            )),
        );
    }
}
