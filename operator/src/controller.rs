//! The `MysqlFailoverGroup` controller (kube-rs controller shape): `reconcile` applies the
//! site workloads by server-side apply and makes sure the group's topology manager runs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_workloads::{Resolver, check_group, site_objects};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, reflector};
use kube::runtime::{PredicateConfig, WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use crate::manager::{GroupKey, Published, Shared, Tuning, run_group};
use crate::status::FIELD_MANAGER;

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The group has no namespace (a cluster-scoped copy cannot be reconciled).
    #[error("the group has no metadata.namespace")]
    NoNamespace,
    /// The group's spec cannot be turned into workloads.
    #[error("the group's spec cannot be built into workloads: {0}; fix the spec")]
    Workload(#[from] bloodraven_workloads::WorkloadError),
    /// The API server refused an apply.
    #[error("applying {what}: {source}")]
    Kube {
        /// What.
        what: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
}

/// What every reconcile shares.
pub struct Context {
    /// The topology managers' shared state (client, resolver, recorder, tuning, published).
    pub shared: Arc<Shared>,
    tasks: Mutex<BTreeMap<GroupKey, JoinHandle<()>>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Context").field("shared", &self.shared).finish_non_exhaustive()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if let Ok(tasks) = self.tasks.lock() {
            for task in tasks.values() {
                task.abort();
            }
        }
    }
}

impl Context {
    /// A context for `client`, dialling Services through `resolver`.
    pub fn new(
        client: kube::Client,
        resolver: Arc<dyn Resolver>,
        tuning: Tuning,
        instance: &str,
    ) -> Self {
        let reporter =
            Reporter { controller: FIELD_MANAGER.to_owned(), instance: Some(instance.to_owned()) };
        let recorder = Recorder::new(client.clone(), reporter);
        Self {
            shared: Arc::new(Shared {
                client,
                resolver,
                recorder,
                tuning,
                metrics: Arc::default(),
                published: Published::default(),
                claims: crate::manager::ClaimSlots::default(),
                pods: crate::pods::PodCache::default(),
                pitr: crate::pitr_archive::PitrRegistry::default(),
            }),
            tasks: Mutex::default(),
        }
    }

    /// Starts the group's topology manager unless it runs.
    fn ensure_manager(&self, key: GroupKey) {
        let Ok(mut tasks) = self.tasks.lock() else { return };
        if tasks.get(&key).is_some_and(|task| !task.is_finished()) {
            return;
        }
        tracing::info!(namespace = %key.namespace, group = %key.name, "starting topology manager");
        let task = tokio::spawn(run_group(self.shared.clone(), key.clone()));
        tasks.insert(key, task);
    }
}

async fn apply<K>(client: &kube::Client, namespace: &str, object: &K) -> Result<(), Error>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + Serialize
        + DeserializeOwned,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let name = object.name_any();
    api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(object))
        .await
        .map(drop)
        .map_err(|source| Error::Kube {
            what: format!("{} {name}", K::kind(&K::DynamicType::default())),
            source,
        })
}

/// Applies every site's ConfigMap, PVC, Services and Deployment, then makes sure the topology
/// manager runs. The `-primary` Service is the manager's: its selector follows the active site.
pub async fn reconcile(
    group: Arc<MysqlFailoverGroup>,
    context: Arc<Context>,
) -> Result<Action, Error> {
    let namespace = group.namespace().ok_or(Error::NoNamespace)?;
    let key = GroupKey { namespace, name: group.name_any() };
    if !crate::validate::check(&group.spec).is_empty() {
        // A refused spec changes no workload; the manager publishes InvalidSpec and waits.
        tracing::warn!(namespace = %key.namespace, group = %key.name, "spec refused; workloads unchanged");
        context.ensure_manager(key);
        return Ok(Action::requeue(Duration::from_secs(300)));
    }
    let namespace = key.namespace.clone();
    check_group(&group)?;
    let client = &context.shared.client;
    for site in &group.spec.sites {
        let objects = site_objects(&group, &site.name)?;
        apply::<ConfigMap>(client, &namespace, &objects.configmap).await?;
        apply::<PersistentVolumeClaim>(client, &namespace, &objects.pvc).await?;
        apply::<Service>(client, &namespace, &objects.services.internal).await?;
        apply::<Service>(client, &namespace, &objects.services.client).await?;
        apply::<Deployment>(client, &namespace, &objects.deployment).await?;
    }
    // PITR: what `/pitr-cutoff` checks callers against and the archive roll-up polls.
    let pitr =
        bloodraven_workloads::pitr::render(&group)?.map(|render| crate::pitr_archive::GroupPitr {
            render,
            sites: group.spec.sites.iter().map(|site| site.name.clone()).collect(),
        });
    context.shared.pitr.set_group(&key, pitr);
    context.ensure_manager(key);
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// Retries a failed reconcile after 10 s.
pub fn error_policy(
    group: Arc<MysqlFailoverGroup>,
    error: &Error,
    _context: Arc<Context>,
) -> Action {
    tracing::warn!(group = %group.name_any(), %error, "reconcile failed");
    Action::requeue(Duration::from_secs(10))
}

/// Reconciles a group as stored, read without its type first: one object that does not read as
/// a `MysqlFailoverGroup` (a hand edit, a skewed CRD) must not stop the watch of every other
/// group, as a typed list would (its one bad item fails the whole list). An unreadable group is
/// reported (log, `GroupUnreadable` Event, best-effort `Ready=False` condition) and left alone.
pub async fn reconcile_stored(
    object: Arc<DynamicObject>,
    context: Arc<Context>,
) -> Result<Action, Error> {
    match read_group(&object) {
        Ok(group) => reconcile(Arc::new(group), context).await,
        Err(problem) => {
            unreadable(&object, &problem, &context).await;
            Ok(Action::requeue(Duration::from_secs(60)))
        }
    }
}

/// The typed group of a stored object, or what does not read, with its path.
pub fn read_group(object: &DynamicObject) -> Result<MysqlFailoverGroup, String> {
    let value = serde_json::to_value(object).map_err(|error| error.to_string())?;
    serde_path_to_error::deserialize::<_, MysqlFailoverGroup>(value).map_err(|error| {
        let path = error.path().to_string();
        format!(
            "the stored MysqlFailoverGroup does not read at {path}: {}; fix that field (for \
             status: kubectl edit --subresource=status, or remove the field) or run an operator \
             that knows it; the operator takes no action on this group meanwhile",
            error.inner()
        )
    })
}

async fn unreadable(object: &DynamicObject, problem: &str, context: &Context) {
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let name = object.name_any();
    tracing::warn!(%namespace, group = %name, problem, "group unreadable");
    let resource = ApiResource::erase::<MysqlFailoverGroup>(&());
    let reference = object.object_ref(&resource);
    let event = Event {
        type_: EventType::Warning,
        reason: UNREADABLE.to_owned(),
        note: Some(problem.to_owned()),
        action: UNREADABLE.to_owned(),
        secondary: None,
    };
    if let Err(error) = context.shared.recorder.publish(&event, &reference).await {
        tracing::debug!(%error, "event not recorded");
    }
    let condition = serde_json::json!({
        "type": "Ready",
        "status": "False",
        "reason": UNREADABLE,
        "message": problem,
        "lastTransitionTime": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    });
    let body = serde_json::json!({
        "apiVersion": "shipstream.io/v1alpha1",
        "kind": "MysqlFailoverGroup",
        "status": { "conditions": [condition] },
    });
    let api: Api<DynamicObject> =
        Api::namespaced_with(context.shared.client.clone(), &namespace, &resource);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    if let Err(error) = api.patch_status(&name, &params, &Patch::Apply(&body)).await {
        tracing::debug!(%error, group = %name, "the unreadable group's condition was not written");
    }
}

/// The Event reason and condition reason of a group that does not read.
pub const UNREADABLE: &str = "GroupUnreadable";

/// Retries a failed reconcile of a stored group after 10 s.
pub fn error_policy_stored(
    object: Arc<DynamicObject>,
    error: &Error,
    _context: Arc<Context>,
) -> Action {
    tracing::warn!(group = %object.name_any(), %error, "reconcile failed");
    Action::requeue(Duration::from_secs(10))
}

/// What a reconcile builds from: everything of a group but its status and bookkeeping
/// (`metadata.generation` moves with the spec; labels and annotations do not move it). A
/// change of this hash triggers a reconcile; a status-only write does not.
fn workload_inputs(object: &DynamicObject) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let meta = &object.metadata;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (
        &meta.uid,
        meta.generation,
        &meta.labels,
        &meta.annotations,
        meta.deletion_timestamp.is_some(),
    )
        .hash(&mut hasher);
    // Without a generation (an API server that does not track it), hash the rest of the
    // object but its status, so that spec changes still trigger.
    if meta.generation.is_none() {
        let mut data = object.data.clone();
        if let Some(map) = data.as_object_mut() {
            map.remove("status");
        }
        data.to_string().hash(&mut hasher);
    }
    Some(hasher.finish())
}

/// Runs the controller until the stream ends. `namespace`: watch one namespace, or all.
pub async fn run(context: Arc<Context>, namespace: Option<&str>) {
    let client = context.shared.client.clone();
    let resource = ApiResource::erase::<MysqlFailoverGroup>(&());
    let groups: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let deployments: Api<Deployment> = match namespace {
        Some(namespace) => Api::namespaced(client, namespace),
        None => Api::all(client),
    };
    // Reconcile on what the workloads are built from (spec, labels, annotations, identity),
    // not on every status write: the topology managers write the status every poll, and a
    // reconcile per write cost 15 server-side applies per group per poll (issue 12). The
    // periodic requeue and the owned Deployments still trigger as before.
    let writer = reflector::store::Writer::<DynamicObject>::new(resource.clone());
    let reader = writer.as_reader();
    let trigger = reflector(writer, watcher(groups, watcher::Config::default()))
        .applied_objects()
        .predicate_filter(workload_inputs, PredicateConfig::default());
    let shared = context.shared.clone();
    let controller = Controller::for_stream_with(trigger, reader, resource)
        .owns(deployments, watcher::Config::default())
        .run(reconcile_stored, error_policy_stored, context)
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => tracing::debug!(group = %object.name, "reconciled"),
                Err(error) => tracing::debug!(%error, "reconcile error"),
            }
        });
    // The pod watch and the PITR archive roll-up run as long as the controller does.
    let pitr = crate::pitr_archive::run(
        shared.clone(),
        namespace.map(str::to_owned),
        crate::pitr_archive::POLL_INTERVAL,
    );
    // The MysqlBackup controller (backup/controller.rs) shares the client and recorder.
    let backups = Arc::new(crate::backup::controller::BackupContext {
        shared: shared.clone(),
        image: bloodraven_workloads::DEFAULT_SIDECAR_IMAGE.to_owned(),
    });
    // The MysqlBackupVerification controller (backup/verification/), the same sharing.
    let verifications = Arc::new(crate::backup::verification::controller::VerificationContext {
        shared: shared.clone(),
        image: bloodraven_workloads::DEFAULT_SIDECAR_IMAGE.to_owned(),
    });
    tokio::select! {
        () = controller => {}
        () = shared.pods.run(shared.client.clone(), namespace) => {}
        () = pitr => {}
        () = crate::backup::controller::run(backups, namespace) => {}
        () = crate::backup::verification::controller::run(verifications, namespace) => {}
        // Schedules' CronJobs, their runs' MysqlBackups and retention (backup/housekeeping.rs).
        () = crate::backup::housekeeping::run(
            shared.clone(),
            namespace,
            bloodraven_workloads::DEFAULT_SIDECAR_IMAGE.to_owned(),
        ) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(generation: Option<i64>, status: &str) -> DynamicObject {
        let resource = ApiResource::erase::<MysqlFailoverGroup>(&());
        let mut object = DynamicObject::new("orders", &resource).within("orders");
        object.metadata.uid = Some("u-1".to_owned());
        object.metadata.generation = generation;
        object.data = serde_json::json!({
            "spec": { "sites": [] },
            "status": { "activeSite": status },
        });
        object
    }

    #[test]
    fn a_status_write_does_not_trigger_a_reconcile_and_a_spec_or_label_change_does() {
        let base = workload_inputs(&group(Some(1), "iad"));
        assert_eq!(workload_inputs(&group(Some(1), "pdx")), base);
        assert_ne!(workload_inputs(&group(Some(2), "iad")), base);
        let mut labelled = group(Some(1), "iad");
        labelled.metadata.labels = Some([("team".to_owned(), "a".to_owned())].into());
        assert_ne!(workload_inputs(&labelled), base);
        // Without a generation the spec itself counts, the status still does not.
        let untracked = workload_inputs(&group(None, "iad"));
        assert_eq!(workload_inputs(&group(None, "pdx")), untracked);
        let mut changed = group(None, "iad");
        changed.data["spec"]["sites"] = serde_json::json!([{ "name": "iad" }]);
        assert_ne!(workload_inputs(&changed), untracked);
    }
}
