//! Publishing the active site: the `-primary` Service (server-side apply), the pods' `role`
//! and `healthy` labels, and the snapshot `/active-site` serves.

use std::time::{Duration, Instant};

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_workloads::{labels, primary_service};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use kube::{Resource, ResourceExt};

use crate::manager::{ActiveSnapshot, GroupKey, PollError, Shared, kube_error};
use crate::metrics::GroupLabels;
use crate::status::{FIELD_MANAGER, render_refused};
use crate::topology::{LagThresholds, endpoint_healthy};
use crate::validate;

/// Publishes an Event on the group; best effort (a failure is logged at debug).
pub(crate) async fn event(
    shared: &Shared,
    group: &MysqlFailoverGroup,
    warning: bool,
    reason: &str,
    note: String,
) {
    let reference = group.object_ref(&());
    let event = Event {
        type_: if warning { EventType::Warning } else { EventType::Normal },
        reason: reason.to_owned(),
        note: Some(note),
        action: reason.to_owned(),
        secondary: None,
    };
    if let Err(error) = shared.recorder.publish(&event, &reference).await {
        tracing::debug!(%error, reason, "event not recorded");
    }
}

/// Refuses a group whose spec [`validate::check`] rejects: publishes `Ready=False`/
/// `Degraded=True` with reason `InvalidSpec` (keeping the record), a Warning Event
/// `InvalidSpec` when the message changes, and the `bloodraven_invalid_spec` gauge.
/// `Ok(true)`: the group was refused and the poll must take no action.
pub(crate) async fn refuse_invalid(
    shared: &Shared,
    group: &MysqlFailoverGroup,
    key: &GroupKey,
) -> Result<bool, PollError> {
    let problems = validate::check(&group.spec);
    let labels = GroupLabels { namespace: key.namespace.clone(), group: key.name.clone() };
    shared.metrics.invalid_spec.get_or_create(&labels).set(i64::from(!problems.is_empty()));
    if problems.is_empty() {
        return Ok(false);
    }
    let message = validate::message(&problems);
    let previous = group.status.clone().unwrap_or_default();
    let unchanged = previous
        .condition(&bloodraven_crd::ConditionType::Ready)
        .is_some_and(|ready| ready.message.as_deref() == Some(message.as_str()));
    if !unchanged {
        tracing::warn!(namespace = %key.namespace, group = %key.name, %message, "group refused");
        event(shared, group, true, validate::REASON, message.clone()).await;
    }
    let body = render_refused(&previous, &message, group.metadata.generation, Timestamp::now());
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(shared.client.clone(), &key.namespace);
    groups
        .patch_status(&key.name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(body))
        .await
        .map_err(kube_error("applying the group's status"))?;
    Ok(true)
}

pub(crate) fn publish_snapshot(
    shared: &Shared,
    key: &GroupKey,
    active: Option<String>,
    now: Timestamp,
) {
    let Ok(mut published) = shared.published.lock() else { return };
    let generation = published.get(key).map_or(1, |previous| {
        previous.topology_generation + u64::from(previous.active_site != active)
    });
    published.insert(
        key.clone(),
        ActiveSnapshot { active_site: active, observed_at: now, topology_generation: generation },
    );
}

/// A site pod's `role` label and whether it gets `healthy=true`: `role=primary` only on the
/// active site when it is writable (or was promoted this poll); `healthy` by endpoint gating
/// (`topology::endpoint_healthy`: the writable active site, followers replicating within their
/// lag threshold, readers on the stricter `readOnlyMaxLagSeconds`).
fn pod_role(
    site: &str,
    fact: Option<&bloodraven_facts::SiteFacts>,
    active: Option<&str>,
    promoted: Option<&str>,
    thresholds: LagThresholds,
) -> (&'static str, bool) {
    let writable = fact.is_some_and(|fact| fact.is_writable()) || promoted == Some(site);
    let primary = active == Some(site) && writable;
    let role = if primary { labels::ROLE_PRIMARY } else { labels::ROLE_REPLICA };
    let healthy = primary || fact.is_some_and(|fact| endpoint_healthy(fact, active, thresholds));
    (role, healthy)
}

/// How long an applied `-primary` Service is trusted before it is applied again although it
/// did not change: the repair of a hand edit or a deletion.
pub(crate) const REAPPLY_AFTER: Duration = Duration::from_secs(30);

/// The `-primary` Service this manager last applied successfully, and when.
#[derive(Clone, Debug)]
pub(crate) struct AppliedService {
    service: Service,
    at: Instant,
}

impl AppliedService {
    /// Whether applying `service` at `now` would repeat this apply within [`REAPPLY_AFTER`].
    fn current(&self, service: &Service, now: Instant) -> bool {
        self.service == *service && now.saturating_duration_since(self.at) < REAPPLY_AFTER
    }
}

/// Applies the `-primary` Service (unless `applied` holds the same one, applied less than
/// [`REAPPLY_AFTER`] ago) and the pods' labels.
pub(crate) async fn publish_primary(
    shared: &Shared,
    group: &MysqlFailoverGroup,
    key: &GroupKey,
    active: Option<&str>,
    promoted: Option<&str>,
    facts: &[bloodraven_facts::SiteFacts],
    applied: &mut Option<AppliedService>,
) -> Result<(), PollError> {
    let now = Instant::now();
    let service = primary_service(group, active)?;
    if !applied.as_ref().is_some_and(|applied| applied.current(&service, now)) {
        *applied = None;
        let services: Api<Service> = Api::namespaced(shared.client.clone(), &key.namespace);
        let name = service.name_any();
        services
            .patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&service))
            .await
            .map_err(kube_error(format!("applying Service {name}")))?;
        *applied = Some(AppliedService { service, at: now });
    }
    // Pod labels: role=primary only on the active, writable site; healthy per endpoint gating.
    let pods: Api<Pod> = Api::namespaced(shared.client.clone(), &key.namespace);
    // Labels and names are all this needs: the watched metadata (no pod specs to decode).
    let list = shared
        .pods
        .of_group(&shared.client, &key.namespace, &key.name)
        .await
        .map_err(kube_error("listing the group's pods"))?;
    let thresholds = LagThresholds::from_spec(group.spec.replication.as_ref());
    // Until a bootstrap restore succeeded no pod is primary or healthy: every Service of the
    // group has no endpoints (backup-and-restore, "Applications wait for the restore").
    let gated = crate::restore::bootstrap::gated(group);
    for pod in list {
        let pod_labels = pod.labels();
        let Some(site) = pod_labels.get(labels::SITE) else { continue };
        let fact = facts.iter().find(|fact| &fact.name == site);
        let (role, healthy) = if gated {
            (labels::ROLE_REPLICA, false)
        } else {
            pod_role(site, fact, active, promoted, thresholds)
        };
        let want_healthy = healthy.then_some(labels::HEALTHY_TRUE);
        if pod_labels.get(labels::ROLE).map(String::as_str) == Some(role)
            && pod_labels.get(labels::HEALTHY).map(String::as_str) == want_healthy
        {
            continue;
        }
        let patch = serde_json::json!({
            "metadata": { "labels": { labels::ROLE: role, labels::HEALTHY: want_healthy } }
        });
        let pod_name = pod.name_any();
        pods.patch(&pod_name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map_err(kube_error(format!("labelling pod {pod_name}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::group::{SiteRole, SiteState};
    use bloodraven_facts::{ReplicaObservation, SiteFacts};

    use super::*;

    fn fact(name: &str, role: SiteRole, state: SiteState, lag: Option<i64>) -> SiteFacts {
        SiteFacts {
            name: name.to_owned(),
            role,
            state,
            unreachable: None,
            offline_mode: false,
            gtid_executed: None,
            replica: lag.map(|lag| ReplicaObservation {
                io_running: true,
                sql_running: true,
                seconds_behind_source: Some(lag),
                ..ReplicaObservation::default()
            }),
            observed_at: None,
        }
    }

    #[test]
    fn an_applied_service_is_trusted_while_unchanged_and_recent() {
        let service = |selector: &str| Service {
            metadata: kube::api::ObjectMeta {
                name: Some("mysql-orders-primary".to_owned()),
                ..Default::default()
            },
            spec: Some(k8s_openapi::api::core::v1::ServiceSpec {
                selector: Some([("site".to_owned(), selector.to_owned())].into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let at = Instant::now();
        let applied = AppliedService { service: service("iad"), at };
        assert!(applied.current(&service("iad"), at + Duration::from_secs(29)));
        assert!(!applied.current(&service("pdx"), at + Duration::from_secs(1)));
        assert!(!applied.current(&service("iad"), at + REAPPLY_AFTER));
    }

    #[test]
    fn labels_follow_the_primary_and_endpoint_gating() {
        let gates = LagThresholds { follower: 300, reader: 30 };
        let role = |fact: &SiteFacts, promoted: Option<&str>| {
            pod_role(&fact.name, Some(fact), Some("iad"), promoted, gates)
        };
        let iad = fact("iad", SiteRole::PrimaryCandidate, SiteState::Writable, None);
        assert_eq!(role(&iad, None), (labels::ROLE_PRIMARY, true));
        let promoted = fact("iad", SiteRole::PrimaryCandidate, SiteState::ReadOnly, None);
        assert_eq!(role(&promoted, None), (labels::ROLE_REPLICA, false));
        assert_eq!(role(&promoted, Some("iad")), (labels::ROLE_PRIMARY, true));
        let pdx = fact("pdx", SiteRole::PrimaryCandidate, SiteState::ReadOnly, Some(100));
        assert_eq!(role(&pdx, None), (labels::ROLE_REPLICA, true));
        // A reader lagging beyond readOnlyMaxLagSeconds is not healthy; a follower at the same
        // lag is; a follower that answers but does not replicate is not.
        let reader = fact("rdr", SiteRole::ReadOnly, SiteState::ReadOnly, Some(100));
        assert_eq!(role(&reader, None), (labels::ROLE_REPLICA, false));
        let stopped = fact("fra", SiteRole::DisasterRecovery, SiteState::ReadOnly, None);
        assert_eq!(role(&stopped, None), (labels::ROLE_REPLICA, false));
        assert_eq!(pod_role("ord", None, Some("iad"), None, gates), (labels::ROLE_REPLICA, false));
    }
}
