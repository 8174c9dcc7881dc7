//! The backup controller's pure parts: the backup Job (`backup::job`) and the status a Job's
//! state and log give a backup (`backup::verdict`).

use std::collections::BTreeMap;

use bloodraven_backup::names;
use bloodraven_crd::backup::{ArtifactStorage, BackupPhase, MysqlBackupStatus};
use bloodraven_crd::condition::{Condition, ConditionReason, ConditionType};
use bloodraven_crd::fixtures::{BackupFixture, GroupFixture};
use bloodraven_crd::group::{BackupStorage, PvcStorage, StorageType};
use bloodraven_operator::backup::job::{BuildError, Input, build, recorded_location};
use bloodraven_operator::backup::verdict::{JOB_FAILED, job_state, next_status};
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

fn creds() -> BTreeMap<String, ByteString> {
    BTreeMap::from([
        ("MYSQL_USER".to_owned(), ByteString(b"bloodraven_backup".to_vec())),
        ("MYSQL_PASSWORD".to_owned(), ByteString(b"pw\n".to_vec())),
    ])
}

fn env_of(job: &Job) -> BTreeMap<String, String> {
    let container = &job.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers[0];
    container
        .env
        .as_ref()
        .unwrap()
        .iter()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn an_s3_backup_job_reads_the_internal_service_and_records_its_destination() {
    let mut group = GroupFixture::three_sites().with_s3_profile("nightly-s3").build();
    group.metadata.uid = Some("group-uid".into());
    let mut backup = BackupFixture::new("b1", "orders", "nightly-s3").build();
    backup.metadata.uid = Some("backup-uid".into());
    let profile = group.spec.backup.as_ref().unwrap().profiles[0].clone();
    let site = group.spec.sites[1].clone();
    let credentials = creds();
    let built = build(&Input {
        backup: &backup,
        group: &group,
        profile: &profile,
        site: &site,
        image: "sidecar:1".into(),
        pitr_archive_id: "ar1-x".into(),
        credentials: &credentials,
        attempt: 1,
    })
    .unwrap();
    assert_eq!(built.job.metadata.name.as_deref(), Some("mysqlbackup-b1"));
    let env = env_of(&built.job);
    assert_eq!(env["MYSQL_HOST"], "mysql-orders-pdx-internal.orders.svc.cluster.local");
    assert_eq!(env["BLOODRAVEN_SOURCE_SERVER_ID"], site.server_id.to_string());
    assert_eq!(env["BLOODRAVEN_BACKUP_LOCATION"], "s3://shipstream-backups/orders/b1");
    assert_eq!(env["BLOODRAVEN_STORAGE_TYPE"], "S3");
    assert!(!env.contains_key("MYSQL_PASSWORD"), "credentials are files, never env");
    assert_eq!(recorded_location(&built.job).as_deref(), Some("s3://shipstream-backups/orders/b1"));
    assert_eq!(
        built.artifact_storage.location.as_deref(),
        Some("s3://shipstream-backups/orders/b1")
    );
    assert_eq!(built.artifact_storage.bucket.as_deref(), Some("shipstream-backups"));
    let annotations = built.job.metadata.annotations.clone().unwrap();
    assert_eq!(annotations[names::ARCHIVE_ID_ANNOTATION], "ar1-x");
    assert_eq!(annotations[names::GROUP_UID_ANNOTATION], "group-uid");
    assert_eq!(built.secret.data.as_ref().unwrap()["MYSQL_PASSWORD"], ByteString(b"pw\n".to_vec()));
    let owner = &built.job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("MysqlBackup", "backup-uid"));
    let pod = built.job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(pod.security_context.as_ref().unwrap().run_as_user, Some(27));
}

#[test]
fn a_pvc_backup_mounts_the_claim_at_backups() {
    let mut group = GroupFixture::three_sites().with_s3_profile("daily").build();
    let profile = &mut group.spec.backup.as_mut().unwrap().profiles[0];
    profile.storage = BackupStorage {
        type_: StorageType::Pvc,
        s3: None,
        pvc: Some(PvcStorage {
            provisioned: None,
            claim_name: Some("my-claim".into()),
            sub_path: Some("x".into()),
        }),
    };
    let profile = profile.clone();
    let mut backup = BackupFixture::new("b2", "orders", "daily").build();
    backup.metadata.uid = Some("u".into());
    let site = group.spec.sites[0].clone();
    let credentials = creds();
    let built = build(&Input {
        backup: &backup,
        group: &group,
        profile: &profile,
        site: &site,
        image: "sidecar:1".into(),
        pitr_archive_id: String::new(),
        credentials: &credentials,
        attempt: 1,
    })
    .unwrap();
    assert_eq!(env_of(&built.job)["BLOODRAVEN_BACKUP_LOCATION"], "/backups/x/b2");
    assert_eq!(built.artifact_storage.claim_name.as_deref(), Some("my-claim"));
    let pod = built.job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let claim = pod
        .volumes
        .as_ref()
        .unwrap()
        .iter()
        .find_map(|v| v.persistent_volume_claim.clone())
        .unwrap();
    assert_eq!(claim.claim_name, "my-claim");
}

#[test]
fn missing_inputs_are_named() {
    let group = GroupFixture::three_sites().with_s3_profile("p").build();
    let backup = BackupFixture::new("b3", "orders", "p").build();
    let profile = group.spec.backup.as_ref().unwrap().profiles[0].clone();
    let site = group.spec.sites[0].clone();
    let credentials = creds();
    let mut input = Input {
        backup: &backup,
        group: &group,
        profile: &profile,
        site: &site,
        image: "i".into(),
        pitr_archive_id: String::new(),
        credentials: &credentials,
        attempt: 1,
    };
    assert_eq!(build(&input).unwrap_err(), BuildError::NoUid);
    let mut with_uid = backup.clone();
    with_uid.metadata.uid = Some("u".into());
    input.backup = &with_uid;
    let empty = BTreeMap::new();
    input.credentials = &empty;
    assert!(matches!(build(&input).unwrap_err(), BuildError::MissingKey { .. }));
}

fn time(text: &str) -> Time {
    Time(text.parse().unwrap())
}

fn job(condition: Option<(&str, &str)>) -> Job {
    Job {
        status: Some(JobStatus {
            start_time: Some(time("2026-11-05T09:30:00Z")),
            completion_time: condition
                .filter(|(t, _)| *t == "Complete")
                .map(|_| time("2026-11-05T09:31:00Z")),
            conditions: condition.map(|(type_, message)| {
                vec![JobCondition {
                    type_: type_.to_owned(),
                    status: "True".to_owned(),
                    message: Some(message.to_owned()),
                    last_transition_time: Some(time("2026-11-05T09:31:00Z")),
                    ..JobCondition::default()
                }]
            }),
            ..JobStatus::default()
        }),
        ..Job::default()
    }
}

fn recorded() -> MysqlBackupStatus {
    MysqlBackupStatus {
        job_name: Some("mysqlbackup-b1".into()),
        artifact_storage: Some(ArtifactStorage {
            location: Some("s3://bk/orders/b1".into()),
            ..ArtifactStorage::default()
        }),
        ..MysqlBackupStatus::default()
    }
}

fn ready(status: &MysqlBackupStatus) -> &Condition {
    status.conditions.iter().find(|c| c.type_ == ConditionType::Ready).unwrap()
}

#[test]
fn a_running_job_is_running() {
    let now = time("2026-11-05T09:30:05Z");
    let next = next_status(&recorded(), &job_state(&job(None)), None, &now);
    assert_eq!(next.phase, Some(BackupPhase::Running));
    assert_eq!(ready(&next).reason, Some(ConditionReason::Running));
    assert_eq!(next.start_time, Some(time("2026-11-05T09:30:00Z")));
}

#[test]
fn a_finished_job_records_the_sentinels_observations() {
    let now = time("2026-11-05T09:32:00Z");
    let log = "noise\nBLOODRAVEN_DUMP_COMPLETE v=2 location=s3://bk/orders/b1 sizeBytes=42 gtidExecuted=3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5 binlogFile=binlog.000002 binlogPos=157\n";
    let next = next_status(&recorded(), &job_state(&job(Some(("Complete", "")))), Some(log), &now);
    assert_eq!(next.phase, Some(BackupPhase::Succeeded));
    assert!(ready(&next).is_true());
    assert_eq!(next.gtid_executed.as_deref(), Some("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"));
    assert_eq!(next.size_bytes, Some(42));
    assert_eq!(next.completion_time, Some(time("2026-11-05T09:31:00Z")));
    let metadata =
        next.conditions.iter().find(|c| c.type_ == ConditionType::MetadataComplete).unwrap();
    assert!(metadata.is_true());
    // Re-reconciling changes nothing.
    let again = next_status(
        &next,
        &job_state(&job(Some(("Complete", "")))),
        Some(log),
        &time("2026-11-05T10:00:00Z"),
    );
    assert_eq!(again, next);
}

#[test]
fn a_sentinel_for_another_location_or_none_is_reported() {
    let now = time("2026-11-05T09:32:00Z");
    let state = job_state(&job(Some(("Complete", ""))));
    let other = "BLOODRAVEN_DUMP_COMPLETE v=2 location=s3://bk/other/b1";
    let reason = |log: Option<&str>| {
        let next = next_status(&recorded(), &state, log, &now);
        next.conditions
            .iter()
            .find(|c| c.type_ == ConditionType::MetadataComplete)
            .unwrap()
            .reason
            .clone()
    };
    assert_eq!(reason(Some(other)), Some(ConditionReason::LocationMismatch));
    assert_eq!(reason(Some("no sentinel")), Some(ConditionReason::SentinelMissing));
    assert_eq!(reason(None), Some(ConditionReason::SentinelUnavailable));
}

#[test]
fn success_needs_a_recorded_destination() {
    let now = time("2026-11-05T09:32:00Z");
    let next = next_status(
        &MysqlBackupStatus::default(),
        &job_state(&job(Some(("Complete", "")))),
        None,
        &now,
    );
    assert_ne!(next.phase, Some(BackupPhase::Succeeded));
}

#[test]
fn a_failed_job_fails_the_backup_with_the_logs_error() {
    let now = time("2026-11-05T09:32:00Z");
    let log = "INFO backup started\nError: backup failed\n";
    let next = next_status(
        &recorded(),
        &job_state(&job(Some(("Failed", "BackoffLimitExceeded")))),
        Some(log),
        &now,
    );
    assert_eq!(next.phase, Some(BackupPhase::Failed));
    let ready = ready(&next);
    assert_eq!(ready.reason, Some(ConditionReason::parse(JOB_FAILED)));
    assert!(ready.message.as_deref().unwrap().contains("Error: backup failed"), "{ready:?}");
}

/// One reconcile pass against the lab API server (no MySQL, no kubelet: the test plays the
/// Job's kubelet by writing the Job's status).
mod against_the_lab {
    use bloodraven_crd::MysqlFailoverGroup;
    use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
    use bloodraven_crd::condition::{ConditionReason, ConditionType};
    use bloodraven_lab::{Lab, LabConfig};
    use bloodraven_operator::backup::reconcile::{Outcome, reconcile};
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::api::{Api, Patch, PatchParams, PostParams};
    use serde_json::json;

    const NS: &str = "orders";

    /// Bounds a test body; the panic names the bound.
    async fn bounded<T>(seconds: u64, body: impl Future<Output = T>) -> T {
        match tokio::time::timeout(std::time::Duration::from_secs(seconds), body).await {
            Ok(value) => value,
            Err(_) => panic!("the test did not finish within {seconds} s"),
        }
    }

    fn now() -> Time {
        Time(jiff::Timestamp::now())
    }

    async fn start() -> (Lab, kube::Client) {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        for crd in [
            "deploy/crds/mysqlfailovergroups.shipstream.io.yaml",
            "deploy/crds/mysqlbackups.shipstream.io.yaml",
        ] {
            let text = std::fs::read_to_string(format!("{root}/{crd}")).expect(crd);
            lab.load_crds(&text).expect(crd);
        }
        let example =
            std::fs::read_to_string(format!("{root}/deploy/examples/group.yaml")).unwrap();
        lab.apply_yaml(&example).expect("the example group");
        let url = lab.url().parse().unwrap();
        let client = kube::Client::try_from(kube::Config::new(url)).unwrap();
        let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NS);
        let profile = json!({"spec": {"backup": {"profiles": [{
            "name": "nightly",
            "storage": {"type": "S3", "s3": {"bucket": "bk", "prefix": "orders", "credentialsSecretName": "s3-creds"}}
        }]}}});
        groups
            .patch("orders", &PatchParams::default(), &Patch::Merge(&profile))
            .await
            .expect("the profile");
        let status = json!({"status": {"activeSite": "iad", "sites": [
            {"name": "iad", "state": "writable"},
            {"name": "pdx", "state": "read-only", "replicating": true, "secondsBehindSource": 0},
            {"name": "fra", "state": "unreachable"}
        ]}});
        groups
            .patch_status("orders", &PatchParams::default(), &Patch::Merge(&status))
            .await
            .expect("the status");
        (lab, client)
    }

    async fn create_backup(client: &kube::Client, name: &str, source_site: Option<&str>) {
        let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NS);
        let mut spec = json!({"failoverGroupRef": {"name": "orders"}, "profileName": "nightly"});
        if let Some(site) = source_site {
            spec["sourceSite"] = site.into();
        }
        let backup: MysqlBackup = serde_json::from_value(json!({
            "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
            "metadata": {"name": name, "namespace": NS}, "spec": spec
        }))
        .unwrap();
        backups.create(&PostParams::default(), &backup).await.expect("the backup");
    }

    #[tokio::test]
    async fn a_backup_gets_a_job_on_the_replica_and_succeeds_when_the_job_completes() {
        bounded(60, async {
            let (_lab, client) = start().await;
            create_backup(&client, "b1", None).await;
            let outcome = reconcile(&client, NS, "b1", "sidecar:test", now()).await.unwrap();
            assert_eq!(outcome, Outcome::JobCreated("mysqlbackup-b1".into()));
            let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NS);
            let status = backups.get("b1").await.unwrap().status.unwrap();
            assert_eq!(status.phase, Some(BackupPhase::Running));
            assert_eq!(status.source_site.as_deref(), Some("pdx"), "the healthy replica is the source");
            assert_eq!(
                status.artifact_storage.as_ref().and_then(|a| a.location.as_deref()),
                Some("s3://bk/orders/b1")
            );
            let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
            let job = jobs.get("mysqlbackup-b1").await.unwrap();
            let container = &job.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers[0];
            let host = container.env.as_ref().unwrap().iter().find(|e| e.name == "MYSQL_HOST").unwrap();
            assert_eq!(host.value.as_deref(), Some("mysql-orders-pdx-internal.orders.svc.cluster.local"));
            let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
            let secret = secrets.get("mysqlbackup-b1-creds").await.unwrap();
            assert!(secret.data.unwrap().contains_key("MYSQL_PASSWORD"));

            // Running until the Job completes; then Succeeded.
            assert_eq!(
                reconcile(&client, NS, "b1", "sidecar:test", now()).await.unwrap(),
                Outcome::Observed(Some(BackupPhase::Running))
            );
            let done = json!({"status": {
                "startTime": "2026-11-05T09:30:00Z", "completionTime": "2026-11-05T09:31:00Z",
                "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "2026-11-05T09:31:00Z"}]
            }});
            jobs.patch_status("mysqlbackup-b1", &PatchParams::default(), &Patch::Merge(&done)).await.unwrap();
            assert_eq!(
                reconcile(&client, NS, "b1", "sidecar:test", now()).await.unwrap(),
                Outcome::Observed(Some(BackupPhase::Succeeded))
            );
            let status = backups.get("b1").await.unwrap().status.unwrap();
            assert_eq!(status.completion_time.map(|t| t.0.to_string()), Some("2026-11-05T09:31:00Z".into()));
            let metadata = status.conditions.iter().find(|c| c.type_ == ConditionType::MetadataComplete).unwrap();
            assert_eq!(metadata.reason, Some(ConditionReason::SentinelUnavailable), "no pod log in the lab");
            assert_eq!(reconcile(&client, NS, "b1", "sidecar:test", now()).await.unwrap(), Outcome::Done);
        })
        .await;
    }

    #[tokio::test]
    async fn a_backup_of_a_group_with_pitr_on_pins_and_stamps_its_active_archive() {
        bounded(60, async {
            let (_lab, client) = start().await;
            let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NS);
            let pitr =
                json!({"spec": {"backup": {"pitr": {"enabled": true, "profileName": "nightly"}}}});
            groups
                .patch("orders", &PatchParams::default(), &Patch::Merge(&pitr))
                .await
                .expect("PITR on");
            let group = groups.get("orders").await.unwrap();
            let render = bloodraven_workloads::pitr::render(&group).unwrap().expect("PITR renders");
            let archive = render.archive_id.to_string();
            assert!(archive.starts_with("ar1-"), "{archive}");

            create_backup(&client, "b1", None).await;
            let outcome = reconcile(&client, NS, "b1", "sidecar:test", now()).await.unwrap();
            assert_eq!(outcome, Outcome::JobCreated("mysqlbackup-b1".into()));
            let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NS);
            let status = backups.get("b1").await.unwrap().status.unwrap();
            assert_eq!(status.pitr_archive_id.as_deref(), Some(archive.as_str()));
            let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
            let job = jobs.get("mysqlbackup-b1").await.unwrap();
            let annotations = job.metadata.annotations.unwrap_or_default();
            assert_eq!(annotations.get("bloodraven.shipstream.io/pitr-archive-id"), Some(&archive));
            let container =
                &job.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers[0];
            let env = container
                .env
                .as_ref()
                .unwrap()
                .iter()
                .find(|e| e.name == "BLOODRAVEN_PITR_ARCHIVE_ID");
            assert_eq!(
                env.and_then(|e| e.value.as_deref()),
                Some(archive.as_str()),
                "the dump's stamp names it"
            );
        })
        .await;
    }

    #[tokio::test]
    async fn a_pinned_unusable_site_fails_at_once_without_a_job() {
        bounded(60, async {
            let (_lab, client) = start().await;
            create_backup(&client, "pinned", Some("fra")).await;
            let outcome = reconcile(&client, NS, "pinned", "sidecar:test", now()).await.unwrap();
            assert!(matches!(outcome, Outcome::Failed(ref m) if m.contains("fra")), "{outcome:?}");
            let backups: Api<MysqlBackup> = Api::namespaced(client.clone(), NS);
            let status = backups.get("pinned").await.unwrap().status.unwrap();
            assert_eq!(status.phase, Some(BackupPhase::Failed));
            let ready = status.conditions.iter().find(|c| c.type_ == ConditionType::Ready).unwrap();
            assert_eq!(ready.reason, Some(ConditionReason::NoHealthySource));
            let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
            assert!(
                jobs.get_opt("mysqlbackup-pinned").await.unwrap().is_none(),
                "no Job for a failed selection"
            );
        })
        .await;
    }
}
