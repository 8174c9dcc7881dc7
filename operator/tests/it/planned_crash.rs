//! The planned-failover crash sweep (issue 13 acceptance): a planned failover iad → pdx under
//! a running workload, repeated with the operator killed at each named planned-failover crash
//! point (`operator.planned.*`) in turn. Every run must end with the document's outcome for
//! that point, with one writable site and RPO 0 (every acknowledged write is on the site that
//! ends writable).
//!
//! Each point runs its own lab API server, lab kubelet (three real MySQL 9.7 sites) and
//! operator (planned-failover timings / 10, but the phase deadlines a restart spans at the
//! document's values) in its own namespace. The armed
//! `bloodraven_crashpoint::hit_in` panics inside the group's manager task; the test then stops
//! that whole operator and starts a fresh one with empty memory, which finds the run from the
//! API server and MySQL only. Points run two at a time. Needs `source scripts/provision.sh`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_crashpoint::{CrashAt, Step};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::annotations::PLANNED_FAILOVER;
use bloodraven_crd::group::SiteState;
use bloodraven_kubelet::{Kubelet, KubeletConfig};
use bloodraven_operator::manager::Tuning;
use bloodraven_operator::planned::Timings;
use bloodraven_sites::accounts::APPLICATION;
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::{Template, ensure_template_async};
use bloodraven_sites::workload::{self, Workload, WorkloadConfig};
use bloodraven_workloads::{Resolver, ports, primary_service_name};
use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};

use super::harness::{self, Operator, start_lab};

const GROUP: &str = "orders";
/// Generous: CI shares 2 cores with other real servers (six mysqld run during the sweep).
const BOUND: Duration = Duration::from_secs(240);

/// Every named planned-failover crash point, in the order a run reaches them, and the outcome
/// the document gives a run whose operator restarts there (`Succeeded`, or `Failed/<outcome>`).
/// A restart never loses the run: the record is durable before each side effect, the new
/// process confirms live what the last effect did and carries on.
const POINTS: &[(Step, &str)] = &[
    (Step::OperatorPlannedAfterFenceRecord, "Succeeded"),
    (Step::OperatorPlannedAfterFence, "Succeeded"),
    (Step::OperatorPlannedAfterPromotionRecord, "Succeeded"),
    (Step::OperatorPlannedAfterPromote, "Succeeded"),
    (Step::OperatorPlannedBeforePublish, "Succeeded"),
    (Step::OperatorPlannedAfterPublish, "Succeeded"),
];

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    harness::wait_for(what, BOUND, Duration::from_millis(100), check).await
}

/// Starts an operator over `namespace` as `instance`.
fn start_operator(
    client: &kube::Client,
    kubelet: &Kubelet,
    namespace: &str,
    instance: &str,
) -> Operator {
    // The sweep proves what a restart keeps, not the phases' deadlines: those a restart spans
    // (stopping one operator, starting another, its first observation of three sites) keep
    // the document's values, so a busy machine cannot turn a slow restart into FenceFailed or
    // SourceLost. The rest stay scaled. The deadlines have drills and decision-core tests.
    let document = Timings::document();
    let planned = Timings {
        fence_deadline: document.fence_deadline,
        source_loss_window: document.source_loss_window,
        target_loss_window: document.target_loss_window,
        promotion_abort: document.promotion_abort,
        promotion_unconfirmed: document.promotion_unconfirmed,
        rollback_deadline: document.rollback_deadline,
        ..Timings::scaled(10)
    };
    let tuning = Tuning { poll_interval: Duration::from_secs(1), planned, ..Tuning::default() };
    Operator::start(client, Arc::new(kubelet.resolver()), tuning, Some(namespace), instance)
}

fn address(kubelet: &Kubelet, namespace: &str, service: &str) -> SocketAddr {
    let address = kubelet
        .resolver()
        .resolve(namespace, service, ports::MYSQL)
        .unwrap_or_else(|| panic!("{service} resolves"));
    format!("{}:{}", address.host, address.port).parse().unwrap()
}

/// iad the writable active site, every other site answering.
fn settled_on_iad(group: &MysqlFailoverGroup) -> bool {
    let Some(status) = group.status.as_ref() else { return false };
    status.active_site.as_deref() == Some("iad")
        && status.sites.len() == 3
        && status.sites.iter().all(|site| {
            if site.name == "iad" {
                site.state == Some(SiteState::Writable)
            } else {
                site.state == Some(SiteState::ReadOnly) && site.replicating == Some(true)
            }
        })
}

/// The run's end as `Succeeded` or `Failed/<outcome>/<reason>`, once it has one.
fn ended(group: &MysqlFailoverGroup) -> Option<String> {
    let block = group.status.as_ref()?.planned_failover.as_ref()?;
    let phase = block.phase.as_ref()?.as_str();
    match phase {
        "Succeeded" => Some(phase.to_owned()),
        "Failed" => {
            let result = block.result.as_ref()?;
            Some(format!(
                "Failed/{}/{}",
                result.outcome.as_ref().map_or("?", |o| o.as_str()),
                result.reason.as_ref().map_or("-", |r| r.as_str())
            ))
        }
        _ => None,
    }
}

/// What one point measured.
#[derive(Debug)]
struct Outcome {
    step: Step,
    ended: String,
    acknowledged: usize,
    whole: Duration,
}

async fn one_point(
    index: usize,
    (step, expected): (Step, &'static str),
    dist: MysqlDist,
    template: Template,
) -> Outcome {
    let started = Instant::now();
    let namespace = format!("planned-crash-{index}");
    let scope = format!("{namespace}/{GROUP}");
    let (lab, client) = start_lab(&namespace).await;
    let root = tempfile::Builder::new().prefix("brp-").tempdir_in("/tmp").expect("a short root");
    let hub = Arc::new(ProxyHub::current().expect("a tokio runtime"));
    let mut config = KubeletConfig::new(root.path());
    config.namespace = Some(namespace.clone());
    let kubelet = Kubelet::start(client.clone(), dist, template, hub.clone(), config)
        .await
        .expect("the kubelet");
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), &namespace);
    let operator = start_operator(&client, &kubelet, &namespace, "before-crash");

    wait_for(&format!("{step}: the group to settle on iad"), || async {
        settled_on_iad(&groups.get(GROUP).await.ok()?).then_some(())
    })
    .await;
    let primary = address(&kubelet, &namespace, &primary_service_name(GROUP));
    let writes = Workload::start(WorkloadConfig::new(primary));
    writes.wait_acknowledged(20, BOUND).await.expect("20 acknowledged writes before the request");

    bloodraven_crashpoint::arm(&scope, CrashAt { step, nth: 1 });
    let patch = serde_json::json!({"metadata": {"annotations": {PLANNED_FAILOVER: "pdx"}}});
    groups
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the planned-failover annotation");
    wait_for(&format!("the crash point {step} to fire"), || async {
        bloodraven_crashpoint::fired(&scope).map(|_| ())
    })
    .await;
    operator.stop().await;
    bloodraven_crashpoint::disarm(&scope);
    let operator = start_operator(&client, &kubelet, &namespace, "after-crash");

    let ended = wait_for(&format!("{step}: the run to end after the restart"), || async {
        ended(&groups.get(GROUP).await.ok()?)
    })
    .await;
    assert_eq!(ended, expected, "{step}: the run's end");

    // One writable site, the one the outcome names; writes resume there with RPO 0.
    let writer = if ended == "Succeeded" { "pdx" } else { "iad" };
    wait_for(&format!("{step}: {writer} the only writable site"), || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let writable: Vec<String> = status
            .sites
            .iter()
            .filter(|site| site.state == Some(SiteState::Writable))
            .map(|site| site.name.clone())
            .collect();
        (writable == [writer] && status.active_site.as_deref() == Some(writer)).then_some(())
    })
    .await;
    // A session the workload re-dialled before the -primary Service moved stays on the old
    // primary, refused: reset the link (as a pool drops a read-only server) until writes land.
    let before = writes.acknowledged();
    let link = hub
        .get(&bloodraven_kubelet::link_name(&namespace, &primary_service_name(GROUP), ports::MYSQL))
        .expect("the -primary link");
    let resumed = Instant::now();
    loop {
        link.reset();
        if writes.wait_acknowledged(before + 10, Duration::from_secs(10)).await.is_ok() {
            break;
        }
        assert!(
            resumed.elapsed() < BOUND,
            "{step}: writes did not resume on {writer} within {BOUND:?} (acknowledged {}, failed {})",
            writes.acknowledged(),
            writes.failed()
        );
    }
    let ledger = writes.stop().await.expect("the ledger");
    let writer_addr = address(&kubelet, &namespace, &format!("mysql-{GROUP}-{writer}-internal"));
    let report = workload::verify_at(&ledger, writer_addr, &APPLICATION).await.unwrap();
    assert!(report.phantom.is_empty(), "{step}: phantom rows {:?}", report.phantom);
    assert!(report.lost.is_empty(), "{step}: RPO 0, yet lost {:?}", report.lost);

    operator.stop().await;
    kubelet.shutdown().await;
    lab.stop().await.expect("the lab stops");
    Outcome { step, ended, acknowledged: report.acknowledged, whole: started.elapsed() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_failover_survives_an_operator_restart_at_every_planned_crash_point() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let template = ensure_template_async(&dist).await.expect("the template data directory");
    let started = Instant::now();
    let outcomes: Vec<Outcome> = futures::stream::iter(POINTS.iter().copied().enumerate())
        .map(|(index, point)| one_point(index, point, dist.clone(), template.clone()))
        .buffer_unordered(2)
        .collect()
        .await;
    for outcome in &outcomes {
        tracing::warn!(
            step = %outcome.step,
            ended = %outcome.ended,
            acknowledged = outcome.acknowledged,
            whole = ?outcome.whole,
            "planned crash point survived"
        );
    }
    tracing::warn!(points = outcomes.len(), elapsed = ?started.elapsed(), "planned crash sweep");
    assert_eq!(outcomes.len(), POINTS.len());
}

/// The sweep names every planned-failover crash point of the crashpoint crate.
#[test]
fn the_sweep_covers_every_planned_crash_point() {
    let planned: Vec<Step> = Step::ALL
        .iter()
        .copied()
        .filter(|step| step.name().starts_with("operator.planned."))
        .collect();
    let swept: Vec<Step> = POINTS.iter().map(|(step, _)| *step).collect();
    assert_eq!(swept, planned);
}
