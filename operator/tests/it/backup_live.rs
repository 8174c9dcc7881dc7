//! The MysqlBackup controller in the live lab (lab API server, lab kubelet running real MySQL
//! 9.7 sites and the backup Job as a `bloodraven-sidecar backup` process, the operator in this
//! process; `source scripts/provision.sh` and `cargo build -p bloodraven-sidecar`): a 3-site
//! group with writes, a MysqlBackup to a PVC profile → the operator's Job → Succeeded with
//! `gtidExecuted` (from the Job log's sentinel, read through `pods/log`), `completionTime`,
//! MetadataComplete and the BackupStarted/BackupSucceeded Events; the artifact restores into a
//! fresh mysqld with the backup's GTID set and the source's checksums. A backup whose store is
//! unreachable fails with Ready=False/BackupFailed and a BackupFailed Event.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::condition::{ConditionStatus, ConditionType};
use bloodraven_gtid::GtidSet;
use bloodraven_kubelet::{JobConfig, Kubelet, KubeletConfig, SidecarConfig};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_operator::manager::Tuning;
use bloodraven_sites::accounts::OPERATOR;
use bloodraven_sites::mysqld::{Instance, InstanceSpec, MysqlDist};
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::ensure_template_async;
use bloodraven_workloads::{Resolver, ports};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use mysql_async::prelude::Queryable;
use serde_json::json;

use super::harness::{self, Operator};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
/// Generous: CI shares 2 cores with other real servers.
const BOUND: Duration = Duration::from_secs(180);

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    harness::wait_for(what, BOUND, Duration::from_millis(500), check).await
}

fn tool(var: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{var} is unset: run `source scripts/provision.sh` first"))
}

fn opts(addr: std::net::SocketAddr) -> mysql_async::Opts {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname(addr.ip().to_string())
        .tcp_port(addr.port())
        .user(Some(OPERATOR.user))
        .pass(Some(OPERATOR.password))
        .prefer_socket(false)
        .into()
}

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

fn event_reasons(lab: &Lab, backup: &str) -> Vec<String> {
    lab.list("events.k8s.io/v1", "Event")
        .iter()
        .filter(|event| event["regarding"]["name"] == backup)
        .filter_map(|event| event["reason"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_runs_as_the_operators_job_completes_and_restores_and_a_failing_one_reports() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let sidecar = SidecarConfig::locate()
        .expect("the sidecar binary: run `cargo build -p bloodraven-sidecar` first");
    let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
    let root_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    for crd in ["mysqlfailovergroups", "mysqlbackups"] {
        let text =
            std::fs::read_to_string(format!("{root_dir}/deploy/crds/{crd}.shipstream.io.yaml"))
                .expect("deploy/crds");
        lab.load_crds(&text).expect("the CRD");
    }
    let example = std::fs::read_to_string(format!("{root_dir}/deploy/examples/group.yaml"))
        .expect("deploy/examples/group.yaml");
    lab.apply_yaml(&example).expect("the example group");
    let url = lab.url().parse().expect("the lab's URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("a client of the lab");

    // The backup claim and the profiles: PVC (works) and S3 at an address nothing serves.
    let post = PostParams::default();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NAMESPACE);
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": { "name": "backups" },
        "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } },
    }))
    .unwrap();
    let claim = claims.create(&post, &claim).await.expect("the backup claim");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let s3_keys: Secret = serde_json::from_value(json!({
        "metadata": { "name": "s3-keys" },
        "stringData": { "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK" },
    }))
    .unwrap();
    secrets.create(&post, &s3_keys).await.expect("the S3 keys");
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

    let template = ensure_template_async(&dist).await.expect("the template data directory");
    let root = tempfile::Builder::new().prefix("brb-").tempdir_in("/tmp").expect("a short root");
    let hub = Arc::new(ProxyHub::current().expect("a tokio runtime"));
    let mut config = KubeletConfig::new(root.path().join("c"));
    config.namespace = Some(NAMESPACE.to_owned());
    config.jobs = Some(
        JobConfig::new(root.path().join("jobs"))
            .executable("bloodraven-sidecar", &sidecar)
            .env("BLOODRAVEN_MYSQLDUMP", tool("BLOODRAVEN_MYSQLDUMP").display().to_string()),
    );
    let kubelet = Kubelet::start(client.clone(), dist.clone(), template.clone(), hub, config)
        .await
        .expect("the kubelet");
    lab.set_pod_logs(Arc::new(kubelet.log_source()));
    let tuning = Tuning { poll_interval: Duration::from_secs(1), ..Tuning::default() };
    let Operator { context, controller } =
        Operator::start(&client, Arc::new(kubelet.resolver()), tuning, Some(NAMESPACE), "test");
    let resolver = kubelet.resolver();
    let addr = |site: &str| -> std::net::SocketAddr {
        let address = resolver
            .resolve(NAMESPACE, &format!("mysql-{GROUP}-{site}-internal"), ports::MYSQL)
            .expect("the site's internal Service resolves");
        format!("{}:{}", address.host, address.port).parse().unwrap()
    };

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
    let mut source = mysql_async::Conn::new(opts(addr(&primary))).await.unwrap();
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
            let logs: Vec<String> = kubelet
                .job_pods(NAMESPACE)
                .keys()
                .filter_map(|pod| kubelet.job_log(NAMESPACE, pod))
                .collect();
            panic!("b1 failed: {status:#?}\nthe Job's log: {}", logs.join("\n---\n"));
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
        let reasons = event_reasons(&lab, "b1");
        (reasons.iter().any(|r| r == "BackupStarted")
            && reasons.iter().any(|r| r == "BackupSucceeded"))
        .then_some(())
    })
    .await;

    // The artifact (in the claim's folder) restores into a fresh mysqld: the backup's GTID set,
    // the source's checksum.
    let folder = bloodraven_kubelet::claims::claim_folder(
        &root.path().join("c"),
        NAMESPACE,
        "backups",
        claim.metadata.uid.as_deref().unwrap(),
    );
    assert!(folder.join("b1/@.done.json").is_file(), "the completion marker in {folder:?}");
    let mut target = Instance::create(&dist, &template, InstanceSpec::new("restore-b1", 91))
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
        event_reasons(&lab, "b2").iter().any(|r| r == "BackupFailed").then_some(())
    })
    .await;

    drop(source);
    controller.abort();
    let _ = controller.await;
    drop(context);
    kubelet.shutdown().await;
    lab.stop().await.expect("the lab stops");
}
