//! Schedules, retention and artifact cleanup in the live lab (lab API server, lab kubelet
//! running real MySQL 9.7 sites, Jobs as `bloodraven-sidecar` processes and CronJobs on a
//! scaled clock, SeaweedFS for S3, the operator in this process; `source scripts/provision.sh`
//! and `cargo build -p bloodraven-sidecar`): a PVC and an S3 profile, each with `keepLast: 1`
//! and a `* * * * *` schedule (one run every 20 s at 3× speed). The operator renders the
//! CronJobs `mysql-orders-backup-<schedule>`, turns their runs into MysqlBackups, and once a
//! newer backup of a profile succeeds retention deletes the older one: its cleanup Job deletes
//! the artifact (on the claim and in the bucket), then the finalizer goes and the CR with it.
//! An ad-hoc backup with `deletionPolicy: Retain` is pruned the same way but its artifact stays.

use std::time::Duration;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_kubelet::cronjob::CronConfig;
use bloodraven_store::testing::{ACCESS_KEY, SECRET_KEY, SeaweedFs};
use bloodraven_store::{ObjectStore, list_all};
use k8s_openapi::api::batch::v1::CronJob;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::harness::Operator;
use super::live_lab::{LiveLab, LiveLabOptions, bounded_wait_for, events};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
/// Generous: CI shares 2 cores with other real servers.
const BOUND: Duration = Duration::from_secs(300);

bounded_wait_for!(BOUND, Duration::from_millis(500));

/// The newest Succeeded backup of `profile` created by a schedule and not being deleted (an
/// older one may already be on its way out).
async fn first_scheduled_success(backups: &Api<MysqlBackup>, profile: &str) -> MysqlBackup {
    wait_for(&format!("a scheduled {profile} backup to succeed"), || async {
        let list = backups.list(&ListParams::default()).await.ok()?;
        list.items
            .into_iter()
            .filter(|b| b.metadata.deletion_timestamp.is_none())
            .filter(|b| {
                b.spec.profile_name == profile
                    && b.metadata
                        .labels
                        .as_ref()
                        .is_some_and(|l| l.contains_key("bloodraven.shipstream.io/backup-schedule"))
                    && b.status.as_ref().and_then(|s| s.phase.clone())
                        == Some(BackupPhase::Succeeded)
            })
            .max_by_key(|b| b.metadata.creation_timestamp.clone())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_fire_retention_prunes_and_cleanup_deletes_the_artifact_on_pvc_and_s3() {
    let weed = SeaweedFs::start().unwrap_or_else(|error| panic!("SeaweedFS: {error}"));
    let bucket = weed.bucket_store("backups", "").await.unwrap_or_else(|error| panic!("{error}"));
    let live = LiveLab::start(LiveLabOptions {
        crds: &["mysqlfailovergroups", "mysqlbackups", "mysqlbackupverifications"],
        job_env: Some(&["BLOODRAVEN_MYSQLDUMP"]),
        // Three cron minutes per real minute: `* * * * *` fires every 20 s.
        cronjobs: Some(CronConfig::new().speedup(3)),
        ..LiveLabOptions::sites(NAMESPACE)
    })
    .await;
    let (lab, client) = (&live.lab, &live.client);

    let post = PostParams::default();
    let (_claim, folder) = live.create_backup_claim().await;
    live.create_s3_keys(ACCESS_KEY, SECRET_KEY).await;
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);
    let profiles = json!({ "spec": { "backup": { "profiles": [
        { "name": "pvc", "retention": { "keepLast": 1 },
          "storage": { "type": "PVC", "pvc": { "claimName": "backups" } } },
        { "name": "s3", "retention": { "keepLast": 1 }, "storage": { "type": "S3", "s3": {
            "bucket": "backups", "prefix": "orders", "endpointURL": weed.endpoint(),
            "region": "us-east-1", "credentialsSecretName": "s3-keys" } } },
    ]}}});
    groups
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&profiles))
        .await
        .expect("the backup profiles");

    let Operator { context, controller } = live.operator("test");

    wait_for("the group to converge", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let active = status.active_site?;
        let all = status
            .sites
            .iter()
            .filter(|site| site.name != active)
            .all(|site| site.replicating == Some(true));
        (all && status.sites.len() == 3).then_some(())
    })
    .await;

    // An ad-hoc Retain backup first: pruned once a scheduled pvc backup succeeds.
    let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NAMESPACE);
    let keep: MysqlBackup = serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
        "metadata": { "name": "keep", "namespace": NAMESPACE },
        "spec": { "failoverGroupRef": { "name": GROUP }, "profileName": "pvc", "deletionPolicy": "Retain" },
    }))
    .unwrap();
    backups.create(&post, &keep).await.expect("MysqlBackup keep");
    wait_for("backup keep Succeeded with its finalizer", || async {
        let found = backups.get("keep").await.ok()?;
        let phase = found.status.as_ref().and_then(|s| s.phase.clone());
        assert_ne!(phase, Some(BackupPhase::Failed), "keep failed: {:#?}", found.status);
        let finalized = found
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "bloodraven.shipstream.io/mysqlbackup");
        (phase == Some(BackupPhase::Succeeded) && finalized).then_some(())
    })
    .await;

    // The schedules, as CronJobs of the spec's names.
    let schedules = json!({ "spec": { "backup": { "schedules": [
        { "name": "pvc-often", "profileName": "pvc", "schedule": "* * * * *" },
        { "name": "s3-often", "profileName": "s3", "schedule": "* * * * *" },
    ]}}});
    groups
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&schedules))
        .await
        .expect("the schedules");
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), NAMESPACE);
    for name in ["mysql-orders-backup-pvc-often", "mysql-orders-backup-s3-often"] {
        let cronjob =
            wait_for(&format!("CronJob {name}"), || async { cronjobs.get(name).await.ok() }).await;
        assert_eq!(cronjob.spec.schedule, "* * * * *");
        assert_eq!(cronjob.spec.time_zone.as_deref(), Some("Etc/UTC"));
    }

    // PVC: the first scheduled success is pruned once the next one succeeds; its cleanup Job
    // deletes its directory and stamp, then the finalizer and the CR go.
    let first = first_scheduled_success(&backups, "pvc").await;
    let first_name = first.metadata.name.clone().unwrap();
    assert!(folder.join(&first_name).join("@.done.json").is_file(), "{first_name} written");
    // The Retain backup went when a newer pvc backup succeeded; its artifact stays.
    wait_for("backup keep deleted by retention", || async {
        backups.get_opt("keep").await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(folder.join("keep/@.done.json").is_file(), "a Retain backup's artifact stays");
    assert!(
        events(lab, "keep")
            .iter()
            .any(|(reason, note)| reason == "ArtifactRetained" && note.contains("/backups/keep")),
        "{:?}",
        events(lab, "keep")
    );
    wait_for(&format!("backup {first_name} deleted by retention and cleaned up"), || async {
        backups.get_opt(&first_name).await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(!folder.join(&first_name).exists(), "{first_name}'s directory is gone");
    assert!(
        !folder.join(format!("{first_name}.bloodraven-backup.json")).exists(),
        "its stamp is gone"
    );
    let cleaned = events(lab, &first_name);
    assert!(
        cleaned.iter().any(|(reason, _)| reason == "ArtifactCleanupStarted")
            && cleaned
                .iter()
                .any(|(reason, note)| reason == "ArtifactCleanupSucceeded"
                    && note.contains("objects")),
        "{cleaned:?}"
    );

    // S3: the same in the bucket.
    let first_s3 = first_scheduled_success(&backups, "s3").await;
    let s3_name = first_s3.metadata.name.clone().unwrap();
    let written = list_all(&bucket, &format!("orders/{s3_name}/")).await.expect("a listing");
    assert!(!written.is_empty(), "{s3_name} is in the bucket");
    wait_for(&format!("backup {s3_name} deleted by retention and cleaned up"), || async {
        backups.get_opt(&s3_name).await.ok()?.is_none().then_some(())
    })
    .await;
    let left = list_all(&bucket, &format!("orders/{s3_name}/")).await.expect("a listing");
    assert!(left.is_empty(), "the cleanup deleted every object: {left:?}");
    assert!(
        bucket.head(&format!("orders/{s3_name}.bloodraven-backup.json")).await.is_err(),
        "the stamp is gone"
    );
    assert!(
        events(lab, &s3_name).iter().any(|(reason, _)| reason == "ArtifactCleanupSucceeded"),
        "{:?}",
        events(lab, &s3_name)
    );

    // Suspend the schedules so no run starts while everything stops.
    let suspend = json!({ "spec": { "backup": { "schedules": [
        { "name": "pvc-often", "profileName": "pvc", "schedule": "* * * * *", "suspend": true },
        { "name": "s3-often", "profileName": "s3", "schedule": "* * * * *", "suspend": true },
    ]}}});
    groups.patch(GROUP, &PatchParams::default(), &Patch::Merge(&suspend)).await.expect("suspend");
    controller.abort();
    let _ = controller.await;
    drop(context);
    live.stop().await;
    drop(weed);
}
