//! A step's destination (or source): S3 or a PVC, and the store rooted at the profile's
//! prefix, so an artifact's keys are `<name>/...` (see `bloodraven_backup::layout`).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use bloodraven_backup::layout::{ArtifactLayout, normalize_prefix};
use bloodraven_store::{
    FsStore, MountInfoSource, S3Config, S3Credentials, S3Store, Store, check_pvc_store,
};

use super::creds;

/// The storage settings every step shares (flattened into each subcommand).
#[derive(Debug, Clone, clap::Args)]
pub struct StorageArgs {
    /// `S3` or `PVC`.
    #[arg(long = "storage-type", env = "BLOODRAVEN_STORAGE_TYPE")]
    pub storage_type: String,
    /// The bucket (S3).
    #[arg(long = "s3-bucket", env = "BLOODRAVEN_S3_BUCKET", default_value = "")]
    pub s3_bucket: String,
    /// The profile's prefix (S3).
    #[arg(long = "s3-prefix", env = "BLOODRAVEN_S3_PREFIX", default_value = "")]
    pub s3_prefix: String,
    /// A custom endpoint (S3); empty means AWS.
    #[arg(long = "s3-endpoint", env = "BLOODRAVEN_S3_ENDPOINT", default_value = "")]
    pub s3_endpoint: String,
    /// The region (S3).
    #[arg(long = "s3-region", env = "BLOODRAVEN_S3_REGION", default_value = "")]
    pub s3_region: String,
    /// Where the AWS credentials Secret is mounted.
    #[arg(long = "aws-creds-dir", env = "BLOODRAVEN_AWS_CREDS_DIR")]
    pub aws_creds_dir: Option<PathBuf>,
    /// Where the backup claim is mounted (PVC).
    #[arg(long = "pvc-mount", env = "BLOODRAVEN_PVC_MOUNT", default_value = "/backups")]
    pub pvc_mount: PathBuf,
    /// The profile's subPath inside the claim (PVC).
    #[arg(long = "pvc-sub-path", env = "BLOODRAVEN_PVC_SUB_PATH", default_value = "")]
    pub pvc_sub_path: String,
    /// A file in /proc/self/mountinfo format to check the PVC mount against (the lab; default
    /// the process's own mount table).
    #[arg(long = "mountinfo-file", env = "BLOODRAVEN_MOUNTINFO_FILE")]
    pub mountinfo_file: Option<PathBuf>,
}

impl StorageArgs {
    /// The recorded location of backup `layout` at this destination. S3 locations are
    /// `s3://bucket/prefix/name`; PVC locations are `/backups[/subPath]/name` whatever the
    /// actual mount path (the location is an identity, not a path on this machine).
    pub fn location(&self, layout: &ArtifactLayout) -> anyhow::Result<String> {
        match self.storage_type.as_str() {
            "S3" => Ok(layout.s3_location(&self.s3_bucket, &self.s3_prefix)),
            "PVC" => Ok(layout.pvc_location(Some(&self.pvc_sub_path))),
            other => bail!("BLOODRAVEN_STORAGE_TYPE={other:?} is neither S3 nor PVC"),
        }
    }

    /// Builds the store rooted at the profile's prefix. `writable` runs the PVC mount check and
    /// write probe (writers); readers only need the directory to exist.
    pub async fn store(&self, writable: bool) -> anyhow::Result<Store> {
        match self.storage_type.as_str() {
            "S3" => {
                if self.s3_bucket.is_empty() {
                    bail!("BLOODRAVEN_S3_BUCKET is empty; an S3 profile names its bucket");
                }
                let env = |name: &str| std::env::var(name).ok();
                let credentials = match creds::aws(self.aws_creds_dir.as_deref(), env)? {
                    Some(keys) => S3Credentials::Static {
                        access_key_id: keys.access_key_id,
                        secret_access_key: keys.secret_access_key,
                        session_token: keys.session_token,
                    },
                    None => S3Credentials::Environment,
                };
                let mut config =
                    S3Config::new(&self.s3_bucket, normalize_prefix(&self.s3_prefix), credentials);
                if !self.s3_endpoint.is_empty() {
                    config = config.with_endpoint(&self.s3_endpoint);
                }
                if !self.s3_region.is_empty() {
                    config = config.with_region(&self.s3_region);
                }
                Ok(S3Store::connect(config).await.context("cannot build the S3 client")?.into())
            }
            "PVC" => {
                let dir = pvc_dir(&self.pvc_mount, &self.pvc_sub_path);
                if !writable {
                    if !dir.is_dir() {
                        bail!(
                            "pvc backup store: {} does not exist; is the claim mounted at {}?",
                            dir.display(),
                            self.pvc_mount.display()
                        );
                    }
                    return Ok(FsStore::new(&dir)
                        .context("cannot open the PVC backup store")?
                        .into());
                }
                let mountinfo = match &self.mountinfo_file {
                    Some(path) => {
                        MountInfoSource::Text(std::fs::read_to_string(path).with_context(|| {
                            format!("cannot read BLOODRAVEN_MOUNTINFO_FILE {}", path.display())
                        })?)
                    }
                    None => MountInfoSource::ProcSelf,
                };
                check_pvc_store(&self.pvc_mount, &dir, &mountinfo).context("pvc backup store")?;
                Ok(FsStore::new(&dir).context("cannot open the PVC backup store")?.into())
            }
            other => bail!("BLOODRAVEN_STORAGE_TYPE={other:?} is neither S3 nor PVC"),
        }
    }
}

fn pvc_dir(mount: &Path, sub_path: &str) -> PathBuf {
    let sub = normalize_prefix(sub_path);
    if sub.is_empty() { mount.to_owned() } else { mount.join(sub) }
}
