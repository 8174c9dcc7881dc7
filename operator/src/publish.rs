//! Publishing the active site: the `-primary` Service (server-side apply), the pods' `role`
//! and `healthy` labels, and the snapshot `/active-site` serves.

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::SiteState;
use bloodraven_workloads::{labels, primary_service};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};

use crate::manager::{ActiveSnapshot, GroupKey, PollError, Shared, kube_error};
use crate::status::FIELD_MANAGER;

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

pub(crate) async fn publish_primary(
    shared: &Shared,
    group: &MysqlFailoverGroup,
    key: &GroupKey,
    active: Option<&str>,
    promoted: Option<&str>,
    facts: &[bloodraven_facts::SiteFacts],
) -> Result<(), PollError> {
    let services: Api<Service> = Api::namespaced(shared.client.clone(), &key.namespace);
    let service = primary_service(group, active)?;
    let name = service.name_any();
    services
        .patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&service))
        .await
        .map_err(kube_error(format!("applying Service {name}")))?;
    // Pod labels: role=primary only on the active, writable site; healthy on answering sites.
    let pods: Api<Pod> = Api::namespaced(shared.client.clone(), &key.namespace);
    let selector = labels::group_label_selector(&key.name);
    let list = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(kube_error("listing the group's pods"))?;
    for pod in list.items {
        let pod_labels = pod.labels();
        let Some(site) = pod_labels.get(labels::SITE) else { continue };
        let fact = facts.iter().find(|fact| &fact.name == site);
        let writable =
            fact.is_some_and(|fact| fact.is_writable()) || promoted == Some(site.as_str());
        let role = if active == Some(site.as_str()) && writable {
            labels::ROLE_PRIMARY
        } else {
            labels::ROLE_REPLICA
        };
        let healthy = fact
            .is_some_and(|fact| matches!(fact.state, SiteState::Writable | SiteState::ReadOnly));
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
