//! The bootstrap restore in the live lab (lab API server, lab kubelet running real MySQL 9.7
//! and batch Jobs with the `bloodraven-sidecar` binary, the operator in this process;
//! `source scripts/provision.sh` and `cargo build -p bloodraven-sidecar` first).
//!
//! A backup of group `orders` by the operator's MysqlBackup controller to a PVC-layout claim;
//! a new group `restored` with `spec.initFromBackup` from it: the seed is loaded by the restore
//! Job (its `gtid_executed` and table checksums equal the backup's), the other site is cloned
//! from it, and the group becomes Ready. Then a chunk damaged in place and a new group
//! `broken`: the load fails, the restore is Failed with Ready=False/InitFromBackupFailed and a
//! RestoreFailed Event, no pod is labelled primary or healthy, and nothing is cloned.

use std::time::{Duration, Instant};

use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::group::RestorePhase;
use bloodraven_crd::{ConditionStatus, ConditionType, MysqlFailoverGroup};
use bloodraven_gtid::GtidSet;
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

/// A new two-site group `name` restoring `BACKUP` at bootstrap.
fn restored_group(name: &str) -> MysqlFailoverGroup {
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
            "backup": { "profiles": [{
                "name": "nightly",
                "storage": { "type": "PVC", "pvc": { "claimName": "backups" } },
            }]},
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
    let (_claim, folder) = live.create_backup_claim().await;
    std::fs::create_dir_all(&folder).unwrap();
    let body = serde_json::json!({ "spec": { "backup": { "profiles": [{
        "name": "nightly",
        "storage": { "type": "PVC", "pvc": { "claimName": "backups" } },
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
    assert_eq!(recorded.parse::<GtidSet>().unwrap(), backup_set);

    // A new group restoring it at bootstrap.
    let started = Instant::now();
    groups.create(&PostParams::default(), &restored_group("restored")).await.unwrap();
    let seed = wait_for("the bootstrap restore to succeed", || async {
        let restore = groups.get("restored").await.ok()?.status?.restore?;
        assert_ne!(restore.phase, Some(RestorePhase::Failed), "the restore failed: {restore:?}");
        (restore.phase == Some(RestorePhase::Succeeded)).then_some(restore.target_site?)
    })
    .await;
    let loaded_in = started.elapsed();
    assert_eq!(seed, "iad", "the default seed: the first PrimaryCandidate");
    let s = live.site_addr("restored", "iad");
    assert_eq!(gtid(&s).await.unwrap(), backup_set, "the seed holds exactly the backup's set");
    assert_eq!(checksums(&s).await.unwrap(), backup_sums, "the seed's tables equal the backup's");
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
    tracing::warn!(?loaded_in, total = ?started.elapsed(), "bootstrap restore: loaded, then cloned");

    // Free the restored group's servers, then a load that fails.
    groups.delete("restored", &DeleteParams::default()).await.unwrap();
    let dir = folder.join(BACKUP);
    let chunk = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|path| {
            path.file_name().is_some_and(|n| !n.to_string_lossy().starts_with('@'))
                && path.is_file()
        })
        .expect("a chunk file");
    let mut bytes = std::fs::read(&chunk).unwrap();
    for byte in bytes.iter_mut().take(64) {
        *byte ^= 0xff;
    }
    std::fs::write(&chunk, bytes).unwrap();
    groups.create(&PostParams::default(), &restored_group("broken")).await.unwrap();
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
    groups.create(&PostParams::default(), &restored_group("restored")).await.unwrap();
    let change = serde_json::json!({ "spec": { "initFromBackup": {
        "source": { "backupRef": { "name": "another" } } } } });
    refused(groups.patch("restored", &params, &merge(change)).await, "changing");
    let remove = serde_json::json!({ "spec": { "initFromBackup": null } });
    refused(groups.patch("restored", &params, &merge(remove)).await, "removing");
    let same = serde_json::json!({ "spec": { "initFromBackup": {
        "source": { "backupRef": { "name": BACKUP } } } } });
    groups.patch("restored", &params, &merge(same)).await.expect("the same block is no change");
}
