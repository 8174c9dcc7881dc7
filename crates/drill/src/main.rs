//! `bloodraven-drill`: validate or run drill files against the live lab.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "bloodraven-drill", about = "Validate and run live-lab drills")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check drill files against the schema and their manifests; print nothing on success.
    Check {
        /// Drill files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run one drill (real MySQL: `source scripts/provision.sh` first) and print its timeline.
    Run {
        /// The drill file.
        file: PathBuf,
        /// Report format.
        #[arg(short = 'o', long = "output", value_enum, default_value = "human")]
        output: Output,
        /// The operator binary, for drills with `requires: [operator]` (default:
        /// `bloodraven-operator` next to this binary, when it exists).
        #[arg(long)]
        operator_bin: Option<PathBuf>,
    },
    /// Print the drill file's JSON Schema.
    Schema,
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    Human,
    Json,
}

/// Waits for SIGINT, SIGTERM or SIGHUP; names the one that came.
async fn terminated() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hup)) =
        (signal(SignalKind::terminate()), signal(SignalKind::hangup()))
    else {
        // Without the handlers, Ctrl-C still works.
        let _ = tokio::signal::ctrl_c().await;
        return "SIGINT";
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = term.recv() => "SIGTERM",
        _ = hup.recv() => "SIGHUP",
    }
}

#[allow(clippy::print_stdout, reason = "the binary's output is the report")]
#[allow(clippy::print_stderr, reason = "the interruption notice goes to stderr")]
fn main() -> anyhow::Result<ExitCode> {
    // The proxy logs a warning per link as the hub stops at the end of a run: noise here.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(
            |_| tracing_subscriber::EnvFilter::new("warn,bloodraven_sites::proxy=error"),
        ))
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Check { files } => {
            let mut failed = false;
            for file in files {
                if let Err(e) = bloodraven_drill::load(&file) {
                    println!("{e}");
                    failed = true;
                }
            }
            Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
        Command::Schema => {
            print!("{}", bloodraven_drill::schema::drill_schema());
            Ok(ExitCode::SUCCESS)
        }
        Command::Run { file, output, operator_bin } => {
            let drill = bloodraven_drill::load(&file)?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the tokio runtime")?;
            // Without --operator-bin, the workspace's own build next to this binary.
            let operator_bin = operator_bin.or_else(|| {
                let sibling = std::env::current_exe().ok()?.with_file_name("bloodraven-operator");
                (drill.requires_operator() && sibling.is_file()).then_some(sibling)
            });
            let options = bloodraven_drill::RunOptions { operator_bin, launcher: None };
            // On SIGINT/SIGTERM/SIGHUP the run's future is dropped: the group it owns kills
            // every mysqld and removes their folders.
            let Some(report) = runtime.block_on(async {
                tokio::select! {
                    r = bloodraven_drill::run(&drill, &options) => r.map(Some),
                    signal = terminated() => {
                        eprintln!("drill interrupted by {signal}: sites stopped");
                        Ok(None)
                    }
                }
            })?
            else {
                return Ok(ExitCode::from(130));
            };
            match output {
                Output::Human => print!("{}", report.human()),
                Output::Json => println!("{}", report.json()),
            }
            Ok(if report.passed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
    }
}
