//! The sidecar in the live lab (issue 18): the lab kubelet runs `bloodraven-sidecar` beside
//! each real mysqld with the environment the operator rendered (PITR on a PVC profile), the
//! operator runs in-process with its HTTP server (`/active-site`, `/pitr-cutoff`) and the
//! archive roll-up; a planned failover then an emergency one, after each of which the new
//! primary's sidecar records its promotion and uploads. Needs MySQL 9.7 (`source
//! scripts/provision.sh`) and the sidecar binary (`cargo build -p bloodraven-sidecar`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_archive::reader::{ReaderKey, ReaderOptions};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::{BackupProfile, BackupStorage, PitrSpec, PvcStorage, StorageType};
use bloodraven_drill::live::{
    LEASE_DURATION, LEASE_NAME, LiveError, LiveLab, LiveOptions, OperatorEnv, OperatorLauncher,
    RunningOperator,
};
use bloodraven_gtid::GtidSet;
use bloodraven_kubelet::SidecarConfig;
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::http::{HttpState, serve};
use bloodraven_operator::lease::{self, LeaseConfig};
use bloodraven_operator::manager::Tuning;
use bloodraven_operator::planned::Timings;
use bloodraven_sites::accounts::{self, OPERATOR};
use bloodraven_sites::proxy::Fault;
use bloodraven_store::{ArchiveRoot, FsStore, open_archive};
use mysql_async::prelude::Queryable as _;

/// The operator's `main` in-process, with its HTTP server on the address the lab chose (the
/// sidecars' `->operator` links point there).
pub(crate) struct InProcessWithHttp;

struct Task(tokio::task::JoinHandle<()>);

impl RunningOperator for Task {
    fn describe(&self) -> String {
        "in-process task with HTTP".into()
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl OperatorLauncher for InProcessWithHttp {
    fn launch(&self, env: &OperatorEnv) -> Result<Box<dyn RunningOperator>, LiveError> {
        let env = env.clone();
        let task = tokio::spawn(async move {
            let context = Arc::new(Context::new(
                env.client.clone(),
                Arc::new(env.resolver.clone()),
                Tuning { planned: Timings::scaled(10), ..Tuning::default() },
                &env.name,
            ));
            let http = HttpState {
                published: context.shared.published.clone(),
                metrics: context.shared.metrics.clone(),
                pitr: context.shared.pitr.clone(),
                ..HttpState::default()
            };
            let server = async {
                match env.http {
                    Some(addr) => {
                        if let Err(error) = serve(addr, http).await {
                            tracing::error!(%error, "operator HTTP server");
                        }
                    }
                    None => std::future::pending().await,
                }
            };
            let config = LeaseConfig {
                namespace: env.namespace.clone(),
                name: LEASE_NAME.to_owned(),
                identity: env.name.clone(),
                duration: LEASE_DURATION,
            };
            let controller = async {
                if let Err(e) = lease::acquire(&env.client, &config).await {
                    tracing::error!(operator = %env.name, error = %e, "acquiring the Lease");
                    return;
                }
                tokio::select! {
                    () = lease::hold(&env.client, &config) => {}
                    () = controller::run(context.clone(), Some(&env.namespace)) => {}
                }
            };
            tokio::join!(server, controller);
        });
        Ok(Box::new(Task(task)))
    }

    fn describe(&self) -> String {
        "the operator's controller and HTTP server in-process".into()
    }
}

fn group() -> MysqlFailoverGroup {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("drills/manifests/operator-three-sites.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut group: MysqlFailoverGroup = serde_norway::from_str(&text).unwrap();
    // A planned failover, then an emergency one within the manifest's 5-minute cooldown.
    group.spec.failover_cooldown = Some(bloodraven_crd::Duration::new("1s"));
    let backup = group.spec.backup.get_or_insert_with(Default::default);
    backup.profiles.push(BackupProfile {
        name: "local".to_owned(),
        storage: BackupStorage {
            type_: StorageType::Pvc,
            s3: None,
            pvc: Some(PvcStorage {
                provisioned: None,
                claim_name: Some("pitr".to_owned()),
                sub_path: Some("orders".to_owned()),
            }),
        },
        dump: None,
        retention: None,
        encryption: None,
        verification: None,
    });
    backup.pitr = Some(PitrSpec {
        enabled: Some(true),
        profile_name: Some("local".to_owned()),
        ..PitrSpec::default()
    });
    group
}

/// What the last check saw of the sidecars (printed when a wait gives up).
static DIAGNOSE: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

/// Every site's `/archiver/status`, for a failure message.
async fn statuses(live: &LiveLab) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut out = String::new();
    let Ok(resolver) = live.resolver() else { return out };
    for site in live.sites() {
        let service =
            bloodraven_workloads::SiteNames::new(live.group_name(), site).internal_service;
        let Some(addr) = resolver.upstream(live.namespace(), &service, 8080) else { continue };
        let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else { continue };
        let _ = stream.write_all(b"GET /archiver/status HTTP/1.0\r\n\r\n").await;
        let mut body = String::new();
        let _ = stream.read_to_string(&mut body).await;
        out.push_str(&format!("{site}: {body}\n"));
    }
    out
}

pub(crate) async fn wait_for<T>(
    what: &str,
    limit: Duration,
    mut check: impl AsyncFnMut() -> Option<T>,
) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if started.elapsed() >= limit {
            let statuses = DIAGNOSE.lock().map(|d| d.clone()).unwrap_or_default();
            panic!("gave up after {limit:?} waiting for {what}\n{statuses}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Sets the planned-failover request annotation on the group.
async fn annotate_planned_failover(live: &LiveLab, target: &str) {
    use kube::api::{Api, DynamicObject, Patch, PatchParams};
    use kube::core::{ApiResource, GroupVersionKind};
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "shipstream.io",
        "v1alpha1",
        "MysqlFailoverGroup",
    ));
    let api: Api<DynamicObject> =
        Api::namespaced_with(live.client().clone(), live.namespace(), &resource);
    let patch = serde_json::json!({"metadata": {"annotations": {
        "bloodraven.shipstream.io/planned-failover": target}}});
    api.patch(live.group_name(), &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
}

/// The promotion records of `site`'s manifest (0 when it has none yet).
async fn promotions(store: &FsStore, root: &ArchiveRoot, site: &str) -> usize {
    open_archive(store, root, ReaderOptions::new(ReaderKey::None))
        .await
        .ok()
        .and_then(|open| open.manifests.get(site).map(|m| m.promotions.len()))
        .unwrap_or(0)
}

/// Acknowledged writes (keys from `first`) through the `-primary` Service once it accepts
/// them, then `FLUSH BINARY LOGS`: the new writes' GTIDs and the moment of the flush.
async fn write_and_flush(live: &LiveLab, first: i32) -> (GtidSet, Instant) {
    let primary = live.primary_addr().unwrap();
    // A new connection per attempt, never a pooled one: a connection made through the
    // -primary Service before it followed the promotion stays on the fenced old primary, as
    // it would through kube-proxy.
    let mut conn = wait_for("a writable new primary", Duration::from_secs(60), async || {
        let attempt = async {
            let mut conn = mysql_async::Conn::new(accounts::opts(&OPERATOR, primary, None)).await?;
            match conn.exec_drop("INSERT INTO app.sidecar_probe VALUES (?)", (first,)).await {
                Ok(()) => Ok(conn),
                Err(error) => {
                    let _ = conn.disconnect().await;
                    Err(error)
                }
            }
        };
        match attempt.await {
            Ok(conn) => Some(conn),
            Err(error) => {
                let group = live.group_object().map(|g| g["status"].to_string());
                let sidecars = statuses(live).await;
                let diagnosis = format!(
                    "the last write through {primary} failed: {error}\nstatus: {group:?}\n{sidecars}"
                );
                if let Ok(mut held) = DIAGNOSE.lock() {
                    *held = diagnosis;
                }
                None
            }
        }
    })
    .await;
    let before: String = conn.query_first("SELECT @@global.gtid_executed").await.unwrap().unwrap();
    let before: GtidSet = before.replace('\n', "").parse().unwrap();
    for id in first + 1..first + 20 {
        conn.exec_drop("INSERT INTO app.sidecar_probe VALUES (?)", (id,)).await.unwrap();
    }
    let after: String = conn.query_first("SELECT @@global.gtid_executed").await.unwrap().unwrap();
    let after: GtidSet = after.replace('\n', "").parse().unwrap();
    conn.query_drop("FLUSH BINARY LOGS").await.unwrap();
    let flushed = Instant::now();
    conn.disconnect().await.unwrap();
    let written = after.difference(&before);
    assert!(!written.is_empty(), "the new primary acknowledged writes");
    (written, flushed)
}

/// Waits until `site`'s manifest covers `written` and holds at least `promotions` promotion
/// records; returns how many it holds.
async fn wait_archived(
    live: &LiveLab,
    store: &FsStore,
    root: &ArchiveRoot,
    site: &str,
    written: &GtidSet,
    promotions: usize,
) -> usize {
    wait_for(
        &format!("{site}'s uploads and promotion record #{promotions}"),
        Duration::from_secs(60),
        async || {
            let diagnosis = statuses(live).await;
            if let Ok(mut held) = DIAGNOSE.lock() {
                *held = diagnosis;
            }
            let open = open_archive(store, root, ReaderOptions::new(ReaderKey::None)).await.ok()?;
            let manifest = open.manifests.get(site)?;
            let mut all = GtidSet::new();
            for row in &manifest.files {
                all.union_with(row.effective_gtids());
            }
            let done = written.is_subset(&all) && manifest.promotions.len() >= promotions;
            done.then_some(manifest.promotions.len())
        },
    )
    .await
}

#[expect(
    clippy::print_stdout,
    reason = "the measured upload delay is the test's record (--no-capture)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_primarys_sidecar_archives_every_acknowledged_write_and_the_operator_reports_it() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let binary = SidecarConfig::locate()
        .expect("the sidecar binary: run `cargo build -p bloodraven-sidecar` first");
    let group = group();
    let live = LiveLab::start_with(
        &group,
        Some(Arc::new(InProcessWithHttp)),
        LiveOptions { sidecar: Some(binary), ..LiveOptions::default() },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let run = async {
        let active = wait_for("an active site", Duration::from_secs(150), async || {
            let group = live.group_object()?;
            let ready = group["status"]["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            ready.then(|| group["status"]["activeSite"].as_str().map(str::to_owned)).flatten()
        })
        .await;
        // Acknowledged writes through the -primary Service, then a rotation.
        let primary = live.primary_addr().unwrap();
        let pool = mysql_async::Pool::new(accounts::opts(&OPERATOR, primary, None));
        let mut conn = pool.get_conn().await.unwrap();
        conn.query_drop("CREATE TABLE IF NOT EXISTS app.sidecar_probe (id INT PRIMARY KEY)")
            .await
            .unwrap();
        for id in 0..50 {
            conn.exec_drop("INSERT INTO app.sidecar_probe VALUES (?)", (id,)).await.unwrap();
        }
        let acknowledged: String =
            conn.query_first("SELECT @@global.gtid_executed").await.unwrap().unwrap();
        let acknowledged: GtidSet = acknowledged.replace('\n', "").parse().unwrap();
        conn.query_drop("FLUSH BINARY LOGS").await.unwrap();
        drop(conn);
        pool.disconnect().await.unwrap();

        // The archive, opened by the reader the console and the planner use, covers them.
        let store = FsStore::new(live.pvc_archive_dir()).unwrap();
        let root = ArchiveRoot::under_profile("orders/pitr/orders").unwrap();
        let archived =
            wait_for("the sealed binlog in the archive", Duration::from_secs(60), async || {
                let diagnosis = statuses(&live).await;
                if let Ok(mut held) = DIAGNOSE.lock() {
                    *held = diagnosis;
                }
                let open =
                    open_archive(&store, &root, ReaderOptions::new(ReaderKey::None)).await.ok()?;
                let manifest = open.manifests.get(&active)?;
                let mut all = GtidSet::new();
                for row in &manifest.files {
                    all.union_with(row.effective_gtids());
                }
                acknowledged.is_subset(&all).then_some(all)
            })
            .await;
        assert!(acknowledged.is_subset(&archived));

        // The operator's roll-up: every site verified one archive ID, PITRArchiveReady True.
        wait_for(
            "PITRArchiveReady=True and a Verified archive",
            Duration::from_secs(120),
            async || {
                let group = live.group_object()?;
                let verified = group["status"]["pitr"]["archive"]["state"] == "Verified";
                let ready = group["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .any(|c| c["type"] == "PITRArchiveReady" && c["status"] == "True");
                (verified && ready).then_some(())
            },
        )
        .await;

        // Planned failover to the other candidate: its sidecar records the promotion and
        // uploads what it seals from then on.
        let candidate = ["iad", "pdx"].into_iter().find(|s| *s != active).unwrap().to_owned();
        annotate_planned_failover(&live, &candidate).await;
        wait_for("the planned failover's success", Duration::from_secs(120), async || {
            let group = live.group_object()?;
            let done = group["status"]["plannedFailover"]["result"]["outcome"] == "Succeeded"
                && group["status"]["activeSite"] == candidate.as_str();
            done.then_some(())
        })
        .await;
        let promotions_before = promotions(&store, &root, &candidate).await;
        let (written, flushed) = write_and_flush(&live, 1000).await;
        let taken_over =
            wait_archived(&live, &store, &root, &candidate, &written, promotions_before + 1).await;
        println!(
            "planned failover to {candidate}: its sealed file and promotion record archived {:.2} s after FLUSH BINARY LOGS ({taken_over} promotion records)",
            flushed.elapsed().as_secs_f64()
        );

        // Emergency failover: the new primary is cut from the operator and SIGKILLed; the
        // promoted site's sidecar records its (second) promotion and uploads again.
        live.drill_link(&format!("operator:{candidate}")).unwrap().set(Fault::Refuse).unwrap();
        let pid = live.pid(&candidate).unwrap();
        let killed = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        assert!(killed.unwrap().success(), "kill -KILL {pid}");
        let promoted = wait_for("a new active site", Duration::from_secs(90), async || {
            let group = live.group_object()?;
            let site = group["status"]["activeSite"].as_str()?;
            (site != candidate).then(|| site.to_owned())
        })
        .await;
        let promotions_before = promotions(&store, &root, &promoted).await;
        let (written, flushed) = write_and_flush(&live, 2000).await;
        let taken_over =
            wait_archived(&live, &store, &root, &promoted, &written, promotions_before + 1).await;
        println!(
            "emergency failover to {promoted}: its sealed file and promotion record archived {:.2} s after FLUSH BINARY LOGS ({taken_over} promotion records)",
            flushed.elapsed().as_secs_f64()
        );
    };
    tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .unwrap_or_else(|_| panic!("the live sidecar test did not finish within 600 s"));
    live.stop().await;
}
