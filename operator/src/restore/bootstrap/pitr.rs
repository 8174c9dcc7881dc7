//! `spec.initFromBackup.pointInTime` on the bootstrap restore Job (pure). Backup-and-restore
//! document, "Restore to a target timestamp", "The restore Job" and the verdict:
//!
//! - [`check`]: the refusals at reconcile, before any Job (schema filters PITRBackupFiltered,
//!   `skipBinlog: false`, the archive profile, PITRArchiveDestinationShared).
//! - [`add_steps`]: the Job's PITR steps: init containers `dump-meta` (the backup's storage)
//!   and `pitr-download` (the archive profile's storage), then the main container
//!   (`pitr-restore` here, `verify` in a verification Job: the load, the replay, the proof; the
//!   verdict as termination message).
//! - [`refusal_in`]: the refusal token and line of a failed step's message.
//! - [`accept`]: the verdict checked against what was rendered, as `PointInTimeResult`.
//! - [`earliest_failure`], [`main_message`]: the failed step's message and the main
//!   container's verdict, read from the Job's pod.
//!
//! A verification (`MysqlBackupVerification`, `backup::verification`) reuses all of it with
//! mode Latest (an empty stop time: pitr-download plans to the archive head).

use std::collections::BTreeMap;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_crd::group::{
    BackupProfile, EncryptionMode, InitFromBackupSpec, PitrToken, PointInTimeMode,
    PointInTimeOutcome, PointInTimeResult, PointInTimeSpec,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, EnvVar, Pod, Volume, VolumeMount,
};
use sha2::{Digest as _, Sha256};

use crate::backup::job::env;

/// Where dump-meta writes `dump.json` (an emptyDir shared with pitr-download).
pub const DUMP_META_DIR: &str = "/pitr-dump-meta";
/// Where pitr-download stages the plan's files (an emptyDir shared with the main container).
pub const STAGING_DIR: &str = "/pitr-binlogs";
/// The main container's termination message file.
pub const TERMINATION_LOG: &str = "/dev/termination-log";
/// The main container's share of the termination messages (the document's default).
pub const MESSAGE_LIMIT: usize = 3_072;
/// `gtidExecuted` is left empty when longer than this.
pub const GTID_EXECUTED_LIMIT: usize = 2_048;
/// The storage settings of a profile, as the backup Job builder renders them.
const STORAGE_ENV: &[&str] = &["BLOODRAVEN_STORAGE_TYPE", "BLOODRAVEN_AWS_CREDS_DIR"];
const STORAGE_ENV_PREFIXES: &[&str] = &["BLOODRAVEN_S3_", "BLOODRAVEN_PVC_"];

/// Why a point-in-time bootstrap restore is refused before any Job is created (recorded
/// Failed with a RestoreBuildFailed Event; the token, when there is one, as the reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PitrBuildError {
    /// Schema filters with pointInTime.
    #[error(
        "PITRBackupFiltered: spec.initFromBackup.loadOptions.{field} is set with pointInTime; replay covers every schema, so the load must too. Delete the group and create it again without schema filters"
    )]
    Filtered {
        /// `includeSchemas` or `excludeSchemas`.
        field: &'static str,
    },
    /// `loadOptions.skipBinlog: false` with pointInTime.
    #[error(
        "spec.initFromBackup.loadOptions.skipBinlog: false is set with pointInTime; the load must not write binary logs of its own before the replay. Delete the group and create it again without skipBinlog: false"
    )]
    BinlogNotSkipped,
    /// `archiveProfileName` is missing or names no profile.
    #[error(
        "pointInTime.archiveProfileName {profile:?} names no spec.backup.profiles entry; declare a profile of that name pointing at the source group's archive prefix"
    )]
    NoArchiveProfile {
        /// The name asked for.
        profile: String,
    },
    /// The archive profile is the group's own active PITR destination.
    #[error(
        "PITRArchiveDestinationShared: pointInTime.archiveProfileName {profile} resolves to this group's own PITR destination {destination} (spec.backup.pitr.profileName); keep spec.backup.pitr on a profile with its own prefix"
    )]
    DestinationShared {
        /// The archive profile.
        profile: String,
        /// The shared destination, normalized.
        destination: String,
    },
    /// The archive profile's storage cannot be read.
    #[error("pointInTime.archiveProfileName {profile}: {reason}")]
    Storage {
        /// The archive profile.
        profile: String,
        /// What is wrong.
        reason: String,
    },
    /// An encrypted archive needs the read binding's key snapshot.
    #[error(
        "pointInTime.archiveProfileName {profile} is encrypted; this operator does not build the archive's read binding (the pitr-archive-check Job and its key snapshot) for a bootstrap restore yet. Restore from a plaintext archive, or without pointInTime"
    )]
    EncryptedArchive {
        /// The archive profile.
        profile: String,
    },
}

impl PitrBuildError {
    /// The refusal token recorded as `status.restore.reason`, if the document gives one.
    pub fn token(&self) -> Option<PitrToken> {
        match self {
            PitrBuildError::Filtered { .. } => Some(PitrToken::PitrBackupFiltered),
            PitrBuildError::DestinationShared { .. } => {
                Some(PitrToken::PitrArchiveDestinationShared)
            }
            _ => None,
        }
    }
}

/// The archive profile of `point_in_time` in `group`.
pub fn archive_profile<'a>(
    group: &'a MysqlFailoverGroup,
    point_in_time: &PointInTimeSpec,
) -> Result<&'a BackupProfile, PitrBuildError> {
    let name = point_in_time.archive_profile_name.clone().unwrap_or_default();
    group
        .spec
        .backup
        .as_ref()
        .and_then(|backup| backup.profiles.iter().find(|profile| profile.name == name))
        .ok_or(PitrBuildError::NoArchiveProfile { profile: name })
}

/// A profile's storage as the archive sees it, normalized (the text the archive ID is derived
/// from), rendered as if the group archived to it.
fn destination(group: &MysqlFailoverGroup, profile: &str) -> Result<String, PitrBuildError> {
    let mut probe = group.clone();
    let storage = |reason: String| PitrBuildError::Storage { profile: profile.to_owned(), reason };
    let backup = probe.spec.backup.as_mut().ok_or_else(|| storage("no spec.backup".into()))?;
    backup.pitr = Some(bloodraven_crd::group::PitrSpec {
        enabled: Some(true),
        profile_name: Some(profile.to_owned()),
        ..Default::default()
    });
    match bloodraven_workloads::pitr::render(&probe) {
        Ok(Some(render)) => Ok(render.normalized.as_str().to_owned()),
        Ok(None) => Err(storage("the profile does not render as an archive".into())),
        Err(error) => Err(storage(error.to_string())),
    }
}

/// The refusals at reconcile, in the document's order; `Ok` with the archive profile.
pub fn check<'a>(
    group: &'a MysqlFailoverGroup,
    init: &InitFromBackupSpec,
    point_in_time: &PointInTimeSpec,
) -> Result<&'a BackupProfile, PitrBuildError> {
    if let Some(options) = &init.load_options {
        if options.include_schemas.as_ref().is_some_and(|list| !list.is_empty()) {
            return Err(PitrBuildError::Filtered { field: "includeSchemas" });
        }
        if options.exclude_schemas.as_ref().is_some_and(|list| !list.is_empty()) {
            return Err(PitrBuildError::Filtered { field: "excludeSchemas" });
        }
        if options.skip_binlog == Some(false) {
            return Err(PitrBuildError::BinlogNotSkipped);
        }
    }
    let profile = archive_profile(group, point_in_time)?;
    let own = group
        .spec
        .backup
        .as_ref()
        .and_then(|backup| backup.pitr.as_ref())
        .filter(|pitr| pitr.enabled == Some(true))
        .and_then(|pitr| pitr.profile_name.as_deref());
    let archive = destination(group, &profile.name)?;
    if let Some(own) = own
        && destination(group, own).is_ok_and(|own| own == archive)
    {
        return Err(PitrBuildError::DestinationShared {
            profile: profile.name.clone(),
            destination: archive,
        });
    }
    if profile.encryption.is_some() {
        return Err(PitrBuildError::EncryptedArchive { profile: profile.name.clone() });
    }
    Ok(profile)
}

/// What the verdict must match: what was rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// `pointInTime.stopTime` as written; empty: mode Latest (a verification's replay to the
    /// archive head).
    pub stop_time: String,
    /// `pointInTime.allowPartial`.
    pub allow_partial: bool,
    /// `None` or `Passphrase`.
    pub encryption_mode: String,
    /// The backup's source group (its UID when the backup recorded one).
    pub source_uid: Option<String>,
    pub source_namespace: String,
    pub source_name: String,
}

impl Expected {
    /// From the spec and the backup.
    pub fn new(point_in_time: &PointInTimeSpec, backup: &MysqlBackup) -> Expected {
        Expected::of_backup(
            point_in_time.stop_time.clone(),
            point_in_time.allow_partial == Some(true),
            backup,
        )
    }

    /// A replay of `backup` to `stop_time` (empty: the archive head) from a plaintext archive.
    pub fn of_backup(stop_time: String, allow_partial: bool, backup: &MysqlBackup) -> Expected {
        Expected {
            stop_time,
            allow_partial,
            encryption_mode: "None".to_owned(),
            source_uid: backup
                .status
                .as_ref()
                .and_then(|status| status.failover_group_uid.clone())
                .filter(|uid| !uid.is_empty()),
            source_namespace: backup.metadata.namespace.clone().unwrap_or_default(),
            source_name: backup.spec.failover_group_ref.name.clone(),
        }
    }
}

impl Expected {
    /// Mode Latest: no target, the archive head.
    pub fn latest(&self) -> bool {
        self.stop_time.is_empty()
    }

    /// What a built Job rendered (`None`: the Job has no PITR steps). The verdict is checked
    /// against the Job that ran, not against a spec or backup read later.
    pub fn from_job(job: &Job) -> Option<Expected> {
        let pod = job.spec.as_ref()?.template.spec.as_ref()?;
        let find = |containers: &[Container], name: &str, key: &str| {
            containers
                .iter()
                .find(|c| c.name == name)
                .and_then(|c| c.env.as_ref())
                .and_then(|envs| envs.iter().find(|e| e.name == key))
                .and_then(|e| e.value.clone())
        };
        let init = pod.init_containers.as_deref()?;
        let main = pod.containers.first()?;
        let stop_time = find(init, "pitr-download", "BLOODRAVEN_PITR_STOP_TIME")?;
        let main_env = |key: &str| find(std::slice::from_ref(main), &main.name, key);
        Some(Expected {
            stop_time,
            allow_partial: find(init, "pitr-download", "BLOODRAVEN_PITR_ALLOW_PARTIAL").as_deref()
                == Some("true"),
            encryption_mode: main_env("BLOODRAVEN_PITR_ENCRYPTION_MODE")
                .unwrap_or_else(|| "None".to_owned()),
            source_uid: find(init, "dump-meta", "BLOODRAVEN_SOURCE_UID")
                .filter(|uid| !uid.is_empty()),
            source_namespace: main_env("BLOODRAVEN_SOURCE_NAMESPACE").unwrap_or_default(),
            source_name: main_env("BLOODRAVEN_SOURCE_NAME").unwrap_or_default(),
        })
    }
}

/// What the PITR steps are built from.
#[derive(Clone, Debug)]
pub struct Steps<'a> {
    /// `pointInTime.excludeGtids` as written ("" when unset).
    pub exclude_gtids: String,
    /// What the verdict names (the target, empty for mode Latest, and allowPartial).
    pub expected: &'a Expected,
    /// The main container's subcommand: `pitr-restore` (the bootstrap restore) or `verify`
    /// (a verification, which replays into its scratch server).
    pub main_subcommand: &'a str,
    /// The backup's `status.gtidExecuted` ("" when unrecorded).
    pub backup_gtid_executed: String,
    /// The archive profile's Job, built as the backup Job builder builds it (only its storage
    /// settings and volumes are taken).
    pub archive: &'a Job,
}

fn container(job: &Job) -> Option<&Container> {
    job.spec.as_ref()?.template.spec.as_ref()?.containers.first()
}

fn is_storage(name: &str) -> bool {
    STORAGE_ENV.contains(&name) || STORAGE_ENV_PREFIXES.iter().any(|p| name.starts_with(p))
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.to_owned(),
        mount_path: path.to_owned(),
        read_only: Some(read_only),
        ..VolumeMount::default()
    }
}

/// Adds the PITR steps to a Job whose first container loads the backup (the bootstrap
/// restore's `restore`, a verification's `verify`).
pub fn add_steps(job: &mut Job, steps: &Steps<'_>) {
    let Some(archive) = container(steps.archive).cloned() else { return };
    // The archive profile's volumes, renamed so they cannot collide with the backup's.
    let renamed: BTreeMap<String, String> = steps
        .archive
        .spec
        .as_ref()
        .and_then(|spec| spec.template.spec.as_ref())
        .and_then(|pod| pod.volumes.as_ref())
        .into_iter()
        .flatten()
        .filter(|volume| matches!(volume.name.as_str(), "aws-creds" | "backups"))
        .map(|volume| (volume.name.clone(), format!("archive-{}", volume.name)))
        .collect();
    let archive_volumes: Vec<Volume> = steps
        .archive
        .spec
        .as_ref()
        .and_then(|spec| spec.template.spec.as_ref())
        .and_then(|pod| pod.volumes.clone())
        .into_iter()
        .flatten()
        .filter_map(|mut volume| {
            let name = renamed.get(&volume.name)?.clone();
            volume.name = name;
            // The archive is only read.
            if let Some(claim) = volume.persistent_volume_claim.as_mut() {
                claim.read_only = Some(true);
            }
            Some(volume)
        })
        .collect();
    let Some(pod) = job.spec.as_mut().and_then(|spec| spec.template.spec.as_mut()) else {
        return;
    };
    let Some(main) = pod.containers.first_mut() else { return };
    let exclude = steps.exclude_gtids.clone();
    let allow_partial = steps.expected.allow_partial;
    let dump_meta_file = format!("{DUMP_META_DIR}/dump.json");

    let mut dump_meta = main.clone();
    dump_meta.name = "dump-meta".to_owned();
    dump_meta.command = Some(vec!["bloodraven-sidecar".to_owned(), "dump-meta".to_owned()]);
    let envs = dump_meta.env.get_or_insert_with(Vec::new);
    envs.retain(|e| {
        !e.name.starts_with("MYSQL_")
            && !matches!(
                e.name.as_str(),
                "BLOODRAVEN_MYSQL_CREDS_DIR"
                    | "BLOODRAVEN_SOURCE_UID"
                    | "BLOODRAVEN_BACKUP_GTID_EXECUTED"
                    | "BLOODRAVEN_PITR_DUMP_META"
            )
    });
    envs.extend([
        env("BLOODRAVEN_SOURCE_UID", steps.expected.source_uid.clone().unwrap_or_default()),
        env("BLOODRAVEN_BACKUP_GTID_EXECUTED", steps.backup_gtid_executed.clone()),
        env("BLOODRAVEN_PITR_DUMP_META", dump_meta_file.clone()),
    ]);
    let mounts = dump_meta.volume_mounts.get_or_insert_with(Vec::new);
    mounts.retain(|m| m.name != "mysql-creds");
    mounts.push(mount("pitr-dump-meta", DUMP_META_DIR, false));

    let mut download = main.clone();
    download.name = "pitr-download".to_owned();
    download.command = Some(vec!["bloodraven-sidecar".to_owned(), "pitr-download".to_owned()]);
    let mut envs: Vec<EnvVar> = archive.env.clone().unwrap_or_default();
    envs.retain(|e| is_storage(&e.name) || matches!(e.name.as_str(), "TZ" | "HOME"));
    envs.extend([
        env("BLOODRAVEN_PITR_DUMP_META", dump_meta_file),
        env("BLOODRAVEN_PITR_STOP_TIME", steps.expected.stop_time.clone()),
        env("BLOODRAVEN_PITR_EXCLUDE_GTIDS", exclude),
        env("BLOODRAVEN_PITR_ALLOW_PARTIAL", allow_partial.to_string()),
        env("BLOODRAVEN_PITR_STAGING", STAGING_DIR),
    ]);
    download.env = Some(envs);
    let mut mounts: Vec<VolumeMount> = archive
        .volume_mounts
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|mut m| {
            if m.name == "tmp" {
                return Some(m);
            }
            m.name = renamed.get(&m.name)?.clone();
            m.read_only = Some(true);
            Some(m)
        })
        .collect();
    mounts.push(mount("pitr-dump-meta", DUMP_META_DIR, true));
    mounts.push(mount("pitr-binlogs", STAGING_DIR, false));
    download.volume_mounts = Some(mounts);

    main.command = Some(vec!["bloodraven-sidecar".to_owned(), steps.main_subcommand.to_owned()]);
    main.termination_message_path = Some(TERMINATION_LOG.to_owned());
    main.env.get_or_insert_with(Vec::new).extend([
        env("BLOODRAVEN_PITR_STAGING", STAGING_DIR),
        env("BLOODRAVEN_SOURCE_NAMESPACE", steps.expected.source_namespace.clone()),
        env("BLOODRAVEN_SOURCE_NAME", steps.expected.source_name.clone()),
        env("BLOODRAVEN_PITR_ENCRYPTION_MODE", steps.expected.encryption_mode.clone()),
        env("BLOODRAVEN_TERMINATION_LOG", TERMINATION_LOG),
        env("BLOODRAVEN_TERMINATION_MESSAGE_LIMIT", MESSAGE_LIMIT.to_string()),
    ]);
    main.volume_mounts.get_or_insert_with(Vec::new).push(mount("pitr-binlogs", STAGING_DIR, true));

    pod.init_containers = Some(vec![dump_meta, download]);
    let volumes = pod.volumes.get_or_insert_with(Vec::new);
    for name in ["pitr-dump-meta", "pitr-binlogs"] {
        volumes.push(Volume {
            name: name.to_owned(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        });
    }
    volumes.extend(archive_volumes);
}

/// The refusal in a failed step's message: the first line that starts (after `Error: `, a
/// cause's `N: ` or indentation) with a known token and `: `, or with
/// `BLOODRAVEN_PITR_FAILED: ` (PITRReplayFailed, the line kept whole).
pub fn refusal_in(message: &str) -> Option<(PitrToken, String)> {
    for line in message.lines() {
        let mut text = line.trim_start();
        text = text.strip_prefix("Error: ").unwrap_or(text);
        if let Some((number, rest)) = text.split_once(": ")
            && !number.is_empty()
            && number.bytes().all(|b| b.is_ascii_digit())
        {
            text = rest;
        }
        let text = text.trim_end();
        if text.starts_with("BLOODRAVEN_PITR_FAILED: ") {
            return Some((PitrToken::PitrReplayFailed, text.to_owned()));
        }
        let Some((word, _)) = text.split_once(": ") else { continue };
        let token = PitrToken::parse(word);
        if token.is_known() {
            return Some((token, text.to_owned()));
        }
    }
    None
}

/// Why a verdict is not accepted (the restore fails PITRCoverageInvalid).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerdictError {
    /// No verdict line.
    #[error(
        "the Job succeeded without a BLOODRAVEN_PITR_VERDICT in its main container's termination message"
    )]
    Missing,
    /// A field is missing or unreadable.
    #[error("the verdict's {field} is missing or unreadable")]
    Field {
        /// The field.
        field: &'static str,
    },
    /// A field differs from what was rendered.
    #[error("the verdict's {field} is {found:?}, but the restore rendered {expected:?}")]
    Mismatch {
        /// The field.
        field: &'static str,
        /// The verdict's.
        found: String,
        /// The rendered one.
        expected: String,
    },
    /// The result line's set does not hash to the verdict's digest.
    #[error("BLOODRAVEN_PITR_RESULT's executed set does not match the verdict's executedSha256")]
    Digest,
}

fn decode(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = value.get(index + 1..index + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The fields of the last `BLOODRAVEN_PITR_VERDICT v=2` line, decoded.
fn verdict_fields(message: &str) -> Option<BTreeMap<String, String>> {
    let line = message
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| line.starts_with("BLOODRAVEN_PITR_VERDICT "))?;
    line.split_whitespace()
        .skip(1)
        .map(|pair| {
            let (key, value) = pair.split_once('=')?;
            Some((key.to_owned(), decode(value)?))
        })
        .collect()
}

/// Checks the main container's termination message against what was rendered and turns it
/// into `status.restore.provenance.pointInTime`.
pub fn accept(
    expected: &Expected,
    message: Option<&str>,
) -> Result<PointInTimeResult, VerdictError> {
    let message = message.ok_or(VerdictError::Missing)?;
    let fields = verdict_fields(message).ok_or(VerdictError::Missing)?;
    let text =
        |field: &'static str| fields.get(field).cloned().ok_or(VerdictError::Field { field });
    let number = |field: &'static str| {
        text(field)?.parse::<i64>().map_err(|_| VerdictError::Field { field })
    };
    let same = |field: &'static str, found: String, wanted: &str| {
        if found == wanted {
            Ok(())
        } else {
            Err(VerdictError::Mismatch { field, found, expected: wanted.to_owned() })
        }
    };
    same("v", text("v")?, "2")?;
    let outcome = if expected.latest() {
        same("mode", text("mode")?, "latest")?;
        if let Some(stop) = fields.get("stop") {
            return Err(VerdictError::Mismatch {
                field: "stop",
                found: stop.clone(),
                expected: "none (mode Latest)".to_owned(),
            });
        }
        same("outcome", text("outcome")?, "Latest")?;
        PointInTimeOutcome::Latest
    } else {
        same("mode", text("mode")?, "timestamp")?;
        let stop = text("stop")?;
        let wanted: jiff::Timestamp =
            expected.stop_time.parse().map_err(|_| VerdictError::Field { field: "stop" })?;
        let found: jiff::Timestamp =
            stop.parse().map_err(|_| VerdictError::Field { field: "stop" })?;
        if found != wanted {
            return Err(VerdictError::Mismatch {
                field: "stop",
                found: stop,
                expected: expected.stop_time.clone(),
            });
        }
        match text("outcome")?.as_str() {
            "TargetCovered" => PointInTimeOutcome::TargetCovered,
            "Partial" if expected.allow_partial => PointInTimeOutcome::Partial,
            other => {
                return Err(VerdictError::Mismatch {
                    field: "outcome",
                    found: other.to_owned(),
                    expected: if expected.allow_partial {
                        "TargetCovered or Partial".to_owned()
                    } else {
                        "TargetCovered".to_owned()
                    },
                });
            }
        }
    };
    same("encryptionMode", text("encryptionMode")?, &expected.encryption_mode)?;
    let source_uid = text("sourceUID")?;
    if let Some(uid) = &expected.source_uid {
        same("sourceUID", source_uid.clone(), uid)?;
    }
    same("sourceNamespace", text("sourceNamespace")?, &expected.source_namespace)?;
    same("sourceName", text("sourceName")?, &expected.source_name)?;
    let sha = text("executedSha256")?;
    let executed = message
        .lines()
        .rev()
        .map(str::trim)
        .find_map(|line| line.strip_prefix("BLOODRAVEN_PITR_RESULT v=1 executed="));
    if let Some(executed) = executed {
        let digest = Sha256::digest(executed.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        if hex != sha {
            return Err(VerdictError::Digest);
        }
    }
    let on_history = number("onHistoryExcluded")?;
    Ok(PointInTimeResult {
        outcome: Some(outcome),
        mode: Some(if expected.latest() {
            PointInTimeMode::Latest
        } else {
            PointInTimeMode::Timestamp
        }),
        stop_time: Some(expected.stop_time.clone()).filter(|stop| !stop.is_empty()),
        archive_id: Some(text("archive")?),
        encryption_mode: Some(EncryptionMode::parse(&expected.encryption_mode)),
        source_uid: Some(source_uid).filter(|uid| !uid.is_empty()),
        source_namespace: Some(expected.source_namespace.clone()),
        source_name: Some(expected.source_name.clone()),
        segments: Some(number("segments")?),
        files: Some(number("files")?),
        transactions: Some(number("transactions")?),
        last_file: Some(text("lastFile")?).filter(|file| !file.is_empty()),
        newest_replayed_commit_time: Some(text("newest")?).filter(|time| !time.is_empty()),
        excluded_divergent_transaction_count: Some(number("divergent")?),
        on_history_exclusions: None,
        on_history_exclusion_count: Some(on_history),
        gtid_executed: executed.map(|set| {
            if set.len() > GTID_EXECUTED_LIMIT { String::new() } else { set.to_owned() }
        }),
        gtid_executed_sha256: Some(sha),
        sites: text("sites")?
            .split(',')
            .filter(|site| !site.is_empty())
            .map(str::to_owned)
            .collect(),
        extra: Default::default(),
    })
}

/// The message of the earliest failing container of a PITR Job's pod: the init containers in
/// order, then the main one (`None`: no container failed with a message).
pub fn earliest_failure(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref())
        .find(|terminated| terminated.exit_code != 0)
        .and_then(|terminated| terminated.message.clone())
        .filter(|message| !message.is_empty())
}

/// The termination message of a PITR Job's main container `container` (the verdict), when it
/// terminated with exit code 0.
pub fn main_message(pod: &Pod, container: &str) -> Option<String> {
    let status = pod.status.as_ref()?;
    status
        .container_statuses
        .iter()
        .flatten()
        .find(|c| c.name == container)?
        .state
        .as_ref()?
        .terminated
        .as_ref()
        .filter(|terminated| terminated.exit_code == 0)?
        .message
        .clone()
}
