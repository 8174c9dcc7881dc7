//! The hold centre: the run, its reason and how long it stands, the ambiguous sites side by
//! side (writability, GTID set, and what each has that the others lack), the spec's guidance
//! as a checklist evaluated live, and only then the acknowledgement (`a` opens its confirm
//! dialog).

use bloodraven_crd::group::{SiteState, SiteStatus};
use bloodraven_gtid::GtidSet;

use super::*;

/// One item of the live checklist.
fn check(state: &State, passed: bool, text: String) -> Line<'static> {
    let (word, color) = if passed { ("PASS", Color::Green) } else { ("FAIL", Color::Red) };
    Line::from(vec![
        Span::styled(format!(" [{word}] "), style(state, color).add_modifier(Modifier::BOLD)),
        Span::raw(text),
    ])
}

fn state_word(site: Option<&SiteStatus>) -> String {
    site.and_then(|site| site.state.as_ref()).map_or("unknown", |state| state.as_str()).to_owned()
}

/// What `site` has executed that none of `others` has (`None` when a set is missing or does
/// not parse).
fn only_here(site: &SiteStatus, others: &[&SiteStatus]) -> Option<GtidSet> {
    let mut rest = GtidSet::new();
    for other in others {
        rest.union_with(&other.gtid_executed.as_deref()?.parse().ok()?);
    }
    let own: GtidSet = site.gtid_executed.as_deref()?.parse().ok()?;
    Some(own.difference(&rest))
}

/// The ambiguous sites side by side, then the guidance checklist.
fn ambiguous_lines(
    state: &State,
    group: &MysqlFailoverGroup,
    ambiguous: &[String],
) -> Vec<Line<'static>> {
    let sites = group.status.as_ref().map(|status| status.sites.clone()).unwrap_or_default();
    let find = |name: &str| sites.iter().find(|site| site.name == name);
    let mut lines = vec![Line::from(""), Line::from(Span::styled("Ambiguous sites", bold()))];
    for name in ambiguous {
        let site = find(name);
        lines.push(Line::from(vec![
            Span::styled(format!(" {name:<12}"), bold()),
            Span::raw(state_word(site)),
        ]));
        let executed = site.and_then(|site| site.gtid_executed.clone());
        lines.push(long_text(&format!(
            "   executed:   {}",
            executed.as_deref().filter(|set| !set.is_empty()).unwrap_or(NONE)
        )));
        if let Some(site) = site {
            let others: Vec<&SiteStatus> = ambiguous
                .iter()
                .filter(|other| *other != name)
                .filter_map(|other| find(other))
                .collect();
            let extra = only_here(site, &others).map_or_else(
                || "unknown (a GTID set is missing or unreadable)".to_owned(),
                |set| if set.is_empty() { "nothing".to_owned() } else { set.to_string() },
            );
            lines.push(long_text(&format!("   only here:  {extra}")));
        }
    }
    // The spec's guidance for resolving the split brain by hand, evaluated on the watch.
    let writable: Vec<&str> = ambiguous
        .iter()
        .filter(|name| {
            find(name).and_then(|site| site.state.as_ref()) == Some(&SiteState::Writable)
        })
        .map(String::as_str)
        .collect();
    let not_fenced: Vec<&str> = ambiguous
        .iter()
        .filter(|name| !writable.contains(&name.as_str()))
        .filter(|name| {
            find(name).and_then(|site| site.state.as_ref()) != Some(&SiteState::ReadOnly)
        })
        .map(String::as_str)
        .collect();
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("Before acknowledging (live)", bold())));
    lines.push(check(
        state,
        writable.len() == 1,
        format!(
            "exactly one writable site ({})",
            if writable.is_empty() { "none".to_owned() } else { writable.join(", ") }
        ),
    ));
    lines.push(check(
        state,
        writable.len() == 1 && not_fenced.is_empty(),
        if not_fenced.is_empty() {
            "the others fenced (read-only)".to_owned()
        } else {
            format!("the others fenced (read-only): not {}", not_fenced.join(", "))
        },
    ));
    lines
}

pub(super) fn hold_lines(state: &State, group: &MysqlFailoverGroup) -> Vec<Line<'static>> {
    let status = group.status.clone().unwrap_or_default();
    let mut lines = Vec::new();
    match &status.planned_failover_hold {
        Some(hold) => {
            lines.push(Line::from(Span::styled(
                "AUTOMATIC FAILOVER IS HELD",
                style(state, Color::Magenta).add_modifier(Modifier::BOLD),
            )));
            lines.extend(pairs(report::hold_block(hold, state.now)));
            lines.extend(ambiguous_lines(state, group, &hold.ambiguous_sites));
            lines.push(Line::from(""));
            lines.push(Line::from(Span::styled(
                format!(
                    "a: acknowledge the hold of run {} (opens the confirm dialog; {})",
                    hold.run_id.as_deref().unwrap_or(NONE),
                    if state.guided.write.on {
                        "write mode is on"
                    } else {
                        "W switches write mode on first"
                    }
                ),
                bold(),
            )));
        }
        None => lines.push(Line::from(
            "No automation hold recorded (status.plannedFailoverHold is absent).",
        )),
    }
    if let Some(condition) = status.condition(&ConditionType::AutomaticFailoverHeld) {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            format!(
                "AutomaticFailoverHeld={} ({})",
                condition.status.as_str(),
                condition.reason.as_ref().map_or(NONE, |reason| reason.as_str())
            ),
            bold(),
        )));
        if let Some(message) = &condition.message {
            lines.push(Line::from(message.clone()));
        }
    }
    lines
}
