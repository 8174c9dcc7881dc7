//! Self-fencing drills on a real MySQL 9.7 with the fault proxy (needs `source
//! scripts/provision.sh`): the built sidecar binary beside a real `mysqld`, its peers (sidecar
//! processes too) and a stand-in for the operator's `/active-site`, every sidecar link through
//! a proxy link the drill cuts. Scaled timings: lease 3 s, checks every 300 ms.

#![allow(
    clippy::print_stderr,
    clippy::unwrap_used,
    reason = "test harness helpers outside #[test] functions: a failed setup step is a failed test; the drill reports (stderr) the writes acknowledged in the window, never silently"
)]

mod harness;
mod kubelet;

use std::time::{Duration, SystemTime};

use bloodraven_sites::accounts::APPLICATION;
use bloodraven_sites::ledger::verify;
use bloodraven_sites::mysqld::Instance;
use bloodraven_sites::proxy::{Fault, Link, ProxyHub};
use bloodraven_sites::workload::{Workload, WorkloadConfig, read_site_keys};
use serde_json::Value;

use harness::{FakeOperator, Sidecar, SidecarSpec, mysqld};

/// Three lease periods: long enough that a lease-only fence would have fired.
const THREE_LEASES: Duration = Duration::from_secs(9);
const WAIT: Duration = Duration::from_secs(60);

/// The primary `iad` (writable mysqld), its sidecar, and two peers: `pdx` (a candidate) and
/// `fra` (a reader). Every link of iad's sidecar is a proxy link.
struct Drill {
    hub: ProxyHub,
    iad: Instance,
    operator: FakeOperator,
    sidecar: Sidecar,
    pdx: Sidecar,
    fra: Sidecar,
    to_operator: Link,
    to_pdx: Link,
    to_fra: Link,
    app: Link,
}

fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Drill {
    async fn start() -> Self {
        let hub = ProxyHub::current().unwrap();
        let iad = mysqld("iad", 101, &[]).await;
        let operator = FakeOperator::start(Some("iad")).await;
        let peer = |site: &'static str| SidecarSpec {
            site,
            operator: operator.addr().to_string(),
            peers: vec![],
            mysql_port: closed_port(),
        };
        let (pdx, fra) = tokio::join!(Sidecar::start(peer("pdx")), Sidecar::start(peer("fra")));
        let to_operator = hub.link("sidecar:iad->operator", operator.addr()).unwrap();
        let to_pdx = hub.link("sidecar:iad->pdx", pdx.addr).unwrap();
        let to_fra = hub.link("sidecar:iad->fra", fra.addr).unwrap();
        let app = hub.link("app:iad", iad.addr()).unwrap();
        let sidecar = Sidecar::start(SidecarSpec {
            site: "iad",
            operator: to_operator.addr().to_string(),
            peers: vec![to_pdx.addr().to_string(), to_fra.addr().to_string()],
            mysql_port: iad.port(),
        })
        .await;
        sidecar
            .wait_status("the startup net released and the server writable", WAIT, |s| {
                s["startup"] == "Released" && s["server"] == "Writable"
            })
            .await;
        Self { hub, iad, operator, sidecar, pdx, fra, to_operator, to_pdx, to_fra, app }
    }

    fn workload(&self) -> Workload {
        let mut config = WorkloadConfig::new(self.app.addr());
        config.rate_per_sec = 100;
        Workload::start(config)
    }

    /// Watches iad's sidecar for `period`: it must not fence and the server must stay writable.
    async fn stays_writable(&self, period: Duration) -> Value {
        let started = std::time::Instant::now();
        let mut last = Value::Null;
        while started.elapsed() < period {
            last = self.sidecar.status_json().await;
            assert_eq!(
                last["fences"].as_array().map(Vec::len),
                Some(0),
                "iad fenced itself: {last:#}\n{}",
                self.sidecar.log_tail()
            );
            assert!(!self.iad.super_read_only().await.unwrap(), "iad is fenced");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        last
    }
}

fn fence_time(status: &Value) -> SystemTime {
    let at: jiff::Timestamp = status["fences"][0]["at"].as_str().unwrap().parse().unwrap();
    SystemTime::from(at)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_cut_from_the_operator_but_reaching_one_peer_stays_writable_and_loses_nothing() {
    let drill = Drill::start().await;
    let workload = drill.workload();
    workload.wait_acknowledged(20, WAIT).await.unwrap();
    drill.to_operator.set(Fault::Blackhole).unwrap();
    drill.to_fra.set(Fault::Refuse).unwrap();
    let acknowledged = workload.acknowledged();
    drill.stays_writable(THREE_LEASES).await;
    workload.wait_acknowledged(acknowledged + 50, WAIT).await.unwrap();
    let ledger = workload.stop().await.unwrap();
    let keys = read_site_keys(drill.iad.addr(), &APPLICATION).await.unwrap();
    let report = verify(&ledger, &keys);
    assert!(report.rpo_zero(), "lost: {:?}", report.lost);
    assert!(report.outage.is_none(), "writes were refused: {:?}", report.failures);
    assert!(report.phantom.is_empty());
    drop(drill.hub);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_cut_from_the_operator_and_every_peer_fences_itself_after_the_lease() {
    let drill = Drill::start().await;
    let workload = drill.workload();
    workload.wait_acknowledged(20, WAIT).await.unwrap();
    let cut = SystemTime::now();
    drill.to_operator.set(Fault::Blackhole).unwrap();
    drill.to_pdx.set(Fault::Blackhole).unwrap();
    drill.to_fra.set(Fault::Refuse).unwrap();
    let status = drill
        .sidecar
        .wait_status("a self-fence", WAIT, |s| {
            s["fences"].as_array().is_some_and(|fences| !fences.is_empty())
        })
        .await;
    assert_eq!(status["fences"][0]["reason"], "LeaseExpired", "{status:#}");
    let fenced = fence_time(&status);
    assert!(drill.iad.super_read_only().await.unwrap(), "super_read_only reads OFF");
    // The application still reaches the server: its writes are now refused.
    let failed = workload.failed();
    workload.wait_failed(failed + 10, WAIT).await.unwrap();
    let ledger = workload.stop().await.unwrap();

    // No write was acknowledged after the fence: none that started after it completed.
    let after: Vec<_> =
        ledger.acknowledged().filter(|attempt| attempt.started_at > fenced).collect();
    assert!(after.is_empty(), "acknowledged after the fence: {after:?}");
    // The writes acknowledged between the cut and the fence: the window the topology document
    // accepts (a promoted site may lack them). Reported, never silent.
    let window: Vec<_> = ledger
        .acknowledged()
        .filter(|attempt| attempt.ended_at >= cut && attempt.started_at <= fenced)
        .collect();
    let mut between = bloodraven_sites::ledger::Ledger::new("window");
    for attempt in &window {
        between.record((*attempt).clone());
    }
    let gtids = between.acknowledged_gtids();
    let delay = fenced.duration_since(cut).unwrap_or_default();
    eprintln!(
        "fence {delay:?} after the cut (lease 3 s, checks every 300 ms); {} writes acknowledged \
         between cut and fence: {gtids}",
        window.len(),
    );
    assert!(!window.is_empty(), "the workload wrote at 100/s during the lease");
    assert!(delay >= Duration::from_secs(2), "fenced {delay:?} after the cut, before the lease");
    // Everything acknowledged is on the server; later writes were refused as read-only.
    let keys = read_site_keys(drill.iad.addr(), &APPLICATION).await.unwrap();
    let report = verify(&ledger, &keys);
    assert!(report.rpo_zero(), "lost: {:?}", report.lost);
    assert!(report.outage.is_some_and(|w| w.rejected >= 10), "{:?}", report.failures);
    assert!(report.phantom.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_peers_relay_prevents_the_fence_and_its_news_of_a_failover_fences() {
    let drill = Drill::start().await;
    drill.to_operator.set(Fault::Refuse).unwrap();
    drill.to_pdx.set(Fault::Blackhole).unwrap();
    // Only the reader `fra` is reachable; it relays the operator's observation naming iad.
    let last = drill.stays_writable(THREE_LEASES).await;
    assert_eq!(last["authority"]["activeSite"], "iad", "{last:#}");
    assert_eq!(last["authorityViaPeer"], drill.to_fra.addr().to_string(), "{last:#}");

    // The operator fails over to pdx (it cannot reach iad): the reader relays that, and the
    // stale primary fences itself although a peer is reachable.
    drill.operator.name(Some("pdx"));
    let status = drill
        .sidecar
        .wait_status("a fence on the relayed failover", WAIT, |s| {
            s["fences"].as_array().is_some_and(|fences| !fences.is_empty())
        })
        .await;
    assert_eq!(status["fences"][0]["reason"], "AuthorityNamesOther", "{status:#}");
    assert_eq!(status["fences"][0]["activeSite"], "pdx", "{status:#}");
    assert!(drill.iad.super_read_only().await.unwrap());
    let _ = (&drill.pdx, &drill.fra);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_booting_server_stays_fenced_until_the_operator_names_it() {
    let iad = mysqld("iad", 101, &[("read_only", "ON")]).await;
    assert!(!iad.super_read_only().await.unwrap(), "the drill starts with read_only alone");
    let operator = FakeOperator::start(None).await;
    let spec = || SidecarSpec {
        site: "iad",
        operator: operator.addr().to_string(),
        peers: vec![],
        mysql_port: iad.port(),
    };
    let mut sidecar = Sidecar::start(spec()).await;
    let status = sidecar
        .wait_status("the startup fence", WAIT, |s| {
            s["fences"].as_array().is_some_and(|fences| !fences.is_empty())
        })
        .await;
    assert_eq!(status["fences"][0]["reason"], "StartupUnconfirmed", "{status:#}");
    assert!(iad.super_read_only().await.unwrap());

    // The operator names iad and lifts the fence (as its promotion does): it stays writable.
    operator.name(Some("iad"));
    sidecar.wait_status("the startup net released", WAIT, |s| s["startup"] == "Released").await;
    iad.execute(&["SET GLOBAL super_read_only = OFF", "SET GLOBAL read_only = OFF"]).await.unwrap();
    sidecar.wait_status("the server writable", WAIT, |s| s["server"] == "Writable").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!iad.super_read_only().await.unwrap());
    assert_eq!(sidecar.status_json().await["fences"].as_array().map(Vec::len), Some(1));

    // The sidecar is SIGKILLed and restarts while the operator names another site: the
    // writable server comes back fenced.
    sidecar.kill().await;
    operator.name(Some("pdx"));
    let sidecar = Sidecar::start(spec()).await;
    let status = sidecar
        .wait_status("the startup fence after a restart", WAIT, |s| {
            s["fences"].as_array().is_some_and(|fences| !fences.is_empty())
        })
        .await;
    assert_eq!(status["fences"][0]["reason"], "StartupUnconfirmed", "{status:#}");
    assert!(iad.super_read_only().await.unwrap());
}
