//! Secret volumes: what a kubelet projects into a container's mount, written into the pod's
//! folder instead (`<claim folder>/secrets/<volume>/`), so a process the lab runs reads the
//! same files at a host path. The sidecar's environment then names the host path wherever the
//! template names the mount ([`rewrite`]).
//!
//! As a kubelet does: `items` project only the listed keys (each at its `path`, with its
//! `mode`, else `defaultMode`, else 0644); no `items` projects every key; a missing Secret or
//! key is an error unless the volume (or the Secret) is `optional`, when the folder is simply
//! empty (or lacks that file). The kubelet re-projects while the pod runs, so a Secret created
//! or changed later reaches the files, as it eventually does in a cluster.
//!
//! The pod's `securityContext.fsGroup` applies as a kubelet applies it to a Secret volume (a
//! read-only volume): each file is given that group and the group's read (`mode | 0440`), so a
//! `0400` or `0440` key is readable by the pod's user through its group. The lab runs every
//! process as its own user, which owns the files; the group is set where the lab may set it
//! (as root, or a group it belongs to) and otherwise left, said in the log (debug).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, PodSpec, Secret, SecretVolumeSource};
use kube::Api;

/// Kubernetes' `defaultMode` when the volume names none.
pub const DEFAULT_MODE: u32 = 0o644;

/// What a pod's `fsGroup` adds to each file of a Secret volume (the kubelet's read-only mask).
pub const FS_GROUP_READ: u32 = 0o440;

/// One file of a projected Secret volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    /// Relative to the mount (an item's `path`, else the key).
    pub path: String,
    /// The key's bytes.
    pub bytes: Vec<u8>,
    /// Its permission bits.
    pub mode: u32,
    /// Its group: the pod's `fsGroup`, when the pod sets one.
    pub group: Option<u32>,
}

/// A Secret volume of a container, projected into a host folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Projected {
    /// The container's `mountPath`.
    pub mount_path: String,
    /// The host folder standing in for it.
    pub dir: PathBuf,
}

fn mode(value: Option<i32>, default: u32) -> u32 {
    value.and_then(|mode| u32::try_from(mode).ok()).map_or(default, |mode| mode & 0o777)
}

fn secret_data(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
    let mut data: BTreeMap<String, Vec<u8>> = secret
        .string_data
        .iter()
        .flatten()
        .map(|(key, value)| (key.clone(), value.clone().into_bytes()))
        .collect();
    for (key, value) in secret.data.iter().flatten() {
        data.insert(key.clone(), value.0.clone());
    }
    data
}

/// The files of `source` given the Secret as read (`None`: not found) in a pod whose
/// `securityContext.fsGroup` is `fs_group`, or why the volume cannot be mounted (the kubelet's
/// message).
///
/// # Errors
/// A missing Secret or key of a volume that is not optional, an item path that would leave
/// the mount (absolute or with `..`), or an `fsGroup` that is not a group id.
pub fn files(
    namespace: &str,
    source: &SecretVolumeSource,
    secret: Option<&Secret>,
    fs_group: Option<i64>,
) -> Result<Vec<File>, String> {
    let name = source.secret_name.clone().unwrap_or_default();
    let optional = source.optional == Some(true);
    let group = fs_group
        .map(|group| {
            u32::try_from(group)
                .map_err(|_| format!("securityContext.fsGroup {group} is not a group id"))
        })
        .transpose()?;
    // The group's read when the pod has a group (the kubelet's read-only mask).
    let with_group = |mode: u32| if group.is_some() { mode | FS_GROUP_READ } else { mode };
    let default_mode = mode(source.default_mode, DEFAULT_MODE);
    let Some(secret) = secret else {
        return if optional {
            Ok(Vec::new())
        } else {
            Err(format!("secret {namespace}/{name} not found"))
        };
    };
    let data = secret_data(secret);
    let Some(items) = &source.items else {
        return Ok(data
            .into_iter()
            .map(|(path, bytes)| File { path, bytes, mode: with_group(default_mode), group })
            .collect());
    };
    let mut files = Vec::new();
    for item in items {
        if item.path.starts_with('/') || item.path.split('/').any(|part| part == "..") {
            return Err(format!(
                "secret volume {name:?}: item path {:?} must be relative and stay inside the mount",
                item.path
            ));
        }
        match data.get(&item.key) {
            Some(bytes) => files.push(File {
                path: item.path.clone(),
                bytes: bytes.clone(),
                mode: with_group(mode(item.mode, default_mode)),
                group,
            }),
            None if optional => {}
            None => {
                return Err(format!("couldn't find key {} in Secret {namespace}/{name}", item.key));
            }
        }
    }
    Ok(files)
}

/// `value` with a leading mount path replaced by its host folder (a file named inside a
/// projected mount); unchanged otherwise.
pub fn rewrite(value: &str, projected: &[Projected]) -> String {
    for volume in projected {
        let mount = volume.mount_path.trim_end_matches('/');
        if value == mount {
            return volume.dir.display().to_string();
        }
        if let Some(rest) = value.strip_prefix(mount).and_then(|rest| rest.strip_prefix('/')) {
            return volume.dir.join(rest).display().to_string();
        }
    }
    value.to_owned()
}

/// Gives `path` the group `group`: an error the lab may not set it (not root, not a member) is
/// left and logged, as the lab's own user owns the file and reads it anyway.
fn set_group(path: &Path, group: u32) -> std::io::Result<()> {
    match std::os::unix::fs::chown(path, None, Some(group)) {
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
            tracing::debug!(
                path = %path.display(),
                group,
                "the lab may not give a Secret file the pod's fsGroup; its own user owns it"
            );
            Ok(())
        }
        other => other,
    }
}

/// Writes `files` into `dir` (each through a temporary file and a rename, so a reader never
/// sees half a key), sets their modes and groups, and removes files no longer projected.
fn write(dir: &Path, files: &[File]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for file in files {
        let target = dir.join(&file.path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let unchanged = std::fs::read(&target).is_ok_and(|bytes| bytes == file.bytes)
            && std::fs::metadata(&target).is_ok_and(|meta| {
                meta.permissions().mode() & 0o777 == file.mode
                    && file.group.is_none_or(|group| group == meta.gid())
            });
        if unchanged {
            continue;
        }
        let temporary = target.with_extension("projecting");
        let _ = std::fs::remove_file(&temporary);
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)?;
        out.write_all(&file.bytes)?;
        out.sync_all()?;
        drop(out);
        if let Some(group) = file.group {
            set_group(&temporary, group)?;
        }
        std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(file.mode))?;
        std::fs::rename(&temporary, &target)?;
    }
    let keep: Vec<PathBuf> = files.iter().map(|file| dir.join(&file.path)).collect();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let path = entry.path();
        if path.is_file() && !keep.contains(&path) {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// Projects every Secret volume `container` mounts into `<base>/<volume name>/`.
///
/// # Errors
/// The first volume that cannot be mounted ([`files`]), a failed read of a Secret, or a write
/// that failed; the message names it.
pub async fn project(
    client: &kube::Client,
    namespace: &str,
    pod: &PodSpec,
    container: &Container,
    base: &Path,
) -> Result<Vec<Projected>, String> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut projected = Vec::new();
    for mount in container.volume_mounts.iter().flatten() {
        let Some(source) = pod
            .volumes
            .iter()
            .flatten()
            .find(|volume| volume.name == mount.name)
            .and_then(|volume| volume.secret.as_ref())
        else {
            continue;
        };
        let name = source.secret_name.clone().unwrap_or_default();
        let secret = secrets
            .get_opt(&name)
            .await
            .map_err(|error| format!("reading secret {namespace}/{name}: {error}"))?;
        let fs_group = pod.security_context.as_ref().and_then(|context| context.fs_group);
        let files = files(namespace, source, secret.as_ref(), fs_group)?;
        let dir = base.join(&mount.name);
        write(&dir, &files).map_err(|error| {
            format!("writing secret volume {:?} into {}: {error}", mount.name, dir.display())
        })?;
        projected.push(Projected { mount_path: mount.mount_path.clone(), dir });
    }
    Ok(projected)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::KeyToPath;

    use super::*;

    fn secret(pairs: &[(&str, &[u8])]) -> Secret {
        Secret {
            data: Some(
                pairs
                    .iter()
                    .map(|(key, value)| ((*key).to_owned(), ByteString(value.to_vec())))
                    .collect(),
            ),
            ..Secret::default()
        }
    }

    fn source(items: Option<Vec<(&str, &str, Option<i32>)>>, optional: bool) -> SecretVolumeSource {
        SecretVolumeSource {
            secret_name: Some("key".to_owned()),
            optional: optional.then_some(true),
            default_mode: Some(0o440),
            items: items.map(|items| {
                items
                    .into_iter()
                    .map(|(key, path, mode)| KeyToPath {
                        key: key.to_owned(),
                        path: path.to_owned(),
                        mode,
                        ..KeyToPath::default()
                    })
                    .collect()
            }),
            ..SecretVolumeSource::default()
        }
    }

    #[test]
    fn items_project_only_their_keys_with_their_modes() {
        let secret = secret(&[("phrase", b"s3cret\n"), ("other", b"x")]);
        let files = files(
            "ns",
            &source(Some(vec![("phrase", "passphrase", Some(0o400))]), false),
            Some(&secret),
            None,
        )
        .unwrap();
        assert_eq!(
            files,
            vec![File {
                path: "passphrase".into(),
                bytes: b"s3cret\n".to_vec(),
                mode: 0o400,
                group: None
            }]
        );
        let all = files_all(&secret);
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|file| file.mode == 0o440));
    }

    fn files_all(secret: &Secret) -> Vec<File> {
        files("ns", &source(None, false), Some(secret), None).unwrap()
    }

    #[test]
    fn a_missing_secret_or_key_fails_unless_optional() {
        let required = source(Some(vec![("phrase", "passphrase", None)]), false);
        let optional = source(Some(vec![("phrase", "passphrase", None)]), true);
        assert_eq!(files("ns", &required, None, None).unwrap_err(), "secret ns/key not found");
        assert_eq!(files("ns", &optional, None, None).unwrap(), Vec::new());
        let without = secret(&[("other", b"x")]);
        let error = files("ns", &required, Some(&without), None).unwrap_err();
        assert!(error.contains("couldn't find key phrase in Secret ns/key"), "{error}");
        assert_eq!(files("ns", &optional, Some(&without), None).unwrap(), Vec::new());
    }

    #[test]
    fn an_item_path_cannot_leave_the_mount() {
        let secret = secret(&[("phrase", b"x")]);
        for path in ["/etc/passwd", "../up", "a/../../b"] {
            let error = files(
                "ns",
                &source(Some(vec![("phrase", path, None)]), false),
                Some(&secret),
                None,
            )
            .unwrap_err();
            assert!(error.contains("must be relative"), "{path}: {error}");
        }
    }

    #[test]
    fn a_value_inside_a_mount_names_the_host_folder() {
        let projected = [Projected {
            mount_path: "/run/bloodraven/pitr-key".into(),
            dir: PathBuf::from("/tmp/c/secrets/pitr-key"),
        }];
        assert_eq!(
            rewrite("/run/bloodraven/pitr-key/passphrase", &projected),
            "/tmp/c/secrets/pitr-key/passphrase"
        );
        assert_eq!(rewrite("/run/bloodraven/pitr-key", &projected), "/tmp/c/secrets/pitr-key");
        assert_eq!(
            rewrite("/run/bloodraven/pitr-keys/x", &projected),
            "/run/bloodraven/pitr-keys/x"
        );
        assert_eq!(rewrite("Passphrase", &projected), "Passphrase");
    }

    #[test]
    fn writing_sets_modes_replaces_changed_bytes_and_drops_removed_keys() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("v");
        let file = |path: &str, bytes: &[u8]| File {
            path: path.into(),
            bytes: bytes.to_vec(),
            mode: 0o400,
            group: None,
        };
        write(&target, &[file("passphrase", b"one"), file("old", b"x")]).unwrap();
        let meta = std::fs::metadata(target.join("passphrase")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o400);
        write(&target, &[file("passphrase", b"two")]).unwrap();
        assert_eq!(std::fs::read(target.join("passphrase")).unwrap(), b"two");
        assert!(!target.join("old").exists());
        write(&target, &[]).unwrap();
        assert!(!target.join("passphrase").exists());
    }

    /// The site pod's key volume as the operator renders it (`0440`, `fsGroup: 999`), and the
    /// Jobs' Secret volumes (`0400`, `fsGroup: 27`): every file gets the pod's group and the
    /// group's read, as a kubelet gives them; without `fsGroup` the modes stay as rendered.
    #[test]
    fn the_pods_fs_group_gives_each_file_its_group_and_the_groups_read() {
        let secret = secret(&[("phrase", b"s3cret\n")]);
        let site = source(Some(vec![("phrase", "passphrase", Some(0o440))]), true);
        let files_of = |source: &SecretVolumeSource, group: Option<i64>| {
            files("ns", source, Some(&secret), group)
                .unwrap()
                .into_iter()
                .map(|file| (file.mode, file.group))
                .collect::<Vec<_>>()
        };
        assert_eq!(files_of(&site, Some(999)), [(0o440, Some(999))]);
        assert_eq!(files_of(&site, None), [(0o440, None)]);
        let job = source(Some(vec![("phrase", "passphrase", Some(0o400))]), false);
        assert_eq!(files_of(&job, Some(27)), [(0o440, Some(27))]);
        assert_eq!(files_of(&job, None), [(0o400, None)]);
        let writable = source(Some(vec![("phrase", "passphrase", Some(0o600))]), false);
        assert_eq!(files_of(&writable, Some(27)), [(0o640, Some(27))]);
        let error = files("ns", &job, Some(&secret), Some(-1)).unwrap_err();
        assert!(error.contains("fsGroup"), "{error}");
    }

    /// The file on disk has the pod's group when the lab may give it (as root), else the lab's
    /// own (the write does not fail: the lab's user owns the file); and its mode.
    #[test]
    fn writing_gives_the_file_its_group_where_the_lab_may() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("v");
        let meta = std::fs::metadata(dir.path()).unwrap();
        let (root, own) = (meta.uid() == 0, meta.gid());
        let group = if own == 999 { 998 } else { 999 };
        let file = |mode: u32| File {
            path: "passphrase".into(),
            bytes: b"one".to_vec(),
            mode,
            group: Some(group),
        };
        write(&target, &[file(0o440)]).unwrap();
        let meta = std::fs::metadata(target.join("passphrase")).unwrap();
        let expected = if root { group } else { own };
        assert_eq!((meta.permissions().mode() & 0o777, meta.gid()), (0o440, expected));
        write(&target, &[file(0o400)]).unwrap();
        let meta = std::fs::metadata(target.join("passphrase")).unwrap();
        assert_eq!((meta.permissions().mode() & 0o777, meta.gid()), (0o400, expected));
        assert_eq!(std::fs::read(target.join("passphrase")).unwrap(), b"one");
    }
}
