//! The restore step: replay a plan into a loaded server and prove the result (000 line 878).
//!
//! Every segment goes through `mysqlbinlog --include-gtids=<segment> <file>` into one
//! `mysql --binary-mode` session (no stop-datetime). Before the replay the server's
//! `gtid_executed` must be the backup plus the target's own transactions (R2); after it, the
//! plan's certified set plus those (R6), else `PITRReplayMismatch`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;

use bloodraven_gtid::GtidSet;
use bloodraven_pitr::Plan;
use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, Command};

use crate::ReplayError;
use crate::lines::segment_line;

/// The client tools and how they reach the server.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The `mysql` client.
    pub mysql: PathBuf,
    /// `mysqlbinlog`.
    pub mysqlbinlog: PathBuf,
    /// Connection options for `mysql` (`--socket=…`, `--user=…`, …).
    pub connection: Vec<String>,
}

/// What a replay did.
#[derive(Debug, Clone)]
pub struct Replayed {
    /// The server's gtid_executed after the replay (equal to the expected set).
    pub executed: GtidSet,
    /// The `BLOODRAVEN_PITR_SEGMENT` lines, one per segment.
    pub lines: Vec<String>,
}

/// Reads `@@global.gtid_executed` on a fresh session.
pub async fn gtid_executed(tools: &Tools) -> Result<GtidSet, ReplayError> {
    let output = Command::new(&tools.mysql)
        .args(&tools.connection)
        .args(["--batch", "--skip-column-names", "-e", "SELECT @@global.gtid_executed"])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|error| {
            ReplayError::Failed(format!("cannot run {}: {error}", tools.mysql.display()))
        })?;
    if !output.status.success() {
        return Err(ReplayError::Failed(format!(
            "cannot read gtid_executed: mysql exit={}: {}",
            output.status.code().unwrap_or(-9),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    // mysql --batch escapes the newlines of a long set as `\n`.
    let text = String::from_utf8_lossy(&output.stdout).replace("\\n", "").replace('\n', "");
    text.trim().parse::<GtidSet>().map_err(|error| {
        ReplayError::Failed(format!("gtid_executed {:?} is not a GTID set: {error}", text.trim()))
    })
}

fn mismatch(what: &str, got: &GtidSet, expected: &GtidSet) -> ReplayError {
    ReplayError::Mismatch(format!(
        "{what}: gtid_executed is {}, expected {} (extra {}, missing {})",
        got.to_compact_string(),
        expected.to_compact_string(),
        got.difference(expected).to_compact_string(),
        expected.difference(got).to_compact_string()
    ))
}

async fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut text).await;
    }
    text.trim().to_owned()
}

/// Replays `plan` into the server `tools` reach. `staged` maps each segment's object key to
/// its staged file; `local` are the target's own transactions (kept, and expected at the end).
pub async fn replay(
    plan: &Plan,
    staged: &BTreeMap<String, PathBuf>,
    tools: &Tools,
    local: &GtidSet,
) -> Result<Replayed, ReplayError> {
    let replayed: GtidSet = plan.segments.iter().fold(GtidSet::new(), |mut all, segment| {
        all.union_with(&segment.gtids);
        all
    });
    // R2: the loaded baseline is the backup plus the target's own transactions.
    let baseline = plan.certified.difference(&replayed).union(local);
    let before = gtid_executed(tools).await?;
    if before != baseline {
        return Err(mismatch("the loaded baseline (R2)", &before, &baseline));
    }
    let mut files = Vec::with_capacity(plan.segments.len());
    for (k, segment) in plan.segments.iter().enumerate() {
        let path = staged
            .get(&segment.key)
            .ok_or_else(|| ReplayError::NotStaged { segment: k + 1, key: segment.key.clone() })?;
        files.push(path.clone());
    }
    // One OS pipe is the session's stdin; each segment's mysqlbinlog writes into it in turn,
    // so the stream never passes through this process (no copy, no scheduling hop).
    let (session, feed) = std::io::pipe().map_err(|error| {
        ReplayError::Failed(format!("cannot make the pipe into mysql: {error}"))
    })?;
    let mut mysql = Command::new(&tools.mysql)
        .args(&tools.connection)
        .arg("--binary-mode")
        .stdin(session)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| {
            ReplayError::Failed(format!("cannot run {}: {error}", tools.mysql.display()))
        })?;
    let mut lines = Vec::with_capacity(plan.segments.len());
    for (index, (segment, file)) in plan.segments.iter().zip(&files).enumerate() {
        let k = index + 1;
        let writer = feed.try_clone().map_err(|error| {
            ReplayError::Failed(format!("cannot share the pipe into mysql: {error} segment={k}"))
        })?;
        let mut binlog = Command::new(&tools.mysqlbinlog)
            .arg(format!("--include-gtids={}", segment.gtids.to_compact_string()))
            .arg(file)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| {
                ReplayError::Failed(format!(
                    "cannot run {}: {error} segment={k}",
                    tools.mysqlbinlog.display()
                ))
            })?;
        let status = binlog.wait().await.map_err(|error| {
            ReplayError::Failed(format!("waiting for mysqlbinlog: {error} segment={k}"))
        })?;
        if !status.success() {
            // mysql stopped reading (an error in the stream) breaks the pipe: its exit says why.
            let ended = tokio::time::timeout(std::time::Duration::from_secs(5), mysql.wait()).await;
            if let Ok(Ok(exited)) = ended {
                let stderr = stderr_of(&mut mysql).await;
                return Err(ReplayError::Failed(format!(
                    "mysql exit={} segment={k} ({stderr})",
                    exited.code().unwrap_or(-9)
                )));
            }
            let stderr = stderr_of(&mut binlog).await;
            let _ = mysql.start_kill();
            let _ = mysql.wait().await;
            return Err(ReplayError::Failed(format!(
                "mysqlbinlog exit={} segment={k} ({stderr})",
                status.code().unwrap_or(-9)
            )));
        }
        let line = segment_line(k, segment);
        tracing::info!(segment = k, site = %segment.site, file = %segment.file, "{line}");
        lines.push(line);
    }
    // The last writer gone, mysql reads end of input and ends the session.
    drop(feed);
    let status = mysql
        .wait()
        .await
        .map_err(|error| ReplayError::Failed(format!("waiting for mysql: {error}")))?;
    if !status.success() {
        let stderr = stderr_of(&mut mysql).await;
        return Err(ReplayError::Failed(format!(
            "mysql exit={} segment={} ({stderr})",
            status.code().unwrap_or(-9),
            plan.segments.len()
        )));
    }
    // R6: the replayed server holds exactly the certified set and the target's own.
    let expected = plan.certified.union(local);
    let executed = gtid_executed(tools).await?;
    if executed != expected {
        return Err(mismatch("the replay (R6)", &executed, &expected));
    }
    Ok(Replayed { executed, lines })
}
