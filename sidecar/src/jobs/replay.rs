//! `replay`: the last step of a PITR restore Job, in the restore container after the dump is
//! loaded. Reads pitr-download's `plan.json`, replays every segment with `mysqlbinlog
//! --include-gtids=<segment>` into one `mysql --binary-mode` session
//! (`bloodraven_replay::replay`), proves `gtid_executed` equals the certified set and prints
//! the `BLOODRAVEN_PITR_*` lines and the verdict.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;
use bloodraven_gtid::GtidSet;
use bloodraven_replay::files::PlanFile;
use bloodraven_replay::lines::{
    VerdictSource, divergent_lines, result_line, target_local_line, verdict_line,
};
use bloodraven_replay::replay::{Tools, replay};

use super::client::Target;
use super::creds;

/// The staged plan and the source group the verdict names: shared by `replay` and
/// `pitr-restore`.
#[derive(Debug, Clone, clap::Args)]
pub struct PlanArgs {
    /// The staging folder pitr-download filled (`plan.json` and the staged rows).
    #[arg(long = "staging", env = "BLOODRAVEN_PITR_STAGING", default_value = "/pitr-binlogs")]
    pub staging: PathBuf,
    /// The source group's namespace and name (the verdict names them).
    #[arg(long = "source-namespace", env = "BLOODRAVEN_SOURCE_NAMESPACE", default_value = "")]
    pub source_namespace: String,
    #[arg(long = "source-name", env = "BLOODRAVEN_SOURCE_NAME", default_value = "")]
    pub source_name: String,
    /// The archive's encryption mode (the verdict names it).
    #[arg(
        long = "encryption-mode",
        env = "BLOODRAVEN_PITR_ENCRYPTION_MODE",
        default_value = "None"
    )]
    pub encryption_mode: String,
}

/// `replay`'s settings.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The plan and the source it names.
    #[command(flatten)]
    pub plan: PlanArgs,
    /// The target's own transactions beyond the backup (R2; empty for a fresh load).
    #[arg(long = "target-local", env = "BLOODRAVEN_PITR_TARGET_LOCAL", default_value = "")]
    pub target_local: String,
    /// The target's host.
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
    /// The mysqlbinlog executable.
    #[arg(long = "mysqlbinlog", env = "BLOODRAVEN_MYSQLBINLOG", default_value = "mysqlbinlog")]
    pub mysqlbinlog: PathBuf,
}

/// What the replay printed, in order (the caller prints them on stdout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayOutcome {
    pub executed: GtidSet,
    pub lines: Vec<String>,
}

/// Runs the replay; a failure is `BLOODRAVEN_PITR_FAILED: …` or `PITRReplayMismatch: …`.
pub async fn run(args: ReplayArgs) -> anyhow::Result<ReplayOutcome> {
    let path = args.plan.staging.join("plan.json");
    let text = std::fs::read(&path)
        .with_context(|| format!("cannot read {}; did pitr-download plan?", path.display()))?;
    let file: PlanFile = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not pitr-download's plan.json", path.display()))?;
    let local: GtidSet = args
        .target_local
        .parse()
        .with_context(|| format!("BLOODRAVEN_PITR_TARGET_LOCAL {:?}", args.target_local))?;
    let creds = creds::mysql(args.mysql_creds_dir.as_deref(), |n| std::env::var(n).ok())?;
    let target = Target { host: args.mysql_host.clone(), port: args.mysql_port, creds };
    let option_file = target.option_file()?;
    let tools = Tools {
        mysql: args.mysql_client.clone(),
        mysqlbinlog: args.mysqlbinlog.clone(),
        connection: vec![option_file.arg()],
    };
    let staged: BTreeMap<String, PathBuf> = file
        .plan
        .segments
        .iter()
        .map(|segment| (segment.key.clone(), args.plan.staging.join(&segment.key)))
        .collect();
    let mut lines = vec![target_local_line(&local)];
    if !file.plan.excluded_divergent.is_empty() {
        lines.extend(divergent_lines(&file.plan));
    }
    let replayed = replay(&file.plan, &staged, &tools, &local).await?;
    lines.extend(replayed.lines.iter().cloned());
    lines.push(result_line(&replayed.executed));
    let source = VerdictSource {
        archive: file.archive_id.clone(),
        encryption_mode: args.plan.encryption_mode.clone(),
        source_uid: file.source_uid.clone(),
        source_namespace: args.plan.source_namespace.clone(),
        source_name: args.plan.source_name.clone(),
    };
    lines.push(verdict_line(&file.plan, file.stop, &source, &replayed.executed));
    Ok(ReplayOutcome { executed: replayed.executed, lines })
}
