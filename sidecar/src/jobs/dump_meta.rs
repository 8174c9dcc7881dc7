//! `dump-meta`: the first step of a PITR restore Job. Reads the backup artifact's `@.json`,
//! `@.done.json` and stamp, builds the planner's backup metadata
//! (`bloodraven_replay::dump_meta`), refuses with the document's step-2 token
//! (`bloodraven_pitr::check_dump`) and writes `/pitr-dump-meta/dump.json` for pitr-download.

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use bloodraven_backup::layout::ArtifactLayout;
use bloodraven_backup::meta::{DoneJson, DumpJson, Stamp};
use bloodraven_replay::dump_meta::{BackupStatus, backup_meta};
use bloodraven_replay::files::DumpMetaFile;
use bloodraven_store::{ErrorKind, ObjectStore, Store, retry_transient};
use tracing::{error, info, warn};

use super::backup::policy;
use super::storage::StorageArgs;

/// `dump-meta`'s settings (the restore Job's environment).
#[derive(Debug, Clone, clap::Args)]
pub struct DumpMetaArgs {
    /// The backup's name (the artifact directory under the storage root).
    #[arg(long = "backup-name", env = "BLOODRAVEN_BACKUP_NAME")]
    pub backup_name: String,
    /// The MysqlBackup's UID (the stamp must name it).
    #[arg(long = "backup-uid", env = "BLOODRAVEN_BACKUP_UID")]
    pub backup_uid: String,
    /// The source group UID the MysqlBackup's status records (empty: none).
    #[arg(long = "source-uid", env = "BLOODRAVEN_SOURCE_UID", default_value = "")]
    pub source_uid: String,
    /// The MysqlBackup's `status.gtidExecuted` (empty: none recorded).
    #[arg(
        long = "backup-gtid-executed",
        env = "BLOODRAVEN_BACKUP_GTID_EXECUTED",
        default_value = ""
    )]
    pub gtid_executed: String,
    /// Where `dump.json` is written.
    #[arg(
        long = "out",
        env = "BLOODRAVEN_PITR_DUMP_META",
        default_value = "/pitr-dump-meta/dump.json"
    )]
    pub out: PathBuf,
    #[command(flatten)]
    pub storage: StorageArgs,
}

async fn read<T>(
    store: &Store,
    key: &str,
    what: &str,
    parse: impl Fn(&[u8]) -> Result<T, bloodraven_backup::meta::MetaError>,
) -> anyhow::Result<Option<T>> {
    match retry_transient(policy(), || store.get(key)).await {
        Ok(object) => match parse(&object.bytes) {
            Ok(value) => Ok(Some(value)),
            Err(problem) => {
                // Unreadable counts as absent: the planner refuses it with its token.
                warn!(key, what, %problem, "unreadable dump metadata");
                Ok(None)
            }
        },
        Err(problem) if problem.kind() == ErrorKind::NotFound => Ok(None),
        Err(problem) => Err(problem).with_context(|| format!("cannot read {what} ({key}); retry")),
    }
}

/// Runs dump-meta: `Ok` with what was written, or the step-2 refusal as the error
/// (`<token>: <message>`).
pub async fn run(args: DumpMetaArgs) -> anyhow::Result<DumpMetaFile> {
    let layout = ArtifactLayout::new(&args.backup_name)?;
    let store = args.storage.store(false).await?;
    let dump = read(&store, &layout.dump_json(), "@.json", DumpJson::from_bytes).await?;
    let done = read(&store, &layout.done_json(), "@.done.json", DoneJson::from_bytes).await?;
    let stamp = read(&store, &layout.stamp(), "the backup stamp", Stamp::from_bytes).await?;
    let status = BackupStatus {
        uid: args.backup_uid.clone(),
        source_uid: args.source_uid.clone(),
        gtid_executed: Some(args.gtid_executed.clone()).filter(|text| !text.is_empty()),
    };
    let meta = backup_meta(&status, dump.as_ref(), done.as_ref(), stamp.as_ref());
    if let Err(refusal) = bloodraven_pitr::check_dump(&meta) {
        error!(token = %refusal.token, backup = %args.backup_name, "read dump metadata");
        bail!("{refusal}");
    }
    let file = DumpMetaFile::from(&meta);
    info!(
        location = %store.describe(),
        backup_uid = %meta.backup_uid,
        source_uid = %meta.source_uid,
        archive = meta.stamp.as_ref().map_or("", |stamp| stamp.pitr_archive_id.as_str()),
        dump_end = ?meta.dump_end,
        "dump metadata"
    );
    write_json(&args.out, &file)?;
    Ok(file)
}

/// Writes `value` as JSON at `path`, creating its folder.
pub fn write_json(path: &std::path::Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let text = serde_json::to_vec_pretty(value).context("serializing")?;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
