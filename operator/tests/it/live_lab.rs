//! The live lab with real MySQL that the live tests share: the lab API server with their CRDs
//! and the example group, the lab kubelet running the sites (and, when asked, batch Jobs with
//! the `bloodraven-sidecar` binary and CronJobs), and the small readers the tests poll sites
//! and Events with. Needs `source scripts/provision.sh` (and `cargo build -p
//! bloodraven-sidecar` for Jobs); fails naming it otherwise.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bloodraven_gtid::GtidSet;
use bloodraven_kubelet::cronjob::CronConfig;
use bloodraven_kubelet::{JobConfig, Kubelet, KubeletConfig, SidecarConfig, claims::claim_folder};
use bloodraven_lab::Lab;
use bloodraven_operator::manager::Tuning;
use bloodraven_sites::accounts::OPERATOR;
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::{Template, ensure_template_async};
use bloodraven_workloads::{Resolver, ports};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Secret};
use kube::api::{Api, PostParams};
use mysql_async::prelude::Queryable;
use serde_json::json;

use super::harness::{Operator, start_lab_with};

/// Defines the file's `wait_for(what, check)`: [`super::harness::wait_for`] with `$bound` and
/// polling every `$every`.
macro_rules! bounded_wait_for {
    ($bound:expr, $every:expr) => {
        async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
        where
            F: FnMut() -> Fut,
            Fut: std::future::Future<Output = Option<T>>,
        {
            $crate::harness::wait_for(what, $bound, $every, check).await
        }
    };
}
pub(crate) use bounded_wait_for;

/// The sidecars' PVC archive folder under the lab's root.
const PVC_ARCHIVE_DIR: &str = "a";

/// What a [`LiveLab`] runs.
pub(crate) struct LiveLabOptions<'a> {
    /// The namespace the example group is applied in and the kubelet watches.
    pub(crate) namespace: &'a str,
    /// The CRDs loaded, by file name in `deploy/crds` less `.shipstream.io.yaml`.
    pub(crate) crds: &'a [&'a str],
    /// Run batch Jobs with the sidecar binary, these tool variables (`BLOODRAVEN_MYSQLDUMP`…)
    /// passed to every Job process; `None`: no Jobs.
    pub(crate) job_env: Option<&'a [&'a str]>,
    /// Fire CronJobs on this clock; `None`: no CronJobs.
    pub(crate) cronjobs: Option<CronConfig>,
}

impl<'a> LiveLabOptions<'a> {
    /// Sites only: the group CRD, no Jobs, no CronJobs.
    pub(crate) fn sites(namespace: &'a str) -> Self {
        Self { namespace, crds: &["mysqlfailovergroups"], job_env: None, cronjobs: None }
    }
}

/// A running live lab; [`LiveLab::stop`] ends it, dropping it ends it less tidily.
pub(crate) struct LiveLab {
    pub(crate) lab: Lab,
    pub(crate) client: kube::Client,
    pub(crate) kubelet: Kubelet,
    pub(crate) dist: MysqlDist,
    pub(crate) template: Template,
    pub(crate) hub: Arc<ProxyHub>,
    /// The sidecar binary, when Jobs run.
    pub(crate) sidecar: Option<PathBuf>,
    namespace: String,
    /// Holds the claim folders (`c/`) and the Jobs' folders (`j/`); removed on drop.
    root: tempfile::TempDir,
}

impl LiveLab {
    pub(crate) async fn start(options: LiveLabOptions<'_>) -> Self {
        Self::start_with(options, false).await
    }

    /// [`LiveLab::start`]; with `sidecars`, the sidecar binary also runs beside every mysqld
    /// (`options.job_env` must be set), its PVC PITR archive in [`LiveLab::pvc_archive_dir`].
    pub(crate) async fn start_with(options: LiveLabOptions<'_>, sidecars: bool) -> Self {
        let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
        let sidecar = options.job_env.map(|_| {
            SidecarConfig::locate()
                .expect("the sidecar binary: run `cargo build -p bloodraven-sidecar` first")
        });
        let (lab, client) = start_lab_with(options.namespace, options.crds).await;
        let template = ensure_template_async(&dist).await.expect("the template data directory");
        // Short: mysqld's socket path below it must fit in 107 bytes.
        let root = tempfile::Builder::new().prefix("brl-").tempdir_in("/tmp").expect("a root");
        let hub = Arc::new(ProxyHub::current().expect("a tokio runtime"));
        let mut config = KubeletConfig::new(root.path().join("c"));
        config.namespace = Some(options.namespace.to_owned());
        if let (Some(vars), Some(sidecar)) = (options.job_env, &sidecar) {
            let mut jobs =
                JobConfig::new(root.path().join("j")).executable("bloodraven-sidecar", sidecar);
            for var in vars {
                jobs = jobs.env(var, tool(var));
            }
            config.jobs = Some(jobs);
        }
        config.cronjobs = options.cronjobs;
        if sidecars {
            let binary = sidecar.clone().expect("sidecars run with Jobs: set job_env");
            let mut sidecars = SidecarConfig::new(binary);
            sidecars.pvc_archive = Some(root.path().join(PVC_ARCHIVE_DIR));
            config.sidecar = Some(sidecars);
        }
        let kubelet =
            Kubelet::start(client.clone(), dist.clone(), template.clone(), hub.clone(), config)
                .await
                .expect("the kubelet");
        if sidecar.is_some() {
            // The backup controller reads its Job's completion sentinel from the pod log.
            lab.set_pod_logs(Arc::new(kubelet.log_source()));
        }
        let namespace = options.namespace.to_owned();
        LiveLab { lab, client, kubelet, dist, template, hub, sidecar, namespace, root }
    }

    /// The operator over the lab's namespace as `instance`, polling every second.
    pub(crate) fn operator(&self, instance: &str) -> Operator {
        let tuning = Tuning { poll_interval: Duration::from_secs(1), ..Tuning::default() };
        let resolver = Arc::new(self.kubelet.resolver());
        Operator::start(&self.client, resolver, tuning, Some(self.namespace.as_str()), instance)
    }

    /// `host:port` of Service `service` on `port` in the lab's namespace.
    pub(crate) fn service_addr(&self, service: &str, port: u16) -> String {
        let address = self
            .kubelet
            .resolver()
            .resolve(&self.namespace, service, port)
            .unwrap_or_else(|| panic!("Service {service} resolves"));
        format!("{}:{}", address.host, address.port)
    }

    /// `host:port` of the MySQL port of `group`'s `site` (its internal Service).
    pub(crate) fn site_addr(&self, group: &str, site: &str) -> String {
        self.service_addr(&format!("mysql-{group}-{site}-internal"), ports::MYSQL)
    }

    /// The folder standing in for the sidecars' PVC PITR archive mount (with
    /// [`LiveLabOptions::sidecars`]): their store root, as `/run/bloodraven/pitr-archive` is in
    /// a pod.
    pub(crate) fn pvc_archive_dir(&self) -> PathBuf {
        self.root.path().join(PVC_ARCHIVE_DIR)
    }

    /// The lab folder of `claim`.
    pub(crate) fn claim_folder(&self, claim: &PersistentVolumeClaim) -> PathBuf {
        let name = claim.metadata.name.as_deref().expect("a claim's name");
        let uid = claim.metadata.uid.as_deref().expect("a created claim's uid");
        claim_folder(&self.root.path().join("c"), &self.namespace, name, uid)
    }

    /// Creates the 1 Gi claim `backups` that the tests' PVC profiles name; answers it and its
    /// lab folder.
    pub(crate) async fn create_backup_claim(&self) -> (PersistentVolumeClaim, PathBuf) {
        let claims: Api<PersistentVolumeClaim> =
            Api::namespaced(self.client.clone(), &self.namespace);
        let claim: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": { "name": "backups" },
            "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } },
        }))
        .unwrap();
        let claim = claims.create(&PostParams::default(), &claim).await.expect("the backup claim");
        let folder = self.claim_folder(&claim);
        (claim, folder)
    }

    /// Creates the Secret `s3-keys` that the tests' S3 profiles name.
    pub(crate) async fn create_s3_keys(&self, access_key: &str, secret_key: &str) {
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let keys: Secret = serde_json::from_value(json!({
            "metadata": { "name": "s3-keys" },
            "stringData": { "AWS_ACCESS_KEY_ID": access_key, "AWS_SECRET_ACCESS_KEY": secret_key },
        }))
        .unwrap();
        secrets.create(&PostParams::default(), &keys).await.expect("the S3 keys");
    }

    /// The logs of every Job attempt in the lab's namespace (each container's, init
    /// containers included, headed `<pod>/<container>:`), joined.
    pub(crate) fn job_logs(&self) -> String {
        let kubelet = &self.kubelet;
        let mut logs = Vec::new();
        for (pod, found) in kubelet.job_pods(&self.namespace) {
            for container in found.logs.keys() {
                if let Some(log) = kubelet.job_container_log(&self.namespace, &pod, container) {
                    logs.push(format!("{pod}/{container}:\n{log}"));
                }
            }
        }
        logs.join("\n---\n")
    }

    /// Stops the kubelet (and the sites it runs), then the lab; the folders go.
    pub(crate) async fn stop(self) {
        self.kubelet.shutdown().await;
        self.lab.stop().await.expect("the lab stops");
    }
}

/// A tool path `scripts/provision.sh` exports.
pub(crate) fn tool(var: &str) -> String {
    std::env::var(var)
        .unwrap_or_else(|_| panic!("{var} is unset: run `source scripts/provision.sh` first"))
}

/// A connection to `addr` (`host:port`) as `user`, or `None` within 5 s.
pub(crate) async fn conn_as(addr: &str, user: &str, password: &str) -> Option<mysql_async::Conn> {
    let (host, port) = addr.rsplit_once(':')?;
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(port.parse().ok()?)
        .user(Some(user))
        .pass(Some(password))
        .prefer_socket(false);
    tokio::time::timeout(Duration::from_secs(5), mysql_async::Conn::new(opts)).await.ok()?.ok()
}

/// A connection to `addr` as the operator account, or `None` within 5 s.
pub(crate) async fn conn(addr: &str) -> Option<mysql_async::Conn> {
    conn_as(addr, OPERATOR.user, OPERATOR.password).await
}

/// Runs `statement` on `addr` as the operator account; panics if it fails.
pub(crate) async fn sql(addr: &str, statement: &str) {
    let mut conn = conn(addr).await.expect("the site answers");
    conn.query_drop(statement).await.unwrap_or_else(|e| panic!("{statement}: {e}"));
    let _ = conn.disconnect().await;
}

/// A site's executed set.
pub(crate) async fn gtid(addr: &str) -> Option<GtidSet> {
    let mut conn = conn(addr).await?;
    let text: String = conn.query_first("SELECT @@global.gtid_executed").await.ok()??;
    let _ = conn.disconnect().await;
    text.replace('\n', "").parse().ok()
}

/// A site's executed set and whether its receiver runs.
pub(crate) async fn read_site(addr: &str) -> Option<(GtidSet, bool)> {
    let mut conn = conn(addr).await?;
    let text: String = conn.query_first("SELECT @@global.gtid_executed").await.ok()??;
    let rows: Vec<mysql_async::Row> = conn.query("SHOW REPLICA STATUS").await.ok()?;
    let io = rows.first().and_then(|row| row.get::<String, _>("Replica_IO_Running"));
    let _ = conn.disconnect().await;
    Some((text.replace('\n', "").parse().ok()?, io.as_deref() == Some("Yes")))
}

/// `CHECKSUM TABLE` of every table of schema `app`, by name.
pub(crate) async fn checksums(addr: &str) -> Option<BTreeMap<String, Option<i64>>> {
    let mut conn = conn(addr).await?;
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

/// The Events about the object named `name`: (reason, note).
pub(crate) fn events(lab: &Lab, name: &str) -> Vec<(String, String)> {
    lab.list("events.k8s.io/v1", "Event")
        .iter()
        .filter(|event| event["regarding"]["name"] == name)
        .filter_map(|event| {
            Some((
                event["reason"].as_str()?.to_owned(),
                event["note"].as_str().unwrap_or("").to_owned(),
            ))
        })
        .collect()
}

/// The reasons of the Events about the object named `name`.
pub(crate) fn event_reasons(lab: &Lab, name: &str) -> Vec<String> {
    events(lab, name).into_iter().map(|(reason, _)| reason).collect()
}

/// What [`pitr_source_with_backup`] set up: a source group archiving PITR binlogs, its backup
/// `b1`, and two write batches a whole-second target apart, all archived.
pub(crate) struct PitrSource {
    /// A connection to the source's primary.
    pub(crate) source: mysql_async::Conn,
    /// `b1`'s `status.gtidExecuted`.
    pub(crate) backup_gtids: GtidSet,
    /// The source's set after the first batch (before the target).
    pub(crate) at_target: GtidSet,
    /// The source's set after the second batch (every acknowledged write).
    pub(crate) acknowledged: GtidSet,
    /// The whole-second target between the two batches.
    pub(crate) target: jiff::Timestamp,
}

/// The shared setup of the live PITR tests (the lab started with sidecars and the tools of
/// `verification_pitr_live.rs`): links the claim `backups`'s folder to the sidecars' archive
/// folder for `namespace` (the lab keeps the two apart; one claim in a cluster), gives the
/// example group `group` profile `pvc` (`backups`, `sub_path`) with PITR on it, waits (up to
/// `bound`) for it to converge, creates `app.orders` with rows 0..50, backs it up as `b1`, then
/// writes rows 50..75, takes a whole-second target T at least a second later, writes rows
/// 75..100 at least a second after T, seals the binlog and waits for the archive to hold every
/// write after the backup. The operator must be running.
pub(crate) async fn pitr_source_with_backup(
    live: &LiveLab,
    group: &str,
    sub_path: &str,
    bound: Duration,
) -> PitrSource {
    use bloodraven_archive::reader::{ReaderKey, ReaderOptions};
    use bloodraven_crd::MysqlFailoverGroup;
    use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
    use bloodraven_store::{ArchiveRoot, FsStore, open_archive};
    use kube::api::{Patch, PatchParams};

    let every = Duration::from_millis(500);
    let namespace = live.namespace.as_str();
    let (_claim, folder) = live.create_backup_claim().await;
    let sidecar_side = live.pvc_archive_dir().join(namespace).join("backups");
    std::fs::create_dir_all(&sidecar_side).expect("the sidecars' archive folder");
    std::os::unix::fs::symlink(&sidecar_side, &folder).expect("the layout bridge");

    let groups: Api<MysqlFailoverGroup> = Api::namespaced(live.client.clone(), namespace);
    let backup_spec = json!({ "spec": { "backup": {
        "profiles": [{ "name": "pvc", "storage": { "type": "PVC",
                       "pvc": { "claimName": "backups", "subPath": sub_path } } }],
        "pitr": { "enabled": true, "profileName": "pvc" },
    }}});
    groups
        .patch(group, &PatchParams::default(), &Patch::Merge(&backup_spec))
        .await
        .expect("the backup profile and PITR");

    let primary =
        super::harness::wait_for("the source group to converge", bound, every, || async {
            let status = groups.get(group).await.ok()?.status?;
            let active = status.active_site?;
            let all = status.sites.iter().filter(|site| site.name != active).all(|site| {
                site.replicating == Some(true) && site.seconds_behind_source == Some(0)
            });
            (all && status.sites.len() == 3).then_some(active)
        })
        .await;
    let mut source = conn(&live.site_addr(group, &primary)).await.expect("the primary answers");
    source
        .query_drop("CREATE TABLE app.orders (id INT PRIMARY KEY, note VARCHAR(40))")
        .await
        .unwrap();
    for id in 0..50 {
        source
            .query_drop(format!("INSERT INTO app.orders VALUES ({id}, 'before {id}')"))
            .await
            .unwrap();
    }

    let backups: Api<MysqlBackup> = Api::namespaced(live.client.clone(), namespace);
    let b1: MysqlBackup = serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
        "metadata": { "name": "b1", "namespace": namespace },
        "spec": { "failoverGroupRef": { "name": group }, "profileName": "pvc" },
    }))
    .unwrap();
    backups.create(&PostParams::default(), &b1).await.expect("MysqlBackup b1");
    let backup_gtids = super::harness::wait_for(
        "backup b1 Succeeded with its gtidExecuted",
        bound,
        every,
        || async {
            let status = backups.get("b1").await.ok()?.status?;
            assert_ne!(status.phase, Some(BackupPhase::Failed), "b1 failed: {}", live.job_logs());
            if status.phase != Some(BackupPhase::Succeeded) {
                return None;
            }
            assert!(
                status.failover_group_uid.as_deref().is_some_and(|uid| !uid.is_empty()),
                "b1 records its source group's uid (the stamp the replay is tied to): {status:#?}"
            );
            status.gtid_executed.clone()
        },
    )
    .await;
    let backup_gtids: GtidSet = backup_gtids.replace('\n', "").parse().expect("b1's GTID set");

    // A target must lie a second past the dump's end (rounded up), PITRBackupAfterTarget
    // otherwise: the first batch waits 2 s after the dump.
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    for id in 50..75 {
        source
            .query_drop(format!("INSERT INTO app.orders VALUES ({id}, 'before T {id}')"))
            .await
            .unwrap();
    }
    let at_target = executed(&mut source).await;
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let target =
        jiff::Timestamp::from_second(jiff::Timestamp::now().as_second()).expect("a whole second");
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    for id in 75..100 {
        source
            .query_drop(format!("INSERT INTO app.orders VALUES ({id}, 'after T {id}')"))
            .await
            .unwrap();
    }
    let acknowledged = executed(&mut source).await;
    source.query_drop("FLUSH BINARY LOGS").await.unwrap();
    let after_backup = acknowledged.difference(&backup_gtids);
    assert!(
        !after_backup.is_empty() && !acknowledged.difference(&at_target).is_empty(),
        "writes after the backup and after the target"
    );

    // The archive as the sidecars wrote it holds them (`<claim>/<subPath>/binlogs`).
    let store = FsStore::new(live.pvc_archive_dir()).expect("the sidecars' store");
    let root = ArchiveRoot::under_profile(&format!("{namespace}/backups/{sub_path}"))
        .expect("the archive root");
    let started = std::time::Instant::now();
    loop {
        let mut all = GtidSet::new();
        if let Ok(open) = open_archive(&store, &root, ReaderOptions::new(ReaderKey::None)).await {
            for manifest in open.manifests.values() {
                for row in &manifest.files {
                    all.union_with(row.effective_gtids());
                }
            }
        }
        if after_backup.is_subset(&all) {
            break;
        }
        if started.elapsed() > bound {
            let pitr = groups.get(group).await.ok().and_then(|g| g.status).map(|s| s.pitr);
            panic!(
                "gave up after {bound:?} waiting for the archive under {} to hold {after_backup} (it holds {all})\nstatus.pitr: {pitr:#?}",
                folder.display(),
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    PitrSource { source, backup_gtids, at_target, acknowledged, target }
}

/// `@@global.gtid_executed` over `conn`; panics if it cannot be read.
pub(crate) async fn executed(conn: &mut mysql_async::Conn) -> GtidSet {
    let text: String = conn
        .query_first("SELECT @@global.gtid_executed")
        .await
        .expect("reading @@gtid_executed")
        .expect("a row");
    text.replace('\n', "").parse().expect("a GTID set")
}
