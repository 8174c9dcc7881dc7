//! The bootstrap restore in the live lab (lab API server, lab kubelet running real MySQL 9.7
//! and batch Jobs with the `bloodraven-sidecar` binary, the operator in this process;
//! `source scripts/provision.sh` and `cargo build -p bloodraven-sidecar` first).
//!
//! One scenario per store (a PVC-layout claim, and an S3 bucket on SeaweedFS): a backup of
//! group `orders` by the operator's MysqlBackup controller to the store; a new group
//! `restored` with `spec.initFromBackup` from it: the seed is loaded by the restore Job (its
//! `gtid_executed` equals the backup's `status.gtidExecuted` and its table checksums equal the
//! source's at the backup), the other site is cloned from it, and the group becomes Ready.
//! Then a chunk damaged in place in the store and a new group `broken`: the load fails, the
//! restore is Failed with Ready=False/InitFromBackupFailed and a RestoreFailed Event, no pod is
//! labelled primary or healthy, and nothing is cloned.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::group::RestorePhase;
use bloodraven_crd::{ConditionStatus, ConditionType, MysqlFailoverGroup};
use bloodraven_gtid::GtidSet;
use bloodraven_store::testing::{ACCESS_KEY, SECRET_KEY, SeaweedFs};
use bloodraven_store::{ObjectStore, S3Store, list_all};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};

use super::harness;
use super::live_lab::{
    LiveLab, LiveLabOptions, bounded_wait_for, checksums, event_reasons, gtid, sql,
};

const NAMESPACE: &str = "orders";
const SOURCE: &str = "orders";
const BACKUP: &str = "nightly-1";
/// Generous: CI shares 2 cores with other real servers, and a step here may include a CLONE.
const BOUND: Duration = Duration::from_secs(300);

bounded_wait_for!(BOUND, Duration::from_millis(500));

/// The store a scenario backs up to and restores from.
#[derive(Clone, Copy, Debug)]
enum Store {
    /// A PVC-layout claim (`backups`).
    Pvc,
    /// An S3 bucket (`backups`, prefix `orders`) on SeaweedFS.
    S3,
}

/// Where a scenario's backups are: the claim's folder, or the bucket (and the server holding
/// it, stopped on drop).
enum Place {
    Folder(PathBuf),
    Bucket { bucket: S3Store, _weed: SeaweedFs },
}

impl Place {
    /// Sets up `store` in `live`: the claim, or SeaweedFS, its bucket and the keys Secret;
    /// answers it and the backup profile's `storage`.
    async fn start(store: Store, live: &LiveLab) -> (Place, serde_json::Value) {
        match store {
            Store::Pvc => {
                let (_claim, folder) = live.create_backup_claim().await;
                std::fs::create_dir_all(&folder).unwrap();
                let storage =
                    serde_json::json!({ "type": "PVC", "pvc": { "claimName": "backups" } });
                (Place::Folder(folder), storage)
            }
            Store::S3 => {
                let weed = SeaweedFs::start().unwrap_or_else(|error| panic!("SeaweedFS: {error}"));
                let bucket = weed
                    .bucket_store("backups", "")
                    .await
                    .unwrap_or_else(|error| panic!("{error}"));
                live.create_s3_keys(ACCESS_KEY, SECRET_KEY).await;
                let storage = serde_json::json!({ "type": "S3", "s3": {
                    "bucket": "backups", "prefix": "orders", "endpointURL": weed.endpoint(),
                    "region": "us-east-1", "credentialsSecretName": "s3-keys" } });
                (Place::Bucket { bucket, _weed: weed }, storage)
            }
        }
    }

    /// Damages the first 64 bytes of one chunk of `BACKUP` in place (same size, so the
    /// artifact check passes and the load fails on its SHA-256).
    async fn damage_a_chunk(&self) {
        let flip = |bytes: &mut Vec<u8>| {
            for byte in bytes.iter_mut().take(64) {
                *byte ^= 0xff;
            }
        };
        match self {
            Place::Folder(folder) => {
                let chunk = std::fs::read_dir(folder.join(BACKUP))
                    .unwrap()
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .find(|path| {
                        path.file_name().is_some_and(|n| !n.to_string_lossy().starts_with('@'))
                            && path.is_file()
                    })
                    .expect("a chunk file");
                let mut bytes = std::fs::read(&chunk).unwrap();
                flip(&mut bytes);
                std::fs::write(&chunk, bytes).unwrap();
            }
            Place::Bucket { bucket, .. } => {
                let objects = list_all(bucket, &format!("orders/{BACKUP}/")).await.unwrap();
                let chunk = objects
                    .iter()
                    .map(|object| object.key.clone())
                    .find(|key| key.rsplit('/').next().is_some_and(|n| !n.starts_with('@')))
                    .unwrap_or_else(|| panic!("a chunk object among {objects:?}"));
                let mut bytes = bucket.get(&chunk).await.unwrap().bytes;
                flip(&mut bytes);
                bucket.put(&chunk, bytes).await.unwrap();
            }
        }
    }
}

/// A new two-site group `name` restoring `BACKUP` at bootstrap from a profile on `storage`.
fn restored_group(name: &str, storage: &serde_json::Value) -> MysqlFailoverGroup {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlFailoverGroup",
        "metadata": { "name": name, "namespace": NAMESPACE },
        "spec": {
            "sites": [
                { "name": "iad", "serverID": 201, "role": "PrimaryCandidate", "storage": { "size": "1Gi" } },
                { "name": "pdx", "serverID": 202, "role": "PrimaryCandidate", "storage": { "size": "1Gi" } },
            ],
            "credentials": { "operatorSecretName": "mysql-operator-creds" },
            "pollInterval": "1s",
            "backup": { "profiles": [{ "name": "nightly", "storage": storage }]},
            "initFromBackup": { "source": { "backupRef": { "name": BACKUP } } },
        },
    }))
    .unwrap()
}

/// No pod of `group` is labelled primary or healthy.
async fn no_endpoints(client: &kube::Client, group: &str) -> Result<(), String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let list = pods
        .list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={group}")))
        .await
        .map_err(|e| e.to_string())?;
    for pod in list {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        let role = labels.get("bloodraven.shipstream.io/role").map(String::as_str);
        let healthy = labels.get("bloodraven.shipstream.io/healthy").map(String::as_str);
        if role == Some("primary") || healthy == Some("true") {
            return Err(format!("{:?} has role {role:?}, healthy {healthy:?}", pod.metadata.name));
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bootstrap_restore_loads_the_seed_clones_the_rest_and_a_failed_load_stays_gated() {
    bootstrap_restore(Store::Pvc).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bootstrap_restore_from_s3_loads_the_seed_clones_the_rest_and_a_failed_load_stays_gated()
{
    bootstrap_restore(Store::S3).await;
}

/// The scenario of the module documentation on `store`.
async fn bootstrap_restore(store: Store) {
    let live = LiveLab::start(LiveLabOptions {
        crds: &["mysqlfailovergroups", "mysqlbackups"],
        job_env: Some(&["BLOODRAVEN_MYSQL", "BLOODRAVEN_MYSQLDUMP"]),
        ..LiveLabOptions::sites(NAMESPACE)
    })
    .await;
    let (lab, client) = (&live.lab, &live.client);
    let operator = live.operator("test");
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);

    // The source group converges; its data is backed up to a claim.
    let primary = wait_for("the source group to converge", || async {
        let status = groups.get(SOURCE).await.ok()?.status?;
        let active = status.active_site?;
        let all = status
            .sites
            .iter()
            .filter(|site| site.name != active)
            .all(|site| site.replicating == Some(true));
        all.then_some(active)
    })
    .await;
    let p = live.site_addr(SOURCE, &primary);
    let (place, storage) = Place::start(store, &live).await;
    let body = serde_json::json!({ "spec": { "backup": { "profiles": [{
        "name": "nightly", "storage": storage,
    }]}}});
    groups.patch(SOURCE, &PatchParams::default(), &Patch::Merge(body)).await.unwrap();
    sql(&p, "CREATE TABLE app.restored (id INT PRIMARY KEY AUTO_INCREMENT, note VARCHAR(40))")
        .await;
    for i in 0..50 {
        sql(&p, &format!("INSERT INTO app.restored (note) VALUES ('row {i}')")).await;
    }
    let backup_set = gtid(&p).await.unwrap();
    let backup_sums = checksums(&p).await.unwrap();
    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NAMESPACE);
    let backup: MysqlBackup = serde_json::from_value(serde_json::json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
        "metadata": { "name": BACKUP, "namespace": NAMESPACE },
        "spec": { "failoverGroupRef": { "name": SOURCE }, "profileName": "nightly" },
    }))
    .unwrap();
    backups.create(&PostParams::default(), &backup).await.unwrap();
    let recorded = wait_for("the backup to succeed", || async {
        let status = backups.get(BACKUP).await.ok()?.status?;
        assert_ne!(status.phase, Some(BackupPhase::Failed), "the backup failed: {status:?}");
        (status.phase == Some(BackupPhase::Succeeded)).then_some(status.gtid_executed?)
    })
    .await;
    let recorded: GtidSet = recorded.parse().unwrap();
    assert_eq!(recorded, backup_set, "{store:?}: the backup records the source's set");

    // A new group restoring it at bootstrap.
    let started = Instant::now();
    groups.create(&PostParams::default(), &restored_group("restored", &storage)).await.unwrap();
    let seed = wait_for("the bootstrap restore to succeed", || async {
        let restore = groups.get("restored").await.ok()?.status?.restore?;
        assert_ne!(restore.phase, Some(RestorePhase::Failed), "the restore failed: {restore:?}");
        (restore.phase == Some(RestorePhase::Succeeded)).then_some(restore.target_site?)
    })
    .await;
    let loaded_in = started.elapsed();
    assert_eq!(seed, "iad", "the default seed: the first PrimaryCandidate");
    let s = live.site_addr("restored", "iad");
    assert_eq!(
        gtid(&s).await.unwrap(),
        recorded,
        "{store:?}: the seed holds exactly the backup's status.gtidExecuted"
    );
    assert_eq!(
        checksums(&s).await.unwrap(),
        backup_sums,
        "{store:?}: the seed's tables equal the source's at the backup"
    );
    // The other site is cloned from the seed, replicates, and the group becomes Ready.
    let other = live.site_addr("restored", "pdx");
    wait_for("pdx to be cloned from the seed and replicate, and Ready", || async {
        let status = groups.get("restored").await.ok()?.status?;
        let replicating =
            status.sites.iter().any(|site| site.name == "pdx" && site.replicating == Some(true));
        let ready = status
            .condition(&ConditionType::Ready)
            .is_some_and(|c| c.status == ConditionStatus::True);
        let set = gtid(&other).await?;
        (replicating && ready && backup_set.is_subset(&set)).then_some(())
    })
    .await;
    assert_eq!(checksums(&other).await.unwrap(), backup_sums, "pdx's tables equal the backup's");
    tracing::warn!(?store, ?loaded_in, total = ?started.elapsed(), "bootstrap restore: loaded, then cloned");

    // Free the restored group's servers, then a load that fails.
    groups.delete("restored", &DeleteParams::default()).await.unwrap();
    place.damage_a_chunk().await;
    groups.create(&PostParams::default(), &restored_group("broken", &storage)).await.unwrap();
    let failed = wait_for("the broken bootstrap restore to fail", || async {
        let restore = groups.get("broken").await.ok()?.status?.restore?;
        (restore.phase == Some(RestorePhase::Failed)).then_some(restore)
    })
    .await;
    assert!(
        failed.message.as_deref().is_some_and(|m| m.contains("BLOODRAVEN_LOAD_START")),
        "the message gives the recovery: {failed:?}"
    );
    wait_for("Ready=False/InitFromBackupFailed and a RestoreFailed Event", || async {
        let status = groups.get("broken").await.ok()?.status?;
        let ready = status.condition(&ConditionType::Ready)?;
        let reason = ready.reason.as_ref()?.as_str().to_owned();
        let event = event_reasons(lab, "broken").iter().any(|r| r == "RestoreFailed");
        (ready.status == ConditionStatus::False && reason == "InitFromBackupFailed" && event)
            .then_some(())
    })
    .await;
    // It stays gated: no endpoints, nothing cloned (a few polls later still).
    tokio::time::sleep(Duration::from_secs(5)).await;
    no_endpoints(client, "broken").await.unwrap();
    let other = live.site_addr("broken", "pdx");
    let set = gtid(&other).await.expect("pdx answers");
    assert!(set.is_empty(), "nothing was cloned into pdx: {set}");
    let status = groups.get("broken").await.unwrap().status.unwrap();
    assert_eq!(status.restore.unwrap().phase, Some(RestorePhase::Failed), "Failed stays Failed");

    operator.stop().await;
    live.stop().await;
    drop(place);
}

/// Admission through the lab API server (the CRD's transition rules): `spec.initFromBackup`
/// cannot be added to a group created without it, changed or removed; re-sending the same
/// block is no change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_from_backup_is_fixed_at_creation_through_the_api_server() {
    let (_lab, client) = harness::start_lab(NAMESPACE).await;
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);
    let refused = |result: Result<MysqlFailoverGroup, kube::Error>, what: &str| match result {
        Err(kube::Error::Api(answer)) => {
            assert_eq!(answer.code, 422, "{what}: {answer:?}");
            assert!(
                answer.message.contains("spec.initFromBackup is fixed at creation"),
                "{what}: {}",
                answer.message
            );
        }
        other => panic!("{what}: expected a 422 refusal, got {other:?}"),
    };
    let merge = |body: serde_json::Value| Patch::Merge(body);
    let params = PatchParams::default();
    // Added to a group created without it.
    let add = serde_json::json!({ "spec": { "initFromBackup": {
        "source": { "backupRef": { "name": BACKUP } } } } });
    refused(groups.patch(SOURCE, &params, &merge(add)).await, "adding");
    // Created with it: changing or removing it is refused; the same value is not a change.
    let storage = serde_json::json!({ "type": "PVC", "pvc": { "claimName": "backups" } });
    groups.create(&PostParams::default(), &restored_group("restored", &storage)).await.unwrap();
    let change = serde_json::json!({ "spec": { "initFromBackup": {
        "source": { "backupRef": { "name": "another" } } } } });
    refused(groups.patch("restored", &params, &merge(change)).await, "changing");
    let remove = serde_json::json!({ "spec": { "initFromBackup": null } });
    refused(groups.patch("restored", &params, &merge(remove)).await, "removing");
    let same = serde_json::json!({ "spec": { "initFromBackup": {
        "source": { "backupRef": { "name": BACKUP } } } } });
    groups.patch("restored", &params, &merge(same)).await.expect("the same block is no change");
}
