//! `bloodraven`: the on-call console. Also runs as `kubectl-bloodraven`.
//!
//! This build parses its arguments and says so: the views, the `status` verb and the embedded
//! lab arrive with the read-only console.

use clap::Parser;

/// On-call console for Bloodraven MysqlFailoverGroups.
///
/// This build has no views or verbs yet: it parses its arguments, reports that, and exits
/// with a non-zero status without contacting any cluster.
#[derive(Debug, Parser)]
#[command(name = "bloodraven", version, about, long_about)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    // One rustls provider for the whole process (feasibility.md §9); a second install is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _cli = Cli::parse();
    anyhow::bail!("no views or verbs are implemented in this build; nothing was contacted")
}
