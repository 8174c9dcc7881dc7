//! `bloodraven`: the on-call console. Also runs as `kubectl-bloodraven`.

use std::process::ExitCode;

use clap::FromArgMatches as _;

fn main() -> ExitCode {
    // One rustls provider for the whole process (feasibility.md §9); a second install is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let argv0 = std::env::args_os().next();
    let matches = bloodraven_console::cli::command_for(argv0.as_deref()).get_matches();
    let cli = match bloodraven_console::cli::Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    match run(cli) {
        Ok(bloodraven_console::Exit::Success) => ExitCode::SUCCESS,
        Ok(bloodraven_console::Exit::Findings) => ExitCode::from(2),
        Err(error) => {
            #[allow(clippy::print_stderr, reason = "the binary reports its error on stderr")]
            match error.downcast_ref::<bloodraven_console::status::KubectlError>() {
                // Worded as kubectl words it (`Error from server (NotFound): ...`).
                Some(kubectl) => eprintln!("{kubectl}"),
                None => eprintln!("error: {error:#}"),
            }
            ExitCode::FAILURE
        }
    }
}

fn run(cli: bloodraven_console::cli::Cli) -> anyhow::Result<bloodraven_console::Exit> {
    let _log_guard = bloodraven_console::logging::init(cli.global.log_file.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(bloodraven_console::run(cli))
}
