//! Backups, pure: what a backup artifact looks like and the decisions around it. No IO, no
//! clock reads (callers pass `now`).
//!
//! | module | concern |
//! | --- | --- |
//! | [`layout`] | object keys of an artifact: the dump directory, its chunks, `@.json`, `@.done.json`, the stamp |
//! | [`meta`] | the metadata documents and their serde: [`meta::DumpJson`] (`@.json`), [`meta::DoneJson`] (`@.done.json`), [`meta::Stamp`] |
//! | [`sentinel`] | the `BLOODRAVEN_DUMP_COMPLETE v=2` log line |
//! | [`names`] | Job, CronJob, cleanup Job and retry names |
//! | [`source`] | the dump source site selection |
//! | [`retention`] | which backups retention deletes (never one PITR still needs) |
//!
//! The artifact is written by the sidecar's `backup` subcommand with the real `mysqldump`
//! (MySQL Shell is not obtainable here); the metadata documents carry the fields the spec
//! names (`gtidExecuted` in `@.json`, the end in `@.done.json`, `serverClock` in the stamp).

pub mod layout;
pub mod meta;
pub mod names;
pub mod retention;
pub mod sentinel;
pub mod source;

pub use layout::{ArtifactLayout, LayoutError};
pub use meta::{DoneJson, DumpJson, MetaError, ObjectRef, ServerClock, Stamp};
