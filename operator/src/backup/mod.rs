//! Backups (`MysqlBackup`).
//!
//! | module | concern |
//! | --- | --- |
//! | [`job`] | the backup Job, its credentials Secret and the recorded `status.artifactStorage` (pure) |
//! | [`verdict`] | a Job's state (and its log's sentinel) → the backup's phase, conditions and observations (pure) |
//! | [`reconcile`] | one pass over one backup: observe its Job, or select the source and create the Job (IO) |
//! | [`controller`] | the watch loop (kube-rs Controller over MysqlBackups owning Jobs) and the backup Events |
//! | [`verification`] | the MysqlBackupVerification controller: a scratch load of a backup in a Job |
//!
//! Not built yet: metrics, schedules, retention and artifact cleanup.

pub mod controller;
pub mod job;
pub mod reconcile;
pub mod verdict;
pub mod verification;
