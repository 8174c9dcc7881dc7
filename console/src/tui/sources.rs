//! Sources: kube-runtime watchers turned into owned [`DataEvent`]s. They own no UI state;
//! they report their connection status and retry with backoff. Every event is tagged with
//! the epoch the source was started for ([`Tagged`]), so the loop can drop what a source of
//! an older context or scope still sends. Groups are watched as raw objects and decoded one
//! by one ([`crate::decode`]): one object that does not decode is listed as unreadable.

use std::fmt::Debug;
use std::time::Duration;

use bloodraven_crd::{MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};
use futures::StreamExt as _;
use jiff::Timestamp;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Event;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::action::{Change, DataEvent};
use super::state::{ConnectionStatus, Key, OperatorLease, Scope, SourceKind};
use crate::archive::ArchiveRequest;

/// The longest wait between reconnection attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The operator's leader Lease (namespace, name): the operator's defaults
/// (`--leader-election-namespace`, `--leader-election-id`). `BLOODRAVEN_OPERATOR_LEASE=ns/name`
/// names another.
pub const OPERATOR_LEASE: (&str, &str) = ("bloodraven-system", "bloodraven-operator");

/// The Lease to watch: `BLOODRAVEN_OPERATOR_LEASE` (`namespace/name`) when set and well
/// formed, else [`OPERATOR_LEASE`].
pub fn operator_lease_name(configured: Option<&str>) -> (String, String) {
    configured
        .and_then(|text| text.split_once('/'))
        .filter(|(namespace, name)| {
            !namespace.is_empty() && !name.is_empty() && !name.contains('/')
        })
        .map_or_else(
            || (OPERATOR_LEASE.0.to_owned(), OPERATOR_LEASE.1.to_owned()),
            |(namespace, name)| (namespace.to_owned(), name.to_owned()),
        )
}

/// The kinds whose Events the console shows.
const EVENT_KINDS: [&str; 3] = ["MysqlFailoverGroup", "MysqlBackup", "MysqlBackupVerification"];

/// A data event and the epoch of the source that sent it.
#[derive(Clone, Debug)]
pub struct Tagged {
    pub epoch: u64,
    pub event: DataEvent,
}

/// Where sources send: tags each event with the source's epoch.
#[derive(Clone, Debug)]
struct Sink {
    epoch: u64,
    sender: mpsc::Sender<Tagged>,
}

impl Sink {
    /// `false` when the console is gone.
    async fn send(&self, event: DataEvent) -> bool {
        self.sender.send(Tagged { epoch: self.epoch, event }).await.is_ok()
    }
}

/// Starts one watcher per kind for `epoch`; abort the handles to stop them.
pub fn spawn(
    client: &Client,
    scope: &Scope,
    sender: &mpsc::Sender<Tagged>,
    epoch: u64,
) -> Vec<JoinHandle<()>> {
    let sink = Sink { epoch, sender: sender.clone() };
    let groups = ApiResource::erase::<MysqlFailoverGroup>(&());
    let groups: Api<DynamicObject> = match scope {
        Scope::Namespace(namespace) => Api::namespaced_with(client.clone(), namespace, &groups),
        Scope::All => Api::all_with(client.clone(), &groups),
    };
    let configured = std::env::var("BLOODRAVEN_OPERATOR_LEASE").ok();
    let (lease_namespace, lease_name) = operator_lease_name(configured.as_deref());
    vec![
        tokio::spawn(operator_lease(client.clone(), lease_namespace, lease_name, sink.clone())),
        // Decoded as each object arrives: the initial list never holds every raw object.
        tokio::spawn(watch(
            groups,
            SourceKind::Groups,
            decode_group,
            group_events,
            sink.clone(),
            |_| true,
        )),
        tokio::spawn(watch(
            api::<MysqlBackup>(client, scope),
            SourceKind::Backups,
            std::convert::identity,
            |change| vec![DataEvent::Backups(change)],
            sink.clone(),
            |_| true,
        )),
        tokio::spawn(watch(
            api::<MysqlBackupVerification>(client, scope),
            SourceKind::Verifications,
            std::convert::identity,
            |change| vec![DataEvent::Verifications(change)],
            sink.clone(),
            |_| true,
        )),
        tokio::spawn(watch(
            api::<Event>(client, scope),
            SourceKind::Events,
            std::convert::identity,
            |change| vec![DataEvent::Events(change)],
            sink,
            |event| {
                event
                    .involved_object
                    .kind
                    .as_deref()
                    .is_some_and(|kind| EVENT_KINDS.contains(&kind))
            },
        )),
    ]
}

/// A raw group decoded as it arrives ([`crate::decode`]), boxed as the state keeps it, without
/// `metadata.managedFields` (the console never shows them).
pub fn decode_group(
    object: DynamicObject,
) -> Result<Box<MysqlFailoverGroup>, crate::decode::Unreadable> {
    let mut group =
        Box::new(crate::decode::decode::<MysqlFailoverGroup>("MysqlFailoverGroup", object)?);
    group.metadata.managed_fields = None;
    Ok(group)
}

/// The group events of a change to decoded groups: the groups (a relist as
/// [`DataEvent::GroupsListed`]), and the unreadable listed.
pub fn group_events(
    change: Change<Result<Box<MysqlFailoverGroup>, crate::decode::Unreadable>>,
) -> Vec<DataEvent> {
    let one =
        |decoded: Result<Box<MysqlFailoverGroup>, crate::decode::Unreadable>,
         good: fn(Box<MysqlFailoverGroup>) -> Change<MysqlFailoverGroup>,
         bad: fn(Box<crate::decode::Unreadable>) -> Change<crate::decode::Unreadable>| {
            match decoded {
                Ok(group) => DataEvent::Groups(good(group)),
                Err(unreadable) => DataEvent::UnreadableGroups(bad(Box::new(unreadable))),
            }
        };
    match change {
        Change::Restarted(decoded) => {
            let mut groups = Vec::with_capacity(decoded.len());
            let mut unreadable = Vec::new();
            for item in decoded {
                match item {
                    Ok(group) => groups.push(group),
                    Err(error) => unreadable.push(error),
                }
            }
            vec![
                DataEvent::GroupsListed(groups),
                DataEvent::UnreadableGroups(Change::Restarted(unreadable)),
            ]
        }
        Change::Applied(decoded) => vec![one(*decoded, Change::Applied, Change::Applied)],
        Change::Deleted(decoded) => vec![one(*decoded, Change::Deleted, Change::Deleted)],
    }
}

fn api<K>(client: &Client, scope: &Scope) -> Api<K>
where
    K: Resource<Scope = NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match scope {
        Scope::Namespace(namespace) => Api::namespaced(client.clone(), namespace),
        Scope::All => Api::all(client.clone()),
    }
}

/// Reads a group's archive once (list and get only, [`crate::archive::load`]) and reports the
/// outcome as a [`DataEvent::Archive`] of `epoch`; the coverage is computed here, off the UI
/// loop.
pub fn read_archive(
    access: crate::archive::ArchiveAccess,
    key: Key,
    request: ArchiveRequest,
    sender: &mpsc::Sender<Tagged>,
    epoch: u64,
) -> JoinHandle<()> {
    let sink = Sink { epoch, sender: sender.clone() };
    tokio::spawn(async move {
        let outcome = crate::archive::load(&access, &request).await;
        if let crate::archive::ArchiveOutcome::Failed(error) = &outcome {
            tracing::warn!(group = ?key, %error, "reading the archive failed");
        }
        sink.send(DataEvent::Archive { key, outcome, at: Timestamp::now() }).await;
    })
}

/// Watches the operator's leader Lease (one object, by name, in its namespace; read-only) and
/// reports it as [`DataEvent::OperatorLease`]: seen, absent, or unreadable with the error (a
/// console whose role does not cover Leases says so and keeps working). Retries with
/// [`backoff`]. Its failures are not the data sources' connection status.
async fn operator_lease(client: Client, namespace: String, name: String, sink: Sink) {
    use k8s_openapi::api::coordination::v1::Lease;
    let api: Api<Lease> = Api::namespaced(client, &namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let seen = |lease: &Lease| {
        let spec = lease.spec.as_ref();
        OperatorLease::Seen {
            namespace: namespace.clone(),
            name: name.clone(),
            holder: spec.and_then(|spec| spec.holder_identity.clone()),
            renewed: spec
                .and_then(|spec| spec.renew_time.as_ref().or(spec.acquire_time.as_ref()))
                .map(|time| time.0),
        }
    };
    let absent = || OperatorLease::Absent { namespace: namespace.clone(), name: name.clone() };
    let mut stream = watcher(api, config).boxed();
    let mut listed: Option<OperatorLease> = None;
    let mut failures = 0_u32;
    while let Some(item) = stream.next().await {
        let report = match item {
            Ok(event) => {
                failures = 0;
                match event {
                    watcher::Event::Init => {
                        listed = Some(absent());
                        continue;
                    }
                    watcher::Event::InitApply(lease) => {
                        listed = Some(seen(&lease));
                        continue;
                    }
                    watcher::Event::InitDone => listed.take().unwrap_or_else(absent),
                    watcher::Event::Apply(lease) => seen(&lease),
                    watcher::Event::Delete(_) => absent(),
                }
            }
            Err(error) => {
                failures += 1;
                tracing::warn!(lease = %name, %namespace, %error, failures, "watching the operator's Lease failed");
                let report = OperatorLease::Unreadable {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    error: error.to_string(),
                };
                if !sink.send(DataEvent::OperatorLease(report)).await {
                    return;
                }
                tokio::time::sleep(backoff(failures)).await;
                continue;
            }
        };
        if !sink.send(DataEvent::OperatorLease(report)).await {
            return;
        }
    }
}

/// The delay before attempt `failures + 1`: 1 s, 2 s, 4 s … up to [`MAX_BACKOFF`].
pub fn backoff(failures: u32) -> Duration {
    let seconds = 1_u64 << failures.saturating_sub(1).min(5);
    Duration::from_secs(seconds).min(MAX_BACKOFF)
}

/// Watches `api`: each object `keep` accepts is turned into `T` by `convert` as it arrives
/// (the initial list buffers converted items only), and each change is sent as `wrap` says.
async fn watch<K, T>(
    api: Api<K>,
    source: SourceKind,
    convert: fn(K) -> T,
    wrap: fn(Change<T>) -> Vec<DataEvent>,
    sink: Sink,
    keep: fn(&K) -> bool,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    T: Send + 'static,
{
    let status =
        |status: ConnectionStatus| DataEvent::Connection { source, status, at: Timestamp::now() };
    if !sink.send(status(ConnectionStatus::Connecting)).await {
        return;
    }
    let mut stream = watcher(api, watcher::Config::default()).boxed();
    let mut buffer = Vec::new();
    let mut failures = 0_u32;
    let mut since: Option<Timestamp> = None;
    while let Some(item) = stream.next().await {
        let event = match item {
            Ok(event) => {
                if failures > 0 {
                    failures = 0;
                    since = None;
                    tracing::info!(?source, "watch reconnected");
                }
                event
            }
            Err(error) => {
                failures += 1;
                let delay = backoff(failures);
                let now = Timestamp::now();
                let started = *since.get_or_insert(now);
                let retry_at = now
                    .checked_add(jiff::SignedDuration::from_secs(
                        i64::try_from(delay.as_secs()).unwrap_or(30),
                    ))
                    .unwrap_or(now);
                tracing::warn!(?source, %error, failures, "watch failed");
                let reconnecting = ConnectionStatus::Reconnecting {
                    since: started,
                    retry_at,
                    error: error.to_string(),
                };
                if !sink.send(status(reconnecting)).await {
                    return;
                }
                tokio::time::sleep(delay).await;
                continue;
            }
        };
        let change = match event {
            watcher::Event::Init => {
                buffer.clear();
                continue;
            }
            watcher::Event::InitApply(object) => {
                if keep(&object) {
                    buffer.push(convert(object));
                }
                continue;
            }
            watcher::Event::InitDone => Change::Restarted(std::mem::take(&mut buffer)),
            watcher::Event::Apply(object) if keep(&object) => {
                Change::Applied(Box::new(convert(object)))
            }
            watcher::Event::Delete(object) if keep(&object) => {
                Change::Deleted(Box::new(convert(object)))
            }
            watcher::Event::Apply(_) | watcher::Event::Delete(_) => continue,
        };
        for event in wrap(change) {
            if !sink.send(event).await {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_lease_is_the_operators_default_unless_configured_well() {
        let default = ("bloodraven-system".to_owned(), "bloodraven-operator".to_owned());
        assert_eq!(operator_lease_name(None), default);
        assert_eq!(
            operator_lease_name(Some("ops/leader")),
            ("ops".to_owned(), "leader".to_owned())
        );
        for bad in ["", "no-slash", "/name", "ns/", "a/b/c"] {
            assert_eq!(operator_lease_name(Some(bad)), default, "{bad:?}");
        }
    }

    /// A relist reaches the state boxed (`GroupsListed`: 10,000 groups are never moved
    /// inline), without managedFields; an undecodable object is listed as unreadable.
    #[test]
    fn a_relist_is_decoded_boxed_without_managed_fields() {
        let mut value = crate::scenarios::fleet(1).remove(0);
        value["metadata"]["managedFields"] = serde_json::json!([{
            "manager": "bloodraven-operator", "operation": "Apply", "fieldsType": "FieldsV1",
            "fieldsV1": { "f:status": {} },
        }]);
        let good: DynamicObject = serde_json::from_value(value).unwrap();
        let mut bad = good.clone();
        bad.metadata.name = Some("bad".to_owned());
        bad.data["spec"]["sites"] = serde_json::json!("not a list");
        let decoded = vec![decode_group(good), decode_group(bad)];
        let events = group_events(Change::Restarted(decoded));
        let [DataEvent::GroupsListed(groups), DataEvent::UnreadableGroups(Change::Restarted(bad))] =
            events.as_slice()
        else {
            panic!("{events:?}")
        };
        let [group] = groups.as_slice() else { panic!("{groups:?}") };
        assert_eq!(group.metadata.name.as_deref(), Some("db-0000"));
        assert_eq!(group.metadata.managed_fields, None);
        let [bad] = bad.as_slice() else { panic!("{bad:?}") };
        assert_eq!((bad.name.as_str(), bad.path.as_str()), ("bad", "spec.sites"));
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let delays: Vec<u64> = (1..=8).map(|failures| backoff(failures).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 30, 30, 30]);
    }
}
