//! The operator in the live lab: the lab API server, the lab kubelet running real MySQL 9.7,
//! and the operator's controller and topology manager in this process.
//!
//! `workloads_for_a_three_site_group` needs no MySQL; `a_three_site_group_converges_…` needs
//! `source scripts/provision.sh` (BLOODRAVEN_MYSQL*) and fails naming it otherwise.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_crd::group::{
    SiteState, SiteStatus, SourceConvergenceReason, SourceConvergenceState,
};
use bloodraven_crd::{ConditionType, MysqlFailoverGroup};
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::manager::Tuning;
use bloodraven_sites::accounts::{self, APPLICATION};
use bloodraven_sites::proxy::Fault;
use bloodraven_sites::workload::{self, Workload, WorkloadConfig};
use bloodraven_workloads::{Resolver, ServiceAddress, ports, primary_service_name};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};
use kube::api::Api;
use mysql_async::prelude::Queryable;

use super::harness::{Operator, start_lab};
use super::live_lab::{LiveLab, LiveLabOptions, bounded_wait_for};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
/// Generous: CI shares 2 cores with other real servers.
const BOUND: Duration = Duration::from_secs(240);

bounded_wait_for!(BOUND, Duration::from_millis(250));

/// Resolves nothing: the workload test dials no MySQL.
struct Nowhere;

impl Resolver for Nowhere {
    fn resolve(&self, _namespace: &str, _service: &str, _port: u16) -> Option<ServiceAddress> {
        None
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_for_a_three_site_group() {
    let (lab, client) = start_lab(NAMESPACE).await;
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

    // Bad input the CRD cannot catch: the credentials Secret disappears.
    lab.delete("v1", "Secret", Some(NAMESPACE), "mysql-operator-creds").unwrap();
    let ready = wait_for("Ready=False with reason SecretNotFound", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let ready = status.condition(&ConditionType::Ready)?.clone();
        (ready.reason.as_ref().map(|reason| reason.as_str()) == Some("SecretNotFound"))
            .then_some(ready)
    })
    .await;
    let message = ready.message.unwrap_or_default();
    assert!(message.contains("mysql-operator-creds"), "{message}");
    assert!(message.contains("MYSQL_REPLICATION_PASSWORD"), "says which keys: {message}");
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
    let followers: Vec<_> = status
        .sites
        .iter()
        .filter(|site| site.name != active && Some(site.name.as_str()) != not)
        .collect();
    let converged = |site: &&SiteStatus| {
        site.source_convergence_state == Some(SourceConvergenceState::Converged)
            && site.replicating == Some(true)
    };
    // After a failover (`not` names the failed primary) a follower may rightly end
    // Blocked/GTIDDiverged: with async replication it can have received transactions of the
    // failed primary that the promoted candidate never got (seen under load: fra ahead of
    // pdx). The spec keeps its transactions and blocks it; the test accepts that outcome
    // (the drills assert the same), and then does not ask for Ready.
    let blocked = |site: &&SiteStatus| {
        not.is_some()
            && site.source_convergence_state == Some(SourceConvergenceState::Blocked)
            && site.source_convergence_reason == Some(SourceConvergenceReason::GtidDiverged)
            && site.divergent_gtid.is_some()
    };
    let all_converged = followers.iter().all(converged);
    let settled = followers.iter().all(|site| converged(site) || blocked(site));
    (primary_writable && ((ready && all_converged) || (not.is_some() && settled))).then_some(active)
}

/// How the primary is taken away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    /// Its internal link refuses and its mysqld is SIGKILLed (the kubelet restarts it
    /// read-only, unreachable): a dead site.
    Killed,
    /// Its mysqld is SIGSTOPped: connections hang, reads time out (`Unreachable::Timeout`).
    Frozen,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_site_group_converges_and_fails_over_when_the_primary_dies() {
    failover_drill(Failure::Killed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_primary_is_unreachable_and_replaced() {
    failover_drill(Failure::Frozen).await;
}

async fn failover_drill(failure: Failure) {
    let live = LiveLab::start(LiveLabOptions::sites(NAMESPACE)).await;
    let (kubelet, hub, client) = (&live.kubelet, &live.hub, &live.client);
    let Operator { context, controller } = live.operator("test");
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);

    // Converged: one writable primary, star replication, activeSite set, Ready.
    let first =
        wait_for("the group to converge (Ready, one primary, followers replicating)", || async {
            group_ready(&groups.get(GROUP).await.ok()?, None)
        })
        .await;
    // `iad` by sitePriorities when both candidates answer the first poll; `pdx` when it is the
    // only one ready then (the planner does not wait for every candidate on a new group).
    assert!(first == "iad" || first == "pdx", "a PrimaryCandidate is first: {first}");
    let expected = if first == "iad" { "pdx" } else { "iad" };

    // The workload writes through the -primary Service.
    let primary_addr =
        live.service_addr(&primary_service_name(GROUP), ports::MYSQL).parse().unwrap();
    let writes = Workload::start(WorkloadConfig::new(primary_addr));
    writes.wait_acknowledged(50, BOUND).await.expect("50 acknowledged writes before the kill");

    // The primary dies and stays unreachable: its internal link refuses (a dead site for the
    // operator and the followers), and its mysqld is SIGKILLed.
    let internal = bloodraven_kubelet::link_name(
        NAMESPACE,
        &format!("mysql-{GROUP}-{first}-internal"),
        ports::MYSQL,
    );
    if failure == Failure::Killed {
        let link = hub.get(&internal).expect("the operator dialled the internal link");
        link.set(Fault::Refuse).unwrap();
    }
    let pod = kubelet.pod(NAMESPACE, &format!("mysql-{GROUP}-{first}")).expect("the primary's pod");
    let pid = pod.pid.expect("a running mysqld");
    let killed_at = Instant::now();
    let signal = if failure == Failure::Killed { "-KILL" } else { "-STOP" };
    let status =
        std::process::Command::new("kill").args([signal, &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill {signal} {pid}");
    let before = writes.acknowledged();

    let second = wait_for("a failover to the other candidate, followers repointed", || async {
        group_ready(&groups.get(GROUP).await.ok()?, Some(&first))
    })
    .await;
    let failover = killed_at.elapsed();
    assert_eq!(second, expected, "the only other PrimaryCandidate");
    let group = groups.get(GROUP).await.unwrap();
    let last = group.status.as_ref().and_then(|status| status.last_failover.clone());
    assert_eq!(last.and_then(|last| last.target).as_deref(), Some(expected));

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
    let new_primary = live.site_addr(GROUP, &second).parse().unwrap();
    let report = workload::verify_at(&ledger, new_primary, &APPLICATION).await.expect("the ledger");
    tracing::warn!(
        ?failure,
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

    let metrics = context.shared.metrics.render();
    assert!(
        metrics.contains(
            r#"bloodraven_topology_actions_total{namespace="orders",group="orders",kind="failover"} 1"#
        ),
        "one failover counted: {metrics}"
    );
    assert!(
        metrics.contains(&format!(
            r#"bloodraven_failovers_total{{namespace="orders",group="orders",target_site="{second}"}} 1"#
        )),
        "one failover counted under upstream's name, by target site: {metrics}"
    );

    // A writable DisasterRecovery site is fenced on the next poll.
    let fra = live.site_addr(GROUP, "fra").parse().unwrap();
    let mut conn =
        mysql_async::Conn::new(accounts::opts(&accounts::OPERATOR, fra, None)).await.unwrap();
    conn.query_drop("SET GLOBAL super_read_only = OFF").await.unwrap();
    conn.query_drop("SET GLOBAL read_only = OFF").await.unwrap();
    let fenced_at = Instant::now();
    loop {
        let fenced: Option<i64> =
            conn.query_first("SELECT @@global.super_read_only").await.unwrap();
        if fenced == Some(1) {
            break;
        }
        assert!(fenced_at.elapsed() < BOUND, "gave up after {BOUND:?} waiting for fra's fence");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    tracing::warn!(elapsed = ?fenced_at.elapsed(), "writable DR site fenced");
    let _ = conn.disconnect().await;
    let group = groups.get(GROUP).await.unwrap();
    assert_eq!(group.status.and_then(|status| status.active_site).as_deref(), Some(expected));

    controller.abort();
    drop(context);
    live.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_one_lease_holder_and_a_takeover_after_the_holder_stops() {
    use bloodraven_operator::lease::{LeaseConfig, try_acquire_or_renew};
    let (lab, client) = start_lab(NAMESPACE).await;
    let config = |identity: &str| LeaseConfig {
        namespace: NAMESPACE.to_owned(),
        name: "bloodraven-operator".to_owned(),
        identity: identity.to_owned(),
        duration: Duration::from_secs(2),
    };
    let (a, b) = (config("replica-a"), config("replica-b"));
    assert!(try_acquire_or_renew(&client, &a).await.unwrap(), "a creates the Lease");
    assert!(!try_acquire_or_renew(&client, &b).await.unwrap(), "b waits while a holds it");
    assert!(try_acquire_or_renew(&client, &a).await.unwrap(), "a renews");
    assert!(!try_acquire_or_renew(&client, &b).await.unwrap(), "b still waits");
    // a stops renewing: b takes over once the duration has passed, and a cannot renew.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(try_acquire_or_renew(&client, &b).await.unwrap(), "b takes the expired Lease");
    assert!(!try_acquire_or_renew(&client, &a).await.unwrap(), "a lost it");
    let lease: k8s_openapi::api::coordination::v1::Lease =
        Api::namespaced(client.clone(), NAMESPACE).get("bloodraven-operator").await.unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("replica-b"));
    assert_eq!(spec.lease_transitions, Some(1));
    lab.stop().await.expect("the lab stops");
}

/// Kills the child on drop.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    let code = response.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, response))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_takes_the_lease_serves_http_and_reconciles() {
    let (lab, _client) = start_lab(NAMESPACE).await;
    // Without its Secret the group is never dialled: the binary resolves Services through the
    // cluster DNS, which the test must not reach.
    lab.delete("v1", "Secret", Some(NAMESPACE), "mysql-operator-creds").unwrap();
    // As its ServiceAccount, under the least-privilege RBAC of deploy/operator/rbac.yaml.
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let rbac = std::fs::read_to_string(format!("{root}/deploy/operator/rbac.yaml")).unwrap();
    lab.apply_yaml(&rbac).expect("deploy/operator/rbac.yaml");
    lab.set_rbac(true).unwrap();
    let token = lab.service_account_token("bloodraven-system", "bloodraven-operator").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    lab.write_kubeconfig_with_token(&kubeconfig, "operator", &token).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let child = Child(
        std::process::Command::new(env!("CARGO_BIN_EXE_bloodraven-operator"))
            .env("KUBECONFIG", &kubeconfig)
            .env("RUST_LOG", "info")
            .args(["--namespace", NAMESPACE, "--leader-election-namespace", "bloodraven-system"])
            .args(["--instance", "replica-a", "--http-address", &addr.to_string()])
            .stdout(std::fs::File::create(dir.path().join("operator.log")).unwrap())
            .spawn()
            .expect("the operator binary starts"),
    );
    wait_for("/readyz 200 (the Lease is held)", || async {
        (http_get(addr, "/readyz").await?.0 == 200).then_some(())
    })
    .await;
    assert_eq!(http_get(addr, "/healthz").await.unwrap().0, 200);
    // The test reads through the library (its own hand): RBAC is on for every client.
    let lease = lab
        .get("coordination.k8s.io/v1", "Lease", Some("bloodraven-system"), "bloodraven-operator")
        .expect("the Lease");
    assert_eq!(lease["spec"]["holderIdentity"], "replica-a");
    wait_for("the binary's Deployments", || async {
        (lab.list("apps/v1", "Deployment").len() == 3).then_some(())
    })
    .await;
    wait_for("Ready=False/SecretNotFound from the binary", || async {
        let group =
            lab.get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some(NAMESPACE), GROUP)?;
        let conditions = group["status"]["conditions"].as_array()?.clone();
        conditions
            .iter()
            .any(|condition| {
                condition["type"] == "Ready" && condition["reason"] == "SecretNotFound"
            })
            .then_some(())
    })
    .await;
    let (code, metrics) = http_get(addr, "/metrics").await.unwrap();
    assert_eq!(code, 200);
    assert!(metrics.contains("bloodraven_topology_polls_total"), "{metrics}");
    let log = std::fs::read_to_string(dir.path().join("operator.log")).unwrap();
    assert!(!log.contains("forbidden"), "no call outside the RBAC: {log}");
    drop(child);
    lab.stop().await.expect("the lab stops");
}
