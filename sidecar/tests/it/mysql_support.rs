//! Shared by the real-MySQL Job-step tests (`backup_restore`, `pitr_restore`): the tools
//! `scripts/provision.sh` exports, a started MySQL 9.7 site with the restore account, the
//! credentials folders the Job steps read and a PVC-layout store.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bloodraven_sidecar::jobs::storage::StorageArgs;
use bloodraven_sites::mysqld::{Instance, InstanceSpec, MysqlDist};
use bloodraven_sites::template::ensure_template_async;
use mysql_async::prelude::Queryable as _;

pub(crate) const READY: Duration = Duration::from_secs(120);
pub(crate) const RESTORE_USER: &str = "bloodraven_restore";
pub(crate) const RESTORE_PASSWORD: &str = "lab-restore-pw";

/// The tool `var` names (exported by `scripts/provision.sh`).
pub(crate) fn tool(var: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{var} is unset: run `source scripts/provision.sh` first"))
}

/// A started, writable site `name` with the restore account.
pub(crate) async fn start(dist: &MysqlDist, name: &str, server_id: u32) -> Instance {
    let template = ensure_template_async(dist).await.unwrap_or_else(|e| panic!("{e}"));
    let mut site = Instance::create(dist, &template, InstanceSpec::new(name, server_id))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    site.start_and_wait(READY).await.unwrap_or_else(|e| panic!("{e}\n{}", site.error_log_tail(30)));
    let mut root = site.root_conn().await.unwrap();
    root.query_drop("SET GLOBAL super_read_only = OFF").await.unwrap();
    root.query_drop("SET GLOBAL read_only = OFF").await.unwrap();
    // The restore account, created without a GTID so a fresh server stays empty.
    for statement in [
        "SET sql_log_bin = 0".to_owned(),
        format!("CREATE USER '{RESTORE_USER}'@'%' IDENTIFIED BY '{RESTORE_PASSWORD}'"),
        format!("GRANT ALL ON *.* TO '{RESTORE_USER}'@'%'"),
    ] {
        root.query_drop(statement).await.unwrap();
    }
    site
}

/// A folder with `MYSQL_USER` and `MYSQL_PASSWORD`, as a Secret volume holds them.
pub(crate) fn creds_dir(user: &str, password: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("MYSQL_USER"), user).unwrap();
    std::fs::write(dir.path().join("MYSQL_PASSWORD"), password).unwrap();
    dir
}

/// A PVC-layout store under `mount` (sub-path `orders`), passing the mount check through the
/// injected mount table `mountinfo`.
pub(crate) fn pvc_storage(mount: &Path, mountinfo: &Path) -> StorageArgs {
    StorageArgs {
        storage_type: "PVC".into(),
        s3_bucket: String::new(),
        s3_prefix: String::new(),
        s3_endpoint: String::new(),
        s3_region: String::new(),
        aws_creds_dir: None,
        pvc_mount: mount.to_owned(),
        pvc_sub_path: "orders".into(),
        mountinfo_file: Some(mountinfo.to_owned()),
    }
}
