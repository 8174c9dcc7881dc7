//! Backups: a schedule whose latest backup failed, a newest successful backup older than a
//! day (the spec's "Stale backup" alert), a failed verification.

use bloodraven_crd::backup::BackupPhase;
use bloodraven_crd::verification::VerificationPhase;
use bloodraven_crd::{ConditionType, MysqlBackup, MysqlBackupVerification};
use jiff::{SignedDuration, Timestamp};

use super::{Finding, Inputs, Kind, Severity, since};

/// The spec's monitoring rule: `time() - last_success > 86400` is a stale backup.
pub const BACKUP_STALE_AFTER: SignedDuration = SignedDuration::from_secs(86_400);

fn same_group(inputs: &Inputs<'_>, namespace: Option<&str>, group: &str) -> bool {
    group == inputs.name() && namespace.unwrap_or("default") == inputs.namespace()
}

fn backups<'a>(inputs: &'a Inputs<'_>) -> impl Iterator<Item = &'a MysqlBackup> + 'a {
    inputs.backups.iter().filter(move |backup| {
        same_group(
            inputs,
            backup.metadata.namespace.as_deref(),
            &backup.spec.failover_group_ref.name,
        )
    })
}

fn verifications<'a>(
    inputs: &'a Inputs<'_>,
) -> impl Iterator<Item = &'a MysqlBackupVerification> + 'a {
    inputs.verifications.iter().filter(move |verification| {
        same_group(
            inputs,
            verification.metadata.namespace.as_deref(),
            &verification.spec.failover_group_ref.name,
        )
    })
}

/// When the newest successful backup completed, from every place that says so.
pub fn newest_success(inputs: &Inputs<'_>) -> Option<Timestamp> {
    let status = inputs.group.status.as_ref();
    let from_status = status.and_then(|status| status.last_backup_time.as_ref()).map(|time| time.0);
    let from_schedules = status
        .into_iter()
        .flat_map(|status| status.backup_schedules.iter())
        .filter_map(|schedule| schedule.last_success_time.as_ref().map(|time| time.0));
    let from_objects = backups(inputs)
        .filter_map(|backup| backup.status.as_ref())
        .filter(|status| status.phase == Some(BackupPhase::Succeeded))
        .filter_map(|status| status.completion_time.as_ref().map(|time| time.0));
    from_status.into_iter().chain(from_schedules).chain(from_objects).max()
}

pub(super) fn check(inputs: &Inputs<'_>, out: &mut Vec<Finding>) {
    let now = inputs.now;
    let Some(status) = inputs.group.status.as_ref() else { return };
    let scheduled =
        inputs.group.spec.backup.as_ref().is_some_and(|backup| !backup.schedules.is_empty());
    for schedule in &status.backup_schedules {
        if schedule.last_backup_phase == Some(BackupPhase::Failed) {
            let name = schedule.last_backup_name.as_deref().unwrap_or("?");
            let retry = schedule
                .next_retry_time
                .as_ref()
                .map(|time| format!("; next retry {}", super::format_time(time.0)))
                .unwrap_or_default();
            out.push(
                Finding::new(
                    Severity::Warning,
                    Kind::BackupFailing,
                    format!(
                        "the latest backup of schedule {} failed ({name}){retry}",
                        schedule.name
                    ),
                )
                .fact(format!("status.backupSchedules[{}].lastBackupPhase=Failed", schedule.name))
                .action("read the backup's conditions and Job log")
                .command(format!("kubectl describe mysqlbackup {name} -n {}", inputs.namespace())),
            );
        }
    }
    if status.backup_schedules.is_empty()
        && let Some(latest) = backups(inputs)
            .max_by_key(|backup| backup.metadata.creation_timestamp.as_ref().map(|time| time.0))
        && latest.status.as_ref().and_then(|status| status.phase.as_ref())
            == Some(&BackupPhase::Failed)
    {
        let name = latest.metadata.name.as_deref().unwrap_or("?");
        out.push(
            Finding::new(
                Severity::Warning,
                Kind::BackupFailing,
                format!("the latest backup {name} failed"),
            )
            .fact(format!("mysqlbackup {name} status.phase=Failed"))
            .action("read the backup's conditions and Job log")
            .command(format!("kubectl describe mysqlbackup {name} -n {}", inputs.namespace())),
        );
    }
    if scheduled {
        match newest_success(inputs) {
            Some(newest) if now.duration_since(newest) > BACKUP_STALE_AFTER => out.push(
                Finding::new(
                    Severity::Warning,
                    Kind::BackupTooOld,
                    format!("the newest successful backup completed {}", since(now, newest)),
                )
                .fact("newest of status.lastBackupTime, backupSchedules[].lastSuccessTime, MysqlBackup completionTime")
                .action("older than a day: restores lose more, and the archive cannot be pruned; check the schedules"),
            ),
            Some(_) => {}
            None => out.push(
                Finding::new(Severity::Warning, Kind::BackupTooOld, "no backup has succeeded yet")
                    .fact("no status.lastBackupTime, no Succeeded MysqlBackup")
                    .action("there is nothing to restore from; check the schedules and the first backup's Job"),
            ),
        }
    }
    let latest = verifications(inputs).max_by_key(|verification| {
        verification
            .status
            .as_ref()
            .and_then(|status| status.start_time.as_ref().or(status.completion_time.as_ref()))
            .map(|time| time.0)
    });
    if let Some(verification) = latest
        && let Some(vstatus) = verification.status.as_ref()
        && vstatus.phase == Some(VerificationPhase::Failed)
    {
        let name = verification.metadata.name.as_deref().unwrap_or("?");
        let reason = bloodraven_crd::condition::find(&vstatus.conditions, &ConditionType::Verified)
            .and_then(|condition| condition.reason.as_ref())
            .map_or("no reason", |reason| reason.as_str());
        out.push(
            Finding::new(
                Severity::Warning,
                Kind::VerificationFailed,
                format!("the latest verification {name} failed ({reason})"),
            )
            .fact(format!("mysqlbackupverification {name} status.phase=Failed"))
            .action("the backup may not restore: read the verification's message")
            .command(format!(
                "kubectl describe mysqlbackupverification {name} -n {}",
                inputs.namespace()
            )),
        );
    }
}
