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

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::annotations::RECLONE_SITE as RECLONE_SITE_ANNOTATION;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::group::{
    LastFailover, RestoreInPlacePhase, RestoreReclones, RestoreReclonesPhase,
};
use bloodraven_gtid::GtidSet;
use bloodraven_sites::accounts::{APPLICATION, OPERATOR};
use bloodraven_workloads::{Resolver, labels, ports};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use mysql_async::prelude::Queryable;

use super::live_lab::{
    LiveLab, LiveLabOptions, bounded_wait_for, checksums, conn, conn_as, read_site, sql,
};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
const BACKUP: &str = "nightly-1";
/// The example group's sites.
const SITES: [&str; 3] = ["iad", "pdx", "fra"];
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

/// The group's state the restore guards depend on, read through the API server.
#[derive(Clone, Debug, PartialEq)]
struct GuardStatus {
    active: Option<String>,
    last_failover: Option<LastFailover>,
    phase: Option<RestoreInPlacePhase>,
    run_id: Option<String>,
    queue: Option<RestoreReclones>,
    fence_recorded: bool,
    reclone_annotation: Option<String>,
    /// `(site, role label)` of the group's pods.
    roles: Vec<(String, Option<String>)>,
}

async fn guard_status(groups: &Api<MysqlFailoverGroup>, pods: &Api<Pod>) -> Option<GuardStatus> {
    let group = groups.get(GROUP).await.ok()?;
    let status = group.status.clone().unwrap_or_default();
    let run = status.restore_in_place.clone().unwrap_or_default();
    let list = pods
        .list(&ListParams::default().labels(&format!("{}={GROUP}", labels::INSTANCE)))
        .await
        .ok()?;
    let mut roles: Vec<(String, Option<String>)> = list
        .items
        .iter()
        .filter_map(|pod| {
            let pod_labels = pod.metadata.labels.as_ref()?;
            Some((pod_labels.get(labels::SITE)?.clone(), pod_labels.get(labels::ROLE).cloned()))
        })
        .collect();
    roles.sort();
    Some(GuardStatus {
        active: status.active_site,
        last_failover: status.last_failover,
        phase: run.phase,
        run_id: run.run_id,
        queue: status.restore_reclones,
        fence_recorded: status.restore_offline_fence.is_some(),
        reclone_annotation: group.annotations().get(RECLONE_SITE_ANNOTATION).cloned(),
        roles,
    })
}

/// One site as MySQL reports it.
#[derive(Debug)]
struct SiteLive {
    /// `Replica_IO_Running` (`Yes`, `Connecting`, `No`), `None` without a channel.
    receiver: Option<String>,
    offline_mode: bool,
    super_read_only: bool,
    /// The last clone into it (`performance_schema.clone_status`), if any.
    clone: Option<String>,
}

impl SiteLive {
    fn receiving(&self) -> bool {
        matches!(self.receiver.as_deref(), Some("Yes" | "Connecting"))
    }
}

async fn site_live(addr: &str) -> Option<SiteLive> {
    let mut conn = conn(addr).await?;
    let (offline, read_only): (u8, u8) =
        conn.query_first("SELECT @@global.offline_mode, @@global.super_read_only").await.ok()??;
    let rows: Vec<mysql_async::Row> = conn.query("SHOW REPLICA STATUS").await.ok()?;
    let receiver = rows.first().and_then(|row| row.get::<String, _>("Replica_IO_Running"));
    // Without the clone plugin (the operator installs it for its first clone) the table does
    // not exist: no clone yet. Another server error fails the test; a lost connection is a
    // site restarting.
    let clone = match conn
        .query_first(
            "SELECT CAST(ID AS CHAR), STATE, CAST(BEGIN_TIME AS CHAR) \
             FROM performance_schema.clone_status",
        )
        .await
    {
        Ok(row) => {
            let row: Option<(String, Option<String>, Option<String>)> = row;
            row.map(|(id, state, begin)| format!("{id} {state:?} {begin:?}"))
        }
        Err(mysql_async::Error::Server(error)) if error.code == 1146 => {
            Some("no clone plugin".to_owned())
        }
        Err(mysql_async::Error::Server(error)) => {
            panic!("{addr}: reading performance_schema.clone_status: {error}")
        }
        Err(_) => return None,
    };
    let _ = conn.disconnect().await;
    Some(SiteLive { receiver, offline_mode: offline == 1, super_read_only: read_only == 1, clone })
}

/// `host:port` of `site`'s MySQL, or `None` while its Service has no endpoint (a site
/// restarting after a clone).
fn try_site_addr(live: &LiveLab, site: &str) -> Option<String> {
    let service = format!("mysql-{GROUP}-{site}-internal");
    let address = live.kubelet.resolver().resolve(NAMESPACE, &service, ports::MYSQL)?;
    Some(format!("{}:{}", address.host, address.port))
}

/// The last clone into each site, before a restore starts.
async fn clones(live: &LiveLab) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    for site in SITES {
        let read = wait_for(&format!("{site} to answer"), || async {
            site_live(&try_site_addr(live, site)?).await
        })
        .await;
        out.insert(site.to_owned(), read.clone);
    }
    out
}

/// What the guard checks of one restore saw.
#[derive(Debug, Default)]
struct GuardTally {
    /// Samples whose status did not change while MySQL was read (the ones checked).
    checked: u32,
    /// Checked samples in which the replication hold applied.
    held: u32,
    /// Checked samples in which the offline_mode fence applied.
    fenced: u32,
    /// Checked samples in which the clone block applied.
    blocked: u32,
    /// Sites read from MySQL in the checked samples.
    sites_read: u32,
}

/// The drill's fixed state the guard checks compare against, for one restore.
struct Watch<'a> {
    live: &'a LiveLab,
    groups: &'a Api<MysqlFailoverGroup>,
    pods: &'a Api<Pod>,
    primary: &'a str,
    /// `status.lastFailover` before the restore (no failover happens).
    last_failover: Option<LastFailover>,
    /// The last clone into each site before the restore.
    clones_before: BTreeMap<String, Option<String>>,
}

impl Watch<'_> {
    /// Checks every guard the topology manager enforces during a full-instance restore
    /// against MySQL, bracketed by two reads of the status (a sample whose status changed in
    /// between is not judged): the promotion exclusion (no failover, the primary stays
    /// `primary` and a queued site is neither active, labelled primary nor writable), the
    /// replication hold (a queued site's receiver stays stopped once the peers were stopped,
    /// while the queue is Armed or Held; only its own reclone restarts it while it drains),
    /// the clone block (no clone into a queued site and no reclone request naming one while
    /// Armed or Held) and the offline_mode fence (ON on the primary from its application until
    /// the run resumes). `meddled`: a site whose receiver the test started by hand, its hold
    /// not judged. Panics naming `when` and the guard that broke; counts in `tally`.
    async fn check(&self, when: &str, meddled: Option<&str>, tally: &RefCell<GuardTally>) {
        let mut seen = GuardTally::default();
        self.judge(when, meddled, &mut seen).await;
        let mut tally = tally.borrow_mut();
        tally.checked += seen.checked;
        tally.sites_read += seen.sites_read;
        tally.held += seen.held;
        tally.fenced += seen.fenced;
        tally.blocked += seen.blocked;
    }

    async fn judge(&self, when: &str, meddled: Option<&str>, tally: &mut GuardTally) {
        let Watch { live, groups, pods, primary, last_failover, clones_before } = self;
        let primary = *primary;
        let Some(before) = guard_status(groups, pods).await else { return };
        let mut sites = BTreeMap::new();
        for site in SITES {
            let Some(a) = try_site_addr(live, site) else { continue };
            if let Some(read) = site_live(&a).await {
                sites.insert(site, read);
            }
        }
        let Some(after) = guard_status(groups, pods).await else { return };
        if before != after {
            return;
        }
        tally.checked += 1;
        tally.sites_read += u32::try_from(sites.len()).unwrap_or(u32::MAX);
        let status = before;
        let context = format!("{when}: status {status:?}, MySQL {sites:?}");
        // Promotion exclusion.
        assert_eq!(status.active.as_deref(), Some(primary), "no failover: {context}");
        assert_eq!(&status.last_failover, last_failover, "no failover recorded: {context}");
        if let Some(p) = sites.get(primary) {
            assert!(!p.super_read_only, "the primary stays writable to the operator: {context}");
        }
        let Some(queue) = status.queue.as_ref() else { return };
        let pending: Vec<&str> = queue.pending.iter().map(String::as_str).collect();
        // While the queue drains, the site of its current request is being recloned (the clone
        // lifts its super_read_only to install the plugin, then restarts and repoints it).
        let recloning = (queue.phase == Some(RestoreReclonesPhase::Draining))
            .then(|| queue.current.as_ref().and_then(|current| current.site.as_deref()))
            .flatten();
        for site in &pending {
            assert_ne!(*site, primary, "the primary is not queued: {context}");
            let role =
                status.roles.iter().find(|(name, _)| name == site).and_then(|(_, r)| r.clone());
            assert_ne!(role.as_deref(), Some(labels::ROLE_PRIMARY), "{site} is queued: {context}");
            if let Some(read) = sites.get(site).filter(|_| Some(*site) != recloning) {
                assert!(read.super_read_only, "queued {site} is not promoted: {context}");
            }
        }
        // Replication hold.
        let peers_stopped = matches!(
            status.phase,
            Some(
                RestoreInPlacePhase::Restoring
                    | RestoreInPlacePhase::Resuming
                    | RestoreInPlacePhase::Succeeded
                    | RestoreInPlacePhase::Failed
            )
        );
        let armed_or_held =
            matches!(queue.phase, Some(RestoreReclonesPhase::Armed | RestoreReclonesPhase::Held));
        if armed_or_held && peers_stopped {
            tally.held += 1;
            for site in pending.iter().filter(|site| Some(**site) != meddled) {
                if let Some(read) = sites.get(site) {
                    assert!(!read.receiving(), "queued {site}'s receiver stays stopped: {context}");
                }
            }
        }
        if queue.phase == Some(RestoreReclonesPhase::Draining) {
            for site in
                pending.iter().filter(|site| Some(**site) != recloning && Some(**site) != meddled)
            {
                if let Some(read) = sites.get(site) {
                    assert!(
                        !read.receiving(),
                        "queued {site} is restarted only by its own reclone: {context}"
                    );
                }
            }
        }
        // Clone block.
        if armed_or_held {
            tally.blocked += 1;
            for site in &pending {
                if let Some(read) = sites.get(site) {
                    assert_eq!(
                        clones_before.get(*site),
                        Some(&read.clone),
                        "nothing is cloned into queued {site}: {context}"
                    );
                }
                let named = status
                    .reclone_annotation
                    .as_deref()
                    .is_some_and(|a| a.split(':').next() == Some(*site));
                assert!(!named, "no reclone request names queued {site}: {context}");
            }
        }
        // The offline_mode fence: from its application (the fenced set is recorded after it)
        // until the run resumes.
        let fence_applied = status.fence_recorded
            && match status.phase {
                Some(RestoreInPlacePhase::Fencing) => queue.fenced_gtid_executed.is_some(),
                Some(RestoreInPlacePhase::Restoring) => true,
                _ => false,
            };
        if fence_applied {
            tally.fenced += 1;
            if let Some(p) = sites.get(primary) {
                assert!(p.offline_mode, "offline_mode is ON on the primary: {context}");
            }
        }
    }
}

/// A crash at each named point of the restore run (`operator.restore.*`), one restore per
/// point on one group: the operator is stopped where the point fired and a new one started;
/// the run completes from its records (no second Job, the fence released), every peer is
/// recloned and every site holds the backup's set and checksums. Between the crash and the
/// restart, and from the restart until the queue drains, every restore guard holds
/// ([`Watch::check`]); a crash in Restoring also has a queued peer's receiver started by hand
/// while the operator is down, which the restarted manager stops again while the queue is
/// Armed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_each_restore_point_resumes_from_the_records() {
    use bloodraven_crashpoint::{CrashAt, Step};
    let drill = setup().await;
    let groups = &drill.groups;
    let pods: Api<Pod> = Api::namespaced(drill.live.client.clone(), NAMESPACE);
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
        // A converged group first: the peers recloned by the previous run replicate again.
        wait_for(&format!("{step}: every peer to replicate before the restore"), || async {
            let status = groups.get(GROUP).await.ok()?.status?;
            let peers: Vec<_> =
                status.sites.iter().filter(|site| site.name != drill.primary).collect();
            (peers.len() == 2 && peers.iter().all(|site| site.replicating == Some(true)))
                .then_some(())
        })
        .await;
        for site in SITES.iter().filter(|site| **site != drill.primary) {
            wait_for(&format!("{step}: {site}'s receiver to run"), || async {
                site_live(&try_site_addr(&drill.live, site)?).await?.receiving().then_some(())
            })
            .await;
        }
        let watch = Watch {
            live: &drill.live,
            groups,
            pods: &pods,
            primary: &drill.primary,
            last_failover: groups.get(GROUP).await.unwrap().status.unwrap().last_failover,
            clones_before: clones(&drill.live).await,
        };
        let tally = RefCell::new(GuardTally::default());
        let window = RefCell::new(GuardTally::default());
        bloodraven_crashpoint::arm(&scope, CrashAt { step, nth: 1 });
        restore_in_place(groups, &confirm).await;
        wait_for(&format!("the crash point {step} to fire"), || async {
            bloodraven_crashpoint::fired(&scope).map(|_| ())
        })
        .await;
        controller.abort();
        let _ = controller.await;
        bloodraven_crashpoint::disarm(&scope);
        // Between the crash and the restart: nothing runs, every guard still holds.
        let down = Instant::now();
        let when = format!("{step}, operator down");
        while down.elapsed() < Duration::from_secs(3) || window.borrow().checked == 0 {
            assert!(down.elapsed() < BOUND, "{step}: no guard sample was judged while down");
            watch.check(&when, None, &window).await;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        // The guards that applied where the point fired were judged, not skipped.
        let name = step.name();
        let window = window.into_inner();
        assert!(window.blocked > 0, "{step}: the clone block was judged while down: {window:?}");
        assert_eq!(
            window.sites_read,
            3 * window.checked,
            "{step}: every site answered while the operator was down: {window:?}"
        );
        if !name.ends_with("after-fence-record") {
            assert!(window.held > 0, "{step}: the replication hold was judged: {window:?}");
        }
        // Crashed in Restoring: a receiver started by hand on a queued peer while the
        // operator is down (running: a Connecting one is not re-stopped, see the report) must
        // be stopped again by the restarted manager, from the status it reads, while the queue
        // is still Armed.
        let meddled = name.contains("job-creat").then_some("fra");
        if let Some(site) = meddled {
            assert!(window.fenced > 0, "{step}: the offline fence was judged: {window:?}");
            // As the operator account (exempt from offline_mode, so it does receive).
            let a = drill.live.site_addr(GROUP, site);
            let start = format!(
                "START REPLICA IO_THREAD USER = '{}' PASSWORD = '{}'",
                OPERATOR.user, OPERATOR.password
            );
            sql(&a, &start).await;
            wait_for(&format!("{step}: {site}'s receiver started by hand to run"), || async {
                (site_live(&a).await?.receiver.as_deref() == Some("Yes")).then_some(())
            })
            .await;
        }
        controller = drill.live.operator(&format!("after-{step}")).controller;
        let when = format!("{step}, after the restart");
        if let Some(site) = meddled {
            let a = drill.live.site_addr(GROUP, site);
            let seen = RefCell::new(std::collections::BTreeSet::new());
            let queue = wait_for(
                &format!("{step}: the restarted manager to stop {site}'s receiver"),
                || async {
                    watch.check(&when, meddled, &tally).await;
                    let queue = groups.get(GROUP).await.ok()?.status?.restore_reclones;
                    let read = site_live(&a).await?;
                    seen.borrow_mut().insert(read.receiver.clone());
                    (!read.receiving()).then_some(queue)
                },
            )
            .await;
            let queue = queue.unwrap_or_default();
            assert_eq!(
                queue.phase,
                Some(RestoreReclonesPhase::Armed),
                "{step}: {site} stopped by the hold, not by its reclone: {queue:?}; its receiver was {:?}",
                seen.borrow()
            );
            assert!(queue.pending.iter().any(|p| p == site), "{step}: {site} queued: {queue:?}");
        }
        let run = wait_for(&format!("{step}: the run to end after the restart"), || async {
            watch.check(&when, None, &tally).await;
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
            watch.check(&when, None, &tally).await;
            let status = groups.get(GROUP).await.ok()?.status?;
            (status.restore_reclones.is_none() && status.restore_offline_fence.is_none())
                .then_some(())
        })
        .await;
        let tally = tally.into_inner();
        tracing::warn!(%step, ?window, after_restart = ?tally, "crash sweep: guard samples judged");
        let jobs: Vec<String> = drill
            .live
            .kubelet
            .job_pods(NAMESPACE)
            .values()
            .filter(|pod| run.job_name.as_deref() == Some(pod.job.as_str()))
            .map(|pod| pod.pod.clone())
            .collect();
        assert_eq!(jobs.len(), 1, "{step}: one Job attempt for the run: {jobs:?}");
        for site in SITES {
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
