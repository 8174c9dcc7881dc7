//! The overview view.

use super::*;
use crate::tui::state::OperatorLease;

/// Whether the operator is alive, from its leader Lease: who leads and how long ago it renewed,
/// `STALE` (red) when that is more than [`bloodraven_facts::verdict::LEASE_SILENT_AFTER`] ago
/// (the verdict's `OperatorSilent` finding), or why the Lease is not known.
pub(super) fn operator_liveness(state: &State) -> Line<'static> {
    let lease = |namespace: &str, name: &str| format!("Lease {namespace}/{name}");
    let (text, color) = match &state.data.operator {
        OperatorLease::Unknown => ("reading the leader Lease…".to_owned(), Color::Reset),
        OperatorLease::Absent { namespace, name } => (
            format!(
                "no leader {} (operator not installed, or run without leader election)",
                lease(namespace, name)
            ),
            Color::Yellow,
        ),
        OperatorLease::Unreadable { namespace, name, error } => {
            (format!("{} not readable: {error}", lease(namespace, name)), Color::Yellow)
        }
        OperatorLease::Seen { namespace, name, holder, renewed } => {
            let holder = holder.as_deref().filter(|holder| !holder.is_empty());
            match (holder, renewed) {
                (None, _) => {
                    (format!("no leader ({} has no holder)", lease(namespace, name)), Color::Yellow)
                }
                (Some(holder), None) => (
                    format!("leader {holder}, renewal time unknown ({})", lease(namespace, name)),
                    Color::Yellow,
                ),
                (Some(holder), Some(renewed)) => {
                    let ago = summary::age(state.now, *renewed);
                    if state.now.duration_since(*renewed)
                        > bloodraven_facts::verdict::LEASE_SILENT_AFTER
                    {
                        (
                            format!(
                                "STALE: leader {holder} last renewed {ago} ago ({}); no operator acts",
                                lease(namespace, name)
                            ),
                            Color::Red,
                        )
                    } else {
                        (
                            format!(
                                "leader {holder}, renewed {ago} ago ({})",
                                lease(namespace, name)
                            ),
                            Color::Green,
                        )
                    }
                }
            }
        }
    };
    Line::from(vec![Span::styled("Operator: ", bold()), Span::styled(text, style(state, color))])
}

pub(super) fn render_overview(
    state: &State,
    frame: &mut Frame<'_>,
    area: Rect,
    group: &MysqlFailoverGroup,
    title: String,
) {
    let status = group.status.clone().unwrap_or_default();
    let site_rows = u16::try_from(group.spec.sites.len()).unwrap_or(16);
    // The sites first: on a short terminal conditions and events give way (one row each).
    let [sites_area, conditions_area, events_area] = Layout::vertical([
        Constraint::Length(site_rows + 3),
        Constraint::Min(3),
        Constraint::Min(3),
    ])
    .areas(area);
    let primary = summary::GtidText::of(
        status
            .active_site
            .as_deref()
            .and_then(|active| status.site(active))
            .and_then(|site| site.gtid_executed.as_deref()),
    );
    let header = Row::new([
        "SITE",
        "ROLE",
        "STATE",
        "LAG",
        "GTIDS",
        "Δ PRIMARY",
        "REPL",
        "CONVERGENCE",
        "LAST SEEN",
    ])
    .style(bold());
    let rows = group.spec.sites.iter().map(|site| {
        let observed = status.site(&site.name);
        let gtids = summary::GtidText::of(observed.and_then(|site| site.gtid_executed.as_deref()));
        let difference = if status.active_site.as_deref() == Some(site.name.as_str()) {
            NONE.to_owned()
        } else {
            gtids.delta(&primary)
        };
        let state_text = observed
            .and_then(|site| site.state.as_ref())
            .map_or(NONE, |state| state.as_str())
            .to_owned();
        let role = match site.effective_role() {
            bloodraven_crd::group::SiteRole::PrimaryCandidate => "candidate",
            bloodraven_crd::group::SiteRole::DisasterRecovery => "dr",
            bloodraven_crd::group::SiteRole::ReadOnly => "reader",
            bloodraven_crd::group::SiteRole::Unrecognized(_) => "?",
        };
        let role = if status.active_site.as_deref() == Some(site.name.as_str()) {
            format!("{role} (active)")
        } else {
            role.to_owned()
        };
        Row::new([
            site.name.clone(),
            role,
            state_text,
            observed.and_then(|site| site.seconds_behind_source).map_or_else(
                || NONE.to_owned(),
                |lag| if lag < 0 { "?".to_owned() } else { summary::short_duration(lag) },
            ),
            gtids.count(),
            difference,
            observed
                .and_then(|site| site.replicating)
                .map_or(NONE, |r| if r { "yes" } else { "no" })
                .to_owned(),
            observed.and_then(|site| site.source_convergence_state.as_ref()).map_or_else(
                || NONE.to_owned(),
                |convergence| match observed
                    .and_then(|site| site.source_convergence_reason.as_ref())
                {
                    Some(reason) => format!("{}({})", convergence.as_str(), reason.as_str()),
                    None => convergence.as_str().to_owned(),
                },
            ),
            summary::age_of(state.now, observed.and_then(|site| site.last_seen.as_ref())),
        ])
    });
    let widths = [
        Constraint::Length(6),
        Constraint::Length(18),
        Constraint::Length(10),
        Constraint::Length(5),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(4),
        Constraint::Min(10),
        Constraint::Length(9),
    ];
    let active = summary::active_site(group);
    let counts = summary::site_counts(group);
    let held = if summary::held(group) { " · +held" } else { "" };
    frame.render_widget(
        Table::new(rows, widths).header(header).block(titled(
            state,
            format!("{title} · active {active} · {counts}{held}"),
            SourceKind::Groups,
        )),
        sites_area,
    );

    // The operator's liveness first, then the conditions; the events below.
    let width = usize::from(conditions_area.width.saturating_sub(2));
    let mut conditions = vec![operator_liveness(state)];
    for condition in &status.conditions {
        let color = match (condition.type_.as_str(), condition.is_true()) {
            ("Ready", true) | ("PITRArchiveReady", true) => Color::Green,
            ("Ready", false) | ("Degraded", true) | ("AutomaticFailoverHeld", true) => Color::Red,
            _ => Color::Reset,
        };
        conditions.push(Line::from(vec![
            Span::styled(
                format!("{}={}", condition.type_.as_str(), condition.status.as_str()),
                style(state, color).add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!(
                " {} · {}",
                condition.reason.as_ref().map_or(NONE, |reason| reason.as_str()),
                summary::age_of(state.now, condition.last_transition_time.as_ref())
            )),
        ]));
        if let Some(message) = &condition.message {
            conditions.extend(indented(message, 2, 2, width));
        }
    }
    if status.conditions.is_empty() {
        conditions.push(Line::from("No conditions reported yet."));
    }
    let events = event_lines(state, group, usize::from(events_area.width.saturating_sub(2)));

    // Each box as tall as the space allows; when either does not fit, both become one box that
    // scrolls (j/k, PgUp/PgDn), so nothing is cut on a short terminal.
    let fits = |lines: &[Line<'static>], area: Rect| {
        Paragraph::new(lines.to_vec())
            .wrap(Wrap { trim: false })
            .line_count(area.width.saturating_sub(2))
            <= usize::from(area.height.saturating_sub(2))
    };
    if fits(&conditions, conditions_area) && fits(&events, events_area) {
        frame.render_widget(
            Paragraph::new(conditions).wrap(Wrap { trim: false }).block(titled(
                state,
                "Conditions".to_owned(),
                SourceKind::Groups,
            )),
            conditions_area,
        );
        frame.render_widget(
            Paragraph::new(events).wrap(Wrap { trim: false }).block(titled(
                state,
                "Events".to_owned(),
                SourceKind::Events,
            )),
            events_area,
        );
        return;
    }
    let mut lines = conditions;
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("Events", bold())));
    lines.extend(events);
    let both = conditions_area.union(events_area);
    render_lines(state, frame, both, "Conditions and events".to_owned(), SourceKind::Groups, lines);
}

/// The group's Events, newest first, continuation lines indented past the age column.
fn event_lines(state: &State, group: &MysqlFailoverGroup, width: usize) -> Vec<Line<'static>> {
    let name = group.metadata.name.clone().unwrap_or_default();
    let namespace = group.metadata.namespace.clone().unwrap_or_default();
    let mut events: Vec<&k8s_openapi::api::core::v1::Event> = state
        .data
        .events
        .values()
        .filter(|event| {
            event.involved_object.name.as_deref() == Some(name.as_str())
                && event.involved_object.namespace.as_deref() == Some(namespace.as_str())
                && event.involved_object.kind.as_deref() == Some("MysqlFailoverGroup")
        })
        .collect();
    let when = |event: &k8s_openapi::api::core::v1::Event| {
        event
            .last_timestamp
            .as_ref()
            .or(event.first_timestamp.as_ref())
            .map(|time| time.0)
            .or(event.event_time.as_ref().map(|time| time.0))
    };
    events.sort_by_key(|event| std::cmp::Reverse(when(event)));
    if events.is_empty() {
        return vec![Line::from("No events for this group.")];
    }
    events
        .iter()
        .flat_map(|event| {
            let warning = event.type_.as_deref() == Some("Warning");
            let age = format!(
                "{:>6} ",
                when(event).map_or_else(|| NONE.to_owned(), |at| summary::age(state.now, at))
            );
            let reason = format!("{} ", event.reason.clone().unwrap_or_default());
            let first = age.chars().count() + reason.chars().count();
            // Continuation lines start under the reason, past the age column.
            let mut rows =
                wrap_words(&event.message.clone().unwrap_or_default(), first, 7, width).into_iter();
            let mut lines = vec![Line::from(vec![
                Span::raw(age),
                Span::styled(
                    reason,
                    style(state, if warning { Color::Yellow } else { Color::Reset })
                        .add_modifier(Modifier::BOLD),
                ),
                Span::raw(rows.next().unwrap_or_default()),
            ])];
            lines.extend(rows.map(|row| Line::from(format!("{:7}{row}", ""))));
            lines
        })
        .collect()
}
