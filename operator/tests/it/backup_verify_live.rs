//! The MysqlBackupVerification controller in the live lab (lab API server, lab kubelet running
//! real MySQL 9.7 sites and the Jobs as `bloodraven-sidecar` processes, the operator in this
//! process; `source scripts/provision.sh` and `cargo build -p bloodraven-sidecar`): a backup
//! of a 3-site group with writes; a verification of it loads it into a throwaway mysqld in the
//! Job and ends Succeeded/Verified=True with the source's table checksum in its log; the same
//! artifact with bytes flipped in its dump chunk fails BackupArtifactDamaged, and truncated
//! fails PITRBackupIncomplete, each with a VerificationFailed Event.

use std::time::Duration;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::condition::{ConditionStatus, ConditionType};
use bloodraven_crd::verification::{MysqlBackupVerification, VerificationPhase};
use kube::api::{Api, Patch, PatchParams, PostParams};
use mysql_async::prelude::Queryable;
use serde_json::json;

use super::harness::Operator;
use super::live_lab::{LiveLab, LiveLabOptions, bounded_wait_for, conn, event_reasons};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
/// Generous: CI shares 2 cores with other real servers (a verification initialises a mysqld).
const BOUND: Duration = Duration::from_secs(240);

bounded_wait_for!(BOUND, Duration::from_millis(500));

fn verification(name: &str, backup: &str) -> MysqlBackupVerification {
    serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackupVerification",
        "metadata": { "name": name, "namespace": NAMESPACE },
        "spec": { "failoverGroupRef": { "name": GROUP }, "profileName": "pvc",
                  "backupRef": { "name": backup } },
    }))
    .unwrap()
}

/// The verification once it is Succeeded or Failed.
async fn terminal(api: &Api<MysqlBackupVerification>, name: &str) -> MysqlBackupVerification {
    wait_for(&format!("verification {name} to end"), || async {
        let found = api.get(name).await.ok()?;
        let phase = found.status.as_ref()?.phase.clone();
        matches!(phase, Some(VerificationPhase::Succeeded | VerificationPhase::Failed))
            .then_some(found)
    })
    .await
}

/// The Verified condition's (status, reason).
fn verified(found: &MysqlBackupVerification) -> (ConditionStatus, String) {
    let status = found.status.clone().unwrap_or_default();
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::Verified)
        .unwrap_or_else(|| panic!("no Verified condition: {status:#?}"));
    (condition.status.clone(), condition.reason.as_ref().unwrap().as_str().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_good_backup_verifies_and_a_damaged_or_truncated_one_fails_with_its_reason() {
    let live = LiveLab::start(LiveLabOptions {
        crds: &["mysqlfailovergroups", "mysqlbackups", "mysqlbackupverifications"],
        job_env: Some(&[
            "BLOODRAVEN_MYSQLDUMP",
            "BLOODRAVEN_MYSQL",
            "BLOODRAVEN_MYSQLD",
            "BLOODRAVEN_MYSQL_BASEDIR",
            "BLOODRAVEN_MYSQL_LC_MESSAGES_DIR",
            "BLOODRAVEN_MYSQL_PLUGIN_DIR",
        ]),
        ..LiveLabOptions::sites(NAMESPACE)
    })
    .await;
    let (lab, client) = (&live.lab, &live.client);

    let post = PostParams::default();
    let (_claim, folder) = live.create_backup_claim().await;
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);
    let profiles = json!({ "spec": { "backup": { "profiles": [
        { "name": "pvc", "storage": { "type": "PVC", "pvc": { "claimName": "backups" } } },
    ]}}});
    groups
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&profiles))
        .await
        .expect("the backup profile");

    let Operator { context, controller } = live.operator("test");

    // Converged; the workload writes on the primary.
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
    for id in 0..200 {
        source
            .query_drop(format!("INSERT INTO app.orders VALUES ({id}, 'order {id}')"))
            .await
            .unwrap();
    }
    let row: (String, Option<u64>) =
        source.query_first("CHECKSUM TABLE app.orders").await.unwrap().unwrap();
    let source_sum = row.1.expect("a checksum of app.orders");
    drop(source);

    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NAMESPACE);
    let b1: MysqlBackup = serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
        "metadata": { "name": "b1", "namespace": NAMESPACE },
        "spec": { "failoverGroupRef": { "name": GROUP }, "profileName": "pvc" },
    }))
    .unwrap();
    backups.create(&post, &b1).await.expect("MysqlBackup b1");
    wait_for("backup b1 Succeeded with its gtidExecuted", || async {
        let status = backups.get("b1").await.ok()?.status?;
        assert_ne!(status.phase, Some(BackupPhase::Failed), "b1 failed: {}", live.job_logs());
        (status.phase == Some(BackupPhase::Succeeded) && status.gtid_executed.is_some())
            .then_some(())
    })
    .await;

    // A verification of the good backup: Succeeded, Verified=True, the source's checksum.
    let api: Api<MysqlBackupVerification> = Api::namespaced(client.clone(), NAMESPACE);
    api.create(&post, &verification("v-good", "b1")).await.expect("v-good");
    let good = terminal(&api, "v-good").await;
    let status = good.status.clone().unwrap();
    assert_eq!(
        status.phase,
        Some(VerificationPhase::Succeeded),
        "{status:#?}\nthe Jobs' logs: {}",
        live.job_logs()
    );
    assert_eq!(verified(&good), (ConditionStatus::True, "RestoreVerified".to_owned()));
    assert_eq!(status.backup_ref.as_ref().and_then(|b| b.name.as_deref()), Some("b1"));
    assert_eq!(status.job_name.as_deref(), Some("mysqlverify-v-good"));
    assert!(status.start_time.is_some() && status.completion_time.is_some(), "{status:#?}");
    let logs = live.job_logs();
    let line = format!("BLOODRAVEN_VERIFY_TABLE app.orders checksum={source_sum}");
    assert!(logs.contains(&line), "the restored table's checksum is the source's ({line}): {logs}");
    wait_for("VerificationStarted and VerificationSucceeded Events", || async {
        let reasons = event_reasons(lab, "v-good");
        (reasons.iter().any(|r| r == "VerificationStarted")
            && reasons.iter().any(|r| r == "VerificationSucceeded"))
        .then_some(())
    })
    .await;

    // Flip bytes in the dump chunk (same size): the digest refuses it.
    let chunk = folder.join("b1/dump-00000.sql.zst");
    let original = std::fs::read(&chunk).expect("the dump chunk");
    let mut flipped = original.clone();
    let middle = flipped.len() / 2;
    for byte in &mut flipped[middle..(middle + 8).min(original.len())] {
        *byte ^= 0xff;
    }
    std::fs::write(&chunk, &flipped).unwrap();
    api.create(&post, &verification("v-flipped", "b1")).await.expect("v-flipped");
    let flipped_v = terminal(&api, "v-flipped").await;
    assert_eq!(flipped_v.status.as_ref().unwrap().phase, Some(VerificationPhase::Failed));
    assert_eq!(verified(&flipped_v), (ConditionStatus::False, "BackupArtifactDamaged".to_owned()));

    // Truncated: the size recorded in @.done.json refuses it before any server starts.
    std::fs::write(&chunk, &original[..original.len() / 2]).unwrap();
    api.create(&post, &verification("v-truncated", "b1")).await.expect("v-truncated");
    let truncated = terminal(&api, "v-truncated").await;
    assert_eq!(truncated.status.as_ref().unwrap().phase, Some(VerificationPhase::Failed));
    assert_eq!(verified(&truncated), (ConditionStatus::False, "PITRBackupIncomplete".to_owned()));
    let message = truncated.status.as_ref().unwrap().message.clone().unwrap_or_default();
    assert!(message.contains("dump-00000.sql.zst"), "the message names the chunk: {message}");
    for name in ["v-flipped", "v-truncated"] {
        wait_for(&format!("a VerificationFailed Event on {name}"), || async {
            event_reasons(lab, name).iter().any(|r| r == "VerificationFailed").then_some(())
        })
        .await;
    }

    controller.abort();
    let _ = controller.await;
    drop(context);
    live.stop().await;
}
