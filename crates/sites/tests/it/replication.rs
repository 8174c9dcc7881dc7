//! A real 3-site star with replication through the fault proxy.

use std::time::{Duration, Instant};

use bloodraven_gtid::GtidSet;
use bloodraven_sites::accounts::{APPLICATION, OPERATOR};
use bloodraven_sites::group::{Group, GroupSpec};
use bloodraven_sites::mysqld::ReplicaStatus;
use bloodraven_sites::proxy::Fault;
use bloodraven_sites::wire::{Session, WireError};
use bloodraven_sites::workload::{Workload, WorkloadConfig, read_site_keys, verify_at};
use mysql_async::prelude::Queryable as _;

use crate::mysqld::dist_and_template;

const WAIT: Duration = Duration::from_secs(60);

async fn group() -> Group {
    let (dist, template) = dist_and_template().await;
    Group::start_with(&dist, &template, GroupSpec::new(&["a", "b", "c"]))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn insert(group: &Group, from: u64, to: u64) {
    let mut conn = mysql_async::Conn::new(bloodraven_sites::accounts::opts(
        &APPLICATION,
        group.primary_link().addr(),
        Some("app"),
    ))
    .await
    .unwrap();
    for k in from..to {
        conn.query_drop(format!(
            "INSERT INTO ledger (k, writer, written_at_us) VALUES ({k}, 't', 0)"
        ))
        .await
        .unwrap();
    }
    conn.disconnect().await.unwrap();
}

/// Polls `b`'s replica status until `done` holds; returns the last status seen.
async fn poll_status(
    group: &Group,
    site: &str,
    what: &str,
    done: impl Fn(&ReplicaStatus) -> bool,
) -> ReplicaStatus {
    let started = Instant::now();
    let mut last = None;
    while started.elapsed() < WAIT {
        let st = group.site(site).unwrap().instance.replica_status().await.unwrap().unwrap();
        if done(&st) {
            return st;
        }
        last = Some(st);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("waited {WAIT:?} for {site} to show {what}; last status: {last:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn star_replicates_through_links_and_a_blackholed_link_stalls_the_receiver_until_healed() {
    let group = group().await;
    let link_b = group.replication_link("b", "a").unwrap().clone();
    let st = group.site("b").unwrap().instance.replica_status().await.unwrap().unwrap();
    assert_eq!(st.source_port, link_b.addr().port(), "b replicates through its link");
    insert(&group, 1, 11).await;
    group.wait_caught_up(&["b", "c"], WAIT).await.unwrap();
    assert!(!link_b.connections().is_empty(), "the link carried b's receiver");

    link_b.set(Fault::Blackhole).unwrap();
    insert(&group, 11, 21).await;
    group.wait_caught_up(&["c"], WAIT).await.unwrap();
    // b's receiver notices (heartbeat 1 s, replica-net-timeout 4 s) and says so.
    let stalled = poll_status(&group, "b", "a stalled receiver", |st| {
        st.io_running == "Connecting" || st.last_io_errno != 0
    })
    .await;
    // What MySQL 9.7 really shows: the receiver is `Connecting` ("Reconnecting after a failed
    // source event read"), with no lag figure.
    assert_eq!(stalled.io_running, "Connecting", "{stalled:#?}");
    assert_eq!(stalled.seconds_behind_source, None, "{stalled:#?}");
    let primary = group.site("a").unwrap().instance.gtid_executed().await.unwrap();
    let b = group.site("b").unwrap().instance.gtid_executed().await.unwrap();
    assert!(!primary.is_subset(&b), "b must not have received the writes made while cut off");

    link_b.heal().unwrap();
    group.wait_caught_up(&["b"], WAIT).await.unwrap();
    poll_status(&group, "b", "a running receiver", |st| st.io_running == "Yes").await;
}

async fn connect_outcome(addr: std::net::SocketAddr) -> Result<Session, WireError> {
    Session::connect(addr, OPERATOR.user, OPERATOR.password, None, Duration::from_secs(3)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_source_refuses_and_frozen_source_times_out() {
    let mut group = group().await;
    let direct_c = group.site("c").unwrap().instance.addr();
    let link_c = group.site("c").unwrap().operator.addr();
    let direct_b = group.site("b").unwrap().instance.addr();
    let link_b = group.site("b").unwrap().operator.addr();
    assert!(connect_outcome(link_b).await.is_ok());

    group.site_mut("c").unwrap().instance.kill().await.unwrap();
    // Both fail with a connection error, not the 3 s timeout a frozen server gives.
    match connect_outcome(direct_c).await {
        Err(WireError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}"),
        other => panic!("killed server: want refused, got {other:?}"),
    }
    match connect_outcome(link_c).await {
        Err(WireError::Io(_)) => {}
        other => panic!("killed server through its link: want a connection error, got {other:?}"),
    }

    group.site("b").unwrap().instance.freeze().unwrap();
    for addr in [direct_b, link_b] {
        match connect_outcome(addr).await {
            Err(WireError::Timeout(_)) => {}
            other => panic!("frozen server at {addr}: want a timeout, got {other:?}"),
        }
    }
    group.site("b").unwrap().instance.thaw().unwrap();
    assert!(connect_outcome(link_b).await.is_ok(), "a thawed server answers again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promoting_a_lagging_replica_loses_exactly_the_writes_verify_names() {
    let mut group = group().await;
    let mut config = WorkloadConfig::new(group.primary_link().addr());
    config.rate_per_sec = 40;
    config.first_key = 1_000;
    let workload = Workload::start(config);
    workload.wait_acknowledged(20, WAIT).await.unwrap();
    group.wait_caught_up(&["b", "c"], WAIT).await.unwrap();

    // Cut b off while the workload runs: what a acknowledges now, b never receives.
    group.replication_link("b", "a").unwrap().set(Fault::Blackhole).unwrap();
    let acked = workload.acknowledged();
    workload.wait_acknowledged(acked + 40, WAIT).await.unwrap();

    // Fence a (the workload now fails with super_read_only), note both sides, promote b.
    let a = &group.site("a").unwrap().instance;
    a.set_super_read_only(true).await.unwrap();
    let failed = workload.failed();
    workload.wait_failed(failed + 3, WAIT).await.unwrap();
    let old_primary = a.gtid_executed().await.unwrap();
    let b_before = group.site("b").unwrap().instance.gtid_executed().await.unwrap();
    let expected_lost: GtidSet = old_primary.difference(&b_before);
    assert!(!expected_lost.is_empty(), "b must lag");
    group.promote("b").await.unwrap();
    let acked = workload.acknowledged();
    workload.wait_acknowledged(acked + 20, WAIT).await.unwrap();
    let ledger = workload.stop().await.unwrap();

    let report =
        verify_at(&ledger, group.site("b").unwrap().app.addr(), &APPLICATION).await.unwrap();
    assert!(!report.rpo_zero());
    assert_eq!(report.lost_gtids(), expected_lost, "verify names exactly the lost writes");
    assert!(report.in_doubt.is_empty(), "{:?}", report.in_doubt);
    assert!(report.phantom.is_empty(), "{:?}", report.phantom);
    let outage = report.outage.expect("super_read_only rejections form the outage window");
    let details: Vec<_> = ledger
        .attempts
        .iter()
        .filter_map(|a| match &a.outcome {
            bloodraven_sites::ledger::Outcome::Failed { detail, .. } => Some(detail.as_str()),
            _ => None,
        })
        .take(5)
        .collect();
    assert!(report.outage.map_or(0, |w| w.rejected) >= 3, "{:?} {details:?}", report.failures);
    assert!(outage.first <= outage.last);
    // Every lost key is really absent from b, every other acknowledged key is there.
    let keys = read_site_keys(group.site("b").unwrap().app.addr(), &APPLICATION).await.unwrap();
    for lost in &report.lost {
        assert!(!keys.contains(&lost.key));
    }
    assert_eq!(report.present + report.lost.len(), report.acknowledged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errant_transaction_on_a_follower_shows_in_gtid_subtract() {
    let group = group().await;
    insert(&group, 1, 4).await;
    group.wait_caught_up(&["b", "c"], WAIT).await.unwrap();
    let c = &group.site("c").unwrap().instance;
    c.execute(&[
        "SET GLOBAL super_read_only = OFF",
        "INSERT INTO app.ledger (k, writer, written_at_us) VALUES (900, 'errant', 0)",
        "SET GLOBAL super_read_only = ON",
    ])
    .await
    .unwrap();
    let c_set = c.gtid_executed().await.unwrap();
    let a = &group.site("a").unwrap().instance;
    let a_set = a.gtid_executed().await.unwrap();
    let mut conn = a.root_conn().await.unwrap();
    let errant: String = conn
        .exec_first("SELECT GTID_SUBTRACT(?, ?)", (c_set.to_string(), a_set.to_string()))
        .await
        .unwrap()
        .unwrap();
    let errant: GtidSet = errant.replace('\n', "").parse().unwrap();
    let c_uuid: bloodraven_gtid::Uuid = c.server_uuid().await.unwrap().parse().unwrap();
    assert_eq!(errant.to_string(), format!("{c_uuid}:1"));
    assert_eq!(errant, c_set.difference(&a_set), "the server and bloodraven-gtid agree");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binlogs_parse_and_their_coverage_equals_gtid_executed() {
    let group = group().await;
    insert(&group, 1, 30).await;
    group.wait_caught_up(&["b", "c"], WAIT).await.unwrap();
    for site in group.sites() {
        let i = &site.instance;
        i.flush_binary_logs().await.unwrap();
        let executed = i.gtid_executed().await.unwrap();
        let mut covered = GtidSet::new();
        for name in i.binary_logs().await.unwrap() {
            let bytes = std::fs::read(i.data_dir().join(&name)).unwrap();
            let summary = bloodraven_binlog::scan(&bytes);
            assert!(summary.problem.is_none(), "{}/{name}: {:?}", site.name, summary.problem);
            assert!(
                summary.coverage.is_complete(),
                "{}/{name}: {:?}",
                site.name,
                summary.coverage.incomplete
            );
            covered.union_with(&summary.coverage.gtids);
        }
        assert!(!executed.is_empty());
        assert_eq!(covered, executed, "{}: binlog coverage vs @@gtid_executed", site.name);
    }
}
