//! The binlog archiver: the writer side of the PITR archive (spec: backup-and-restore,
//! "Binlog archival" onwards).
//!
//! Pure parts take values and return values:
//! - [`plan`]: the core: manifest + sealed files + session + role gate + integrity → actions;
//! - [`episode`]: writable episodes, promotion and incarnation-reset records, the 1 s rule;
//! - [`integrity`]: the history-integrity settings check;
//! - [`retention`]: which rows a `/pitr-cutoff` proof lets retire, and the operator seam;
//! - [`status`]: the `/archiver/status` value.
//!
//! IO around them: [`session`] (descriptor create/verify, manifest read/save over
//! `bloodraven-store`), [`local`] (the server's binlog index and sealed files), [`mysql`]
//! (role probe, integrity settings), [`run`] (the [`Archiver`] and the role sampler) and
//! [`daemon`] (settings from the environment, the store with its checks, the scan loop that
//! publishes `/archiver/status`).
//! The format is `bloodraven-archive`'s: the same types and serialisers the reader uses.

pub mod daemon;
pub mod episode;
pub mod integrity;
pub mod local;
pub mod mysql;
pub mod plan;
pub mod retention;
pub mod run;
pub mod session;
pub mod status;

pub use run::{Archiver, ArchiverConfig, ScanError, ScanReport, run_sampler, sample};
pub use status::ArchiverStatus;
