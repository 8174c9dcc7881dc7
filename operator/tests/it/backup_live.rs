//! The MysqlBackup controller in the live lab (lab API server, lab kubelet running real MySQL
//! 9.7 sites and the backup Job as a `bloodraven-sidecar backup` process, the operator in this
//! process; `source scripts/provision.sh` and `cargo build -p bloodraven-sidecar`): a 3-site
//! group with writes, a MysqlBackup to a PVC profile → the operator's Job → Succeeded with
//! `gtidExecuted` (from the Job log's sentinel, read through `pods/log`), `completionTime`,
//! MetadataComplete and the BackupStarted/BackupSucceeded Events; the artifact restores into a
//! fresh mysqld with the backup's GTID set and the source's checksums. A backup whose store is
//! unreachable fails with Ready=False/BackupFailed and a BackupFailed Event.

use std::time::Duration;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::condition::{ConditionStatus, ConditionType};
use bloodraven_gtid::GtidSet;
use bloodraven_sites::mysqld::{Instance, InstanceSpec};
use kube::api::{Api, Patch, PatchParams, PostParams};
use mysql_async::prelude::Queryable;
use serde_json::json;

use super::harness::Operator;
use super::live_lab::{LiveLab, LiveLabOptions, bounded_wait_for, conn, event_reasons, tool};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
/// Generous: CI shares 2 cores with other real servers.
const BOUND: Duration = Duration::from_secs(180);

bounded_wait_for!(BOUND, Duration::from_millis(500));

async fn gtid_executed(conn: &mut mysql_async::Conn) -> GtidSet {
    let text: String = conn.query_first("SELECT @@global.gtid_executed").await.unwrap().unwrap();
    text.replace('\n', "").parse().unwrap()
}

async fn checksum(conn: &mut mysql_async::Conn, table: &str) -> Option<u64> {
    let row: Option<(String, Option<u64>)> =
        conn.query_first(format!("CHECKSUM TABLE {table}")).await.unwrap();
    row.and_then(|(_, sum)| sum)
}

fn backup(name: &str, profile: &str) -> MysqlBackup {
    serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
        "metadata": { "name": name, "namespace": NAMESPACE },
        "spec": { "failoverGroupRef": { "name": GROUP }, "profileName": profile },
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_runs_as_the_operators_job_completes_and_restores_and_a_failing_one_reports() {
    let live = LiveLab::start(LiveLabOptions {
        crds: &["mysqlfailovergroups", "mysqlbackups"],
        job_env: Some(&["BLOODRAVEN_MYSQLDUMP"]),
        ..LiveLabOptions::sites(NAMESPACE)
    })
    .await;
    let (lab, client) = (&live.lab, &live.client);
    let sidecar = live.sidecar.clone().unwrap();

    // The backup claim and the profiles: PVC (works) and S3 at an address nothing serves.
    let post = PostParams::default();
    let (_claim, folder) = live.create_backup_claim().await;
    live.create_s3_keys("AK", "SK").await;
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);
    let profiles = json!({ "spec": { "backup": { "profiles": [
        { "name": "pvc", "storage": { "type": "PVC", "pvc": { "claimName": "backups" } } },
        { "name": "nowhere", "storage": { "type": "S3", "s3": {
            "bucket": "backups", "endpointURL": "http://127.0.0.1:1", "region": "us-east-1",
            "credentialsSecretName": "s3-keys" } } },
    ]}}});
    groups
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&profiles))
        .await
        .expect("the backup profiles");

    let Operator { context, controller } = live.operator("test");

    // Converged, then the workload writes on the primary and reaches every replica.
    let primary = wait_for("the group to converge", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let active = status.active_site?;
        let all =
            status.sites.iter().filter(|site| site.name != active).all(|site| {
                site.replicating == Some(true) && site.seconds_behind_source == Some(0)
            });
        (all && status.sites.len() == 3).then_some(active)
    })
    .await;
    let mut source = conn(&live.site_addr(GROUP, &primary)).await.expect("the primary answers");
    source
        .query_drop("CREATE TABLE app.orders (id INT PRIMARY KEY, note VARCHAR(40))")
        .await
        .unwrap();
    for id in 0..200 {
        source
            .query_drop(format!("INSERT INTO app.orders VALUES ({id}, 'order {id}')"))
            .await
            .unwrap();
    }
    let written = gtid_executed(&mut source).await;
    let source_sum = checksum(&mut source, "app.orders").await;

    // A backup to the PVC profile: the operator's Job, the sidecar's dump, Succeeded.
    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NAMESPACE);
    let created = backups.create(&post, &backup("b1", "pvc")).await.expect("MysqlBackup b1");
    let done = wait_for("backup b1 Succeeded with its gtidExecuted", || async {
        let found = backups.get("b1").await.ok()?;
        let status = found.status.clone()?;
        if status.phase == Some(BackupPhase::Failed) {
            panic!("b1 failed: {status:#?}\nthe Job's log: {}", live.job_logs());
        }
        (status.phase == Some(BackupPhase::Succeeded) && status.gtid_executed.is_some())
            .then_some(found)
    })
    .await;
    let status = done.status.unwrap();
    let backup_set: GtidSet = status.gtid_executed.clone().unwrap().parse().unwrap();
    assert!(written.is_subset(&backup_set), "the backup holds every write before it");
    assert!(status.completion_time.is_some() && status.start_time.is_some(), "{status:#?}");
    assert_eq!(status.job_name.as_deref(), Some("mysqlbackup-b1"));
    let location = status.artifact_storage.as_ref().and_then(|a| a.location.clone());
    assert_eq!(location.as_deref(), Some("/backups/b1"));
    let metadata = status
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::MetadataComplete)
        .expect("MetadataComplete");
    assert_eq!(metadata.status, ConditionStatus::True, "{metadata:?}");
    let ready = status.conditions.iter().find(|c| c.type_ == ConditionType::Ready).unwrap();
    assert_eq!(ready.status, ConditionStatus::True, "{ready:?}");
    wait_for("BackupStarted and BackupSucceeded Events on b1", || async {
        let reasons = event_reasons(lab, "b1");
        (reasons.iter().any(|r| r == "BackupStarted")
            && reasons.iter().any(|r| r == "BackupSucceeded"))
        .then_some(())
    })
    .await;

    // The artifact (in the claim's folder) restores into a fresh mysqld: the backup's GTID set,
    // the source's checksum.
    assert!(folder.join("b1/@.done.json").is_file(), "the completion marker in {folder:?}");
    let mut target =
        Instance::create(&live.dist, &live.template, InstanceSpec::new("restore-b1", 91))
            .await
            .expect("a fresh mysqld");
    target.start_and_wait(Duration::from_secs(120)).await.expect("the fresh mysqld starts");
    {
        let mut root_conn = target.root_conn().await.unwrap();
        for statement in [
            "SET GLOBAL super_read_only = OFF",
            "SET GLOBAL read_only = OFF",
            "CREATE USER 'bloodraven_restore'@'%' IDENTIFIED BY 'lab-restore-pw'",
            "GRANT ALL ON *.* TO 'bloodraven_restore'@'%'",
            // An empty server, as a fresh seed is: the account's transactions forgotten.
            "RESET BINARY LOGS AND GTIDS",
        ] {
            root_conn.query_drop(statement).await.unwrap();
        }
    }
    let creds = tempfile::tempdir().unwrap();
    std::fs::write(creds.path().join("MYSQL_USER"), "bloodraven_restore").unwrap();
    std::fs::write(creds.path().join("MYSQL_PASSWORD"), "lab-restore-pw").unwrap();
    let restore = tokio::process::Command::new(&sidecar)
        .arg("restore")
        .env_clear()
        .env("BLOODRAVEN_BACKUP_NAME", "b1")
        .env("BLOODRAVEN_BACKUP_UID", created.metadata.uid.clone().unwrap())
        .env("MYSQL_HOST", "127.0.0.1")
        .env("MYSQL_PORT", target.port().to_string())
        .env("BLOODRAVEN_MYSQL_CREDS_DIR", creds.path())
        .env("BLOODRAVEN_MYSQL", tool("BLOODRAVEN_MYSQL"))
        .env("BLOODRAVEN_STORAGE_TYPE", "PVC")
        .env("BLOODRAVEN_PVC_MOUNT", &folder)
        .kill_on_drop(true)
        .output();
    let restore = tokio::time::timeout(BOUND, restore).await.expect("the restore ends").unwrap();
    assert!(restore.status.success(), "restore: {}", String::from_utf8_lossy(&restore.stderr));
    let mut restored = target.root_conn().await.unwrap();
    assert_eq!(gtid_executed(&mut restored).await, backup_set, "restored gtid_executed");
    assert_eq!(checksum(&mut restored, "app.orders").await, source_sum, "app.orders checksum");
    drop(restored);
    drop(target);

    // A backup whose store does not answer: the Job fails, the backup reports it.
    backups.create(&post, &backup("b2", "nowhere")).await.expect("MysqlBackup b2");
    let failed = wait_for("backup b2 Failed", || async {
        let status = backups.get("b2").await.ok()?.status?;
        (status.phase == Some(BackupPhase::Failed)).then_some(status)
    })
    .await;
    let ready = failed.conditions.iter().find(|c| c.type_ == ConditionType::Ready).unwrap();
    assert_eq!(ready.status, ConditionStatus::False);
    assert_eq!(
        ready.reason.as_ref().map(|r| r.as_str().to_owned()).as_deref(),
        Some("BackupFailed")
    );
    wait_for("a BackupFailed Event on b2", || async {
        event_reasons(lab, "b2").iter().any(|r| r == "BackupFailed").then_some(())
    })
    .await;

    drop(source);
    controller.abort();
    let _ = controller.await;
    drop(context);
    live.stop().await;
}
