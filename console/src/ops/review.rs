//! The corrected manifest of a restore into a new group ([`WriteOp::RestorePitrToNewGroup`]),
//! also saved to a file for review (issue 17): `restores/<new group>.yaml` beside the audit
//! journal (`$XDG_STATE_HOME/bloodraven/journal/restores/` by default). The CLI writes it when
//! it shows the request (`--dry-run` too), the send writes it again before the request goes
//! out and the journal's records name it (`manifest`).

use std::path::{Path, PathBuf};

use super::WriteOp;
use super::preview::Patch;

/// The folder under the journal's that holds the reviewed manifests.
pub const FOLDER: &str = "restores";

/// Why the manifest could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error(
        "writing the manifest for review to {path}: {source}; check that the folder is writable"
    )]
    Write { path: PathBuf, source: std::io::Error },
    #[error("rendering the manifest for review as YAML: {0}")]
    Yaml(String),
}

/// Where the manifest of `op` is saved, for a restore into a new group; `None` otherwise.
pub fn path(journal_dir: &Path, op: &WriteOp) -> Option<PathBuf> {
    match op {
        WriteOp::RestorePitrToNewGroup { name, .. } => {
            Some(journal_dir.join(FOLDER).join(format!("{name}.yaml")))
        }
        _ => None,
    }
}

/// The manifest as saved: a comment naming the request, then the body as YAML.
pub fn render(patch: &Patch) -> Result<String, ReviewError> {
    let yaml =
        serde_norway::to_string(&patch.body).map_err(|e| ReviewError::Yaml(e.to_string()))?;
    Ok(format!(
        "# {} {}\n# saved for review by bloodraven; `kubectl create -f` this file sends the same object\n{yaml}",
        patch.verb.method(),
        patch.path
    ))
}

/// Saves the manifest of `op` (a restore into a new group) under `journal_dir`; `Ok(None)` for
/// any other operation.
pub fn save(
    journal_dir: &Path,
    op: &WriteOp,
    patch: &Patch,
) -> Result<Option<PathBuf>, ReviewError> {
    let Some(path) = path(journal_dir, op) else { return Ok(None) };
    let text = render(patch)?;
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&path, text));
    written.map_err(|source| ReviewError::Write { path: path.clone(), source })?;
    Ok(Some(path))
}
