//! The in-place restore drill in the live lab (lab API server, lab kubelet running real MySQL
//! 9.7 and batch Jobs with the `bloodraven-sidecar` binary, the operator in this process;
//! `source scripts/provision.sh` and `cargo build -p bloodraven-sidecar` first).
//!
//! A backup to a PVC-layout claim by the operator's MysqlBackup controller; more writes after it and an application writing while the
//! restore starts; `spec.restoreInPlace` → the offline fence, every peer's receiver stopped, the
//! restore Job (`bloodraven-sidecar restore --in-place`), Succeeded, every peer recloned by
//! CLONE, the queue drained: every site holds the backup's `gtid_executed` and its table
//! checksums. Then a restore whose Job fails after its DROP (a chunk damaged in place, so the
//! artifact check passes and the load fails) puts the queue Held, the peers keep their data;
//! setting Draining by hand reclones them from the primary.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::group::{RestoreInPlacePhase, RestoreReclonesPhase};
use bloodraven_gtid::GtidSet;
use bloodraven_kubelet::{JobConfig, Kubelet, KubeletConfig, SidecarConfig, claims::claim_folder};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_operator::manager::Tuning;
use bloodraven_sites::accounts::{APPLICATION, OPERATOR};
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::ensure_template_async;
use bloodraven_workloads::{Resolver, ports};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::{Api, Patch, PatchParams, PostParams};
use mysql_async::prelude::Queryable;

use super::harness::{self, Operator};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
const BACKUP: &str = "nightly-1";
/// Generous: CI shares 2 cores with other real servers, and a step here may include a CLONE.
const BOUND: Duration = Duration::from_secs(300);

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    harness::wait_for(what, BOUND, Duration::from_millis(500), check).await
}

fn tool(var: &str) -> String {
    std::env::var(var)
        .unwrap_or_else(|_| panic!("{var} is unset: run `source scripts/provision.sh`"))
}

async fn conn(addr: &str, user: &str, password: &str) -> Option<mysql_async::Conn> {
    let (host, port) = addr.rsplit_once(':')?;
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(port.parse().ok()?)
        .user(Some(user))
        .pass(Some(password))
        .prefer_socket(false);
    tokio::time::timeout(Duration::from_secs(5), mysql_async::Conn::new(opts)).await.ok()?.ok()
}

/// A site's executed set and whether its receiver runs.
async fn read_site(addr: &str) -> Option<(GtidSet, bool)> {
    let mut conn = conn(addr, OPERATOR.user, OPERATOR.password).await?;
    let text: String = conn.query_first("SELECT @@global.gtid_executed").await.ok()??;
    let rows: Vec<mysql_async::Row> = conn.query("SHOW REPLICA STATUS").await.ok()?;
    let io = rows.first().and_then(|row| row.get::<String, _>("Replica_IO_Running"));
    let _ = conn.disconnect().await;
    Some((text.replace('\n', "").parse().ok()?, io.as_deref() == Some("Yes")))
}

/// `CHECKSUM TABLE` of every table of schema `app`, by name.
async fn checksums(addr: &str) -> Option<BTreeMap<String, Option<i64>>> {
    let mut conn = conn(addr, OPERATOR.user, OPERATOR.password).await?;
    let tables: Vec<String> = conn
        .query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'app' \
             AND table_type = 'BASE TABLE' ORDER BY 1",
        )
        .await
        .ok()?;
    let mut out = BTreeMap::new();
    for table in tables {
        let row: Option<(String, Option<i64>)> =
            conn.query_first(format!("CHECKSUM TABLE app.`{table}`")).await.ok()?;
        out.insert(table, row?.1);
    }
    let _ = conn.disconnect().await;
    Some(out)
}

async fn sql(addr: &str, statement: &str) {
    let mut conn = conn(addr, OPERATOR.user, OPERATOR.password).await.expect("the site answers");
    conn.query_drop(statement).await.unwrap_or_else(|e| panic!("{statement}: {e}"));
    let _ = conn.disconnect().await;
}

async fn restore_in_place(groups: &Api<MysqlFailoverGroup>, confirm: &str) {
    let body = serde_json::json!({ "spec": { "restoreInPlace": {
        "confirm": confirm,
        "source": { "backupRef": { "name": BACKUP } },
    }}});
    groups.patch(GROUP, &PatchParams::default(), &Patch::Merge(body)).await.unwrap();
}

async fn phase(groups: &Api<MysqlFailoverGroup>) -> Option<RestoreInPlacePhase> {
    groups.get(GROUP).await.ok()?.status?.restore_in_place?.phase
}

/// The lab, its kubelet (sites and Jobs), the operator, the group converged, the backup
/// profile on a claim and a backup of the primary taken into it.
struct Drill {
    _lab: Lab,
    kubelet: Kubelet,
    client: kube::Client,
    groups: Api<MysqlFailoverGroup>,
    controller: tokio::task::JoinHandle<()>,
    primary: String,
    folder: std::path::PathBuf,
    backup_set: GtidSet,
    backup_sums: BTreeMap<String, Option<i64>>,
    _root: tempfile::TempDir,
    _job_root: tempfile::TempDir,
}

fn addr(kubelet: &Kubelet, site: &str) -> String {
    let address = kubelet
        .resolver()
        .resolve(NAMESPACE, &format!("mysql-{GROUP}-{site}-internal"), ports::MYSQL)
        .expect("the site's internal Service resolves");
    format!("{}:{}", address.host, address.port)
}

fn start_operator(
    client: &kube::Client,
    kubelet: &Kubelet,
    instance: &str,
) -> tokio::task::JoinHandle<()> {
    let tuning = Tuning { poll_interval: Duration::from_secs(1), ..Tuning::default() };
    Operator::start(client, Arc::new(kubelet.resolver()), tuning, Some(NAMESPACE), instance)
        .controller
}

async fn setup() -> Drill {
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let sidecar = SidecarConfig::locate()
        .expect("the sidecar binary: run `cargo build -p bloodraven-sidecar` first");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
    let root_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    for crd in ["mysqlfailovergroups.shipstream.io.yaml", "mysqlbackups.shipstream.io.yaml"] {
        let text = std::fs::read_to_string(format!("{root_dir}/deploy/crds/{crd}")).unwrap();
        lab.load_crds(&text).expect("a CRD");
    }
    let example =
        std::fs::read_to_string(format!("{root_dir}/deploy/examples/group.yaml")).unwrap();
    lab.apply_yaml(&example).expect("the example group");
    let client = kube::Client::try_from(kube::Config::new(lab.url().parse().unwrap())).unwrap();

    let template = ensure_template_async(&dist).await.expect("the template data directory");
    let root = tempfile::Builder::new().prefix("brd-").tempdir_in("/tmp").expect("a short root");
    let job_root = tempfile::Builder::new().prefix("brj-").tempdir_in("/tmp").unwrap();
    let hub = Arc::new(ProxyHub::current().expect("a tokio runtime"));
    let mut config = KubeletConfig::new(root.path());
    config.namespace = Some(NAMESPACE.to_owned());
    let mut executables = BTreeMap::new();
    executables.insert("bloodraven-sidecar".to_owned(), sidecar.clone());
    let mut env = BTreeMap::new();
    for var in ["BLOODRAVEN_MYSQL", "BLOODRAVEN_MYSQLDUMP"] {
        env.insert(var.to_owned(), tool(var));
    }
    config.jobs = Some(JobConfig {
        root: job_root.path().to_owned(),
        executables,
        env,
        log_filter: "info".to_owned(),
        retry_delay: Duration::from_secs(1),
    });
    let kubelet = Kubelet::start(client.clone(), dist, template, hub.clone(), config)
        .await
        .expect("the kubelet");
    // The backup controller reads its Job's completion sentinel from the pod log.
    lab.set_pod_logs(Arc::new(kubelet.log_source()));
    let controller = start_operator(&client, &kubelet, "test");
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);

    let primary = wait_for("the group to converge", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let active = status.active_site?;
        let all = status
            .sites
            .iter()
            .filter(|site| site.name != active)
            .all(|site| site.replicating == Some(true));
        all.then_some(active)
    })
    .await;
    let p = addr(&kubelet, &primary);

    // The backup profile on a claim, and the claim.
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NAMESPACE);
    let claim: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": { "name": "backups", "namespace": NAMESPACE },
        "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } },
    }))
    .unwrap();
    let claim = claims.create(&PostParams::default(), &claim).await.unwrap();
    let folder =
        claim_folder(root.path(), NAMESPACE, "backups", claim.metadata.uid.as_deref().unwrap());
    std::fs::create_dir_all(&folder).unwrap();
    let body = serde_json::json!({ "spec": { "backup": { "profiles": [{
        "name": "nightly",
        "storage": { "type": "PVC", "pvc": { "claimName": "backups" } },
    }]}}});
    groups.patch(GROUP, &PatchParams::default(), &Patch::Merge(body)).await.unwrap();

    // The data the backup holds.
    sql(&p, "CREATE TABLE app.restored (id INT PRIMARY KEY AUTO_INCREMENT, note VARCHAR(40))")
        .await;
    for i in 0..50 {
        sql(&p, &format!("INSERT INTO app.restored (note) VALUES ('before {i}')")).await;
    }
    // The backup: the operator's MysqlBackup controller runs its Job on the lab kubelet.
    let (backup_set, _) = read_site(&p).await.unwrap();
    let backup_sums = checksums(&p).await.unwrap();
    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NAMESPACE);
    let backup: MysqlBackup = serde_json::from_value(serde_json::json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
        "metadata": { "name": BACKUP, "namespace": NAMESPACE },
        "spec": { "failoverGroupRef": { "name": GROUP }, "profileName": "nightly" },
    }))
    .unwrap();
    backups.create(&PostParams::default(), &backup).await.unwrap();
    let recorded = wait_for("the backup to succeed", || async {
        let status = backups.get(BACKUP).await.ok()?.status?;
        assert_ne!(status.phase, Some(BackupPhase::Failed), "the backup failed: {status:?}");
        (status.phase == Some(BackupPhase::Succeeded)).then_some(status.gtid_executed?)
    })
    .await;
    assert_eq!(
        recorded.parse::<GtidSet>().unwrap(),
        backup_set,
        "the backup holds the primary's set"
    );

    Drill {
        _lab: lab,
        kubelet,
        client,
        groups,
        controller,
        primary,
        folder,
        backup_set,
        backup_sums,
        _root: root,
        _job_root: job_root,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_place_restore_reclones_every_peer_and_a_job_failing_after_its_drop_holds_the_queue() {
    let Drill {
        _lab,
        kubelet,
        groups,
        controller,
        primary,
        folder,
        backup_set,
        backup_sums,
        _root,
        _job_root,
        ..
    } = setup().await;
    let sites = ["iad", "pdx", "fra"];
    let p = addr(&kubelet, &primary);
    let addr = |site: &str| addr(&kubelet, site);
    // After the backup: rows the restore must take away, and an application writing.
    for i in 0..10 {
        sql(&p, &format!("INSERT INTO app.restored (note) VALUES ('after {i}')")).await;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, written, refused, p) =
            (stop.clone(), written.clone(), refused.clone(), p.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let ok = match conn(&p, APPLICATION.user, APPLICATION.password).await {
                    Some(mut c) => {
                        let r =
                            c.query_drop("INSERT INTO app.restored (note) VALUES ('app')").await;
                        let _ = c.disconnect().await;
                        r.is_ok()
                    }
                    None => false,
                };
                let counter = if ok { &written } else { &refused };
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    wait_for("the application to write", || async {
        (written.load(Ordering::SeqCst) > 3).then_some(())
    })
    .await;

    // The restore.
    let started = Instant::now();
    restore_in_place(&groups, "2030-01-01T00:00:00Z").await;
    // The application is refused once the fence is up; it stops before the fence is released.
    wait_for("the run to reach Restoring", || async {
        matches!(
            phase(&groups).await,
            Some(
                RestoreInPlacePhase::Restoring
                    | RestoreInPlacePhase::Resuming
                    | RestoreInPlacePhase::Succeeded
            )
        )
        .then_some(())
    })
    .await;
    let refused_during = refused.load(Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    writer.await.unwrap();
    assert!(refused_during > 0, "the offline fence refused the application");
    let status = wait_for("the restore to end", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let run = status.restore_in_place.clone()?;
        matches!(run.phase, Some(RestoreInPlacePhase::Succeeded | RestoreInPlacePhase::Failed))
            .then_some(status)
    })
    .await;
    let run = status.restore_in_place.unwrap();
    assert_eq!(run.phase, Some(RestoreInPlacePhase::Succeeded), "{:?}", run.message);
    assert_eq!(run.confirm_token_used.as_deref(), Some("2030-01-01T00:00:00Z"));
    let restored_in = started.elapsed();
    wait_for("the queue to drain (every peer recloned)", || async {
        groups.get(GROUP).await.ok()?.status?.restore_reclones.is_none().then_some(())
    })
    .await;
    let drained_in = started.elapsed();
    for site in sites {
        let a = addr(site);
        let (wanted, sums) = (backup_set.clone(), backup_sums.clone());
        wait_for(&format!("{site} holding the backup's set and checksums"), || {
            let (a, wanted, sums) = (a.clone(), wanted.clone(), sums.clone());
            async move {
                let (set, _) = read_site(&a).await?;
                (set == wanted && checksums(&a).await? == sums).then_some(())
            }
        })
        .await;
    }
    let offline: Option<u8> = conn(&p, OPERATOR.user, OPERATOR.password)
        .await
        .unwrap()
        .query_first("SELECT @@global.offline_mode")
        .await
        .unwrap();
    assert_eq!(offline, Some(0), "the fence is released");
    tracing::warn!("drill: restored in {restored_in:?}, every peer recloned by {drained_in:?}");

    // A restore whose Job fails after its DROP: a chunk damaged in place (same size, so the
    // artifact check passes; its SHA-256 fails during the load).
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
    restore_in_place(&groups, "2030-01-02T00:00:00Z").await;
    let held = wait_for("the failed restore to hold the queue", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let run = status.restore_in_place?;
        let queue = status.restore_reclones?;
        (run.phase == Some(RestoreInPlacePhase::Failed)
            && queue.phase == Some(RestoreReclonesPhase::Held))
        .then_some(queue)
    })
    .await;
    assert_eq!(held.pending.len(), 2, "every peer is held: {held:?}");
    let failed_job = groups.get(GROUP).await.unwrap().status.unwrap().restore_in_place.unwrap();
    let failed_job = failed_job.job_name.expect("the failed run names its Job");
    let logs: Vec<String> = kubelet
        .job_pods(NAMESPACE)
        .values()
        .filter(|pod| pod.job == failed_job)
        .filter_map(|pod| kubelet.job_log(NAMESPACE, &pod.pod))
        .collect();
    assert!(
        logs.iter().any(|log| log.contains("dropped") && log.contains("is damaged")),
        "the Job failed in its load, after its DROP: {logs:?}"
    );
    for peer in &held.pending {
        let (set, io) = read_site(&addr(peer)).await.unwrap();
        assert!(!io, "{peer}: held, its receiver stays stopped");
        assert_eq!(set, backup_set, "{peer} keeps its pre-restore data");
    }
    let (broken, _) = read_site(&p).await.unwrap();
    assert_ne!(broken, backup_set, "the failed Job dropped and reset the primary");

    // Draining by hand (the console's decision): the held sites are recloned from the primary.
    let body = serde_json::json!({ "status": { "restoreReclones": { "phase": "Draining" } } });
    groups.patch_status(GROUP, &PatchParams::default(), &Patch::Merge(body)).await.unwrap();
    wait_for("the held queue to drain", || async {
        groups.get(GROUP).await.ok()?.status?.restore_reclones.is_none().then_some(())
    })
    .await;
    let (now_primary, _) = read_site(&p).await.unwrap();
    for peer in &held.pending {
        let a = addr(peer);
        let wanted = now_primary.clone();
        wait_for(&format!("{peer} recloned from the primary and replicating"), || {
            let (a, wanted) = (a.clone(), wanted.clone());
            async move {
                let (set, io) = read_site(&a).await?;
                (io && set == wanted).then_some(())
            }
        })
        .await;
    }
    controller.abort();
    drop(kubelet);
}

/// A crash at each named point of the restore run (`operator.restore.*`), one restore per
/// point on one group: the operator is stopped where the point fired and a new one started;
/// the run completes from its records (no second Job, the fence released), every peer is
/// recloned and every site holds the backup's set and checksums.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_each_restore_point_resumes_from_the_records() {
    use bloodraven_crashpoint::{CrashAt, Step};
    let drill = setup().await;
    let groups = &drill.groups;
    let p = addr(&drill.kubelet, &drill.primary);
    let scope = format!("{NAMESPACE}/{GROUP}");
    let mut controller = drill.controller;
    let steps: Vec<Step> = Step::ALL
        .iter()
        .copied()
        .filter(|step| step.name().starts_with("operator.restore."))
        .collect();
    assert_eq!(steps.len(), 5, "every restore crash point is swept");
    for (day, step) in steps.into_iter().enumerate() {
        let confirm = format!("2030-02-{:02}T00:00:00Z", day + 1);
        bloodraven_crashpoint::arm(&scope, CrashAt { step, nth: 1 });
        restore_in_place(groups, &confirm).await;
        wait_for(&format!("the crash point {step} to fire"), || async {
            bloodraven_crashpoint::fired(&scope).map(|_| ())
        })
        .await;
        controller.abort();
        let _ = controller.await;
        bloodraven_crashpoint::disarm(&scope);
        controller = start_operator(&drill.client, &drill.kubelet, &format!("after-{step}"));
        let run = wait_for(&format!("{step}: the run to end after the restart"), || async {
            let run = groups.get(GROUP).await.ok()?.status?.restore_in_place?;
            (run.confirm_token_used.as_deref() == Some(confirm.as_str())
                && matches!(
                    run.phase,
                    Some(RestoreInPlacePhase::Succeeded | RestoreInPlacePhase::Failed)
                ))
            .then_some(run)
        })
        .await;
        assert_eq!(run.phase, Some(RestoreInPlacePhase::Succeeded), "{step}: {:?}", run.message);
        wait_for(&format!("{step}: the queue to drain and the fence record to go"), || async {
            let status = groups.get(GROUP).await.ok()?.status?;
            (status.restore_reclones.is_none() && status.restore_offline_fence.is_none())
                .then_some(())
        })
        .await;
        let jobs: Vec<String> = drill
            .kubelet
            .job_pods(NAMESPACE)
            .values()
            .filter(|pod| run.job_name.as_deref() == Some(pod.job.as_str()))
            .map(|pod| pod.pod.clone())
            .collect();
        assert_eq!(jobs.len(), 1, "{step}: one Job attempt for the run: {jobs:?}");
        for site in ["iad", "pdx", "fra"] {
            let a = addr(&drill.kubelet, site);
            let (wanted, sums) = (drill.backup_set.clone(), drill.backup_sums.clone());
            wait_for(&format!("{step}: {site} holding the backup's set and checksums"), || {
                let (a, wanted, sums) = (a.clone(), wanted.clone(), sums.clone());
                async move {
                    let (set, _) = read_site(&a).await?;
                    (set == wanted && checksums(&a).await? == sums).then_some(())
                }
            })
            .await;
        }
        let offline: Option<u8> = conn(&p, OPERATOR.user, OPERATOR.password)
            .await
            .unwrap()
            .query_first("SELECT @@global.offline_mode")
            .await
            .unwrap();
        assert_eq!(offline, Some(0), "{step}: the fence is released");
        tracing::warn!("crash sweep: {step} survived");
    }
    controller.abort();
}
