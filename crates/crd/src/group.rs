//! `MysqlFailoverGroup` (`mfg`): the sites of one MySQL database and how they fail over.

// kube's KubeSchema derive re-declares each struct, `pub` fields and all, inside a private
// function to build its schema; rustc reports those copies as unreachable `pub` items.
#![allow(unreachable_pub, reason = "KubeSchema derive copies pub structs into a private scope")]

mod backup;
mod init_rules;
mod planned_failover;
mod restore;
mod status;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::duration::Duration;
use crate::open_enum::open_enum;

pub use backup::*;
pub use planned_failover::*;
pub use restore::*;
pub use status::*;

/// Desired state of a `MysqlFailoverGroup`.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "shipstream.io",
    version = "v1alpha1",
    kind = "MysqlFailoverGroup",
    namespaced,
    status = "MysqlFailoverGroupStatus",
    shortname = "mfg",
    derive = "PartialEq",
    doc = "A MySQL database replicated across sites, with emergency and planned failover",
    printcolumn = r#"{"name":"Active","type":"string","description":"The site that is the writable primary","jsonPath":".status.activeSite"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","description":"The Ready condition's status","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[x_kube(validation = Rule::new("has(oldSelf.initFromBackup) == has(self.initFromBackup)")
    .message(init_rules::FIXED_AT_CREATION))]
#[serde(rename_all = "camelCase")]
pub struct MysqlFailoverGroupSpec {
    /// The MySQL server image, such as `mysql:9.7`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The sites: at least two PrimaryCandidate sites, at most 16 sites in all. A site cannot be
    /// removed.
    #[schemars(length(min = 2, max = 16))]
    #[x_kube(
        merge_strategy = ListMerge::Map(vec!["name".into()]),
        validation = Rule::new("self.filter(s, !has(s.role) || s.role == 'PrimaryCandidate').size() >= 2")
            .message("spec.sites needs at least two PrimaryCandidate sites"),
        validation = Rule::new("oldSelf.all(o, self.exists(s, s.name == o.name))")
            .message("a site cannot be removed from spec.sites; to drop one, replace the group")
    )]
    pub sites: Vec<SiteSpec>,
    /// MySQL settings merged into every site's generated my.cnf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql_conf: Option<BTreeMap<String, String>>,
    /// The Secrets holding the MySQL accounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<CredentialsSpec>,
    /// The DNS record that names the active site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<DnsSpec>,
    /// The per-pod sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sidecar: Option<SidecarSpec>,
    /// Lag thresholds for followers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<ReplicationSpec>,
    /// The anti-flap window after any failover, planned or emergency (default 5m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "5m"))]
    pub failover_cooldown: Option<Duration>,
    /// How often the topology manager polls every site, 500ms to 1m (default 2s). The detection
    /// bound of a failed primary is `pollInterval × failureThreshold`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "2s"))]
    #[x_kube(validation = Rule::new("duration(self) >= duration('500ms') && duration(self) <= duration('1m')")
        .message("pollInterval must be between 500ms and 1m"))]
    pub poll_interval: Option<Duration>,
    /// Consecutive unreachable polls before the active site counts as failed, 1 to 20
    /// (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 20), extend("default" = 3))]
    pub failure_threshold: Option<u32>,
    /// Consecutive reachable polls before a read-only active site is made writable again, 1 to
    /// 20 (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 20), extend("default" = 2))]
    pub recovery_threshold: Option<u32>,
    /// The split-brain tiebreaker and emergency-failover priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_brain_policy: Option<SplitBrainPolicy>,
    /// Cluster-wide planned-failover knobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_failover: Option<PlannedFailoverSpec>,
    /// The optional Dragonfly sidekick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dragonfly: Option<DragonflySpec>,
    /// Backup profiles, schedules and PITR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<BackupSpec>,
    /// A one-shot bootstrap restore; fixed at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_from_backup: Option<InitFromBackupSpec>,
    /// A re-triggerable destructive restore into the live primary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_in_place: Option<RestoreInPlaceSpec>,
}

open_enum! {
    /// What a site may become.
    pub enum SiteRole (Closed) {
        /// Promotable; the default.
        PrimaryCandidate = "PrimaryCandidate",
        /// A follower kept for disaster recovery; never promoted automatically.
        DisasterRecovery = "DisasterRecovery",
        /// A reader: an application read pool, never promoted.
        ReadOnly = "ReadOnly",
    }
}

/// One site of the group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteSpec {
    /// The site's name, a DNS label.
    #[schemars(length(min = 1, max = 63), regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub name: String,
    /// The MySQL `server_id` pinned for this site.
    #[serde(rename = "serverID")]
    #[schemars(range(min = 1, max = 4_294_967_295_u32))]
    pub server_id: u32,
    /// The site's role (default PrimaryCandidate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "PrimaryCandidate"))]
    pub role: Option<SiteRole>,
    /// The zone the site's pod runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Labels of the nodes that get this group's read-only taint; ignored for readers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taint_node_selector: Option<BTreeMap<String, String>>,
    /// The address the DNS record points at while this site is active; ignored for readers.
    #[serde(rename = "loadBalancerIP", default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_ip: Option<String>,
    /// The site's data volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<SiteStorage>,
    /// MySQL settings for this site only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql_conf: Option<BTreeMap<String, String>>,
    /// The site's client Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_template: Option<ServiceTemplate>,
}

impl SiteSpec {
    /// The role, with the default applied.
    pub fn effective_role(&self) -> SiteRole {
        self.role.clone().unwrap_or(SiteRole::PrimaryCandidate)
    }
}

/// A site's data volume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteStorage {
    /// The StorageClass of the data claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// The size of the data claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Quantity>,
}

open_enum! {
    /// A Service type.
    pub enum ServiceType (Closed) {
        ClusterIp = "ClusterIP",
        LoadBalancer = "LoadBalancer",
        NodePort = "NodePort",
    }
}

/// The shape of a site's client Service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceTemplate {
    /// The Service type.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<ServiceType>,
    /// `Cluster` or `Local`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_traffic_policy: Option<String>,
    /// Annotations for the Service (load-balancer settings, for example).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// The Secrets holding the MySQL accounts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsSpec {
    /// The operator account (also used by restore Jobs).
    pub operator_secret_name: String,
    /// The backup account; defaults to the operator account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_secret_name: Option<String>,
}

/// The DNS record that names the active site.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DnsSpec {
    /// The record's name.
    pub hostname: String,
    /// The record's TTL in seconds (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 60))]
    pub ttl: Option<i64>,
}

/// The sidecar that runs beside MySQL in every pod.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSpec {
    /// The sidecar image; empty means the operator's own version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// How long the primary's sidecar waits, with the operator and every peer unreachable, before
    /// it fences its MySQL (default 20s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "20s"))]
    pub lease_timeout: Option<Duration>,
    /// How often the sidecar probes its peers and its server's role (default 5s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "5s"))]
    pub peer_check_interval: Option<Duration>,
}

/// Lag thresholds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicationSpec {
    /// Lag beyond which a follower is unhealthy (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0), extend("default" = 300))]
    pub max_lag_seconds: Option<i64>,
    /// The stricter lag threshold for reader client endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub read_only_max_lag_seconds: Option<i64>,
}

/// The split-brain tiebreaker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SplitBrainPolicy {
    /// PrimaryCandidate sites in order of preference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub site_priorities: Vec<String>,
}

open_enum! {
    /// What admission does when the anti-flap cooldown is active.
    pub enum OnCooldown (Closed) {
        /// End the run `NotStarted{CooldownActive}` and remove the annotation (the default).
        Reject = "Reject",
        /// Keep the annotation and retry at `admission.retryTime`.
        Defer = "Defer",
    }
}

/// Cluster-wide planned-failover knobs. Omitting the block means
/// `{maxLagWait: 5m, drainTimeout: 30s, onCooldown: Reject}`.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFailoverSpec {
    /// How long WaitingForLag waits for the target, 1s to 1h (default 5m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "5m"))]
    #[x_kube(validation = Rule::new("duration(self) >= duration('1s') && duration(self) <= duration('1h')")
        .message("maxLagWait must be between 1s and 1h"))]
    pub max_lag_wait: Option<Duration>,
    /// Upper bound on the Draining phase, 1s to 10m (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "30s"))]
    #[x_kube(validation = Rule::new("duration(self) >= duration('1s') && duration(self) <= duration('10m')")
        .message("drainTimeout must be between 1s and 10m"))]
    pub drain_timeout: Option<Duration>,
    /// Reject (default) or Defer while the cooldown is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Reject"))]
    pub on_cooldown: Option<OnCooldown>,
}

open_enum! {
    /// What happens when Dragonfly cannot prove session preservation.
    pub enum OnSyncTimeout (Closed) {
        /// Promote MySQL anyway and record the sessions as lost (the default).
        Proceed = "Proceed",
        /// Roll the planned failover back before the MySQL promotion.
        Fail = "Fail",
    }
}

/// The optional Dragonfly sidekick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DragonflySpec {
    /// Whether Dragonfly runs beside MySQL (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub enabled: Option<bool>,
    /// The Dragonfly image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Planned-failover knobs for Dragonfly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_failover: Option<DragonflyPlannedFailoverSpec>,
}

/// Dragonfly's planned-failover knobs. Omitting the block means
/// `{maxSyncWait: 30s, onSyncTimeout: Proceed}`.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DragonflyPlannedFailoverSpec {
    /// The sync wait and REPLTAKEOVER budget, 1s to 10m (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "30s"))]
    #[x_kube(validation = Rule::new("duration(self) >= duration('1s') && duration(self) <= duration('10m')")
        .message("maxSyncWait must be between 1s and 10m"))]
    pub max_sync_wait: Option<Duration>,
    /// Proceed (default) or Fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Proceed"))]
    pub on_sync_timeout: Option<OnSyncTimeout>,
}

/// Defaults the spec states for values the API leaves optional.
pub mod defaults {
    /// `spec.failoverCooldown`.
    pub const FAILOVER_COOLDOWN: std::time::Duration = std::time::Duration::from_secs(300);
    /// `spec.pollInterval`.
    pub const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);
    /// `spec.pollInterval`'s bounds (the CEL rule's).
    pub const POLL_INTERVAL_RANGE: std::ops::RangeInclusive<std::time::Duration> =
        std::time::Duration::from_millis(500)..=std::time::Duration::from_secs(60);
    /// `spec.failureThreshold`.
    pub const FAILURE_THRESHOLD: u32 = 3;
    /// `spec.recoveryThreshold`.
    pub const RECOVERY_THRESHOLD: u32 = 2;
    /// `spec.plannedFailover.maxLagWait`.
    pub const MAX_LAG_WAIT: std::time::Duration = std::time::Duration::from_secs(300);
    /// Bounds of `maxLagWait` (spec and annotation override).
    pub const MAX_LAG_WAIT_RANGE: std::ops::RangeInclusive<std::time::Duration> =
        std::time::Duration::from_secs(1)..=std::time::Duration::from_secs(3600);
    /// `spec.plannedFailover.drainTimeout`.
    pub const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
    /// Bounds of `drainTimeout`.
    pub const DRAIN_TIMEOUT_RANGE: std::ops::RangeInclusive<std::time::Duration> =
        std::time::Duration::from_secs(1)..=std::time::Duration::from_secs(600);
    /// `spec.dragonfly.plannedFailover.maxSyncWait`.
    pub const MAX_SYNC_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
    /// Bounds of `maxSyncWait`.
    pub const MAX_SYNC_WAIT_RANGE: std::ops::RangeInclusive<std::time::Duration> =
        std::time::Duration::from_secs(1)..=std::time::Duration::from_secs(600);
    /// `spec.sidecar.leaseTimeout`.
    pub const LEASE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
    /// `spec.replication.maxLagSeconds`.
    pub const MAX_LAG_SECONDS: i64 = 300;
    /// `spec.backup.maxLagSecondsForSource`.
    pub const MAX_LAG_SECONDS_FOR_SOURCE: i64 = 300;
    /// `spec.backup.image`.
    pub const BACKUP_IMAGE: &str = "container-registry.oracle.com/mysql/community-server:9.7";
    /// `retention.keepLast` of a backup profile.
    pub const KEEP_LAST: i32 = 7;
    /// `retention.keepFailed` of a backup profile.
    pub const KEEP_FAILED: i32 = 10;
    /// `verification.retention.keepLast`.
    pub const VERIFICATION_KEEP_LAST: i32 = 30;
    /// `verification.retention.keepFailed`.
    pub const VERIFICATION_KEEP_FAILED: i32 = 10;
    /// `spec.backup.pitr.maxBinlogSize`.
    pub const MAX_BINLOG_SIZE: &str = "100M";
    /// `spec.backup.schedules[].timeZone`.
    pub const TIME_ZONE: &str = "Etc/UTC";
}

/// Why an effective planned-failover setting cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("{field}: {source}")]
    Invalid {
        field: &'static str,
        #[source]
        source: crate::duration::DurationError,
    },
    #[error("{field} {value} is outside {min:?}..={max:?}")]
    OutOfRange {
        field: &'static str,
        value: String,
        min: std::time::Duration,
        max: std::time::Duration,
    },
}

/// Parses an optional duration, applies its default and checks its bounds.
fn effective(
    field: &'static str,
    value: Option<&Duration>,
    default: std::time::Duration,
    range: std::ops::RangeInclusive<std::time::Duration>,
) -> Result<std::time::Duration, SettingError> {
    let Some(value) = value else { return Ok(default) };
    let parsed = value.to_std().map_err(|source| SettingError::Invalid { field, source })?;
    if range.contains(&parsed) {
        Ok(parsed)
    } else {
        Err(SettingError::OutOfRange {
            field,
            value: value.as_str().to_owned(),
            min: *range.start(),
            max: *range.end(),
        })
    }
}

impl PlannedFailoverSpec {
    /// `maxLagWait` with its default; a zero or out-of-range value is refused, not defaulted.
    pub fn effective_max_lag_wait(&self) -> Result<std::time::Duration, SettingError> {
        effective(
            "maxLagWait",
            self.max_lag_wait.as_ref(),
            defaults::MAX_LAG_WAIT,
            defaults::MAX_LAG_WAIT_RANGE,
        )
    }

    /// `drainTimeout` with its default; a zero or out-of-range value is refused, not defaulted.
    pub fn effective_drain_timeout(&self) -> Result<std::time::Duration, SettingError> {
        effective(
            "drainTimeout",
            self.drain_timeout.as_ref(),
            defaults::DRAIN_TIMEOUT,
            defaults::DRAIN_TIMEOUT_RANGE,
        )
    }

    /// `onCooldown` with its default.
    pub fn effective_on_cooldown(&self) -> OnCooldown {
        self.on_cooldown.clone().unwrap_or(OnCooldown::Reject)
    }
}

impl DragonflyPlannedFailoverSpec {
    /// `maxSyncWait` with its default; a zero or out-of-range value is refused, not defaulted.
    pub fn effective_max_sync_wait(&self) -> Result<std::time::Duration, SettingError> {
        effective(
            "maxSyncWait",
            self.max_sync_wait.as_ref(),
            defaults::MAX_SYNC_WAIT,
            defaults::MAX_SYNC_WAIT_RANGE,
        )
    }

    /// `onSyncTimeout` with its default.
    pub fn effective_on_sync_timeout(&self) -> OnSyncTimeout {
        self.on_sync_timeout.clone().unwrap_or(OnSyncTimeout::Proceed)
    }
}

impl MysqlFailoverGroupSpec {
    /// `failoverCooldown` with its default.
    pub fn effective_failover_cooldown(&self) -> Result<std::time::Duration, SettingError> {
        let any = std::time::Duration::ZERO..=std::time::Duration::MAX;
        effective(
            "failoverCooldown",
            self.failover_cooldown.as_ref(),
            defaults::FAILOVER_COOLDOWN,
            any,
        )
    }

    /// `pollInterval` with its default; an out-of-range value is refused, not defaulted.
    pub fn effective_poll_interval(&self) -> Result<std::time::Duration, SettingError> {
        effective(
            "pollInterval",
            self.poll_interval.as_ref(),
            defaults::POLL_INTERVAL,
            defaults::POLL_INTERVAL_RANGE,
        )
    }

    /// `failureThreshold` with its default, clamped to its schema bounds.
    pub fn effective_failure_threshold(&self) -> u32 {
        self.failure_threshold.unwrap_or(defaults::FAILURE_THRESHOLD).clamp(1, 20)
    }

    /// `recoveryThreshold` with its default, clamped to its schema bounds.
    pub fn effective_recovery_threshold(&self) -> u32 {
        self.recovery_threshold.unwrap_or(defaults::RECOVERY_THRESHOLD).clamp(1, 20)
    }

    /// The spec of a site.
    pub fn site(&self, name: &str) -> Option<&SiteSpec> {
        self.sites.iter().find(|site| site.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration as Std;

    #[test]
    fn omitted_settings_take_the_spec_defaults() {
        let spec = PlannedFailoverSpec::default();
        assert_eq!(spec.effective_max_lag_wait(), Ok(Std::from_secs(300)));
        assert_eq!(spec.effective_drain_timeout(), Ok(Std::from_secs(30)));
        assert_eq!(spec.effective_on_cooldown(), OnCooldown::Reject);
        let dragonfly = DragonflyPlannedFailoverSpec::default();
        assert_eq!(dragonfly.effective_max_sync_wait(), Ok(Std::from_secs(30)));
        assert_eq!(dragonfly.effective_on_sync_timeout(), OnSyncTimeout::Proceed);
    }

    #[test]
    fn zero_or_out_of_range_timers_are_refused_not_defaulted() {
        let spec = |text: &str| PlannedFailoverSpec {
            max_lag_wait: Some(Duration::new(text)),
            drain_timeout: Some(Duration::new(text)),
            on_cooldown: None,
        };
        assert_eq!(spec("1h").effective_max_lag_wait(), Ok(Std::from_secs(3600)));
        assert_eq!(spec("10m").effective_drain_timeout(), Ok(Std::from_secs(600)));
        assert!(matches!(
            spec("0s").effective_max_lag_wait(),
            Err(SettingError::OutOfRange { field: "maxLagWait", .. })
        ));
        assert!(matches!(
            spec("11m").effective_drain_timeout(),
            Err(SettingError::OutOfRange { field: "drainTimeout", .. })
        ));
        assert!(matches!(
            spec("5 minutes").effective_max_lag_wait(),
            Err(SettingError::Invalid { field: "maxLagWait", .. })
        ));
        let message = spec("2h").effective_max_lag_wait().unwrap_err().to_string();
        assert_eq!(message, "maxLagWait 2h is outside 1s..=3600s");
    }
}
