//! The CLI verbs of guided operations, on the same [`WriteOp`], preflight and preview as the
//! console: `promote`, `ack-planned-failover-hold`, `reclone-queue drain|release`, `backup`,
//! `verify-backup`, `pitr restore-new` ([`pitr_new`]).
//!
//! Each verb reads the group, prints the preflight and the exact request, and sends it only
//! after a confirmation: typing the confirmation name at a terminal, or `--yes --confirm
//! <name>`. `--dry-run` prints and sends nothing. A conflict re-reads and asks again at a
//! terminal; with `--yes` it stops (never a blind retry).

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bloodraven_crd::{MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};
use clap::{Args, ValueEnum};
use kube::Api;
use serde_json::json;

use super::config::Config;
use super::send::{self, Prepared, SendError, Session};
use super::{GroupRef, WriteOp, confirmation_name, data_loss_statement};
use crate::client::{WriteSwitch, connect_guarded};
use crate::journal::{self, Journal};

pub mod pitr_new;
mod wait;

pub use pitr_new::PitrRestoreNewArgs;

pub(crate) use wait::newest_ignored;

/// Flags every write verb takes.
#[derive(Clone, Debug, Default, Args)]
pub struct WriteArgs {
    /// Print the preflight and the exact request; send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask: send once the preflight allows it (needs --confirm).
    #[arg(long, requires = "confirm")]
    pub yes: bool,
    /// The name the confirmation asks for: the target site of a promotion, else the group.
    #[arg(long, value_name = "NAME")]
    pub confirm: Option<String>,
    /// Output format of the result.
    #[arg(short = 'o', long, value_enum, default_value_t = ResultFormat::Text)]
    pub output: ResultFormat,
    /// Follow the operation to its outcome; exit non-zero on a failed one.
    #[arg(long)]
    pub wait: bool,
    /// How long --wait follows before giving up.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub wait_timeout: u64,
    /// The audit journal's folder (default: $XDG_STATE_HOME/bloodraven/journal).
    #[arg(long, env = "BLOODRAVEN_JOURNAL_DIR", value_name = "DIR")]
    pub journal_dir: Option<PathBuf>,
}

/// `-o` of the write verbs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ResultFormat {
    #[default]
    Text,
    Json,
}

/// `promote <group> <site>`.
#[derive(Clone, Debug, Args)]
pub struct PromoteArgs {
    /// The group.
    pub group: String,
    /// The PrimaryCandidate site to promote.
    pub site: String,
    /// The per-request lag-wait bound (1s to 1h, e.g. 30s).
    #[arg(long, value_name = "DURATION")]
    pub max_lag_wait: Option<String>,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// `ack-planned-failover-hold <group>`.
#[derive(Clone, Debug, Args)]
pub struct AckArgs {
    /// The group.
    pub group: String,
    /// The run to acknowledge (default: the standing hold's run).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// The decisions about a Held reclone queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum QueueDecision {
    /// Keep the primary's data: status.restoreReclones.phase: Draining.
    Drain,
    /// Release the hold (or accept the stale copy): remove status.restoreReclones.
    Release,
}

/// `reclone-queue <group> drain|release`.
#[derive(Clone, Debug, Args)]
pub struct RecloneQueueArgs {
    /// The group.
    pub group: String,
    /// drain or release.
    #[arg(value_enum)]
    pub decision: QueueDecision,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// `backup <group>`.
#[derive(Clone, Debug, Args)]
pub struct BackupArgs {
    /// The group.
    pub group: String,
    /// The backup profile (default: the group's only profile).
    #[arg(long, value_name = "P")]
    pub profile: Option<String>,
    /// Back up from this site (spec.sourceSite), e.g. a held site.
    #[arg(long, value_name = "S")]
    pub source_site: Option<String>,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// `verify-backup <backup>`.
#[derive(Clone, Debug, Args)]
pub struct VerifyBackupArgs {
    /// The MysqlBackup to verify.
    pub backup: String,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// One of the write verbs, parsed.
#[derive(Clone, Debug)]
pub enum Verb {
    Promote(PromoteArgs),
    Ack(AckArgs),
    RecloneQueue(RecloneQueueArgs),
    Backup(BackupArgs),
    VerifyBackup(VerifyBackupArgs),
    /// `pitr restore-new`, with the operation built from its plan ([`pitr_new::operation`]).
    PitrRestoreNew(Box<PitrRestoreNewArgs>, Box<WriteOp>),
}

impl Verb {
    fn write(&self) -> &WriteArgs {
        match self {
            Verb::Promote(args) => &args.write,
            Verb::Ack(args) => &args.write,
            Verb::RecloneQueue(args) => &args.write,
            Verb::Backup(args) => &args.write,
            Verb::VerifyBackup(args) => &args.write,
            Verb::PitrRestoreNew(args, _) => &args.write,
        }
    }
}

/// Where the verb reads and writes, besides the kubeconfig.
#[derive(Clone, Debug, Default)]
pub struct Where {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub namespace: Option<String>,
    /// The config file (default: the XDG one).
    pub config: Option<PathBuf>,
}

/// Builds the operation from the verb and the group as read.
async fn operation(
    client: &kube::Client,
    namespace: &str,
    verb: &Verb,
    now: jiff::Timestamp,
) -> anyhow::Result<WriteOp> {
    let read_group = |name: String| {
        let api: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), namespace);
        async move {
            api.get_opt(&name)
                .await
                .with_context(|| format!("reading group {namespace}/{name}"))?
                .with_context(|| format!("group {namespace}/{name} does not exist"))
        }
    };
    Ok(match verb {
        Verb::Promote(args) => WriteOp::RequestPlannedFailover {
            group: GroupRef::new(namespace, &args.group),
            target: args.site.clone(),
            max_lag_wait: args.max_lag_wait.clone(),
        },
        Verb::Ack(args) => {
            let run_id = match &args.run_id {
                Some(run_id) => run_id.clone(),
                None => read_group(args.group.clone())
                    .await?
                    .status
                    .and_then(|status| status.planned_failover_hold)
                    .and_then(|hold| hold.run_id)
                    .with_context(|| format!("group {namespace}/{} has no standing hold with a run ID; pass --run-id", args.group))?,
            };
            WriteOp::AcknowledgeHold { group: GroupRef::new(namespace, &args.group), run_id }
        }
        Verb::RecloneQueue(args) => {
            let group = GroupRef::new(namespace, &args.group);
            match args.decision {
                QueueDecision::Drain => WriteOp::RecloneQueueDrain { group },
                QueueDecision::Release => WriteOp::RecloneQueueRelease { group },
            }
        }
        Verb::Backup(args) => {
            let profile = match &args.profile {
                Some(profile) => profile.clone(),
                None => {
                    let group = read_group(args.group.clone()).await?;
                    let profiles: Vec<String> = group
                        .spec
                        .backup
                        .map(|backup| backup.profiles.into_iter().map(|p| p.name).collect())
                        .unwrap_or_default();
                    match profiles.as_slice() {
                        [one] => one.clone(),
                        [] => bail!("group {namespace}/{} has no backup profile", args.group),
                        many => bail!(
                            "group {namespace}/{} has several backup profiles ({}); pass --profile",
                            args.group,
                            many.join(", ")
                        ),
                    }
                }
            };
            let group = GroupRef::new(namespace, &args.group);
            let name = WriteOp::backup_name(&args.group, &profile, now);
            match &args.source_site {
                Some(site) => WriteOp::BackupFromSite { group, name, profile, site: site.clone() },
                None => WriteOp::CreateBackup { group, name, profile },
            }
        }
        Verb::VerifyBackup(args) => {
            let api: Api<MysqlBackup> = Api::namespaced(client.clone(), namespace);
            let backup = api
                .get_opt(&args.backup)
                .await
                .with_context(|| format!("reading backup {namespace}/{}", args.backup))?
                .with_context(|| format!("backup {namespace}/{} does not exist", args.backup))?;
            WriteOp::CreateVerification {
                group: GroupRef::new(namespace, &backup.spec.failover_group_ref.name),
                name: WriteOp::verification_name(&args.backup, now),
                profile: backup.spec.profile_name.clone(),
                backup: args.backup.clone(),
            }
        }
        Verb::PitrRestoreNew(_, op) => (**op).clone(),
    })
}

fn show(out: &mut dyn std::io::Write, prepared: &Prepared) -> std::io::Result<()> {
    writeln!(out, "{}", prepared.op.summary())?;
    writeln!(out, "preflight:")?;
    for line in prepared.preflight.render().lines() {
        writeln!(out, "  {line}")?;
    }
    match &prepared.patch {
        Ok(patch) => {
            writeln!(out, "request:")?;
            writeln!(out, "  {} {} ({})", patch.verb.method(), patch.path, patch.content_type)?;
            writeln!(out, "  {}", serde_json::to_string(&patch.body).unwrap_or_default())?;
            if let Some(rv) = &patch.precondition.decided_on_resource_version {
                writeln!(out, "  decided on resourceVersion {rv}")?;
            }
        }
        Err(error) => writeln!(out, "request: none ({error})")?,
    }
    let primary_down = primary_down(prepared);
    if let Some(statement) = data_loss_statement(&prepared.op, primary_down) {
        writeln!(out, "data loss: {statement}")?;
    }
    Ok(())
}

/// Whether the group `prepared` was decided on has no writable primary — no active site, or
/// one the status does not report writable (NoPrimary keeps the failed site as the active
/// one), or the group was not read: what the data-loss statement depends on, read as the
/// preflight's PrimaryWritable check reads it.
pub(crate) fn primary_down(prepared: &Prepared) -> bool {
    let Some(status) = prepared.observed.group.as_ref().and_then(|group| group.status.as_ref())
    else {
        return true;
    };
    let Some(active) = status.active_site.as_deref() else { return true };
    !status.sites.iter().any(|site| {
        site.name == active && site.state == Some(bloodraven_crd::group::SiteState::Writable)
    })
}

/// Asks at the terminal for the confirmation name; `Ok(false)` on anything else.
pub(crate) fn ask(name: &str) -> std::io::Result<bool> {
    let mut stderr = std::io::stderr();
    write!(stderr, "type {name:?} to confirm (anything else cancels): ")?;
    stderr.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim() == name)
}

/// The console config `at` names (or the default path's), with the path it was read from.
pub(crate) fn load_config(at: &Where) -> anyhow::Result<(Option<PathBuf>, Config)> {
    let config_path = at.config.clone().or_else(Config::default_path);
    let config = match &config_path {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    Ok((config_path, config))
}

/// A write session over `client`, journaling to `journal_dir` (or the default journal folder).
pub(crate) fn open_session(
    client: kube::Client,
    context: String,
    switch: WriteSwitch,
    journal_dir: Option<&PathBuf>,
) -> anyhow::Result<Session> {
    let journal_dir = match journal_dir {
        Some(dir) => dir.clone(),
        None => journal::default_dir()?,
    };
    Ok(Session { client, context, switch, journal: Arc::new(Journal::open(&journal_dir)?) })
}

/// Runs a write verb. `Ok(())` once the operation was sent (and, with --wait, succeeded).
pub async fn run(verb: &Verb, at: &Where) -> anyhow::Result<()> {
    let write = verb.write();
    let (config_path, config) = load_config(at)?;
    let switch = WriteSwitch::read_only();
    let (client, connection) =
        connect_guarded(at.kubeconfig.as_deref(), at.context.as_deref(), switch.clone()).await?;
    let pinned = config.pinned_by(&connection.context).map(str::to_owned);
    if pinned.is_none() {
        switch.set(true);
    }
    let namespace = at.namespace.clone().unwrap_or_else(|| connection.default_namespace.clone());
    let now = jiff::Timestamp::now();
    let op = operation(&client, &namespace, verb, now).await?;
    let mut prepared = send::prepare(&client, op.clone(), now).await?;
    let mut stdout = std::io::stdout();
    let json = write.output == ResultFormat::Json;
    // A new group's corrected manifest is also saved for review, before anything is asked.
    let manifest = match &prepared.patch {
        Ok(patch) => {
            let dir = match &write.journal_dir {
                Some(dir) => dir.clone(),
                None => journal::default_dir()?,
            };
            super::review::save(&dir, &prepared.op, patch)?
        }
        Err(_) => None,
    };
    if write.dry_run {
        if json {
            let value = json!({
                "operation": prepared.op,
                "preflight": prepared.preflight,
                "confirmable": prepared.confirmable(),
                "request": prepared.patch.as_ref().ok(),
                "manifest": manifest.as_ref().map(|path| path.display().to_string()),
            });
            writeln!(stdout, "{}", serde_json::to_string_pretty(&value)?)?;
        } else {
            show(&mut stdout, &prepared)?;
            if let Some(path) = &manifest {
                writeln!(stdout, "manifest saved for review: {}", path.display())?;
            }
        }
        return Ok(());
    }
    if let Some(path) = &manifest {
        eprintln_safe(&format!("manifest saved for review: {}", path.display()));
    }
    if let Some(pattern) = pinned {
        bail!(
            "context {} is pinned read-only by {pattern:?} in {}: nothing was sent",
            connection.context,
            config_path.map(|path| path.display().to_string()).unwrap_or_default()
        );
    }
    let session = open_session(
        client.clone(),
        connection.context.clone(),
        switch,
        write.journal_dir.as_ref(),
    )?;
    let interactive = !write.yes && std::io::stdin().is_terminal();
    if !write.yes && !interactive {
        bail!(
            "non-interactive use needs --yes --confirm {}: nothing was sent",
            confirmation_name(&prepared.op)
        );
    }
    let access = send::access(&client, &prepared).await;
    if access.allowed == Some(false) {
        bail!(
            "{} is {} to send {}: nothing was sent",
            access.user.as_deref().unwrap_or("this identity"),
            access.describe(),
            prepared.op.summary()
        );
    }
    let user = access.user;
    let (sent, sent_at) = loop {
        show(&mut std::io::stderr(), &prepared)?;
        if !prepared.confirmable() {
            bail!("the preflight refuses {}: nothing was sent", prepared.op.summary());
        }
        let name = confirmation_name(&prepared.op).to_owned();
        let confirmed =
            if write.yes { write.confirm.as_deref() == Some(name.as_str()) } else { ask(&name)? };
        if !confirmed {
            bail!("not confirmed (the confirmation is {name:?}): nothing was sent");
        }
        let at = jiff::Timestamp::now();
        match send::send(&session, &prepared, user.as_deref(), &super::confirm::Origin::Cli, at)
            .await
        {
            Ok(sent) => break (sent, at),
            Err(SendError::Conflict { what, message }) => {
                eprintln_safe(&format!(
                    "{what} changed since it was read ({message}); nothing was written. Re-reading."
                ));
                prepared = send::prepare(&client, op.clone(), jiff::Timestamp::now()).await?;
                if write.yes {
                    show(&mut std::io::stderr(), &prepared)?;
                    bail!(
                        "{what} changed since it was read; check the new preflight and run again"
                    );
                }
            }
            Err(error) => return Err(error.into()),
        }
    };
    if json {
        writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&json!({ "operation": prepared.op, "sent": sent }))?
        )?;
    } else {
        writeln!(
            stdout,
            "sent: {} (operation {}, resourceVersion {})",
            prepared.op.summary(),
            sent.operation_id,
            sent.resource_version.as_deref().unwrap_or("?")
        )?;
    }
    if write.wait {
        let timeout = Duration::from_secs(write.wait_timeout);
        follow(&client, &prepared, sent_at, timeout, &mut stdout).await?;
    }
    Ok(())
}

fn eprintln_safe(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Follows an operation sent at `sent_at` to its outcome (`--wait`).
async fn follow(
    client: &kube::Client,
    prepared: &Prepared,
    sent_at: jiff::Timestamp,
    timeout: Duration,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    let group_ref = prepared.op.group().clone();
    let before_run = prepared
        .observed
        .group
        .as_ref()
        .and_then(|group| group.status.as_ref())
        .and_then(|status| status.planned_failover.as_ref())
        .and_then(|run| run.run_id.clone());
    let mut last = String::new();
    loop {
        let outcome: Option<Result<String, String>> = match &prepared.op {
            WriteOp::RequestPlannedFailover { .. } => {
                let api: Api<MysqlFailoverGroup> =
                    Api::namespaced(client.clone(), &group_ref.namespace);
                let group = api.get(&group_ref.name).await?;
                let run = group
                    .status
                    .and_then(|status| status.planned_failover)
                    .filter(|run| run.run_id != before_run);
                match run {
                    Some(run) => {
                        let phase =
                            run.phase.as_ref().map_or("", |phase| phase.as_str()).to_owned();
                        if phase != last {
                            writeln!(out, "run {} {phase}", run.run_id.as_deref().unwrap_or("?"))?;
                            last.clone_from(&phase);
                        }
                        let result = run.result.as_ref();
                        match (run.phase.as_ref().is_some_and(|phase| phase.is_terminal()), result)
                        {
                            (true, Some(result)) => {
                                let outcome =
                                    result.outcome.as_ref().map_or("", |o| o.as_str()).to_owned();
                                let reason = result.reason.as_ref().map_or("", |r| r.as_str());
                                if outcome == "Succeeded" {
                                    Some(Ok(outcome))
                                } else {
                                    Some(Err(format!("{outcome} {reason}")))
                                }
                            }
                            (true, None) => Some(Ok(phase)),
                            _ => None,
                        }
                    }
                    None => None,
                }
            }
            WriteOp::BackupFromSite { name, .. } | WriteOp::CreateBackup { name, .. } => {
                let api: Api<MysqlBackup> = Api::namespaced(client.clone(), &group_ref.namespace);
                let backup = api.get(name).await?;
                terminal(wait::backup(backup.status.as_ref()), &mut last, out)?
            }
            WriteOp::CreateVerification { name, .. } => {
                let api: Api<MysqlBackupVerification> =
                    Api::namespaced(client.clone(), &group_ref.namespace);
                let verification = api.get(name).await?;
                terminal(wait::verification(verification.status.as_ref()), &mut last, out)?
            }
            WriteOp::AcknowledgeHold { .. } => {
                let api: Api<MysqlFailoverGroup> =
                    Api::namespaced(client.clone(), &group_ref.namespace);
                let group = api.get(&group_ref.name).await?;
                let pending = group.metadata.annotations.as_ref().is_some_and(|a| {
                    a.contains_key(bloodraven_crd::annotations::ACKNOWLEDGE_PLANNED_FAILOVER_HOLD)
                });
                if pending {
                    None
                } else if group
                    .status
                    .as_ref()
                    .is_some_and(|status| status.planned_failover_hold.is_some())
                {
                    let why = ignored_since(client, &group_ref, sent_at).await;
                    Some(Err(wait::ignored(why.as_deref())))
                } else {
                    Some(Ok("PlannedFailoverHoldAcknowledged".to_owned()))
                }
            }
            WriteOp::RecloneQueueDrain { .. }
            | WriteOp::RecloneQueueRelease { .. }
            | WriteOp::Reclone { .. } => {
                Some(Ok("written; the operator acts on it next".to_owned()))
            }
            WriteOp::RestorePitrToNewGroup { name, .. } => {
                Some(Ok(format!("group {name} created; its restore shows in status.restore")))
            }
        };
        match outcome {
            Some(Ok(outcome)) => {
                writeln!(out, "outcome: {outcome}")?;
                return Ok(());
            }
            Some(Err(outcome)) => bail!("{} ended {outcome}", prepared.op.summary()),
            None => {}
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "gave up after {}s waiting for the outcome of {} (last seen: {last:?})",
                timeout.as_secs(),
                prepared.op.summary()
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The message of the newest PlannedFailoverHoldAcknowledgmentIgnored Event on the group from
/// `since` on (to the second: Event times have no finer grain); `None` when none is found or
/// the Events cannot be read (the caller then points at them).
async fn ignored_since(
    client: &kube::Client,
    group: &GroupRef,
    since: jiff::Timestamp,
) -> Option<String> {
    let api: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(client.clone(), &group.namespace);
    let events = api.list(&kube::api::ListParams::default()).await.ok()?;
    newest_ignored(&events.items, &group.name, since)
}

/// Prints a followed object's phase when it changed; its outcome once it ended.
fn terminal(
    followed: wait::Followed,
    last: &mut String,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<Option<Result<String, String>>> {
    if followed.phase != *last {
        writeln!(out, "phase {}", followed.phase)?;
        last.clone_from(&followed.phase);
    }
    Ok(followed.outcome)
}

#[cfg(test)]
mod tests {
    use clap::FromArgMatches as _;

    use crate::cli::{Cli, Command, command_for};

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        let matches = command_for(None).try_get_matches_from(argv)?;
        Cli::from_arg_matches(&matches)
    }

    #[test]
    fn the_write_verbs_parse_and_yes_needs_confirm() {
        let cli = parse(&[
            "bloodraven",
            "promote",
            "orders",
            "pdx",
            "--max-lag-wait",
            "30s",
            "--yes",
            "--confirm",
            "pdx",
            "-o",
            "json",
            "--wait",
        ])
        .unwrap();
        let Some(Command::Promote(promote)) = cli.command else { panic!("not promote") };
        assert_eq!((promote.group.as_str(), promote.site.as_str()), ("orders", "pdx"));
        assert_eq!(promote.max_lag_wait.as_deref(), Some("30s"));
        assert!(promote.write.yes && promote.write.wait);
        assert!(
            parse(&["bloodraven", "promote", "orders", "pdx", "--yes"]).is_err(),
            "--yes needs --confirm"
        );
        let cli =
            parse(&["bloodraven", "reclone-queue", "orders", "release", "--dry-run"]).unwrap();
        let Some(Command::RecloneQueue(queue)) = cli.command else { panic!("not reclone-queue") };
        assert_eq!(queue.decision, super::QueueDecision::Release);
        assert!(parse(&["bloodraven", "reclone-queue", "orders", "erase"]).is_err());
        for argv in [
            &["bloodraven", "ack-planned-failover-hold", "orders", "--run-id", "r-1"][..],
            &["bloodraven", "backup", "orders", "--profile", "nightly", "--source-site", "pdx"][..],
            &["bloodraven", "verify-backup", "orders-nightly-20260420", "--wait"][..],
        ] {
            parse(argv).unwrap();
        }
    }

    #[test]
    fn completions_and_the_man_page_name_the_verbs() {
        let mut command = command_for(None);
        let mut completions = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut command,
            "bloodraven",
            &mut completions,
        );
        let completions = String::from_utf8(completions).unwrap();
        let mut man = Vec::new();
        clap_mangen::Man::new(command_for(None)).render(&mut man).unwrap();
        let man = String::from_utf8(man).unwrap().replace("\\-", "-");
        for verb in
            ["promote", "ack-planned-failover-hold", "reclone-queue", "backup", "verify-backup"]
        {
            assert!(completions.contains(verb), "bash completions lack {verb}");
            assert!(man.contains(verb), "the man page lacks {verb}");
        }
    }
}
