//! Emergency failover applies what the promoted candidate had already received (real MySQL 9.7).
//!
//! The candidate's applier is held back (`FLUSH TABLES WITH READ LOCK` in a session of the
//! test: the applier waits at commit, `Replica_SQL_Running` stays `Yes`, so the operator sees a
//! converged follower) while its receiver keeps writing the primary's transactions to the relay
//! log. The primary dies. Once the operator has recorded its failover intent the lock is let go.
//! After the failover the promoted site has executed every transaction it had received, and the
//! commit ledger shows no acknowledged write lost that a replica had received.
//!
//! Needs `source scripts/provision.sh` (BLOODRAVEN_MYSQL*) and fails naming it otherwise.

use std::sync::Arc;
use std::time::Duration;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::SiteState;
use bloodraven_gtid::GtidSet;
use bloodraven_sites::accounts::{self, APPLICATION};
use bloodraven_sites::proxy::Fault;
use bloodraven_sites::workload::{self, Workload, WorkloadConfig};
use bloodraven_workloads::{ports, primary_service_name};
use kube::api::Api;
use mysql_async::prelude::Queryable;

use super::live_lab::{LiveLab, LiveLabOptions, bounded_wait_for};

const NAMESPACE: &str = "relay";
/// The example group's name (the lab renames only its namespace).
const GROUP: &str = "orders";
/// Generous: CI shares 2 cores with other real servers.
const BOUND: Duration = Duration::from_secs(240);
/// Transactions the candidate holds received but not applied when the primary dies.
const BACKLOG: u128 = 25;

bounded_wait_for!(BOUND, Duration::from_millis(100));

fn gtid(text: &str) -> GtidSet {
    text.chars().filter(|c| !c.is_whitespace()).collect::<String>().parse().unwrap()
}

/// A site's received (relay log, less a transaction the receiver is in the middle of) and
/// executed sets.
async fn received_and_executed(conn: &mut mysql_async::Conn) -> (GtidSet, GtidSet) {
    let row: Option<(Option<String>, Option<String>)> = conn
        .query_first(
            "SELECT RECEIVED_TRANSACTION_SET, QUEUEING_TRANSACTION \
             FROM performance_schema.replication_connection_status WHERE CHANNEL_NAME = ''",
        )
        .await
        .unwrap();
    let (received, queueing) = row.unwrap_or_default();
    let received =
        gtid(&received.unwrap_or_default()).difference(&gtid(&queueing.unwrap_or_default()));
    let executed: Option<String> = conn.query_first("SELECT @@global.gtid_executed").await.unwrap();
    (received, gtid(&executed.unwrap_or_default()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emergency_failover_applies_what_the_candidate_had_received() {
    let live = LiveLab::start(LiveLabOptions::sites(NAMESPACE)).await;
    let (kubelet, hub) = (&live.kubelet, &live.hub);
    let operator = live.operator("test");
    let internal_address =
        |site: &str| -> std::net::SocketAddr { live.site_addr(GROUP, site).parse().unwrap() };
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(live.client.clone(), NAMESPACE);

    let first = wait_for("the group to converge (an active site, writable)", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let active = status.active_site.clone()?;
        let replicating = status
            .sites
            .iter()
            .filter(|site| site.name != active)
            .all(|site| site.replicating == Some(true));
        (status.site(&active)?.state == Some(SiteState::Writable) && replicating).then_some(active)
    })
    .await;
    let candidate = if first == "iad" { "pdx" } else { "iad" };

    let primary_addr =
        live.service_addr(&primary_service_name(GROUP), ports::MYSQL).parse().unwrap();
    let writes = Workload::start(WorkloadConfig::new(primary_addr));
    writes.wait_acknowledged(30, BOUND).await.expect("30 acknowledged writes");

    // Hold the candidate's applier: it waits at commit for the global read lock while the
    // receiver goes on writing the relay log.
    let candidate_addr = internal_address(candidate);
    let mut lock =
        mysql_async::Conn::new(accounts::opts(&accounts::OPERATOR, candidate_addr, None))
            .await
            .unwrap();
    lock.query_drop("FLUSH TABLES WITH READ LOCK").await.unwrap();
    let lock = Arc::new(tokio::sync::Mutex::new(lock));
    wait_for("the candidate to hold a relay backlog", || {
        let lock = lock.clone();
        async move {
            let (received, executed) = received_and_executed(&mut *lock.lock().await).await;
            (received.difference(&executed).count() >= BACKLOG).then_some(())
        }
    })
    .await;

    // The primary dies: its internal link refuses and its mysqld is SIGKILLed.
    let internal = bloodraven_kubelet::link_name(
        NAMESPACE,
        &format!("mysql-{GROUP}-{first}-internal"),
        ports::MYSQL,
    );
    hub.get(&internal).expect("the internal link").set(Fault::Refuse).unwrap();
    let pod = kubelet.pod(NAMESPACE, &format!("mysql-{GROUP}-{first}")).expect("the primary's pod");
    let pid = pod.pid.expect("a running mysqld");
    let status = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    assert!(status.unwrap().success(), "kill -KILL {pid}");

    // The operator records its intent before it touches the candidate: let the applier go then.
    wait_for("the failover intent naming the candidate", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        (status.last_failover?.target.as_deref() == Some(candidate)).then_some(())
    })
    .await;
    let (received, executed_at_intent) = received_and_executed(&mut *lock.lock().await).await;
    let fra_addr = internal_address("fra");
    let mut fra =
        mysql_async::Conn::new(accounts::opts(&accounts::OPERATOR, fra_addr, None)).await.unwrap();
    let (fra_received, fra_executed) = received_and_executed(&mut fra).await;
    let _ = fra.disconnect().await;
    let backlog = received.difference(&executed_at_intent);
    tracing::warn!(%received, %backlog, "the candidate's relay backlog when the intent was recorded");
    assert!(backlog.count() >= BACKLOG, "still a relay backlog at the intent: {backlog}");
    {
        let mut lock = lock.lock().await;
        lock.query_drop("UNLOCK TABLES").await.unwrap();
    }

    wait_for("the candidate promoted and recorded active", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let promoted = status.last_failover.as_ref()?.promotion_gtid_executed.clone()?;
        (status.active_site.as_deref() == Some(candidate)
            && status.site(candidate)?.state == Some(SiteState::Writable))
        .then_some(promoted)
    })
    .await;
    let (_, executed) = received_and_executed(&mut *lock.lock().await).await;
    let lacking = received.difference(&executed);
    assert!(
        lacking.is_empty(),
        "the promoted site executed every transaction it had received; it lacks {lacking}"
    );
    let status = groups.get(GROUP).await.unwrap().status.unwrap();
    let promoted = gtid(&status.last_failover.unwrap().promotion_gtid_executed.unwrap());
    assert!(promoted.is_superset(&received), "promotionGtidExecuted {promoted} ⊇ {received}");

    // Writes resume on the new primary (see `live.rs` for why the link is reset).
    let before = writes.acknowledged();
    hub.get(&bloodraven_kubelet::link_name(NAMESPACE, &primary_service_name(GROUP), ports::MYSQL))
        .expect("the -primary link")
        .reset();
    writes.wait_acknowledged(before + 20, BOUND).await.expect("writes resume on the new primary");
    let ledger = writes.stop().await.expect("the workload's ledger");
    let report = workload::verify_at(&ledger, candidate_addr, &APPLICATION).await.unwrap();
    let lost = report.lost_gtids();
    tracing::warn!(
        acknowledged = report.acknowledged, present = report.present, %lost,
        "ledger after the failover"
    );
    assert!(report.phantom.is_empty(), "no row the workload never wrote: {:?}", report.phantom);
    assert_eq!(report.present + report.lost.len(), report.acknowledged, "present + lost");
    let had = received.union(&executed_at_intent);
    let dropped = lost.intersection(&had);
    assert!(
        dropped.is_empty(),
        "acknowledged writes the candidate had received were lost: {dropped}"
    );
    let fra_had = fra_received.union(&fra_executed);
    let dropped = lost.intersection(&fra_had);
    assert!(dropped.is_empty(), "acknowledged writes fra had received were lost: {dropped}");

    if let Ok(lock) = Arc::try_unwrap(lock) {
        let _ = lock.into_inner().disconnect().await;
    }
    operator.stop().await;
    live.stop().await;
}
