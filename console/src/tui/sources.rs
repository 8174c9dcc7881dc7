//! Sources: kube-runtime watchers turned into owned [`DataEvent`]s. They own no UI state;
//! they report their connection status and retry with backoff.

use std::fmt::Debug;
use std::time::Duration;

use bloodraven_crd::{MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};
use futures::StreamExt as _;
use jiff::Timestamp;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Event;
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

/// Starts one watcher per kind; abort the handles to stop them.
pub fn spawn(
    client: &Client,
    scope: &Scope,
    sender: &mpsc::Sender<DataEvent>,
) -> Vec<JoinHandle<()>> {
    vec![
        tokio::spawn(watch(
            api::<MysqlFailoverGroup>(client, scope),
            SourceKind::Groups,
            DataEvent::Groups,
            sender.clone(),
            |_| true,
        )),
        tokio::spawn(watch(
            api::<MysqlBackup>(client, scope),
            SourceKind::Backups,
            DataEvent::Backups,
            sender.clone(),
            |_| true,
        )),
        tokio::spawn(watch(
            api::<MysqlBackupVerification>(client, scope),
            SourceKind::Verifications,
            DataEvent::Verifications,
            sender.clone(),
            |_| true,
        )),
        tokio::spawn(watch(
            api::<Event>(client, scope),
            SourceKind::Events,
            DataEvent::Events,
            sender.clone(),
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
/// outcome as a [`DataEvent::Archive`]; the coverage is computed here, off the UI loop.
pub fn read_archive(
    access: crate::archive::ArchiveAccess,
    key: Key,
    request: ArchiveRequest,
    sender: &mpsc::Sender<DataEvent>,
) -> JoinHandle<()> {
    let sender = sender.clone();
    tokio::spawn(async move {
        let outcome = crate::archive::load(&access, &request).await;
        if let crate::archive::ArchiveOutcome::Failed(error) = &outcome {
            tracing::warn!(group = ?key, %error, "reading the archive failed");
        }
        let _ = sender.send(DataEvent::Archive { key, outcome, at: Timestamp::now() }).await;
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
    wrap: fn(Change<K>) -> DataEvent,
    sender: mpsc::Sender<DataEvent>,
    keep: fn(&K) -> bool,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Default,
{
    let status =
        |status: ConnectionStatus| DataEvent::Connection { source, status, at: Timestamp::now() };
    if sender.send(status(ConnectionStatus::Connecting)).await.is_err() {
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
                if sender.send(status(reconnecting)).await.is_err() {
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
        if sender.send(wrap(change)).await.is_err() {
            return;
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
