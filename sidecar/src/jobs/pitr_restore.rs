//! `pitr-restore`: the main container of a point-in-time restore Job (after the `dump-meta`
//! and `pitr-download` init containers). Loads the backup into the empty target
//! ([`super::restore`]), then replays pitr-download's plan and proves the result
//! ([`super::replay`]), and writes `BLOODRAVEN_PITR_RESULT` and the verdict as the container's
//! termination message, the verdict last (backup-and-restore document, "The restore Job" and
//! the verdict the operator accepts).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use super::replay::{PlanArgs, ReplayArgs, ReplayOutcome};
use super::restore::RestoreArgs;

/// The termination message budget when the operator renders none (the document's default).
pub const DEFAULT_MESSAGE_LIMIT: usize = 3_072;

/// `pitr-restore`'s settings: the load's and the replay's.
#[derive(Debug, Clone, clap::Args)]
pub struct PitrRestoreArgs {
    #[command(flatten)]
    pub restore: RestoreArgs,
    /// The replay and where its verdict goes.
    #[command(flatten)]
    pub replay: ReplayStepArgs,
}

/// The settings of a step that replays the staged plan into a loaded server and writes the
/// verdict as its termination message (`pitr-restore`, `verify --point-in-time`).
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayStepArgs {
    /// The plan and the source it names.
    #[command(flatten)]
    pub plan: PlanArgs,
    /// The mysqlbinlog executable.
    #[arg(long = "mysqlbinlog", env = "BLOODRAVEN_MYSQLBINLOG", default_value = "mysqlbinlog")]
    pub mysqlbinlog: PathBuf,
    /// Where the verdict is written (the container's `terminationMessagePath`); empty: nowhere.
    #[arg(
        long = "termination-log",
        env = "BLOODRAVEN_TERMINATION_LOG",
        default_value = "/dev/termination-log"
    )]
    pub termination_log: PathBuf,
    /// The termination message's budget in bytes.
    #[arg(
        long = "termination-message-limit",
        env = "BLOODRAVEN_TERMINATION_MESSAGE_LIMIT",
        default_value_t = DEFAULT_MESSAGE_LIMIT
    )]
    pub message_limit: usize,
}

impl ReplayStepArgs {
    /// The replay of the plan into the server at `host:port`.
    pub fn replay_args(
        &self,
        mysql_host: String,
        mysql_port: u16,
        mysql_creds_dir: Option<PathBuf>,
        mysql_client: PathBuf,
    ) -> ReplayArgs {
        ReplayArgs {
            plan: self.plan.clone(),
            target_local: String::new(),
            mysql_host,
            mysql_port,
            mysql_creds_dir,
            mysql_client,
            mysqlbinlog: self.mysqlbinlog.clone(),
        }
    }

    /// Writes the replay's lines as the termination message (the verdict last).
    pub fn write_verdict(&self, lines: &[String]) -> anyhow::Result<()> {
        let message = termination_message(lines, self.message_limit)?;
        write_termination(&self.termination_log, &message)
    }
}

/// The load, then the replay; the replay's lines (the verdict last).
pub async fn run(args: PitrRestoreArgs) -> anyhow::Result<ReplayOutcome> {
    let restore = args.restore.clone();
    // The load refuses a target that is not empty, so the target has no transactions of its
    // own (R2 expects none).
    let loaded = super::restore::run(restore.clone()).await.context("loading the backup")?;
    tracing::info!(
        gtid_executed = %loaded.gtid_executed,
        chunks = loaded.chunks,
        "backup loaded; replaying the plan"
    );
    let outcome = super::replay::run(args.replay.replay_args(
        restore.mysql_host,
        restore.mysql_port,
        restore.mysql_creds_dir,
        restore.mysql_client,
    ))
    .await?;
    args.replay.write_verdict(&outcome.lines)?;
    Ok(outcome)
}

/// The termination message: the result line and the verdict (the verdict last). Over
/// `limit`, the result line (the executed set) gives way to the verdict's digest alone; a
/// verdict that still does not fit is refused, never cut.
pub fn termination_message(lines: &[String], limit: usize) -> anyhow::Result<String> {
    let verdict = lines
        .iter()
        .rev()
        .find(|line| line.starts_with("BLOODRAVEN_PITR_VERDICT "))
        .context("the replay printed no verdict")?;
    let result = lines.iter().rev().find(|line| line.starts_with("BLOODRAVEN_PITR_RESULT "));
    if let Some(result) = result {
        let both = format!("{result}\n{verdict}\n");
        if both.len() <= limit {
            return Ok(both);
        }
    }
    let alone = format!("{verdict}\n");
    if alone.len() > limit {
        bail!(
            "PITRCoverageInvalid: the restore's verdict is {} bytes, over the termination message budget of {limit}",
            alone.len()
        );
    }
    Ok(alone)
}

/// Writes the termination message (an empty path: nowhere).
pub fn write_termination(path: &Path, message: &str) -> anyhow::Result<()> {
    if path.as_os_str().is_empty() {
        return Ok(());
    }
    std::fs::write(path, message)
        .with_context(|| format!("cannot write the verdict to {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(executed: &str) -> Vec<String> {
        vec![
            "BLOODRAVEN_PITR_TARGET_LOCAL gtids=".to_owned(),
            format!("BLOODRAVEN_PITR_RESULT v=1 executed={executed}"),
            "BLOODRAVEN_PITR_VERDICT v=2 mode=timestamp outcome=TargetCovered".to_owned(),
        ]
    }

    #[test]
    fn the_verdict_comes_last_and_the_executed_set_gives_way_first() {
        let message = termination_message(&lines("a:1-5"), 3_072).unwrap();
        assert_eq!(
            message,
            "BLOODRAVEN_PITR_RESULT v=1 executed=a:1-5\nBLOODRAVEN_PITR_VERDICT v=2 mode=timestamp outcome=TargetCovered\n"
        );
        let long = "x".repeat(4_000);
        let message = termination_message(&lines(&long), 3_072).unwrap();
        assert_eq!(message, "BLOODRAVEN_PITR_VERDICT v=2 mode=timestamp outcome=TargetCovered\n");
        let refused = termination_message(&lines("a:1"), 10).unwrap_err().to_string();
        assert!(refused.starts_with("PITRCoverageInvalid: "), "{refused}");
        assert!(termination_message(&lines("a:1")[..2], 3_072).is_err());
    }
}
