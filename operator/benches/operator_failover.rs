//! Detection-to-writable after a primary SIGKILL (issue 12, goal: within the detection bound
//! pollInterval × failureThreshold + 2 s = 3 s + 2 s with deploy/examples' 1 s and 3): median of
//! 10 drills (3 with BLOODRAVEN_BENCH_QUICK), real MySQL 9.7 (`source scripts/provision.sh`).
//!
//! Each drill: a fresh lab API server, lab kubelet and the operator's controller (in this
//! process, as operator/tests/it/live.rs runs it) with the example group; once it converged,
//! the primary's internal link refuses and its mysqld is SIGKILLed (a dead site), and a probe
//! inserts into the application's table on the other PrimaryCandidate every 20 ms as the
//! application account (no SUPER, so `read_only` refuses it) until a write is accepted. The
//! figure is the kill to that first accepted write.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "benchmark harness: it reports on stdout (BENCH lines) and panics on a broken setup"
)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_kubelet::{Kubelet, KubeletConfig};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::manager::Tuning;
use bloodraven_sites::accounts::{self, APPLICATION};
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::{Fault, ProxyHub};
use bloodraven_sites::template::ensure_template_async;
use bloodraven_workloads::{Resolver, ports};
use mysql_async::prelude::Queryable;
use serde_json::Value;
use support::{apply_example, median, quick};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
const BOUND: Duration = Duration::from_secs(240);

async fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(started.elapsed() < BOUND, "gave up after {BOUND:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The active site once the group converged: Ready, a writable primary, followers replicating.
fn converged(group: &Value) -> Option<String> {
    let status = &group["status"];
    let active = status["activeSite"].as_str()?;
    let ready = status["conditions"]
        .as_array()?
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    let sites = status["sites"].as_array()?;
    let ok = sites.len() == 3
        && sites.iter().all(|site| {
            if site["name"] == active {
                site["state"] == "writable"
            } else {
                site["replicating"] == true && site["sourceConvergenceState"] == "Converged"
            }
        });
    (ready && ok).then(|| active.to_owned())
}

/// One drill: seconds from the SIGKILL to the first write the other candidate accepts.
async fn drill(dist: &MysqlDist, drill_index: u64) -> f64 {
    let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
    apply_example(&lab);
    let client = kube::Client::try_from(kube::Config::new(lab.url().parse().unwrap())).unwrap();
    let template = ensure_template_async(dist).await.expect("the template data directory");
    let root = support::short_root();
    let hub = Arc::new(ProxyHub::current().expect("a tokio runtime"));
    let mut config = KubeletConfig::new(root.path());
    config.namespace = Some(NAMESPACE.to_owned());
    let kubelet = Kubelet::start(client.clone(), dist.clone(), template, hub.clone(), config)
        .await
        .expect("the kubelet");
    let tuning = Tuning { poll_interval: Duration::from_secs(1), ..Tuning::default() };
    let context = Arc::new(Context::new(client, Arc::new(kubelet.resolver()), tuning, "bench"));
    let controller = tokio::spawn(controller::run(context.clone(), Some(NAMESPACE)));

    let first = wait_for("the group to converge", || {
        converged(&lab.get(
            "shipstream.io/v1alpha1",
            "MysqlFailoverGroup",
            Some(NAMESPACE),
            GROUP,
        )?)
    })
    .await;
    let other = if first == "iad" { "pdx" } else { "iad" };
    let resolve = |site: &str| -> SocketAddr {
        let address = kubelet
            .resolver()
            .resolve(NAMESPACE, &format!("mysql-{GROUP}-{site}-internal"), ports::MYSQL)
            .expect("the internal Service resolves");
        format!("{}:{}", address.host, address.port).parse().unwrap()
    };
    let probe_addr = resolve(other);
    let opts = accounts::opts(&APPLICATION, probe_addr, Some(accounts::APP_SCHEMA));
    let mut conn = mysql_async::Conn::new(opts.clone()).await.expect("the probe connects");

    let internal = bloodraven_kubelet::link_name(
        NAMESPACE,
        &format!("mysql-{GROUP}-{first}-internal"),
        ports::MYSQL,
    );
    hub.get(&internal).expect("the primary's internal link").set(Fault::Refuse).unwrap();
    let pid = kubelet
        .pod(NAMESPACE, &format!("mysql-{GROUP}-{first}"))
        .and_then(|pod| pod.pid)
        .expect("the primary's mysqld runs");
    let killed_at = Instant::now();
    let status =
        std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill -KILL {pid}");

    let mut attempt = 0u64;
    let writable = loop {
        attempt += 1;
        let key = 1_000_000_000_000 + drill_index * 1_000_000 + attempt;
        let insert = format!(
            "INSERT INTO `{}` (k, writer, written_at_us) VALUES ({key}, 'bench-probe', 0)",
            accounts::LEDGER_TABLE
        );
        match tokio::time::timeout(Duration::from_secs(2), conn.query_drop(insert)).await {
            Ok(Ok(())) => break killed_at.elapsed(),
            Ok(Err(mysql_async::Error::Server(_))) => {}
            _ => {
                // A broken or stuck session: dial again.
                if let Ok(Ok(fresh)) = tokio::time::timeout(
                    Duration::from_secs(2),
                    mysql_async::Conn::new(opts.clone()),
                )
                .await
                {
                    conn = fresh;
                }
            }
        }
        assert!(killed_at.elapsed() < BOUND, "no write accepted on {other} within {BOUND:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let _ = conn.disconnect().await;
    println!(
        "drill {drill_index}: {first} killed, {other} writable after {:.2} s",
        writable.as_secs_f64()
    );
    controller.abort();
    drop(context);
    kubelet.shutdown().await;
    lab.stop().await.expect("the lab stops");
    writable.as_secs_f64()
}

fn main() {
    support::run_child_if_asked();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let runs = if quick() { 3 } else { 10 };
    let mut all: Vec<f64> = (0..runs).map(|index| runtime.block_on(drill(&dist, index))).collect();
    let listed = all.iter().map(|value| format!("{value:.2}")).collect::<Vec<_>>().join(",");
    let (min, max) = (
        all.iter().copied().fold(f64::INFINITY, f64::min),
        all.iter().copied().fold(0.0, f64::max),
    );
    let median = median(&mut all);
    println!(
        "BENCH operator/failover/sigkill_to_writable_median {median:.2} s runs={runs} \
         min={min:.2}s max={max:.2}s all={listed} detection_bound=3s"
    );
}
