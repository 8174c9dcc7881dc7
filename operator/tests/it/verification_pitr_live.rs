//! A point-in-time MysqlBackupVerification end to end in the live lab (issue 17): lab API
//! server, lab kubelet running real MySQL 9.7 sites with their sidecars archiving PITR binlogs
//! to a PVC archive, and the verification Job's init containers (`dump-meta`, `pitr-download`)
//! and main container (`verify`) as `bloodraven-sidecar` processes; the operator in this
//! process. `source scripts/provision.sh` and `cargo build -p bloodraven-sidecar` first.
//!
//! The setup of `live_lab::pitr_source_with_backup`: a 3-site group with PITR on its PVC
//! profile; writes, a backup (its stamp names the archive), two more batches a whole-second
//! target T apart, the binlog sealed and archived.
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

use bloodraven_crd::condition::{ConditionStatus, ConditionType};
use bloodraven_crd::verification::{MysqlBackupVerification, VerificationPhase};
use bloodraven_gtid::GtidSet;
use kube::api::{Api, PostParams};
use serde_json::json;

use super::harness::Operator;
use super::live_lab::{
    LiveLab, LiveLabOptions, PitrSource, bounded_wait_for, executed, pitr_source_with_backup,
};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
/// The profile's subPath: backups at `<claim>/orders/<name>`, the archive at
/// `<claim>/orders/binlogs`.
const SUB_PATH: &str = "orders";
/// Generous: CI shares 2 cores with other real servers (three sites, their sidecars, and a
/// verification that initialises a scratch mysqld).
const BOUND: Duration = Duration::from_secs(240);

bounded_wait_for!(BOUND, Duration::from_millis(500));

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
    let post = PostParams::default();
    let Operator { context, controller } = live.operator("test");
    let PitrSource { mut source, at_target, acknowledged, target, .. } =
        pitr_source_with_backup(&live, GROUP, SUB_PATH, BOUND).await;
    let after_target = acknowledged.difference(&at_target);

    let api: Api<MysqlBackupVerification> = Api::namespaced(live.client.clone(), NAMESPACE);
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
    let now = executed(&mut source).await;
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
