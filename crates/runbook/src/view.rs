//! The typed view of a group that runbook predicates read (the CEL variable `group`), built from
//! the CRD types. Every field is always present (absent status reads as `""`, `0`, `false` or
//! `[]`, and each optional record has `present`), so expressions never fail on a missing key.
//! [`GROUP_TYPE`] describes the same shape for the checker; a test keeps the two in step.

use bloodraven_crd::MysqlFailoverGroup;
use k8s_time::fmt_time;
use serde::{Deserialize, Serialize};

/// `group`: what a runbook sees of one group.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupView {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `status.activeSite`, `""` when none.
    pub active_site: String,
    /// Every site of the spec, with its observed status.
    pub sites: Vec<SiteView>,
    /// `status.conditions`.
    pub conditions: Vec<ConditionView>,
    /// `status.plannedFailoverHold`: the automation hold.
    pub hold: HoldView,
    /// `status.plannedFailover`: the latest run.
    pub planned_failover: PlannedFailoverView,
    /// `status.restoreReclones`: the post-restore reclone queue.
    pub reclone_queue: RecloneQueueView,
    /// `status.restoreOfflineFence`.
    pub offline_fence: OfflineFenceView,
    /// `status.restore`: the bootstrap restore (`spec.initFromBackup`).
    pub restore: RestoreView,
    /// `status.restoreInPlace`: the latest in-place restore.
    pub restore_in_place: RestoreInPlaceView,
    /// `status.lastFailover.target`, `""` when none.
    pub last_failover_target: String,
    /// `status.pitr.archive`: the archive summary.
    pub archive: ArchiveView,
    /// Backups: `status.lastBackupTime` and the schedules.
    pub backups: BackupsView,
}

/// `group.sites[]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteView {
    /// The site's name.
    pub name: String,
    /// `PrimaryCandidate`, `DisasterRecovery` or `ReadOnly`.
    pub role: String,
    /// `writable`, `read-only`, `unreachable`, `unknown` or `""`.
    pub state: String,
    /// Whether replication runs.
    pub replicating: bool,
    /// Seconds behind its source, `-1` when unknown.
    pub seconds_behind_source: i64,
    /// `Converged`, `Pending`, `Blocked` or `""`.
    pub convergence: String,
    /// `GTIDDiverged`, `RestorePeerHold` or `""`.
    pub convergence_reason: String,
    /// `RecoveryInProgress`, `RecoveryBlocked` or `""`.
    pub recovery_state: String,
    /// Transactions only this site holds, `""` when none.
    pub divergent_gtid: String,
    /// How many (`0` when none or unknown).
    pub divergent_transaction_count: i64,
}

/// `group.conditions[]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionView {
    /// Condition type, such as `Degraded`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The reason, `""` when none.
    pub reason: String,
    /// The message, `""` when none.
    pub message: String,
}

/// `group.hold`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HoldView {
    /// Whether `status.plannedFailoverHold` is set.
    pub present: bool,
    /// The run whose id acknowledges it.
    pub run_id: String,
    /// Why the run held automation.
    pub reason: String,
    /// The run's source site.
    pub source_site: String,
    /// The run's target site.
    pub target_site: String,
    /// Sites whose writability the run could not explain.
    pub ambiguous_sites: Vec<String>,
}

/// `group.plannedFailover`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFailoverView {
    /// Whether `status.plannedFailover` is set.
    pub present: bool,
    /// The run id.
    pub run_id: String,
    /// The phase.
    pub phase: String,
    /// The outcome once terminal, `""` before.
    pub outcome: String,
    /// The outcome's reason.
    pub reason: String,
    /// The source site.
    pub source_site: String,
    /// The target site.
    pub target_site: String,
}

/// `group.recloneQueue`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecloneQueueView {
    /// Whether `status.restoreReclones` is set.
    pub present: bool,
    /// `Armed`, `Draining`, `Held` or `""`.
    pub phase: String,
    /// The restore run that fixed the queue.
    pub run_id: String,
    /// Sites still queued.
    pub pending: Vec<String>,
    /// Reclone failures recorded.
    pub failures: i64,
}

/// `group.offlineFence`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OfflineFenceView {
    /// Whether `status.restoreOfflineFence` is set.
    pub present: bool,
    /// The fenced site.
    pub site: String,
    /// The restore run that raised it.
    pub run_id: String,
}

/// `group.restore`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreView {
    /// Whether `status.restore` is set.
    pub present: bool,
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `""`.
    pub phase: String,
    /// The refusal token (`PITRArchiveGap`, ...), `""` when none.
    pub reason: String,
    /// The message, `""` when none.
    pub message: String,
    /// The seed site.
    pub target_site: String,
}

/// `group.restoreInPlace`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreInPlaceView {
    /// Whether `status.restoreInPlace` is set.
    pub present: bool,
    /// `Preflight`, `Fencing`, `Restoring`, `Resuming`, `Succeeded`, `Failed` or `""`.
    pub phase: String,
    /// Why it failed or waits, `""` when none.
    pub reason: String,
    /// The run's id.
    pub run_id: String,
    /// The primary being restored.
    pub target_site: String,
}

/// `group.archive`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveView {
    /// Whether `status.pitr.archive` is set.
    pub present: bool,
    /// The archive state, `""` when unknown.
    pub state: String,
    /// Why it is not ready, `""` when none.
    pub reason: String,
    /// Oldest archived time (RFC 3339), `""` when none.
    pub oldest_archived_time: String,
    /// Newest archived time (RFC 3339), `""` when none.
    pub newest_archived_time: String,
    /// Sites whose archiver reports a history-integrity violation.
    pub violation_sites: Vec<String>,
}

/// `group.backups`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupsView {
    /// `status.lastBackupTime` (RFC 3339), `""` when none.
    pub last_backup_time: String,
    /// `status.backupSchedules[]`.
    pub schedules: Vec<ScheduleView>,
}

/// `group.backups.schedules[]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleView {
    /// The schedule's name.
    pub name: String,
    /// The last backup's phase, `""` when none.
    pub last_backup_phase: String,
    /// The last success (RFC 3339), `""` when none.
    pub last_success_time: String,
}

mod k8s_time {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    pub(super) fn fmt_time(time: Option<&Time>) -> String {
        time.map(|t| t.0.to_string()).unwrap_or_default()
    }
}

fn text<T: AsRef<str>>(value: Option<T>) -> String {
    value.map(|v| v.as_ref().to_owned()).unwrap_or_default()
}

impl GroupView {
    /// The view of one group.
    pub fn of(group: &MysqlFailoverGroup) -> Self {
        let status = group.status.clone().unwrap_or_default();
        let sites = group
            .spec
            .sites
            .iter()
            .map(|spec| {
                let observed = status.sites.iter().find(|s| s.name == spec.name);
                let observed = observed.cloned().unwrap_or_default();
                SiteView {
                    name: spec.name.clone(),
                    role: spec.effective_role().as_str().to_owned(),
                    state: text(observed.state.as_ref().map(|s| s.as_str())),
                    replicating: observed.replicating.unwrap_or(false),
                    seconds_behind_source: observed.seconds_behind_source.unwrap_or(-1),
                    convergence: text(
                        observed.source_convergence_state.as_ref().map(|s| s.as_str()),
                    ),
                    convergence_reason: text(
                        observed.source_convergence_reason.as_ref().map(|s| s.as_str()),
                    ),
                    recovery_state: text(observed.recovery_state.as_ref().map(|s| s.as_str())),
                    divergent_gtid: text(observed.divergent_gtid.as_ref()),
                    divergent_transaction_count: observed.divergent_transaction_count.unwrap_or(0),
                }
            })
            .collect();
        let conditions = status
            .conditions
            .iter()
            .map(|c| ConditionView {
                type_: c.type_.as_str().to_owned(),
                status: c.status.as_str().to_owned(),
                reason: text(c.reason.as_ref().map(|r| r.as_str())),
                message: text(c.message.as_ref()),
            })
            .collect();
        let hold =
            status.planned_failover_hold.as_ref().map_or_else(HoldView::default, |h| HoldView {
                present: true,
                run_id: text(h.run_id.as_ref()),
                reason: text(h.reason.as_ref().map(|r| r.as_str())),
                source_site: text(h.source_site.as_ref()),
                target_site: text(h.target_site.as_ref()),
                ambiguous_sites: h.ambiguous_sites.clone(),
            });
        let planned_failover =
            status.planned_failover.as_ref().map_or_else(PlannedFailoverView::default, |p| {
                let result = p.result.clone().unwrap_or_default();
                PlannedFailoverView {
                    present: true,
                    run_id: text(p.run_id.as_ref()),
                    phase: text(p.phase.as_ref().map(|x| x.as_str())),
                    outcome: text(result.outcome.as_ref().map(|x| x.as_str())),
                    reason: text(result.reason.as_ref().map(|x| x.as_str())),
                    source_site: text(p.source_site.as_ref()),
                    target_site: text(p.target_site.as_ref()),
                }
            });
        let reclone_queue =
            status.restore_reclones.as_ref().map_or_else(RecloneQueueView::default, |q| {
                RecloneQueueView {
                    present: true,
                    phase: text(q.phase.as_ref().map(|x| x.as_str())),
                    run_id: text(q.run_id.as_ref()),
                    pending: q.pending.clone(),
                    failures: i64::try_from(q.failures.len()).unwrap_or(i64::MAX),
                }
            });
        let offline_fence =
            status.restore_offline_fence.as_ref().map_or_else(OfflineFenceView::default, |f| {
                OfflineFenceView {
                    present: true,
                    site: text(f.site.as_ref()),
                    run_id: text(f.run_id.as_ref()),
                }
            });
        let restore = status.restore.as_ref().map_or_else(RestoreView::default, |r| RestoreView {
            present: true,
            phase: text(r.phase.as_ref().map(|x| x.as_str())),
            reason: text(r.reason.as_ref().map(|x| x.as_str())),
            message: text(r.message.as_ref()),
            target_site: text(r.target_site.as_ref()),
        });
        let restore_in_place =
            status.restore_in_place.as_ref().map_or_else(RestoreInPlaceView::default, |r| {
                RestoreInPlaceView {
                    present: true,
                    phase: text(r.phase.as_ref().map(|x| x.as_str())),
                    reason: text(r.reason.as_ref().map(|x| x.as_str())),
                    run_id: text(r.run_id.as_ref()),
                    target_site: text(r.target_site.as_ref()),
                }
            });
        let last_failover_target =
            text(status.last_failover.as_ref().and_then(|f| f.target.as_ref()));
        let archive = status.pitr.as_ref().map_or_else(ArchiveView::default, |pitr| {
            let identity = pitr.archive.clone();
            ArchiveView {
                present: identity.is_some(),
                state: text(identity.as_ref().and_then(|a| a.state.as_ref()).map(|x| x.as_str())),
                reason: text(identity.as_ref().and_then(|a| a.reason.as_ref()).map(|x| x.as_str())),
                oldest_archived_time: fmt_time(pitr.oldest_archived_time.as_ref()),
                newest_archived_time: fmt_time(pitr.newest_archived_time.as_ref()),
                violation_sites: pitr
                    .sites
                    .iter()
                    .filter(|s| s.history_integrity.as_ref().is_some_and(|h| h.violation.is_some()))
                    .map(|s| s.site.clone())
                    .collect(),
            }
        });
        let backups = BackupsView {
            last_backup_time: fmt_time(status.last_backup_time.as_ref()),
            schedules: status
                .backup_schedules
                .iter()
                .map(|s| ScheduleView {
                    name: s.name.clone(),
                    last_backup_phase: text(s.last_backup_phase.as_ref().map(|x| x.as_str())),
                    last_success_time: fmt_time(s.last_success_time.as_ref()),
                })
                .collect(),
        };
        GroupView {
            name: text(group.metadata.name.as_ref()),
            namespace: text(group.metadata.namespace.as_ref()),
            active_site: text(status.active_site.as_ref()),
            sites,
            conditions,
            hold,
            planned_failover,
            reclone_queue,
            offline_fence,
            restore,
            restore_in_place,
            last_failover_target,
            archive,
            backups,
        }
    }
}
