//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The name the binary takes when installed as a kubectl plugin.
pub const KUBECTL_PLUGIN_NAME: &str = "kubectl-bloodraven";

/// On-call console for Bloodraven MysqlFailoverGroups.
///
/// With no command it opens the live, read-only console. It sends no write request: its
/// Kubernetes client refuses every verb but get, list and watch.
#[derive(Debug, Parser)]
#[command(name = "bloodraven", version, about, long_about)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOptions,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Flags every command takes.
#[derive(Clone, Debug, Default, Args)]
pub struct GlobalOptions {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: the current context).
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// The namespace (default: the context's namespace, else `default`).
    #[arg(short = 'n', long, global = true, value_name = "NAME")]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long, global = true)]
    pub all_namespaces: bool,
    /// Write logs to this file (the console never logs to the terminal).
    #[arg(long, global = true, env = "BLOODRAVEN_LOG_FILE", value_name = "PATH")]
    pub log_file: Option<PathBuf>,
    /// Plain text: no colors.
    #[arg(long, global = true, env = "NO_COLOR", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_color: bool,
    /// Where PVC archives are: `<DIR>/<namespace>/<claimName>/<subPath>/binlogs` (the archive
    /// panel reads them; `lab` defaults to its temporary directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub archive_root: Option<PathBuf>,
    /// Read S3 archive credentials from the profile's credentialsSecretName Secret (a GET
    /// through the read-only client) instead of the local AWS environment.
    #[arg(long, global = true)]
    pub archive_credentials_from_secret: bool,
    /// A file holding the passphrase of encrypted PITR archives (the value of the profile's
    /// passphraseSecretKeyRef), for the archive panel, the PITR workbench and `pitr plan`.
    /// The passphrase itself is never taken on the command line, logged or journaled; a
    /// plaintext archive opens without it.
    #[arg(long, global = true, env = "BLOODRAVEN_PITR_PASSPHRASE_FILE", value_name = "PATH")]
    pub pitr_passphrase_file: Option<PathBuf>,
    /// Open the console in write mode (guided operations may be confirmed and sent; `W` in
    /// the console does the same after a confirmation). Refused for a context the config
    /// pins read-only (`readOnlyContexts` in $XDG_CONFIG_HOME/bloodraven/config.yaml).
    #[arg(long)]
    pub write: bool,
    /// The audit journal's folder for the console's guided operations (default:
    /// $XDG_STATE_HOME/bloodraven/journal).
    #[arg(long, env = "BLOODRAVEN_JOURNAL_DIR", value_name = "DIR")]
    pub journal_dir: Option<PathBuf>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the fleet list, or one group's report.
    Status(StatusArgs),
    /// Start an in-memory lab API server with a scenario and open the console on it.
    #[cfg(feature = "lab")]
    Lab(LabArgs),
    /// Triage: every finding of every group with its severity and the runbook to open.
    Doctor(DoctorArgs),
    /// Runbooks as data: list them, show one, or walk one over a group (read-only).
    Runbook(RunbookArgs),
    /// Request a planned failover of a group to a site (the planned-failover annotation).
    Promote(crate::ops::verbs::PromoteArgs),
    /// Acknowledge a group's automation hold (after resolving the split brain by hand).
    AckPlannedFailoverHold(crate::ops::verbs::AckArgs),
    /// Decide a Held reclone queue: drain (keep the primary's data) or release.
    RecloneQueue(crate::ops::verbs::RecloneQueueArgs),
    /// Create an on-demand MysqlBackup (optionally from one site).
    Backup(crate::ops::verbs::BackupArgs),
    /// Create a MysqlBackupVerification of a backup.
    VerifyBackup(crate::ops::verbs::VerifyBackupArgs),
    /// Point-in-time recovery: plan a restore from a group's archive as the restore would.
    #[command(subcommand)]
    Pitr(PitrCommand),
    /// Print shell completions for this command line.
    Completions(CompletionsArgs),
    /// Print the man page (roff) of this command line.
    Man,
}

/// `pitr` verbs.
#[derive(Debug, Subcommand)]
pub enum PitrCommand {
    /// Plan a restore of a backup to a target time (or the latest state): print the plan or
    /// the refusal exactly as the restore would (read-only).
    Plan(PitrPlanArgs),
    /// Restore a backup to a target time (or the latest state) into a NEW group, from the same
    /// plan: the preflight, the exact request, a confirmation (the new group's name), the
    /// audit journal and the manifest saved for review, as the console's PITR workbench.
    RestoreNew(crate::ops::verbs::PitrRestoreNewArgs),
}

/// `pitr plan` arguments.
#[derive(Debug, Args)]
pub struct PitrPlanArgs {
    /// The group whose archive is replayed.
    pub group: String,
    /// The MysqlBackup the restore loads.
    #[arg(long)]
    pub backup: String,
    /// The target: RFC 3339, whole seconds (`2026-04-20T13:04:00Z`).
    #[arg(long, required_unless_present = "latest", conflicts_with = "latest")]
    pub target: Option<String>,
    /// Replay to the newest archived state instead of a target.
    #[arg(long)]
    pub latest: bool,
    /// excludeGtids: a GTID set the replay skips.
    #[arg(long, value_name = "SET", default_value = "")]
    pub exclude_gtids: String,
    /// Output format: text, or coverage.json (version 2).
    #[arg(short = 'o', long, value_enum, default_value_t = PitrFormat::Text)]
    pub output: PitrFormat,
}

/// `pitr plan -o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PitrFormat {
    Text,
    Json,
}

/// `completions` arguments.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `doctor` arguments.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The group to diagnose; without it, every group in scope.
    pub group: Option<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = DoctorFormat::Table)]
    pub output: DoctorFormat,
    /// Exit 2 when a group has a finding at or above this severity (info, warning, critical).
    #[arg(long, value_name = "SEVERITY", value_parser = parse_severity)]
    pub fail_on: Option<bloodraven_facts::verdict::Severity>,
}

/// `doctor -o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DoctorFormat {
    Table,
    Json,
    Yaml,
}

/// `runbook` arguments.
#[derive(Debug, Args)]
pub struct RunbookArgs {
    #[command(subcommand)]
    pub command: RunbookCommand,
}

/// `runbook` verbs.
#[derive(Debug, Subcommand)]
pub enum RunbookCommand {
    /// Every shipped runbook: id, severity, title.
    List,
    /// One runbook's steps: what each explains, checks, offers and waits for.
    Show {
        /// The runbook's id (`runbook list`).
        id: String,
    },
    /// Walk a runbook over a group: each check with the values it read; a step with an action
    /// prints the guided operation it would propose, or with --write sends it through the
    /// preflight and the typed confirmation, then waits for its expectation.
    Run {
        /// The runbook's id (`runbook list`).
        id: String,
        /// The group.
        group: String,
        #[command(flatten)]
        act: crate::runbook_cli::act::ActArgs,
    },
}

/// `status` arguments.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The group to report on; without it, the list.
    pub group: Option<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Exit 2 when any listed group has a finding at or above this severity (info, warning,
    /// critical). Without it, findings do not change the exit code (0 ok, 1 error).
    #[arg(long, value_name = "SEVERITY", value_parser = parse_severity)]
    pub fail_on: Option<bloodraven_facts::verdict::Severity>,
    /// Leave out the header row of the list.
    #[arg(long)]
    pub no_headers: bool,
    /// Only groups whose labels match this selector (`app=orders,tier!=test`).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// After the list, print a row each time a group changes (until interrupted).
    #[arg(short = 'w', long)]
    pub watch: bool,
}

fn parse_severity(text: &str) -> Result<bloodraven_facts::verdict::Severity, String> {
    bloodraven_facts::verdict::Severity::parse(text).map_err(|error| error.to_string())
}

/// `status -o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Table,
    Wide,
    Json,
    Yaml,
    /// `mysqlfailovergroup.shipstream.io/<name>`, one a line.
    Name,
}

/// `lab` arguments.
#[cfg(feature = "lab")]
#[derive(Debug, Args)]
pub struct LabArgs {
    /// The scenario to load.
    #[arg(long, default_value = "healthy", value_parser = clap::builder::PossibleValuesParser::new(crate::scenarios::all_names()))]
    pub scenario: String,
    /// Keep serving and print the kubeconfig path instead of opening the console.
    #[arg(long)]
    pub serve: bool,
    /// A live lab instead of a scenario: real MySQL 9.7 sites run by the lab kubelet, with a
    /// fault proxy on every link (`source scripts/provision.sh` first).
    #[arg(long, conflicts_with = "scenario")]
    pub live: bool,
    /// With `--live`: run this drill file and print its report instead of opening the console.
    #[arg(long, requires = "live")]
    pub drill: Option<std::path::PathBuf>,
    /// With `--drill`: the report as JSON.
    #[arg(long, requires = "drill")]
    pub json: bool,
    /// With `--live`: archive the group's binlogs encrypted (PITR on a PVC profile whose
    /// `encryption.passphraseSecretKeyRef` names a Secret the lab creates with a random
    /// passphrase; a `bloodraven-sidecar` beside every mysqld). The console opens the archive
    /// with the same passphrase (a 0600 file in the lab's folder).
    #[arg(long, requires = "live", conflicts_with = "drill")]
    pub encrypted_archive: bool,
}

/// The command line as clap sees it, renamed `kubectl bloodraven` when the binary was
/// invoked as the kubectl plugin.
pub fn command_for(argv0: Option<&std::ffi::OsStr>) -> clap::Command {
    use clap::CommandFactory;
    let command = Cli::command();
    let plugin = argv0
        .and_then(|argv0| std::path::Path::new(argv0).file_stem())
        .is_some_and(|stem| stem == KUBECTL_PLUGIN_NAME);
    if plugin { command.name("kubectl bloodraven").bin_name("kubectl bloodraven") } else { command }
}

#[cfg(test)]
mod tests {
    use clap::FromArgMatches;

    use super::*;

    fn parse(argv: &[&str]) -> Cli {
        let matches = command_for(Some(argv[0].as_ref())).try_get_matches_from(argv).unwrap();
        Cli::from_arg_matches(&matches).unwrap()
    }

    #[test]
    fn no_verb_means_the_console() {
        let cli = parse(&["bloodraven", "--context", "prod", "-n", "orders"]);
        assert!(cli.command.is_none());
        assert_eq!(cli.global.context.as_deref(), Some("prod"));
        assert_eq!(cli.global.namespace.as_deref(), Some("orders"));
    }

    #[test]
    fn status_takes_global_flags_after_the_verb() {
        let cli = parse(&["kubectl-bloodraven", "status", "orders", "-o", "wide", "-A"]);
        assert!(cli.global.all_namespaces);
        let Some(Command::Status(status)) = cli.command else { panic!("not status") };
        assert_eq!(status.group.as_deref(), Some("orders"));
        assert_eq!(status.output, OutputFormat::Wide);
    }

    #[test]
    fn write_is_a_flag_of_the_console() {
        assert!(!parse(&["bloodraven"]).global.write);
        assert!(parse(&["bloodraven", "--write"]).global.write);
        let cli = parse(&["bloodraven", "--write", "lab", "--scenario", "hold-standing"]);
        assert!(cli.global.write);
        // Not a flag of the verbs: they confirm each write on their own.
        assert!(
            command_for(None).try_get_matches_from(["bloodraven", "status", "--write"]).is_err()
        );
    }

    #[test]
    fn plugin_name_comes_from_argv0() {
        let help = command_for(Some("/usr/local/bin/kubectl-bloodraven".as_ref())).render_help();
        assert!(help.to_string().contains("kubectl bloodraven"), "{help}");
        let help = command_for(Some("bloodraven".as_ref())).render_usage().to_string();
        assert!(!help.contains("kubectl"), "{help}");
    }

    #[cfg(feature = "lab")]
    #[test]
    fn lab_refuses_unknown_scenarios() {
        assert!(
            command_for(None)
                .try_get_matches_from(["bloodraven", "lab", "--scenario", "nope"])
                .is_err()
        );
        let cli = parse(&["bloodraven", "lab", "--scenario", "hold-standing", "--serve"]);
        let Some(Command::Lab(lab)) = cli.command else { panic!("not lab") };
        assert_eq!(lab.scenario, "hold-standing");
        assert!(lab.serve);
    }

    #[cfg(feature = "lab")]
    #[test]
    fn lab_live_takes_a_drill_and_drill_needs_live() {
        let cli = parse(&["bloodraven", "lab", "--live", "--drill", "d.yaml", "--json"]);
        let Some(Command::Lab(lab)) = cli.command else { panic!("not lab") };
        assert!(lab.live && lab.json);
        assert_eq!(lab.drill.as_deref(), Some(std::path::Path::new("d.yaml")));
        for argv in [
            &["bloodraven", "lab", "--drill", "d.yaml"][..],
            &["bloodraven", "lab", "--live", "--scenario", "healthy"][..],
            &["bloodraven", "lab", "--live", "--json"][..],
        ] {
            assert!(command_for(None).try_get_matches_from(argv).is_err(), "{argv:?} accepted");
        }
    }
}
