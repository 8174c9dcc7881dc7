//! Integration tests of `bloodraven-console`: the whole app against the lab API server, the
//! real binary's `status` and plugin name, and a tmux end-to-end run of `bloodraven lab`.

#![allow(clippy::unwrap_used, reason = "test helpers outside #[test] functions unwrap too")]
mod app;
mod archive_live;
mod backup_live;
mod binary;
mod guided;
mod guided_live;
mod hold_live;
mod live;
mod ops;
mod pitr_restore_new;
mod queue_live;
mod readonly;
mod tmux;
mod workbench;

/// Installs the one rustls provider (ring), as every binary and test helper does.
pub(crate) fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
