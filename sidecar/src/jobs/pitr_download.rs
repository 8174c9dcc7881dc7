//! `pitr-download`: the second step of a PITR restore Job. Opens the archive (the archive
//! profile's storage), downloads, authenticates and indexes its rows
//! (`bloodraven_replay::download`), plans with dump-meta's `dump.json`, stages the segment
//! files under the staging folder and writes `coverage.json` (version 2, also on refusal) and
//! `plan.json` beside them.

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use bloodraven_archive::reader::ReaderOptions;
use bloodraven_pitr::{BackupMeta, History, Input, Limits, Plan, Request, coverage_json};
use bloodraven_replay::download::{Opened, download};
use bloodraven_replay::files::{DumpMetaFile, PlanFile};
use bloodraven_replay::lines::encode;
use bloodraven_store::ArchiveRoot;
use tracing::{error, info};

use super::dump_meta::write_json;
use super::storage::StorageArgs;

/// `pitr-download`'s settings.
#[derive(Debug, Clone, clap::Args)]
pub struct PitrDownloadArgs {
    /// dump-meta's output.
    #[arg(
        long = "dump-meta",
        env = "BLOODRAVEN_PITR_DUMP_META",
        default_value = "/pitr-dump-meta/dump.json"
    )]
    pub dump_meta: PathBuf,
    /// `pointInTime.stopTime` (RFC 3339, whole second); empty: latest.
    #[arg(long = "stop-time", env = "BLOODRAVEN_PITR_STOP_TIME", default_value = "")]
    pub stop_time: String,
    /// `pointInTime.excludeGtids`.
    #[arg(long = "exclude-gtids", env = "BLOODRAVEN_PITR_EXCLUDE_GTIDS", default_value = "")]
    pub exclude_gtids: String,
    /// `pointInTime.allowPartial`.
    #[arg(long = "allow-partial", env = "BLOODRAVEN_PITR_ALLOW_PARTIAL", default_value_t = false)]
    pub allow_partial: bool,
    /// The staging folder (`/pitr-binlogs`): staged rows, `coverage.json`, `plan.json`.
    #[arg(long = "staging", env = "BLOODRAVEN_PITR_STAGING", default_value = "/pitr-binlogs")]
    pub staging: PathBuf,
    /// The read binding's key snapshot (`passphrase` key mounted as a file) when the archive is
    /// encrypted; unset: the reader expects a plaintext archive.
    #[arg(long = "passphrase-file", env = "BLOODRAVEN_PITR_PASSPHRASE_FILE")]
    pub passphrase_file: Option<PathBuf>,
    /// The archive profile's storage (the archive is `binlogs` under its root).
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// Runs pitr-download: the plan written, or the refusal as the error (`<token>: <message>`).
pub async fn run(args: PitrDownloadArgs) -> anyhow::Result<Plan> {
    let text = std::fs::read(&args.dump_meta)
        .with_context(|| format!("cannot read {}; did dump-meta run?", args.dump_meta.display()))?;
    let meta: DumpMetaFile = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not dump-meta's dump.json", args.dump_meta.display()))?;
    let meta = BackupMeta::from(meta);
    let store = args.storage.store(false).await?;
    let root = ArchiveRoot::new(bloodraven_archive::ARCHIVE_DIR)
        .context("the archive root under the profile")?;
    std::fs::create_dir_all(&args.staging)
        .with_context(|| format!("cannot create {}", args.staging.display()))?;
    let key = bloodraven_replay::key::reader_key(args.passphrase_file.as_deref())?;
    let opened = download(&store, &root, ReaderOptions::new(key), Some(&args.staging))
        .await
        .context("pitr-download")?;
    let (history, open_refusal, staged_bytes) = match opened {
        Opened::Archive(downloaded) => (downloaded.history, None, downloaded.bytes),
        Opened::Refused(refusal) => (History::default(), Some(refusal), 0),
    };
    let request = Request {
        target: Some(args.stop_time.clone()).filter(|text| !text.is_empty()),
        exclude_gtids: args.exclude_gtids.clone(),
        allow_partial: args.allow_partial,
    };
    let result = bloodraven_pitr::plan(Input {
        history: &history,
        open_refusal: open_refusal.as_ref(),
        backup: &meta,
        request: &request,
        limits: Limits::default(),
    });
    write_json(
        &args.staging.join("coverage.json"),
        &coverage_json(&history.archive_id, &request, &result),
    )?;
    match result {
        Err(refusal) => {
            error!(token = %refusal.token, "download site binlogs");
            if let Some(full) = &refusal.full_set {
                print_line(&format!("BLOODRAVEN_PITR_DIVERGENT_SET gtids={}", encode(full)));
            }
            bail!("{refusal}")
        }
        Ok(plan) => {
            info!(
                witness = plan.witness.as_ref().map_or("", |w| w.gtid.as_str()),
                segments = plan.segments.len(),
                replayed = plan.segments.iter().map(|s| s.transactions).sum::<usize>(),
                divergent = plan.excluded_divergent.count() as u64,
                on_history = plan.on_history_excluded.count() as u64,
                downloaded_bytes = staged_bytes,
                "pitr plan"
            );
            let stop = request.target.as_deref().and_then(|text| text.parse().ok());
            let file = PlanFile {
                version: 1,
                archive_id: history.archive_id.clone(),
                stop,
                source_uid: meta.source_uid.clone(),
                plan: plan.clone(),
            };
            write_json(&args.staging.join("plan.json"), &file)?;
            Ok(plan)
        }
    }
}

#[expect(clippy::print_stdout, reason = "Job steps report their lines on stdout")]
fn print_line(line: &str) {
    println!("{line}");
}
