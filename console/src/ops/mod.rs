//! Guided operations: every write the console or its CLI can make (issue 16).
//!
//! One typed enum, [`WriteOp`], names each write the spec tells a human to make. Everything
//! about an operation before it is sent is pure and lives here:
//!
//! | File | Concern |
//! | --- | --- |
//! | `mod.rs` | [`WriteOp`], [`GroupRef`], [`Observed`] and the request shape [`Patch`] |
//! | `preview.rs` | [`preview`]`(&op, &observed) -> Patch`: the exact request with its precondition |
//! | `preflight.rs` | [`preflight`]`(&op, &observed, now) -> Preflight`: pass / wait / refuse, one line each |
//! | `statement.rs` | the spec's data-loss statements and the name a user must type to confirm |
//! | `config.rs` | the XDG config: contexts pinned read-only by glob |
//! | `confirm.rs` | the guarded confirm as plain data with a pure key handler ([`confirm::ConfirmDialog`], [`confirm::Origin`]) |
//! | `send.rs` | the only IO: read, decide, journal, send; a conflict re-reads and asks again |
//! | `verbs.rs` | the CLI verbs (`promote`, `ack-planned-failover-hold`, `reclone-queue`, `backup`, `verify-backup`) |
//!
//! Only a confirmed [`Prepared`](send::Prepared) is ever sent: the TUI dialogs and the CLI
//! verbs both build a `WriteOp`, show its preview and preflight, ask for the confirmation the
//! risk calls for, and only then call [`send::send`].

pub mod config;
pub mod confirm;
mod preflight;
mod preview;
pub mod review;
pub mod send;
mod statement;
pub mod verbs;

#[cfg(test)]
mod tests;

use bloodraven_crd::{MysqlBackup, MysqlFailoverGroup};
use serde::Serialize;

pub use preflight::{Check, Preflight, Verdict, preflight};
pub use preview::{Patch, Precondition, PreviewError, Test, Verb, preview};
pub use statement::{Risk, confirmation_name, data_loss_statement, risk};

/// The API group and version of our kinds.
pub const API: &str = "/apis/shipstream.io/v1alpha1";

/// A `MysqlFailoverGroup` by namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupRef {
    pub namespace: String,
    pub name: String,
}

impl GroupRef {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> GroupRef {
        GroupRef { namespace: namespace.into(), name: name.into() }
    }
}

impl std::fmt::Display for GroupRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Every write the console can make. Built from `bloodraven-crd` values; sent only after a
/// confirmation ([`send::send`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum WriteOp {
    /// The `planned-failover` annotation: `<target>[:maxLagWait=<d>]`.
    RequestPlannedFailover {
        group: GroupRef,
        target: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_lag_wait: Option<String>,
    },
    /// The `acknowledge-planned-failover-hold` annotation: `<runID>`.
    AcknowledgeHold { group: GroupRef, run_id: String },
    /// `status.restoreReclones.phase: Draining` ("keep the primary's data").
    RecloneQueueDrain { group: GroupRef },
    /// Remove `status.restoreReclones` ("release the hold", "accept the stale copy").
    RecloneQueueRelease { group: GroupRef },
    /// A `MysqlBackup` with `spec.sourceSite` (the first step of "restore the held data into
    /// the primary").
    BackupFromSite { group: GroupRef, name: String, profile: String, site: String },
    /// An on-demand `MysqlBackup`.
    CreateBackup { group: GroupRef, name: String, profile: String },
    /// A `MysqlBackupVerification` of one backup.
    CreateVerification { group: GroupRef, name: String, profile: String, backup: String },
    /// The `reclone-site` annotation: `<site>:confirm=<group>:uid=<uid>`.
    Reclone { group: GroupRef, site: String },
    /// A point-in-time restore: a new `MysqlFailoverGroup` `name`, made from `group`'s spec,
    /// whose `initFromBackup` loads `backup` and replays the archive of `archive_profile` to
    /// `stop_time` (`restoreInPlace` has no `pointInTime`, and `initFromBackup` is fixed at
    /// creation: backup-and-restore document, "Restore in place", "Restore to a target
    /// timestamp"). The PITR workbench proposes it with the planner's verdict.
    RestorePitrToNewGroup {
        group: GroupRef,
        name: String,
        backup: String,
        archive_profile: String,
        stop_time: String,
        #[serde(skip_serializing_if = "String::is_empty")]
        exclude_gtids: String,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        allow_partial: bool,
    },
}

impl WriteOp {
    /// The group the operation acts on (or for).
    pub fn group(&self) -> &GroupRef {
        match self {
            WriteOp::RequestPlannedFailover { group, .. }
            | WriteOp::AcknowledgeHold { group, .. }
            | WriteOp::RecloneQueueDrain { group }
            | WriteOp::RecloneQueueRelease { group }
            | WriteOp::BackupFromSite { group, .. }
            | WriteOp::CreateBackup { group, .. }
            | WriteOp::CreateVerification { group, .. }
            | WriteOp::Reclone { group, .. }
            | WriteOp::RestorePitrToNewGroup { group, .. } => group,
        }
    }

    /// A short kebab-case name (journal, Event message, `-o json`).
    pub fn kind(&self) -> &'static str {
        match self {
            WriteOp::RequestPlannedFailover { .. } => "request-planned-failover",
            WriteOp::AcknowledgeHold { .. } => "acknowledge-hold",
            WriteOp::RecloneQueueDrain { .. } => "reclone-queue-drain",
            WriteOp::RecloneQueueRelease { .. } => "reclone-queue-release",
            WriteOp::BackupFromSite { .. } => "backup-from-site",
            WriteOp::CreateBackup { .. } => "create-backup",
            WriteOp::CreateVerification { .. } => "create-verification",
            WriteOp::Reclone { .. } => "reclone",
            WriteOp::RestorePitrToNewGroup { .. } => "restore-pitr-to-new-group",
        }
    }

    /// One line for the user: what the operation does.
    pub fn summary(&self) -> String {
        match self {
            WriteOp::RequestPlannedFailover { group, target, max_lag_wait } => match max_lag_wait {
                Some(wait) => {
                    format!("planned failover of {group} to {target} (maxLagWait {wait})")
                }
                None => format!("planned failover of {group} to {target}"),
            },
            WriteOp::AcknowledgeHold { group, run_id } => {
                format!("acknowledge the automation hold of {group} (run {run_id})")
            }
            WriteOp::RecloneQueueDrain { group } => {
                format!("drain the held reclone queue of {group} (keep the primary's data)")
            }
            WriteOp::RecloneQueueRelease { group } => {
                format!("release the reclone queue of {group} (remove status.restoreReclones)")
            }
            WriteOp::BackupFromSite { group, name, profile, site } => {
                format!("back up {group} from site {site} with profile {profile} as {name}")
            }
            WriteOp::CreateBackup { group, name, profile } => {
                format!("back up {group} with profile {profile} as {name}")
            }
            WriteOp::CreateVerification { group, name, backup, .. } => {
                format!("verify backup {backup} of {group} as {name}")
            }
            WriteOp::Reclone { group, site } => format!("reclone site {site} of {group}"),
            WriteOp::RestorePitrToNewGroup {
                group,
                name,
                backup,
                stop_time,
                exclude_gtids,
                ..
            } => {
                let excluding = if exclude_gtids.is_empty() {
                    String::new()
                } else {
                    format!(" excluding {exclude_gtids}")
                };
                format!(
                    "restore backup {backup} of {group} to {stop_time}{excluding} into a new group {name}"
                )
            }
        }
    }

    /// A `MysqlBackup` named for the group, profile and `now` (lowercase, a DNS subdomain).
    pub fn backup_name(group: &str, profile: &str, now: jiff::Timestamp) -> String {
        format!("{group}-{profile}-console-{}", compact(now))
    }

    /// The new group of a point-in-time restore, named for the group and the target
    /// (`orders-pitr-20260420t120000z`), or for `now` when the target does not parse.
    pub fn pitr_group_name(group: &str, stop_time: &str, now: jiff::Timestamp) -> String {
        let at = stop_time.parse::<jiff::Timestamp>().unwrap_or(now);
        format!("{group}-pitr-{}", compact(at))
    }

    /// A `MysqlBackupVerification` named for the backup and `now`.
    pub fn verification_name(backup: &str, now: jiff::Timestamp) -> String {
        format!("{backup}-verify-{}", compact(now))
    }
}

/// `20260420t143209z`: a lowercase compact UTC instant for object names.
fn compact(now: jiff::Timestamp) -> String {
    now.strftime("%Y%m%dt%H%M%Sz").to_string()
}

/// What an operation is decided on: the group as read (uncached) and, for a verification,
/// the backup.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    pub group: Option<MysqlFailoverGroup>,
    pub backup: Option<MysqlBackup>,
    /// Sites the console knows to be mid keyring rotation (the status does not show it; the
    /// operator re-checks at admission).
    pub rotating_sites: Vec<String>,
}

impl Observed {
    /// Observed state of a group alone.
    pub fn group(group: MysqlFailoverGroup) -> Observed {
        Observed { group: Some(group), ..Observed::default() }
    }
}
