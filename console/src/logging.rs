//! Logging to a file, never to the terminal.

use std::path::Path;

use anyhow::Context as _;
use tracing_appender::non_blocking::WorkerGuard;

/// Sends tracing to `path` (filter from `BLOODRAVEN_LOG`, default `info`); without a path,
/// nothing is logged. Keep the guard alive until exit so the last lines are written.
pub fn init(path: Option<&Path>) -> anyhow::Result<Option<WorkerGuard>> {
    let Some(path) = path else { return Ok(None) };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening log file {}", path.display()))?;
    let (writer, guard) = tracing_appender::non_blocking(file);
    let filter = tracing_subscriber::EnvFilter::try_from_env("BLOODRAVEN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false).with_writer(writer).init();
    Ok(Some(guard))
}
