//! Repository chores. `cargo xtask codegen` regenerates the CRDs under `deploy/crds/` from
//! `bloodraven-crd`; a test in that crate fails when the committed files are stale.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Parser, Subcommand};

/// Repository chores for the Bloodraven workspace.
#[derive(Debug, Parser)]
#[command(name = "xtask", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Regenerate deploy/crds/*.yaml from the types in crates/crd.
    Codegen {
        /// The workspace root (default: the parent of the xtask folder).
        #[arg(long)]
        root: Option<PathBuf>,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Codegen { root } => {
            let root = root.unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new(".")).to_owned()
            });
            codegen(&root.join("deploy").join("crds"))
        }
    }
}

/// Writes one YAML file per CRD and removes generated files that no longer have a CRD.
fn codegen(directory: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(directory)
        .with_context(|| format!("creating {}", directory.display()))?;
    let crds = bloodraven_crd::all_crds();
    for (file_name, crd) in &crds {
        let body =
            serde_norway::to_string(crd).with_context(|| format!("rendering {file_name}"))?;
        let path = directory.join(file_name);
        std::fs::write(&path, format!("{}{body}", bloodraven_crd::GENERATED_HEADER))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    for entry in
        std::fs::read_dir(directory).with_context(|| format!("listing {}", directory.display()))?
    {
        let path = entry?.path();
        let known = crds.iter().any(|(file_name, _)| path.file_name() == Some(file_name.as_ref()));
        if !known && path.extension().is_some_and(|extension| extension == "yaml") {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            if text.starts_with(bloodraven_crd::GENERATED_HEADER) {
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing stale {}", path.display()))?;
            }
        }
    }
    Ok(())
}
