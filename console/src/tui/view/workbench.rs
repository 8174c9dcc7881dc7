//! The PITR workbench view: the request, the backup's window, the plan or the refusal with
//! its meaning and remedy, the archive's gaps, the divergent set D by site and time, and the
//! remedies, each with the planner's verdict (computed before the user picks one).

use bloodraven_pitr::{Plan, Refusal};

use super::*;
use crate::archive::workbench::{Computed, Workbench};

pub(super) fn render_workbench(
    state: &State,
    frame: &mut Frame<'_>,
    area: Rect,
    key: &Key,
    bench: &Workbench,
) {
    let title = format!("{}/{} · PITR workbench", key.0, key.1);
    let (age, _) =
        archive::archive_age(state, &state.data.archives.get(key).cloned().unwrap_or_default());
    let mut lines = request_lines(state, bench);
    match &bench.outcome {
        Err(why) => lines.push(Line::from(vec![
            Span::styled("NO PLAN ", style(state, Color::Red).add_modifier(Modifier::BOLD)),
            Span::raw(why.clone()),
        ])),
        Ok(computed) => lines.extend(computed_lines(state, key, computed)),
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        "a: restore into a new group (a plannable choice, confirmed) · esc: close · \
         :pitr <time|gtid> [backup] [exclude=<set>]",
        style(state, Color::DarkGray),
    )));
    render_lines(state, frame, area, format!("{title} · {age}"), SourceKind::Backups, lines);
}

fn request_lines(state: &State, bench: &Workbench) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut asked = vec![
        Span::styled("Target ", bold()),
        Span::raw(bench.target.clone()),
        Span::styled("  backup ", bold()),
        Span::raw(bench.backup.clone().unwrap_or_else(|| "(newest before the target)".to_owned())),
    ];
    if let Ok(computed) = &bench.outcome {
        asked[1] = Span::raw(format!("stopTime {}", computed.stop_time));
        asked[3] = Span::raw(computed.bench.backup.clone());
    }
    lines.push(Line::from(asked));
    if let Ok(Computed { through: Some((gtid, committed)), .. }) = &bench.outcome {
        lines.push(Line::from(format!(
            "  through {gtid} (committed {}): the whole second after it",
            bloodraven_archive::format_timestamp(*committed)
        )));
    }
    if !bench.exclude_gtids.is_empty() {
        lines.push(long_text(&format!("excludeGtids {}", bench.exclude_gtids)));
    }
    if let Ok(computed) = &bench.outcome {
        let window = &computed.window;
        let end = window.end.map_or_else(|| "open".to_owned(), archive::short_time);
        let then = if window.stop_token.is_empty() {
            String::new()
        } else {
            format!(", then {}", window.stop_token)
        };
        lines.push(Line::from(vec![
            Span::styled("Window ", bold()),
            Span::raw(format!(
                "{} -> {end}{then} · newest archived commit {}",
                archive::short_time(window.start),
                archive::short_time(computed.newest)
            )),
        ]));
    }
    let _ = state;
    lines
}

fn plan_lines(state: &State, plan: &Plan, indent: &str) -> Vec<Line<'static>> {
    let transactions: usize = plan.segments.iter().map(|segment| segment.transactions).sum();
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!("{indent}PLANS "),
            style(state, Color::Green).add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(
            "{:?}: {} segment(s), {transactions} transaction(s) replayed{}",
            plan.outcome,
            plan.segments.len(),
            plan.witness.as_ref().map_or_else(String::new, |witness| format!(
                "; witness {} on {} at {}",
                witness.gtid,
                witness.site,
                bloodraven_archive::format_timestamp(witness.committed)
            ))
        )),
    ])];
    lines.push(long_text(&format!("{indent}  certified {}", plan.certified.to_compact_string())));
    if !plan.excluded_divergent.is_empty() {
        lines.push(Line::from(format!(
            "{indent}  excludes {} divergent transaction(s) (PITRDivergentHistoryExcluded)",
            plan.excluded_divergent.count()
        )));
    }
    lines
}

fn refusal_lines(state: &State, refusal: &Refusal, indent: &str) -> Vec<Line<'static>> {
    let token = refusal.token.as_str();
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!("{indent}REFUSED {token}"),
            style(state, Color::Red).add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(": {}", refusal.message)),
    ])];
    lines.push(Line::from(format!(
        "{indent}  means: {}",
        summary::meaning(Kind::PitrRefusal, token)
    )));
    if let Some(remedy) = summary::remedy(Kind::PitrRefusal, token) {
        lines.push(Line::from(format!("{indent}  remedy: {remedy}")));
    }
    lines
}

fn computed_lines(state: &State, key: &Key, computed: &Computed) -> Vec<Line<'static>> {
    let bench = &computed.bench;
    let mut lines = Vec::new();
    match &bench.verdict {
        Ok(plan) => lines.extend(plan_lines(state, plan, "")),
        // One line first (80x24 shows little below the next-action box); the refusal in full
        // after the remedies.
        Err(refusal) => lines.push(Line::from(vec![
            Span::styled(
                format!("REFUSED {}", refusal.token.as_str()),
                style(state, Color::Red).add_modifier(Modifier::BOLD),
            ),
            Span::raw(if bench.choices.is_empty() {
                String::new()
            } else {
                " · the remedies below are planned".to_owned()
            }),
        ])),
    }
    if let Some(ArchiveOutcome::Covered(summary)) =
        state.data.archives.get(key).and_then(|archive| archive.outcome.as_ref())
    {
        for gap in &summary.gaps {
            lines.push(Line::from(vec![
                Span::styled("GAP ", style(state, Color::Red).add_modifier(Modifier::BOLD)),
                Span::raw(format!(
                    "{} {} ({}) at {}",
                    gap.site,
                    gap.gtids,
                    gap.kind,
                    archive::short_time(gap.at)
                )),
            ]));
        }
    }
    if !bench.divergent.is_empty() {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled("D, by site (not on the target's history)", bold())));
        for site in &bench.divergent {
            let when = match (site.first, site.last) {
                (Some(first), Some(last)) => format!(
                    " committed {} … {}",
                    bloodraven_archive::format_timestamp(first),
                    bloodraven_archive::format_timestamp(last)
                ),
                _ => String::new(),
            };
            lines.push(long_text(&format!(
                "  {}: {} transaction(s) {}{when}",
                site.site,
                site.gtids.count(),
                site.gtids.to_compact_string()
            )));
        }
    }
    if !bench.choices.is_empty() {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            "Remedies, each planned before you pick (a: propose a plannable one)",
            bold(),
        )));
        for (index, choice) in bench.choices.iter().enumerate() {
            lines.push(Line::from(Span::styled(
                format!("{}. {} (backup {})", index + 1, choice.label, choice.backup),
                bold(),
            )));
            match (&choice.verdict, &choice.request) {
                (Ok(plan), _) => lines.extend(plan_lines(state, plan, "   ")),
                (Err(refusal), None) => lines.push(Line::from(vec![
                    Span::styled("   NOT AVAILABLE ", style(state, Color::Yellow)),
                    Span::raw(refusal.message.clone()),
                ])),
                (Err(refusal), Some(_)) => lines.extend(refusal_lines(state, refusal, "   ")),
            }
            if !choice.on_history.is_empty() {
                lines.push(Line::from(vec![
                    Span::styled(
                        "   ON-HISTORY ",
                        style(state, Color::Yellow).add_modifier(Modifier::BOLD),
                    ),
                    Span::raw(format!(
                        "excluded {} precedes replayed transactions on the target history; \
                         later row images may carry their effects; the result is not \
                         certified for them (PITROnHistoryTransactionsExcluded)",
                        choice.on_history.to_compact_string()
                    )),
                ]));
            }
        }
    }
    if let Err(refusal) = &bench.verdict {
        lines.push(Line::from(""));
        lines.extend(refusal_lines(state, refusal, ""));
    }
    lines
}
