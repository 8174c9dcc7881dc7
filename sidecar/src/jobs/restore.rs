//! `restore`: loads a finished backup artifact into an empty site with the `mysql` client.
//!
//! Before anything reaches the target the step checks the artifact: `@.done.json` present,
//! the stamp finished and naming this backup, `@.json` readable with a `gtidExecuted`, and
//! every chunk present with the recorded size (a truncated object is refused here). While
//! loading, each chunk's SHA-256 is checked before its bytes go to the client. The target must
//! have an empty `gtid_executed` (a fresh server); after the load its `gtid_executed` must
//! equal the dump's.

use std::path::PathBuf;
use std::process::Stdio;

use anyhow::{Context as _, bail};
use bloodraven_backup::layout::{ArtifactLayout, ChunkCompression};
use bloodraven_backup::meta::{DoneJson, DumpJson, Stamp};
use bloodraven_gtid::GtidSet;
use bloodraven_store::{ErrorKind, ObjectStore, Store, retry_transient};
use mysql_async::prelude::Queryable as _;
use sha2::{Digest as _, Sha256};
use tokio::io::AsyncWriteExt as _;
use tracing::info;

use super::backup::policy;
use super::client::Target;
use super::storage::StorageArgs;
use super::{LOAD_COMPLETE, LOAD_START, creds};

/// `restore`'s settings (the restore Job's environment).
#[derive(Debug, Clone, clap::Args)]
pub struct RestoreArgs {
    /// The backup's name (the artifact directory under the storage root).
    #[arg(long = "backup-name", env = "BLOODRAVEN_BACKUP_NAME")]
    pub backup_name: String,
    /// The backup's UID; when set, the stamp must name it.
    #[arg(long = "backup-uid", env = "BLOODRAVEN_BACKUP_UID", default_value = "")]
    pub backup_uid: String,
    /// The target's host (the seed's internal Service).
    #[arg(long = "mysql-host", env = "MYSQL_HOST", default_value = "127.0.0.1")]
    pub mysql_host: String,
    #[arg(long = "mysql-port", env = "MYSQL_PORT", default_value_t = 3306)]
    pub mysql_port: u16,
    /// Where the restore account's Secret is mounted.
    #[arg(long = "mysql-creds-dir", env = "BLOODRAVEN_MYSQL_CREDS_DIR")]
    pub mysql_creds_dir: Option<PathBuf>,
    /// The mysql client executable.
    #[arg(long = "mysql-client", env = "BLOODRAVEN_MYSQL", default_value = "mysql")]
    pub mysql_client: PathBuf,
    /// An in-place restore into the live primary (backup-and-restore document, "Full-instance
    /// in-place restore"): refuses unless `offline_mode` is ON (BLOODRAVEN_OFFLINE_FENCE_MISSING),
    /// then `STOP REPLICA; RESET REPLICA ALL`, drops every user schema (binlogged, so the
    /// primary's executed set shows the change), loads without the dump's `GTID_PURGED`, and
    /// only after a complete load `RESET BINARY LOGS AND GTIDS` and sets the dump's set. A load
    /// that fails part way leaves the primary's set changed, never equal to the fenced one.
    #[arg(long = "in-place", env = "BLOODRAVEN_RESTORE_IN_PLACE", default_value_t = false)]
    pub in_place: bool,
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// The token an in-place restore fails with when the target is not fenced.
pub const OFFLINE_FENCE_MISSING: &str = "BLOODRAVEN_OFFLINE_FENCE_MISSING";

/// Schemas an in-place restore never drops.
const SYSTEM_SCHEMAS: &str = "'mysql','sys','information_schema','performance_schema'";

/// The in-place preflight on the live primary: the fence checked, replication reset, a
/// binlogged marker (so the executed set changes even with no schema to drop), every user
/// schema dropped. Runs after the artifact check, so a missing or truncated dump never drops
/// anything.
async fn clear_in_place(target: &Target) -> anyhow::Result<Vec<String>> {
    let mut conn = mysql_async::Conn::new(target.opts())
        .await
        .with_context(|| format!("cannot connect to the target {}:{}", target.host, target.port))?;
    let offline: Option<u8> = conn
        .query_first("SELECT @@GLOBAL.offline_mode")
        .await
        .context("cannot read the target's offline_mode")?;
    if offline != Some(1) {
        bail!(
            "{OFFLINE_FENCE_MISSING}: offline_mode is OFF on {}:{}; an in-place restore drops nothing unless the operator's offline fence is up",
            target.host,
            target.port
        );
    }
    let schemas: Vec<String> = conn
        .query(format!(
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ({SYSTEM_SCHEMAS}) ORDER BY SCHEMA_NAME"
        ))
        .await
        .context("cannot list the target's schemas")?;
    for statement in ["STOP REPLICA", "RESET REPLICA ALL"] {
        conn.query_drop(statement).await.with_context(|| format!("{statement} failed"))?;
    }
    let marker = "DROP DATABASE IF EXISTS `bloodraven_restore_marker`".to_owned();
    for statement in std::iter::once(marker).chain(
        schemas.iter().map(|schema| format!("DROP DATABASE `{}`", schema.replace('`', "``"))),
    ) {
        conn.query_drop(&statement).await.with_context(|| format!("{statement} failed"))?;
    }
    let _ = conn.disconnect().await;
    Ok(schemas)
}

/// After a complete in-place load: the executed set becomes exactly the dump's.
async fn finish_in_place(target: &Target, expected: &GtidSet) -> anyhow::Result<()> {
    let mut conn = mysql_async::Conn::new(target.opts())
        .await
        .with_context(|| format!("cannot connect to the target {}:{}", target.host, target.port))?;
    conn.query_drop("RESET BINARY LOGS AND GTIDS")
        .await
        .context("RESET BINARY LOGS AND GTIDS failed")?;
    let statement = format!("SET GLOBAL gtid_purged = '{expected}'");
    conn.query_drop(&statement).await.with_context(|| format!("{statement} failed"))?;
    let _ = conn.disconnect().await;
    Ok(())
}

/// The dump's `SET @@GLOBAL.GTID_PURGED=…;` removed from its first chunk (an in-place load
/// sets the dump's set only once the load is complete).
pub fn strip_gtid_purged(sql: Vec<u8>) -> anyhow::Result<Vec<u8>> {
    let needle = b"SET @@GLOBAL.GTID_PURGED=";
    let Some(start) = sql.windows(needle.len()).position(|w| w == needle) else {
        bail!(
            "the dump's first chunk has no SET @@GLOBAL.GTID_PURGED; it cannot be restored in place"
        );
    };
    let Some(length) = sql[start..].iter().position(|b| *b == b';') else {
        bail!("the dump's SET @@GLOBAL.GTID_PURGED statement has no end");
    };
    let mut out = sql;
    out.drain(start..=start + length);
    Ok(out)
}

/// What a finished restore reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreOutcome {
    pub gtid_executed: String,
    pub data_bytes: u64,
    pub chunks: usize,
}

/// The checked metadata of a finished artifact.
#[derive(Debug, Clone)]
pub struct Artifact {
    pub dump: DumpJson,
    pub done: DoneJson,
    pub stamp: Stamp,
    pub compression: ChunkCompression,
}

async fn get(store: &Store, key: &str, what: &str) -> anyhow::Result<Option<Vec<u8>>> {
    match retry_transient(policy(), || store.get(key)).await {
        Ok(object) => Ok(Some(object.bytes)),
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error).with_context(|| format!("cannot read {what} ({key})")),
    }
}

/// Reads and checks the artifact's metadata and the presence and size of every chunk.
pub async fn check_artifact(
    store: &Store,
    layout: &ArtifactLayout,
    backup_uid: &str,
) -> anyhow::Result<Artifact> {
    let done = get(store, &layout.done_json(), "@.done.json").await?.with_context(|| {
        format!("the dump never finished: no {} in {}", layout.done_json(), store.describe())
    })?;
    let done = DoneJson::from_bytes(&done)?;
    let stamp = get(store, &layout.stamp(), "the backup stamp")
        .await?
        .with_context(|| format!("no backup stamp {} in {}", layout.stamp(), store.describe()))?;
    let stamp = Stamp::from_bytes(&stamp)?;
    if !stamp.finished() {
        bail!("the dump never finished: the stamp {} has no serverClock.end", layout.stamp());
    }
    if stamp.backup.name != layout.name()
        || (!backup_uid.is_empty() && stamp.backup.uid != backup_uid)
    {
        bail!(
            "the stamp {} names backup {}/{} (uid {}), not {} (uid {backup_uid}); the location holds another backup",
            layout.stamp(),
            stamp.backup.namespace,
            stamp.backup.name,
            stamp.backup.uid,
            layout.name()
        );
    }
    let dump = get(store, &layout.dump_json(), "@.json")
        .await?
        .with_context(|| format!("the dump has no @.json ({})", layout.dump_json()))?;
    let dump = DumpJson::from_bytes(&dump)?;
    if dump.gtid_executed.is_none() || dump.gtid_executed_inconsistent {
        bail!(
            "the dump's @.json records no consistent gtidExecuted; it cannot be restored with its GTID set"
        );
    }
    let compression = ChunkCompression::parse(&dump.compression)
        .with_context(|| format!("@.json names an unknown compression {:?}", dump.compression))?;
    for chunk in &done.chunks {
        let key = format!("{}/{}", layout.dir(), chunk.file);
        let meta = match retry_transient(policy(), || store.head(&key)).await {
            Ok(meta) => meta,
            Err(error) if error.kind() == ErrorKind::NotFound => {
                bail!("the dump is damaged: chunk {key} is missing")
            }
            Err(error) => return Err(error).with_context(|| format!("cannot read {key}")),
        };
        if meta.size != chunk.bytes {
            bail!(
                "the dump is damaged: chunk {key} has {} bytes, @.done.json records {}",
                meta.size,
                chunk.bytes
            );
        }
    }
    Ok(Artifact { dump, done, stamp, compression })
}

/// Runs the restore step.
pub async fn run(args: RestoreArgs) -> anyhow::Result<RestoreOutcome> {
    let layout = ArtifactLayout::new(&args.backup_name)?;
    let store = args.storage.store(false).await?;
    let artifact = check_artifact(&store, &layout, &args.backup_uid).await?;
    let expected: GtidSet = artifact
        .dump
        .gtid_executed
        .as_deref()
        .unwrap_or_default()
        .parse()
        .context("the dump's gtidExecuted is not a GTID set")?;

    let creds = creds::mysql(args.mysql_creds_dir.as_deref(), |n| std::env::var(n).ok())?;
    let target = Target { host: args.mysql_host.clone(), port: args.mysql_port, creds };
    let before = gtid_executed(&target).await?;
    if args.in_place {
        let dropped = clear_in_place(&target).await?;
        info!(dropped = ?dropped, "in-place restore: user schemas dropped");
    } else if !before.is_empty() {
        bail!(
            "the target {}:{} already has transactions (gtid_executed {before}); a restore loads only into an empty server",
            target.host,
            target.port
        );
    }

    let options = target.option_file()?;
    let mut child = tokio::process::Command::new(&args.mysql_client)
        .arg(options.arg())
        .args(["--default-character-set=utf8mb4", "--binary-mode", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| {
            format!("cannot run {}; is BLOODRAVEN_MYSQL right?", args.mysql_client.display())
        })?;
    let mut stdin = child.stdin.take().context("the mysql client has no stdin")?;
    let stderr = child.stderr.take().context("the mysql client has no stderr")?;
    let stderr = tokio::spawn(super::backup::tail_of(stderr));
    info!(backup = %layout.name(), target = %format!("{}:{}", target.host, target.port), "{LOAD_START}");
    #[expect(
        clippy::print_stdout,
        reason = "the Job log's load marker, read by people and the operator"
    )]
    {
        println!("{LOAD_START} backup={}", layout.name());
    }

    // Download and decompress the next chunk while the client loads this one.
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<anyhow::Result<Vec<u8>>>(1);
    let chunks = artifact.done.chunks.clone();
    let dir = layout.dir().to_owned();
    let compression = artifact.compression;
    let fetch_store = store.clone();
    let in_place = args.in_place;
    let fetcher = tokio::spawn(async move {
        for (index, chunk) in chunks.into_iter().enumerate() {
            let key = format!("{dir}/{}", chunk.file);
            let result = async {
                let body = retry_transient(policy(), || fetch_store.get(&key))
                    .await
                    .with_context(|| format!("cannot read {key}"))?
                    .bytes;
                let expected = chunk.sha256.clone();
                tokio::task::spawn_blocking(move || {
                    let digest = data_encoding::HEXLOWER.encode(&Sha256::digest(&body));
                    if digest != expected {
                        bail!("the dump is damaged: chunk {key} has SHA-256 {digest}, @.done.json records {expected}");
                    }
                    let sql = match compression {
                        ChunkCompression::Zstd => zstd::stream::decode_all(body.as_slice())
                            .with_context(|| format!("the dump is damaged: chunk {key} is not valid zstd"))?,
                        ChunkCompression::None => body,
                    };
                    if in_place && index == 0 { strip_gtid_purged(sql) } else { Ok(sql) }
                })
                .await
                .context("the decompression task failed")?
            }
            .await;
            let failed = result.is_err();
            if sender.send(result).await.is_err() || failed {
                break;
            }
        }
    });
    let mut data_bytes = 0u64;
    let mut failure = None;
    while let Some(result) = receiver.recv().await {
        match result {
            Ok(sql) => {
                data_bytes += sql.len() as u64;
                if let Err(error) = stdin.write_all(&sql).await {
                    failure = Some(
                        anyhow::Error::from(error).context("the mysql client stopped reading"),
                    );
                    break;
                }
            }
            Err(error) => {
                failure = Some(error);
                break;
            }
        }
    }
    drop(receiver);
    let _ = fetcher.await;
    if let Some(error) = failure {
        let _ = child.kill().await;
        let detail = stderr.await.unwrap_or_default();
        return Err(error.context(format!("the load stopped part way (mysql client: {detail})")));
    }
    drop(stdin);
    let status = child.wait().await.context("cannot wait for the mysql client")?;
    let detail = stderr.await.unwrap_or_default();
    if !status.success() {
        bail!("the load failed ({status}): {detail}");
    }
    if args.in_place {
        finish_in_place(&target, &expected).await?;
    }
    let after = gtid_executed(&target).await?;
    if after != expected {
        bail!("after the load the target's gtid_executed is {after}, not the dump's {expected}");
    }
    info!(gtid_executed = %after, data_bytes, "{LOAD_COMPLETE}");
    Ok(RestoreOutcome {
        gtid_executed: after.to_string(),
        data_bytes,
        chunks: artifact.done.chunks.len(),
    })
}

async fn gtid_executed(target: &Target) -> anyhow::Result<GtidSet> {
    let mut conn = mysql_async::Conn::new(target.opts())
        .await
        .with_context(|| format!("cannot connect to the target {}:{}", target.host, target.port))?;
    let text: Option<String> = conn
        .query_first("SELECT @@GLOBAL.gtid_executed")
        .await
        .context("cannot read the target's gtid_executed")?;
    let _ = conn.disconnect().await;
    let text: String = text.unwrap_or_default().chars().filter(|c| !c.is_whitespace()).collect();
    text.parse().with_context(|| format!("the target's gtid_executed {text:?} is not a GTID set"))
}

#[cfg(test)]
mod tests {
    use super::strip_gtid_purged;

    #[test]
    fn an_in_place_load_leaves_the_dump_gtid_purged_out() {
        let header = b"SET @@SESSION.SQL_LOG_BIN= 0;\nSET @@GLOBAL.GTID_PURGED=/*!80000 '+'*/ '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,\n3e11fa47-71ca-11e1-9e33-c80aa9429563:1-2';\nCREATE TABLE t (a INT);\n";
        let out = strip_gtid_purged(header.to_vec()).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "SET @@SESSION.SQL_LOG_BIN= 0;\n\nCREATE TABLE t (a INT);\n"
        );
        assert!(strip_gtid_purged(b"CREATE TABLE t (a INT);".to_vec()).is_err());
    }
}
