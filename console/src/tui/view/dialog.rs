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
use crate::ops::{Verdict, WriteOp, confirmation_name, data_loss_statement};
use crate::tui::state::{Overlay, Picker, State};

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
    let primary_down = crate::ops::verbs::primary_down(&dialog.prepared);
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
    if let Some(path) = &dialog.review_file {
        lines.push(Line::from(format!(
            " confirm also saves this manifest for review: {}",
            path.display()
        )));
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
    render_dialog_with(dialog, Vec::new(), screen, color, frame);
}

/// Draws the dialog with the follow-through lines (after it was sent) at its end.
pub fn render_dialog_with(
    dialog: &ConfirmDialog,
    follow: Vec<Line<'static>>,
    screen: Rect,
    color: bool,
    frame: &mut Frame<'_>,
) {
    let area = area(screen);
    frame.render_widget(Clear, area);
    let title = format!(" confirm: {} ", dialog.prepared.op.kind());
    let block = Block::default().borders(Borders::ALL).title(title);
    let mut lines = lines(dialog, color);
    if !follow.is_empty() {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            "follow-through (live)",
            Style::default().add_modifier(Modifier::BOLD),
        )));
        lines.extend(follow);
    }
    // Keep the end (buttons, answer, follow-through) in view on a small terminal.
    let inner_width = area.width.saturating_sub(2);
    let paragraph = Paragraph::new(lines).wrap(Wrap { trim: false });
    let total = u16::try_from(paragraph.line_count(inner_width)).unwrap_or(u16::MAX);
    let visible = area.height.saturating_sub(2);
    let paragraph = paragraph.scroll((total.saturating_sub(visible), 0)).block(block);
    frame.render_widget(paragraph, area);
}

/// What the watch shows of an operation sent at `sent_at`: the planned failover's phase, the
/// hold cleared, still standing or the acknowledgement ignored (with the operator's Event),
/// the queue, the backup's or verification's phase.
pub fn follow_lines(state: &State, op: &WriteOp, sent_at: jiff::Timestamp) -> Vec<Line<'static>> {
    let group_ref = op.group();
    let key = (group_ref.namespace.clone(), group_ref.name.clone());
    let Some(group) = state.group(&key) else {
        return vec![Line::from(format!(" group {group_ref} is not in the watched data"))];
    };
    let status = group.status.clone().unwrap_or_default();
    let mut lines = Vec::new();
    match op {
        WriteOp::RequestPlannedFailover { target, .. } => {
            let record = status.planned_failover.as_ref();
            let run = record.and_then(|record| record.run_id.clone()).unwrap_or_default();
            let record_target = record.and_then(|record| record.target_site.clone());
            if record_target.as_deref() == Some(target.as_str()) {
                lines.push(Line::from(format!(
                    " planned failover to {target}: {} (run {run})",
                    crate::summary::planned_phase(group)
                )));
                if let Some(message) = record.and_then(|record| record.message.clone()) {
                    lines.push(Line::from(format!(" {message}")));
                }
            } else {
                lines.push(Line::from(format!(
                    " waiting for the operator to admit the request (status.plannedFailover                      does not name {target} yet)"
                )));
            }
            lines.push(Line::from(" the planned-failover panel (2) shows the timeline"));
        }
        WriteOp::AcknowledgeHold { run_id, .. } => {
            let pending = group.metadata.annotations.as_ref().is_some_and(|annotations| {
                annotations
                    .contains_key(bloodraven_crd::annotations::ACKNOWLEDGE_PLANNED_FAILOVER_HOLD)
            });
            let ignored = (!pending).then(|| ignored_since(state, group, sent_at)).flatten();
            lines.push(Line::from(match (&status.planned_failover_hold, ignored) {
                (None, _) => " the hold is cleared (PlannedFailoverHoldAcknowledged)".to_owned(),
                (Some(_), Some(message)) => format!(
                    " ignored by the operator (PlannedFailoverHoldAcknowledgmentIgnored): {message}"
                ),
                (Some(hold), None) if hold.run_id.as_deref() == Some(run_id.as_str()) => {
                    " the hold still stands: waiting for the operator to read the acknowledgement"
                        .to_owned()
                }
                (Some(hold), None) => format!(
                    " ignored: the hold now names run {}, not {run_id}; acknowledge that run",
                    hold.run_id.as_deref().unwrap_or("?")
                ),
            }));
        }
        WriteOp::RecloneQueueDrain { .. }
        | WriteOp::RecloneQueueRelease { .. }
        | WriteOp::Reclone { .. } => {
            lines.push(Line::from(format!(
                " reclone queue: {}",
                crate::summary::reclone_queue(group)
            )));
        }
        WriteOp::BackupFromSite { name, .. } | WriteOp::CreateBackup { name, .. } => {
            let phase =
                seen_phase(state.data.backups.get(&(key.0.clone(), name.clone())).map(|backup| {
                    backup
                        .status
                        .as_ref()
                        .and_then(|status| status.phase.as_ref())
                        .map(|phase| phase.as_str())
                }));
            lines.push(Line::from(format!(" MysqlBackup {name}: {phase}")));
        }
        WriteOp::CreateVerification { name, .. } => {
            let phase = seen_phase(
                state.data.verifications.get(&(key.0.clone(), name.clone())).map(|verification| {
                    verification
                        .status
                        .as_ref()
                        .and_then(|status| status.phase.as_ref())
                        .map(|phase| phase.as_str())
                }),
            );
            lines.push(Line::from(format!(" MysqlBackupVerification {name}: {phase}")));
        }
        WriteOp::RestorePitrToNewGroup { name, .. } => {
            let restored = state.group(&(key.0.clone(), name.clone()));
            lines.push(Line::from(match restored {
                Some(restored) => {
                    format!(" group {name}: restore {}", crate::summary::restore_phase(restored))
                }
                None => format!(" group {name}: not in the watched data yet"),
            }));
        }
    }
    lines
}

/// The message of the newest PlannedFailoverHoldAcknowledgmentIgnored Event on `group` from
/// `since` on, if the watch has one.
fn ignored_since(
    state: &State,
    group: &bloodraven_crd::MysqlFailoverGroup,
    since: jiff::Timestamp,
) -> Option<String> {
    let namespace = group.metadata.namespace.as_deref();
    let events =
        state.data.events.values().filter(|e| e.involved_object.namespace.as_deref() == namespace);
    crate::ops::verbs::newest_ignored(events, group.metadata.name.as_deref()?, since)
}

/// What the watch shows of a created object: its phase, "no phase yet" when it has none, or
/// "not seen by the watch yet" when the watch has not seen it (`seen` is `None`).
fn seen_phase(seen: Option<Option<&str>>) -> &str {
    match seen {
        Some(Some(phase)) => phase,
        Some(None) => "no phase yet",
        None => "not seen by the watch yet",
    }
}

/// A small box centred in `screen`.
fn centred(screen: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(screen.width);
    let height = height.min(screen.height);
    Rect {
        x: screen.x + (screen.width - width) / 2,
        y: screen.y + (screen.height - height) / 2,
        width,
        height,
    }
}

fn picker_lines(picker: &Picker) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for (index, choice) in picker.choices.iter().enumerate() {
        let text = format!(
            "{} {} {}",
            if index == picker.selected { "▶" } else { " " },
            index + 1,
            choice.op.summary()
        );
        lines.push(if index == picker.selected {
            Line::from(Span::styled(text, Style::default().add_modifier(Modifier::REVERSED)))
        } else {
            Line::from(text)
        });
    }
    lines.push(Line::from(""));
    lines.push(Line::from("enter or 1-9: open its confirm dialog (nothing is sent yet) · esc"));
    lines
}

/// Draws the open overlay (the write switch, the picker, the confirm dialog) over `screen`.
pub fn render_overlay(state: &State, frame: &mut Frame<'_>, screen: Rect) {
    let color = !state.ui.no_color;
    match &state.guided.overlay {
        None => {}
        Some(Overlay::WriteSwitch) => {
            let area = centred(screen, 70, 8);
            frame.render_widget(Clear, area);
            let text = vec![
                Line::from(Span::styled(
                    format!("Switch context {} to WRITE mode for this session?", state.context),
                    Style::default().add_modifier(Modifier::BOLD),
                )),
                Line::from(""),
                Line::from("Each operation still shows its preflight and exact request and asks"),
                Line::from("for its own confirmation. W switches back to read-only."),
                Line::from(""),
                Line::from("y: write mode on · any other key: stay read-only"),
            ];
            let block = Block::default().borders(Borders::ALL).title(" write mode ");
            frame.render_widget(Paragraph::new(text).block(block).wrap(Wrap { trim: false }), area);
        }
        Some(Overlay::Picker(picker)) => {
            let height = u16::try_from(picker.choices.len()).unwrap_or(20).saturating_add(4);
            let area = centred(screen, screen.width.saturating_sub(8).min(100), height);
            frame.render_widget(Clear, area);
            let block = Block::default()
                .borders(Borders::ALL)
                .title(format!(" guided operations: {} ", picker.title));
            frame.render_widget(
                Paragraph::new(picker_lines(picker)).block(block).wrap(Wrap { trim: false }),
                area,
            );
        }
        Some(Overlay::Dialog(guided)) => {
            let follow = match guided.sent_at {
                Some(at) => follow_lines(state, &guided.dialog.prepared.op, at),
                None => Vec::new(),
            };
            render_dialog_with(&guided.dialog, follow, screen, color, frame);
        }
    }
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
