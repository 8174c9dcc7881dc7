//! The backups view.

use super::*;

pub(super) fn render_backups(
    state: &State,
    frame: &mut Frame<'_>,
    area: Rect,
    key: &Key,
    title: String,
) {
    let [backups_area, verifications_area] =
        Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
    let mut backups: Vec<&bloodraven_crd::MysqlBackup> = state
        .data
        .backups
        .iter()
        .filter(|((namespace, _), backup)| {
            *namespace == key.0 && backup.spec.failover_group_ref.name == key.1
        })
        .map(|(_, backup)| backup)
        .collect();
    backups.sort_by_key(|backup| {
        std::cmp::Reverse(backup.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| t.0))
    });
    let rows = backups.iter().map(|backup| {
        let status = backup.status.clone().unwrap_or_default();
        Row::new([
            backup.metadata.name.clone().unwrap_or_default(),
            backup.spec.profile_name.clone(),
            status.phase.as_ref().map_or(NONE, |phase| phase.as_str()).to_owned(),
            status.source_site.clone().unwrap_or_else(|| NONE.to_owned()),
            summary::age_of(state.now, status.start_time.as_ref()),
            status
                .size_bytes
                .and_then(|size| u64::try_from(size).ok())
                .map_or_else(|| NONE.to_owned(), summary::bytes),
            status.message.clone().unwrap_or_default(),
        ])
    });
    let widths = [
        Constraint::Length(26),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(6),
        Constraint::Length(7),
        Constraint::Length(8),
        Constraint::Min(10),
    ];
    frame.render_widget(
        Table::new(rows, widths)
            .header(
                Row::new(["BACKUP", "PROFILE", "PHASE", "SOURCE", "STARTED", "SIZE", "MESSAGE"])
                    .style(bold()),
            )
            .block(titled(
                state,
                format!("{title} · backups ({})", backups.len()),
                SourceKind::Backups,
            )),
        backups_area,
    );
    let verifications: Vec<&bloodraven_crd::MysqlBackupVerification> = state
        .data
        .verifications
        .iter()
        .filter(|((namespace, _), verification)| {
            *namespace == key.0 && verification.spec.failover_group_ref.name == key.1
        })
        .map(|(_, verification)| verification)
        .collect();
    let rows = verifications.iter().map(|verification| {
        let status = verification.status.clone().unwrap_or_default();
        Row::new([
            verification.metadata.name.clone().unwrap_or_default(),
            verification
                .spec
                .backup_ref
                .as_ref()
                .map_or_else(|| NONE.to_owned(), |backup| backup.name.clone()),
            status.phase.as_ref().map_or(NONE, |phase| phase.as_str()).to_owned(),
            status
                .point_in_time
                .as_ref()
                .and_then(|pitr| pitr.outcome.as_ref())
                .map_or(NONE, |outcome| outcome.as_str())
                .to_owned(),
            summary::age_of(state.now, status.completion_time.as_ref()),
            status.message.clone().unwrap_or_default(),
        ])
    });
    let widths = [
        Constraint::Length(30),
        Constraint::Length(24),
        Constraint::Length(9),
        Constraint::Length(13),
        Constraint::Length(6),
        Constraint::Min(8),
    ];
    frame.render_widget(
        Table::new(rows, widths)
            .header(
                Row::new(["VERIFICATION", "BACKUP", "PHASE", "PITR", "DONE", "MESSAGE"])
                    .style(bold()),
            )
            .block(titled(
                state,
                format!("verifications ({})", verifications.len()),
                SourceKind::Verifications,
            )),
        verifications_area,
    );
}
