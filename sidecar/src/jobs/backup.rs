//! `backup`: dumps one site with `mysqldump` into the profile's storage.
//!
//! Order of writes: the stamp (atomic create, `serverClock.start`; an existing stamp fails the
//! backup), the chunks, `@.json`, the stamp's `serverClock.end`, `@.done.json` last, then the
//! `BLOODRAVEN_DUMP_COMPLETE` sentinel on stdout. A failure before `@.done.json` leaves an
//! artifact readers refuse as unfinished.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bloodraven_backup::layout::{ArtifactLayout, ChunkCompression};
use bloodraven_backup::meta::{
    ChunkRecord, DUMPER, DoneJson, DumpFilters, DumpJson, Extra, FORMAT_VERSION, ObjectRef,
    STAMP_KIND, ServerClock, Stamp,
};
use bloodraven_backup::sentinel::Sentinel;
use bloodraven_store::{ErrorKind, ObjectStore, RetryPolicy, Store, retry_transient};
use mysql_async::prelude::Queryable as _;
use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt as _};
use tracing::info;

use super::client::Target;
use super::dumpfile::{HEADER_BYTES, parse_header};
use super::storage::StorageArgs;
use super::{creds, dumpfile};

/// Schemas never dumped (as with `util.dumpInstance`).
pub const SYSTEM_SCHEMAS: [&str; 4] = ["mysql", "sys", "information_schema", "performance_schema"];

/// `backup`'s settings (the backup Job's environment).
#[derive(Debug, Clone, clap::Args)]
pub struct BackupArgs {
    /// The MysqlBackup's name (the artifact directory).
    #[arg(long = "backup-name", env = "BLOODRAVEN_BACKUP_NAME")]
    pub backup_name: String,
    /// The MysqlBackup's UID.
    #[arg(long = "backup-uid", env = "BLOODRAVEN_BACKUP_UID", default_value = "")]
    pub backup_uid: String,
    /// The namespace.
    #[arg(long, env = "POD_NAMESPACE", default_value = "")]
    pub namespace: String,
    /// The failover group.
    #[arg(long, env = "BLOODRAVEN_GROUP", default_value = "")]
    pub group: String,
    /// The group's UID.
    #[arg(long = "group-uid", env = "BLOODRAVEN_GROUP_UID", default_value = "")]
    pub group_uid: String,
    /// The group's PITR archive ID (empty: PITR off).
    #[arg(long = "pitr-archive-id", env = "BLOODRAVEN_PITR_ARCHIVE_ID", default_value = "")]
    pub pitr_archive_id: String,
    /// The source site.
    #[arg(long, env = "BLOODRAVEN_SITE")]
    pub site: String,
    /// The server_id the operator pinned for the source site; another one fails the backup.
    #[arg(long = "expect-server-id", env = "BLOODRAVEN_SOURCE_SERVER_ID")]
    pub expect_server_id: Option<u32>,
    /// The source's host (its internal Service).
    #[arg(long = "mysql-host", env = "MYSQL_HOST", default_value = "127.0.0.1")]
    pub mysql_host: String,
    #[arg(long = "mysql-port", env = "MYSQL_PORT", default_value_t = 3306)]
    pub mysql_port: u16,
    /// Where the MySQL credentials Secret is mounted.
    #[arg(long = "mysql-creds-dir", env = "BLOODRAVEN_MYSQL_CREDS_DIR")]
    pub mysql_creds_dir: Option<PathBuf>,
    /// The mysqldump executable.
    #[arg(long, env = "BLOODRAVEN_MYSQLDUMP", default_value = "mysqldump")]
    pub mysqldump: PathBuf,
    /// `zstd` or `none`.
    #[arg(long, env = "BLOODRAVEN_DUMP_COMPRESSION", default_value = "zstd")]
    pub compression: String,
    /// Uncompressed bytes per chunk (`64M`, `1G`, `4096`).
    #[arg(
        long = "bytes-per-chunk",
        env = "BLOODRAVEN_DUMP_BYTES_PER_CHUNK",
        default_value = "64M"
    )]
    pub bytes_per_chunk: String,
    /// Comma-separated schemas to dump (empty: every user schema).
    #[arg(long = "include-schemas", env = "BLOODRAVEN_DUMP_INCLUDE_SCHEMAS", default_value = "")]
    pub include_schemas: String,
    /// Comma-separated schemas to leave out.
    #[arg(long = "exclude-schemas", env = "BLOODRAVEN_DUMP_EXCLUDE_SCHEMAS", default_value = "")]
    pub exclude_schemas: String,
    /// The location the operator recorded; the step refuses to write anywhere else.
    #[arg(long = "expect-location", env = "BLOODRAVEN_BACKUP_LOCATION")]
    pub expect_location: Option<String>,
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// What a finished backup reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupOutcome {
    pub location: String,
    pub gtid_executed: String,
    pub stored_bytes: u64,
    pub data_bytes: u64,
    pub chunks: usize,
    pub sentinel: String,
}

fn list(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

/// Parses `64M`, `1G`, `512k`, `4096` (binary units).
pub fn parse_size(text: &str) -> anyhow::Result<usize> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, ""),
    };
    let value: usize = digits
        .parse()
        .with_context(|| format!("bytesPerChunk {text:?} is not a size such as 64M"))?;
    let factor: usize = match unit.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" | "ki" => 1 << 10,
        "m" | "mi" => 1 << 20,
        "g" | "gi" => 1 << 30,
        other => bail!("bytesPerChunk {text:?} has an unknown unit {other:?}; use k, M or G"),
    };
    let size = value.checked_mul(factor).context("bytesPerChunk is too large")?;
    if size < 4096 {
        bail!("bytesPerChunk {text:?} is below 4096 bytes");
    }
    Ok(size)
}

pub(crate) fn policy() -> RetryPolicy {
    RetryPolicy {
        attempts: 5,
        first_backoff: Duration::from_millis(500),
        max_backoff: Duration::from_secs(10),
    }
}

async fn server_now(conn: &mut mysql_async::Conn) -> anyhow::Result<jiff::Timestamp> {
    let text: Option<String> = conn
        .query_first("SELECT DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%dT%H:%i:%s.%fZ')")
        .await
        .context("cannot read the server's clock (UTC_TIMESTAMP(6))")?;
    let text = text.context("UTC_TIMESTAMP(6) returned no row")?;
    text.parse().with_context(|| format!("the server's clock {text:?} is not a timestamp"))
}

/// One compressed chunk on its way to the store.
struct Ready {
    index: u32,
    body: Vec<u8>,
    sha256: String,
}

async fn read_full(reader: &mut (impl AsyncRead + Unpin), cap: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(cap);
    while buf.len() < cap {
        let want = u64::try_from(cap - buf.len()).unwrap_or(u64::MAX);
        let read = (&mut *reader).take(want).read_buf(&mut buf).await?;
        if read == 0 {
            break;
        }
    }
    Ok(buf)
}

fn compress(raw: Vec<u8>, compression: ChunkCompression) -> std::io::Result<(Vec<u8>, String)> {
    let body = match compression {
        ChunkCompression::Zstd => zstd::bulk::compress(&raw, 3)?,
        ChunkCompression::None => raw,
    };
    let sha256 = data_encoding::HEXLOWER.encode(&Sha256::digest(&body));
    Ok((body, sha256))
}

/// Runs the backup step.
pub async fn run(args: BackupArgs) -> anyhow::Result<BackupOutcome> {
    let layout = ArtifactLayout::new(&args.backup_name)?;
    let location = args.storage.location(&layout)?;
    if let Some(expected) = args.expect_location.as_deref().filter(|l| !l.is_empty())
        && expected != location
    {
        bail!(
            "this Job would write {location}, not the recorded destination {expected}; create a new backup"
        );
    }
    let compression = ChunkCompression::parse(&args.compression).with_context(|| {
        format!("BLOODRAVEN_DUMP_COMPRESSION={:?} is neither zstd nor none", args.compression)
    })?;
    let chunk_size = parse_size(&args.bytes_per_chunk)?;
    let include = list(&args.include_schemas);
    let exclude = list(&args.exclude_schemas);
    let creds = creds::mysql(args.mysql_creds_dir.as_deref(), |n| std::env::var(n).ok())?;
    let target = Target { host: args.mysql_host.clone(), port: args.mysql_port, creds };
    let store = args.storage.store(true).await?;

    let mut conn = mysql_async::Conn::new(target.opts())
        .await
        .with_context(|| format!("cannot connect to the source {}:{}", target.host, target.port))?;
    let (server_id, server_uuid, version): (u32, String, String) = conn
        .query_first("SELECT @@server_id, @@server_uuid, @@version")
        .await
        .context("cannot read the source's identity")?
        .context("the identity query returned no row")?;
    if let Some(expected) = args.expect_server_id
        && expected != server_id
    {
        bail!(
            "backup stamp: the source {}:{} has server_id {server_id}, not {expected} (spec.sites[].serverID of site {}); refusing to dump another server",
            target.host,
            target.port,
            args.site
        );
    }
    let start = server_now(&mut conn).await?;
    let mut stamp = Stamp {
        kind: STAMP_KIND.to_owned(),
        version: FORMAT_VERSION,
        backup: ObjectRef {
            namespace: args.namespace.clone(),
            name: args.backup_name.clone(),
            uid: args.backup_uid.clone(),
        },
        source: ObjectRef {
            namespace: args.namespace.clone(),
            name: args.group.clone(),
            uid: args.group_uid.clone(),
        },
        pitr_archive_id: args.pitr_archive_id.clone(),
        site: args.site.clone(),
        server_id,
        dump_filters: DumpFilters {
            include_schemas: include.clone(),
            exclude_schemas: exclude.clone(),
        },
        server_clock: ServerClock { start, end: None },
        created_at: jiff::Timestamp::now(),
        extra: Extra::new(),
    };
    match store.create(&layout.stamp(), stamp.to_bytes()).await {
        Ok(()) => {}
        Err(error) if error.kind() == ErrorKind::AlreadyExists => bail!(
            "backup stamp: {} already exists in {}: a backup of this name was written there before (a retained artifact?); delete it or use another name",
            layout.stamp(),
            store.describe()
        ),
        Err(error) => return Err(error).context("backup stamp: cannot create it"),
    }
    info!(location = %location, site = %args.site, server_id, "backup started");

    let all: Vec<String> =
        conn.query("SHOW DATABASES").await.context("cannot list the source's schemas")?;
    let schemas: Vec<String> = all
        .into_iter()
        .filter(|s| !SYSTEM_SCHEMAS.contains(&s.as_str()))
        .filter(|s| include.is_empty() || include.contains(s))
        .filter(|s| !exclude.contains(s))
        .collect();
    let mysqldump_version = tool_version(&args.mysqldump).await;

    let (header, data_bytes, records) = if schemas.is_empty() {
        // Nothing to dump: the artifact only carries the GTID set.
        let gtid: String = conn
            .query_first("SELECT @@GLOBAL.gtid_executed")
            .await
            .context("cannot read gtid_executed")?
            .unwrap_or_default();
        let gtid: String = gtid.chars().filter(|c| !c.is_whitespace()).collect();
        let sql = format!(
            "SET @@SESSION.SQL_LOG_BIN= 0;\nSET @@GLOBAL.GTID_PURGED=/*!80000 '+'*/ '{gtid}';\n"
        );
        let data_bytes = sql.len() as u64;
        let (body, sha256) = compress(sql.into_bytes(), compression)?;
        let record = upload(&store, &layout, compression, Ready { index: 0, body, sha256 }).await?;
        (
            dumpfile::Header { gtid_purged: Some(gtid), ..Default::default() },
            data_bytes,
            vec![record],
        )
    } else {
        dump(&args, &target, &schemas, &store, &layout, compression, chunk_size).await?
    };
    let end = server_now(&mut conn).await?;
    let _ = conn.disconnect().await;

    let gtid_executed = header
        .gtid_purged
        .clone()
        .context("mysqldump wrote no SET @@GLOBAL.GTID_PURGED; is gtid_mode ON on the source?")?;
    let dump_json = DumpJson {
        dumper: DUMPER.to_owned(),
        version: FORMAT_VERSION,
        mysqldump_version,
        server_version: version,
        server_uuid,
        begin: start,
        gtid_executed: Some(gtid_executed.clone()),
        gtid_executed_inconsistent: false,
        binlog_file: header.binlog_file.clone(),
        binlog_position: header.binlog_pos,
        schemas,
        include_schemas: include,
        exclude_schemas: exclude,
        compression: compression.as_str().to_owned(),
        extra: Extra::new(),
    };
    put(&store, &layout.dump_json(), dump_json.to_bytes()).await.context("cannot write @.json")?;
    stamp.server_clock.end = Some(end);
    put(&store, &layout.stamp(), stamp.to_bytes())
        .await
        .context("backup stamp: cannot record serverClock.end")?;
    let done = DoneJson { end, data_bytes, chunks: records, extra: Extra::new() };
    let stored_bytes = done.stored_bytes();
    let chunks = done.chunks.len();
    put(&store, &layout.done_json(), done.to_bytes()).await.context("cannot write @.done.json")?;
    let sentinel = Sentinel {
        location: location.clone(),
        size_bytes: Some(stored_bytes),
        gtid_executed: Some(gtid_executed.clone()),
        binlog_file: header.binlog_file,
        binlog_pos: header.binlog_pos,
    }
    .to_line();
    info!(location = %location, stored_bytes, data_bytes, chunks, "backup finished");
    Ok(BackupOutcome { location, gtid_executed, stored_bytes, data_bytes, chunks, sentinel })
}

async fn put(store: &Store, key: &str, body: Vec<u8>) -> anyhow::Result<()> {
    retry_transient(policy(), || store.put(key, body.clone())).await?;
    Ok(())
}

async fn upload(
    store: &Store,
    layout: &ArtifactLayout,
    compression: ChunkCompression,
    chunk: Ready,
) -> anyhow::Result<ChunkRecord> {
    let key = layout.chunk(chunk.index, compression);
    let bytes = chunk.body.len() as u64;
    put(store, &key, chunk.body).await.with_context(|| format!("cannot upload {key}"))?;
    Ok(ChunkRecord {
        file: ArtifactLayout::chunk_file(chunk.index, compression),
        bytes,
        sha256: chunk.sha256,
    })
}

async fn tool_version(tool: &std::path::Path) -> String {
    match tokio::process::Command::new(tool).arg("--version").output().await {
        Ok(out) => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        Err(_) => String::new(),
    }
}

/// The last 16 KiB of a tool's stderr.
pub(crate) async fn tail_of(reader: impl AsyncRead + Unpin) -> String {
    tail(reader, 16 * 1024).await
}

/// Keeps the last `limit` bytes of a stream (a tool's stderr, for the failure message).
async fn tail(mut reader: impl AsyncRead + Unpin, limit: usize) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 8192];
    while let Ok(read) = reader.read(&mut buf).await {
        if read == 0 {
            break;
        }
        kept.extend_from_slice(&buf[..read]);
        if kept.len() > limit {
            kept.drain(..kept.len() - limit);
        }
    }
    String::from_utf8_lossy(&kept).trim().to_owned()
}

async fn dump(
    args: &BackupArgs,
    target: &Target,
    schemas: &[String],
    store: &Store,
    layout: &ArtifactLayout,
    compression: ChunkCompression,
    chunk_size: usize,
) -> anyhow::Result<(dumpfile::Header, u64, Vec<ChunkRecord>)> {
    let options = target.option_file()?;
    let mut child = tokio::process::Command::new(&args.mysqldump)
        .arg(options.arg())
        .args([
            "--single-transaction",
            "--source-data=2",
            "--set-gtid-purged=ON",
            "--routines",
            "--events",
            "--triggers",
            "--hex-blob",
            "--no-tablespaces",
            "--default-character-set=utf8mb4",
            "--databases",
        ])
        .args(schemas)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| {
            format!("cannot run {}; is BLOODRAVEN_MYSQLDUMP right?", args.mysqldump.display())
        })?;
    let mut stdout = child.stdout.take().context("mysqldump has no stdout")?;
    let stderr = child.stderr.take().context("mysqldump has no stderr")?;
    let stderr = tokio::spawn(tail(stderr, 16 * 1024));
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Ready>(1);
    let reader = tokio::spawn(async move {
        let mut head: Vec<u8> = Vec::new();
        let mut data_bytes = 0u64;
        let mut index = 0u32;
        loop {
            let raw = read_full(&mut stdout, chunk_size)
                .await
                .context("cannot read mysqldump's output")?;
            if raw.is_empty() {
                break;
            }
            if head.len() < HEADER_BYTES {
                let take = raw.len().min(HEADER_BYTES - head.len());
                head.extend_from_slice(&raw[..take]);
            }
            data_bytes += raw.len() as u64;
            let (body, sha256) = tokio::task::spawn_blocking(move || compress(raw, compression))
                .await
                .context("the compression task failed")??;
            if sender.send(Ready { index, body, sha256 }).await.is_err() {
                break;
            }
            index += 1;
        }
        anyhow::Ok((head, data_bytes))
    });
    let mut records = Vec::new();
    let mut upload_error = None;
    while let Some(chunk) = receiver.recv().await {
        match upload(store, layout, compression, chunk).await {
            Ok(record) => records.push(record),
            Err(error) => {
                upload_error = Some(error);
                break;
            }
        }
    }
    drop(receiver);
    if let Some(error) = upload_error {
        let _ = child.kill().await;
        return Err(error);
    }
    let (head, data_bytes) = reader.await.context("the dump reader failed")??;
    let status = child.wait().await.context("cannot wait for mysqldump")?;
    let stderr = stderr.await.unwrap_or_default();
    if !status.success() {
        bail!("mysqldump failed ({status}): {stderr}");
    }
    Ok((parse_header(&head), data_bytes, records))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("64M").unwrap(), 64 << 20);
        assert_eq!(parse_size("128M").unwrap(), 128 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("1").is_err());
        assert!(parse_size("12X").is_err());
        assert!(parse_size("").is_err());
    }
}
