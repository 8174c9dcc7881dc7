//! The PITR restore steps around the pure planner (`bloodraven-pitr`), as a library the
//! sidecar's restore subcommands call:
//!
//! - [`local`]: lays binlog files a site wrote into archive objects (descriptor, manifest,
//!   `<site>/<name>.<id>`), as the archiver does; for tests and the lab.
//! - [`dump_meta`]: dump-meta: the planner's `BackupMeta` from the backup artifact's `@.json`,
//!   `@.done.json` and stamp (`bloodraven-backup`'s types).
//! - [`download`]: pitr-download: opens the archive in a store, downloads and authenticates
//!   rows, indexes their transactions ([`bloodraven_pitr::index_row`]), stages segment files.
//! - [`replay`]: the restore step: every segment through `mysqlbinlog --include-gtids` into one
//!   `mysql --binary-mode` session, then the proof that `gtid_executed` equals the certified set.
//! - [`key`]: the archive key from a passphrase file (every reader of an encrypted archive).
//! - [`files`]: `dump.json` and `plan.json`, what the restore Job's steps hand on.
//! - [`lines`]: the `BLOODRAVEN_PITR_*` log lines and the verdict (pure).

pub mod download;
pub mod dump_meta;
mod error;
pub mod files;
pub mod key;
pub mod lines;
pub mod local;
pub mod replay;

pub use crate::error::ReplayError;
