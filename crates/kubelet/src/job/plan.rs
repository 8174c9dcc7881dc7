//! What one Job attempt runs (pure): the pod template's first container → a local program,
//! its arguments and environment, and the files its volumes hold. IO (reading Secrets,
//! ConfigMaps and claims, resolving Services) happens before, in [`super`], and is passed in.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use bloodraven_workloads::resolve::parse_service_host;
use k8s_openapi::api::core::v1::{Container, EnvVar, PodTemplateSpec, Volume};

use super::JobConfig;
use crate::claims::claim_folder;

/// The variable a PVC store's writer reads its mount table from (`bloodraven-store`'s mount
/// check): the lab writes one listing the container's volumes.
pub const MOUNTINFO_ENV: &str = "BLOODRAVEN_MOUNTINFO_FILE";

/// Why an attempt cannot start yet (the pod waits, as a kubelet's does) or at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A Secret, ConfigMap, key or claim the pod names does not exist (yet).
    #[error("{0}")]
    Config(String),
    /// The container names a program the lab has no executable for.
    #[error("the lab has no executable for {0:?}; add it to the kubelet's JobConfig::executables")]
    NoExecutable(String),
    /// The template has no container.
    #[error("the Job's pod template has no container")]
    NoContainer,
}

/// The objects a pod's volumes and `valueFrom`s name, read from the API server.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// Secret name → key → bytes (`data`, with `stringData` folded in).
    pub secrets: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    /// ConfigMap name → key → text.
    pub config_maps: BTreeMap<String, BTreeMap<String, String>>,
    /// Claim name → uid.
    pub claims: BTreeMap<String, String>,
}

/// A file to write before the process starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub path: PathBuf,
    pub contents: Vec<u8>,
    /// Unix mode (the volume's `defaultMode`, 0644 when absent).
    pub mode: u32,
}

/// One attempt's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Folders to create (emptyDirs, claim folders, volume folders).
    pub dirs: Vec<PathBuf>,
    pub files: Vec<File>,
}

/// Where an attempt lives.
#[derive(Debug, Clone)]
pub struct Place<'a> {
    pub namespace: &'a str,
    pub pod: &'a str,
    /// The attempt's own folder (volumes other than claims live under it).
    pub scratch: &'a Path,
    /// The kubelet's claim root ([`crate::claims`]): a claim volume is the same folder a
    /// site's pod would get.
    pub claims_root: &'a Path,
}

/// The first container of `template`.
pub fn first_container(template: &PodTemplateSpec) -> Option<&Container> {
    template.spec.as_ref()?.containers.first()
}

/// The Secret and ConfigMap names and claims a template refers to (what [`Inputs`] must hold).
pub fn references(template: &PodTemplateSpec) -> (Vec<String>, Vec<String>, Vec<String>) {
    let (mut secrets, mut config_maps, mut claims) = (Vec::new(), Vec::new(), Vec::new());
    let spec = template.spec.clone().unwrap_or_default();
    for volume in spec.volumes.unwrap_or_default() {
        if let Some(name) = volume.secret.and_then(|s| s.secret_name) {
            secrets.push(name);
        }
        if let Some(source) = volume.config_map {
            config_maps.push(source.name);
        }
        if let Some(source) = volume.persistent_volume_claim {
            claims.push(source.claim_name);
        }
    }
    if let Some(container) = spec.containers.first() {
        for variable in container.env.clone().unwrap_or_default() {
            let Some(from) = variable.value_from else { continue };
            if let Some(key) = from.secret_key_ref {
                secrets.push(key.name);
            }
            if let Some(key) = from.config_map_key_ref {
                config_maps.push(key.name);
            }
        }
    }
    for list in [&mut secrets, &mut config_maps, &mut claims] {
        list.sort();
        list.dedup();
    }
    (secrets, config_maps, claims)
}

/// The image's last path segment without its tag: `ghcr.io/x/bloodraven-sidecar:1` →
/// `bloodraven-sidecar` (the program of a container with no `command`).
fn image_program(image: &str) -> &str {
    let last = image.rsplit('/').next().unwrap_or(image);
    let last = last.split('@').next().unwrap_or(last);
    last.split(':').next().unwrap_or(last)
}

/// The local folder of each volume, by volume name, and the files it holds.
fn volumes(
    volumes: &[Volume],
    inputs: &Inputs,
    place: &Place<'_>,
    plan: &mut Plan,
) -> Result<BTreeMap<String, PathBuf>, PlanError> {
    let mut folders = BTreeMap::new();
    for volume in volumes {
        let folder = place.scratch.join("volumes").join(&volume.name);
        if let Some(source) = &volume.secret {
            let name = source.secret_name.clone().unwrap_or_default();
            let data = inputs.secrets.get(&name).ok_or_else(|| {
                PlanError::Config(format!("secret {name:?} not found (volume {})", volume.name))
            })?;
            let mode = source.default_mode.and_then(|m| u32::try_from(m).ok()).unwrap_or(0o644);
            for (key, value) in data {
                plan.files.push(File { path: folder.join(key), contents: value.clone(), mode });
            }
        } else if let Some(source) = &volume.config_map {
            let data = inputs.config_maps.get(&source.name).ok_or_else(|| {
                PlanError::Config(format!(
                    "configmap {:?} not found (volume {})",
                    source.name, volume.name
                ))
            })?;
            let mode = source.default_mode.and_then(|m| u32::try_from(m).ok()).unwrap_or(0o644);
            for (key, value) in data {
                plan.files.push(File {
                    path: folder.join(key),
                    contents: value.clone().into_bytes(),
                    mode,
                });
            }
        } else if let Some(source) = &volume.persistent_volume_claim {
            let uid = inputs.claims.get(&source.claim_name).ok_or_else(|| {
                PlanError::Config(format!(
                    "persistentvolumeclaim {:?} not found (volume {})",
                    source.claim_name, volume.name
                ))
            })?;
            let folder = claim_folder(place.claims_root, place.namespace, &source.claim_name, uid);
            plan.dirs.push(folder.clone());
            folders.insert(volume.name.clone(), folder);
            continue;
        }
        // emptyDir and anything else: an empty folder of the attempt.
        plan.dirs.push(folder.clone());
        folders.insert(volume.name.clone(), folder);
    }
    Ok(folders)
}

/// Rewrites a value that is exactly a mount path to the local folder. Values below a mount
/// stay: they may be identities rather than paths (a backup's recorded location
/// `/backups/<name>` is compared, never opened).
fn map_path(value: &str, mounts: &[(String, PathBuf)]) -> String {
    let trimmed = value.trim_end_matches('/');
    mounts
        .iter()
        .find(|(mount, _)| mount == trimmed && !trimmed.is_empty())
        .map_or_else(|| value.to_owned(), |(_, local)| local.display().to_string())
}

/// A cluster Service DNS name (`<svc>.<ns>.svc[.cluster.local]`) → (namespace, service).
fn cluster_service(host: &str, namespace: &str) -> Option<(String, String)> {
    if !(host.ends_with(".svc") || host.ends_with(".svc.cluster.local")) {
        return None;
    }
    parse_service_host(host, namespace)
}

/// The literal value of one variable (`value`, or `valueFrom` a Secret/ConfigMap key or a
/// pod field); `None` for an optional reference that is missing.
fn value_of(
    variable: &EnvVar,
    inputs: &Inputs,
    place: &Place<'_>,
) -> Result<Option<String>, PlanError> {
    let Some(from) = &variable.value_from else {
        return Ok(Some(variable.value.clone().unwrap_or_default()));
    };
    if let Some(key) = &from.secret_key_ref {
        let found = inputs.secrets.get(&key.name).and_then(|data| data.get(&key.key));
        return match found {
            Some(bytes) => Ok(Some(String::from_utf8_lossy(bytes).into_owned())),
            None if key.optional == Some(true) => Ok(None),
            None => Err(PlanError::Config(format!(
                "secret {:?} or its key {:?} not found (variable {})",
                key.name, key.key, variable.name
            ))),
        };
    }
    if let Some(key) = &from.config_map_key_ref {
        let found = inputs.config_maps.get(&key.name).and_then(|data| data.get(&key.key));
        return match found {
            Some(text) => Ok(Some(text.clone())),
            None if key.optional == Some(true) => Ok(None),
            None => Err(PlanError::Config(format!(
                "configmap {:?} or its key {:?} not found (variable {})",
                key.name, key.key, variable.name
            ))),
        };
    }
    if let Some(field) = &from.field_ref {
        return Ok(Some(match field.field_path.as_str() {
            "metadata.namespace" => place.namespace.to_owned(),
            "metadata.name" => place.pod.to_owned(),
            "spec.nodeName" => crate::pod::NODE_NAME.to_owned(),
            "status.podIP" | "status.hostIP" => crate::pod::POD_IP.to_owned(),
            _ => String::new(),
        }));
    }
    Ok(None)
}

/// Builds the attempt's process. `resolve(namespace, service, port)` gives the lab address of
/// a Service port (a proxy link).
pub fn plan(
    template: &PodTemplateSpec,
    inputs: &Inputs,
    config: &JobConfig,
    place: &Place<'_>,
    resolve: &dyn Fn(&str, &str, u16) -> SocketAddr,
) -> Result<Plan, PlanError> {
    let container = first_container(template).ok_or(PlanError::NoContainer)?;
    let spec = template.spec.clone().unwrap_or_default();
    let mut plan = Plan {
        program: PathBuf::new(),
        args: Vec::new(),
        env: Vec::new(),
        dirs: vec![place.scratch.to_owned()],
        files: Vec::new(),
    };
    let folders = volumes(&spec.volumes.unwrap_or_default(), inputs, place, &mut plan)?;
    let mut mounts: Vec<(String, PathBuf)> = container
        .volume_mounts
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|mount| {
            let folder = folders.get(&mount.name)?;
            let local = match mount.sub_path.as_deref().filter(|s| !s.is_empty()) {
                Some(sub) => folder.join(sub),
                None => folder.clone(),
            };
            Some((mount.mount_path.trim_end_matches('/').to_owned(), local))
        })
        .collect();
    // Longest mount path first, so `/a/b` wins over `/a`.
    mounts.sort_by_key(|(mount, _)| std::cmp::Reverse(mount.len()));
    for (_, local) in &mounts {
        if !plan.dirs.contains(local) {
            plan.dirs.push(local.clone());
        }
    }

    let mut words: Vec<String> = container.command.clone().unwrap_or_default();
    words.extend(container.args.clone().unwrap_or_default());
    let program = match container.command.as_ref().and_then(|c| c.first()) {
        Some(first) => {
            words.remove(0);
            first.clone()
        }
        None => image_program(container.image.as_deref().unwrap_or_default()).to_owned(),
    };
    let name = Path::new(&program)
        .file_name()
        .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned());
    plan.program =
        config.executables.get(&name).cloned().ok_or(PlanError::NoExecutable(program))?;
    plan.args = words.iter().map(|word| map_path(word, &mounts)).collect();

    let mut env: BTreeMap<String, String> = config.env.clone();
    let mut literal = BTreeMap::new();
    for variable in container.env.clone().unwrap_or_default() {
        if let Some(value) = value_of(&variable, inputs, place)? {
            literal.insert(variable.name.clone(), value);
        }
    }
    // `<X>_HOST` naming a cluster Service, with `<X>_PORT`: the Service port's lab address.
    let mut mapped = literal.clone();
    for (name, value) in &literal {
        if let Some((host, port)) = value.rsplit_once(':')
            && let (Some((ns, svc)), Ok(port)) =
                (cluster_service(host, place.namespace), port.parse::<u16>())
        {
            mapped.insert(name.clone(), resolve(&ns, &svc, port).to_string());
            continue;
        }
        let Some(prefix) = name.strip_suffix("_HOST") else { continue };
        let Some((ns, svc)) = cluster_service(value, place.namespace) else { continue };
        let port_name = format!("{prefix}_PORT");
        let Some(port) = literal.get(&port_name).and_then(|p| p.parse::<u16>().ok()) else {
            continue;
        };
        let address = resolve(&ns, &svc, port);
        mapped.insert(name.clone(), address.ip().to_string());
        mapped.insert(port_name, address.port().to_string());
    }
    for (name, value) in mapped {
        env.insert(name, map_path(&value, &mounts));
    }
    if !mounts.is_empty() && !env.contains_key(MOUNTINFO_ENV) {
        let path = place.scratch.join("mountinfo");
        let mut text = String::from("1 0 0:1 / / rw - overlay overlay rw\n");
        for (index, (_, local)) in mounts.iter().enumerate() {
            text.push_str(&format!(
                "{} 1 0:{} / {} rw - ext4 /dev/lab{index} rw\n",
                index + 2,
                index + 2,
                escape(local)
            ));
        }
        plan.files.push(File { path: path.clone(), contents: text.into_bytes(), mode: 0o644 });
        env.insert(MOUNTINFO_ENV.to_owned(), path.display().to_string());
    }
    env.entry("POD_NAMESPACE".to_owned()).or_insert_with(|| place.namespace.to_owned());
    env.insert("RUST_LOG".to_owned(), config.log_filter.clone());
    plan.env = env.into_iter().collect();
    Ok(plan)
}

/// mountinfo's octal escapes for a path.
fn escape(path: &Path) -> String {
    path.display()
        .to_string()
        .replace('\\', "\\134")
        .replace(' ', "\\040")
        .replace('\t', "\\011")
        .replace('\n', "\\012")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        EmptyDirVolumeSource, EnvVarSource, ObjectFieldSelector, PersistentVolumeClaimVolumeSource,
        PodSpec, SecretKeySelector, SecretVolumeSource, VolumeMount,
    };

    fn env(name: &str, value: &str) -> EnvVar {
        EnvVar { name: name.into(), value: Some(value.into()), value_from: None }
    }

    fn mount(name: &str, path: &str) -> VolumeMount {
        VolumeMount { name: name.into(), mount_path: path.into(), ..VolumeMount::default() }
    }

    fn template() -> PodTemplateSpec {
        let secret_ref = EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: "creds".into(),
                key: "password".into(),
                optional: None,
            }),
            ..EnvVarSource::default()
        };
        let field_ref = EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: "metadata.name".into(),
                api_version: None,
            }),
            ..EnvVarSource::default()
        };
        PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "backup".into(),
                    image: Some("ghcr.io/x/bloodraven-sidecar:1".into()),
                    command: Some(vec!["bloodraven-sidecar".into(), "backup".into()]),
                    args: Some(vec!["--out=/backups/x".into(), "/backups".into()]),
                    env: Some(vec![
                        env("MYSQL_HOST", "mysql-g-iad.shop.svc.cluster.local"),
                        env("MYSQL_PORT", "3306"),
                        env("PEER", "mysql-g-pdx.shop.svc:8080"),
                        env("PLAIN_HOST", "localhost"),
                        env("CREDS_DIR", "/run/creds"),
                        env("LOCATION", "/backups/b1"),
                        env("HOME", "/tmp"),
                        EnvVar {
                            name: "PASSWORD".into(),
                            value: None,
                            value_from: Some(secret_ref),
                        },
                        EnvVar {
                            name: "POD_NAME".into(),
                            value: None,
                            value_from: Some(field_ref),
                        },
                    ]),
                    volume_mounts: Some(vec![
                        mount("creds", "/run/creds"),
                        mount("tmp", "/tmp"),
                        mount("backups", "/backups"),
                    ]),
                    ..Container::default()
                }],
                volumes: Some(vec![
                    Volume {
                        name: "creds".into(),
                        secret: Some(SecretVolumeSource {
                            secret_name: Some("creds".into()),
                            default_mode: Some(0o400),
                            ..SecretVolumeSource::default()
                        }),
                        ..Volume::default()
                    },
                    Volume {
                        name: "tmp".into(),
                        empty_dir: Some(EmptyDirVolumeSource::default()),
                        ..Volume::default()
                    },
                    Volume {
                        name: "backups".into(),
                        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                            claim_name: "backups".into(),
                            read_only: None,
                        }),
                        ..Volume::default()
                    },
                ]),
                ..PodSpec::default()
            }),
        }
    }

    fn inputs() -> Inputs {
        let mut inputs = Inputs::default();
        inputs.secrets.insert(
            "creds".into(),
            BTreeMap::from([("password".into(), b"pw".to_vec()), ("user".into(), b"u".to_vec())]),
        );
        inputs.claims.insert("backups".into(), "uid-1".into());
        inputs
    }

    fn config() -> JobConfig {
        JobConfig::new("/scratch").executable("bloodraven-sidecar", "/bin/sidecar")
    }

    fn resolve(ns: &str, svc: &str, port: u16) -> SocketAddr {
        let offset = match (ns, svc) {
            ("shop", "mysql-g-iad") => 1,
            ("shop", "mysql-g-pdx") => 2,
            _ => 9,
        };
        SocketAddr::from(([127, 0, 0, 1], 40000 + offset + port % 10))
    }

    #[test]
    fn a_container_becomes_a_local_process_with_lab_paths_and_addresses() {
        let place = Place {
            namespace: "shop",
            pod: "job-abcde",
            scratch: Path::new("/scratch/shop/job-abcde"),
            claims_root: Path::new("/claims"),
        };
        let plan = plan(&template(), &inputs(), &config(), &place, &resolve).unwrap();
        assert_eq!(plan.program, PathBuf::from("/bin/sidecar"));
        let claim = claim_folder(Path::new("/claims"), "shop", "backups", "uid-1");
        assert_eq!(
            plan.args,
            vec!["backup".to_owned(), "--out=/backups/x".to_owned(), claim.display().to_string()]
        );
        let env: BTreeMap<_, _> = plan.env.iter().cloned().collect();
        assert_eq!(env["MYSQL_HOST"], "127.0.0.1");
        assert_eq!(env["MYSQL_PORT"], "40007");
        assert_eq!(env["PEER"], "127.0.0.1:40002");
        assert_eq!(env["PLAIN_HOST"], "localhost", "only cluster DNS names are mapped");
        assert_eq!(env["CREDS_DIR"], "/scratch/shop/job-abcde/volumes/creds");
        assert_eq!(env["LOCATION"], "/backups/b1", "below a mount: an identity, kept");
        assert_eq!(env["HOME"], "/scratch/shop/job-abcde/volumes/tmp");
        assert_eq!(env["PASSWORD"], "pw");
        assert_eq!(env["POD_NAME"], "job-abcde");
        assert_eq!(env["POD_NAMESPACE"], "shop");
        let secret_file = plan
            .files
            .iter()
            .find(|f| f.path == Path::new("/scratch/shop/job-abcde/volumes/creds/user"))
            .unwrap();
        assert_eq!((secret_file.contents.as_slice(), secret_file.mode), (&b"u"[..], 0o400));
        assert!(plan.dirs.contains(&claim));
        let mountinfo = plan.files.iter().find(|f| f.path.ends_with("mountinfo")).unwrap();
        let text = String::from_utf8(mountinfo.contents.clone()).unwrap();
        assert!(text.contains(&format!(" {} rw - ext4", claim.display())), "{text}");
        assert_eq!(env[MOUNTINFO_ENV], "/scratch/shop/job-abcde/mountinfo");
    }

    #[test]
    fn missing_objects_and_programs_are_named() {
        let place = Place {
            namespace: "shop",
            pod: "p",
            scratch: Path::new("/s"),
            claims_root: Path::new("/c"),
        };
        let mut missing = inputs();
        missing.secrets.clear();
        let error = plan(&template(), &missing, &config(), &place, &resolve).unwrap_err();
        assert!(matches!(&error, PlanError::Config(m) if m.contains("\"creds\"")), "{error}");
        let mut missing = inputs();
        missing.claims.clear();
        let error = plan(&template(), &missing, &config(), &place, &resolve).unwrap_err();
        assert!(matches!(&error, PlanError::Config(m) if m.contains("\"backups\"")), "{error}");
        let error =
            plan(&template(), &inputs(), &JobConfig::new("/s"), &place, &resolve).unwrap_err();
        assert_eq!(error, PlanError::NoExecutable("bloodraven-sidecar".into()));
        assert_eq!(image_program("ghcr.io/x/bloodraven-sidecar:1"), "bloodraven-sidecar");
        let (secrets, config_maps, claims) = references(&template());
        assert_eq!(
            (secrets, config_maps, claims),
            (vec!["creds".into()], vec![], vec!["backups".into()])
        );
    }
}
