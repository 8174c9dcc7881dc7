//! The PITR render: what the sidecar container gets when `spec.backup.pitr` is enabled.

#![allow(clippy::unwrap_used, reason = "test helpers; failures are test failures")]

use std::collections::BTreeMap;

use bloodraven_archive::{ArchiveId, Destination};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::fixtures::GroupFixture;
use bloodraven_crd::group::{
    BackupProfile, BackupStorage, PitrSpec, ProvisionedClaim, PvcStorage, StorageType,
};
use bloodraven_workloads::{WorkloadError, containers, labels, pitr, sidecar_env, site_objects};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, EnvVar, SecretKeySelector};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

const UID: &str = "8d0e8a34-5a8e-4c1e-9f59-0f3c2b1a7d11";

fn with_pitr(mut group: MysqlFailoverGroup, profile: &str) -> MysqlFailoverGroup {
    group.spec.backup.get_or_insert_with(Default::default).pitr = Some(PitrSpec {
        enabled: Some(true),
        profile_name: Some(profile.to_owned()),
        max_binlog_size: None,
        archive_poll_interval: None,
    });
    group
}

fn s3_group() -> MysqlFailoverGroup {
    with_pitr(GroupFixture::three_sites().with_s3_profile("nightly").build(), "nightly")
}

fn pvc_group() -> MysqlFailoverGroup {
    let mut group = GroupFixture::three_sites().build();
    group.spec.backup.get_or_insert_with(Default::default).profiles.push(BackupProfile {
        name: "local".to_owned(),
        storage: BackupStorage {
            type_: StorageType::Pvc,
            s3: None,
            pvc: Some(PvcStorage {
                provisioned: Some(ProvisionedClaim {
                    storage_class_name: None,
                    size: Quantity("50Gi".to_owned()),
                }),
                claim_name: None,
                sub_path: Some("lion".to_owned()),
            }),
        },
        dump: None,
        retention: None,
        encryption: None,
        verification: None,
    });
    with_pitr(group, "local")
}

fn sidecar(deployment: &Deployment) -> &Container {
    let pod = deployment.spec.template.spec.as_ref().unwrap();
    pod.containers.iter().find(|c| c.name == containers::SIDECAR).unwrap()
}

fn literal_env(container: &Container) -> BTreeMap<String, String> {
    container
        .env
        .iter()
        .flatten()
        .filter_map(|var| Some((var.name.clone(), var.value.clone()?)))
        .collect()
}

fn env_var<'a>(container: &'a Container, name: &str) -> Option<&'a EnvVar> {
    container.env.iter().flatten().find(|var| var.name == name)
}

#[test]
fn an_s3_archive_renders_its_identity_and_the_credentials_secret() {
    let group = s3_group();
    let objects = site_objects(&group, "pdx").unwrap();
    let container = sidecar(&objects.deployment);
    let env = literal_env(container);
    let destination = Destination::S3 {
        bucket: "shipstream-backups".to_owned(),
        prefix: "orders".to_owned(),
        endpoint: String::new(),
    }
    .normalize()
    .unwrap();
    let id = ArchiveId::derive(UID, &destination);
    assert_eq!(env[sidecar_env::PITR_ARCHIVE_ID], id.to_string());
    assert_eq!(env[sidecar_env::PITR_DESTINATION], destination.to_string());
    assert_eq!(env[sidecar_env::FAILOVER_GROUP_UID], UID);
    assert_eq!(env[sidecar_env::PITR_ENCRYPTION_MODE], "None");
    assert_eq!(env[sidecar_env::SITE_NAME], "pdx");
    assert_eq!(env[sidecar_env::SITE], "pdx");
    assert_eq!(env[sidecar_env::GROUP_NAMESPACE], "orders");
    assert_eq!(env[sidecar_env::GROUP_NAME], "orders");
    assert_eq!(env[sidecar_env::MYSQL_DATA_DIR], "/var/lib/mysql");
    // The managed my.cnf says `log_bin = mysql-bin`: the index is mysql-bin.index.
    assert_eq!(env[sidecar_env::BINLOG_INDEX], "mysql-bin.index");
    assert_eq!(env[sidecar_env::AWS_REGION], "us-east-1");
    for (name, optional) in [
        (sidecar_env::AWS_ACCESS_KEY_ID, None),
        (sidecar_env::AWS_SECRET_ACCESS_KEY, None),
        (sidecar_env::AWS_SESSION_TOKEN, Some(true)),
    ] {
        let var = env_var(container, name).unwrap_or_else(|| panic!("{name} is not rendered"));
        let selector = var.value_from.as_ref().unwrap().secret_key_ref.as_ref().unwrap();
        assert_eq!(selector.name, "s3-backup-creds", "{name}");
        assert_eq!(selector.key, name);
        assert_eq!(selector.optional, optional, "{name}");
    }
    // The binlogs, read-only; no PVC archive volume for S3.
    let mounts = container.volume_mounts.as_ref().unwrap();
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].mount_path, "/var/lib/mysql");
    assert_eq!(mounts[0].read_only, Some(true));
    let template = objects.deployment.spec.template.clone();
    let annotations = template.metadata.unwrap().annotations.unwrap();
    assert!(annotations[labels::PITR_RENDER].contains(id.as_str()));
}

#[test]
fn a_pvc_archive_mounts_its_claim_where_the_store_checks_it() {
    let group = pvc_group();
    let objects = site_objects(&group, "iad").unwrap();
    let container = sidecar(&objects.deployment);
    let env = literal_env(container);
    assert_eq!(
        env[sidecar_env::PITR_DESTINATION],
        "pvc://orders/mysql-orders-backup-local/lion/binlogs"
    );
    let mounts = container.volume_mounts.as_ref().unwrap();
    let archive = mounts.iter().find(|m| m.name == sidecar_env::PITR_ARCHIVE_VOLUME).unwrap();
    assert_eq!(archive.mount_path, "/run/bloodraven/pitr-archive");
    let pod = objects.deployment.spec.template.spec.clone().unwrap();
    let volume =
        pod.volumes.unwrap().into_iter().find(|v| v.name == sidecar_env::PITR_ARCHIVE_VOLUME);
    assert_eq!(
        volume.unwrap().persistent_volume_claim.unwrap().claim_name,
        "mysql-orders-backup-local"
    );
    assert!(env_var(container, sidecar_env::AWS_ACCESS_KEY_ID).is_none());
}

#[test]
fn pitr_off_renders_no_archiver_and_a_changed_render_rolls_the_pods() {
    let off = GroupFixture::three_sites().with_s3_profile("nightly").build();
    let objects = site_objects(&off, "iad").unwrap();
    let container = sidecar(&objects.deployment);
    assert!(env_var(container, sidecar_env::PITR_ARCHIVE_ID).is_none());
    assert!(container.volume_mounts.is_none());
    let annotations = |group: &MysqlFailoverGroup| {
        site_objects(group, "iad").unwrap().deployment.spec.template.metadata.unwrap().annotations
    };
    assert!(!annotations(&off).unwrap().contains_key(labels::PITR_RENDER));
    assert_ne!(annotations(&s3_group()), annotations(&pvc_group()));
}

#[test]
fn a_bad_pitr_profile_is_an_error_naming_it() {
    let group = with_pitr(GroupFixture::three_sites().build(), "missing");
    let error = site_objects(&group, "iad").unwrap_err();
    assert_eq!(error, WorkloadError::UnknownPitrProfile { profile: "missing".to_owned() });
    assert!(error.to_string().contains("\"missing\""), "{error}");
    let mut no_uid = s3_group();
    no_uid.metadata.uid = None;
    assert_eq!(pitr::render(&no_uid).unwrap_err(), WorkloadError::MissingMetadata { field: "uid" });
}

/// `pvc_group` with its profile encrypting under `archive-key`/`phrase`.
fn encrypted_group() -> MysqlFailoverGroup {
    let mut group = pvc_group();
    let backup = group.spec.backup.as_mut().unwrap();
    backup.profiles[0].encryption = Some(bloodraven_crd::group::BackupEncryption {
        algorithm: None,
        passphrase_secret_key_ref: SecretKeySelector {
            name: "archive-key".to_owned(),
            key: "phrase".to_owned(),
            optional: None,
        },
    });
    group
}

#[test]
fn an_encrypted_archive_mounts_only_the_passphrase_key_read_only_and_names_the_file() {
    let group = encrypted_group();
    let objects = site_objects(&group, "iad").unwrap();
    let container = sidecar(&objects.deployment);
    let env = literal_env(container);
    assert_eq!(env[sidecar_env::PITR_ENCRYPTION_MODE], "Passphrase");
    assert_eq!(env[sidecar_env::PITR_PASSPHRASE_FILE], "/run/bloodraven/pitr-key/passphrase");
    // The file the variable names is inside the key volume's mount.
    let mounts = container.volume_mounts.as_ref().unwrap();
    let key = mounts.iter().find(|m| m.name == sidecar_env::PITR_KEY_VOLUME).unwrap();
    assert_eq!(key.mount_path, "/run/bloodraven/pitr-key");
    assert_eq!(key.read_only, Some(true));
    assert_eq!(
        format!("{}/{}", key.mount_path, sidecar_env::PITR_PASSPHRASE_FILE_NAME),
        env[sidecar_env::PITR_PASSPHRASE_FILE]
    );
    // The mysql container never sees the key.
    let pod = objects.deployment.spec.template.spec.clone().unwrap();
    let mysql = pod.containers.iter().find(|c| c.name == containers::MYSQL).unwrap();
    assert!(
        mysql.volume_mounts.iter().flatten().all(|m| m.name != sidecar_env::PITR_KEY_VOLUME),
        "the mysql container mounts the passphrase"
    );
    let volume = pod.volumes.unwrap().into_iter().find(|v| v.name == sidecar_env::PITR_KEY_VOLUME);
    let secret = volume.unwrap().secret.unwrap();
    assert_eq!(secret.secret_name.as_deref(), Some("archive-key"));
    assert_eq!(secret.default_mode, Some(0o440));
    assert_eq!(bloodraven_workloads::PASSPHRASE_FILE_MODE, 0o440);
    // Optional: a missing Secret leaves mysqld running and the archiver stopped, never the pod.
    assert_eq!(secret.optional, Some(true));
    let items = secret.items.unwrap();
    assert_eq!(items.len(), 1, "only the passphrase key is projected");
    assert_eq!(items[0].key, "phrase");
    assert_eq!(items[0].path, "passphrase");
    assert_eq!(items[0].mode, Some(0o440));
    // Read by the sidecar's user (999) through the pod's fsGroup: the kubelet writes the file
    // as root, group fsGroup.
    let context = pod.security_context.as_ref().expect("the site pod renders a securityContext");
    assert_eq!(context.fs_group, Some(999));
    assert_eq!(context.fs_group_change_policy.as_deref(), Some("OnRootMismatch"));
    // The render names the key's source: another Secret rolls the pods.
    let annotations = |group: &MysqlFailoverGroup| {
        site_objects(group, "iad").unwrap().deployment.spec.template.metadata.unwrap().annotations
    };
    let mut moved = encrypted_group();
    moved.spec.backup.as_mut().unwrap().profiles[0]
        .encryption
        .as_mut()
        .unwrap()
        .passphrase_secret_key_ref
        .name = "archive-key-2".to_owned();
    assert_ne!(annotations(&group), annotations(&moved));
    assert!(annotations(&group).unwrap()[labels::PITR_RENDER].contains("key=archive-key/phrase"));
}

#[test]
fn a_plaintext_archive_mounts_no_key_and_names_no_key_file() {
    let objects = site_objects(&pvc_group(), "iad").unwrap();
    let container = sidecar(&objects.deployment);
    assert!(env_var(container, sidecar_env::PITR_PASSPHRASE_FILE).is_none());
    let pod = objects.deployment.spec.template.spec.clone().unwrap();
    assert!(pod.volumes.unwrap().iter().all(|v| v.secret.is_none()));
    // The archive claim is written by the sidecar's user through the same fsGroup.
    let context = pod.security_context.expect("the site pod renders a securityContext");
    assert_eq!(
        (context.fs_group, context.fs_group_change_policy.as_deref()),
        (
            Some(bloodraven_workloads::POD_FS_GROUP),
            Some(bloodraven_workloads::FS_GROUP_CHANGE_POLICY)
        )
    );
}
