//! Reconcile CPU per group per poll on three live groups (issue 12, goal ≤ 1 ms): CPU time of
//! the operator process over a window (every thread, `CLOCK_PROCESS_CPUTIME_ID` read by the
//! child itself, nanosecond resolution), divided by the polls of all groups in it.
//!
//! Real MySQL 9.7 (`source scripts/provision.sh`): the lab API server, the lab kubelet running
//! 9 mysqld (3 groups × iad, pdx, fra from deploy/examples) in this process; the operator as a
//! child process (see `support`) resolving the sites' internal Services to the kubelet's proxy
//! links. Measured once every group is converged (one writable primary, both followers
//! replicating, Ready): a window of 30 s (10 s with BLOODRAVEN_BENCH_QUICK).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "benchmark harness: it reports on stdout (BENCH lines) and panics on a broken setup"
)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_kubelet::{Kubelet, KubeletConfig};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::ensure_template_async;
use bloodraven_workloads::{Resolver, ports};
use serde_json::Value;
use support::{OperatorChild, apply_example, polls, quick, renamed, wait_until};

const NAMESPACE: &str = "orders";
const GROUPS: [&str; 3] = ["orders", "orders-b", "orders-c"];
const SITES: [&str; 3] = ["iad", "pdx", "fra"];

fn converged(group: &Value) -> bool {
    let status = &group["status"];
    let Some(active) = status["activeSite"].as_str() else { return false };
    let ready = status["conditions"]
        .as_array()
        .is_some_and(|all| all.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
    let sites = status["sites"].as_array().cloned().unwrap_or_default();
    ready
        && sites.len() == 3
        && sites.iter().all(|site| {
            if site["name"] == active {
                site["state"] == "writable"
            } else {
                site["replicating"] == true && site["sourceConvergenceState"] == "Converged"
            }
        })
}

fn main() {
    support::run_child_if_asked();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let window = Duration::from_secs(if quick() { 10 } else { 30 });
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let lab = runtime.block_on(Lab::start(LabConfig::default())).expect("the lab API server");
    let group = apply_example(&lab);
    for name in &GROUPS[1..] {
        lab.apply(renamed(&group, name)).unwrap();
    }
    let root = support::short_root();
    let (kubelet, hub) = runtime.block_on(async {
        let template = ensure_template_async(&dist).await.expect("the template data directory");
        let hub = Arc::new(ProxyHub::current().expect("a tokio runtime"));
        let client = kube::Client::try_from(kube::Config::new(lab.url().parse().unwrap())).unwrap();
        let mut config = KubeletConfig::new(root.path());
        config.namespace = Some(NAMESPACE.to_owned());
        let kubelet =
            Kubelet::start(client, dist, template, hub.clone(), config).await.expect("the kubelet");
        (kubelet, hub)
    });
    let dir = tempfile::tempdir().unwrap();
    let child = OperatorChild::spawn(&lab, dir.path());
    // The child creates the workloads; once every mysqld runs, its internal Service resolves to
    // a proxy link (stable address) that the child reads from resolve.json.
    let resolver = kubelet.resolver();
    let started = Instant::now();
    let mut map = BTreeMap::new();
    wait_until(
        "every site's mysqld and internal Service",
        Duration::from_secs(300),
        || {
            for group in GROUPS {
                for site in SITES {
                    let service = format!("mysql-{group}-{site}-internal");
                    let key = format!("{NAMESPACE}/{service}:{}", ports::MYSQL);
                    if map.contains_key(&key) {
                        continue;
                    }
                    let running = kubelet
                        .pod(NAMESPACE, &format!("mysql-{group}-{site}"))
                        .is_some_and(|pod| pod.pid.is_some() && pod.ready);
                    if !running {
                        return false;
                    }
                    let Some(address) = runtime
                        .block_on(async { resolver.resolve(NAMESPACE, &service, ports::MYSQL) })
                    else {
                        return false;
                    };
                    map.insert(key, format!("{}:{}", address.host, address.port));
                }
            }
            support::write_resolve(dir.path(), &map);
            true
        },
        || support::diagnose(&lab, dir.path()),
    );
    wait_until(
        "three converged groups",
        Duration::from_secs(300),
        || {
            let groups = lab.list("shipstream.io/v1alpha1", "MysqlFailoverGroup");
            groups.len() == GROUPS.len() && groups.iter().all(converged)
        },
        || support::diagnose(&lab, dir.path()),
    );
    println!("three groups converged after {:.1} s", started.elapsed().as_secs_f64());
    // Settle: the first polls after convergence may still publish labels and Services.
    std::thread::sleep(Duration::from_secs(3));
    let window_start = jiff::Timestamp::now();
    let (polls_before, cpu_before, at) = (polls(&lab), child.cpu_seconds(), Instant::now());
    std::thread::sleep(window);
    let (polls_after, cpu_after, elapsed) = (polls(&lab), child.cpu_seconds(), at.elapsed());
    let counted = polls_after - polls_before;
    assert!(counted > 0, "no poll in the window");
    let per_poll_ms = (cpu_after - cpu_before) * 1000.0 / counted as f64;
    assert!(
        lab.list("shipstream.io/v1alpha1", "MysqlFailoverGroup").iter().all(converged),
        "every group still converged at the end of the window"
    );
    println!(
        "BENCH operator/cpu/per_group_poll_3_live_groups {per_poll_ms:.3} ms polls={counted} \
         cpu={:.2}s window={:.1}s rss={:.1}MiB",
        cpu_after - cpu_before,
        elapsed.as_secs_f64(),
        child.status_kib("VmRSS") / 1024.0
    );
    // What the API server saw in the window (operator and kubelet): where the polls' requests go.
    let mut seen = BTreeMap::<String, usize>::new();
    for request in lab.requests().iter().filter(|request| request.time >= window_start) {
        let what = format!(
            "{} {} {} {}{}",
            request.status,
            request.user,
            request.verb,
            request.resource.as_deref().unwrap_or(&request.path),
            request.subresource.as_deref().map(|sub| format!("/{sub}")).unwrap_or_default()
        );
        *seen.entry(what).or_default() += 1;
    }
    for (what, count) in seen {
        println!("requests in the window: {count:>5} {what}");
    }
    drop(child);
    runtime.block_on(async {
        kubelet.shutdown().await;
        drop(hub);
        lab.stop().await.expect("the lab stops");
    });
}
