//! Repository chores. `cargo xtask codegen` is added with bloodraven-crd.

use clap::Parser;

/// Repository chores for the Bloodraven workspace.
#[derive(Debug, Parser)]
#[command(name = "xtask", about)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    Ok(())
}
