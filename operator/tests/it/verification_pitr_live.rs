//! A point-in-time MysqlBackupVerification end to end in the live lab (issue 17): lab API
//! server, lab kubelet running real MySQL 9.7 sites with their sidecars archiving PITR binlogs
//! to a PVC archive, and the verification Job's init containers (`dump-meta`, `pitr-download`)
//! and main container (`verify`) as `bloodraven-sidecar` processes; the operator in this
//! process. `source scripts/provision.sh` and `cargo build -p bloodraven-sidecar` first.
//!
//! A 3-site group with PITR on its PVC profile; writes, a backup (its stamp names the
//! archive), two more batches a whole-second target T apart, the binlog sealed and archived.
//! A verification with `pointInTime.mode: Latest` ends Succeeded with Verified=True (`Latest`)
//! and `status.pointInTime` filled: its `gtidExecuted` holds every write the source
//! acknowledged before the archive head and nothing the source did not execute. One with
//! `mode: Timestamp` at T ends Verified=True (`TargetCovered`) with the first batch and none
//! of the second.
//!
//! The lab keeps two folders apart that are one claim in a cluster: the claim folder the lab
//! kubelet mounts into Jobs, and the one folder that stands in for every PITR archive claim of
//! the sites' sidecars (`<folder>/<namespace>/<claim>`, the `pvc_archive` of the kubelet). In a
//! pod the archiver writes `<claim>/<subPath>/binlogs` and `pitr-download` reads the same
//! (the document's `<profile-prefix>/binlogs/`); the test makes the Jobs' claim folder a
//! symbolic link to the sidecars' `<namespace>/<claim>` folder so both name the same files.
//! (Writing this test found the archiver writing `<claim>/<namespace>/<claim>/<subPath>/binlogs`
//! in a pod, where no restore would ever read it; fixed in `sidecar/src/archiver/daemon.rs`.)

use std::time::Duration;

use bloodraven_archive::reader::{ReaderKey, ReaderOptions};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::condition::{ConditionStatus, ConditionType};
use bloodraven_crd::verification::{MysqlBackupVerification, VerificationPhase};
use bloodraven_gtid::GtidSet;
use bloodraven_store::{ArchiveRoot, FsStore, open_archive};
use kube::api::{Api, Patch, PatchParams, PostParams};
use mysql_async::prelude::Queryable;
use serde_json::json;

use super::harness::Operator;
use super::live_lab::{LiveLab, LiveLabOptions, bounded_wait_for, conn};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
/// The profile's subPath: backups at `<claim>/orders/<name>`, the archive at
/// `<claim>/orders/binlogs`.
const SUB_PATH: &str = "orders";
/// Generous: CI shares 2 cores with other real servers (three sites, their sidecars, and a
/// verification that initialises a scratch mysqld).
const BOUND: Duration = Duration::from_secs(240);

bounded_wait_for!(BOUND, Duration::from_millis(500));

async fn gtid_executed(conn: &mut mysql_async::Conn) -> GtidSet {
    let text: String = conn
        .query_first("SELECT @@global.gtid_executed")
        .await
        .expect("reading @@gtid_executed")
        .expect("a row");
    text.replace('\n', "").parse().expect("a GTID set")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latest_and_timestamp_verifications_replay_the_sidecars_archive_onto_the_backup() {
    let options = LiveLabOptions {
        crds: &["mysqlfailovergroups", "mysqlbackups", "mysqlbackupverifications"],
        job_env: Some(&[
            "BLOODRAVEN_MYSQLDUMP",
            "BLOODRAVEN_MYSQL",
            "BLOODRAVEN_MYSQLD",
            "BLOODRAVEN_MYSQLBINLOG",
            "BLOODRAVEN_MYSQL_BASEDIR",
            "BLOODRAVEN_MYSQL_LC_MESSAGES_DIR",
            "BLOODRAVEN_MYSQL_PLUGIN_DIR",
        ]),
        ..LiveLabOptions::sites(NAMESPACE)
    };
    let live = LiveLab::start_with(options, true).await;
    let client = &live.client;
    let post = PostParams::default();

    // The claim the profile names; its folder is the sidecars' `<namespace>/<claim>` folder
    // (see the module's note: the lab keeps the two apart). The kubelet never collects a link
    // in its claims folder.
    let (_claim, folder) = live.create_backup_claim().await;
    let sidecar_side = live.pvc_archive_dir().join(NAMESPACE).join("backups");
    std::fs::create_dir_all(&sidecar_side).expect("the sidecars' archive folder");
    std::os::unix::fs::symlink(&sidecar_side, &folder).expect("the layout bridge");

    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);
    let backup_spec = json!({ "spec": { "backup": {
        "profiles": [{ "name": "pvc", "storage": { "type": "PVC",
                       "pvc": { "claimName": "backups", "subPath": SUB_PATH } } }],
        "pitr": { "enabled": true, "profileName": "pvc" },
    }}});
    groups
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&backup_spec))
        .await
        .expect("the backup profile and PITR");

    let Operator { context, controller } = live.operator("test");

    let primary = wait_for("the group to converge", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let active = status.active_site?;
        let all =
            status.sites.iter().filter(|site| site.name != active).all(|site| {
                site.replicating == Some(true) && site.seconds_behind_source == Some(0)
            });
        (all && status.sites.len() == 3).then_some(active)
    })
    .await;
    let mut source = conn(&live.site_addr(GROUP, &primary)).await.expect("the primary answers");
    source
        .query_drop("CREATE TABLE app.orders (id INT PRIMARY KEY, note VARCHAR(40))")
        .await
        .unwrap();
    for id in 0..50 {
        source
            .query_drop(format!("INSERT INTO app.orders VALUES ({id}, 'before {id}')"))
            .await
            .unwrap();
    }

    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NAMESPACE);
    let b1: MysqlBackup = serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
        "metadata": { "name": "b1", "namespace": NAMESPACE },
        "spec": { "failoverGroupRef": { "name": GROUP }, "profileName": "pvc" },
    }))
    .unwrap();
    backups.create(&post, &b1).await.expect("MysqlBackup b1");
    let backup_gtids = wait_for("backup b1 Succeeded with its gtidExecuted", || async {
        let status = backups.get("b1").await.ok()?.status?;
        assert_ne!(status.phase, Some(BackupPhase::Failed), "b1 failed: {}", live.job_logs());
        if status.phase != Some(BackupPhase::Succeeded) {
            return None;
        }
        assert!(
            status.failover_group_uid.as_deref().is_some_and(|uid| !uid.is_empty()),
            "b1 records its source group's uid (the stamp the replay is tied to): {status:#?}"
        );
        status.gtid_executed.clone()
    })
    .await;
    let backup_gtids: GtidSet = backup_gtids.replace('\n', "").parse().expect("b1's GTID set");

    // Writes after the backup: a first batch, a whole-second target T at least a second after
    // it, a second batch at least a second after T; then the binlog sealed so the archiver
    // uploads it. The first batch waits 2 s after the dump: a target must lie a second past the
    // dump's end (rounded up), PITRBackupAfterTarget otherwise.
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    for id in 50..75 {
        source
            .query_drop(format!("INSERT INTO app.orders VALUES ({id}, 'before T {id}')"))
            .await
            .unwrap();
    }
    let at_target = gtid_executed(&mut source).await;
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let target =
        jiff::Timestamp::from_second(jiff::Timestamp::now().as_second()).expect("a whole second");
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    for id in 75..100 {
        source
            .query_drop(format!("INSERT INTO app.orders VALUES ({id}, 'after T {id}')"))
            .await
            .unwrap();
    }
    let acknowledged = gtid_executed(&mut source).await;
    source.query_drop("FLUSH BINARY LOGS").await.unwrap();
    let after_backup = acknowledged.difference(&backup_gtids);
    let after_target = acknowledged.difference(&at_target);
    assert!(!after_backup.is_empty() && !after_target.is_empty(), "writes after the backup");

    // The archive as the sidecars wrote it holds them (pitr-download reads the same files as
    // `<claim>/<subPath>/binlogs`).
    let store = FsStore::new(live.pvc_archive_dir()).expect("the sidecars' store");
    let root = ArchiveRoot::under_profile(&format!("{NAMESPACE}/backups/{SUB_PATH}"))
        .expect("the archive root");
    let archived = async || {
        let open = open_archive(&store, &root, ReaderOptions::new(ReaderKey::None)).await.ok()?;
        let mut all = GtidSet::new();
        for manifest in open.manifests.values() {
            for row in &manifest.files {
                all.union_with(row.effective_gtids());
            }
        }
        after_backup.is_subset(&all).then_some(())
    };
    let started = std::time::Instant::now();
    while archived().await.is_none() {
        if started.elapsed() > BOUND {
            let pitr = groups.get(GROUP).await.ok().and_then(|g| g.status).map(|s| s.pitr);
            panic!(
                "gave up after {BOUND:?} waiting for the archive under {} to hold {after_backup}\nstatus.pitr: {pitr:#?}\nfiles: {:#?}\nsidecar logs:\n{}",
                folder.display(),
                files_under(&live.pvc_archive_dir()),
                sidecar_logs(&folder)
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    let api: Api<MysqlBackupVerification> = Api::namespaced(client.clone(), NAMESPACE);
    let run = async |name: &str, point_in_time: serde_json::Value| {
        let verification: MysqlBackupVerification = serde_json::from_value(json!({
            "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackupVerification",
            "metadata": { "name": name, "namespace": NAMESPACE },
            "spec": { "failoverGroupRef": { "name": GROUP }, "profileName": "pvc",
                      "backupRef": { "name": "b1" }, "pointInTime": point_in_time },
        }))
        .unwrap();
        api.create(&post, &verification).await.expect("the verification");
        let found = wait_for(&format!("verification {name} to end"), || async {
            let found = api.get(name).await.ok()?;
            let phase = found.status.as_ref()?.phase.clone();
            matches!(phase, Some(VerificationPhase::Succeeded | VerificationPhase::Failed))
                .then_some(found)
        })
        .await;
        let status = found.status.clone().unwrap_or_default();
        assert_eq!(
            status.phase,
            Some(VerificationPhase::Succeeded),
            "{status:#?}\nthe Jobs' logs: {}",
            live.job_logs()
        );
        let condition = status
            .conditions
            .iter()
            .find(|c| c.type_ == ConditionType::Verified)
            .unwrap_or_else(|| panic!("no Verified condition: {status:#?}"));
        assert_eq!(condition.status, ConditionStatus::True, "{status:#?}");
        let reason = condition.reason.as_ref().map(|r| r.as_str().to_owned()).unwrap_or_default();
        let result =
            status.point_in_time.clone().unwrap_or_else(|| panic!("no pointInTime: {status:#?}"));
        assert!(result.transactions.unwrap_or(0) > 0, "it replayed the archive: {result:#?}");
        let replayed: GtidSet = result
            .gtid_executed
            .clone()
            .unwrap_or_else(|| panic!("no gtidExecuted: {result:#?}"))
            .replace('\n', "")
            .parse()
            .expect("the verdict's GTID set");
        (reason, result, replayed)
    };

    // Latest: the archive head, which holds every acknowledged write.
    let (reason, result, replayed) = run("v-latest", json!({ "mode": "Latest" })).await;
    assert_eq!(reason, "Latest", "{result:#?}");
    let now = gtid_executed(&mut source).await;
    assert!(
        acknowledged.is_subset(&replayed) && replayed.is_subset(&now),
        "the archive head's set is the source's: acknowledged {acknowledged} ⊆ replayed {replayed} ⊆ the source now {now}"
    );

    // Timestamp T: the first batch, none of the second.
    let stop = target.to_string();
    let (reason, result, replayed) =
        run("v-target", json!({ "mode": "Timestamp", "stopTime": stop })).await;
    assert_eq!(reason, "TargetCovered", "{result:#?}");
    assert!(
        at_target.is_subset(&replayed)
            && replayed.intersection(&after_target).is_empty()
            && replayed.is_subset(&now),
        "the set at {stop} is the source's then: {at_target} ⊆ replayed {replayed}, nothing of {after_target}"
    );
    drop(source);

    controller.abort();
    let _ = controller.await;
    drop(context);
    live.stop().await;
}

/// Every file below `dir` (symbolic links followed).
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(next) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() { todo.push(path) } else { found.push(path) }
        }
    }
    found
}

/// The last lines of every site's sidecar log (`<claim folder>/sidecar.log`, the claim
/// folders beside `claim`'s).
fn sidecar_logs(claim: &std::path::Path) -> String {
    let Some(claims) = claim.parent() else { return String::new() };
    files_under(claims)
        .into_iter()
        .filter(|path| path.ends_with("sidecar.log"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(30)..].join("\n");
            format!("{}:\n{tail}", path.display())
        })
        .collect::<Vec<_>>()
        .join("\n---\n")
}
