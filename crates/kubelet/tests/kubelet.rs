//! The lab kubelet on real MySQL 9.7: a site Deployment built by `bloodraven-workloads`, created
//! in the lab API server, becomes a Ready Pod and a running mysqld; a client reaches it through
//! the resolver; a killed mysqld is restarted with its data; a deleted Deployment stops it; a
//! re-created one finds the data again.
//!
//! Needs `source scripts/provision.sh` (BLOODRAVEN_MYSQL*); fails naming it otherwise.

mod support;

use std::time::Duration;

use bloodraven_crd::fixtures::GroupFixture;
use bloodraven_kubelet::{Kubelet, KubeletConfig, RunningPod};
use bloodraven_sites::accounts::{self, APPLICATION, OPERATOR};
use bloodraven_workloads::{Resolver, labels, ports, primary_service, site_objects};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use mysql_async::prelude::Queryable;
use serde_json::json;
use support::{Wait, World};

const NAMESPACE: &str = "orders";
const DEPLOYMENT: &str = "mysql-orders-iad";
/// Generous: CI shares 2 cores with other real servers.
const WAIT: Wait = Wait { bound: Duration::from_secs(180), poll: Duration::from_millis(250) };

fn process_exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| !stat.contains(") Z "))
            .unwrap_or(false)
}

async fn ready_pod(kubelet: &Kubelet, not_pid: Option<u32>) -> RunningPod {
    WAIT.until("a Ready pod with a new mysqld", || async {
        kubelet
            .pod(NAMESPACE, DEPLOYMENT)
            .filter(|pod| pod.ready && pod.pid.is_some() && pod.pid != not_pid)
    })
    .await
}

async fn connect(
    kubelet: &Kubelet,
    service: &str,
    account: &accounts::Account,
) -> mysql_async::Conn {
    let address = kubelet
        .resolver()
        .resolve(NAMESPACE, service, ports::MYSQL)
        .unwrap_or_else(|| panic!("service {service} has no endpoint"));
    let addr =
        format!("{}:{}", address.host, address.port).parse().expect("the lab resolves to ip:port");
    mysql_async::Conn::new(accounts::opts(account, addr, None))
        .await
        .unwrap_or_else(|error| panic!("connecting to {service} through {addr}: {error}"))
}

async fn the_pod_object(pods: &Api<Pod>) -> Option<Pod> {
    let selector = format!("{}=iad", labels::SITE);
    pods.list(&ListParams::default().labels(&selector))
        .await
        .expect("listing pods")
        .items
        .into_iter()
        .next()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_deployment_runs_mysqld_restarts_it_and_keeps_its_data_while_the_claim_lives() {
    let World { lab, kubelet, client, hub, _root } =
        support::start(NAMESPACE, "brk-", |root| KubeletConfig::new(root)).await;

    let group = GroupFixture::three_sites().build();
    let objects = site_objects(&group, "iad").unwrap();
    let post = PostParams::default();
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NAMESPACE);
    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    configmaps.create(&post, &objects.configmap).await.unwrap();
    claims.create(&post, &objects.pvc).await.unwrap();
    services.create(&post, &objects.services.internal).await.unwrap();
    services.create(&post, &objects.services.client).await.unwrap();
    services.create(&post, &primary_service(&group, Some("iad")).unwrap()).await.unwrap();
    deployments.create(&post, &objects.deployment).await.unwrap();

    // A running mysqld and a Ready Pod, written through the API server.
    let first = ready_pod(&kubelet, None).await;
    let first_pid = first.pid.unwrap();
    assert!(process_exists(first_pid));
    let pod = WAIT
        .until("the Pod object to say Ready", || async {
            the_pod_object(&pods).await.filter(bloodraven_kubelet::pod::is_ready)
        })
        .await;
    assert_eq!(pod.metadata.name.as_deref(), Some(first.pod.as_str()));
    assert!(first.pod.starts_with("mysql-orders-iad-"), "{}", first.pod);
    let status = pod.status.unwrap();
    assert_eq!(status.pod_ip.as_deref(), Some("127.0.0.1"));
    let mysql = &status.container_statuses.unwrap()[0];
    assert_eq!((mysql.name.as_str(), mysql.ready, mysql.restart_count), ("mysql", true, 0));
    assert!(mysql.state.as_ref().unwrap().running.is_some());
    assert_eq!(pod.metadata.labels.unwrap()[labels::SITE], "iad");

    // Through the resolver (a proxy link to the pod's mysqld): the ConfigMap configured it,
    // and the server booted read-only (the startup safety net).
    let mut operator =
        connect(&kubelet, &objects.services.internal.metadata.name.clone().unwrap(), &OPERATOR)
            .await;
    let (server_id, super_read_only): (u32, u8) =
        operator.query_first("SELECT @@server_id, @@super_read_only").await.unwrap().unwrap();
    assert_eq!((server_id, super_read_only), (101, 1));
    operator.query_drop("SET GLOBAL super_read_only = OFF, read_only = OFF").await.unwrap();
    operator.disconnect().await.unwrap();

    // The client Service gates on the healthy label and the -primary one on role=primary:
    // neither resolves until the operator labels the pod.
    let resolver = kubelet.resolver();
    assert!(resolver.resolve(NAMESPACE, "mysql-orders-iad", ports::MYSQL).is_none());
    assert!(resolver.resolve(NAMESPACE, "mysql-orders-primary", ports::MYSQL).is_none());
    let patch = Patch::Merge(json!({ "metadata": { "labels": {
        labels::ROLE: labels::ROLE_PRIMARY, labels::HEALTHY: labels::HEALTHY_TRUE,
    }}}));
    pods.patch(&first.pod, &PatchParams::default(), &patch).await.unwrap();
    WAIT.until("the -primary Service to follow the role label", || async {
        resolver.resolve(NAMESPACE, "mysql-orders-primary", ports::MYSQL)
    })
    .await;
    let mut app = connect(&kubelet, "mysql-orders-primary", &APPLICATION).await;
    app.query_drop(
        "INSERT INTO app.ledger (k, writer, written_at_us) VALUES (1, 'kubelet-test', 0)",
    )
    .await
    .unwrap();
    app.disconnect().await.unwrap();

    // Killing mysqld: the kubelet restarts it (restartCount 1), the data is there, and the
    // restarted server is read-only again.
    let killed = std::process::Command::new("kill").args(["-9", &first_pid.to_string()]).status();
    assert!(killed.unwrap().success());
    let second = WAIT
        .until("the restarted mysqld to be ready with restartCount 1", || async {
            kubelet
                .pod(NAMESPACE, DEPLOYMENT)
                .filter(|pod| pod.ready && pod.restart_count == 1 && pod.pid != Some(first_pid))
        })
        .await;
    assert_eq!(second.pod, first.pod, "a restart keeps the pod");
    let restarts = WAIT
        .until("the Pod object to show one restart", || async {
            let pod = the_pod_object(&pods).await?;
            let statuses = pod.status?.container_statuses?;
            (statuses[0].restart_count == 1 && statuses[0].ready).then_some(statuses[0].clone())
        })
        .await;
    assert!(restarts.last_state.unwrap().terminated.is_some());
    let mut operator = connect(&kubelet, "mysql-orders-iad-internal", &OPERATOR).await;
    let (rows, super_read_only): (u64, u8) = operator
        .query_first("SELECT (SELECT COUNT(*) FROM app.ledger WHERE k = 1), @@super_read_only")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((rows, super_read_only), (1, 1));
    operator.disconnect().await.unwrap();

    // Deleting the Deployment stops the process and deletes the Pod.
    let second_pid = second.pid.unwrap();
    deployments.delete(DEPLOYMENT, &DeleteParams::default()).await.unwrap();
    WAIT.until("mysqld to exit and the Pod to go", || async {
        let gone = !process_exists(second_pid)
            && kubelet.pod(NAMESPACE, DEPLOYMENT).is_none()
            && the_pod_object(&pods).await.is_none();
        gone.then_some(())
    })
    .await;
    assert!(resolver.resolve(NAMESPACE, "mysql-orders-iad-internal", ports::MYSQL).is_none());

    // Re-creating it (same claim) finds the row again.
    deployments.create(&post, &objects.deployment).await.unwrap();
    let third = ready_pod(&kubelet, Some(second_pid)).await;
    assert_eq!(third.restart_count, 0);
    assert_eq!(third.data_dir, first.data_dir, "the claim maps to the same folder");
    let mut operator = connect(&kubelet, "mysql-orders-iad-internal", &OPERATOR).await;
    let rows: u64 =
        operator.query_first("SELECT COUNT(*) FROM app.ledger WHERE k = 1").await.unwrap().unwrap();
    assert_eq!(rows, 1, "the row written before the Deployment was deleted");
    operator.disconnect().await.unwrap();

    // Deleting the claim too removes its folder; a new claim of the same name starts fresh.
    let third_pid = third.pid.unwrap();
    let folder = third.data_dir.clone().unwrap();
    deployments.delete(DEPLOYMENT, &DeleteParams::default()).await.unwrap();
    claims.delete("mysql-orders-iad-data", &DeleteParams::default()).await.unwrap();
    WAIT.until("the deleted claim's folder to go", || async {
        (!process_exists(third_pid) && !folder.exists()).then_some(())
    })
    .await;
    claims.create(&post, &objects.pvc).await.unwrap();
    deployments.create(&post, &objects.deployment).await.unwrap();
    let fourth = ready_pod(&kubelet, Some(third_pid)).await;
    assert_ne!(fourth.data_dir, third.data_dir, "a new claim is a new folder");
    let mut operator = connect(&kubelet, "mysql-orders-iad-internal", &OPERATOR).await;
    let rows: u64 =
        operator.query_first("SELECT COUNT(*) FROM app.ledger WHERE k = 1").await.unwrap().unwrap();
    assert_eq!(rows, 0, "a fresh claim holds no rows");
    operator.disconnect().await.unwrap();

    let fourth_pid = fourth.pid.unwrap();
    kubelet.shutdown().await;
    assert!(!process_exists(fourth_pid), "shutdown leaves no mysqld behind");
    hub.shutdown();
    lab.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_waits_for_its_configmap_and_the_primary_service_follows_its_selector() {
    let World { lab, kubelet, client, hub, _root } =
        support::start(NAMESPACE, "brk-", |root| KubeletConfig::new(root)).await;
    let group = GroupFixture::three_sites().build();
    let post = PostParams::default();
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NAMESPACE);
    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let iad = site_objects(&group, "iad").unwrap();
    let pdx = site_objects(&group, "pdx").unwrap();
    for site in [&iad, &pdx] {
        claims.create(&post, &site.pvc).await.unwrap();
        services.create(&post, &site.services.internal).await.unwrap();
        deployments.create(&post, &site.deployment).await.unwrap();
    }
    configmaps.create(&post, &pdx.configmap).await.unwrap();

    // iad has no ConfigMap yet: its Pod waits and says why; no process runs.
    let waiting = WAIT
        .until("iad's Pod to wait for its ConfigMap", || async {
            let pod = the_pod_object(&pods).await?;
            let state = pod.status?.container_statuses?.first()?.state.clone()?;
            state
                .waiting
                .filter(|waiting| waiting.reason.as_deref() == Some("CreateContainerConfigError"))
        })
        .await;
    assert!(waiting.message.unwrap().contains("mysql-orders-iad-config"));
    assert_eq!(kubelet.pod(NAMESPACE, DEPLOYMENT).and_then(|pod| pod.pid), None);
    configmaps.create(&post, &iad.configmap).await.unwrap();
    let iad_pod = ready_pod(&kubelet, None).await;
    let pdx_pod = WAIT
        .until("pdx's pod to be ready", || async {
            kubelet.pod(NAMESPACE, "mysql-orders-pdx").filter(|pod| pod.ready)
        })
        .await;

    // Both pods carry role=primary (a stale label on pdx): the selector's site decides.
    let label =
        Patch::Merge(json!({ "metadata": { "labels": { labels::ROLE: labels::ROLE_PRIMARY } } }));
    for pod in [&iad_pod.pod, &pdx_pod.pod] {
        pods.patch(pod, &PatchParams::default(), &label).await.unwrap();
    }
    services.create(&post, &primary_service(&group, Some("iad")).unwrap()).await.unwrap();
    let resolver = kubelet.resolver();
    let address = WAIT
        .until("the -primary Service to resolve", || async {
            resolver.resolve(NAMESPACE, "mysql-orders-primary", ports::MYSQL)
        })
        .await;
    let addr = format!("{}:{}", address.host, address.port).parse().unwrap();
    let server_id = |addr| async move {
        let mut conn = mysql_async::Conn::new(accounts::opts(&OPERATOR, addr, None)).await.ok()?;
        let id: Option<u32> = conn.query_first("SELECT @@server_id").await.ok()?;
        let _ = conn.disconnect().await;
        id
    };
    assert_eq!(server_id(addr).await, Some(101));

    // The operator moves the selector to pdx: the same address now reaches pdx, without the
    // client resolving again (the kubelet re-points the link).
    let selector = primary_service(&group, Some("pdx")).unwrap().spec.unwrap().selector;
    let patch = Patch::Merge(json!({ "spec": { "selector": selector } }));
    services.patch("mysql-orders-primary", &PatchParams::default(), &patch).await.unwrap();
    WAIT.until("the -primary link to reach pdx (server_id 102)", || async {
        (server_id(addr).await == Some(102)).then_some(())
    })
    .await;

    // A frozen server (SIGSTOP) fails its readiness probe: the Pod turns NotReady and the
    // -primary Service loses its endpoint; thawed, it is Ready again.
    let pdx_pid = pdx_pod.pid.unwrap().to_string();
    let signal = |name: &str| {
        let sent = std::process::Command::new("kill").args([name, pdx_pid.as_str()]).status();
        assert!(sent.unwrap().success(), "kill {name} {pdx_pid}");
    };
    signal("-STOP");
    WAIT.until("frozen pdx to turn NotReady", || async {
        kubelet.pod(NAMESPACE, "mysql-orders-pdx").filter(|pod| !pod.ready)
    })
    .await;
    WAIT.until("the -primary Service to lose its endpoint", || async {
        resolver.resolve(NAMESPACE, "mysql-orders-primary", ports::MYSQL).is_none().then_some(())
    })
    .await;
    signal("-CONT");
    let thawed = WAIT
        .until("thawed pdx to be Ready again", || async {
            kubelet.pod(NAMESPACE, "mysql-orders-pdx").filter(|pod| pod.ready)
        })
        .await;
    assert_eq!(thawed.restart_count, 0, "a frozen server is not restarted");

    let pids: Vec<u32> = kubelet.pods().values().filter_map(|pod| pod.pid).collect();
    assert_eq!(pids.len(), 2);
    kubelet.shutdown().await;
    for pid in pids {
        assert!(!process_exists(pid), "shutdown leaves no mysqld behind ({pid})");
    }
    hub.shutdown();
    lab.stop().await.unwrap();
}
