//! Checks on what the operator publishes: object status paths, Events and convergence.

use bloodraven_crd::group::{SiteState, SourceConvergenceState};
use bloodraven_crd::{ConditionType, MysqlFailoverGroup};
use serde_json::Value;

use super::StepError;
use super::checks::Seen;
use super::operator::resolve_object;
use crate::live::LiveLab;
use crate::model::{ConvergedCheck, EventCheck, OutcomeCheck, StatusCheck};

/// Walks a dotted path: `status.activeSite`, `status.sites[1].state`,
/// `status.sites[name=pdx].sourceConvergenceState`, `status.conditions[type=Ready].status`.
pub(crate) fn walk<'a>(value: &'a Value, path: &str) -> Result<Option<&'a Value>, String> {
    let mut at = value;
    for segment in path.split('.') {
        let (key, selectors) = match segment.find('[') {
            Some(i) => (&segment[..i], &segment[i..]),
            None => (segment, ""),
        };
        if !key.is_empty() {
            match at.get(key) {
                Some(next) => at = next,
                None => return Ok(None),
            }
        }
        let mut rest = selectors;
        while let Some(open) = rest.strip_prefix('[') {
            let Some(close) = open.find(']') else {
                return Err(format!("path {path:?}: `[` without `]` in {segment:?}"));
            };
            let selector = &open[..close];
            rest = &open[close + 1..];
            let Some(items) = at.as_array() else { return Ok(None) };
            let found = match selector.split_once('=') {
                Some((field, want)) => items.iter().find(|item| item[field] == want),
                None => {
                    let index: usize = selector.parse().map_err(|_| {
                        format!("path {path:?}: [{selector}] is neither an index nor field=value")
                    })?;
                    items.get(index)
                }
            };
            match found {
                Some(next) => at = next,
                None => return Ok(None),
            }
        }
        if !rest.is_empty() {
            return Err(format!("path {path:?}: unexpected {rest:?} after `]`"));
        }
    }
    Ok(Some(at))
}

pub(super) fn status(live: &LiveLab, check: &StatusCheck) -> Result<Seen, StepError> {
    let (kind, api_version, name) = resolve_object(live, &check.object)?;
    let Some(object) = live.lab().get(&api_version, &kind, Some(live.namespace()), &name) else {
        return Ok(Seen { holds: false, seen: format!("no {kind} {name}") });
    };
    let found = walk(&object, &check.path).map_err(StepError::Failed)?;
    // A missing field equals `null`.
    let holds = found.unwrap_or(&Value::Null) == &check.equals;
    let seen = match found {
        Some(value) => format!("{kind} {name} {} = {value}", check.path),
        None => format!("{kind} {name} has no {}", check.path),
    };
    Ok(Seen { holds, seen })
}

fn event_line(event: &Value) -> String {
    let instance = event["reportingInstance"].as_str().unwrap_or("?");
    let note = event["note"].as_str().or_else(|| event["message"].as_str()).unwrap_or("");
    format!("{} by {instance}: {note}", event["reason"].as_str().unwrap_or("?"))
}

pub(super) fn event(live: &LiveLab, check: &EventCheck) -> Seen {
    let events = live.group_events();
    let matching: Vec<&Value> = events
        .iter()
        .filter(|event| event["reason"] == check.reason.as_str())
        .filter(|event| {
            check.instance.as_ref().is_none_or(|instance| {
                event["reportingInstance"] == instance.as_str()
                    || event["source"]["host"] == instance.as_str()
            })
        })
        .collect();
    let absent = check.absent.unwrap_or(false);
    let holds = matching.is_empty() == absent;
    let seen = if matching.is_empty() {
        let reasons: std::collections::BTreeSet<&str> =
            events.iter().filter_map(|event| event["reason"].as_str()).collect();
        format!("no such Event; the group's Event reasons: {reasons:?}")
    } else {
        let lines: Vec<String> = matching.iter().map(|event| event_line(event)).collect();
        format!("{} such Events: {}", matching.len(), lines.join("; "))
    };
    Seen { holds, seen }
}

pub(super) fn converged(live: &LiveLab, check: &ConvergedCheck) -> Seen {
    let Some(object) = live.group_object() else {
        return Seen { holds: false, seen: "no group object".into() };
    };
    let group: MysqlFailoverGroup = match serde_json::from_value(object) {
        Ok(group) => group,
        Err(e) => return Seen { holds: false, seen: format!("the group does not read: {e}") },
    };
    let Some(status) = group.status.as_ref() else {
        return Seen { holds: false, seen: "no status yet".into() };
    };
    let sites: Vec<String> = status
        .sites
        .iter()
        .map(|site| {
            format!(
                "{}:{}/{}/{}{}",
                site.name,
                site.state.as_ref().map_or("-", |s| s.as_str()),
                site.source_convergence_state.as_ref().map_or("-", |s| s.as_str()),
                if site.replicating == Some(true) { "replicating" } else { "not-replicating" },
                site.source_convergence_reason
                    .as_ref()
                    .map(|r| format!("({})", r.as_str()))
                    .unwrap_or_default()
            )
        })
        .collect();
    let ready = status.condition(&ConditionType::Ready);
    let last = status.last_failover.as_ref().map(|last| {
        format!("{:?} at {:?}", last.target, last.time.as_ref().map(|t| t.0.to_string()))
    });
    let seen = format!(
        "activeSite={:?} lastFailover={} Ready={} sites [{}]",
        status.active_site,
        last.unwrap_or_else(|| "none".into()),
        ready.map_or_else(
            || "-".to_owned(),
            |c| format!("{}({})", c.is_true(), c.reason.as_ref().map_or("", |r| r.as_str()))
        ),
        sites.join(" ")
    );
    let Some(active) = status.active_site.clone() else {
        return Seen { holds: false, seen };
    };
    let holds = check.active_site.as_ref().is_none_or(|want| *want == active)
        && check.not.as_ref() != Some(&active)
        && ready.is_some_and(|c| c.is_true())
        && status.site(&active).is_some_and(|site| site.state == Some(SiteState::Writable))
        && status
            .sites
            .iter()
            .filter(|site| {
                site.name != active
                    && check.not.as_ref() != Some(&site.name)
                    && !check.except.contains(&site.name)
            })
            .all(|site| {
                site.source_convergence_state == Some(SourceConvergenceState::Converged)
                    && site.replicating == Some(true)
            });
    Seen { holds, seen }
}

/// The last planned failover's outcome: `outcome` matches the block's phase (`Succeeded`,
/// `Failed`) or its `result.outcome` (`NotStarted`, `RolledBack`, ...); `reason`, when given,
/// its `result.reason`.
pub(super) fn outcome(live: &LiveLab, check: &OutcomeCheck) -> Seen {
    let Some(object) = live.group_object() else {
        return Seen { holds: false, seen: "no group object".into() };
    };
    let block = &object["status"]["plannedFailover"];
    if block.is_null() {
        return Seen { holds: false, seen: "no status.plannedFailover".into() };
    }
    let phase = block["phase"].as_str().unwrap_or("");
    let result = block["result"]["outcome"].as_str().unwrap_or("");
    let reason = block["result"]["reason"].as_str().unwrap_or("");
    let terminal = matches!(phase, "Succeeded" | "Failed");
    let holds = terminal
        && (check.outcome == phase || check.outcome == result)
        && check.reason.as_deref().is_none_or(|want| want == reason);
    let seen = format!(
        "plannedFailover run {} phase {phase:?} outcome {result:?} reason {reason:?}: {}",
        block["runID"].as_str().unwrap_or("?"),
        block["message"].as_str().unwrap_or("")
    );
    Seen { holds, seen }
}
