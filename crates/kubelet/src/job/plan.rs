//! What one Job attempt runs (pure): the pod template's init containers (in order) and its
//! first container → local programs, each with its own arguments, environment, mount table and
//! termination-message file, and the files the pod's volumes hold (shared by every container
//! of the pod, as emptyDirs are). IO (reading Secrets,
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

/// The Kubernetes default of `terminationMessagePath`.
pub const DEFAULT_TERMINATION_PATH: &str = "/dev/termination-log";

/// One container's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The container's name.
    pub name: String,
    /// The container's image (reported in its status).
    pub image: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// The local file behind the container's `terminationMessagePath` (created empty before
    /// the pod starts; read once the container ended).
    pub termination_file: PathBuf,
    /// `terminationMessagePolicy: FallbackToLogsOnError`.
    pub fallback_to_logs: bool,
    /// The container's log (stdout and stderr).
    pub log: PathBuf,
    /// The container's mount table ([`MOUNTINFO_ENV`]), written when the pod starts.
    pub mount_table: Option<MountTable>,
}

/// A container's mount table: the file [`MOUNTINFO_ENV`] names and each mount's local folder
/// with whether it is read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountTable {
    pub path: PathBuf,
    pub mounts: Vec<(PathBuf, bool)>,
}

impl MountTable {
    /// The table in `/proc/self/mountinfo` format, each folder as `resolve` gives it (the
    /// kubelet resolves symbolic links, as the kernel lists the real path).
    pub fn text(&self, resolve: impl Fn(&Path) -> PathBuf) -> String {
        let mut text = String::from("1 0 0:1 / / rw - overlay overlay rw\n");
        for (index, (local, read_only)) in self.mounts.iter().enumerate() {
            let options = if *read_only { "ro" } else { "rw" };
            text.push_str(&format!(
                "{} 1 0:{} / {} {options} - ext4 /dev/lab{index} {options}\n",
                index + 2,
                index + 2,
                escape(&resolve(local))
            ));
        }
        text
    }
}

/// One attempt: the pod's folders and files, its init containers in order, its main container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The init containers, run in order, each to completion, before [`Plan::main`].
    pub init: Vec<Step>,
    /// The pod template's first container.
    pub main: Step,
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

/// The local log of container `name` of an attempt: the main container's is
/// `<scratch>/container.log` (what [`crate::Kubelet::job_log`] serves), an init container's
/// `<scratch>/init/<name>/container.log`.
pub fn log_path(scratch: &Path, name: &str, init: bool) -> PathBuf {
    if init {
        scratch.join("init").join(name).join("container.log")
    } else {
        scratch.join("container.log")
    }
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
    let init = spec.init_containers.clone().unwrap_or_default();
    for container in init.iter().chain(spec.containers.first()) {
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

/// A volume's local folder and whether the volume itself is read-only (a claim's `readOnly`).
#[derive(Debug, Clone)]
struct Folder {
    path: PathBuf,
    read_only: bool,
}

/// The local folder of each volume, by volume name, and the files it holds.
fn volumes(
    volumes: &[Volume],
    inputs: &Inputs,
    place: &Place<'_>,
    dirs: &mut Vec<PathBuf>,
    files: &mut Vec<File>,
) -> Result<BTreeMap<String, Folder>, PlanError> {
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
                files.push(File { path: folder.join(key), contents: value.clone(), mode });
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
                files.push(File {
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
            dirs.push(folder.clone());
            let read_only = source.read_only == Some(true);
            folders.insert(volume.name.clone(), Folder { path: folder, read_only });
            continue;
        }
        // emptyDir and anything else: an empty folder of the attempt, shared by its containers.
        dirs.push(folder.clone());
        folders.insert(volume.name.clone(), Folder { path: folder, read_only: false });
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

/// Builds the attempt: the pod's volumes, then each container's process (init containers in
/// order, then the first container). `resolve(namespace, service, port)` gives the lab address
/// of a Service port (a proxy link).
pub fn plan(
    template: &PodTemplateSpec,
    inputs: &Inputs,
    config: &JobConfig,
    place: &Place<'_>,
    resolve: &dyn Fn(&str, &str, u16) -> SocketAddr,
) -> Result<Plan, PlanError> {
    let container = first_container(template).ok_or(PlanError::NoContainer)?;
    let spec = template.spec.clone().unwrap_or_default();
    let mut dirs = vec![place.scratch.to_owned()];
    let mut files = Vec::new();
    let folders = volumes(&spec.volumes.unwrap_or_default(), inputs, place, &mut dirs, &mut files)?;
    let mut init = Vec::new();
    for container in spec.init_containers.iter().flatten() {
        let own = place.scratch.join("init").join(&container.name);
        init.push(step(
            container, &own, true, inputs, config, place, resolve, &folders, &mut dirs, &mut files,
        )?);
    }
    let main = step(
        container,
        place.scratch,
        false,
        inputs,
        config,
        place,
        resolve,
        &folders,
        &mut dirs,
        &mut files,
    )?;
    Ok(Plan { init, main, dirs, files })
}

/// One container's process; its own files (mount table, termination-message file) live in
/// `own` (the scratch folder for the main container, `init/<name>` for an init container).
#[expect(
    clippy::too_many_arguments,
    reason = "the pod-wide plan's parts, passed by the one caller"
)]
fn step(
    container: &Container,
    own: &Path,
    is_init: bool,
    inputs: &Inputs,
    config: &JobConfig,
    place: &Place<'_>,
    resolve: &dyn Fn(&str, &str, u16) -> SocketAddr,
    folders: &BTreeMap<String, Folder>,
    dirs: &mut Vec<PathBuf>,
    files: &mut Vec<File>,
) -> Result<Step, PlanError> {
    // (mount path, local folder, read-only)
    let mut mounted: Vec<(String, PathBuf, bool)> = container
        .volume_mounts
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|mount| {
            let folder = folders.get(&mount.name)?;
            let local = match mount.sub_path.as_deref().filter(|s| !s.is_empty()) {
                Some(sub) => folder.path.join(sub),
                None => folder.path.clone(),
            };
            let read_only = folder.read_only || mount.read_only == Some(true);
            Some((mount.mount_path.trim_end_matches('/').to_owned(), local, read_only))
        })
        .collect();
    // Longest mount path first, so `/a/b` wins over `/a`.
    mounted.sort_by_key(|(mount, _, _)| std::cmp::Reverse(mount.len()));
    if !dirs.contains(&own.to_path_buf()) {
        dirs.push(own.to_owned());
    }
    for (_, local, _) in &mounted {
        if !dirs.contains(local) {
            dirs.push(local.clone());
        }
    }
    // The termination-message file: a value naming the container's path names this file.
    let termination_path = container
        .termination_message_path
        .clone()
        .filter(|path| !path.is_empty())
        .unwrap_or_else(|| DEFAULT_TERMINATION_PATH.to_owned());
    let termination_file = own.join("termination-log");
    files.push(File { path: termination_file.clone(), contents: Vec::new(), mode: 0o666 });
    let mut mounts: Vec<(String, PathBuf)> =
        mounted.iter().map(|(mount, local, _)| (mount.clone(), local.clone())).collect();
    mounts.push((termination_path.trim_end_matches('/').to_owned(), termination_file.clone()));

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
    let program = config.executables.get(&name).cloned().ok_or(PlanError::NoExecutable(program))?;
    let args = words.iter().map(|word| map_path(word, &mounts)).collect();

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
    let mut mount_table = None;
    if !mounted.is_empty() && !env.contains_key(MOUNTINFO_ENV) {
        let path = own.join("mountinfo");
        let mounts = mounted.iter().map(|(_, local, read_only)| (local.clone(), *read_only));
        mount_table = Some(MountTable { path: path.clone(), mounts: mounts.collect() });
        env.insert(MOUNTINFO_ENV.to_owned(), path.display().to_string());
    }
    env.entry("POD_NAMESPACE".to_owned()).or_insert_with(|| place.namespace.to_owned());
    env.insert("RUST_LOG".to_owned(), config.log_filter.clone());
    Ok(Step {
        name: container.name.clone(),
        image: container.image.clone().unwrap_or_default(),
        program,
        args,
        env: env.into_iter().collect(),
        termination_file,
        fallback_to_logs: container.termination_message_policy.as_deref()
            == Some("FallbackToLogsOnError"),
        log: log_path(place.scratch, &container.name, is_init),
        mount_table,
    })
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
        assert!(plan.init.is_empty());
        assert_eq!(plan.main.program, PathBuf::from("/bin/sidecar"));
        let claim = claim_folder(Path::new("/claims"), "shop", "backups", "uid-1");
        assert_eq!(
            plan.main.args,
            vec!["backup".to_owned(), "--out=/backups/x".to_owned(), claim.display().to_string()]
        );
        let env: BTreeMap<_, _> = plan.main.env.iter().cloned().collect();
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
        let table = plan.main.mount_table.clone().unwrap();
        assert_eq!(table.path, Path::new("/scratch/shop/job-abcde/mountinfo"));
        let text = table.text(Path::to_path_buf);
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

    #[test]
    fn init_containers_are_planned_in_order_with_their_own_env_mounts_and_messages() {
        let mut template = template();
        let pod = template.spec.as_mut().unwrap();
        pod.volumes.get_or_insert_with(Vec::new).push(Volume {
            name: "shared".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        });
        let step = |name: &str, env: Vec<EnvVar>, mounts: Vec<VolumeMount>| Container {
            name: name.into(),
            command: Some(vec!["bloodraven-sidecar".into(), name.into()]),
            env: Some(env),
            volume_mounts: Some(mounts),
            ..Container::default()
        };
        let read_only = VolumeMount { read_only: Some(true), ..mount("shared", "/shared") };
        let token_ref = EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: "init-only".into(),
                key: "token".into(),
                optional: None,
            }),
            ..EnvVarSource::default()
        };
        pod.init_containers = Some(vec![
            step(
                "first",
                vec![
                    env("OUT", "/shared"),
                    env("MSG", DEFAULT_TERMINATION_PATH),
                    EnvVar { name: "TOKEN".into(), value: None, value_from: Some(token_ref) },
                ],
                vec![mount("shared", "/shared")],
            ),
            Container {
                termination_message_path: Some("/var/msg".into()),
                termination_message_policy: Some("FallbackToLogsOnError".into()),
                ..step(
                    "second",
                    vec![env("IN", "/shared"), env("MSG", "/var/msg")],
                    vec![read_only],
                )
            },
        ]);
        let (secrets, _, _) = references(&template);
        assert_eq!(secrets, vec!["creds".to_owned(), "init-only".to_owned()]);
        let mut inputs = inputs();
        inputs
            .secrets
            .insert("init-only".into(), BTreeMap::from([("token".into(), b"t".to_vec())]));
        let scratch = Path::new("/scratch/shop/job-abcde");
        let place =
            Place { namespace: "shop", pod: "job-abcde", scratch, claims_root: Path::new("/c") };
        let plan = plan(&template, &inputs, &config(), &place, &resolve).unwrap();
        let names: Vec<&str> = plan.init.iter().map(|step| step.name.as_str()).collect();
        assert_eq!((names, plan.main.name.as_str()), (vec!["first", "second"], "backup"));
        let env = |step: &Step| -> BTreeMap<String, String> { step.env.iter().cloned().collect() };
        let (first, second, main) = (env(&plan.init[0]), env(&plan.init[1]), env(&plan.main));
        let shared = scratch.join("volumes/shared").display().to_string();
        assert_eq!(
            (first["OUT"].as_str(), second["IN"].as_str()),
            (shared.as_str(), shared.as_str())
        );
        assert_eq!(first["TOKEN"], "t");
        assert!(!second.contains_key("TOKEN") && !main.contains_key("OUT"), "each its own env");
        assert!(!main.contains_key("IN"));
        // Each container's termination-message file, named where the container's path is.
        let own = scratch.join("init/first");
        assert_eq!(plan.init[0].termination_file, own.join("termination-log"));
        assert_eq!(first["MSG"], own.join("termination-log").display().to_string());
        let own = scratch.join("init/second");
        assert_eq!(second["MSG"], own.join("termination-log").display().to_string());
        assert!(plan.init[1].fallback_to_logs && !plan.init[0].fallback_to_logs);
        assert_eq!(plan.main.termination_file, scratch.join("termination-log"));
        assert_eq!(plan.init[0].log, scratch.join("init/first/container.log"));
        assert_eq!(plan.main.log, scratch.join("container.log"));
        for step in plan.init.iter().chain([&plan.main]) {
            assert!(
                plan.files.iter().any(|f| f.path == step.termination_file && f.contents.is_empty())
            );
        }
        // Each its own mount table; a read-only mount is listed `ro`.
        let table = |step: &Step| {
            let table = step.mount_table.clone().unwrap();
            assert_eq!(table.path.display().to_string(), env(step)[MOUNTINFO_ENV]);
            table.text(Path::to_path_buf)
        };
        assert!(
            table(&plan.init[0]).contains(&format!(" {shared} rw - ext4")),
            "{}",
            table(&plan.init[0])
        );
        assert!(
            table(&plan.init[1]).contains(&format!(" {shared} ro - ext4")),
            "{}",
            table(&plan.init[1])
        );
        assert!(!table(&plan.main).contains(&shared), "the main container does not mount it");
        let resolved = plan.init[0].mount_table.clone().unwrap().text(|_| "/real".into());
        assert!(resolved.contains(" /real rw - ext4"), "the resolved path is listed: {resolved}");
        assert!(plan.dirs.contains(&PathBuf::from(&shared)));
        // A missing Secret an init container names keeps the pod waiting.
        let error =
            super::plan(&template, &self::inputs(), &config(), &place, &resolve).unwrap_err();
        assert!(matches!(&error, PlanError::Config(m) if m.contains("init-only")), "{error}");
    }
}
