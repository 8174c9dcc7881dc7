//! Why a group's workloads cannot be built.

/// Input the contract cannot turn into objects; the message names the field and what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    #[error("the MysqlFailoverGroup has no metadata.{field}; build workloads from a stored object")]
    MissingMetadata { field: &'static str },
    #[error("spec.sites has no site {site:?}; use one of the declared site names")]
    UnknownSite { site: String },
    #[error(
        "{what} {value:?} is {len} characters, longer than the 63 a label value may have; use a shorter name"
    )]
    LabelValueTooLong { what: &'static str, value: String, len: usize },
    #[error(
        "spec.sites[{second}].serverID {server_id} repeats spec.sites[{first}].serverID; every site needs its own server id"
    )]
    DuplicateServerId { first: usize, second: usize, server_id: u32 },
    #[error("{scope}.{key}: {reason}")]
    InvalidMysqlOption { scope: String, key: String, reason: &'static str },
    #[error(
        "{scope}.{key}: the operator manages this option (it must be {value}); remove the entry"
    )]
    ManagedMysqlOption { scope: String, key: String, value: String },
    #[error(
        "spec.backup.pitr names profile {profile:?}, which spec.backup.profiles does not declare; name a declared profile (profileName is required when PITR is enabled)"
    )]
    UnknownPitrProfile { profile: String },
    #[error("spec.backup.profiles[{profile}].storage cannot hold the PITR archive: {reason}")]
    PitrStorage { profile: String, reason: String },
}
