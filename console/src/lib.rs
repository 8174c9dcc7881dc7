//! `bloodraven`, the on-call console (read-only): the fleet and group views, the `status`
//! report and the embedded lab. `main.rs` parses arguments and calls [`run`].

pub mod archive;
pub mod cli;
pub mod client;
pub mod decode;
pub mod doctor;
pub mod journal;
#[cfg(feature = "lab")]
pub mod lab;
#[cfg(feature = "lab")]
pub mod live;
pub mod logging;
pub mod ops;
pub mod report;
pub mod runbook_cli;
#[cfg(feature = "lab")]
pub mod scenarios;
pub mod status;
pub mod summary;
pub mod tui;
pub mod verdict;

use anyhow::Context as _;

use crate::cli::{Cli, Command, GlobalOptions};
use crate::tui::state::Scope;

/// Resolves on SIGINT, SIGTERM or SIGHUP (a closed terminal or tmux server).
pub async fn termination_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (signal(SignalKind::terminate()), signal(SignalKind::hangup())) {
            (Ok(mut terminate), Ok(mut hangup)) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                    _ = hangup.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn scope(global: &GlobalOptions, default_namespace: &str) -> Scope {
    match (&global.namespace, global.all_namespaces) {
        (_, true) => Scope::All,
        (Some(namespace), false) => Scope::Namespace(namespace.clone()),
        (None, false) => Scope::Namespace(default_namespace.to_owned()),
    }
}

/// What the process exits with when the command line ran without an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0.
    Success,
    /// 2: `status --fail-on` found a finding at or above the threshold.
    Findings,
}

/// Runs the command line.
pub async fn run(cli: Cli) -> anyhow::Result<Exit> {
    match &cli.command {
        Some(Command::Doctor(args)) => {
            let (client, connection) =
                client::connect(cli.global.kubeconfig.as_deref(), cli.global.context.as_deref())
                    .await?;
            let scope = match scope(&cli.global, &connection.default_namespace) {
                Scope::All => status::Scope::All,
                Scope::Namespace(namespace) => status::Scope::Namespace(namespace),
            };
            let mut stdout = std::io::stdout();
            let mut stderr = std::io::stderr();
            let outcome = match doctor::run(
                client,
                &scope,
                args,
                jiff::Timestamp::now(),
                &mut stdout,
                &mut stderr,
            )
            .await
            {
                Ok(outcome) => outcome,
                Err(error) if status::is_broken_pipe(&error) => return Ok(Exit::Success),
                Err(error) => return Err(error),
            };
            Ok(if outcome.fails(args.fail_on) { Exit::Findings } else { Exit::Success })
        }
        Some(Command::Runbook(args)) => {
            let global = &cli.global;
            let connect = async || -> anyhow::Result<(kube::Client, String)> {
                let (client, connection) =
                    client::connect(global.kubeconfig.as_deref(), global.context.as_deref())
                        .await?;
                let namespace = global.namespace.clone().unwrap_or(connection.default_namespace);
                Ok((client, namespace))
            };
            let at = ops::verbs::Where {
                kubeconfig: global.kubeconfig.clone(),
                context: global.context.clone(),
                namespace: global.namespace.clone(),
                config: None,
            };
            let mut stdout = std::io::stdout();
            match runbook_cli::run(&args.command, connect, &at, jiff::Timestamp::now(), &mut stdout)
                .await
            {
                Ok(()) => Ok(Exit::Success),
                Err(error) if status::is_broken_pipe(&error) => Ok(Exit::Success),
                Err(error) => Err(error),
            }
        }
        Some(Command::Promote(args)) => {
            write_verb(&cli, ops::verbs::Verb::Promote(args.clone())).await
        }
        Some(Command::AckPlannedFailoverHold(args)) => {
            write_verb(&cli, ops::verbs::Verb::Ack(args.clone())).await
        }
        Some(Command::RecloneQueue(args)) => {
            write_verb(&cli, ops::verbs::Verb::RecloneQueue(args.clone())).await
        }
        Some(Command::Backup(args)) => {
            write_verb(&cli, ops::verbs::Verb::Backup(args.clone())).await
        }
        Some(Command::VerifyBackup(args)) => {
            write_verb(&cli, ops::verbs::Verb::VerifyBackup(args.clone())).await
        }
        Some(Command::Pitr(cli::PitrCommand::Plan(args))) => {
            let (client, connection) =
                client::connect(cli.global.kubeconfig.as_deref(), cli.global.context.as_deref())
                    .await?;
            let access = archive::ArchiveAccess::of(&cli.global, &client);
            let query = archive::plan::PlanQuery {
                namespace: cli.global.namespace.clone().unwrap_or(connection.default_namespace),
                group: args.group.clone(),
                backup: args.backup.clone(),
                target: if args.latest { None } else { args.target.clone() },
                exclude_gtids: args.exclude_gtids.clone(),
                json: args.output == cli::PitrFormat::Json,
            };
            let answer = archive::plan::plan(client, &access, &query).await?;
            let mut stdout = std::io::stdout();
            match archive::plan::print(&answer, query.json, &mut stdout) {
                Ok(()) => {}
                Err(error) if status::is_broken_pipe(&error) => return Ok(Exit::Success),
                Err(error) => return Err(error),
            }
            // A refusal is the answer, not an error of the command: exit 2 as a finding.
            Ok(if answer.result.is_ok() { Exit::Success } else { Exit::Findings })
        }
        Some(Command::Pitr(cli::PitrCommand::RestoreNew(args))) => {
            pitr_restore_new(&cli, args).await
        }
        Some(Command::Completions(args)) => {
            let argv0 = std::env::args_os().next();
            let mut command = cli::command_for(argv0.as_deref());
            let name = command.get_bin_name().unwrap_or("bloodraven").to_owned();
            clap_complete::generate(args.shell, &mut command, name, &mut std::io::stdout());
            Ok(Exit::Success)
        }
        Some(Command::Man) => {
            let man = clap_mangen::Man::new(cli::command_for(None));
            man.render(&mut std::io::stdout()).context("writing the man page")?;
            Ok(Exit::Success)
        }
        Some(Command::Status(args)) => {
            let (client, connection) =
                client::connect(cli.global.kubeconfig.as_deref(), cli.global.context.as_deref())
                    .await?;
            let scope = match scope(&cli.global, &connection.default_namespace) {
                Scope::All => status::Scope::All,
                Scope::Namespace(namespace) => status::Scope::Namespace(namespace),
            };
            let mut stdout = std::io::stdout();
            let mut stderr = std::io::stderr();
            let outcome = match status::run(
                client,
                &scope,
                args,
                jiff::Timestamp::now(),
                &mut stdout,
                &mut stderr,
            )
            .await
            {
                Ok(outcome) => outcome,
                // `| head` closed stdout: end quietly, as kubectl does.
                Err(error) if status::is_broken_pipe(&error) => return Ok(Exit::Success),
                Err(error) => return Err(error),
            };
            Ok(if outcome.fails(args.fail_on) { Exit::Findings } else { Exit::Success })
        }
        #[cfg(feature = "lab")]
        Some(Command::Lab(args)) if args.live => {
            live::run(&cli, args).await.map(|()| Exit::Success)
        }
        #[cfg(feature = "lab")]
        Some(Command::Lab(args)) => {
            let running = lab::RunningLab::start(&args.scenario, jiff::Timestamp::now()).await?;
            tracing::info!(url = %running.lab.url(), scenario = %args.scenario, "lab started");
            if args.serve {
                use std::io::Write as _;
                let mut stdout = std::io::stdout().lock();
                writeln!(
                    stdout,
                    "lab API server {} serving scenario {}\nkubeconfig: {}\n  export KUBECONFIG={}\narchive root: {} (bloodraven --archive-root {})\nCtrl-C stops it.",
                    running.lab.url(),
                    args.scenario,
                    running.kubeconfig().display(),
                    running.kubeconfig().display(),
                    running.directory().display(),
                    running.directory().display()
                )?;
                stdout.flush()?;
                drop(stdout);
                termination_signal().await;
            } else {
                let kubeconfig = running.kubeconfig();
                let (client, connection, write) =
                    console_client(&cli.global, Some(&kubeconfig), None).await?;
                let scope = match &cli.global.namespace {
                    Some(namespace) if !cli.global.all_namespaces => {
                        Scope::Namespace(namespace.clone())
                    }
                    _ => Scope::All,
                };
                let context = format!("{} (lab: {})", connection.context, args.scenario);
                let archive_root = cli
                    .global
                    .archive_root
                    .clone()
                    .unwrap_or_else(|| running.directory().to_path_buf());
                let options = tui::app::Options {
                    context,
                    scope,
                    no_color: cli.global.no_color,
                    archive_root: Some(archive_root),
                    archive_credentials_from_secret: cli.global.archive_credentials_from_secret,
                    archive_passphrase_file: cli.global.pitr_passphrase_file.clone(),
                    kubeconfig: Some(running.kubeconfig()),
                    write: Some(write),
                };
                console(client, options).await?;
            }
            running.stop().await.map(|()| Exit::Success)
        }
        None => {
            let (client, connection, write) = console_client(
                &cli.global,
                cli.global.kubeconfig.as_deref(),
                cli.global.context.as_deref(),
            )
            .await?;
            let scope = scope(&cli.global, &connection.default_namespace);
            let options = tui::app::Options {
                context: connection.context,
                scope,
                no_color: cli.global.no_color,
                archive_root: cli.global.archive_root.clone(),
                archive_credentials_from_secret: cli.global.archive_credentials_from_secret,
                archive_passphrase_file: cli.global.pitr_passphrase_file.clone(),
                kubeconfig: cli.global.kubeconfig.clone(),
                write: Some(write),
            };
            console(client, options).await.map(|()| Exit::Success)
        }
    }
}

/// The console's client: guarded (reads always; the write allow-list only while the session's
/// switch is on), read-only at start unless `--write`, which a pinned context refuses.
pub(crate) async fn console_client(
    global: &GlobalOptions,
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
) -> anyhow::Result<(kube::Client, client::Connection, tui::app::WriteSetup)> {
    let config = match ops::config::Config::default_path() {
        Some(path) => ops::config::Config::load(&path)?,
        None => ops::config::Config::default(),
    };
    let switch = client::WriteSwitch::read_only();
    let (client, connection) = client::connect_guarded(kubeconfig, context, switch.clone()).await?;
    if global.write
        && let Some(pattern) = config.pinned_by(&connection.context)
    {
        anyhow::bail!(
            "context {} is pinned read-only by {pattern:?} (readOnlyContexts in the console \
             config): drop --write",
            connection.context
        );
    }
    let write = tui::app::WriteSetup {
        switch,
        start_on: global.write,
        journal_dir: global.journal_dir.clone(),
        config,
    };
    Ok((client, connection, write))
}

/// Runs one of the write verbs (`promote`, `ack-planned-failover-hold`, `reclone-queue`,
/// `backup`, `verify-backup`).
/// `pitr restore-new`: plans as `pitr plan` does (printed on stderr), then proposes the restore
/// into a new group through the write verbs' flow.
async fn pitr_restore_new(
    cli: &Cli,
    args: &ops::verbs::PitrRestoreNewArgs,
) -> anyhow::Result<Exit> {
    let (client, connection) =
        client::connect(cli.global.kubeconfig.as_deref(), cli.global.context.as_deref()).await?;
    let namespace = cli.global.namespace.clone().unwrap_or(connection.default_namespace);
    let access = archive::ArchiveAccess::of(&cli.global, &client);
    let query = archive::plan::PlanQuery {
        namespace: namespace.clone(),
        group: args.group.clone(),
        backup: args.backup.clone(),
        target: if args.latest { None } else { args.target.clone() },
        exclude_gtids: args.exclude_gtids.clone(),
        json: false,
    };
    let answer = archive::plan::plan(client.clone(), &access, &query).await?;
    archive::plan::print(&answer, false, &mut std::io::stderr())?;
    let planned = match &answer.result {
        Ok(plan) => Ok(plan.newest_replayed),
        Err(refusal) => Err(format!("{}: {}", refusal.token, refusal.message)),
    };
    let groups: kube::Api<bloodraven_crd::MysqlFailoverGroup> =
        kube::Api::namespaced(client, &namespace);
    let group = groups
        .get(&args.group)
        .await
        .with_context(|| format!("reading MysqlFailoverGroup {namespace}/{}", args.group))?;
    let op = ops::verbs::pitr_new::operation(&namespace, args, &group, &planned)?;
    write_verb(cli, ops::verbs::Verb::PitrRestoreNew(Box::new(args.clone()), Box::new(op))).await
}

async fn write_verb(cli: &Cli, verb: ops::verbs::Verb) -> anyhow::Result<Exit> {
    let at = ops::verbs::Where {
        kubeconfig: cli.global.kubeconfig.clone(),
        context: cli.global.context.clone(),
        namespace: cli.global.namespace.clone(),
        config: None,
    };
    ops::verbs::run(&verb, &at).await.map(|()| Exit::Success)
}

/// Opens the terminal UI, runs it and always restores the terminal (ratatui's panic hook
/// restores it on a panic).
pub async fn console(client: kube::Client, options: tui::app::Options) -> anyhow::Result<()> {
    let mut terminal = ratatui::try_init().context("opening the terminal")?;
    let result = tui::app::run(
        &mut terminal,
        client,
        options,
        crossterm::event::EventStream::new(),
        |_| {},
        termination_signal(),
    )
    .await;
    ratatui::restore();
    result
}
