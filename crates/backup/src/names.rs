//! Names of the objects a backup makes. Long names keep a prefix plus `-` and 8 hex characters
//! of the SHA-256 of the full name, so they are deterministic and distinct.

use sha2::{Digest, Sha256};

/// The longest CronJob name Kubernetes accepts (the Job name plus an 11-character suffix must
/// fit in 63).
pub const MAX_CRONJOB_NAME: usize = 52;
/// The longest name a label value (the Job's `job-name` label) may be.
pub const MAX_LABEL_NAME: usize = 63;

/// 8 lowercase hex characters of the SHA-256 of `text`.
pub fn hash8(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    data_encoding::HEXLOWER.encode(&digest[..4])
}

/// `name` if it has at most `max` characters, else its first `max - 9` characters (no trailing
/// `-`), `-` and [`hash8`] of the full name.
pub fn bounded(name: String, max: usize) -> String {
    if name.len() <= max {
        return name;
    }
    let keep = name.get(..max.saturating_sub(9)).unwrap_or(&name).trim_end_matches('-');
    format!("{keep}-{}", hash8(&name))
}

/// The CronJob of schedule `schedule` of `group`: `mysql-<group>-backup-<schedule>`; over 52
/// characters it keeps its first 43, then `-` and 8 hex characters.
pub fn cronjob_name(group: &str, schedule: &str) -> String {
    let name = format!("mysql-{group}-backup-{schedule}");
    if name.len() <= MAX_CRONJOB_NAME {
        return name;
    }
    // The spec's rule taken literally: the first 43 characters, even one ending in `-`.
    let keep = name.get(..MAX_CRONJOB_NAME - 9).unwrap_or(&name);
    format!("{keep}-{}", hash8(&name))
}

/// The backup Job of MysqlBackup `backup`: `mysqlbackup-<backup>`.
pub fn backup_job_name(backup: &str) -> String {
    bounded(format!("mysqlbackup-{backup}"), MAX_LABEL_NAME)
}

/// The cleanup Job of MysqlBackup `backup`: `mysqlcleanup-<backup>`.
pub fn cleanup_job_name(backup: &str) -> String {
    bounded(format!("mysqlcleanup-{backup}"), MAX_LABEL_NAME)
}

/// The per-run credentials Secret of MysqlBackup `backup`.
pub fn credentials_secret_name(backup: &str) -> String {
    bounded(format!("mysqlbackup-{backup}-creds"), MAX_LABEL_NAME)
}

/// The claim a `pvc.provisioned` profile gets: `mysql-<group>-backup-<profile>`.
pub fn provisioned_claim_name(group: &str, profile: &str) -> String {
    bounded(format!("mysql-{group}-backup-{profile}"), MAX_LABEL_NAME)
}

/// The bootstrap restore Job of `group`: `mysqlrestore-<group>`.
pub fn restore_job_name(group: &str) -> String {
    bounded(format!("mysqlrestore-{group}"), MAX_LABEL_NAME)
}

/// The verification Job of MysqlBackupVerification `verification`.
pub fn verification_job_name(verification: &str) -> String {
    bounded(format!("mysqlverify-{verification}"), MAX_LABEL_NAME)
}

/// The `attempt`-th retry (2 for the first retry) of the failed backup with UID
/// `predecessor_uid`: `backup-retry-<hash>-r<attempt>`.
pub fn retry_name(predecessor_uid: &str, attempt: u32) -> String {
    format!("backup-retry-{}-r{attempt}", hash8(predecessor_uid))
}

/// The label a backup's Job, pods and credentials carry: the MysqlBackup's name.
pub const BACKUP_LABEL: &str = "bloodraven.shipstream.io/backup";
/// The label a scheduled backup carries: its schedule.
pub const SCHEDULE_LABEL: &str = "bloodraven.shipstream.io/backup-schedule";
/// The label of a retry: the failed predecessor's UID.
pub const RETRY_OF_LABEL: &str = "bloodraven.shipstream.io/backup-retry-of";
/// The launch attempt annotation.
pub const ATTEMPT_ANNOTATION: &str = "bloodraven.shipstream.io/backup-attempt";
/// The finalizer that runs artifact cleanup.
pub const FINALIZER: &str = "bloodraven.shipstream.io/mysqlbackup";
/// The source group's UID pinned on the Job.
pub const GROUP_UID_ANNOTATION: &str = "bloodraven.shipstream.io/failover-group-uid";
/// The group's PITR archive ID pinned on the Job.
pub const ARCHIVE_ID_ANNOTATION: &str = "bloodraven.shipstream.io/pitr-archive-id";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_follow_the_pattern() {
        assert_eq!(cronjob_name("orders", "nightly"), "mysql-orders-backup-nightly");
        assert_eq!(backup_job_name("b1"), "mysqlbackup-b1");
        assert_eq!(cleanup_job_name("b1"), "mysqlcleanup-b1");
        assert_eq!(provisioned_claim_name("orders", "daily"), "mysql-orders-backup-daily");
    }

    #[test]
    fn long_cronjob_names_keep_43_characters_and_a_hash() {
        let name = cronjob_name("a-very-long-group-name-indeed", "and-a-long-schedule-name");
        assert_eq!(name.len(), 52);
        assert!(name.starts_with("mysql-a-very-long-group-name-indeed-backup-"));
        let other = cronjob_name("a-very-long-group-name-indeed", "and-a-long-schedule-name2");
        assert_ne!(name, other);
        assert_eq!(cronjob_name("x".repeat(40).as_str(), "s").len(), 52);
    }

    #[test]
    fn exactly_52_is_kept() {
        let group = "g".repeat(52 - "mysql--backup-s".len());
        assert_eq!(cronjob_name(&group, "s").len(), 52);
        assert!(cronjob_name(&group, "s").ends_with("-backup-s"));
    }

    #[test]
    fn retry_names_depend_on_the_uid_and_attempt() {
        let a = retry_name("uid-1", 2);
        assert!(a.starts_with("backup-retry-") && a.ends_with("-r2"), "{a}");
        assert_eq!(a, retry_name("uid-1", 2));
        assert_ne!(a, retry_name("uid-2", 2));
    }
}
