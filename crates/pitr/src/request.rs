//! The request and the backup's metadata (what dump-meta read).

use bloodraven_gtid::GtidSet;
use jiff::Timestamp;

use crate::refusal::{Refusal, Token};

/// Largest canonical excludeGtids (000 line 922).
pub const MAX_EXCLUDE_BYTES: usize = 64 * 1024;

/// What the restore asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// `pointInTime.stopTime` as written (RFC 3339, whole second); `None`: latest mode.
    pub target: Option<String>,
    /// `excludeGtids` as written.
    pub exclude_gtids: String,
    /// `allowPartial`.
    pub allow_partial: bool,
}

/// The mode a valid request plans in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A timestamp restore to T.
    Target(Timestamp),
    /// Latest (verification mode Latest).
    Latest,
}

/// The backup stamp (`<dump>.bloodraven-backup.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The MysqlBackup's UID the stamp names.
    pub backup_uid: String,
    /// The source failover group's UID.
    pub source_uid: String,
    /// `pitrArchiveID`.
    pub pitr_archive_id: String,
    /// `serverClock.end` (the dumped server's clock when the dump finished).
    pub server_clock_end: Option<Timestamp>,
}

/// The backup's metadata, as dump-meta read it (`/pitr-dump-meta/dump.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupMeta {
    /// The MysqlBackup's UID (what the stamp must name).
    pub backup_uid: String,
    /// The source group UID recorded in the MysqlBackup's status (empty: none).
    pub source_uid: String,
    /// The stamp (`None`: no readable stamp).
    pub stamp: Option<Stamp>,
    /// `@.json` was read.
    pub dump_json: bool,
    /// `gtidExecuted` of `@.json` (`None`: absent).
    pub gtid_executed: Option<GtidSet>,
    /// The backup's recorded gtidExecuted is the one in `@.json`.
    pub gtid_matches_status: bool,
    /// `gtidExecutedInconsistent` in `@.json`.
    pub inconsistent: bool,
    /// The dump used schema filters.
    pub filtered: bool,
    /// `@.done.json`'s end (whole second; `None`: no `@.done.json`).
    pub dump_end: Option<Timestamp>,
}

impl BackupMeta {
    /// A complete, consistent backup of `gtid_executed` ending at `dump_end` (tests, tools).
    pub fn complete(
        gtid_executed: GtidSet,
        dump_end: Timestamp,
        source_uid: &str,
        archive_id: &str,
    ) -> BackupMeta {
        BackupMeta {
            backup_uid: "backup".into(),
            source_uid: source_uid.into(),
            stamp: Some(Stamp {
                backup_uid: "backup".into(),
                source_uid: source_uid.into(),
                pitr_archive_id: archive_id.into(),
                server_clock_end: Some(dump_end),
            }),
            dump_json: true,
            gtid_executed: Some(gtid_executed),
            gtid_matches_status: true,
            inconsistent: false,
            filtered: false,
            dump_end: Some(dump_end),
        }
    }
}

/// Step 1 alone, for a caller that refuses before any Job (a verification's PITRTargetInvalid):
/// the request's mode, or its refusal.
pub fn check_request(request: &Request) -> Result<Mode, Refusal> {
    parse(request).map(|(mode, _)| mode)
}

/// Step 1: parses the request.
pub(crate) fn parse(request: &Request) -> Result<(Mode, GtidSet), Refusal> {
    let mode = match &request.target {
        None => Mode::Latest,
        Some(text) => Mode::Target(parse_target(text)?),
    };
    let mut exclude = GtidSet::new();
    for (n, entry) in request.exclude_gtids.split(',').enumerate() {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        let starts_with_uuid = entry.len() >= 36 && entry.is_char_boundary(36) && {
            let head = &entry[..36];
            head.parse::<bloodraven_gtid::Uuid>().is_ok()
        };
        if !starts_with_uuid {
            return Err(Refusal::new(
                Token::TargetInvalid,
                format!(
                    "excludeGtids entry {} ({entry:?}) does not start with a server UUID; write <uuid>:<n>[-<m>]",
                    n + 1
                ),
            ));
        }
        let set: GtidSet = entry.parse().map_err(|error| {
            Refusal::new(
                Token::TargetInvalid,
                format!("excludeGtids entry {} ({entry:?}) is not a GTID set: {error}", n + 1),
            )
        })?;
        exclude.union_with(&set);
    }
    let canonical = exclude.to_compact_string().len();
    if canonical > MAX_EXCLUDE_BYTES {
        return Err(Refusal::new(
            Token::TargetInvalid,
            format!(
                "excludeGtids is {canonical} bytes in canonical form, over the 65536-byte limit; exclude fewer transactions or choose another backup"
            ),
        ));
    }
    Ok((mode, exclude))
}

fn parse_target(text: &str) -> Result<Timestamp, Refusal> {
    let invalid = |why: &str| {
        Refusal::new(
            Token::TargetInvalid,
            format!(
                "stopTime {text:?} is invalid: {why}; write a whole second in RFC 3339 with Z or ±HH:MM, e.g. 2026-04-15T09:30:00Z"
            ),
        )
    };
    if text.contains(' ') || text.contains('t') || text.ends_with('z') {
        return Err(invalid("it needs an upper-case T and Z"));
    }
    let at: Timestamp = text.parse().map_err(|_| invalid("it is not RFC 3339 with a zone"))?;
    if at.subsec_nanosecond() != 0 || text.contains('.') {
        return Err(invalid("it has a fractional second"));
    }
    Ok(at)
}
