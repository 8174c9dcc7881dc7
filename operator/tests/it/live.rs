//! The operator in the live lab: the lab API server, the lab kubelet running real MySQL 9.7,
//! and the operator's controller and topology manager in this process.
//!
//! `workloads_for_a_three_site_group` needs no MySQL; `a_three_site_group_converges_…` needs
//! `source scripts/provision.sh` (BLOODRAVEN_MYSQL*) and fails naming it otherwise.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_crd::group::{SiteState, SourceConvergenceState};
use bloodraven_crd::{ConditionType, MysqlFailoverGroup};
use bloodraven_kubelet::{Kubelet, KubeletConfig};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::manager::Tuning;
use bloodraven_sites::accounts::APPLICATION;
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::{Fault, ProxyHub};
use bloodraven_sites::template::ensure_template_async;
use bloodraven_sites::workload::{self, Workload, WorkloadConfig};
use bloodraven_workloads::{Resolver, ServiceAddress, ports, primary_service_name};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};
use kube::api::Api;

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
/// Generous: CI shares 2 cores with other real servers.
const BOUND: Duration = Duration::from_secs(240);

async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(start.elapsed() < BOUND, "gave up after {BOUND:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn start_lab() -> (Lab, kube::Client) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let crd = std::fs::read_to_string(format!(
        "{root}/deploy/crds/mysqlfailovergroups.shipstream.io.yaml"
    ))
    .expect("deploy/crds");
    lab.load_crds(&crd).expect("the group CRD");
    let example = std::fs::read_to_string(format!("{root}/deploy/examples/group.yaml"))
        .expect("deploy/examples/group.yaml");
    lab.apply_yaml(&example).expect("the example group");
    let url = lab.url().parse().expect("the lab's URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("a client of the lab");
    (lab, client)
}

/// Resolves nothing: the workload test dials no MySQL.
struct Nowhere;

impl Resolver for Nowhere {
    fn resolve(&self, _namespace: &str, _service: &str, _port: u16) -> Option<ServiceAddress> {
        None
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_for_a_three_site_group() {
    let (lab, client) = start_lab().await;
    let context =
        Arc::new(Context::new(client.clone(), Arc::new(Nowhere), Tuning::default(), "test"));
    let controller = tokio::spawn(controller::run(context.clone(), Some(NAMESPACE)));

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NAMESPACE);
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    for site in ["iad", "pdx", "fra"] {
        let base = format!("mysql-{GROUP}-{site}");
        let deployment = wait_for(&format!("Deployment {base}"), || async {
            deployments.get_opt(&base).await.ok().flatten()
        })
        .await;
        let owner = deployment.metadata.owner_references.unwrap_or_default();
        assert!(
            owner.iter().any(|owner| owner.kind == "MysqlFailoverGroup" && owner.name == GROUP),
            "{base} is owned by the group: {owner:?}"
        );
        assert!(services.get_opt(&base).await.unwrap().is_some(), "client Service {base}");
        let internal = format!("{base}-internal");
        assert!(services.get_opt(&internal).await.unwrap().is_some(), "Service {internal}");
        let pvc = format!("{base}-data");
        assert!(claims.get_opt(&pvc).await.unwrap().is_some(), "PVC {pvc}");
        let config = format!("{base}-config");
        assert!(configmaps.get_opt(&config).await.unwrap().is_some(), "ConfigMap {config}");
    }
    // The manager publishes the -primary Service (no active site: sites unreachable) and a
    // status saying nothing answers.
    let primary = primary_service_name(GROUP);
    wait_for("the -primary Service", || async { services.get_opt(&primary).await.ok().flatten() })
        .await;
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);
    let status = wait_for("a status with three unreachable sites", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        (status.sites.len() == 3
            && status.sites.iter().all(|site| site.state == Some(SiteState::Unreachable)))
        .then_some(status)
    })
    .await;
    let ready = status.condition(&ConditionType::Ready).expect("a Ready condition");
    assert!(!ready.is_true(), "no site answers, so not Ready: {ready:?}");
    assert_eq!(status.active_site, None);
    controller.abort();
    drop(context);
    lab.stop().await.expect("the lab stops");
}

fn group_ready(group: &MysqlFailoverGroup, not: Option<&str>) -> Option<String> {
    let status = group.status.as_ref()?;
    let active = status.active_site.clone()?;
    if Some(active.as_str()) == not {
        return None;
    }
    let ready = status.condition(&ConditionType::Ready)?.is_true();
    let primary_writable = status.site(&active)?.state == Some(SiteState::Writable);
    let followers_converged = status
        .sites
        .iter()
        .filter(|site| site.name != active && Some(site.name.as_str()) != not)
        .all(|site| {
            site.source_convergence_state == Some(SourceConvergenceState::Converged)
                && site.replicating == Some(true)
        });
    (ready && primary_writable && followers_converged).then_some(active)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_site_group_converges_and_fails_over_when_the_primary_dies() {
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let (lab, client) = start_lab().await;
    let template = ensure_template_async(&dist).await.expect("the template data directory");
    let root = tempfile::Builder::new().prefix("bro-").tempdir_in("/tmp").expect("a short root");
    let hub = Arc::new(ProxyHub::current().expect("a tokio runtime"));
    let mut config = KubeletConfig::new(root.path());
    config.namespace = Some(NAMESPACE.to_owned());
    let kubelet = Kubelet::start(client.clone(), dist, template, hub.clone(), config)
        .await
        .expect("the kubelet");
    let tuning = Tuning { poll_interval: Duration::from_secs(1), ..Tuning::default() };
    let context =
        Arc::new(Context::new(client.clone(), Arc::new(kubelet.resolver()), tuning, "test"));
    let controller = tokio::spawn(controller::run(context.clone(), Some(NAMESPACE)));
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);

    // Converged: one writable primary, star replication, activeSite set, Ready.
    let first =
        wait_for("the group to converge (Ready, one primary, followers replicating)", || async {
            group_ready(&groups.get(GROUP).await.ok()?, None)
        })
        .await;
    assert_eq!(first, "iad", "sitePriorities puts iad first and no site holds more");

    // The workload writes through the -primary Service.
    let primary_addr = kubelet
        .resolver()
        .resolve(NAMESPACE, &primary_service_name(GROUP), ports::MYSQL)
        .expect("the -primary Service resolves");
    let primary_addr = format!("{}:{}", primary_addr.host, primary_addr.port).parse().unwrap();
    let writes = Workload::start(WorkloadConfig::new(primary_addr));
    writes.wait_acknowledged(50, BOUND).await.expect("50 acknowledged writes before the kill");

    // The primary dies and stays unreachable: its internal link refuses (a dead site for the
    // operator and the followers), and its mysqld is SIGKILLed.
    let internal = bloodraven_kubelet::link_name(
        NAMESPACE,
        &format!("mysql-{GROUP}-{first}-internal"),
        ports::MYSQL,
    );
    hub.get(&internal).expect("the operator dialled the internal link").set(Fault::Refuse).unwrap();
    let pod = kubelet.pod(NAMESPACE, &format!("mysql-{GROUP}-{first}")).expect("the primary's pod");
    let pid = pod.pid.expect("a running mysqld");
    let killed_at = Instant::now();
    let status =
        std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill -KILL {pid}");
    let before = writes.acknowledged();

    let second = wait_for("a failover to the other candidate, followers repointed", || async {
        group_ready(&groups.get(GROUP).await.ok()?, Some(&first))
    })
    .await;
    let failover = killed_at.elapsed();
    assert_eq!(second, "pdx", "the only other PrimaryCandidate");
    let group = groups.get(GROUP).await.unwrap();
    let last = group.status.as_ref().and_then(|status| status.last_failover.clone());
    assert_eq!(last.and_then(|last| last.target).as_deref(), Some("pdx"));

    // Writes resume through the same -primary address, now on pdx.
    // The workload keeps a session whose write failed with super_read_only (error 1290 does
    // not end its session), and a proxy link keeps live connections on their old upstream:
    // the restarted, read-only iad. Reset them, as a client pool would drop a read-only
    // server; new connections follow the Service to pdx.
    let primary_link = hub
        .get(&bloodraven_kubelet::link_name(NAMESPACE, &primary_service_name(GROUP), ports::MYSQL))
        .expect("the -primary link");
    primary_link.reset();
    writes.wait_acknowledged(before + 50, BOUND).await.expect("writes resume on the new primary");
    let ledger = writes.stop().await.expect("the workload's ledger");
    let new_primary = kubelet
        .resolver()
        .resolve(NAMESPACE, &format!("mysql-{GROUP}-{second}-internal"), ports::MYSQL)
        .unwrap();
    let new_primary = format!("{}:{}", new_primary.host, new_primary.port).parse().unwrap();
    let report = workload::verify_at(&ledger, new_primary, &APPLICATION).await.expect("the ledger");
    tracing::warn!(
        "failover: detection-to-ready {failover:?}; ledger: {} acknowledged, {} present, lost {:?}, \
         in doubt {}, failures {:?}",
        report.acknowledged,
        report.present,
        report.lost.iter().map(|lost| lost.key).collect::<Vec<_>>(),
        report.in_doubt.len(),
        report.failures
    );
    assert!(report.phantom.is_empty(), "no row the workload never wrote: {:?}", report.phantom);
    assert_eq!(
        report.present + report.lost.len(),
        report.acknowledged,
        "every acknowledged write is either on the new primary or listed as lost"
    );

    controller.abort();
    drop(context);
    kubelet.shutdown().await;
    lab.stop().await.expect("the lab stops");
}
