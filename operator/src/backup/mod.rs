//! Backups (`MysqlBackup`).
//!
//! | module | concern |
//! | --- | --- |
//! | [`job`] | the backup Job, its credentials Secret and the recorded `status.artifactStorage` (pure) |
//! | [`verdict`] | a Job's state (and its log's sentinel) → the backup's phase, conditions and observations (pure) |
//! | [`reconcile`] | one pass over one backup: observe its Job, or select the source and create the Job (IO) |
//! | [`cleanup`] | a deleted backup's artifact cleanup: one pass's decision (finalizer, Retain, the cleanup Job, retries, the ArtifactCleanup reasons) (pure) |
//! | [`cleanup_job`] | the cleanup Job `mysqlcleanup-<backup>` from the recorded destination (pure) |
//! | [`cleanup_io`] | the finalizer and the cleanup pass's observations and effects (IO) |
//! | [`controller`] | the watch loop (kube-rs Controller over MysqlBackups owning Jobs) and the backup Events |
//! | [`schedule`] | each `spec.backup.schedules[]` entry as a CronJob, and a run's MysqlBackup (pure) |
//! | [`retention`] | the profile's retention over the group's backups, with the verification and PITR holds (pure) |
//! | [`retry`] | the retry of a schedule's failed latest backup: name, lineage, exponential backoff (pure) |
//! | [`rollup`] | `status.backupSchedules` and `status.lastBackupTime` (pure) |
//! | [`housekeeping`] | the loop applying schedules, turning runs into backups, retrying, reporting the rollup and pruning by retention (IO) |
//! | [`verification`] | the MysqlBackupVerification controller: a scratch load of a backup in a Job |
//!
//! Not built yet: the backup metrics.

pub mod cleanup;
pub mod cleanup_io;
pub mod cleanup_job;
pub mod controller;
pub mod housekeeping;
pub mod job;
pub mod reconcile;
pub mod retention;
pub mod retry;
pub mod rollup;
pub mod schedule;
pub mod verdict;
pub mod verification;
