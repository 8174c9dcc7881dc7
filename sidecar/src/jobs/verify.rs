//! `verify`: the MysqlBackupVerification Job's step. Proves a backup loads: the dump's
//! metadata checked with the document's step-2 refusals (`dump-meta`), every chunk present
//! with its recorded size, a throwaway `mysqld` ([`super::scratch`]) loaded by the `restore`
//! step (each chunk's SHA-256 checked), the loaded `gtid_executed` equal to the dump's, and a
//! `CHECKSUM TABLE` of every user table.
//!
//! The verdict is the step's last stdout line, token first:
//! `BLOODRAVEN_VERIFY_COMPLETE gtidExecuted=<set, %-encoded> tables=<n>` (after one
//! `BLOODRAVEN_VERIFY_TABLE schema.table checksum=<n>` line per table), or
//! `BLOODRAVEN_VERIFY_FAILED <Token>: <message>`. The operator certifies a verification only
//! from the COMPLETE line of a Job that succeeded.
//!
//! With `pointInTime` (mode Timestamp or Latest, `BLOODRAVEN_VERIFY_POINT_IN_TIME=true`, after
//! the Job's `dump-meta` and `pitr-download` init containers staged the plan), the staged plan
//! is replayed into the scratch server after the load, exactly as `pitr-restore` replays it
//! ([`super::replay`]: every segment, then `gtid_executed` proved equal to the plan's certified
//! set), before the checksums; the replay's `BLOODRAVEN_PITR_*` lines precede the table lines,
//! and the result line and the verdict are written as the container's termination message
//! ([`super::pitr_restore::termination_message`]), its last action. A replay failure is
//! `PITRReplayFailed` (`BLOODRAVEN_PITR_FAILED: …`) or `PITRReplayMismatch`.

use std::path::PathBuf;

use anyhow::Context as _;
use bloodraven_backup::layout::ArtifactLayout;
use mysql_async::prelude::Queryable as _;
use tracing::info;

use super::dump_meta::{self, DumpMetaArgs};
use super::pitr_restore::{ReplayStepArgs, termination_message, write_termination};
use super::replay;
use super::restore::{self, RestoreArgs};
use super::scratch::{self, ScratchConfig};
use super::storage::StorageArgs;

/// The success verdict's first word.
pub const VERIFY_COMPLETE: &str = "BLOODRAVEN_VERIFY_COMPLETE";
/// The failure verdict's first word.
pub const VERIFY_FAILED: &str = "BLOODRAVEN_VERIFY_FAILED";
/// One table's checksum line.
pub const VERIFY_TABLE: &str = "BLOODRAVEN_VERIFY_TABLE";

/// A chunk is missing or shorter/longer than `@.done.json` records (the document's token for
/// an incomplete dump).
pub const INCOMPLETE: &str = "PITRBackupIncomplete";
/// A chunk's bytes do not match its recorded SHA-256, or do not decompress (ours: the
/// document names no token for a damaged dump chunk).
pub const DAMAGED: &str = "BackupArtifactDamaged";
/// The load into the scratch server failed for another reason, or left another GTID set.
pub const RESTORE_FAILED: &str = "RestoreFailed";
/// The step could not run (storage unreadable, the scratch server did not start).
pub const VERIFICATION_FAILED: &str = "VerificationFailed";
/// `mysqlbinlog` or `mysql` failed during the replay (`BLOODRAVEN_PITR_FAILED: …`).
pub const REPLAY_FAILED: &str = "PITRReplayFailed";

/// `verify`'s settings (the verification Job's environment).
#[derive(Debug, Clone, clap::Args)]
pub struct VerifyArgs {
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
    /// The `mysqld` executable of the scratch server.
    #[arg(long = "mysqld", env = "BLOODRAVEN_MYSQLD", default_value = "mysqld")]
    pub mysqld: PathBuf,
    /// The mysql client executable.
    #[arg(long = "mysql-client", env = "BLOODRAVEN_MYSQL", default_value = "mysql")]
    pub mysql_client: PathBuf,
    /// `--basedir` of the scratch server (unset: mysqld's own).
    #[arg(long = "mysql-basedir", env = "BLOODRAVEN_MYSQL_BASEDIR")]
    pub basedir: Option<PathBuf>,
    /// `--lc-messages-dir` of the scratch server.
    #[arg(long = "mysql-lc-messages-dir", env = "BLOODRAVEN_MYSQL_LC_MESSAGES_DIR")]
    pub lc_messages_dir: Option<PathBuf>,
    /// `--plugin-dir` of the scratch server.
    #[arg(long = "mysql-plugin-dir", env = "BLOODRAVEN_MYSQL_PLUGIN_DIR")]
    pub plugin_dir: Option<PathBuf>,
    /// An empty folder for the scratch server (the Job's scratch volume).
    #[arg(
        long = "scratch",
        env = "BLOODRAVEN_VERIFY_SCRATCH",
        default_value = "/var/lib/mysql-verify"
    )]
    pub scratch: PathBuf,
    #[command(flatten)]
    pub storage: StorageArgs,
    /// Replay the staged plan after the load (mode Timestamp or Latest).
    #[arg(
        long = "point-in-time",
        env = "BLOODRAVEN_VERIFY_POINT_IN_TIME",
        default_value_t = false
    )]
    pub point_in_time: bool,
    /// The replay of the staged plan and where its verdict goes (with `--point-in-time`).
    #[command(flatten)]
    pub replay: ReplayStepArgs,
}

/// A verification that proved the backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The loaded (and, with a replay, replayed) server's `gtid_executed`: the dump's, or the
    /// plan's certified set.
    pub gtid_executed: String,
    /// `(schema.table, CHECKSUM TABLE)` of every user table.
    pub tables: Vec<(String, Option<u64>)>,
    /// The replay's `BLOODRAVEN_PITR_*` lines, the verdict last (empty without a replay).
    pub replay: Vec<String>,
}

impl Verified {
    /// The verdict lines: the replay's, the tables', the COMPLETE line last.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.replay.clone();
        lines.extend(self.tables.iter().map(|(table, sum)| {
            let sum = sum.map_or_else(|| "NULL".to_owned(), |s| s.to_string());
            format!("{VERIFY_TABLE} {table} checksum={sum}")
        }));
        lines.push(format!(
            "{VERIFY_COMPLETE} gtidExecuted={} tables={}",
            bloodraven_backup::sentinel::encode(&self.gtid_executed),
            self.tables.len()
        ));
        lines
    }
}

/// Why a verification failed: the token and the message (the FAILED line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{token}: {message}")]
pub struct Refusal {
    pub token: String,
    pub message: String,
}

impl Refusal {
    fn new(token: &str, error: &anyhow::Error) -> Self {
        Refusal { token: token.to_owned(), message: format!("{error:#}") }
    }

    /// The FAILED verdict line.
    pub fn line(&self) -> String {
        format!("{VERIFY_FAILED} {self}")
    }
}

/// A `<Token>: <message>` refusal of `dump-meta` (the planner's), else `None` (a step error).
pub fn leading_token(message: &str) -> Option<(&str, &str)> {
    let (token, rest) = message.split_once(": ")?;
    let is_token = token.len() > 4
        && token.starts_with("PITR")
        && token.bytes().all(|b| b.is_ascii_alphanumeric());
    is_token.then_some((token, rest))
}

/// The token of a failed replay, from its error chain (pure): the planner's or the proof's
/// leading token (`PITRReplayMismatch: …`), `BLOODRAVEN_PITR_FAILED: …` as PITRReplayFailed
/// (the line kept whole), else the step could not run.
pub fn classify_replay_error(chain: &str) -> Refusal {
    if let Some((token, message)) = leading_token(chain) {
        return Refusal { token: token.to_owned(), message: message.to_owned() };
    }
    let token = if chain.starts_with("BLOODRAVEN_PITR_FAILED: ") {
        REPLAY_FAILED
    } else {
        VERIFICATION_FAILED
    };
    Refusal { token: token.to_owned(), message: chain.to_owned() }
}

/// The token of a failed chunk check or load, from the restore step's error chain (pure).
pub fn classify_load_error(chain: &str) -> &'static str {
    if chain.contains("the dump is damaged: chunk") && chain.contains("is missing") {
        INCOMPLETE
    } else if chain.contains("the dump is damaged: chunk") && chain.contains("@.done.json records")
    {
        if chain.contains("SHA-256") { DAMAGED } else { INCOMPLETE }
    } else if chain.contains("the dump is damaged") {
        DAMAGED
    } else {
        RESTORE_FAILED
    }
}

/// Runs the step.
pub async fn run(args: VerifyArgs) -> Result<Verified, Refusal> {
    let layout = ArtifactLayout::new(&args.backup_name)
        .map_err(|error| Refusal::new(VERIFICATION_FAILED, &error.into()))?;
    std::fs::create_dir_all(&args.scratch)
        .with_context(|| format!("cannot create the scratch folder {}", args.scratch.display()))
        .map_err(|error| Refusal::new(VERIFICATION_FAILED, &error))?;

    // 1. The dump's metadata, with the document's step-2 tokens.
    let meta = DumpMetaArgs {
        backup_name: args.backup_name.clone(),
        backup_uid: args.backup_uid.clone(),
        source_uid: args.source_uid.clone(),
        gtid_executed: args.gtid_executed.clone(),
        out: args.scratch.join("dump.json"),
        storage: args.storage.clone(),
    };
    if let Err(error) = dump_meta::run(meta).await {
        let text = format!("{error:#}");
        return Err(match leading_token(&text) {
            Some((token, message)) => {
                Refusal { token: token.to_owned(), message: message.to_owned() }
            }
            None => Refusal::new(VERIFICATION_FAILED, &error),
        });
    }

    // 2. Every chunk present with its recorded size, before a server is started.
    let store = args
        .storage
        .store(false)
        .await
        .map_err(|error| Refusal::new(VERIFICATION_FAILED, &error))?;
    if let Err(error) = restore::check_artifact(&store, &layout, &args.backup_uid).await {
        let token = classify_load_error(&format!("{error:#}"));
        let token = if token == RESTORE_FAILED { VERIFICATION_FAILED } else { token };
        return Err(Refusal::new(token, &error));
    }

    // 3. The throwaway server and the load.
    let config = ScratchConfig {
        mysqld: args.mysqld.clone(),
        basedir: args.basedir.clone(),
        lc_messages_dir: args.lc_messages_dir.clone(),
        plugin_dir: args.plugin_dir.clone(),
        dir: args.scratch.clone(),
    };
    let server =
        scratch::start(&config).await.map_err(|error| Refusal::new(VERIFICATION_FAILED, &error))?;
    let creds_dir = args.scratch.join("creds");
    write_creds(&creds_dir, &server.target.creds.user, &server.target.creds.password)
        .map_err(|error| Refusal::new(VERIFICATION_FAILED, &error))?;
    let load = RestoreArgs {
        backup_name: args.backup_name.clone(),
        backup_uid: args.backup_uid.clone(),
        mysql_host: server.target.host.clone(),
        mysql_port: server.target.port,
        mysql_creds_dir: Some(creds_dir.clone()),
        mysql_client: args.mysql_client.clone(),
        in_place: false,
        storage: args.storage.clone(),
    };
    let loaded = restore::run(load).await;
    let loaded = match loaded {
        Ok(loaded) => loaded,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&creds_dir);
            return Err(Refusal::new(classify_load_error(&format!("{error:#}")), &error));
        }
    };

    // 4. With pointInTime: the staged plan replayed into the loaded server, and its
    // gtid_executed proved equal to the plan's certified set.
    let replayed = if args.point_in_time {
        info!(gtid_executed = %loaded.gtid_executed, "backup loaded; replaying the staged plan");
        let outcome = replay::run(args.replay.replay_args(
            server.target.host.clone(),
            server.target.port,
            Some(creds_dir.clone()),
            args.mysql_client.clone(),
        ))
        .await;
        match outcome {
            Ok(outcome) => Some(outcome),
            Err(error) => {
                let _ = std::fs::remove_dir_all(&creds_dir);
                return Err(classify_replay_error(&format!("{error:#}")));
            }
        }
    } else {
        None
    };
    let _ = std::fs::remove_dir_all(&creds_dir);

    // 5. Every user table readable, with its checksum.
    let tables =
        checksums(&server.target).await.map_err(|error| Refusal::new(RESTORE_FAILED, &error))?;
    drop(server);
    let verified = match replayed {
        None => Verified { gtid_executed: loaded.gtid_executed, tables, replay: Vec::new() },
        Some(outcome) => {
            // The verdict as the termination message, the step's last action.
            let message = termination_message(&outcome.lines, args.replay.message_limit)
                .map_err(|error| classify_replay_error(&format!("{error:#}")))?;
            write_termination(&args.replay.termination_log, &message)
                .map_err(|error| Refusal::new(VERIFICATION_FAILED, &error))?;
            Verified {
                gtid_executed: outcome.executed.to_compact_string(),
                tables,
                replay: outcome.lines,
            }
        }
    };
    info!(
        gtid_executed = %verified.gtid_executed,
        tables = verified.tables.len(),
        replayed = !verified.replay.is_empty(),
        "verified"
    );
    Ok(verified)
}

fn write_creds(dir: &std::path::Path, user: &str, password: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot restrict {}", dir.display()))?;
    std::fs::write(dir.join("MYSQL_USER"), user).context("cannot write the scratch account")?;
    std::fs::write(dir.join("MYSQL_PASSWORD"), password)
        .context("cannot write the scratch account's password")?;
    Ok(())
}

async fn checksums(target: &super::client::Target) -> anyhow::Result<Vec<(String, Option<u64>)>> {
    let mut conn = mysql_async::Conn::new(target.opts())
        .await
        .context("cannot connect to the scratch server after the load")?;
    let tables: Vec<(String, String)> = conn
        .query(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES \
             WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN \
             ('mysql','sys','information_schema','performance_schema') ORDER BY 1, 2",
        )
        .await
        .context("cannot list the loaded tables")?;
    let mut out = Vec::with_capacity(tables.len());
    for (schema, table) in tables {
        let quoted = format!("`{}`.`{}`", schema.replace('`', "``"), table.replace('`', "``"));
        let row: Option<(String, Option<u64>)> = conn
            .query_first(format!("CHECKSUM TABLE {quoted}"))
            .await
            .with_context(|| format!("CHECKSUM TABLE {quoted} failed on the loaded server"))?;
        out.push((format!("{schema}.{table}"), row.and_then(|(_, sum)| sum)));
    }
    let _ = conn.disconnect().await;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dump_meta_tokens_lead_and_step_errors_do_not() {
        assert_eq!(
            leading_token("PITRBackupIncomplete: no @.done.json"),
            Some(("PITRBackupIncomplete", "no @.done.json"))
        );
        assert_eq!(leading_token("cannot read @.json (b1/@.json): timeout"), None);
        assert_eq!(leading_token("PITR: x"), None);
    }

    #[test]
    fn chunk_problems_get_their_tokens() {
        assert_eq!(
            classify_load_error("the dump is damaged: chunk b1/dump-00000.sql.zst is missing"),
            INCOMPLETE
        );
        assert_eq!(
            classify_load_error(
                "the dump is damaged: chunk b1/dump-00000.sql.zst has 10 bytes, @.done.json records 20"
            ),
            INCOMPLETE
        );
        assert_eq!(
            classify_load_error(
                "the load stopped part way (mysql client: ): the dump is damaged: chunk k has SHA-256 ab, @.done.json records cd"
            ),
            DAMAGED
        );
        assert_eq!(classify_load_error("the dump is damaged: chunk k is not valid zstd"), DAMAGED);
        assert_eq!(
            classify_load_error("the load failed (exit status: 1): ERROR 1064"),
            RESTORE_FAILED
        );
    }

    #[test]
    fn replay_failures_get_their_tokens() {
        let mismatch = classify_replay_error("PITRReplayMismatch: the replay (R6) left a:1-3");
        assert_eq!(
            (mismatch.token.as_str(), mismatch.message.as_str()),
            ("PITRReplayMismatch", "the replay (R6) left a:1-3")
        );
        let failed = classify_replay_error("BLOODRAVEN_PITR_FAILED: mysql exit=1 segment=2 (x)");
        assert_eq!(failed.token, REPLAY_FAILED);
        assert_eq!(failed.message, "BLOODRAVEN_PITR_FAILED: mysql exit=1 segment=2 (x)");
        assert_eq!(
            classify_replay_error("cannot read /pitr-binlogs/plan.json; did pitr-download plan?")
                .token,
            VERIFICATION_FAILED
        );
    }

    #[test]
    fn the_complete_line_comes_last() {
        let verified = Verified {
            gtid_executed: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5".to_owned(),
            tables: vec![("app.orders".to_owned(), Some(42)), ("app.empty".to_owned(), None)],
            replay: Vec::new(),
        };
        let lines = verified.lines();
        assert_eq!(lines[0], "BLOODRAVEN_VERIFY_TABLE app.orders checksum=42");
        assert_eq!(lines[1], "BLOODRAVEN_VERIFY_TABLE app.empty checksum=NULL");
        assert!(lines[2].starts_with("BLOODRAVEN_VERIFY_COMPLETE gtidExecuted="), "{}", lines[2]);
        assert!(lines[2].ends_with(" tables=2"), "{}", lines[2]);
    }
}
