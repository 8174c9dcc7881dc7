//! `bloodraven-sidecar`: the per-MySQL-pod daemon (peer awareness, self-fencing, binlog
//! archiving, HTTP status).
//!
//! This build parses its arguments and says so: no archiver or HTTP server runs yet.

use clap::Parser;

/// Bloodraven sidecar.
///
/// This build serves nothing and archives nothing: it parses its arguments, reports that, and
/// exits with a non-zero status without contacting MySQL, peers or storage.
#[derive(Debug, Parser)]
#[command(name = "bloodraven-sidecar", version, about, long_about)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _cli = Cli::parse();
    anyhow::bail!("no archiver or HTTP server is implemented in this build; nothing was contacted")
}
