//! Verifications (`MysqlBackupVerification`): prove a backup loads by restoring it into a
//! throwaway `mysqld` in a Job (`bloodraven-sidecar verify`).
//!
//! | module | concern |
//! | --- | --- |
//! | [`plan`] | which backup is read, the Verified reasons, the Job's verdict → status (pure) |
//! | [`job`] | the verification Job from the backup's recorded `status.artifactStorage` (pure) |
//! | [`controller`] | one reconcile (observe the Job, or choose the backup and create it), Events, the watch loop |

pub mod controller;
pub mod job;
pub mod plan;
