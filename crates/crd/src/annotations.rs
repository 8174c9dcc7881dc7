//! Annotation, label and finalizer keys, the one-shot action grammar, and typed annotation values.
//!
//! # Keys
//!
//! Every `bloodraven.shipstream.io/` key the spec names is a constant here, grouped by what
//! carries it: the planned-failover annotations on a `MysqlFailoverGroup`
//! ([`PLANNED_FAILOVER`] and its bookkeeping keys), the reclone request ([`RECLONE_SITE`]), the
//! backup retry lineage on a `MysqlBackup`, the archive identity pinned on backup Jobs, the PITR
//! render on site Deployments, the pod labels the Services select on, the node labels of
//! `spec.sites[].taintNodeSelector`, and the `MysqlBackup` finalizer. The spec names no field
//! manager, so none is defined here.
//!
//! # The action grammar
//!
//! One-shot action annotations share one grammar, `<subject>(:<key>=<value>)*`; [`Action`]
//! parses and formats it, and [`ActionError`] names the broken rule and its byte position. See
//! [`grammar`] for the rules.
//!
//! # Typed values
//!
//! | Key | Type |
//! |---|---|
//! | [`PLANNED_FAILOVER`] | [`PlannedFailoverRequest`] (`pdx`, `pdx:maxLagWait=30s`) |
//! | [`PLANNED_FAILOVER_CONFIRMED`], [`PLANNED_FAILOVER_STALL_SINCE`], [`PLANNED_FAILOVER_MANAGER_ABSENT_SINCE`] | [`RunSince`] (`<runID>:since=20260420T143209Z`) |
//! | [`PLANNED_FAILOVER_TERMINAL`] | [`TerminalMarker`] (a record, or a payload that proves nothing) |
//! | [`ACKNOWLEDGE_PLANNED_FAILOVER_HOLD`] | [`HoldAcknowledgement`] (`<runID>`) |
//! | [`RECLONE_SITE`] | [`RecloneRequest`] (`<site>:confirm=<group>:uid=<uid>[:gtidPrefix=<uuid>]`) |
//! | [`PLANNED_FAILOVER_STATUS_FENCE`] | [`StatusFence`] (an RFC 3339 instant) |
//!
//! Durations use the Kubernetes `metav1.Duration` text, Go's `time.Duration` form, in both
//! directions: [`GoDuration`] (`5m0s`, `1h0m0s`, `1.5s`), from [`crate::duration`].
//!
//! Each value type's module docs hold a "spec says / we chose" table for the shapes the spec
//! leaves open.

pub mod grammar;
pub mod values;

pub use crate::duration::{DurationError, DurationErrorKind, GoDuration};
pub use grammar::{Action, ActionError, ActionErrorKind, Pair};
pub use values::{
    CompactTime, HoldAcknowledgement, IgnoredMarker, PlannedFailoverRequest, RecloneRequest,
    RunSince, StatusFence, TERMINAL_MARKER_SCHEMA_VERSION, TerminalMarker, TerminalRecord,
    ValueError, ValueErrorKind,
};

/// The prefix of every Bloodraven annotation, label and finalizer key.
pub const PREFIX: &str = "bloodraven.shipstream.io/";

// Planned failover (MysqlFailoverGroup annotations).

/// The planned-failover request, written by a human or the console: [`PlannedFailoverRequest`].
pub const PLANNED_FAILOVER: &str = "bloodraven.shipstream.io/planned-failover";
/// The run's promotion was confirmed, recorded and published: [`RunSince`].
pub const PLANNED_FAILOVER_CONFIRMED: &str = "bloodraven.shipstream.io/planned-failover-confirmed";
/// The first failed status write of a run: [`RunSince`].
pub const PLANNED_FAILOVER_STALL_SINCE: &str =
    "bloodraven.shipstream.io/planned-failover-stall-since";
/// When the run holding the claim first found no topology manager: [`RunSince`].
pub const PLANNED_FAILOVER_MANAGER_ABSENT_SINCE: &str =
    "bloodraven.shipstream.io/planned-failover-manager-absent-since";
/// The terminal record of a run whose status writes stalled: [`TerminalMarker`].
pub const PLANNED_FAILOVER_TERMINAL: &str = "bloodraven.shipstream.io/planned-failover-terminal";
/// Bumped to prove an ambiguous status write can never commit: [`StatusFence`].
pub const PLANNED_FAILOVER_STATUS_FENCE: &str =
    "bloodraven.shipstream.io/planned-failover-status-fence";
/// A human's acknowledgement of an automation hold: [`HoldAcknowledgement`].
pub const ACKNOWLEDGE_PLANNED_FAILOVER_HOLD: &str =
    "bloodraven.shipstream.io/acknowledge-planned-failover-hold";

// Restore (MysqlFailoverGroup annotation).

/// A request to reclone a site: [`RecloneRequest`].
pub const RECLONE_SITE: &str = "bloodraven.shipstream.io/reclone-site";

// Backups (MysqlBackup metadata and backup Jobs).

/// Label on a retry backup: the failed predecessor's UID.
pub const LABEL_BACKUP_RETRY_OF: &str = "bloodraven.shipstream.io/backup-retry-of";
/// Annotation on a retry backup: the name of the original run.
pub const BACKUP_RETRY_ROOT: &str = "bloodraven.shipstream.io/backup-retry-root";
/// Annotation on a retry backup: the UID of the original run.
pub const BACKUP_RETRY_ROOT_UID: &str = "bloodraven.shipstream.io/backup-retry-root-uid";
/// Annotation on a backup: the launch attempt.
pub const BACKUP_ATTEMPT: &str = "bloodraven.shipstream.io/backup-attempt";
/// Annotation on a backup Job: the source group's `metadata.uid`.
pub const FAILOVER_GROUP_UID: &str = "bloodraven.shipstream.io/failover-group-uid";
/// Annotation on a backup Job: the group's active PITR archive ID (empty when PITR is off).
pub const PITR_ARCHIVE_ID: &str = "bloodraven.shipstream.io/pitr-archive-id";
/// Finalizer on a `MysqlBackup` that runs the artifact cleanup.
pub const FINALIZER_MYSQLBACKUP: &str = "bloodraven.shipstream.io/mysqlbackup";

// PITR.

/// Annotation on each site Deployment: the resolved PITR render.
pub const PITR_RENDER: &str = "bloodraven.shipstream.io/pitr-render";
/// Label on a PITR restore Job: the archive key snapshot Secret it mounts.
pub const LABEL_PITR_KEY_SECRET: &str = "bloodraven.shipstream.io/pitr-key-secret";

// Pod labels the Services select on.

/// Pod label naming the role; the `-primary` Service selects [`ROLE_PRIMARY`].
pub const LABEL_ROLE: &str = "bloodraven.shipstream.io/role";
/// The [`LABEL_ROLE`] value of the active primary.
pub const ROLE_PRIMARY: &str = "primary";
/// Pod label `true`/`false`; the `-replicas` and per-site Services select `true`.
pub const LABEL_HEALTHY: &str = "bloodraven.shipstream.io/healthy";

/// The standard label every MySQL pod and claim carries, with value [`APP_NAME_MYSQL`].
pub const LABEL_APP_NAME: &str = "app.kubernetes.io/name";
/// The [`LABEL_APP_NAME`] value of MySQL pods and claims.
pub const APP_NAME_MYSQL: &str = "mysql";
/// The standard label holding the group's name.
pub const LABEL_APP_INSTANCE: &str = "app.kubernetes.io/instance";

// Node labels (spec.sites[].taintNodeSelector).

/// The node-label key prefix marking nodes of a group: see [`node_failover_group_label`].
pub const NODE_FAILOVER_GROUP_LABEL_PREFIX: &str = "bloodraven.shipstream.io/failover-group.";
/// The node-label key prefix naming a node's site in a group: see [`node_site_label`].
pub const NODE_SITE_LABEL_PREFIX: &str = "bloodraven.shipstream.io/site.";

/// `bloodraven.shipstream.io/failover-group.<group>`, set to `"true"` on the group's nodes.
pub fn node_failover_group_label(group: &str) -> String {
    format!("{NODE_FAILOVER_GROUP_LABEL_PREFIX}{group}")
}

/// `bloodraven.shipstream.io/site.<group>`, whose value is the node's site name.
pub fn node_site_label(group: &str) -> String {
    format!("{NODE_SITE_LABEL_PREFIX}{group}")
}

/// The per-run planned-failover annotations the operator removes once the run has ended.
pub const PLANNED_FAILOVER_PER_RUN: [&str; 3] = [
    PLANNED_FAILOVER_STALL_SINCE,
    PLANNED_FAILOVER_MANAGER_ABSENT_SINCE,
    PLANNED_FAILOVER_CONFIRMED,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_prefix() {
        let keys = [
            PLANNED_FAILOVER,
            PLANNED_FAILOVER_CONFIRMED,
            PLANNED_FAILOVER_STALL_SINCE,
            PLANNED_FAILOVER_MANAGER_ABSENT_SINCE,
            PLANNED_FAILOVER_TERMINAL,
            PLANNED_FAILOVER_STATUS_FENCE,
            ACKNOWLEDGE_PLANNED_FAILOVER_HOLD,
            RECLONE_SITE,
            LABEL_BACKUP_RETRY_OF,
            BACKUP_RETRY_ROOT,
            BACKUP_RETRY_ROOT_UID,
            BACKUP_ATTEMPT,
            FAILOVER_GROUP_UID,
            PITR_ARCHIVE_ID,
            FINALIZER_MYSQLBACKUP,
            PITR_RENDER,
            LABEL_PITR_KEY_SECRET,
            LABEL_ROLE,
            LABEL_HEALTHY,
        ];
        for key in keys {
            let name = key.strip_prefix(PREFIX).unwrap();
            assert!(!name.is_empty() && name.len() <= 63, "{key}");
            assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{key}");
        }
    }

    #[test]
    fn node_labels_name_the_group() {
        assert_eq!(
            node_failover_group_label("orders"),
            "bloodraven.shipstream.io/failover-group.orders"
        );
        assert_eq!(node_site_label("orders"), "bloodraven.shipstream.io/site.orders");
    }
}
