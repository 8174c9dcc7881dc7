//! The files the restore Job's steps hand on: dump-meta's `/pitr-dump-meta/dump.json` (the
//! backup's metadata the planner reads) and pitr-download's plan beside the staged binlogs
//! (what the replay step replays and proves). Pure: values to and from JSON.

use bloodraven_gtid::GtidSet;
use bloodraven_pitr::{BackupMeta, Plan, Stamp};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// `dump.json`: [`BackupMeta`] as dump-meta read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpMetaFile {
    pub version: u32,
    pub backup_uid: String,
    pub source_uid: String,
    pub stamp: Option<StampFile>,
    pub dump_json: bool,
    pub gtid_executed: Option<GtidSet>,
    pub gtid_matches_status: bool,
    pub inconsistent: bool,
    pub filtered: bool,
    pub dump_end: Option<Timestamp>,
}

/// The stamp's fields the planner checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StampFile {
    pub backup_uid: String,
    pub source_uid: String,
    #[serde(rename = "pitrArchiveID")]
    pub pitr_archive_id: String,
    pub server_clock_end: Option<Timestamp>,
}

impl From<&BackupMeta> for DumpMetaFile {
    fn from(meta: &BackupMeta) -> Self {
        DumpMetaFile {
            version: 1,
            backup_uid: meta.backup_uid.clone(),
            source_uid: meta.source_uid.clone(),
            stamp: meta.stamp.as_ref().map(|stamp| StampFile {
                backup_uid: stamp.backup_uid.clone(),
                source_uid: stamp.source_uid.clone(),
                pitr_archive_id: stamp.pitr_archive_id.clone(),
                server_clock_end: stamp.server_clock_end,
            }),
            dump_json: meta.dump_json,
            gtid_executed: meta.gtid_executed.clone(),
            gtid_matches_status: meta.gtid_matches_status,
            inconsistent: meta.inconsistent,
            filtered: meta.filtered,
            dump_end: meta.dump_end,
        }
    }
}

impl From<DumpMetaFile> for BackupMeta {
    fn from(file: DumpMetaFile) -> Self {
        BackupMeta {
            backup_uid: file.backup_uid,
            source_uid: file.source_uid,
            stamp: file.stamp.map(|stamp| Stamp {
                backup_uid: stamp.backup_uid,
                source_uid: stamp.source_uid,
                pitr_archive_id: stamp.pitr_archive_id,
                server_clock_end: stamp.server_clock_end,
            }),
            dump_json: file.dump_json,
            gtid_executed: file.gtid_executed,
            gtid_matches_status: file.gtid_matches_status,
            inconsistent: file.inconsistent,
            filtered: file.filtered,
            dump_end: file.dump_end,
        }
    }
}

/// `plan.json`: the plan pitr-download made, with what the verdict names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanFile {
    pub version: u32,
    /// The archive planned over (`pitrArchiveID`).
    #[serde(rename = "archiveID")]
    pub archive_id: String,
    /// The target of a timestamp restore (`None`: latest).
    pub stop: Option<Timestamp>,
    /// The source group's UID (from the stamp).
    #[serde(rename = "sourceUID")]
    pub source_uid: String,
    /// The plan.
    pub plan: Plan,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dump_meta_round_trips() {
        let meta = BackupMeta::complete(
            "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5".parse().unwrap(),
            "2026-11-05T09:30:00Z".parse().unwrap(),
            "group-uid",
            "ar1-x",
        );
        let text = serde_json::to_string(&DumpMetaFile::from(&meta)).unwrap();
        assert!(text.contains("\"pitrArchiveID\":\"ar1-x\""), "{text}");
        let back: DumpMetaFile = serde_json::from_str(&text).unwrap();
        assert_eq!(BackupMeta::from(back), meta);
    }
}
