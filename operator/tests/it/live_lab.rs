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
