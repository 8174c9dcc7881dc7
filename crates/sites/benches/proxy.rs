//! Fault-proxy overhead per round trip: a 64-byte request echoed back by a tokio echo server,
//! direct versus through a [`Fault::Pass`] link. Goal (issue 11): ≤ 100 µs p99 overhead.
//!
//! Criterion measures the mean; a second pass times every round trip on its own and prints
//! p50/p99/p99.9 of both paths and their difference (criterion does not report tails), also as
//! `BENCH` lines for `scripts/bench.sh`. The overhead at a percentile is the proxied path's
//! percentile minus the direct path's (the two are sampled interleaved, so noise hits both).
//! `cargo bench -p bloodraven-sites --bench proxy`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bloodraven_sites::proxy::{Fault, ProxyHub};
use criterion::{Criterion, criterion_group};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

const REQUEST: [u8; 64] = [42; 64];
/// Round trips timed one by one for the percentiles (fewer with `BLOODRAVEN_BENCH_QUICK`).
const SAMPLES: usize = 20_000;
const QUICK_SAMPLES: usize = 5_000;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the echo server");
    let addr = listener.local_addr().expect("echo address");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let (mut read, mut write) = stream.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            });
        }
    });
    addr
}

async fn client(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("TCP_NODELAY");
    stream
}

async fn round_trip(stream: &mut TcpStream) {
    let mut reply = [0u8; REQUEST.len()];
    stream.write_all(&REQUEST).await.expect("send the request");
    stream.read_exact(&mut reply).await.expect("read the reply");
}

/// The two paths: (direct, proxied) client connections, kept alive with their hub.
fn setup(runtime: &Runtime) -> (ProxyHub, TcpStream, TcpStream) {
    runtime.block_on(async {
        let upstream = echo_server().await;
        let hub = ProxyHub::current().expect("inside the runtime");
        let link = hub.link("bench", upstream).expect("a link");
        link.set(Fault::Pass).expect("pass");
        let mut direct = client(upstream).await;
        let mut proxied = client(link.addr()).await;
        for _ in 0..1000 {
            round_trip(&mut direct).await;
            round_trip(&mut proxied).await;
        }
        (hub, direct, proxied)
    })
}

fn bench_round_trip(c: &mut Criterion) {
    let runtime = runtime();
    let (_hub, mut direct, mut proxied) = setup(&runtime);
    let mut group = c.benchmark_group("proxy_round_trip_64b");
    for (name, stream) in [("direct", &mut direct), ("proxied", &mut proxied)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                runtime.block_on(async {
                    let started = Instant::now();
                    for _ in 0..iterations {
                        round_trip(stream).await;
                    }
                    started.elapsed()
                })
            });
        });
    }
    group.finish();
}

/// Times `SAMPLES` round trips one by one, interleaving the two paths so that machine noise
/// hits both alike; returns sorted durations (direct, proxied).
fn sample(runtime: &Runtime, samples: usize) -> (Vec<Duration>, Vec<Duration>) {
    let (_hub, mut direct, mut proxied) = setup(runtime);
    runtime.block_on(async {
        let mut direct_times = Vec::with_capacity(samples);
        let mut proxied_times = Vec::with_capacity(samples);
        for _ in 0..samples {
            let started = Instant::now();
            round_trip(&mut direct).await;
            direct_times.push(started.elapsed());
            let started = Instant::now();
            round_trip(&mut proxied).await;
            proxied_times.push(started.elapsed());
        }
        direct_times.sort_unstable();
        proxied_times.sort_unstable();
        (direct_times, proxied_times)
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "an index into a sample of 20,000"
    )]
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

#[expect(clippy::print_stdout, reason = "a benchmark reports its percentiles on stdout")]
fn report_percentiles() {
    let samples =
        if std::env::var_os("BLOODRAVEN_BENCH_QUICK").is_some() { QUICK_SAMPLES } else { SAMPLES };
    let runtime = runtime();
    let (direct, proxied) = sample(&runtime, samples);
    println!("\nproxy round trip, 64-byte request/reply, {samples} samples each:");
    println!("{:>8} {:>12} {:>12} {:>12}", "", "direct", "proxied", "overhead");
    let micros = |duration: Duration| duration.as_secs_f64() * 1e6;
    for (name, p) in [("p50", 0.50), ("p99", 0.99), ("p99.9", 0.999)] {
        let (d, x) = (micros(percentile(&direct, p)), micros(percentile(&proxied, p)));
        println!("{name:>8} {d:>9.1} µs {x:>9.1} µs {:>9.1} µs", x - d);
    }
    for (name, p, goal) in [("p50", 0.50, ""), ("p99", 0.99, " goal=≤_100_µs")] {
        let (d, x) = (micros(percentile(&direct, p)), micros(percentile(&proxied, p)));
        println!(
            "BENCH bloodraven-sites/proxy_round_trip_overhead/{name} {:.1} µs{goal} direct={d:.1}µs proxied={x:.1}µs samples={samples}",
            x - d
        );
    }
}

criterion_group!(benches, bench_round_trip);

fn main() {
    benches();
    // `cargo bench` passes --bench; `cargo test --benches` (one quick pass) does not.
    if std::env::args().any(|arg| arg == "--bench") {
        report_percentiles();
    }
    Criterion::default().configure_from_args().final_summary();
}
