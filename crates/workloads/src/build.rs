//! The objects the operator creates per site and per group, built from the group alone.

use std::collections::BTreeMap;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::{SiteRole, SiteSpec};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, EnvVarSource, ExecAction,
    HTTPGetAction, KeyToPath, ObjectFieldSelector, PersistentVolumeClaim,
    PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, PodSecurityContext, PodSpec,
    PodTemplateSpec, Probe, SecretKeySelector, SecretVolumeSource, Service, ServicePort,
    ServiceSpec, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use sha2::{Digest, Sha256};

use crate::error::WorkloadError;
use crate::labels::{self, containers, ports};
use crate::mycnf;
use crate::names::{self, SiteNames};
use crate::pitr::{self, PitrEncryption, PitrRender, PitrStorage};
use crate::sidecar_env;

/// The MySQL image when `spec.image` is empty.
pub const DEFAULT_MYSQL_IMAGE: &str = "mysql:9.7";
/// The sidecar image when `spec.sidecar.image` is empty: the operator's own version.
pub const DEFAULT_SIDECAR_IMAGE: &str =
    concat!("ghcr.io/shipstream/bloodraven-sidecar:", env!("CARGO_PKG_VERSION"));
/// The data claim's size when `storage.size` is empty.
pub const DEFAULT_STORAGE_SIZE: &str = "10Gi";
/// `terminationGracePeriodSeconds` of a MySQL pod (upstream's default): a clean InnoDB
/// shutdown needs time.
pub const TERMINATION_GRACE_SECONDS: i64 = 60;
/// The node label a site's `zone` selects.
pub const ZONE_NODE_LABEL: &str = "topology.kubernetes.io/zone";
/// The operator-secret key holding MySQL's root password (upstream's key).
pub const ROOT_PASSWORD_KEY: &str = "MYSQL_ROOT_PASSWORD";

/// The group's name, namespace and owner reference, checked once.
#[derive(Clone, Debug)]
struct Owner {
    name: String,
    namespace: String,
    reference: Option<OwnerReference>,
}

fn owner(group: &MysqlFailoverGroup) -> Result<Owner, WorkloadError> {
    let name =
        group.metadata.name.clone().ok_or(WorkloadError::MissingMetadata { field: "name" })?;
    let namespace = group
        .metadata
        .namespace
        .clone()
        .ok_or(WorkloadError::MissingMetadata { field: "namespace" })?;
    if name.len() > 63 {
        return Err(WorkloadError::LabelValueTooLong {
            what: "the group name",
            len: name.len(),
            value: name,
        });
    }
    let reference = group.metadata.uid.clone().map(|uid| OwnerReference {
        api_version: format!("{}/{}", bloodraven_crd::API_GROUP, bloodraven_crd::API_VERSION),
        kind: "MysqlFailoverGroup".to_owned(),
        name: name.clone(),
        uid,
        controller: Some(true),
        block_owner_deletion: Some(true),
    });
    Ok(Owner { name, namespace, reference })
}

impl Owner {
    fn meta(&self, name: String, labels: BTreeMap<String, String>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name),
            namespace: Some(self.namespace.clone()),
            labels: Some(labels),
            owner_references: self.reference.clone().map(|reference| vec![reference]),
            ..ObjectMeta::default()
        }
    }
}

/// Checks what the CRD's rules cannot: server ids are unique and the group's name fits in a
/// label value. Every builder also fails on these, this says it once for a whole group.
pub fn check_group(group: &MysqlFailoverGroup) -> Result<(), WorkloadError> {
    owner(group)?;
    let mut seen = BTreeMap::new();
    for (index, site) in group.spec.sites.iter().enumerate() {
        if let Some(first) = seen.insert(site.server_id, index) {
            return Err(WorkloadError::DuplicateServerId {
                first,
                second: index,
                server_id: site.server_id,
            });
        }
        mycnf::site_options(group, site)?;
    }
    Ok(())
}

fn site_labels(owner: &Owner, site: &SiteSpec) -> BTreeMap<String, String> {
    labels::site_labels(&owner.name, &site.name, &site.effective_role())
}

/// The site's MySQL ConfigMap: key [`names::MY_CNF_KEY`] holds the merged option file.
pub fn site_configmap(
    group: &MysqlFailoverGroup,
    site: &SiteSpec,
) -> Result<ConfigMap, WorkloadError> {
    let owner = owner(group)?;
    let text = mycnf::render(&mycnf::site_options(group, site)?);
    let names = SiteNames::new(&owner.name, &site.name);
    Ok(ConfigMap {
        metadata: owner.meta(names.configmap, site_labels(&owner, site)),
        data: Some(BTreeMap::from([(names::MY_CNF_KEY.to_owned(), text)])),
        ..ConfigMap::default()
    })
}

/// The site's data claim (ReadWriteOnce; `storage` sets class and size).
pub fn site_pvc(
    group: &MysqlFailoverGroup,
    site: &SiteSpec,
) -> Result<PersistentVolumeClaim, WorkloadError> {
    let owner = owner(group)?;
    let names = SiteNames::new(&owner.name, &site.name);
    let storage = site.storage.as_ref();
    let size = storage
        .and_then(|storage| storage.size.clone())
        .unwrap_or_else(|| Quantity(DEFAULT_STORAGE_SIZE.to_owned()));
    Ok(PersistentVolumeClaim {
        metadata: owner.meta(names.pvc, site_labels(&owner, site)),
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
            storage_class_name: storage.and_then(|storage| storage.storage_class_name.clone()),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_owned(), size)])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    })
}

/// SHA-256 of the option file, 16 hex characters: the pod template's config-hash annotation.
pub fn config_hash(my_cnf: &str) -> String {
    let digest = Sha256::digest(my_cnf.as_bytes());
    data_encoding::HEXLOWER.encode(&digest[..8])
}

fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar { name: name.to_owned(), value: Some(value.into()), ..EnvVar::default() }
}

fn mysql_container(group: &MysqlFailoverGroup) -> Container {
    let mut env_vars = Vec::new();
    if let Some(credentials) = &group.spec.credentials {
        env_vars.push(EnvVar {
            name: ROOT_PASSWORD_KEY.to_owned(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: credentials.operator_secret_name.clone(),
                    key: ROOT_PASSWORD_KEY.to_owned(),
                    optional: None,
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        });
    }
    Container {
        name: containers::MYSQL.to_owned(),
        image: Some(group.spec.image.clone().unwrap_or_else(|| DEFAULT_MYSQL_IMAGE.to_owned())),
        env: Some(env_vars),
        ports: Some(vec![ContainerPort {
            name: Some(ports::MYSQL_NAME.to_owned()),
            container_port: i32::from(ports::MYSQL),
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        }]),
        // Readiness only: a hung server is the operator's to judge (it may be the primary);
        // a liveness probe would restart it behind the topology manager's back.
        readiness_probe: Some(Probe {
            exec: Some(ExecAction {
                command: Some(
                    ["mysqladmin", "ping", "--host=127.0.0.1", "--silent"]
                        .map(str::to_owned)
                        .to_vec(),
                ),
            }),
            period_seconds: Some(5),
            timeout_seconds: Some(3),
            ..Probe::default()
        }),
        volume_mounts: Some(vec![
            VolumeMount {
                name: names::DATA_VOLUME.to_owned(),
                mount_path: names::DATA_MOUNT_PATH.to_owned(),
                ..VolumeMount::default()
            },
            VolumeMount {
                name: names::CONFIG_VOLUME.to_owned(),
                mount_path: names::MY_CNF_MOUNT_PATH.to_owned(),
                read_only: Some(true),
                ..VolumeMount::default()
            },
        ]),
        ..Container::default()
    }
}

/// The sidecar's peer list: the internal Service of every other site, `host:port` of its HTTP
/// server, comma separated (the topology document's `PEER_ADDRESSES`).
pub fn peer_addresses(group_name: &str, namespace: &str, sites: &[SiteSpec], me: &str) -> String {
    sites
        .iter()
        .filter(|site| site.name != me)
        .map(|site| {
            let service = SiteNames::new(group_name, &site.name).internal_service;
            format!("{}:{}", names::service_dns_name(&service, namespace), ports::SIDECAR_HTTP)
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// How old an operator `/active-site` observation may be and still count for the sidecar: the
/// operator's own staleness window, `3 × pollInterval` (6 s at the default 2 s).
fn active_site_freshness(group: &MysqlFailoverGroup) -> String {
    let poll = group
        .spec
        .effective_poll_interval()
        .unwrap_or(bloodraven_crd::group::defaults::POLL_INTERVAL);
    bloodraven_crd::duration::Duration::from_std(poll * 3).as_str().to_owned()
}

/// The sidecar's MySQL account: the operator Secret's `username`/`password` (it sets
/// `super_read_only` and reads status), when the group names credentials.
fn sidecar_account(group: &MysqlFailoverGroup) -> Vec<EnvVar> {
    let Some(credentials) = &group.spec.credentials else {
        return Vec::new();
    };
    [(sidecar_env::MYSQL_USER, "username"), (sidecar_env::MYSQL_PASSWORD, "password")]
        .into_iter()
        .map(|(name, key)| EnvVar {
            name: name.to_owned(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: credentials.operator_secret_name.clone(),
                    key: key.to_owned(),
                    optional: None,
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        })
        .collect()
}

fn secret_env(name: &str, secret: &str, key: &str, optional: bool) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.to_owned(),
                key: key.to_owned(),
                optional: optional.then_some(true),
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

/// The archiver's environment (backup-and-restore document, "PITR archive identity"): the
/// archive identity, the group, where the binlogs are, and the store's credentials.
fn archiver_env(owner: &Owner, site: &SiteSpec, pitr: &PitrRender) -> Vec<EnvVar> {
    let mut vars = vec![
        env(sidecar_env::SITE_NAME, site.name.clone()),
        env(sidecar_env::GROUP_NAMESPACE, owner.namespace.clone()),
        env(sidecar_env::GROUP_NAME, owner.name.clone()),
        env(sidecar_env::FAILOVER_GROUP_UID, pitr.group_uid.clone()),
        env(sidecar_env::PITR_ARCHIVE_ID, pitr.archive_id.to_string()),
        env(sidecar_env::PITR_DESTINATION, pitr.normalized.to_string()),
        env(sidecar_env::PITR_ENCRYPTION_MODE, pitr.encryption_mode),
        env(sidecar_env::MYSQL_DATA_DIR, names::DATA_MOUNT_PATH),
        env(sidecar_env::BINLOG_INDEX, format!("{}.index", mycnf::LOG_BIN)),
    ];
    if let Some(interval) = &pitr.poll_interval {
        vars.push(env(sidecar_env::ARCHIVE_POLL_INTERVAL, interval.clone()));
    }
    if pitr.encryption.is_some() {
        vars.push(env(sidecar_env::PITR_PASSPHRASE_FILE, sidecar_env::PITR_PASSPHRASE_PATH));
    }
    if let PitrStorage::S3 { credentials_secret, region } = &pitr.storage {
        if let Some(secret) = credentials_secret {
            vars.push(secret_env(
                sidecar_env::AWS_ACCESS_KEY_ID,
                secret,
                sidecar_env::AWS_ACCESS_KEY_ID,
                false,
            ));
            vars.push(secret_env(
                sidecar_env::AWS_SECRET_ACCESS_KEY,
                secret,
                sidecar_env::AWS_SECRET_ACCESS_KEY,
                false,
            ));
            vars.push(secret_env(
                sidecar_env::AWS_SESSION_TOKEN,
                secret,
                sidecar_env::AWS_SESSION_TOKEN,
                true,
            ));
        }
        match (region, credentials_secret) {
            (Some(region), _) => vars.push(env(sidecar_env::AWS_REGION, region.clone())),
            (None, Some(secret)) => vars.push(secret_env(
                sidecar_env::AWS_REGION,
                secret,
                sidecar_env::AWS_REGION,
                true,
            )),
            (None, None) => {}
        }
    }
    vars
}

/// The sidecar's mounts with PITR: the data directory read-only (the binlogs), and the PVC
/// archive claim at [`sidecar_env::PVC_MOUNT_PATH`].
fn archiver_mounts(pitr: &PitrRender) -> Vec<VolumeMount> {
    let mut mounts = vec![VolumeMount {
        name: names::DATA_VOLUME.to_owned(),
        mount_path: names::DATA_MOUNT_PATH.to_owned(),
        read_only: Some(true),
        ..VolumeMount::default()
    }];
    if matches!(pitr.storage, PitrStorage::Pvc { .. }) {
        mounts.push(VolumeMount {
            name: sidecar_env::PITR_ARCHIVE_VOLUME.to_owned(),
            mount_path: sidecar_env::PVC_MOUNT_PATH.to_owned(),
            ..VolumeMount::default()
        });
    }
    if pitr.encryption.is_some() {
        mounts.push(VolumeMount {
            name: sidecar_env::PITR_KEY_VOLUME.to_owned(),
            mount_path: sidecar_env::PITR_KEY_MOUNT_PATH.to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
    }
    mounts
}

/// The encrypted profile's passphrase as a Secret volume: only its key, as the file
/// `passphrase` (mode 0440, group [`POD_FS_GROUP`]: the sidecar's user reads it through the
/// pod's `fsGroup`, as the kubelet writes Secret files as root). `optional`: a missing Secret
/// or key must not keep mysqld from starting (the whole pod would wait); the sidecar then
/// finds no key file, builds no store and uploads nothing (`storeReady: false`,
/// `PITRArchiveReady=False/ArchiveStoreInitFailed`), and picks the key up once it appears.
fn passphrase_volume(encryption: &PitrEncryption) -> Volume {
    Volume {
        name: sidecar_env::PITR_KEY_VOLUME.to_owned(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(encryption.secret.clone()),
            items: Some(vec![KeyToPath {
                key: encryption.key.clone(),
                path: sidecar_env::PITR_PASSPHRASE_FILE_NAME.to_owned(),
                mode: Some(PASSPHRASE_FILE_MODE),
                ..KeyToPath::default()
            }]),
            default_mode: Some(PASSPHRASE_FILE_MODE),
            optional: Some(true),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// `0440`: the key file is readable by its owner (root, as the kubelet writes Secret files) and
/// its group (the pod's `fsGroup`, [`POD_FS_GROUP`]), nobody else. With `fsGroup` set the kubelet
/// would add the group's read to `0400` anyway; naming it keeps the rendered mode the mode on
/// disk.
pub const PASSPHRASE_FILE_MODE: i32 = 0o440;

/// The site pod's `fsGroup`: 999, the `mysql` group of the MySQL image, whose user (999) the
/// sidecar and `mysqld` run as. The kubelet gives the pod's volumes this group: the Secret
/// volume's key file (readable through [`PASSPHRASE_FILE_MODE`]), the PITR archive claim (the
/// sidecar writes it) and the data claim.
pub const POD_FS_GROUP: i64 = 999;

/// `OnRootMismatch`: the kubelet changes the claims' ownership only when their root does not
/// already have [`POD_FS_GROUP`], so a restart does not walk a large data directory (Secret
/// volumes are always given the group).
pub const FS_GROUP_CHANGE_POLICY: &str = "OnRootMismatch";

/// The site pod's security context: [`POD_FS_GROUP`] with [`FS_GROUP_CHANGE_POLICY`].
fn pod_security_context() -> PodSecurityContext {
    PodSecurityContext {
        fs_group: Some(POD_FS_GROUP),
        fs_group_change_policy: Some(FS_GROUP_CHANGE_POLICY.to_owned()),
        ..PodSecurityContext::default()
    }
}

fn sidecar_container(
    group: &MysqlFailoverGroup,
    owner: &Owner,
    site: &SiteSpec,
    pitr: Option<&PitrRender>,
) -> Container {
    let sidecar = group.spec.sidecar.as_ref();
    let image = sidecar
        .and_then(|sidecar| sidecar.image.clone())
        .unwrap_or_else(|| DEFAULT_SIDECAR_IMAGE.to_owned());
    let lease_timeout = sidecar
        .and_then(|sidecar| sidecar.lease_timeout.as_ref())
        .map_or("20s".to_owned(), |value| value.as_str().to_owned());
    let peer_check = sidecar
        .and_then(|sidecar| sidecar.peer_check_interval.as_ref())
        .map_or("5s".to_owned(), |value| value.as_str().to_owned());
    let namespace_ref = EnvVar {
        name: sidecar_env::POD_NAMESPACE.to_owned(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: "metadata.namespace".to_owned(),
                api_version: None,
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    };
    Container {
        name: containers::SIDECAR.to_owned(),
        image: Some(image),
        env: Some(
            vec![
                env(sidecar_env::GROUP, owner.name.clone()),
                env(sidecar_env::SITE, site.name.clone()),
                namespace_ref,
                env(
                    sidecar_env::PEER_ADDRESSES,
                    peer_addresses(&owner.name, &owner.namespace, &group.spec.sites, &site.name),
                ),
                env(
                    sidecar_env::OPERATOR_ADDRESS,
                    names::operator_address(names::OPERATOR_NAMESPACE),
                ),
                env(sidecar_env::LEASE_TIMEOUT, lease_timeout),
                env(sidecar_env::PEER_CHECK_INTERVAL, peer_check),
                env(sidecar_env::ACTIVE_SITE_FRESHNESS, active_site_freshness(group)),
                env(sidecar_env::MYSQL_HOST, "127.0.0.1"),
                env(sidecar_env::MYSQL_PORT, ports::MYSQL.to_string()),
            ]
            .into_iter()
            .chain(sidecar_account(group))
            .chain(pitr.map(|pitr| archiver_env(owner, site, pitr)).unwrap_or_default())
            .collect(),
        ),
        volume_mounts: pitr.map(archiver_mounts),
        ports: Some(vec![ContainerPort {
            name: Some(ports::SIDECAR_HTTP_NAME.to_owned()),
            container_port: i32::from(ports::SIDECAR_HTTP),
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        }]),
        readiness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                path: Some("/health".to_owned()),
                port: IntOrString::String(ports::SIDECAR_HTTP_NAME.to_owned()),
                ..HTTPGetAction::default()
            }),
            period_seconds: Some(5),
            ..Probe::default()
        }),
        ..Container::default()
    }
}

/// The site's Deployment: one replica, `Recreate` (one writer on the data claim), containers
/// `mysql` and `sidecar`, the claim at [`names::DATA_MOUNT_PATH`], the ConfigMap at
/// [`names::MY_CNF_MOUNT_PATH`], and the option file's hash on the pod template so a changed
/// ConfigMap rolls the pod.
pub fn site_deployment(
    group: &MysqlFailoverGroup,
    site: &SiteSpec,
) -> Result<Deployment, WorkloadError> {
    let owner = owner(group)?;
    let names = SiteNames::new(&owner.name, &site.name);
    let my_cnf = mycnf::render(&mycnf::site_options(group, site)?);
    let pitr = pitr::render(group)?;
    let labels = site_labels(&owner, site);
    let mut annotations = BTreeMap::from([(labels::CONFIG_HASH.to_owned(), config_hash(&my_cnf))]);
    if let Some(pitr) = &pitr {
        annotations.insert(labels::PITR_RENDER.to_owned(), pitr.summary());
    }
    let mut volumes = vec![
        Volume {
            name: names::DATA_VOLUME.to_owned(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: names.pvc.clone(),
                read_only: None,
            }),
            ..Volume::default()
        },
        Volume {
            name: names::CONFIG_VOLUME.to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: names.configmap.clone(),
                items: Some(vec![KeyToPath {
                    key: names::MY_CNF_KEY.to_owned(),
                    path: names::MY_CNF_KEY.to_owned(),
                    ..KeyToPath::default()
                }]),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        },
    ];
    if let Some(PitrRender { storage: PitrStorage::Pvc { claim }, .. }) = &pitr {
        volumes.push(Volume {
            name: sidecar_env::PITR_ARCHIVE_VOLUME.to_owned(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.clone(),
                read_only: None,
            }),
            ..Volume::default()
        });
    }
    if let Some(encryption) = pitr.as_ref().and_then(|pitr| pitr.encryption.as_ref()) {
        volumes.push(passphrase_volume(encryption));
    }
    let node_selector =
        site.zone.as_ref().map(|zone| BTreeMap::from([(ZONE_NODE_LABEL.to_owned(), zone.clone())]));
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels.clone()),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![
                mysql_container(group),
                sidecar_container(group, &owner, site, pitr.as_ref()),
            ],
            termination_grace_period_seconds: Some(TERMINATION_GRACE_SECONDS),
            node_selector,
            volumes: Some(volumes),
            security_context: Some(pod_security_context()),
            ..PodSpec::default()
        }),
    };
    Ok(Deployment {
        metadata: owner.meta(names.deployment, labels),
        spec: DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(labels::site_selector(&owner.name, &site.name)),
                match_expressions: None,
            },
            strategy: Some(DeploymentStrategy {
                type_: Some("Recreate".to_owned()),
                rolling_update: None,
            }),
            template,
            ..DeploymentSpec::default()
        },
        status: None,
    })
}

fn service_ports() -> Vec<ServicePort> {
    vec![
        ServicePort {
            name: Some(ports::MYSQL_NAME.to_owned()),
            port: i32::from(ports::MYSQL),
            target_port: Some(IntOrString::String(ports::MYSQL_NAME.to_owned())),
            protocol: Some("TCP".to_owned()),
            ..ServicePort::default()
        },
        ServicePort {
            name: Some(ports::SIDECAR_HTTP_NAME.to_owned()),
            port: i32::from(ports::SIDECAR_HTTP),
            target_port: Some(IntOrString::String(ports::SIDECAR_HTTP_NAME.to_owned())),
            protocol: Some("TCP".to_owned()),
            ..ServicePort::default()
        },
    ]
}

/// A site's two Services.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteServices {
    /// `mysql-<group>-<site>`: clients; selects the site's pod only while the operator labels
    /// it healthy (readers against their stricter lag threshold); `serviceTemplate` shapes it.
    pub client: Service,
    /// `mysql-<group>-<site>-internal`: the operator, peers, replication and restore Jobs;
    /// selects on the site alone and publishes not-ready addresses.
    pub internal: Service,
}

/// The site's client and internal Services.
pub fn site_services(
    group: &MysqlFailoverGroup,
    site: &SiteSpec,
) -> Result<SiteServices, WorkloadError> {
    let owner = owner(group)?;
    let names = SiteNames::new(&owner.name, &site.name);
    let labels = site_labels(&owner, site);
    let template = site.service_template.as_ref();
    let mut client_selector = labels::site_selector(&owner.name, &site.name);
    client_selector.insert(labels::HEALTHY.to_owned(), labels::HEALTHY_TRUE.to_owned());
    let service_type = template
        .and_then(|template| template.type_.as_ref())
        .map(|type_| type_.as_str().to_owned());
    let is_reader = site.effective_role() == SiteRole::ReadOnly;
    // Readers ignore loadBalancerIP (topology document: accepted, ignored).
    let load_balancer_ip = (!is_reader && service_type.as_deref() == Some("LoadBalancer"))
        .then(|| site.load_balancer_ip.clone())
        .flatten();
    let mut client_meta = owner.meta(names.client_service, labels.clone());
    client_meta.annotations = template.and_then(|template| template.annotations.clone());
    let client = Service {
        metadata: client_meta,
        spec: Some(ServiceSpec {
            type_: service_type,
            external_traffic_policy: template
                .and_then(|template| template.external_traffic_policy.clone()),
            load_balancer_ip,
            selector: Some(client_selector),
            ports: Some(service_ports()),
            ..ServiceSpec::default()
        }),
        status: None,
    };
    let internal = Service {
        metadata: owner.meta(names.internal_service, labels),
        spec: Some(ServiceSpec {
            selector: Some(labels::site_selector(&owner.name, &site.name)),
            publish_not_ready_addresses: Some(true),
            ports: Some(service_ports()),
            ..ServiceSpec::default()
        }),
        status: None,
    };
    Ok(SiteServices { client, internal })
}

/// The selector of the `-primary` Service: the pod the operator labelled
/// [`labels::ROLE_PRIMARY`], narrowed to the active site when one is known, so a stale label on
/// a fenced pod can never make it a second endpoint.
pub fn primary_selector(group_name: &str, active_site: Option<&str>) -> BTreeMap<String, String> {
    let mut selector = BTreeMap::from([
        (labels::GROUP.to_owned(), group_name.to_owned()),
        (labels::ROLE.to_owned(), labels::ROLE_PRIMARY.to_owned()),
    ]);
    if let Some(site) = active_site {
        selector.insert(labels::SITE.to_owned(), site.to_owned());
    }
    selector
}

/// The group's `-primary` Service: application writes. Its selector follows the active site
/// (see [`primary_selector`]); the operator re-applies it after every promotion.
pub fn primary_service(
    group: &MysqlFailoverGroup,
    active_site: Option<&str>,
) -> Result<Service, WorkloadError> {
    let owner = owner(group)?;
    if let Some(site) = active_site
        && group.spec.site(site).is_none()
    {
        return Err(WorkloadError::UnknownSite { site: site.to_owned() });
    }
    Ok(Service {
        metadata: owner
            .meta(names::primary_service_name(&owner.name), labels::group_labels(&owner.name)),
        spec: Some(ServiceSpec {
            selector: Some(primary_selector(&owner.name, active_site)),
            ports: Some(vec![service_ports().swap_remove(0)]),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// The group's `-replicas` Service: reads from healthy followers.
pub fn replicas_service(group: &MysqlFailoverGroup) -> Result<Service, WorkloadError> {
    let owner = owner(group)?;
    Ok(Service {
        metadata: owner
            .meta(names::replicas_service_name(&owner.name), labels::group_labels(&owner.name)),
        spec: Some(ServiceSpec {
            selector: Some(BTreeMap::from([
                (labels::GROUP.to_owned(), owner.name.clone()),
                (labels::ROLE.to_owned(), labels::ROLE_REPLICA.to_owned()),
                (labels::HEALTHY.to_owned(), labels::HEALTHY_TRUE.to_owned()),
            ])),
            ports: Some(vec![service_ports().swap_remove(0)]),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// Everything one site gets (the topology document's list).
#[derive(Clone, Debug, PartialEq)]
pub struct SiteObjects {
    pub configmap: ConfigMap,
    pub pvc: PersistentVolumeClaim,
    pub deployment: Deployment,
    pub services: SiteServices,
}

/// The objects of the site named `site`.
pub fn site_objects(group: &MysqlFailoverGroup, site: &str) -> Result<SiteObjects, WorkloadError> {
    let spec = group
        .spec
        .site(site)
        .ok_or_else(|| WorkloadError::UnknownSite { site: site.to_owned() })?;
    Ok(SiteObjects {
        configmap: site_configmap(group, spec)?,
        pvc: site_pvc(group, spec)?,
        deployment: site_deployment(group, spec)?,
        services: site_services(group, spec)?,
    })
}
