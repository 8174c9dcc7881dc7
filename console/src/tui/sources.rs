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
use super::state::{ConnectionStatus, Key, Scope, SourceKind};
use crate::archive::ArchiveRequest;

/// The longest wait between reconnection attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

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
    vec![
        tokio::spawn(watch(groups, SourceKind::Groups, decode_groups, sink.clone(), |_| true)),
        tokio::spawn(watch(
            api::<MysqlBackup>(client, scope),
            SourceKind::Backups,
            |change| vec![DataEvent::Backups(change)],
            sink.clone(),
            |_| true,
        )),
        tokio::spawn(watch(
            api::<MysqlBackupVerification>(client, scope),
            SourceKind::Verifications,
            |change| vec![DataEvent::Verifications(change)],
            sink.clone(),
            |_| true,
        )),
        tokio::spawn(watch(
            api::<Event>(client, scope),
            SourceKind::Events,
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

/// The group events of a change to raw objects: decoded groups, and unreadable ones listed.
pub fn decode_groups(change: Change<DynamicObject>) -> Vec<DataEvent> {
    const KIND: &str = "MysqlFailoverGroup";
    let one =
        |object: DynamicObject,
         good: fn(Box<MysqlFailoverGroup>) -> Change<MysqlFailoverGroup>,
         bad: fn(Box<crate::decode::Unreadable>) -> Change<crate::decode::Unreadable>| {
            match crate::decode::decode::<MysqlFailoverGroup>(KIND, object) {
                Ok(group) => DataEvent::Groups(good(Box::new(group))),
                Err(unreadable) => DataEvent::UnreadableGroups(bad(Box::new(unreadable))),
            }
        };
    match change {
        Change::Restarted(objects) => {
            let (groups, unreadable) = crate::decode::decode_all(KIND, objects);
            vec![
                DataEvent::Groups(Change::Restarted(groups)),
                DataEvent::UnreadableGroups(Change::Restarted(unreadable)),
            ]
        }
        Change::Applied(object) => vec![one(*object, Change::Applied, Change::Applied)],
        Change::Deleted(object) => vec![one(*object, Change::Deleted, Change::Deleted)],
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

/// The delay before attempt `failures + 1`: 1 s, 2 s, 4 s … up to [`MAX_BACKOFF`].
pub fn backoff(failures: u32) -> Duration {
    let seconds = 1_u64 << failures.saturating_sub(1).min(5);
    Duration::from_secs(seconds).min(MAX_BACKOFF)
}

async fn watch<K>(
    api: Api<K>,
    source: SourceKind,
    wrap: fn(Change<K>) -> Vec<DataEvent>,
    sink: Sink,
    keep: fn(&K) -> bool,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
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
                    buffer.push(object);
                }
                continue;
            }
            watcher::Event::InitDone => Change::Restarted(std::mem::take(&mut buffer)),
            watcher::Event::Apply(object) if keep(&object) => Change::Applied(Box::new(object)),
            watcher::Event::Delete(object) if keep(&object) => Change::Deleted(Box::new(object)),
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
    fn backoff_doubles_up_to_the_cap() {
        let delays: Vec<u64> = (1..=8).map(|failures| backoff(failures).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 30, 30, 30]);
    }
}
