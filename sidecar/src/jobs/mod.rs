//! Job steps: subcommands of the sidecar binary (the image already beside MySQL) that backup,
//! restore and verification Jobs run. Each step is a function taking its settings and
//! returning `anyhow::Result`; `main.rs` maps a subcommand to it.
//!
//! | module | concern |
//! | --- | --- |
//! | [`backup`] | `backup`: mysqldump → chunks in the store, `@.json`, the stamp, `@.done.json` last |
//! | [`restore`] | `restore`: check a finished artifact and load it into a site |
//! | [`dumpfile`] | reading mysqldump's header (GTID set, binlog position), pure |
//! | [`creds`] | MySQL and S3 credentials from mounted files (env fallback) |
//! | [`storage`] | the destination: S3 (bucket, prefix, endpoint) or PVC (mount, subPath) |
//! | [`client`] | the MySQL client tools' option file, and the step's own connection |
//! | [`dump_meta`] | `dump-meta`: a PITR restore's backup metadata (`dump.json`), step-2 refusals |
//! | [`pitr_download`] | `pitr-download`: archive → plan, staged segment files, `coverage.json`, `plan.json` |
//! | [`replay`] | `replay`: the plan's segments into the loaded server, the proof and the verdict |
//! | [`pitr_restore`] | `pitr-restore`: the PITR restore Job's main container: the load, then the replay; the verdict as termination message |
//! | [`cleanup`] | `artifact-cleanup`: delete exactly the recorded artifact, report `BLOODRAVEN_CLEANUP_*` |
//! | [`schedule`] | `scheduled-backup`: a backup schedule's CronJob run (the operator turns it into a MysqlBackup) |
//! | [`verify`] | `verify`: a MysqlBackupVerification's proof: metadata, chunks, a scratch load, with `pointInTime` the staged plan replayed into it, checksums |
//! | [`scratch`] | the verification's throwaway `mysqld` (initialised, loopback only, killed on drop) |

pub mod backup;
pub mod cleanup;
pub mod client;
pub mod creds;
pub mod dump_meta;
pub mod dumpfile;
pub mod pitr_download;
pub mod pitr_restore;
pub mod replay;
pub mod restore;
pub mod schedule;
pub mod scratch;
pub mod storage;
pub mod verify;

/// The line a load prints before the first statement reaches the target.
pub const LOAD_START: &str = "BLOODRAVEN_LOAD_START";
/// The line a successful load prints last.
pub const LOAD_COMPLETE: &str = "BLOODRAVEN_LOAD_COMPLETE";
