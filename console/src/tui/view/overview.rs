//! The overview view.

use super::*;

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

    let mut lines = Vec::new();
    for condition in &status.conditions {
        let color = match (condition.type_.as_str(), condition.is_true()) {
            ("Ready", true) | ("PITRArchiveReady", true) => Color::Green,
            ("Ready", false) | ("Degraded", true) | ("AutomaticFailoverHeld", true) => Color::Red,
            _ => Color::Reset,
        };
        lines.push(Line::from(vec![
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
            let width = usize::from(conditions_area.width.saturating_sub(2));
            lines.extend(indented(message, 2, 2, width));
        }
    }
    if lines.is_empty() {
        lines.push(Line::from("No conditions reported yet."));
    }
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(titled(
            state,
            "Conditions".to_owned(),
            SourceKind::Groups,
        )),
        conditions_area,
    );

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
    let lines: Vec<Line<'static>> = if events.is_empty() {
        vec![Line::from("No events for this group.")]
    } else {
        events
            .iter()
            .flat_map(|event| {
                let warning = event.type_.as_deref() == Some("Warning");
                let age = format!(
                    "{:>6} ",
                    when(event).map_or_else(|| NONE.to_owned(), |at| summary::age(state.now, at))
                );
                let reason = format!("{} ", event.reason.clone().unwrap_or_default());
                let width = usize::from(events_area.width.saturating_sub(2));
                let first = age.chars().count() + reason.chars().count();
                // Continuation lines start under the reason, past the age column.
                let mut rows =
                    wrap_words(&event.message.clone().unwrap_or_default(), first, 7, width)
                        .into_iter();
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
    };
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(titled(
            state,
            "Events".to_owned(),
            SourceKind::Events,
        )),
        events_area,
    );
}
