//! The lab kubelet runs this sidecar binary beside each site's real mysqld: the pod's
//! `sidecar` container is running, the internal Service's sidecar port resolves to it, peers
//! reach each other through per-pod proxy links, a booting server stays fenced with no operator
//! naming it, and a SIGKILLed sidecar is restarted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_crd::fixtures::GroupFixture;
use bloodraven_kubelet::{Kubelet, KubeletConfig, RunningPod, SidecarConfig, sidecar_link_name};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_sidecar::http_get;
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::ensure_template_async;
use bloodraven_workloads::{Resolver, SiteNames, ports, site_objects};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

const NAMESPACE: &str = "orders";
const BOUND: Duration = Duration::from_secs(180);

async fn wait_for<T, Fut: Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> Fut,
) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(start.elapsed() < BOUND, "gave up after {BOUND:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn status(addr: &str) -> Option<Value> {
    let reply = http_get::get(addr, "/fence/status", Duration::from_secs(2)).await.ok()?;
    serde_json::from_str(&reply.body).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lab_kubelet_runs_the_sidecar_beside_mysqld_and_restarts_it() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let template = ensure_template_async(&dist).await.expect("the template data directory");
    let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
    lab.apply(
        json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": NAMESPACE } }),
    )
    .expect("namespace orders");
    let url = lab.url().parse().expect("the lab's URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("a client of the lab");
    let root = tempfile::Builder::new().prefix("brk-").tempdir_in("/tmp").expect("a short root");
    let hub = Arc::new(ProxyHub::current().expect("a tokio runtime"));
    let mut config = KubeletConfig::new(root.path());
    config.namespace = Some(NAMESPACE.to_owned());
    config.sidecar = Some(SidecarConfig::new(env!("CARGO_BIN_EXE_bloodraven-sidecar")));
    let kubelet = Kubelet::start(client.clone(), dist, template, hub.clone(), config)
        .await
        .expect("the kubelet");

    let mut group = GroupFixture::three_sites().build();
    group.spec.sidecar = Some(bloodraven_crd::group::SidecarSpec {
        image: None,
        lease_timeout: Some(bloodraven_crd::duration::Duration::new("2s")),
        peer_check_interval: Some(bloodraven_crd::duration::Duration::new("300ms")),
    });
    let post = PostParams::default();
    for site in ["iad", "pdx"] {
        let objects = site_objects(&group, site).unwrap();
        Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE)
            .create(&post, &objects.configmap)
            .await
            .unwrap();
        Api::<PersistentVolumeClaim>::namespaced(client.clone(), NAMESPACE)
            .create(&post, &objects.pvc)
            .await
            .unwrap();
        let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
        services.create(&post, &objects.services.internal).await.unwrap();
        services.create(&post, &objects.services.client).await.unwrap();
        Api::<Deployment>::namespaced(client.clone(), NAMESPACE)
            .create(&post, &objects.deployment)
            .await
            .unwrap();
    }
    let iad = SiteNames::new("orders", "iad");
    let running = |deployment: &'static str| {
        let kubelet = &kubelet;
        move || async move {
            kubelet
                .pod(NAMESPACE, deployment)
                .filter(|pod: &RunningPod| pod.ready && pod.sidecar_pid.is_some())
        }
    };
    let first = wait_for("iad ready with its sidecar", running("mysql-orders-iad")).await;
    wait_for("pdx ready with its sidecar", running("mysql-orders-pdx")).await;

    // The Pod reports the sidecar container running.
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    wait_for("the sidecar container running in the Pod status", || async {
        let list = pods
            .list(&ListParams::default().labels("bloodraven.shipstream.io/site=iad"))
            .await
            .ok()?;
        let pod = list.items.into_iter().next()?;
        let statuses = pod.status?.container_statuses?;
        statuses
            .iter()
            .find(|status| status.name == "sidecar")
            .filter(|status| status.state.as_ref().is_some_and(|state| state.running.is_some()))
            .map(|_| ())
    })
    .await;

    // The internal Service's sidecar port reaches iad's sidecar.
    let address = kubelet
        .resolver()
        .resolve(NAMESPACE, &iad.internal_service, ports::SIDECAR_HTTP)
        .expect("the sidecar port resolves");
    let pong =
        http_get::get(&address.to_string(), "/peer/ping", Duration::from_secs(2)).await.unwrap();
    assert_eq!((pong.status, pong.body.as_str()), (200, "pong"));

    // iad's sidecar hears pdx through its own link; with no operator naming it the booting
    // server stays fenced (my.cnf's super_read_only, kept by the startup net).
    let sidecar = first.sidecar_addr.unwrap().to_string();
    let pdx_link = hub
        .get(&sidecar_link_name(NAMESPACE, "mysql-orders-iad", "mysql-orders-pdx-internal:8080"))
        .expect("iad's link to pdx's sidecar");
    let seen = wait_for("iad's sidecar hearing pdx", || async {
        let status = status(&sidecar).await?;
        let peers = status["peers"].as_array()?.clone();
        peers
            .iter()
            .any(|peer| peer["address"] == pdx_link.addr().to_string() && !peer["lastOk"].is_null())
            .then_some(status)
    })
    .await;
    assert_eq!(seen["server"], "Fenced", "{seen:#}");
    assert_eq!(seen["startup"], "Pending", "{seen:#}");

    // SIGKILL: the kubelet restarts the sidecar.
    let pid = first.sidecar_pid.unwrap();
    rustix_kill(pid);
    let again = wait_for("a restarted sidecar", || async {
        kubelet.pod(NAMESPACE, "mysql-orders-iad").filter(|pod| {
            pod.sidecar_pid.is_some_and(|new| new != pid) && pod.sidecar_restarts == 1
        })
    })
    .await;
    wait_for("the restarted sidecar answering", || async {
        status(&again.sidecar_addr?.to_string()).await.map(|_| ())
    })
    .await;
    kubelet.shutdown().await;
    drop(lab);
}

fn rustix_kill(pid: u32) {
    let status = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
    assert!(status.is_ok_and(|status| status.success()), "kill -9 {pid}");
}
