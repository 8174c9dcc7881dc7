//! Retention keeps what PITR needs, in the live lab (lab API server and the operator in this
//! process; no MySQL: the backups are recorded Succeeded through the API server and the
//! sites' sidecars are a stand-in HTTP server answering `/archiver/status`, the endpoint the
//! operator's PITR roll-up polls for `status.pitr`).
//!
//! A profile with `keepLast: 1`, PITR on, the sidecars' archive reach published in
//! `status.pitr`, then two successful backups, `older` and `newer`. While the archive's newest archived time lies between them, a point-in-time restore past
//! `newer` cannot be replayed from `newer` yet, so `older` is the base the archive rests on:
//! retention keeps it through several passes. Once the sidecars report the archive past
//! `newer`, retention deletes `older` and keeps `newer`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_operator::manager::Tuning;
use bloodraven_workloads::resolve::ServiceAddress;
use bloodraven_workloads::{Resolver, ports};
use jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::harness::{Operator, start_lab_with};
use super::live_lab::bounded_wait_for;

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
/// The roll-up polls every 30 s and housekeeping runs every 5 s; generous on 2 shared cores.
const BOUND: Duration = Duration::from_secs(180);

bounded_wait_for!(BOUND, Duration::from_millis(500));

/// The sites' sidecars: every site's `SIDECAR_HTTP` port resolves to one HTTP server that
/// answers `/archiver/status` with the archive reaching `newest`; nothing else resolves (no
/// MySQL runs).
struct Sidecars {
    address: ServiceAddress,
    newest: Arc<Mutex<Timestamp>>,
    server: tokio::task::JoinHandle<()>,
}

impl Sidecars {
    async fn start(newest: Timestamp) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a local port");
        let local = listener.local_addr().expect("the listener's address");
        let newest = Arc::new(Mutex::new(newest));
        let reach = newest.clone();
        let server = tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else { continue };
                let newest = *reach.lock().unwrap();
                tokio::spawn(async move {
                    let mut request = [0_u8; 1024];
                    let _ = stream.read(&mut request).await;
                    let body = json!({
                        "enabled": true,
                        "storeReady": true,
                        "lastScanAt": Timestamp::now().to_string(),
                        "filesArchived": 3,
                        "backlog": 0,
                        "consecutiveFailedScans": 0,
                        "oldestArchivedTime": (newest - SignedDuration::from_hours(1)).to_string(),
                        "newestArchivedTime": newest.to_string(),
                    })
                    .to_string();
                    let answer = format!(
                        "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(answer.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        let address = ServiceAddress { host: local.ip().to_string(), port: local.port() };
        Sidecars { address, newest, server }
    }

    fn reach(&self, newest: Timestamp) {
        *self.newest.lock().unwrap() = newest;
    }
}

impl Drop for Sidecars {
    fn drop(&mut self) {
        self.server.abort();
    }
}

struct SidecarsOnly(ServiceAddress);

impl Resolver for SidecarsOnly {
    fn resolve(&self, _namespace: &str, _service: &str, port: u16) -> Option<ServiceAddress> {
        (port == ports::SIDECAR_HTTP).then(|| self.0.clone())
    }
}

/// Creates MysqlBackup `name` (deletionPolicy Retain: no artifact cleanup Job is needed) and
/// records it Succeeded at `completed` with a GTID set, as the backup controller would.
async fn succeeded_backup(
    backups: &Api<MysqlBackup>,
    name: &str,
    completed: Timestamp,
    gtids: &str,
) {
    let backup: MysqlBackup = serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
        "metadata": { "name": name, "namespace": NAMESPACE },
        "spec": { "failoverGroupRef": { "name": GROUP }, "profileName": "nightly", "deletionPolicy": "Retain" },
    }))
    .unwrap();
    backups.create(&PostParams::default(), &backup).await.unwrap();
    let status = json!({ "status": {
        "phase": "Succeeded",
        "startTime": (completed - SignedDuration::from_mins(1)).to_string(),
        "completionTime": completed.to_string(),
        "gtidExecuted": gtids,
    }});
    backups.patch_status(name, &PatchParams::default(), &Patch::Merge(status)).await.unwrap();
}

/// Whether `name` is kept (present and not being deleted).
async fn kept(backups: &Api<MysqlBackup>, name: &str) -> Option<bool> {
    let found = backups.get_opt(name).await.ok()?;
    Some(found.is_some_and(|b| b.metadata.deletion_timestamp.is_none()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_keeps_the_backup_the_pitr_archive_rests_on_until_the_archive_passes_the_next() {
    let (lab, client) = start_lab_with(
        NAMESPACE,
        &["mysqlfailovergroups", "mysqlbackups", "mysqlbackupverifications"],
    )
    .await;
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);
    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NAMESPACE);
    let spec = json!({ "spec": { "backup": {
        "profiles": [{ "name": "nightly", "retention": { "keepLast": 1 },
                       "storage": { "type": "PVC", "pvc": { "claimName": "backups" } } }],
        "pitr": { "enabled": true, "profileName": "nightly" },
    }}});
    groups.patch(GROUP, &PatchParams::default(), &Patch::Merge(spec)).await.unwrap();

    // The archive reaches between the two backups below (times in whole seconds: the status
    // carries them to the second).
    let now = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
    let sidecars = Sidecars::start(now - SignedDuration::from_mins(15)).await;

    let tuning = Tuning { poll_interval: Duration::from_secs(1), ..Tuning::default() };
    let operator = Operator::start(
        &client,
        Arc::new(SidecarsOnly(sidecars.address.clone())),
        tuning,
        Some(NAMESPACE),
        "test",
    );

    // The roll-up publishes the sidecars' reach in status.pitr.
    let between = now - SignedDuration::from_mins(15);
    wait_for("status.pitr to show every site's archive reaching between the backups", || async {
        let pitr = groups.get(GROUP).await.ok()?.status?.pitr?;
        let reported = pitr
            .sites
            .iter()
            .filter(|s| s.newest_archived_time.as_ref().is_some_and(|t| t.0 == between))
            .count();
        (reported == 3).then_some(())
    })
    .await;
    // Two successes ten minutes apart, recorded once the archive's reach is published (as
    // in a group whose archive runs before its backups accumulate).
    let (older_at, newer_at) =
        (now - SignedDuration::from_mins(20), now - SignedDuration::from_mins(10));
    let uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
    succeeded_backup(&backups, "older", older_at, &format!("{uuid}:1-10")).await;
    succeeded_backup(&backups, "newer", newer_at, &format!("{uuid}:1-20")).await;
    // Several housekeeping passes (every 5 s) later, both backups are kept.
    let watched = Instant::now();
    while watched.elapsed() < Duration::from_secs(20) {
        assert_eq!(
            kept(&backups, "older").await,
            Some(true),
            "older: the archive still rests on it"
        );
        assert_eq!(kept(&backups, "newer").await, Some(true), "newer: the newest backup");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    // The archive passes newer: older goes, newer stays.
    sidecars.reach(now - SignedDuration::from_mins(5));
    wait_for("retention to delete older once the archive passed newer", || async {
        (!kept(&backups, "older").await?).then_some(())
    })
    .await;
    assert_eq!(kept(&backups, "newer").await, Some(true), "newer is the base now");

    operator.stop().await;
    drop(sidecars);
    lab.stop().await.expect("the lab stops");
}
