//! `bloodraven-operator` as a library: the controllers' pure cores and, around them, the
//! observe and apply layers the binary wires together.
//!
//! Every decision is a pure function of values (`topology::plan`); IO lives in the layers that
//! observe MySQL (`observe`), act on it (`apply`) and publish to the API server (`manager`,
//! `controller`, `status`).

pub mod address_file;
pub mod apply;
pub mod backup;
pub mod controller;
mod credentials;
pub mod dns;
mod events;
pub mod http;
pub mod lease;
pub mod manager;
pub mod metrics;
pub mod observe;
pub mod pitr_archive;
pub mod pitr_cutoff;
pub mod planned;
pub mod pods;
mod publish;
pub mod reclone;
pub mod restore;
pub mod sql;
pub mod status;
pub mod topology;
pub mod validate;
