//! The sidecar's environment: every variable the operator renders into the `sidecar` container
//! and the sidecar reads, named once (the operator's builder and the sidecar both use these
//! constants, so a rename breaks the build instead of the pod).

/// This pod's site (peer awareness).
pub const SITE: &str = "BLOODRAVEN_SITE";
/// The group's name (peer awareness; the operator's `/active-site?group=`).
pub const GROUP: &str = "BLOODRAVEN_GROUP";
/// The pod's namespace (downward API).
pub const POD_NAMESPACE: &str = "POD_NAMESPACE";
/// The operator's `host:port` (`/active-site`, `/pitr-cutoff`).
pub const OPERATOR_ADDRESS: &str = "BLOODRAVEN_ADDRESS";
/// The other sites' sidecars, `host:port`, comma separated.
pub const PEER_ADDRESSES: &str = "PEER_ADDRESSES";
/// `spec.sidecar.leaseTimeout`.
pub const LEASE_TIMEOUT: &str = "LEASE_TIMEOUT";
/// `spec.sidecar.peerCheckInterval` (also the archiver's role-probe interval).
pub const PEER_CHECK_INTERVAL: &str = "PEER_CHECK_INTERVAL";
/// `3 × pollInterval`: how old an operator observation may be and still count.
pub const ACTIVE_SITE_FRESHNESS: &str = "ACTIVE_SITE_FRESHNESS";
/// The local server's host.
pub const MYSQL_HOST: &str = "MYSQL_HOST";
/// The local server's port.
pub const MYSQL_PORT: &str = "MYSQL_PORT";
/// The sidecar's MySQL account.
pub const MYSQL_USER: &str = "MYSQL_USER";
/// Its password.
pub const MYSQL_PASSWORD: &str = "MYSQL_PASSWORD";
/// Where the sidecar's HTTP server listens (not rendered: the default `0.0.0.0:8080`).
pub const SIDECAR_LISTEN: &str = "SIDECAR_LISTEN";

/// The archiver's site (the backup-and-restore document's name).
pub const SITE_NAME: &str = "SITE_NAME";
/// The source group's namespace (the descriptor's `source`).
pub const GROUP_NAMESPACE: &str = "BLOODRAVEN_GROUP_NAMESPACE";
/// The source group's name.
pub const GROUP_NAME: &str = "BLOODRAVEN_GROUP_NAME";
/// The source group's `metadata.uid`.
pub const FAILOVER_GROUP_UID: &str = "BLOODRAVEN_FAILOVER_GROUP_UID";
/// The archive ID derived from the UID and the normalized destination; set only when PITR is
/// enabled (its absence turns the archiver off).
pub const PITR_ARCHIVE_ID: &str = "BLOODRAVEN_PITR_ARCHIVE_ID";
/// The normalized destination text.
pub const PITR_DESTINATION: &str = "BLOODRAVEN_PITR_DESTINATION";
/// `None` or `Passphrase`.
pub const PITR_ENCRYPTION_MODE: &str = "BLOODRAVEN_PITR_ENCRYPTION_MODE";
/// The archive key snapshot's revision (encrypted mode only).
pub const PITR_KEY_REVISION: &str = "BLOODRAVEN_PITR_KEY_REVISION";
/// The file holding the archive passphrase (encrypted mode only: the archive's key snapshot,
/// mounted read-only); default [`PITR_PASSPHRASE_PATH`]. Also read by the `pitr-download` step.
pub const PITR_PASSPHRASE_FILE: &str = "BLOODRAVEN_PITR_PASSPHRASE_FILE";
/// Where the archive key snapshot's `passphrase` key is mounted when the variable is unset.
pub const PITR_PASSPHRASE_PATH: &str = "/run/bloodraven/pitr-key/passphrase";
/// The pod volume holding the encrypted profile's passphrase Secret (its one key).
pub const PITR_KEY_VOLUME: &str = "pitr-key";
/// Where [`PITR_KEY_VOLUME`] is mounted in the sidecar container (read-only).
pub const PITR_KEY_MOUNT_PATH: &str = "/run/bloodraven/pitr-key";
/// The key file's name in [`PITR_KEY_MOUNT_PATH`].
pub const PITR_PASSPHRASE_FILE_NAME: &str = "passphrase";
/// Where the sidecar sees MySQL's data directory (read-only).
pub const MYSQL_DATA_DIR: &str = "BLOODRAVEN_MYSQL_DATA_DIR";
/// The binlog index file's name inside the data directory.
pub const BINLOG_INDEX: &str = "BLOODRAVEN_BINLOG_INDEX";
/// `spec.backup.pitr.archivePollInterval`.
pub const ARCHIVE_POLL_INTERVAL: &str = "ARCHIVE_POLL_INTERVAL";
/// How often the binlog index is checked for a rotation (ours; default 1 s).
pub const ARCHIVE_SCAN_FLOOR: &str = "ARCHIVE_SCAN_FLOOR";

/// S3 credentials, from the profile's `credentialsSecretName` (the AWS SDK's default chain).
pub const AWS_ACCESS_KEY_ID: &str = "AWS_ACCESS_KEY_ID";
/// See [`AWS_ACCESS_KEY_ID`].
pub const AWS_SECRET_ACCESS_KEY: &str = "AWS_SECRET_ACCESS_KEY";
/// Optional in the Secret.
pub const AWS_SESSION_TOKEN: &str = "AWS_SESSION_TOKEN";
/// The profile's `region` when set, else optional in the Secret.
pub const AWS_REGION: &str = "AWS_REGION";

/// Where the PVC archive volume is mounted in the sidecar container (the document's path).
pub const PVC_MOUNT_PATH: &str = "/run/bloodraven/pitr-archive";
/// The pod volume holding the PVC archive claim.
pub const PITR_ARCHIVE_VOLUME: &str = "pitr-archive";
/// The live lab only (never rendered): a directory that stands in for the PVC archive mount;
/// the sidecar uses it instead of [`PVC_MOUNT_PATH`] and its mount check accepts it (the lab
/// kubelet sets it, the document's "mountinfo source injectable so the lab can satisfy it").
pub const LAB_PVC_MOUNT: &str = "BLOODRAVEN_LAB_PVC_MOUNT";
/// The binlog index's name: `log_bin = mysql-bin` in the managed `my.cnf`.
pub const BINLOG_INDEX_NAME: &str = "mysql-bin.index";
