//! Benchmarks of the lab API server through kube-rs:
//! - `list_1000_configmaps`: one typed list of 1,000 objects (goal: at most 20 ms), and the
//!   same list as raw HTTP (server and transfer only, no client-side decoding);
//! - `100_watchers_one_update`: one patch until all of 100 open watches got its event
//!   (goal: all within 50 ms);
//! - `create_failover_group_validated` / `_unvalidated`: one `MysqlFailoverGroup` created
//!   in process with the project's CRDs, with schema and CEL validation (`Lab::apply`) and
//!   without (`Lab::insert_unvalidated`, the path before validation existed): the cost of
//!   validation on the create path.

// A benchmark whose setup fails should stop loudly, as a test does.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use bloodraven_lab::{Lab, LabConfig};
use criterion::{Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::json;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

async fn start() -> (Lab, kube::Client) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let lab = Lab::start(LabConfig::default()).await.unwrap();
    let client = kube::Client::try_from(kube::Config::new(lab.url().parse().unwrap())).unwrap();
    (lab, client)
}

fn list_1000(criterion: &mut Criterion) {
    let runtime = runtime();
    let (lab, client) = runtime.block_on(start());
    for index in 0..1000 {
        lab.apply(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{index:04}"), "namespace": "default", "labels": {"app": "bench"}},
            "data": {"mysql.cnf": "[mysqld]\ngtid_mode=ON\nenforce_gtid_consistency=ON\n", "index": index.to_string()},
        }))
        .unwrap();
    }
    let raw_client = client.clone();
    criterion.bench_function("list_1000_configmaps_raw_http", |bencher| {
        bencher.iter(|| {
            let request = axum::http::Request::get("/api/v1/namespaces/default/configmaps")
                .body(Vec::new())
                .unwrap();
            let body = runtime.block_on(raw_client.request_text(request)).unwrap();
            assert!(body.len() > 100_000);
        })
    });
    let maps: Api<ConfigMap> = Api::namespaced(client, "default");
    criterion.bench_function("list_1000_configmaps", |bencher| {
        bencher.iter(|| {
            let list = runtime.block_on(maps.list(&ListParams::default())).unwrap();
            assert_eq!(list.items.len(), 1000);
        })
    });
    runtime.block_on(lab.stop()).unwrap();
}

fn watchers_100(criterion: &mut Criterion) {
    let runtime = runtime();
    let (lab, client) = runtime.block_on(start());
    lab.apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "watched", "namespace": "default"}, "data": {"n": "0"}}))
        .unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let (sender, mut received) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let watchers: Vec<_> = (0..100)
        .map(|_| {
            let maps = maps.clone();
            let sender = sender.clone();
            let version = lab.resource_version().to_string();
            runtime.spawn(async move {
                let mut stream = maps
                    .watch(&WatchParams::default().disable_bookmarks(), &version)
                    .await
                    .unwrap()
                    .boxed();
                while let Some(event) = stream.next().await {
                    if let Ok(WatchEvent::Modified(_)) = event {
                        let _ = sender.send(Instant::now());
                    }
                }
            })
        })
        .collect();
    // Wait until every watch is open.
    runtime.block_on(async {
        while lab.requests().iter().filter(|request| request.verb == "watch").count() < 100 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let mut counter = 0u64;
    criterion.bench_function("100_watchers_one_update", |bencher| {
        bencher.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                counter += 1;
                let patch = Patch::Merge(json!({"data": {"n": counter.to_string()}}));
                total += runtime.block_on(async {
                    let started = Instant::now();
                    maps.patch("watched", &PatchParams::default(), &patch).await.unwrap();
                    let mut last = started;
                    for _ in 0..100 {
                        last = received.recv().await.unwrap();
                    }
                    last - started
                });
            }
            total
        })
    });
    lab.drop_watches();
    for watcher in watchers {
        watcher.abort();
    }
    runtime.block_on(lab.stop()).unwrap();
}

fn project_crds() -> String {
    let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/crds");
    let mut paths: Vec<_> = std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "yaml"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

fn create_failover_group(criterion: &mut Criterion) {
    let runtime = runtime();
    let (lab, _client) = runtime.block_on(start());
    lab.load_crds(&project_crds()).unwrap();
    let group = serde_json::to_value(
        bloodraven_crd::fixtures::GroupFixture::three_sites().with_namespace("default").build(),
    )
    .unwrap();
    let mut counter = 0u64;
    for (name, validated) in
        [("create_failover_group_validated", true), ("create_failover_group_unvalidated", false)]
    {
        criterion.bench_function(name, |bencher| {
            bencher.iter(|| {
                counter += 1;
                let mut object = group.clone();
                object["metadata"]["name"] = json!(format!("group-{counter}"));
                if validated {
                    lab.apply(object).unwrap();
                } else {
                    lab.insert_unvalidated(object).unwrap();
                }
            })
        });
    }
    runtime.block_on(lab.stop()).unwrap();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(5));
    targets = list_1000, watchers_100, create_failover_group
}
criterion_main!(benches);
