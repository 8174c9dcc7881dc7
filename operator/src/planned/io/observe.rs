//! The [`Observation`] of one pass, built from what the topology manager's poll already read
//! (the group object, every site's flags, executed set and channel) plus the one thing it does
//! not read: each site's `@@server_uuid`, read only while a planned failover is live.

use std::collections::BTreeMap;
use std::time::Duration;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::{
    PlannedFailoverPhase, SiteState, SourceConvergenceReason, SourceConvergenceState,
};
use bloodraven_facts::{GroupObservation, SiteObservation};
use jiff::{SignedDuration, Timestamp};
use mysql_async::Pool;

use crate::observe::{self as site_io, Bounds};
use crate::planned::{
    Busy, Channel, ClaimSlot, FailoverRecord, Knobs, ManagerState, Observation, Probe, Reading,
    Report, RunRecord, SiteView, TargetHealth, parse_request,
};
use crate::restore::{bootstrap, guards};
use crate::topology::Deferral;

/// The query of the one reading the manager's observation lacks.
const SERVER_UUID: &str = "SELECT @@global.server_uuid";

/// Every site's `@@server_uuid`, read concurrently (a site that does not answer has none).
pub(crate) async fn server_uuids(
    pools: &BTreeMap<String, Pool>,
    bounds: Bounds,
) -> BTreeMap<String, String> {
    let reads = pools.iter().map(|(site, pool)| async move {
        let read = async {
            let mut conn = site_io::connect(pool, bounds).await?;
            let rows = site_io::rows(&mut conn, SERVER_UUID, bounds).await?;
            rows.into_iter()
                .next()
                .and_then(|row| row.get::<String, usize>(0))
                .ok_or(bloodraven_facts::Unreachable::Error)
        };
        (site.clone(), read.await.ok())
    });
    futures::future::join_all(reads)
        .await
        .into_iter()
        .filter_map(|(site, uuid)| uuid.map(|uuid| (site, uuid)))
        .collect()
}

/// The durable record of the run as the group's status carries it.
pub(crate) fn run_record(group: &MysqlFailoverGroup, memory: crate::planned::Memory) -> RunRecord {
    let status = group.status.clone().unwrap_or_default();
    let hold_condition = status
        .condition(&bloodraven_crd::ConditionType::AutomaticFailoverHeld)
        .is_some_and(bloodraven_crd::Condition::is_true);
    RunRecord {
        block: status.planned_failover,
        hold: status.planned_failover_hold,
        hold_condition,
        memory,
    }
}

/// Whether the planned-failover code has anything to look at: a request, an acknowledgement,
/// one of its bookkeeping annotations, a live (non-terminal) block, or a hold.
pub(crate) fn relevant(group: &MysqlFailoverGroup, claim: Option<&Deferral>) -> bool {
    if claim.is_some() {
        return true;
    }
    let annotated = group.metadata.annotations.as_ref().is_some_and(|annotations| {
        annotations.keys().any(|key| {
            // The confirmed marker stays after a success; it matters only to a live run.
            (key.starts_with(bloodraven_crd::annotations::PLANNED_FAILOVER)
                && key != bloodraven_crd::annotations::PLANNED_FAILOVER_CONFIRMED)
                || key == bloodraven_crd::annotations::ACKNOWLEDGE_PLANNED_FAILOVER_HOLD
        })
    });
    let status = group.status.clone().unwrap_or_default();
    let live = status
        .planned_failover
        .as_ref()
        .and_then(|block| block.phase.as_ref())
        .is_some_and(|phase| !phase.is_terminal());
    annotated || live || status.automation_held()
}

/// [`relevant`] without counting a bare request annotation (nor an acknowledgement with no
/// hold to acknowledge: it is still looked at while a hold stands).
pub(crate) fn relevant_beyond_request(
    group: &MysqlFailoverGroup,
    claim: Option<&Deferral>,
) -> bool {
    use bloodraven_crd::annotations::{PLANNED_FAILOVER, PLANNED_FAILOVER_CONFIRMED};
    if claim.is_some() {
        return true;
    }
    let bookkeeping = group.metadata.annotations.as_ref().is_some_and(|annotations| {
        annotations.keys().any(|key| {
            key.starts_with(PLANNED_FAILOVER)
                && key != PLANNED_FAILOVER
                && key != PLANNED_FAILOVER_CONFIRMED
        })
    });
    let status = group.status.clone().unwrap_or_default();
    let live = status
        .planned_failover
        .as_ref()
        .and_then(|block| block.phase.as_ref())
        .is_some_and(|phase| !phase.is_terminal());
    bookkeeping || live || status.automation_held()
}

/// The claim slot the durable record implies after a restart: a run in a phase that holds
/// the claim, or a hold.
pub(crate) fn hydrated_claim(group: &MysqlFailoverGroup) -> Option<Deferral> {
    let status = group.status.as_ref()?;
    if let Some(hold) = &status.planned_failover_hold {
        return Some(Deferral::Hold { run_id: hold.run_id.clone() });
    }
    if status.automation_held() {
        return Some(Deferral::Hold { run_id: None });
    }
    let block = status.planned_failover.as_ref()?;
    let run_id = block.run_id.clone()?;
    matches!(
        block.phase,
        Some(
            PlannedFailoverPhase::Fencing
                | PlannedFailoverPhase::Draining
                | PlannedFailoverPhase::WaitingForLag
                | PlannedFailoverPhase::Promoting
                | PlannedFailoverPhase::RollingBack
        )
    )
    .then_some(Deferral::Claim { run_id })
}

/// The claim slot as the decision core models it.
pub(crate) fn claim_slot(claim: Option<&Deferral>) -> ClaimSlot {
    match claim {
        None => ClaimSlot::Free,
        Some(Deferral::Claim { run_id }) => ClaimSlot::Run(run_id.clone()),
        Some(Deferral::Hold { run_id }) => ClaimSlot::Hold(run_id.clone()),
    }
}

/// A std duration as a signed one (saturating).
fn signed(duration: Duration) -> SignedDuration {
    SignedDuration::try_from(duration).unwrap_or(SignedDuration::MAX)
}

/// The knobs of `spec.plannedFailover` and `spec.failoverCooldown`.
fn knobs(group: &MysqlFailoverGroup) -> Knobs {
    let spec = group.spec.planned_failover.clone().unwrap_or_default();
    Knobs {
        max_lag_wait: spec.effective_max_lag_wait().map(signed).map_err(|e| e.to_string()),
        drain_timeout: spec.effective_drain_timeout().map(signed).map_err(|e| e.to_string()),
        on_cooldown: spec.effective_on_cooldown(),
        cooldown: group
            .spec
            .effective_failover_cooldown()
            .map(signed)
            .unwrap_or(SignedDuration::from_mins(5)),
    }
}

/// `status.lastFailover` as the core reads it; a record without a time or target is
/// unreadable.
fn last_failover(group: &MysqlFailoverGroup) -> Result<Option<FailoverRecord>, String> {
    let Some(last) = group.status.as_ref().and_then(|s| s.last_failover.as_ref()) else {
        return Ok(None);
    };
    match (&last.time, &last.target) {
        (Some(time), Some(target)) => Ok(Some(FailoverRecord {
            time: time.0,
            target: target.clone(),
            gtid: last.promotion_gtid_executed.clone().unwrap_or_default(),
        })),
        _ => Err("status.lastFailover lacks its time or target".to_owned()),
    }
}

/// One site's probe: the manager's reading plus its `@@server_uuid`.
fn probe(
    site: &SiteObservation,
    uuid: Option<&String>,
    addresses: &BTreeMap<String, (String, u16)>,
) -> Probe {
    let Ok(reading) = &site.reading else { return Probe::Unreadable };
    let Some(uuid) = uuid else { return Probe::Unreadable };
    let channel = reading.replica.as_ref().map(|replica| Channel {
        source_site: addresses
            .iter()
            .find(|(_, (host, port))| *host == replica.source_host && *port == replica.source_port)
            .map(|(name, _)| name.clone()),
        io_running: replica.io_running,
        sql_running: replica.sql_running,
        applier_error: !replica.last_sql_error.is_empty(),
    });
    Probe::Answered(Reading {
        server_uuid: Some(uuid.clone()),
        read_only: reading.read_only,
        super_read_only: reading.super_read_only,
        gtid_executed: reading.gtid_executed.to_string(),
        channel,
        app_sessions: None,
    })
}

/// What `status.sites` says about the target beyond its live probe: a divergence report
/// (`Blocked`/`GTIDDiverged`), or not a healthy read-only replica (another state, or Blocked
/// for another reason). A target without a status entry yet is left to the live checks
/// (admission waits for it as TargetNotReady).
pub(crate) fn target_health(group: &MysqlFailoverGroup, target: Option<&str>) -> TargetHealth {
    let entry = target.and_then(|target| group.status.as_ref()?.site(target));
    let reclone_pending = target
        .zip(group.status.as_ref())
        .is_some_and(|(target, status)| guards::awaits_reclone(status, target));
    let Some(entry) = entry else {
        return TargetHealth { reclone_pending, ..TargetHealth::default() };
    };
    let blocked = entry.source_convergence_state == Some(SourceConvergenceState::Blocked);
    TargetHealth {
        divergence_report: blocked
            && entry.source_convergence_reason == Some(SourceConvergenceReason::GtidDiverged),
        unhealthy: entry.state != Some(SiteState::ReadOnly) || blocked,
        reclone_pending,
        ..TargetHealth::default()
    }
}

/// The other topology changes that hold the sites (the claim waits for them): an emergency
/// failover in flight, a bootstrap restore not yet succeeded.
fn busy(group: &MysqlFailoverGroup, pending_failover: bool) -> Vec<Busy> {
    let mut busy = Vec::new();
    if pending_failover {
        busy.push(Busy::Promotion);
    }
    if bootstrap::plan::gated(group) {
        busy.push(Busy::Bootstrap);
    }
    busy
}

/// What one pass needs besides the group.
pub(crate) struct Inputs<'a> {
    /// The manager's site readings.
    pub(crate) sites: &'a GroupObservation,
    /// Each answering site's `@@server_uuid`.
    pub(crate) uuids: &'a BTreeMap<String, String>,
    /// The address of each site's internal Service.
    pub(crate) addresses: &'a BTreeMap<String, (String, u16)>,
    /// The claim slot.
    pub(crate) claim: Option<&'a Deferral>,
    /// An emergency failover's intent is recorded and not finished.
    pub(crate) pending_failover: bool,
    /// The latest status write of the run failed.
    pub(crate) status_write_failing: bool,
    /// The applier's reports of the last effects.
    pub(crate) reports: Vec<Report>,
}

/// The observation of one pass.
pub(crate) fn observation(group: &MysqlFailoverGroup, inputs: Inputs<'_>) -> Observation {
    let sites: Vec<SiteView> = group
        .spec
        .sites
        .iter()
        .map(|spec| {
            let probe = inputs
                .sites
                .sites
                .iter()
                .find(|site| site.site == spec.name)
                .map_or(Probe::Unreadable, |site| {
                    probe(site, inputs.uuids.get(&spec.name), inputs.addresses)
                });
            SiteView { name: spec.name.clone(), role: spec.effective_role(), probe }
        })
        .collect();
    let annotations = group.metadata.annotations.clone().unwrap_or_default();
    let target = annotations
        .get(bloodraven_crd::annotations::PLANNED_FAILOVER)
        .and_then(|value| parse_request(value).ok())
        .map(|request| request.target)
        .or_else(|| {
            group.status.as_ref().and_then(|s| s.planned_failover.as_ref()?.target_site.clone())
        });
    let target_health = target_health(group, target.as_deref());
    Observation {
        resource_version: group.metadata.resource_version.clone().unwrap_or_default(),
        generation: group.metadata.generation.unwrap_or_default(),
        annotations,
        new_run_id: uuid::Uuid::new_v4().to_string(),
        sites,
        active_site: group.status.as_ref().and_then(|s| s.active_site.clone()),
        last_failover: last_failover(group),
        dragonfly_enabled: group
            .spec
            .dragonfly
            .as_ref()
            .and_then(|dragonfly| dragonfly.enabled)
            .unwrap_or(false),
        knobs: knobs(group),
        manager: ManagerState::Ready,
        claim: claim_slot(inputs.claim),
        busy: busy(group, inputs.pending_failover),
        concurrent_operation: group.status.as_ref().is_some_and(guards::in_place_in_progress),
        reservation_refused: None,
        deployment_hold: None,
        target_health,
        status_write_failing: inputs.status_write_failing,
        reports: inputs.reports,
    }
}

/// Now, for the decision core (the one clock read of a pass).
pub(crate) fn now() -> Timestamp {
    Timestamp::now()
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::group::{
        MysqlFailoverGroupStatus, PlannedFailoverHold, PlannedFailoverStatus,
    };
    use bloodraven_facts::{ReplicaObservation, ServerReading, Unreachable};

    use super::*;

    fn group(status: MysqlFailoverGroupStatus) -> MysqlFailoverGroup {
        let mut group = bloodraven_crd::fixtures::GroupFixture::three_sites().build();
        group.status = Some(status);
        group
    }

    fn block(phase: PlannedFailoverPhase) -> MysqlFailoverGroupStatus {
        MysqlFailoverGroupStatus {
            planned_failover: Some(PlannedFailoverStatus {
                run_id: Some("r1".into()),
                phase: Some(phase),
                ..PlannedFailoverStatus::default()
            }),
            ..MysqlFailoverGroupStatus::default()
        }
    }

    #[test]
    fn a_poll_that_returns_early_still_passes_a_run_in_flight_but_not_a_new_request() {
        let mut request = group(MysqlFailoverGroupStatus::default());
        request.metadata.annotations = Some(
            [(bloodraven_crd::annotations::PLANNED_FAILOVER.to_owned(), "pdx".to_owned())].into(),
        );
        assert!(relevant(&request, None), "the regular step takes a new request");
        assert!(!relevant_beyond_request(&request, None), "an early return leaves it waiting");
        let running = group(block(PlannedFailoverPhase::WaitingForLag));
        assert!(relevant_beyond_request(&running, None));
        let ended = group(block(PlannedFailoverPhase::Failed));
        assert!(!relevant_beyond_request(&ended, None));
        let claim = Deferral::Claim { run_id: "r1".into() };
        assert!(relevant_beyond_request(&ended, Some(&claim)), "a held claim slot");
        let mut marked = group(block(PlannedFailoverPhase::Failed));
        marked.metadata.annotations = Some(
            [(bloodraven_crd::annotations::PLANNED_FAILOVER_TERMINAL.to_owned(), "{}".to_owned())]
                .into(),
        );
        assert!(relevant_beyond_request(&marked, None), "a terminal marker");
    }

    #[test]
    fn a_restart_hydrates_the_claim_of_a_run_that_holds_it_and_a_hold() {
        for phase in [
            PlannedFailoverPhase::Fencing,
            PlannedFailoverPhase::Draining,
            PlannedFailoverPhase::WaitingForLag,
            PlannedFailoverPhase::Promoting,
            PlannedFailoverPhase::RollingBack,
        ] {
            assert_eq!(
                hydrated_claim(&group(block(phase.clone()))),
                Some(Deferral::Claim { run_id: "r1".into() }),
                "{phase:?}"
            );
        }
        for phase in [
            PlannedFailoverPhase::Admitting,
            PlannedFailoverPhase::Publishing,
            PlannedFailoverPhase::Succeeded,
            PlannedFailoverPhase::Failed,
        ] {
            assert_eq!(hydrated_claim(&group(block(phase.clone()))), None, "{phase:?}");
        }
        let held = MysqlFailoverGroupStatus {
            planned_failover_hold: Some(PlannedFailoverHold {
                run_id: Some("r0".into()),
                ..PlannedFailoverHold::default()
            }),
            ..block(PlannedFailoverPhase::Failed)
        };
        assert_eq!(
            hydrated_claim(&group(held)),
            Some(Deferral::Hold { run_id: Some("r0".into()) })
        );
    }

    #[test]
    fn the_target_health_comes_from_status_sites() {
        use bloodraven_crd::group::SiteStatus;
        let site = |state, convergence, reason| SiteStatus {
            name: "pdx".into(),
            state: Some(state),
            source_convergence_state: convergence,
            source_convergence_reason: reason,
            ..SiteStatus::default()
        };
        let with = |entry: SiteStatus| {
            group(MysqlFailoverGroupStatus { sites: vec![entry], ..Default::default() })
        };
        let healthy =
            with(site(SiteState::ReadOnly, Some(SourceConvergenceState::Converged), None));
        assert_eq!(target_health(&healthy, Some("pdx")), TargetHealth::default());
        let diverged = with(site(
            SiteState::ReadOnly,
            Some(SourceConvergenceState::Blocked),
            Some(SourceConvergenceReason::GtidDiverged),
        ));
        assert!(target_health(&diverged, Some("pdx")).divergence_report);
        let down = with(site(SiteState::Unreachable, None, None));
        assert!(target_health(&down, Some("pdx")).unhealthy);
        assert!(!target_health(&down, Some("fra")).unhealthy, "no entry: the live checks");
    }

    #[test]
    fn a_restore_in_progress_and_a_queued_target_come_from_status() {
        use bloodraven_crd::group::{
            RestoreInPlacePhase, RestoreInPlaceStatus, RestoreReclones, RestoreReclonesPhase,
        };
        let queue = |phase| RestoreReclones {
            phase: Some(phase),
            pending: vec!["pdx".into()],
            ..RestoreReclones::default()
        };
        let run = |phase| RestoreInPlaceStatus { phase: Some(phase), ..Default::default() };
        let with = |status: MysqlFailoverGroupStatus| group(status);
        let idle = with(MysqlFailoverGroupStatus::default());
        assert!(!guards::in_place_in_progress(idle.status.as_ref().unwrap()));
        for (status, in_progress) in [
            (
                MysqlFailoverGroupStatus {
                    restore_in_place: Some(run(RestoreInPlacePhase::Restoring)),
                    ..Default::default()
                },
                true,
            ),
            (
                MysqlFailoverGroupStatus {
                    restore_in_place: Some(run(RestoreInPlacePhase::Preflight)),
                    ..Default::default()
                },
                false,
            ),
            (
                MysqlFailoverGroupStatus {
                    restore_in_place: Some(run(RestoreInPlacePhase::Succeeded)),
                    restore_reclones: Some(queue(RestoreReclonesPhase::Armed)),
                    ..Default::default()
                },
                true,
            ),
            (
                MysqlFailoverGroupStatus {
                    restore_in_place: Some(run(RestoreInPlacePhase::Succeeded)),
                    restore_reclones: Some(queue(RestoreReclonesPhase::Draining)),
                    ..Default::default()
                },
                false,
            ),
        ] {
            assert_eq!(guards::in_place_in_progress(&status), in_progress, "{status:?}");
        }
        let held = with(MysqlFailoverGroupStatus {
            restore_reclones: Some(queue(RestoreReclonesPhase::Held)),
            ..Default::default()
        });
        assert!(target_health(&held, Some("pdx")).reclone_pending, "pdx is queued");
        assert!(!target_health(&held, Some("fra")).reclone_pending, "fra is not");
    }

    #[test]
    fn an_idle_group_costs_no_pass() {
        assert!(!relevant(&group(block(PlannedFailoverPhase::Succeeded)), None));
        assert!(relevant(&group(block(PlannedFailoverPhase::Draining)), None));
        let claim = Deferral::Claim { run_id: "r1".into() };
        assert!(relevant(&group(MysqlFailoverGroupStatus::default()), Some(&claim)));
        let mut requested = group(MysqlFailoverGroupStatus::default());
        requested.metadata.annotations = Some(
            [(bloodraven_crd::annotations::PLANNED_FAILOVER.to_owned(), "pdx".to_owned())].into(),
        );
        assert!(relevant(&requested, None));
        let mut succeeded = group(block(PlannedFailoverPhase::Succeeded));
        succeeded.metadata.annotations = Some(
            [(
                bloodraven_crd::annotations::PLANNED_FAILOVER_CONFIRMED.to_owned(),
                "r1:since=20261130T220000Z".to_owned(),
            )]
            .into(),
        );
        assert!(!relevant(&succeeded, None), "the confirmed marker of a finished run");
    }

    #[test]
    fn a_probe_names_its_channel_source_by_address_and_needs_the_server_uuid() {
        let addresses: BTreeMap<String, (String, u16)> =
            [("iad".to_owned(), ("127.0.0.1".to_owned(), 4001))].into();
        let site = SiteObservation {
            site: "pdx".into(),
            observed_at: Timestamp::UNIX_EPOCH,
            reading: Ok(ServerReading {
                read_only: true,
                super_read_only: true,
                offline_mode: false,
                gtid_executed: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5".parse().unwrap(),
                replica: Some(ReplicaObservation {
                    source_host: "127.0.0.1".into(),
                    source_port: 4001,
                    io_running: true,
                    io_connecting: false,
                    sql_running: true,
                    seconds_behind_source: Some(0),
                    auto_position: true,
                    last_io_error: String::new(),
                    last_sql_error: String::new(),
                    retrieved_gtid_set: Default::default(),
                }),
            }),
        };
        let uuid = "7a1d0c22-71ca-11e1-9e33-c80aa9429562".to_owned();
        let Probe::Answered(reading) = probe(&site, Some(&uuid), &addresses) else {
            panic!("answered");
        };
        assert_eq!(reading.server_uuid.as_deref(), Some(uuid.as_str()));
        let channel = reading.channel.unwrap();
        assert_eq!(channel.source_site.as_deref(), Some("iad"));
        assert!(channel.healthy());
        assert_eq!(probe(&site, None, &addresses), Probe::Unreadable, "no identity, no answer");
        let down = SiteObservation { reading: Err(Unreachable::Refused), ..site };
        assert_eq!(probe(&down, Some(&uuid), &addresses), Probe::Unreadable);
    }
}
