//! Self-fencing drills with the real operator (issue 18): the live lab runs the sidecar beside
//! every real mysqld (MySQL 9.7, `source scripts/provision.sh`; the binary from `cargo build -p
//! bloodraven-sidecar`), the operator in-process with its HTTP server, and the fault proxy on
//! every link — the operator's and the followers' link to each server (`operator:<s>`), each
//! sidecar's link to the operator (`sidecar:<s>->operator`) and to each peer
//! (`sidecar:<s>-><p>`), the application's link to each site (`app:<s>`).
//!
//! Scaled timings: `leaseTimeout` 4 s, `peerCheckInterval` 500 ms, the operator polling every
//! 1 s with `failureThreshold` 3.
//!
//! "Cut from the operator" means the sidecar's link to the operator's HTTP server; in the two
//! drills where the primary must stay writable the operator still reaches MySQL (otherwise it
//! fails over, and the relayed news of that fences the old primary — the sidecar's own drill
//! `a_reader_peers_relay_prevents_the_fence_and_its_news_of_a_failover_fences` covers that).

#![allow(
    clippy::print_stdout,
    reason = "the drill reports the writes acknowledged between cut and fence (--no-capture)"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::duration::Duration as SpecDuration;
use bloodraven_crd::group::SidecarSpec;
use bloodraven_drill::live::{LiveLab, LiveOptions};
use bloodraven_kubelet::SidecarConfig;
use bloodraven_sites::accounts::{self, APPLICATION, OPERATOR};
use bloodraven_sites::ledger::{Ledger, verify};
use bloodraven_sites::proxy::Fault;
use bloodraven_sites::workload::{Workload, WorkloadConfig, read_site_keys};
use mysql_async::prelude::Queryable as _;
use serde_json::Value;

use crate::sidecar::{InProcessWithHttp, wait_for};

/// The group's `leaseTimeout`.
const LEASE: Duration = Duration::from_secs(4);
/// Three leases: long enough that a lease-only fence would have fired.
const THREE_LEASES: Duration = Duration::from_secs(12);
const WAIT: Duration = Duration::from_secs(90);
/// The whole drill, lab start included.
const DRILL: Duration = Duration::from_secs(360);

fn group() -> MysqlFailoverGroup {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("drills/manifests/operator-three-sites.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut group: MysqlFailoverGroup = serde_norway::from_str(&text).unwrap();
    group.spec.sidecar = Some(SidecarSpec {
        image: None,
        lease_timeout: Some(SpecDuration::new("4s")),
        peer_check_interval: Some(SpecDuration::new("500ms")),
    });
    group
}

/// The live lab with sidecars, the operator in-process, and the group Ready with its active
/// site's sidecar released and writable.
struct Drill {
    live: LiveLab,
    /// The primary (the operator's active site).
    primary: String,
    /// The other PrimaryCandidate.
    candidate: String,
    /// The DisasterRecovery site (a reader).
    reader: String,
    /// The fences the primary's sidecar had sent when the drill began (the startup net may
    /// have fenced the booting server before the operator named it).
    fences_before: usize,
}

impl Drill {
    async fn start() -> Self {
        let _ = tracing_subscriber::fmt().with_test_writer().try_init();
        let binary = SidecarConfig::locate()
            .expect("the sidecar binary: run `cargo build -p bloodraven-sidecar` first");
        let live = LiveLab::start_with(
            &group(),
            Some(Arc::new(InProcessWithHttp)),
            LiveOptions { sidecar: Some(binary), ..LiveOptions::default() },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        let primary = wait_for("the group Ready with an active site", WAIT, async || {
            let group = live.group_object()?;
            let ready = group["status"]["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            ready.then(|| group["status"]["activeSite"].as_str().map(str::to_owned)).flatten()
        })
        .await;
        let candidate = ["iad", "pdx"].into_iter().find(|s| *s != primary).unwrap().to_owned();
        let mut drill =
            Self { live, primary, candidate, reader: "fra".to_owned(), fences_before: 0 };
        let fences = wait_for("the primary's sidecar released and writable", WAIT, async || {
            let status = drill.fence_status(&drill.primary).await?;
            let released = status["startup"] == "Released" && status["server"] == "Writable";
            released.then(|| status["fences"].as_array().map_or(0, Vec::len))
        })
        .await;
        drill.fences_before = fences;
        drill
    }

    /// `site`'s sidecar `/fence/status` (direct, not through a drill link).
    async fn fence_status(&self, site: &str) -> Option<Value> {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let service =
            bloodraven_workloads::SiteNames::new(self.live.group_name(), site).internal_service;
        let addr = self.live.resolver().ok()?.upstream(self.live.namespace(), &service, 8080)?;
        let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        stream.write_all(b"GET /fence/status HTTP/1.0\r\n\r\n").await.ok()?;
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut answer))
            .await
            .ok()?
            .ok()?;
        let (_, body) = answer.split_once("\r\n\r\n")?;
        serde_json::from_str(body).ok()
    }

    /// `@@super_read_only` of `site`'s server, read directly.
    async fn super_read_only(&self, site: &str) -> bool {
        let addr = self.live.mysql_addr(site).unwrap();
        let mut conn = mysql_async::Conn::new(accounts::opts(&OPERATOR, addr, None)).await.unwrap();
        let on: i64 = conn.query_first("SELECT @@global.super_read_only").await.unwrap().unwrap();
        let _ = conn.disconnect().await;
        on == 1
    }

    fn cut(&self, link: &str, fault: Fault) {
        self.live
            .drill_link(link)
            .unwrap_or_else(|e| panic!("link {link}: {e}"))
            .set(fault)
            .unwrap_or_else(|e| panic!("link {link}: {e}"));
    }

    /// The application's workload on the primary's client Service (it keeps reaching it).
    fn workload(&self) -> Workload {
        let app = self.live.drill_link(&format!("app:{}", self.primary)).unwrap();
        let mut config = WorkloadConfig::new(app.addr());
        config.rate_per_sec = 100;
        Workload::start(config)
    }

    /// Watches the primary for `period`: its sidecar sends no fence, its server stays writable,
    /// the operator keeps it active. Returns the last `/fence/status`.
    async fn stays_writable(&self, period: Duration) -> Value {
        let started = Instant::now();
        let mut last = Value::Null;
        while started.elapsed() < period {
            if let Some(status) = self.fence_status(&self.primary).await {
                last = status;
            }
            assert_eq!(
                last["fences"].as_array().map(Vec::len),
                Some(self.fences_before),
                "{} fenced itself: {last:#}",
                self.primary
            );
            assert!(!self.super_read_only(&self.primary).await, "{} is fenced", self.primary);
            let active = self.live.group_object().map(|g| g["status"]["activeSite"].clone());
            assert_eq!(
                active,
                Some(Value::from(self.primary.as_str())),
                "the operator failed over"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        last
    }
}

async fn within(drill: impl Future<Output = ()>) {
    tokio::time::timeout(DRILL, drill)
        .await
        .unwrap_or_else(|_| panic!("the drill did not finish within {DRILL:?}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_a_primary_cut_from_the_operator_but_reaching_one_peer_stays_writable_and_loses_nothing()
 {
    within(async {
        let drill = Drill::start().await;
        let workload = drill.workload();
        workload.wait_acknowledged(20, WAIT).await.unwrap();
        let primary = &drill.primary;
        drill.cut(&format!("sidecar:{primary}->operator"), Fault::Blackhole);
        drill.cut(&format!("sidecar:{primary}->{}", drill.reader), Fault::Refuse);
        let acknowledged = workload.acknowledged();
        let last = drill.stays_writable(THREE_LEASES).await;
        // The candidate answers it.
        assert!(last["peers"].as_array().is_some_and(|p| p.iter().any(|p| !p["lastOk"].is_null())));
        workload.wait_acknowledged(acknowledged + 50, WAIT).await.unwrap();
        let ledger = workload.stop().await.unwrap();
        let keys =
            read_site_keys(drill.live.mysql_addr(primary).unwrap(), &APPLICATION).await.unwrap();
        let report = verify(&ledger, &keys);
        assert!(report.rpo_zero(), "lost: {:?}", report.lost);
        assert!(report.outage.is_none(), "writes were refused: {:?}", report.failures);
        assert!(report.phantom.is_empty(), "phantom: {:?}", report.phantom);
        drill.live.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_a_primary_cut_from_the_operator_and_every_peer_fences_itself_after_the_lease() {
    within(async {
        let drill = Drill::start().await;
        let primary = drill.primary.clone();
        let workload = drill.workload();
        workload.wait_acknowledged(20, WAIT).await.unwrap();
        // The partition: the operator and the followers lose the server, its sidecar loses the
        // operator and both peers; the application still reaches it.
        let cut = SystemTime::now();
        drill.cut(&format!("operator:{primary}"), Fault::Blackhole);
        drill.cut(&format!("sidecar:{primary}->operator"), Fault::Blackhole);
        drill.cut(&format!("sidecar:{primary}->{}", drill.candidate), Fault::Blackhole);
        drill.cut(&format!("sidecar:{primary}->{}", drill.reader), Fault::Blackhole);
        let before = drill.fences_before;
        let status = wait_for("the primary's self-fence", WAIT, async || {
            let status = drill.fence_status(&primary).await?;
            status["fences"].as_array().is_some_and(|f| f.len() > before).then_some(status)
        })
        .await;
        let fence = &status["fences"][before];
        assert_eq!(fence["reason"], "LeaseExpired", "{status:#}");
        let at: jiff::Timestamp = fence["at"].as_str().unwrap().parse().unwrap();
        let fenced = SystemTime::from(at);
        assert!(drill.super_read_only(&primary).await, "super_read_only reads OFF after the fence");
        let delay = fenced.duration_since(cut).unwrap_or_default();
        assert!(delay >= LEASE - Duration::from_millis(600), "fenced {delay:?} after the cut");
        // The application's writes are refused from now on.
        let failed = workload.failed();
        workload.wait_failed(failed + 10, WAIT).await.unwrap();
        // The operator promoted the candidate meanwhile.
        let promoted =
            wait_for("the operator's failover away from the primary", WAIT, async || {
                let group = drill.live.group_object()?;
                let site = group["status"]["activeSite"].as_str()?;
                (site != primary).then(|| site.to_owned())
            })
            .await;
        let ledger = workload.stop().await.unwrap();

        // No write that started after the fence was acknowledged.
        let after: Vec<_> = ledger.acknowledged().filter(|a| a.started_at > fenced).collect();
        assert!(after.is_empty(), "acknowledged after the fence: {after:?}");
        // Everything acknowledged is on the old primary; later writes were refused.
        let old_keys =
            read_site_keys(drill.live.mysql_addr(&primary).unwrap(), &APPLICATION).await.unwrap();
        let report = verify(&ledger, &old_keys);
        assert!(report.rpo_zero(), "the old primary lost: {:?}", report.lost);
        assert!(report.outage.is_some_and(|w| w.rejected >= 10), "{:?}", report.failures);

        // The window the topology document accepts: writes the old primary acknowledged that
        // the promoted site lacks. Reported with their GTIDs, never silently.
        let new_keys =
            read_site_keys(drill.live.mysql_addr(&promoted).unwrap(), &APPLICATION).await.unwrap();
        let promoted_report = verify(&ledger, &new_keys);
        let lost = &promoted_report.lost;
        let mut window = Ledger::new("between cut and fence");
        let mut before_cut = Ledger::new("before the cut");
        let lost_keys: std::collections::BTreeSet<u64> = lost.iter().map(|l| l.key).collect();
        for attempt in ledger.acknowledged().filter(|a| lost_keys.contains(&a.key)) {
            if attempt.ended_at >= cut {
                window.record(attempt.clone());
            } else {
                before_cut.record(attempt.clone());
            }
        }
        let in_window =
            ledger.acknowledged().filter(|a| a.ended_at >= cut && a.started_at <= fenced).count();
        println!(
            "{primary} fenced itself {delay:?} after the cut (lease {LEASE:?}); it acknowledged \
             {in_window} writes between cut and fence; {promoted} (promoted) lacks {} of them: \
             {}; and {} acknowledged before the cut (replication lag at the cut): {}",
            window.attempts.len(),
            window.acknowledged_gtids(),
            before_cut.attempts.len(),
            before_cut.acknowledged_gtids(),
        );
        // The report is the whole difference: every write the promoted site lacks was
        // acknowledged before the fence, and is listed above.
        assert_eq!(window.attempts.len() + before_cut.attempts.len(), lost.len());
        assert!(lost.iter().all(|l| l.acknowledged_at <= fenced), "{lost:?}");
        assert!(in_window > 0, "the workload wrote at 100/s during the lease");
        assert!(promoted_report.phantom.is_empty(), "phantom: {:?}", promoted_report.phantom);
        drill.live.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_a_reader_peers_relayed_observation_prevents_the_lease_only_fence() {
    within(async {
        let drill = Drill::start().await;
        let primary = &drill.primary;
        drill.cut(&format!("sidecar:{primary}->operator"), Fault::Refuse);
        drill.cut(&format!("sidecar:{primary}->{}", drill.candidate), Fault::Blackhole);
        // Only the reader is reachable; it relays the operator's observation naming the primary.
        let last = drill.stays_writable(THREE_LEASES).await;
        assert_eq!(last["authority"]["activeSite"], primary.as_str(), "{last:#}");
        let via = drill.live.drill_link(&format!("sidecar:{primary}->{}", drill.reader)).unwrap();
        assert_eq!(last["authorityViaPeer"], via.addr().to_string(), "{last:#}");
        drill.live.stop().await;
    })
    .await;
}
