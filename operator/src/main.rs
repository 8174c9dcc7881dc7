//! `bloodraven-operator`: the controller for `MysqlFailoverGroup`, `MysqlBackup` and
//! `MysqlBackupVerification`.
//!
//! This build parses its arguments and says so: no controller runs yet.

use clap::Parser;

/// Bloodraven operator.
///
/// This build runs no controllers: it parses its arguments, reports that, and exits with
/// a non-zero status without contacting any cluster.
#[derive(Debug, Parser)]
#[command(name = "bloodraven-operator", version, about, long_about)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _cli = Cli::parse();
    anyhow::bail!("no controllers are implemented in this build; nothing was contacted")
}
