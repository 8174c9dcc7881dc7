//! The sidecar's memory (goal ≤ 50 MiB RSS, issue 18): the built binary beside a real MySQL 9.7
//! (the sites template), two peer sidecars and a stand-in for the operator's `/active-site`,
//! checking every 1 s (busier than the 5 s default). After a settle period, samples VmRSS once
//! a second and reads VmHWM. Prints `BENCH` lines (scripts/bench.sh). Needs `source
//! scripts/provision.sh`. `BLOODRAVEN_BENCH_QUICK` shortens it.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a benchmark binary: a failed setup step is a failed run, results go to stdout"
)]

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use bloodraven_sites::accounts::SIDECAR;
use bloodraven_sites::mysqld::{Instance, InstanceSpec, MysqlDist};
use bloodraven_sites::template::ensure_template_async;
use tokio::process::{Child, Command};

fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

fn spawn(
    site: &str,
    operator: SocketAddr,
    peers: &[SocketAddr],
    mysql_port: u16,
    listen: SocketAddr,
) -> Child {
    let peers: Vec<String> = peers.iter().map(ToString::to_string).collect();
    Command::new(env!("CARGO_BIN_EXE_bloodraven-sidecar"))
        .env_clear()
        .env("BLOODRAVEN_SITE", site)
        .env("BLOODRAVEN_GROUP", "orders")
        .env("POD_NAMESPACE", "orders")
        .env("BLOODRAVEN_ADDRESS", operator.to_string())
        .env("PEER_ADDRESSES", peers.join(","))
        .env("PEER_CHECK_INTERVAL", "1s")
        .env("MYSQL_PORT", mysql_port.to_string())
        .env("MYSQL_USER", SIDECAR.user)
        .env("MYSQL_PASSWORD", SIDECAR.password)
        .env("SIDECAR_LISTEN", listen.to_string())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

fn status_kib(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::var_os("BLOODRAVEN_BENCH_QUICK").is_some();
    let (settle, samples) = if quick { (3, 5) } else { (10, 20) };
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let template = ensure_template_async(&dist).await.unwrap();
    let mut iad = Instance::create(&dist, &template, InstanceSpec::new("iad", 101)).await.unwrap();
    iad.start_and_wait(Duration::from_secs(120)).await.unwrap();
    let router = Router::new().route(
        "/active-site",
        get(|| async {
            axum::Json(serde_json::json!({
                "activeSite": "iad",
                "observedAt": jiff::Timestamp::now().to_string(),
                "topologyGeneration": 1,
            }))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let operator = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let (a, b, me) = (free_addr(), free_addr(), free_addr());
    let closed = free_addr().port();
    let _pdx = spawn("pdx", operator, &[me, b], closed, a);
    let _fra = spawn("fra", operator, &[me, a], closed, b);
    let measured = spawn("iad", operator, &[a, b], iad.port(), me);
    let pid = measured.id().unwrap();
    tokio::time::sleep(Duration::from_secs(settle)).await;
    let mut rss = Vec::new();
    for _ in 0..samples {
        rss.push(status_kib(pid, "VmRSS"));
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let peak = status_kib(pid, "VmHWM");
    rss.sort_unstable();
    let mib = |kib: u64| kib as f64 / 1024.0;
    let median = rss[rss.len() / 2];
    let max = rss[rss.len() - 1];
    println!(
        "BENCH sidecar/rss-steady {:.1} MiB goal=≤50MiB source=VmRSS_median samples={} max={:.1}MiB peers=2 interval=1s",
        mib(median),
        rss.len(),
        mib(max)
    );
    println!("BENCH sidecar/rss-peak {:.1} MiB source=VmHWM", mib(peak));
    drop(measured);
}
