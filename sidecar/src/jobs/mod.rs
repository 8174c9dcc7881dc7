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

pub mod backup;
pub mod client;
pub mod creds;
pub mod dumpfile;
pub mod restore;
pub mod storage;

/// The line a load prints before the first statement reaches the target.
pub const LOAD_START: &str = "BLOODRAVEN_LOAD_START";
/// The line a successful load prints last.
pub const LOAD_COMPLETE: &str = "BLOODRAVEN_LOAD_COMPLETE";
