//! The guarded confirm dialog of a guided operation (pure: state in, frame out): what it
//! does and where it came from, the preflight checklist, the data-loss statement, the exact
//! request with its precondition, the identity and RBAC answer, the typed confirmation and
//! the two buttons, Cancel focused by default.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::ops::confirm::{ConfirmDialog, Focus, Stage};
use crate::ops::{Verdict, confirmation_name, data_loss_statement};

/// The dialog's area: most of the screen, centred.
pub fn area(screen: Rect) -> Rect {
    let width = screen.width.saturating_sub(4).min(110);
    let height = screen.height.saturating_sub(2);
    Rect {
        x: screen.x + (screen.width.saturating_sub(width)) / 2,
        y: screen.y + (screen.height.saturating_sub(height)) / 2,
        width,
        height,
    }
}

fn verdict_style(verdict: Verdict, color: bool) -> Style {
    if !color {
        return Style::default();
    }
    match verdict {
        Verdict::Pass => Style::default().fg(Color::Green),
        Verdict::Wait => Style::default().fg(Color::Yellow),
        Verdict::Refuse => Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
    }
}

/// The dialog's lines.
pub fn lines(dialog: &ConfirmDialog, color: bool) -> Vec<Line<'static>> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let op = &dialog.prepared.op;
    let mut lines = vec![
        Line::from(Span::styled(op.summary(), bold)),
        Line::from(format!(
            "{} · context write mode: {}",
            dialog.origin.describe(),
            if dialog.write_mode { "WRITE" } else { "read-only" }
        )),
    ];
    if let Stage::Changed(why) = &dialog.stage {
        lines.push(Line::from(Span::styled(
            format!("changed since it was read ({why}): nothing was written; check again"),
            if color { Style::default().fg(Color::Yellow) } else { Style::default() },
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("preflight", bold)));
    for check in &dialog.prepared.preflight.checks {
        lines.push(Line::from(vec![
            Span::styled(
                format!(" {:<6} ", check.verdict.as_str()),
                verdict_style(check.verdict, color),
            ),
            Span::raw(format!("{}: {}", check.rule, check.line)),
        ]));
    }
    let primary_down = dialog
        .prepared
        .observed
        .group
        .as_ref()
        .and_then(|group| group.status.as_ref())
        .is_none_or(|status| status.active_site.is_none());
    if let Some(statement) = data_loss_statement(op, primary_down) {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            format!("data loss: {statement}"),
            if color { Style::default().fg(Color::Red) } else { Style::default() },
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("request", bold)));
    match &dialog.prepared.patch {
        Ok(patch) => {
            lines.push(Line::from(format!(
                " {} {} ({})",
                patch.verb.method(),
                patch.path,
                patch.content_type
            )));
            lines.push(Line::from(format!(
                " {}",
                serde_json::to_string(&patch.body).unwrap_or_default()
            )));
            if let Some(rv) = &patch.precondition.decided_on_resource_version {
                lines.push(Line::from(format!(" decided on resourceVersion {rv}")));
            }
        }
        Err(error) => lines.push(Line::from(format!(" none: {error}"))),
    }
    lines.push(Line::from(""));
    let (who, may) = match &dialog.access {
        Some(access) => {
            (access.user.clone().unwrap_or_else(|| "unknown".to_owned()), access.describe())
        }
        None => ("asking…".to_owned(), "asking…".to_owned()),
    };
    lines.push(Line::from(format!("as {who} · RBAC: {may}")));
    if dialog.needs_typing() {
        lines.push(Line::from(format!(
            "type {:?} to confirm: {}_",
            confirmation_name(op),
            dialog.typed
        )));
    }
    if let Some(blocked) = dialog.blocked() {
        lines.push(Line::from(Span::styled(
            format!("cannot confirm: {blocked}"),
            if color { Style::default().fg(Color::Yellow) } else { Style::default() },
        )));
    }
    match &dialog.stage {
        Stage::Sending => lines.push(Line::from("sending…")),
        Stage::Done(Ok(done)) => lines.push(Line::from(format!("sent: {done} (any key closes)"))),
        Stage::Done(Err(error)) => {
            lines.push(Line::from(format!("not sent: {error} (any key closes)")))
        }
        _ => {
            let button = |label: &str, focused: bool| {
                if focused {
                    Span::styled(
                        format!("[ {label} ]"),
                        Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD),
                    )
                } else {
                    Span::raw(format!("  {label}  "))
                }
            };
            lines.push(Line::from(vec![
                button("Cancel", dialog.focus == Focus::Cancel),
                Span::raw("   "),
                button("Confirm", dialog.focus == Focus::Confirm),
                Span::raw("   tab switches · enter chooses · esc cancels"),
            ]));
        }
    }
    lines
}

/// Draws the dialog over the screen.
pub fn render_dialog(dialog: &ConfirmDialog, screen: Rect, color: bool, frame: &mut Frame<'_>) {
    let area = area(screen);
    frame.render_widget(Clear, area);
    let title = format!(" confirm: {} ", dialog.prepared.op.kind());
    let block = Block::default().borders(Borders::ALL).title(title);
    let paragraph = Paragraph::new(lines(dialog, color)).block(block).wrap(Wrap { trim: false });
    frame.render_widget(paragraph, area);
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::fixtures::{GroupFixture, manual_recovery_hold};
    use bloodraven_crd::group::{RestoreReclones, RestoreReclonesPhase};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::ops::confirm::{DialogKey, Origin};
    use crate::ops::send::{Access, decide};
    use crate::ops::{GroupRef, Observed, WriteOp};

    fn now() -> jiff::Timestamp {
        "2026-04-20T14:40:00Z".parse().unwrap()
    }

    fn orders() -> GroupRef {
        GroupRef::new("orders", "orders")
    }

    fn draw(dialog: &ConfirmDialog) -> String {
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        terminal.draw(|frame| render_dialog(dialog, frame.area(), false, frame)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        let mut text = String::new();
        for y in 0..buffer.area.height {
            let line: String =
                (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_owned()).collect();
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }

    fn open(
        op: WriteOp,
        group: bloodraven_crd::MysqlFailoverGroup,
        allowed: bool,
    ) -> ConfirmDialog {
        let mut group = group;
        group.metadata.resource_version = Some("41".to_owned());
        let prepared = decide(op, Observed::group(group), now());
        let mut dialog =
            ConfirmDialog::new(prepared, Origin::Screen("group orders".to_owned()), true);
        dialog.access = Some(Access {
            user: Some("alice@example.com".to_owned()),
            allowed: Some(allowed),
            reason: (!allowed).then(|| "no RBAC policy matched".to_owned()),
        });
        dialog
    }

    #[test]
    fn dialog_planned_failover() {
        let op = WriteOp::RequestPlannedFailover {
            group: orders(),
            target: "pdx".to_owned(),
            max_lag_wait: None,
        };
        let mut dialog = open(op, GroupFixture::three_sites().build(), true);
        for c in "pd".chars() {
            dialog.key(DialogKey::Char(c));
        }
        insta::assert_snapshot!(draw(&dialog));
    }

    #[test]
    fn dialog_planned_failover_not_allowed() {
        let op = WriteOp::RequestPlannedFailover {
            group: orders(),
            target: "pdx".to_owned(),
            max_lag_wait: None,
        };
        insta::assert_snapshot!(draw(&open(op, GroupFixture::three_sites().build(), false)));
    }

    #[test]
    fn dialog_planned_failover_refused() {
        let op = WriteOp::RequestPlannedFailover {
            group: orders(),
            target: "pdx".to_owned(),
            max_lag_wait: None,
        };
        let group = GroupFixture::three_sites().with_hold(manual_recovery_hold()).build();
        insta::assert_snapshot!(draw(&open(op, group, true)));
    }

    #[test]
    fn dialog_acknowledge_hold() {
        let run = manual_recovery_hold().run_id.unwrap();
        let op = WriteOp::AcknowledgeHold { group: orders(), run_id: run };
        let group = GroupFixture::three_sites().with_hold(manual_recovery_hold()).build();
        let mut dialog = open(op, group, true);
        for c in "orders".chars() {
            dialog.key(DialogKey::Char(c));
        }
        dialog.key(DialogKey::Switch);
        insta::assert_snapshot!(draw(&dialog));
    }

    fn held() -> bloodraven_crd::MysqlFailoverGroup {
        GroupFixture::three_sites()
            .with_restore_reclones(RestoreReclones {
                phase: Some(RestoreReclonesPhase::Held),
                run_id: Some("r-7".to_owned()),
                pending: vec!["pdx".to_owned(), "fra".to_owned()],
                ..RestoreReclones::default()
            })
            .build()
    }

    #[test]
    fn dialog_reclone_queue_drain() {
        insta::assert_snapshot!(draw(&open(
            WriteOp::RecloneQueueDrain { group: orders() },
            held(),
            true
        )));
    }

    #[test]
    fn dialog_reclone_queue_release() {
        insta::assert_snapshot!(draw(&open(
            WriteOp::RecloneQueueRelease { group: orders() },
            held(),
            true
        )));
    }

    #[test]
    fn dialog_backup_from_site() {
        let op = WriteOp::BackupFromSite {
            group: orders(),
            name: WriteOp::backup_name("orders", "nightly", now()),
            profile: "nightly".to_owned(),
            site: "pdx".to_owned(),
        };
        let group = GroupFixture::three_sites().with_s3_profile("nightly").build();
        insta::assert_snapshot!(draw(&open(op, group, true)));
    }
}
