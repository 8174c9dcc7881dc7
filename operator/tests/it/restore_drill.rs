//! The in-place restore drill in the live lab (lab API server, lab kubelet running real MySQL
//! 9.7 and batch Jobs with the `bloodraven-sidecar` binary, the operator in this process;
//! `source scripts/provision.sh` and `cargo build -p bloodraven-sidecar` first).
//!
//! A backup to a PVC-layout claim by the operator's MysqlBackup controller; more writes after it and an application writing while the
//! restore starts; `spec.restoreInPlace` → the offline fence, every peer's receiver stopped, the
//! restore Job (`bloodraven-sidecar restore --in-place`), Succeeded, every peer recloned by
//! CLONE, the queue drained: every site holds the backup's `gtid_executed` and its table
//! checksums. Then a restore whose Job fails after its DROP (a chunk damaged in place, so the
//! artifact check passes and the load fails) puts the queue Held, the peers keep their data;
//! setting Draining by hand reclones them from the primary.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::group::{RestoreInPlacePhase, RestoreReclonesPhase};
use bloodraven_gtid::GtidSet;
use bloodraven_sites::accounts::APPLICATION;
use kube::api::{Api, Patch, PatchParams, PostParams};
use mysql_async::prelude::Queryable;

use super::live_lab::{
    LiveLab, LiveLabOptions, bounded_wait_for, checksums, conn, conn_as, read_site, sql,
};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
const BACKUP: &str = "nightly-1";
/// Generous: CI shares 2 cores with other real servers, and a step here may include a CLONE.
const BOUND: Duration = Duration::from_secs(300);

bounded_wait_for!(BOUND, Duration::from_millis(500));

async fn restore_in_place(groups: &Api<MysqlFailoverGroup>, confirm: &str) {
    let body = serde_json::json!({ "spec": { "restoreInPlace": {
        "confirm": confirm,
        "source": { "backupRef": { "name": BACKUP } },
    }}});
    groups.patch(GROUP, &PatchParams::default(), &Patch::Merge(body)).await.unwrap();
}

async fn phase(groups: &Api<MysqlFailoverGroup>) -> Option<RestoreInPlacePhase> {
    groups.get(GROUP).await.ok()?.status?.restore_in_place?.phase
}

/// The lab, its kubelet (sites and Jobs), the operator, the group converged, the backup
/// profile on a claim and a backup of the primary taken into it.
struct Drill {
    live: LiveLab,
    groups: Api<MysqlFailoverGroup>,
    controller: tokio::task::JoinHandle<()>,
    primary: String,
    folder: std::path::PathBuf,
    backup_set: GtidSet,
    backup_sums: BTreeMap<String, Option<i64>>,
}

async fn setup() -> Drill {
    let live = LiveLab::start(LiveLabOptions {
        crds: &["mysqlfailovergroups", "mysqlbackups"],
        job_env: Some(&["BLOODRAVEN_MYSQL", "BLOODRAVEN_MYSQLDUMP"]),
        ..LiveLabOptions::sites(NAMESPACE)
    })
    .await;
    let controller = live.operator("test").controller;
    let client = &live.client;
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);

    let primary = wait_for("the group to converge", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let active = status.active_site?;
        let all = status
            .sites
            .iter()
            .filter(|site| site.name != active)
            .all(|site| site.replicating == Some(true));
        all.then_some(active)
    })
    .await;
    let p = live.site_addr(GROUP, &primary);

    // The backup profile on a claim, and the claim.
    let (_claim, folder) = live.create_backup_claim().await;
    std::fs::create_dir_all(&folder).unwrap();
    let body = serde_json::json!({ "spec": { "backup": { "profiles": [{
        "name": "nightly",
        "storage": { "type": "PVC", "pvc": { "claimName": "backups" } },
    }]}}});
    groups.patch(GROUP, &PatchParams::default(), &Patch::Merge(body)).await.unwrap();

    // The data the backup holds.
    sql(&p, "CREATE TABLE app.restored (id INT PRIMARY KEY AUTO_INCREMENT, note VARCHAR(40))")
        .await;
    for i in 0..50 {
        sql(&p, &format!("INSERT INTO app.restored (note) VALUES ('before {i}')")).await;
    }
    // The backup: the operator's MysqlBackup controller runs its Job on the lab kubelet.
    let (backup_set, _) = read_site(&p).await.unwrap();
    let backup_sums = checksums(&p).await.unwrap();
    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NAMESPACE);
    let backup: MysqlBackup = serde_json::from_value(serde_json::json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
        "metadata": { "name": BACKUP, "namespace": NAMESPACE },
        "spec": { "failoverGroupRef": { "name": GROUP }, "profileName": "nightly" },
    }))
    .unwrap();
    backups.create(&PostParams::default(), &backup).await.unwrap();
    let recorded = wait_for("the backup to succeed", || async {
        let status = backups.get(BACKUP).await.ok()?.status?;
        assert_ne!(status.phase, Some(BackupPhase::Failed), "the backup failed: {status:?}");
        (status.phase == Some(BackupPhase::Succeeded)).then_some(status.gtid_executed?)
    })
    .await;
    assert_eq!(
        recorded.parse::<GtidSet>().unwrap(),
        backup_set,
        "the backup holds the primary's set"
    );

    Drill { live, groups, controller, primary, folder, backup_set, backup_sums }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_place_restore_reclones_every_peer_and_a_job_failing_after_its_drop_holds_the_queue() {
    let Drill { live, groups, controller, primary, folder, backup_set, backup_sums } =
        setup().await;
    let kubelet = &live.kubelet;
    let sites = ["iad", "pdx", "fra"];
    let p = live.site_addr(GROUP, &primary);
    let addr = |site: &str| live.site_addr(GROUP, site);
    // After the backup: rows the restore must take away, and an application writing.
    for i in 0..10 {
        sql(&p, &format!("INSERT INTO app.restored (note) VALUES ('after {i}')")).await;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, written, refused, p) =
            (stop.clone(), written.clone(), refused.clone(), p.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let ok = match conn_as(&p, APPLICATION.user, APPLICATION.password).await {
                    Some(mut c) => {
                        let r =
                            c.query_drop("INSERT INTO app.restored (note) VALUES ('app')").await;
                        let _ = c.disconnect().await;
                        r.is_ok()
                    }
                    None => false,
                };
                let counter = if ok { &written } else { &refused };
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    wait_for("the application to write", || async {
        (written.load(Ordering::SeqCst) > 3).then_some(())
    })
    .await;

    // The restore.
    let started = Instant::now();
    restore_in_place(&groups, "2030-01-01T00:00:00Z").await;
    // The application is refused once the fence is up; it stops before the fence is released.
    wait_for("the run to reach Restoring", || async {
        matches!(
            phase(&groups).await,
            Some(
                RestoreInPlacePhase::Restoring
                    | RestoreInPlacePhase::Resuming
                    | RestoreInPlacePhase::Succeeded
            )
        )
        .then_some(())
    })
    .await;
    let refused_during = refused.load(Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    writer.await.unwrap();
    assert!(refused_during > 0, "the offline fence refused the application");
    let status = wait_for("the restore to end", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let run = status.restore_in_place.clone()?;
        matches!(run.phase, Some(RestoreInPlacePhase::Succeeded | RestoreInPlacePhase::Failed))
            .then_some(status)
    })
    .await;
    let run = status.restore_in_place.unwrap();
    assert_eq!(run.phase, Some(RestoreInPlacePhase::Succeeded), "{:?}", run.message);
    assert_eq!(run.confirm_token_used.as_deref(), Some("2030-01-01T00:00:00Z"));
    let restored_in = started.elapsed();
    wait_for("the queue to drain (every peer recloned)", || async {
        groups.get(GROUP).await.ok()?.status?.restore_reclones.is_none().then_some(())
    })
    .await;
    let drained_in = started.elapsed();
    for site in sites {
        let a = addr(site);
        let (wanted, sums) = (backup_set.clone(), backup_sums.clone());
        wait_for(&format!("{site} holding the backup's set and checksums"), || {
            let (a, wanted, sums) = (a.clone(), wanted.clone(), sums.clone());
            async move {
                let (set, _) = read_site(&a).await?;
                (set == wanted && checksums(&a).await? == sums).then_some(())
            }
        })
        .await;
    }
    let offline: Option<u8> =
        conn(&p).await.unwrap().query_first("SELECT @@global.offline_mode").await.unwrap();
    assert_eq!(offline, Some(0), "the fence is released");
    tracing::warn!("drill: restored in {restored_in:?}, every peer recloned by {drained_in:?}");

    // A restore whose Job fails after its DROP: a chunk damaged in place (same size, so the
    // artifact check passes; its SHA-256 fails during the load).
    let dir = folder.join(BACKUP);
    let chunk = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|path| {
            path.file_name().is_some_and(|n| !n.to_string_lossy().starts_with('@'))
                && path.is_file()
        })
        .expect("a chunk file");
    let mut bytes = std::fs::read(&chunk).unwrap();
    for byte in bytes.iter_mut().take(64) {
        *byte ^= 0xff;
    }
    std::fs::write(&chunk, bytes).unwrap();
    restore_in_place(&groups, "2030-01-02T00:00:00Z").await;
    let held = wait_for("the failed restore to hold the queue", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let run = status.restore_in_place?;
        let queue = status.restore_reclones?;
        (run.phase == Some(RestoreInPlacePhase::Failed)
            && queue.phase == Some(RestoreReclonesPhase::Held))
        .then_some(queue)
    })
    .await;
    assert_eq!(held.pending.len(), 2, "every peer is held: {held:?}");
    let failed_job = groups.get(GROUP).await.unwrap().status.unwrap().restore_in_place.unwrap();
    let failed_job = failed_job.job_name.expect("the failed run names its Job");
    let logs: Vec<String> = kubelet
        .job_pods(NAMESPACE)
        .values()
        .filter(|pod| pod.job == failed_job)
        .filter_map(|pod| kubelet.job_log(NAMESPACE, &pod.pod))
        .collect();
    assert!(
        logs.iter().any(|log| log.contains("dropped") && log.contains("is damaged")),
        "the Job failed in its load, after its DROP: {logs:?}"
    );
    for peer in &held.pending {
        let (set, io) = read_site(&addr(peer)).await.unwrap();
        assert!(!io, "{peer}: held, its receiver stays stopped");
        assert_eq!(set, backup_set, "{peer} keeps its pre-restore data");
    }
    let (broken, _) = read_site(&p).await.unwrap();
    assert_ne!(broken, backup_set, "the failed Job dropped and reset the primary");

    // Draining by hand (the console's decision): the held sites are recloned from the primary.
    let body = serde_json::json!({ "status": { "restoreReclones": { "phase": "Draining" } } });
    groups.patch_status(GROUP, &PatchParams::default(), &Patch::Merge(body)).await.unwrap();
    wait_for("the held queue to drain", || async {
        groups.get(GROUP).await.ok()?.status?.restore_reclones.is_none().then_some(())
    })
    .await;
    let (now_primary, _) = read_site(&p).await.unwrap();
    for peer in &held.pending {
        let a = addr(peer);
        let wanted = now_primary.clone();
        wait_for(&format!("{peer} recloned from the primary and replicating"), || {
            let (a, wanted) = (a.clone(), wanted.clone());
            async move {
                let (set, io) = read_site(&a).await?;
                (io && set == wanted).then_some(())
            }
        })
        .await;
    }
    controller.abort();
    live.stop().await;
}

/// A crash at each named point of the restore run (`operator.restore.*`), one restore per
/// point on one group: the operator is stopped where the point fired and a new one started;
/// the run completes from its records (no second Job, the fence released), every peer is
/// recloned and every site holds the backup's set and checksums.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_each_restore_point_resumes_from_the_records() {
    use bloodraven_crashpoint::{CrashAt, Step};
    let drill = setup().await;
    let groups = &drill.groups;
    let p = drill.live.site_addr(GROUP, &drill.primary);
    let scope = format!("{NAMESPACE}/{GROUP}");
    let mut controller = drill.controller;
    let steps: Vec<Step> = Step::ALL
        .iter()
        .copied()
        .filter(|step| step.name().starts_with("operator.restore."))
        .collect();
    assert_eq!(steps.len(), 5, "every restore crash point is swept");
    for (day, step) in steps.into_iter().enumerate() {
        let confirm = format!("2030-02-{:02}T00:00:00Z", day + 1);
        bloodraven_crashpoint::arm(&scope, CrashAt { step, nth: 1 });
        restore_in_place(groups, &confirm).await;
        wait_for(&format!("the crash point {step} to fire"), || async {
            bloodraven_crashpoint::fired(&scope).map(|_| ())
        })
        .await;
        controller.abort();
        let _ = controller.await;
        bloodraven_crashpoint::disarm(&scope);
        controller = drill.live.operator(&format!("after-{step}")).controller;
        let run = wait_for(&format!("{step}: the run to end after the restart"), || async {
            let run = groups.get(GROUP).await.ok()?.status?.restore_in_place?;
            (run.confirm_token_used.as_deref() == Some(confirm.as_str())
                && matches!(
                    run.phase,
                    Some(RestoreInPlacePhase::Succeeded | RestoreInPlacePhase::Failed)
                ))
            .then_some(run)
        })
        .await;
        assert_eq!(run.phase, Some(RestoreInPlacePhase::Succeeded), "{step}: {:?}", run.message);
        wait_for(&format!("{step}: the queue to drain and the fence record to go"), || async {
            let status = groups.get(GROUP).await.ok()?.status?;
            (status.restore_reclones.is_none() && status.restore_offline_fence.is_none())
                .then_some(())
        })
        .await;
        let jobs: Vec<String> = drill
            .live
            .kubelet
            .job_pods(NAMESPACE)
            .values()
            .filter(|pod| run.job_name.as_deref() == Some(pod.job.as_str()))
            .map(|pod| pod.pod.clone())
            .collect();
        assert_eq!(jobs.len(), 1, "{step}: one Job attempt for the run: {jobs:?}");
        for site in ["iad", "pdx", "fra"] {
            let a = drill.live.site_addr(GROUP, site);
            let (wanted, sums) = (drill.backup_set.clone(), drill.backup_sums.clone());
            wait_for(&format!("{step}: {site} holding the backup's set and checksums"), || {
                let (a, wanted, sums) = (a.clone(), wanted.clone(), sums.clone());
                async move {
                    let (set, _) = read_site(&a).await?;
                    (set == wanted && checksums(&a).await? == sums).then_some(())
                }
            })
            .await;
        }
        let offline: Option<u8> =
            conn(&p).await.unwrap().query_first("SELECT @@global.offline_mode").await.unwrap();
        assert_eq!(offline, Some(0), "{step}: the fence is released");
        tracing::warn!("crash sweep: {step} survived");
    }
    controller.abort();
}
