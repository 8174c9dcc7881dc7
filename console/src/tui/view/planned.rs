//! The planned-failover panel: the run's timeline (done, skipped, pending, running and failed
//! steps, each with its own marker and colour and the time it took), since when writes are
//! blocked, what happens at the deadline, and whether the operator is alive.

use super::*;

/// The phases of a run with the time each was reached, as far as the record shows.
pub fn timeline(record: &PlannedFailoverStatus) -> Vec<(&'static str, Option<Timestamp>)> {
    let time = |time: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
        time.map(|time| time.0)
    };
    let mut steps = vec![
        ("Admitting", time(record.start_time.as_ref())),
        ("Fencing", time(record.fence.as_ref().and_then(|fence| fence.intent_time.as_ref()))),
        ("Draining", time(record.drain.as_ref().and_then(|drain| drain.start_time.as_ref()))),
        ("WaitingForLag", time(record.lag_wait.as_ref().and_then(|wait| wait.start_time.as_ref()))),
    ];
    if let Some(dragonfly) = &record.dragonfly {
        steps.push(("WaitingForDragonflySync", time(dragonfly.sync_wait_start_time.as_ref())));
        steps.push((
            "PromotingDragonfly",
            time(dragonfly.takeover.as_ref().and_then(|takeover| takeover.intent_time.as_ref())),
        ));
    }
    steps.push(("Promoting", time(record.promotion.as_ref().and_then(|p| p.intent_time.as_ref()))));
    steps.push(("Publishing", time(record.dns.as_ref().and_then(|dns| dns.attempt_time.as_ref()))));
    if let Some(rollback) = &record.rollback {
        steps.push(("RollingBack", time(rollback.intent_time.as_ref())));
    }
    let end = time(record.result.as_ref().and_then(|result| result.completion_time.as_ref()));
    match record.phase.as_ref().map(|phase| phase.as_str()) {
        Some("Failed") => steps.push(("Failed", end)),
        _ => steps.push(("Succeeded", end)),
    }
    steps
}

/// Where a step of the timeline stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Reached and left.
    Done,
    /// Not reached although a later step was: the run went around it.
    Skipped,
    /// Not reached yet.
    Pending,
    /// The run is in it now.
    Running,
    /// The run ended failed in (or right after) it.
    Failed,
}

impl Step {
    /// The marker and the word: the word keeps the meaning under `NO_COLOR`.
    pub(super) fn marker(self) -> (&'static str, &'static str) {
        match self {
            Step::Done => ("✓", "done"),
            Step::Skipped => ("↷", "skipped"),
            Step::Pending => ("·", "pending"),
            Step::Running => ("▶", "running"),
            Step::Failed => ("✗", "failed"),
        }
    }

    fn colour(self) -> Color {
        match self {
            Step::Done => Color::Green,
            Step::Skipped => Color::DarkGray,
            Step::Pending => Color::Reset,
            Step::Running => Color::Cyan,
            Step::Failed => Color::Red,
        }
    }
}

/// Each step of the timeline with where it stands and how long it took (to the next reached
/// step, or to `now` for the running one).
pub(super) fn steps(
    record: &PlannedFailoverStatus,
    now: Timestamp,
) -> Vec<(&'static str, Option<Timestamp>, Step, Option<i64>)> {
    let steps = timeline(record);
    let current = record.phase.as_ref().map(|phase| phase.as_str().to_owned()).unwrap_or_default();
    let failed = current == "Failed";
    let terminal = record.phase.as_ref().is_some_and(|phase| phase.is_terminal());
    let current_index = steps.iter().position(|(phase, _)| *phase == current);
    let last_reached = steps.iter().rposition(|(_, at)| at.is_some());
    // The last step reached before the end, where a failed run failed.
    let failed_in = if failed {
        steps[..steps.len().saturating_sub(1)].iter().rposition(|(_, at)| at.is_some())
    } else {
        None
    };
    steps
        .iter()
        .enumerate()
        .map(|(index, (phase, at))| {
            let reached_later = steps[index + 1..].iter().any(|(_, at)| at.is_some())
                || current_index.is_some_and(|current| current > index);
            let step = if Some(index) == current_index && !terminal {
                Step::Running
            } else if failed && (Some(index) == failed_in || index + 1 == steps.len()) {
                Step::Failed
            } else if at.is_some() || (terminal && Some(index) == current_index) {
                Step::Done
            } else if reached_later || terminal {
                Step::Skipped
            } else {
                Step::Pending
            };
            let took = at.map(|start| {
                let end = steps[index + 1..].iter().find_map(|(_, at)| *at);
                let end = match (step, end) {
                    (Step::Running, _) => now,
                    (_, Some(end)) => end,
                    (_, None) => now,
                };
                end.as_second() - start.as_second()
            });
            let took = if matches!(step, Step::Done | Step::Running | Step::Failed)
                && Some(index) != last_reached.filter(|_| terminal)
            {
                took
            } else {
                None
            };
            (*phase, *at, step, took)
        })
        .collect()
}

pub(super) fn planned_failover_lines(
    state: &State,
    group: &MysqlFailoverGroup,
) -> Vec<Line<'static>> {
    let Some(record) = group.status.as_ref().and_then(|status| status.planned_failover.as_ref())
    else {
        return vec![Line::from("No planned failover recorded for this group.")];
    };
    let mut lines = vec![Line::from(Span::styled("Timeline", bold()))];
    for (phase, at, step, took) in steps(record, state.now) {
        let (marker, word) = step.marker();
        let when = at.map_or_else(
            || NONE.to_owned(),
            |at| format!("{} ({} ago)", summary::at(at), summary::age(state.now, at)),
        );
        let took = took.map_or_else(String::new, |seconds| {
            let verb = if step == Step::Running { "for" } else { "took" };
            format!("  {verb} {}", summary::short_duration(seconds))
        });
        let mut line_style = style(state, step.colour());
        if matches!(step, Step::Running | Step::Failed) {
            line_style = line_style.add_modifier(Modifier::BOLD);
        }
        lines.push(Line::from(Span::styled(
            format!(" {marker} {word:<7} {phase:<24} {when}{took}"),
            line_style,
        )));
    }
    lines.push(Line::from(""));
    if let Some(run) = bloodraven_facts::verdict::in_flight(group) {
        if run.blocks_writes()
            && let Some(fenced) = run.fenced_at
        {
            lines.push(Line::from(Span::styled(
                format!(
                    "Writes blocked since {} ({} ago): the source is fenced and nothing is promoted yet",
                    summary::at(fenced),
                    summary::age(state.now, fenced)
                ),
                style(state, Color::Yellow).add_modifier(Modifier::BOLD),
            )));
        }
        match run.deadline {
            Some((deadline, what)) => lines.push(Line::from(format!(
                "At the deadline {} ({}): {what}",
                summary::at(deadline),
                summary::countdown(state.now, deadline)
            ))),
            None => lines.push(Line::from("This step has no deadline of its own.")),
        }
    }
    lines.extend(liveness(state, group));
    lines.push(Line::from(""));
    lines.extend(pairs(report::planned_failover_block(record, state.now)));
    lines
}

/// Whether the operator is alive: when each site was last seen, and the leader Lease.
fn liveness(state: &State, group: &MysqlFailoverGroup) -> Vec<Line<'static>> {
    let status = group.status.clone().unwrap_or_default();
    let seen: Vec<String> = group
        .spec
        .sites
        .iter()
        .map(|site| {
            let last = status.site(&site.name).and_then(|site| site.last_seen.as_ref());
            match last {
                Some(time) => format!("{} {} ago", site.name, summary::age(state.now, time.0)),
                None => format!("{} never", site.name),
            }
        })
        .collect();
    vec![Line::from(format!("Operator liveness: sites last seen {}", seen.join(", "))), {
        let mut lease = super::overview::operator_liveness(state);
        lease.spans.insert(0, Span::raw("  "));
        lease
    }]
}
