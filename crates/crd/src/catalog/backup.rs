//! `MysqlBackup` tokens outside artifact cleanup: the `MetadataComplete` reasons and the
//! refusal of a read-only profile's backups.

use super::{
    Entry,
    Waiting::{Never, Sometimes},
    entry,
};

/// Where a `MetadataComplete=False` backup stands when the destination is known.
const LOCATION_USABLE: &str = "The backup keeps its phase; status.artifactStorage.location remains usable, and restore, verification and cleanup use it.";

pub(super) static METADATA_REASONS: &[Entry] = &[
    entry(
        "SentinelUnavailable",
        Sometimes,
        "The completion sentinel was not collected from the backup Job's logs, so the optional observations (size, GTID, binlog position) may be absent.",
        LOCATION_USABLE,
        "Nothing for the backup's use. While the logs are temporarily unavailable the operator retries the collection every 15 seconds for up to ten minutes after completion, also across restarts.",
    ),
    entry(
        "SentinelMissing",
        Never,
        "The backup Job's logs were read but carry no usable completion sentinel, so the optional observations (size, GTID, binlog position) may be absent.",
        LOCATION_USABLE,
        "Nothing for the backup's use; logs that carry no usable sentinel end the collection.",
    ),
    entry(
        "LocationMismatch",
        Never,
        "The completion sentinel named another location than the recorded destination.",
        "The recorded destination is kept and the sentinel's is ignored; restore, verification and cleanup use status.artifactStorage.location.",
        "Do not edit status.artifactStorage.location by hand; it is the artifact's identity.",
    ),
    entry(
        "DestinationUnavailable",
        Sometimes,
        "Neither the status nor the producing Job supplied a destination for the backup's artifact (a Job whose destination depends on a Secret or field reference yields none).",
        "On first completion the backup is Ready=False and the operator retries with an error. An already-Succeeded backup records the condition once and retention and deletion proceed: deleting it runs no cleanup, releases the finalizer and emits ArtifactCleanupSkipped naming the producing Job.",
        "Inspect storage by hand for the unlocated artifact, which may remain; deletion does not guess a cleanup path.",
    ),
];

pub(super) static PROFILE_REFUSALS: &[Entry] = &[entry(
    "ProfileReadOnly",
    Sometimes,
    "The backup profile is a read-only archive profile and cannot run backups: a restore reading its archive has not succeeded, its read binding keeps another group's UID (a restore from the source group's archive), or after a successful restore its destination has no binding at all.",
    "The profile's backups do not run; its archive is only read.",
    "While the restore runs, its success lifts the refusal unless the archive belongs to another group. Otherwise give the group a profile on its own prefix for its own backups and archive; a binding that keeps another group's UID holds until you release it.",
)];
