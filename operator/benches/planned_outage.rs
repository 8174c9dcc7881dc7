//! The write outage of a planned failover (issue 13, goal: median ≤ 1 s on this 2-core
//! machine): median and max of 20 planned failovers (3 with BLOODRAVEN_BENCH_QUICK) with a
//! caught-up target, real MySQL 9.7 (`source scripts/provision.sh`).
//!
//! One lab API server, lab kubelet and the operator's controller (in this process, with the
//! document's timings) run the example group with `failoverCooldown: 0s`, so back-to-back runs
//! are admitted. Each run annotates the group with a planned failover to the other
//! PrimaryCandidate while a probe writes as the application account (no SUPER) every 5 ms:
//! first on the source's internal address until a write is refused (`super_read_only`, or the
//! drain killing the session), then on the target's until one is accepted. The figure is the
//! first refused write to the first accepted write. The run's record must end Succeeded.
//!
//! The second series repeats it with the application workload writing 1,000 rows/s through
//! the `-primary` Service (`bloodraven-sites`' workload: 32 concurrent sessions sharing one
//! schedule, disjoint keys, `BEGIN; INSERT` then `COMMIT`, two round trips per write;
//! `BLOODRAVEN_BENCH_SESSIONS` to change): the target must then apply the fenced set before it
//! is promoted. The sites keep their durable defaults (`sync_binlog = 1`,
//! `innodb_flush_log_at_trx_commit = 1`); a commit takes 15–30 ms here, so 1,000 writes/s needs
//! some 30 sessions in flight (8 reached 450–530 writes/s). The group's `spec.mysqlConf` sets
//! `replica_parallel_workers = 16` for this series (`BLOODRAVEN_BENCH_MYSQL_CONF`,
//! `key=value,…`, to change; printed in the row): with the default 4 applier workers a durable
//! replica commits at most 4 transactions per binlog group (2 fsyncs), some 350 writes/s here,
//! and falls seconds behind, which the planned failover then waits out. After each run the
//! `-primary` link's sessions are reset, as a pool drops a read-only server. Its achieved rate
//! is reported twice: over 5 s before the first run (`steady=`) and over the whole series,
//! outages and convergence waits included (`achieved=`). At the end the merged ledger of every
//! session is verified against the last target: every acknowledged write present (RPO 0).
//!
//! Each run prints its record's drain (`drain.startTime` → `completionTime`) and lag wait
//! (`lagWait.startTime` → `catchUpTime`), to say where an outage went.

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
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::ensure_template_async;
use bloodraven_sites::workload::{Workload, WorkloadConfig, verify_at};
use bloodraven_workloads::{Resolver, ports, primary_service_name};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
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
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The active site once the group converged: Ready, a writable primary, followers replicating
/// from it.
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

/// One probe write on `conn` (re-dialled at `opts` when the session broke): true when it was
/// accepted.
async fn write(conn: &mut Option<mysql_async::Conn>, opts: &mysql_async::Opts, key: u64) -> bool {
    if conn.is_none() {
        *conn = tokio::time::timeout(Duration::from_secs(2), mysql_async::Conn::new(opts.clone()))
            .await
            .ok()
            .and_then(Result::ok);
    }
    let Some(session) = conn.as_mut() else { return false };
    let insert = format!(
        "INSERT INTO `{}` (k, writer, written_at_us) VALUES ({key}, 'bench-probe', 0)",
        accounts::LEDGER_TABLE
    );
    match tokio::time::timeout(Duration::from_secs(2), session.query_drop(insert)).await {
        Ok(Ok(())) => true,
        Ok(Err(mysql_async::Error::Server(_))) => false,
        _ => {
            *conn = None;
            false
        }
    }
}

/// One planned failover from `source` to `target`: seconds from the first refused write on the
/// source to the first accepted write on the target.
async fn run(
    lab: &Lab,
    groups: &Api<DynamicObject>,
    address: &impl Fn(&str) -> SocketAddr,
    (source, target): (&str, &str),
    index: u64,
) -> f64 {
    let opts = |site: &str| accounts::opts(&APPLICATION, address(site), Some(accounts::APP_SCHEMA));
    let (source_opts, target_opts) = (opts(source), opts(target));
    let mut on_source = None;
    let mut key = 2_000_000_000_000 + index * 1_000_000;
    key += 1;
    assert!(write(&mut on_source, &source_opts, key).await, "the source {source} takes writes");
    let patch = serde_json::json!({
        "metadata": {"annotations": {"bloodraven.shipstream.io/planned-failover": target}}
    });
    groups.patch(GROUP, &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    let requested = Instant::now();
    let refused = loop {
        key += 1;
        if !write(&mut on_source, &source_opts, key).await {
            break Instant::now();
        }
        assert!(requested.elapsed() < BOUND, "{source} never refused a write");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let mut on_target = None;
    let accepted = loop {
        key += 1;
        if write(&mut on_target, &target_opts, key).await {
            break Instant::now();
        }
        assert!(refused.elapsed() < BOUND, "{target} never accepted a write");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let outage = accepted.duration_since(refused).as_secs_f64();
    let (outcome, phases) = wait_for("the run's terminal record", || {
        let group =
            lab.get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some(NAMESPACE), GROUP)?;
        let block = &group["status"]["plannedFailover"];
        matches!(block["phase"].as_str(), Some("Succeeded" | "Failed")).then(|| {
            let phases = format!(
                "drain {} s, lag wait {} s",
                between(&block["drain"]["startTime"], &block["drain"]["completionTime"]),
                between(&block["lagWait"]["startTime"], &block["lagWait"]["catchUpTime"]),
            );
            (format!("{} {block:#} sites {:#}", block["phase"], group["status"]["sites"]), phases)
        })
    })
    .await;
    assert!(outcome.starts_with("\"Succeeded\""), "run {index}: {outcome}");
    wait_for("the group to converge on the target", || {
        let group =
            lab.get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some(NAMESPACE), GROUP)?;
        (converged(&group)? == target).then_some(())
    })
    .await;
    println!("run {index}: {source} -> {target}: outage {outage:.3} s ({phases})");
    outage
}

/// Seconds between two RFC 3339 times of the record (`?` when one is missing).
fn between(from: &Value, to: &Value) -> String {
    let at = |value: &Value| value.as_str()?.parse::<jiff::Timestamp>().ok();
    match (at(from), at(to)) {
        (Some(from), Some(to)) => format!("{:.3}", to.duration_since(from).as_secs_f64()),
        _ => "?".to_owned(),
    }
}

/// Concurrent workload sessions (`BLOODRAVEN_BENCH_SESSIONS`, default 32: 1,000 writes/s at a
/// commit latency up to 32 ms).
fn sessions() -> u32 {
    std::env::var("BLOODRAVEN_BENCH_SESSIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(32)
}

/// `spec.mysqlConf` entries of the loaded series (`BLOODRAVEN_BENCH_MYSQL_CONF`, `key=value,…`;
/// default `replica_parallel_workers=16`, so durable replicas keep up with 1,000 writes/s).
fn mysql_conf() -> Vec<(String, String)> {
    std::env::var("BLOODRAVEN_BENCH_MYSQL_CONF")
        .unwrap_or_else(|_| "replica_parallel_workers=16".to_owned())
        .split(',')
        .filter_map(|entry| entry.split_once('='))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect()
}

/// What one series measured.
struct Series {
    outages: Vec<f64>,
    /// The workload's acknowledged writes per second over the series (none without load).
    achieved_rate: Option<f64>,
    /// Its rate over 5 s before the first run.
    steady_rate: Option<f64>,
    /// The workload's sessions (0 without load).
    sessions: u32,
    /// Acknowledged writes, all on the last target (the series panics otherwise).
    acknowledged: u64,
}

async fn bench(dist: &MysqlDist, runs: u64, load: Option<u32>) -> Series {
    let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
    let mut group = support::renamed(&apply_example(&lab), GROUP);
    group["spec"]["failoverCooldown"] = Value::from("0s");
    if load.is_some() {
        for (key, value) in mysql_conf() {
            group["spec"]["mysqlConf"][key] = Value::from(value);
        }
    }
    lab.apply(group).expect("the example group with no cooldown");
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
    let resolver = kubelet.resolver();
    let context =
        Arc::new(Context::new(client.clone(), Arc::new(resolver.clone()), tuning, "bench"));
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
    let resource = kube::api::ApiResource {
        group: "shipstream.io".into(),
        version: "v1alpha1".into(),
        api_version: "shipstream.io/v1alpha1".into(),
        kind: "MysqlFailoverGroup".into(),
        plural: "mysqlfailovergroups".into(),
    };
    let groups: Api<DynamicObject> = Api::namespaced_with(client, NAMESPACE, &resource);
    let address = |site: &str| -> SocketAddr {
        let address = resolver
            .resolve(NAMESPACE, &format!("mysql-{GROUP}-{site}-internal"), ports::MYSQL)
            .expect("the internal Service resolves");
        format!("{}:{}", address.host, address.port).parse().unwrap()
    };
    let primary_service = primary_service_name(GROUP);
    let primary_link = bloodraven_kubelet::link_name(NAMESPACE, &primary_service, ports::MYSQL);
    let workload = load.map(|rate| {
        let primary = resolver
            .resolve(NAMESPACE, &primary_service, ports::MYSQL)
            .expect("the -primary Service resolves");
        let mut config =
            WorkloadConfig::new(format!("{}:{}", primary.host, primary.port).parse().unwrap());
        config.rate_per_sec = rate;
        config.sessions = sessions();
        (Workload::start(config), Instant::now())
    });
    let mut steady_rate = None;
    if let Some((workload, _)) = &workload {
        workload.wait_acknowledged(100, BOUND).await.expect("the workload writes");
        let (before, started) = (workload.acknowledged(), Instant::now());
        tokio::time::sleep(Duration::from_secs(5)).await;
        let rate = (workload.acknowledged() - before) as f64 / started.elapsed().as_secs_f64();
        println!("workload: {rate:.0} writes/s in {} sessions before the first run", sessions());
        steady_rate = Some(rate);
    }
    let mut active = first;
    let mut outages = Vec::new();
    for index in 0..runs {
        let target = if active == "iad" { "pdx" } else { "iad" };
        outages.push(run(&lab, &groups, &address, (&active, target), index).await);
        active = target.to_owned();
        if workload.is_some() {
            hub.get(&primary_link).expect("the -primary link").reset();
        }
    }
    let (achieved_rate, acknowledged) = match workload {
        Some((workload, started)) => {
            let rate = workload.acknowledged() as f64 / started.elapsed().as_secs_f64();
            let ledger = workload.stop().await.expect("the workload's ledger");
            // Every session's acknowledged writes are on the last target (RPO 0 across them).
            let report = wait_for_async("the ledger verified on the last target", || async {
                verify_at(&ledger, address(&active), &APPLICATION).await.ok()
            })
            .await;
            assert!(
                report.rpo_zero(),
                "{} acknowledged writes lost: {:?}",
                report.lost.len(),
                report.lost_keys()
            );
            assert!(report.phantom.is_empty(), "phantom writes: {:?}", report.phantom);
            println!(
                "ledger: {} attempts, {} acknowledged, all on {active}; {} in doubt; failures {:?}",
                report.attempts,
                report.acknowledged,
                report.in_doubt.len(),
                report.failures
            );
            (Some(rate), report.acknowledged as u64)
        }
        None => (None, 0),
    };
    controller.abort();
    drop(context);
    kubelet.shutdown().await;
    lab.stop().await.expect("the lab stops");
    Series {
        outages,
        achieved_rate,
        steady_rate,
        sessions: load.map_or(0, |_| sessions()),
        acknowledged,
    }
}

async fn wait_for_async<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(started.elapsed() < BOUND, "gave up after {BOUND:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn main() {
    support::run_child_if_asked();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let runs = if quick() { 3 } else { 20 };
    for (id, load) in [
        ("operator/planned/write_outage_median", None),
        ("operator/planned/write_outage_median_1000wps", Some(1000)),
    ] {
        let Series { outages: mut all, achieved_rate, steady_rate, sessions, acknowledged } =
            runtime.block_on(bench(&dist, runs, load));
        let listed = all.iter().map(|value| format!("{value:.3}")).collect::<Vec<_>>().join(",");
        let max = all.iter().copied().fold(0.0, f64::max);
        let median = median(&mut all);
        let rate = match (achieved_rate, steady_rate) {
            (Some(rate), Some(steady)) => format!(
                " sessions={sessions} mysqlConf={} steady={steady:.0}w/s achieved={rate:.0}w/s acknowledged={acknowledged} rpo=0",
                mysql_conf().iter().map(|(k, v)| format!("{k}:{v}")).collect::<Vec<_>>().join(";")
            ),
            _ => String::new(),
        };
        // The machine is shared: the 1-minute load average when the series ended.
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let load = load.split_whitespace().next().unwrap_or("?");
        println!(
            "BENCH {id} {median:.3} s runs={runs} max={max:.3}s{rate} load_end={load} all={listed}"
        );
    }
}
