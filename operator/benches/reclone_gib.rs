//! Reclone time per GiB by CLONE (issue 14): a 2-site MySQL 9.7 star (`bloodraven_sites`,
//! `source scripts/provision.sh`) whose follower's replication is stopped (a queued peer), a
//! dataset of `BLOODRAVEN_BENCH_RECLONE_MIB` MiB (default 1024; `bloodraven_sites::dataset`)
//! loaded on the primary, then the operator's own reclone (`restore::clone::clone_from`: the
//! plugin on both ends, `STOP REPLICA`, the donor list, `CLONE INSTANCE FROM` the primary) of
//! the follower. The follower then restarts (the lab stands in for the pod's container
//! restart) and must hold the primary's `gtid_executed` and row count.
//!
//! Figures, per GiB of table data (InnoDB `data_length`): the CLONE statement to its end, and
//! the whole reclone until the recipient answers again with the primary's set; plus the clone's
//! MiB/s.
//!
//! `scripts/bench.sh reclone_gib` runs it (1 GiB); a quick check of the bench itself:
//! `BLOODRAVEN_BENCH_RECLONE_MIB=64 cargo bench -p bloodraven-operator --bench reclone_gib`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "benchmark harness: it reports on stdout (BENCH lines) and panics on a broken setup"
)]

use std::time::{Duration, Instant};

use bloodraven_gtid::GtidSet;
use bloodraven_operator::restore::clone::{Cloned, Donor, Endpoint, clone_from};
use bloodraven_sites::accounts::OPERATOR;
use bloodraven_sites::dataset;
use bloodraven_sites::group::{Group, GroupSpec};
use mysql_async::prelude::Queryable as _;

/// The variable that sets the dataset's size in MiB.
const SIZE_VAR: &str = "BLOODRAVEN_BENCH_RECLONE_MIB";
/// Generous bounds: the machine is shared with other real servers.
const CLONE_BOUND: Duration = Duration::from_secs(3600);
const RESTART_BOUND: Duration = Duration::from_secs(300);

async fn gtid(conn: &mut mysql_async::Conn) -> GtidSet {
    let text: String = conn.query_first("SELECT @@global.gtid_executed").await.unwrap().unwrap();
    text.parse().unwrap()
}

async fn rows(conn: &mut mysql_async::Conn) -> u64 {
    conn.query_first(format!("SELECT COUNT(*) FROM {}", dataset::TABLE)).await.unwrap().unwrap()
}

async fn run() {
    let mib = dataset::mib_from_env(SIZE_VAR, 1024);
    let mut group = Group::start(GroupSpec::new(&["iad", "pdx"]))
        .await
        .unwrap_or_else(|e| panic!("two MySQL 9.7 sites (run `source scripts/provision.sh`): {e}"));
    let iad = group.site("iad").unwrap().instance.addr();
    let pdx = group.site("pdx").unwrap().instance.addr();
    // The peer is queued: its replication stops before the load, so only CLONE brings the data.
    let mut peer = group.site("pdx").unwrap().instance.root_conn().await.unwrap();
    peer.query_drop("STOP REPLICA").await.unwrap();
    drop(peer);
    let mut primary = group.site("iad").unwrap().instance.root_conn().await.unwrap();
    let started = Instant::now();
    let data_mib = dataset::load(&mut primary, "iad", mib)
        .await
        .unwrap_or_else(|e| panic!("the dataset: {e}"));
    eprintln!("loaded {data_mib:.0} MiB in {:?}", started.elapsed());
    let primary_set = gtid(&mut primary).await;
    let primary_rows = rows(&mut primary).await;
    drop(primary);

    let operator = |port| Endpoint {
        host: "127.0.0.1",
        port,
        user: OPERATOR.user,
        password: OPERATOR.password,
    };
    let donor = Donor {
        host: "127.0.0.1",
        port: iad.port(),
        user: OPERATOR.user,
        password: OPERATOR.password,
    };
    let started = Instant::now();
    let cloned = clone_from(&operator(pdx.port()), &donor, &operator(iad.port()), CLONE_BOUND)
        .await
        .unwrap_or_else(|e| panic!("CLONE INSTANCE FROM the primary: {e}"));
    let clone_s = started.elapsed().as_secs_f64();
    let site = group.site_mut("pdx").unwrap();
    if cloned != Cloned::Done {
        // No supervisor here: the recipient stops after its clone and is started again, as a
        // pod's container restart would.
        let deadline = Instant::now() + RESTART_BOUND;
        while site.instance.is_running() {
            assert!(
                Instant::now() < deadline,
                "pdx did not stop within {RESTART_BOUND:?} of its clone ({cloned:?})"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        site.instance.start_and_wait(RESTART_BOUND).await.unwrap_or_else(|e| {
            panic!("pdx did not restart after its clone: {e}\n{}", site.instance.error_log_tail(40))
        });
    }
    let mut recloned = site.instance.root_conn().await.unwrap();
    let recloned_set = gtid(&mut recloned).await;
    let serving_s = started.elapsed().as_secs_f64();
    assert_eq!(recloned_set, primary_set, "the recloned peer holds the primary's set");
    assert_eq!(rows(&mut recloned).await, primary_rows, "and the primary's rows");
    drop(recloned);

    let gib = data_mib / 1024.0;
    println!(
        "BENCH operator/reclone/clone_s_per_gib {:.1} s/GiB data_mib={data_mib:.0} \
         seconds={clone_s:.1} outcome={cloned:?}",
        clone_s / gib
    );
    println!(
        "BENCH operator/reclone/to_serving_s_per_gib {:.1} s/GiB data_mib={data_mib:.0} \
         seconds={serving_s:.1}",
        serving_s / gib
    );
    println!(
        "BENCH operator/reclone/clone_mib_per_s {:.1} MiB/s data_mib={data_mib:.0} \
         seconds={clone_s:.1}",
        data_mib / clone_s
    );
    drop(group);
}

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(run());
}
