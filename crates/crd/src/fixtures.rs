//! Test builders for other crates (feature `test-fixtures`).
//!
//! `GroupFixture::three_sites()` is the spec's three-site example (`iad` and `pdx`
//! PrimaryCandidate, `fra` DisasterRecovery) with `iad` active and healthy; the `with_*`
//! methods change one thing each. The spec's own status examples are available as values:
//! [`succeeded_planned_failover`] and [`manual_recovery_hold`].

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::backup::{ArtifactStorage, BackupPhase, DeletionPolicy};
use crate::condition::{Condition, ConditionReason, ConditionStatus, ConditionType};
use crate::duration::Duration;
use crate::group::*;
use crate::{MysqlBackup, MysqlBackupSpec, MysqlBackupStatus, MysqlFailoverGroup};

/// The spec's example run id.
pub const EXAMPLE_RUN_ID: &str = "6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10";
/// The spec's example source server UUID (`iad`).
pub const EXAMPLE_SOURCE_UUID: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
/// The spec's example target server UUID (`pdx`).
pub const EXAMPLE_TARGET_UUID: &str = "7a1d0c22-71ca-11e1-9e33-c80aa9429562";
/// The spec's example fenced GTID set.
pub const EXAMPLE_FENCED_SET: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9182731";

/// Parses an RFC 3339 timestamp literal for a fixture.
///
/// # Panics
///
/// On text that is not RFC 3339: a bad literal is a bug in the test that wrote it.
pub fn time(text: &str) -> Time {
    #[allow(clippy::expect_used, reason = "fixture literals are fixed, valid timestamps")]
    Time(text.parse().expect("fixture timestamp is RFC 3339"))
}

/// A builder of `MysqlFailoverGroup` objects for tests.
#[derive(Clone, Debug)]
pub struct GroupFixture {
    group: MysqlFailoverGroup,
}

impl GroupFixture {
    /// `orders` in namespace `orders`: `iad` (active) and `pdx` PrimaryCandidate, `fra`
    /// DisasterRecovery, every site healthy, `Ready=True`.
    pub fn three_sites() -> Self {
        let site = |name: &str, server_id: u32, role: SiteRole, zone: &str, ip: &str| SiteSpec {
            name: name.to_owned(),
            server_id,
            role: Some(role),
            zone: Some(zone.to_owned()),
            taint_node_selector: Some(BTreeMap::from([
                ("bloodraven.shipstream.io/failover-group.orders".to_owned(), "true".to_owned()),
                ("bloodraven.shipstream.io/site.orders".to_owned(), name.to_owned()),
            ])),
            load_balancer_ip: Some(ip.to_owned()),
            storage: Some(SiteStorage {
                storage_class_name: Some("gp3".to_owned()),
                size: Some(Quantity("500Gi".to_owned())),
            }),
            mysql_conf: None,
            service_template: None,
        };
        let spec = MysqlFailoverGroupSpec {
            image: Some("mysql:9.7".to_owned()),
            sites: vec![
                site("iad", 101, SiteRole::PrimaryCandidate, "iad-1a", "10.0.0.10"),
                site("pdx", 102, SiteRole::PrimaryCandidate, "pdx-1a", "10.1.0.10"),
                site("fra", 103, SiteRole::DisasterRecovery, "fra-1a", "10.2.0.10"),
            ],
            mysql_conf: None,
            credentials: Some(CredentialsSpec {
                operator_secret_name: "mysql-operator-creds".to_owned(),
                backup_secret_name: None,
            }),
            dns: Some(DnsSpec { hostname: "orders.db.example.internal".to_owned(), ttl: None }),
            sidecar: None,
            replication: None,
            failover_cooldown: None,
            poll_interval: None,
            failure_threshold: None,
            recovery_threshold: None,
            split_brain_policy: Some(SplitBrainPolicy {
                site_priorities: vec!["iad".to_owned(), "pdx".to_owned()],
            }),
            planned_failover: None,
            dragonfly: None,
            backup: None,
            init_from_backup: None,
            restore_in_place: None,
        };
        let mut group = MysqlFailoverGroup::new("orders", spec);
        group.metadata = ObjectMeta {
            name: Some("orders".to_owned()),
            namespace: Some("orders".to_owned()),
            uid: Some("8d0e8a34-5a8e-4c1e-9f59-0f3c2b1a7d11".to_owned()),
            generation: Some(7),
            ..ObjectMeta::default()
        };
        let observed = |name: &str, state: SiteState| SiteStatus {
            name: name.to_owned(),
            state: Some(state.clone()),
            last_seen: Some(time("2026-04-20T14:30:00Z")),
            gtid_executed: Some(EXAMPLE_FENCED_SET.to_owned()),
            replicating: Some(state != SiteState::Writable),
            seconds_behind_source: (state != SiteState::Writable).then_some(0),
            source_convergence_state: (state != SiteState::Writable)
                .then_some(SourceConvergenceState::Converged),
            ..SiteStatus::default()
        };
        let mut ready = Condition::new(ConditionType::Ready, ConditionStatus::True);
        ready.reason = Some(ConditionReason::Healthy);
        ready.observed_generation = Some(7);
        ready.last_transition_time = Some(time("2026-04-19T09:10:44Z"));
        group.status = Some(MysqlFailoverGroupStatus {
            observed_generation: Some(7),
            active_site: Some("iad".to_owned()),
            sites: vec![
                observed("iad", SiteState::Writable),
                observed("pdx", SiteState::ReadOnly),
                observed("fra", SiteState::ReadOnly),
            ],
            conditions: vec![ready],
            last_failover: Some(LastFailover {
                time: Some(time("2026-04-19T09:10:44Z")),
                target: Some("iad".to_owned()),
                promotion_gtid_executed: Some(
                    "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100".to_owned(),
                ),
                ..LastFailover::default()
            }),
            ..MysqlFailoverGroupStatus::default()
        });
        Self { group }
    }

    fn status(&mut self) -> &mut MysqlFailoverGroupStatus {
        self.group.status.get_or_insert_with(MysqlFailoverGroupStatus::default)
    }

    /// Renames the group (and its namespace stays).
    pub fn with_name(mut self, name: &str) -> Self {
        self.group.metadata.name = Some(name.to_owned());
        self
    }

    /// Moves the group to another namespace.
    pub fn with_namespace(mut self, namespace: &str) -> Self {
        self.group.metadata.namespace = Some(namespace.to_owned());
        self
    }

    /// Sets an annotation.
    pub fn with_annotation(mut self, key: &str, value: &str) -> Self {
        self.group
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(key.to_owned(), value.to_owned());
        self
    }

    /// Appends a ReadOnly reader site, observed read-only.
    pub fn with_reader(mut self, name: &str, server_id: u32) -> Self {
        self.group.spec.sites.push(SiteSpec {
            name: name.to_owned(),
            server_id,
            role: Some(SiteRole::ReadOnly),
            zone: None,
            taint_node_selector: None,
            load_balancer_ip: None,
            storage: None,
            mysql_conf: None,
            service_template: None,
        });
        self.status().sites.push(SiteStatus {
            name: name.to_owned(),
            state: Some(SiteState::ReadOnly),
            replicating: Some(true),
            ..SiteStatus::default()
        });
        self
    }

    /// Makes `site` the active site: it reads writable, every other site read-only.
    pub fn with_active_site(mut self, site: &str) -> Self {
        let status = self.status();
        status.active_site = Some(site.to_owned());
        for observed in &mut status.sites {
            let state =
                if observed.name == site { SiteState::Writable } else { SiteState::ReadOnly };
            observed.state = Some(state);
        }
        self
    }

    /// Sets the observed state of one site.
    pub fn with_site_state(mut self, site: &str, state: SiteState) -> Self {
        if let Some(observed) = self.status().sites.iter_mut().find(|s| s.name == site) {
            observed.state = Some(state);
        }
        self
    }

    /// Sets `spec.plannedFailover`.
    pub fn with_planned_failover_spec(mut self, spec: PlannedFailoverSpec) -> Self {
        self.group.spec.planned_failover = Some(spec);
        self
    }

    /// Sets `status.plannedFailover`.
    pub fn with_planned_failover(mut self, record: PlannedFailoverStatus) -> Self {
        self.status().planned_failover = Some(record);
        self
    }

    /// Records an automation hold and its `AutomaticFailoverHeld=True` condition, as a
    /// ManualRecoveryRequired run writes them.
    pub fn with_hold(mut self, hold: PlannedFailoverHold) -> Self {
        let run = hold.run_id.clone().unwrap_or_default();
        let reason = hold.reason.as_ref().map(|r| r.as_str().to_owned()).unwrap_or_default();
        let mut condition =
            Condition::new(ConditionType::AutomaticFailoverHeld, ConditionStatus::True);
        condition.reason = Some(ConditionReason::PlannedFailoverManualRecoveryRequired);
        condition.observed_generation = self.group.metadata.generation;
        condition.message = Some(hold_message(&run, &reason, &hold.ambiguous_sites));
        let status = self.status();
        status.planned_failover_hold = Some(hold);
        status.conditions.retain(|c| c.type_ != ConditionType::AutomaticFailoverHeld);
        status.conditions.push(condition);
        self
    }

    /// Adds (or replaces) a condition.
    pub fn with_condition(mut self, condition: Condition) -> Self {
        let status = self.status();
        status.conditions.retain(|c| c.type_ != condition.type_);
        status.conditions.push(condition);
        self
    }

    /// Sets `status.lastFailover`.
    pub fn with_last_failover(mut self, last_failover: LastFailover) -> Self {
        self.status().last_failover = Some(last_failover);
        self
    }

    /// Sets `status.restoreReclones`.
    pub fn with_restore_reclones(mut self, reclones: RestoreReclones) -> Self {
        self.status().restore_reclones = Some(reclones);
        self
    }

    /// Adds a backup profile (S3, bucket `shipstream-backups`, prefix = the group's name).
    pub fn with_s3_profile(mut self, profile: &str) -> Self {
        let prefix = self.group.metadata.name.clone();
        self.group.spec.backup.get_or_insert_with(BackupSpec::default).profiles.push(
            BackupProfile {
                name: profile.to_owned(),
                storage: BackupStorage {
                    type_: StorageType::S3,
                    s3: Some(S3Storage {
                        bucket: "shipstream-backups".to_owned(),
                        prefix,
                        region: Some("us-east-1".to_owned()),
                        endpoint_url: None,
                        credentials_secret_name: Some("s3-backup-creds".to_owned()),
                        storage_class: None,
                    }),
                    pvc: None,
                },
                dump: None,
                retention: None,
                encryption: None,
                verification: None,
            },
        );
        self
    }

    /// Drops the status (a group the operator has not reconciled yet).
    pub fn without_status(mut self) -> Self {
        self.group.status = None;
        self
    }

    /// The group.
    pub fn build(self) -> MysqlFailoverGroup {
        self.group
    }
}

/// The `AutomaticFailoverHeld` message of the spec's hold example.
pub fn hold_message(run_id: &str, reason: &str, ambiguous_sites: &[String]) -> String {
    format!(
        "planned failover run {run_id} ended ManualRecoveryRequired ({reason}); writable or \
         ambiguous sites: {}. Automatic failover is held: resolve the split brain by hand, then \
         annotate bloodraven.shipstream.io/acknowledge-planned-failover-hold={run_id}",
        ambiguous_sites.join(", ")
    )
}

/// The spec's example Succeeded `status.plannedFailover` block (iad → pdx, with Dragonfly).
pub fn succeeded_planned_failover() -> PlannedFailoverStatus {
    PlannedFailoverStatus {
        run_id: Some(EXAMPLE_RUN_ID.to_owned()),
        revision: Some(10),
        phase: Some(PlannedFailoverPhase::Succeeded),
        target_site: Some("pdx".to_owned()),
        source_site: Some("iad".to_owned()),
        settings: Some(PlannedFailoverSettings {
            max_lag_wait: Some(Duration::new("5m0s")),
            drain_timeout: Some(Duration::new("30s")),
            dragonfly: Some(DragonflySettings {
                max_sync_wait: Some(Duration::new("30s")),
                on_sync_timeout: Some(OnSyncTimeout::Proceed),
                ..DragonflySettings::default()
            }),
            ..PlannedFailoverSettings::default()
        }),
        start_time: Some(time("2026-04-20T14:32:00Z")),
        claim_time: Some(time("2026-04-20T14:32:01Z")),
        claim_baseline: Some(ClaimBaseline {
            time: Some(time("2026-04-19T09:10:44Z")),
            target: Some("iad".to_owned()),
            ..ClaimBaseline::default()
        }),
        admission: Some(Admission {
            deadline_time: Some(time("2026-04-20T14:34:00Z")),
            ..Admission::default()
        }),
        fence: Some(Fence {
            state: Some(FenceState::Applied),
            intent_time: Some(time("2026-04-20T14:32:01Z")),
            source_server_uuid: Some(EXAMPLE_SOURCE_UUID.to_owned()),
            apply_time: Some(time("2026-04-20T14:32:01Z")),
            gtid_set: Some(EXAMPLE_FENCED_SET.to_owned()),
            ..Fence::default()
        }),
        drain: Some(Drain {
            start_time: Some(time("2026-04-20T14:32:01Z")),
            completion_time: Some(time("2026-04-20T14:32:03Z")),
            remaining_connections: Some(0),
            ..Drain::default()
        }),
        lag_wait: Some(LagWait {
            start_time: Some(time("2026-04-20T14:32:03Z")),
            catch_up_time: Some(time("2026-04-20T14:32:04Z")),
            ..LagWait::default()
        }),
        dragonfly: Some(DragonflyFailover {
            sync_wait_start_time: Some(time("2026-04-20T14:32:04Z")),
            source_offset_state: Some(SourceOffsetState::Captured),
            source_offset: Some(81723),
            sync_wait_seconds: Some(3),
            takeover: Some(Takeover {
                state: Some(TakeoverState::Succeeded),
                intent_time: Some(time("2026-04-20T14:32:07Z")),
                completion_time: Some(time("2026-04-20T14:32:08Z")),
                method: Some(TakeoverMethod::ReplTakeover),
                target_offset: Some(81723),
                ..Takeover::default()
            }),
            sessions: Some(DragonflySessions::Preserved),
            ..DragonflyFailover::default()
        }),
        promotion: Some(Promotion {
            state: Some(PromotionState::Confirmed),
            intent_time: Some(time("2026-04-20T14:32:08Z")),
            target_server_uuid: Some(EXAMPLE_TARGET_UUID.to_owned()),
            confirmation_time: Some(time("2026-04-20T14:32:09Z")),
            ..Promotion::default()
        }),
        dns: Some(DnsPublication {
            state: Some(DnsState::Applied),
            attempt_time: Some(time("2026-04-20T14:32:09Z")),
            ..DnsPublication::default()
        }),
        result: Some(PlannedFailoverResult {
            outcome: Some(PlannedFailoverOutcome::Succeeded),
            completion_time: Some(time("2026-04-20T14:32:10Z")),
            ..PlannedFailoverResult::default()
        }),
        message: Some("promoted \"pdx\"".to_owned()),
        ..PlannedFailoverStatus::default()
    }
}

/// The spec's example automation hold (ForeignWritable; iad and pdx ambiguous).
pub fn manual_recovery_hold() -> PlannedFailoverHold {
    PlannedFailoverHold {
        run_id: Some(EXAMPLE_RUN_ID.to_owned()),
        reason: Some(PlannedFailoverReason::ForeignWritable),
        source_site: Some("iad".to_owned()),
        target_site: Some("pdx".to_owned()),
        ambiguous_sites: vec!["iad".to_owned(), "pdx".to_owned()],
        hold_time: Some(time("2026-04-20T14:32:09Z")),
        ..PlannedFailoverHold::default()
    }
}

/// A builder of `MysqlBackup` objects for tests.
#[derive(Clone, Debug)]
pub struct BackupFixture {
    backup: MysqlBackup,
}

impl BackupFixture {
    /// A backup named `name` of `group`'s `profile`, in namespace `orders`, with no status.
    pub fn new(name: &str, group: &str, profile: &str) -> Self {
        let mut backup = MysqlBackup::new(
            name,
            MysqlBackupSpec {
                failover_group_ref: LocalObjectReference { name: group.to_owned() },
                profile_name: profile.to_owned(),
                source_site: None,
                deletion_policy: None,
            },
        );
        backup.metadata.namespace = Some("orders".to_owned());
        Self { backup }
    }

    /// Sets the deletion policy.
    pub fn with_deletion_policy(mut self, policy: DeletionPolicy) -> Self {
        self.backup.spec.deletion_policy = Some(policy);
        self
    }

    /// A Succeeded S3 backup completed at `completed` (RFC 3339).
    ///
    /// # Panics
    ///
    /// When `completed` is not RFC 3339, as [`time`] does.
    pub fn succeeded(mut self, completed: &str) -> Self {
        let name = self.backup.metadata.name.clone().unwrap_or_default();
        self.backup.status = Some(MysqlBackupStatus {
            phase: Some(BackupPhase::Succeeded),
            start_time: Some(time(completed)),
            completion_time: Some(time(completed)),
            attempt: Some(1),
            artifact_storage: Some(ArtifactStorage {
                type_: Some(StorageType::S3),
                location: Some(format!("s3://shipstream-backups/orders/{name}")),
                bucket: Some("shipstream-backups".to_owned()),
                region: Some("us-east-1".to_owned()),
                ..ArtifactStorage::default()
            }),
            gtid_executed: Some(EXAMPLE_FENCED_SET.to_owned()),
            size_bytes: Some(1 << 20),
            ..MysqlBackupStatus::default()
        });
        self
    }

    /// A Failed backup.
    pub fn failed(mut self, reason: ConditionReason) -> Self {
        let mut ready = Condition::new(ConditionType::Ready, ConditionStatus::False);
        ready.reason = Some(reason);
        self.backup.status = Some(MysqlBackupStatus {
            phase: Some(BackupPhase::Failed),
            conditions: vec![ready],
            ..MysqlBackupStatus::default()
        });
        self
    }

    /// The backup.
    pub fn build(self) -> MysqlBackup {
        self.backup
    }
}
