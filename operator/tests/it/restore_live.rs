//! The reclone queue in the live lab (lab API server, lab kubelet running real MySQL 9.7, the
//! operator in this process; `source scripts/provision.sh`): a Held queue stops the queued
//! sites' receivers and keeps the primary's new transactions from them; removing the queue
//! resumes replication; setting it Draining by hand (the console's decision) reclones every
//! queued site from the primary with CLONE and drains the queue.

use std::time::{Duration, Instant};

use bloodraven_crd::MysqlFailoverGroup;
use kube::api::{Api, Patch, PatchParams};

use super::harness::Operator;
use super::live_lab::{LiveLab, LiveLabOptions, bounded_wait_for, read_site, sql};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
/// Generous: CI shares 2 cores with other real servers.
const BOUND: Duration = Duration::from_secs(120);

bounded_wait_for!(BOUND, Duration::from_millis(500));

async fn patch_queue(groups: &Api<MysqlFailoverGroup>, queue: serde_json::Value) {
    let body = serde_json::json!({ "status": { "restoreReclones": queue } });
    groups.patch_status(GROUP, &PatchParams::default(), &Patch::Merge(body)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_queue_holds_removal_resumes_and_draining_reclones_every_peer() {
    let live = LiveLab::start(LiveLabOptions::sites(NAMESPACE)).await;
    let Operator { context: _context, controller } = live.operator("test");
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(live.client.clone(), NAMESPACE);
    let addr = |site: &str| live.site_addr(GROUP, site);

    // Converged: a primary, both followers replicating it.
    let primary = wait_for("the group to converge", || async {
        let group = groups.get(GROUP).await.ok()?;
        let status = group.status?;
        let active = status.active_site?;
        let all = status
            .sites
            .iter()
            .filter(|site| site.name != active)
            .all(|site| site.replicating == Some(true));
        all.then_some(active)
    })
    .await;
    let peers: Vec<String> =
        ["iad", "pdx", "fra"].iter().filter(|s| **s != primary).map(|s| (*s).to_owned()).collect();
    let p = addr(&primary);
    sql(&p, "CREATE TABLE app.restored (id INT PRIMARY KEY, note VARCHAR(40))").await;

    // Held: every queued receiver stopped by the manager, nothing new reaches them.
    patch_queue(
        &groups,
        serde_json::json!({ "phase": "Held", "runID": "drill-1", "pending": peers }),
    )
    .await;
    for peer in &peers {
        let a = addr(peer);
        wait_for(&format!("{peer}'s receiver held stopped"), || async {
            let (_, io) = read_site(&a).await?;
            (!io).then_some(())
        })
        .await;
    }
    sql(&p, "INSERT INTO app.restored VALUES (1, 'after the hold')").await;
    let (primary_set, _) = read_site(&p).await.unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    for peer in &peers {
        let (set, io) = read_site(&addr(peer)).await.unwrap();
        assert!(!io, "{peer}: the hold keeps its receiver stopped");
        assert!(!primary_set.is_subset(&set), "{peer} received nothing after the hold");
    }

    // Removing the queue resumes replication.
    patch_queue(&groups, serde_json::Value::Null).await;
    for peer in &peers {
        let a = addr(peer);
        let wanted = primary_set.clone();
        wait_for(&format!("{peer} replicating again after the queue's removal"), || {
            let a = a.clone();
            let wanted = wanted.clone();
            async move {
                let (set, io) = read_site(&a).await?;
                (io && wanted.is_subset(&set)).then_some(())
            }
        })
        .await;
    }

    // Held again, new transactions the peers miss; then Draining by hand: every peer is
    // recloned from the primary and the queue drains.
    patch_queue(
        &groups,
        serde_json::json!({ "phase": "Held", "runID": "drill-2", "pending": peers }),
    )
    .await;
    for peer in &peers {
        let a = addr(peer);
        wait_for(&format!("{peer}'s receiver held stopped again"), || async {
            let (_, io) = read_site(&a).await?;
            (!io).then_some(())
        })
        .await;
    }
    sql(&p, "INSERT INTO app.restored VALUES (2, 'only the primary has it')").await;
    let started = Instant::now();
    patch_queue(&groups, serde_json::json!({ "phase": "Draining" })).await;
    wait_for("the queue to drain (every peer recloned)", || async {
        let group = groups.get(GROUP).await.ok()?;
        group.status?.restore_reclones.is_none().then_some(())
    })
    .await;
    let drained = started.elapsed();
    let (primary_set, _) = read_site(&p).await.unwrap();
    for peer in &peers {
        let a = addr(peer);
        let wanted = primary_set.clone();
        wait_for(&format!("{peer} holding the primary's set and replicating"), || {
            let a = a.clone();
            let wanted = wanted.clone();
            async move {
                let (set, io) = read_site(&a).await?;
                (io && set == wanted).then_some(())
            }
        })
        .await;
    }
    tracing::warn!("drill: two peers recloned and the queue drained in {drained:?}");
    controller.abort();
}
