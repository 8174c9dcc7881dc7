//! Time to a ready 3-site group from a cold template: the template exists (built once, outside
//! the timing), three instances are copied from it and started, the proxy links created, and
//! replication running on both followers. Goal (issue 11): ≤ 10 s on the 2-core machine.
//!
//! A bench binary that prints figures (criterion would need tens of 10-second samples):
//! `source scripts/provision.sh && cargo bench -p bloodraven-sites --bench group`
//! (`BLOODRAVEN_BENCH_ROUNDS`, default 3).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench binary reports on the terminal"
)]

use std::time::{Duration, Instant};

use bloodraven_sites::group::{Group, GroupSpec};
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::template::ensure_template;

fn main() {
    // `cargo bench` passes `--bench`; a filter that is not ours means another bench was asked for.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if args.iter().any(|a| !"group/ready_3_sites".contains(a.as_str())) {
        return;
    }
    let dist = match MysqlDist::from_env() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("group bench: {e}");
            std::process::exit(2);
        }
    };
    let started = Instant::now();
    let template = ensure_template(&dist).unwrap_or_else(|e| panic!("{e}"));
    println!("template ready in {:?} (built or found, not timed below)", started.elapsed());
    let rounds: usize =
        std::env::var("BLOODRAVEN_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut times = Vec::new();
    for round in 1..=rounds {
        let t = rt.block_on(async {
            let started = Instant::now();
            let group = Group::start_with(&dist, &template, GroupSpec::new(&["a", "b", "c"]))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let ready = started.elapsed();
            for site in group.sites() {
                let rss = site.instance.pid().and_then(|pid| {
                    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
                    status
                        .lines()
                        .find(|l| l.starts_with("VmRSS:"))
                        .map(|l| l.split_whitespace().nth(1).unwrap_or("?").to_owned())
                });
                println!("  site {}: VmRSS {} kB", site.name, rss.unwrap_or_else(|| "?".into()));
            }
            let torn = Instant::now();
            drop(group);
            println!(
                "round {round}: ready 3-site group in {ready:?} (teardown {:?})",
                torn.elapsed()
            );
            ready
        });
        times.push(t);
    }
    times.sort();
    let median = times[times.len() / 2];
    let (min, max) = (times[0], times[times.len() - 1]);
    println!(
        "group/ready_3_sites: median {median:?}, min {min:?}, max {max:?} over {rounds} rounds (goal <= 10 s)"
    );
    println!(
        "BENCH bloodraven-sites/group_ready_3_sites {:.2} s goal=≤_10_s rounds={rounds} min={:.2}s max={:.2}s",
        median.as_secs_f64(),
        min.as_secs_f64(),
        max.as_secs_f64()
    );
    if median > Duration::from_secs(10) {
        println!("group/ready_3_sites: over the 10 s goal");
    }
}
