//! dump-meta: the backup's metadata the planner reads ([`BackupMeta`]), from the artifact the
//! backup step wrote (`bloodraven-backup`'s `@.json`, `@.done.json` and stamp) and the
//! MysqlBackup's status. Pure: the caller reads the objects; a missing or unreadable one is
//! `None`, and the planner's step 2 refuses it with the document's token.

use bloodraven_backup::meta::{DoneJson, DumpJson, Stamp};
use bloodraven_gtid::GtidSet;
use bloodraven_pitr::BackupMeta;

/// What the MysqlBackup says about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackupStatus {
    /// Its `metadata.uid` (what the stamp must name).
    pub uid: String,
    /// `status` source group UID (empty: none recorded).
    pub source_uid: String,
    /// `status.gtidExecuted` (`None`: none recorded).
    pub gtid_executed: Option<String>,
}

/// The planner's [`BackupMeta`] of an artifact.
pub fn backup_meta(
    status: &BackupStatus,
    dump: Option<&DumpJson>,
    done: Option<&DoneJson>,
    stamp: Option<&Stamp>,
) -> BackupMeta {
    let gtid_executed =
        dump.and_then(|dump| dump.gtid_executed.as_deref()).and_then(|text| text.parse().ok());
    let gtid_matches_status = match (&status.gtid_executed, &gtid_executed) {
        (None, _) => true,
        (Some(recorded), Some(dumped)) => {
            recorded.parse::<GtidSet>().is_ok_and(|recorded| recorded == *dumped)
        }
        (Some(_), None) => false,
    };
    let filters = stamp.map(|stamp| &stamp.dump_filters);
    BackupMeta {
        backup_uid: status.uid.clone(),
        source_uid: status.source_uid.clone(),
        stamp: stamp.map(|stamp| bloodraven_pitr::Stamp {
            backup_uid: stamp.backup.uid.clone(),
            source_uid: stamp.source.uid.clone(),
            pitr_archive_id: stamp.pitr_archive_id.clone(),
            server_clock_end: stamp.server_clock.end,
        }),
        dump_json: dump.is_some(),
        gtid_executed,
        gtid_matches_status,
        inconsistent: dump.is_some_and(|dump| dump.gtid_executed_inconsistent),
        filtered: dump.is_some_and(DumpJson::filtered)
            || filters
                .is_some_and(|f| !f.include_schemas.is_empty() || !f.exclude_schemas.is_empty()),
        dump_end: done.map(|done| done.end),
    }
}

#[cfg(test)]
mod tests {
    use bloodraven_pitr::{History, Input, Limits, Request, Token, plan};

    use super::*;

    const SET: &str = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-50";

    fn dump(extra: &str) -> DumpJson {
        let text = format!(
            r#"{{"dumper":"mysqldump","version":1,"begin":"2026-11-05T09:00:00Z","gtidExecuted":"{SET}","compression":"zstd"{extra}}}"#
        );
        DumpJson::from_bytes(text.as_bytes()).unwrap()
    }

    fn done() -> DoneJson {
        DoneJson::from_bytes(br#"{"end":"2026-11-05T09:10:00Z","dataBytes":1,"chunks":[]}"#)
            .unwrap()
    }

    fn stamp(end: bool) -> Stamp {
        let end = if end { r#","end":"2026-11-05T09:10:00.5Z""# } else { "" };
        let text = format!(
            r#"{{"kind":"BloodravenBackupStamp","version":1,"backup":{{"namespace":"prod","name":"b","uid":"bu"}},"source":{{"namespace":"prod","name":"orders","uid":"su"}},"pitrArchiveID":"ar1-x","site":"iad","serverID":1,"serverClock":{{"start":"2026-11-05T09:00:00Z"{end}}},"createdAt":"2026-11-05T09:00:00Z"}}"#
        );
        Stamp::from_bytes(text.as_bytes()).unwrap()
    }

    fn status() -> BackupStatus {
        BackupStatus { uid: "bu".into(), source_uid: "su".into(), gtid_executed: Some(SET.into()) }
    }

    /// The planner's step-2 answer for `meta` (an empty archive: later steps refuse otherwise).
    fn step_two(meta: &BackupMeta) -> Option<Token> {
        let history = History::default();
        let request = Request { target: Some("2026-11-05T10:00:00Z".into()), ..Request::default() };
        let result = plan(Input {
            history: &history,
            open_refusal: None,
            backup: meta,
            request: &request,
            limits: Limits::default(),
        });
        result
            .err()
            .map(|refusal| refusal.token)
            .filter(|token| token.as_str().starts_with("PITRBackup"))
    }

    #[test]
    fn a_finished_artifact_maps_to_the_backup_the_planner_accepts() {
        let meta = backup_meta(&status(), Some(&dump("")), Some(&done()), Some(&stamp(true)));
        assert_eq!(meta.gtid_executed, Some(SET.parse().unwrap()));
        assert_eq!(meta.dump_end, Some("2026-11-05T09:10:00Z".parse().unwrap()));
        assert!(meta.gtid_matches_status && !meta.filtered && !meta.inconsistent);
        assert_eq!(step_two(&meta), None);
    }

    #[test]
    fn each_missing_piece_refuses_with_the_documents_token() {
        let cases: [(&str, BackupMeta, Token); 5] = [
            (
                "no stamp",
                backup_meta(&status(), Some(&dump("")), Some(&done()), None),
                Token::BackupIdentityUnknown,
            ),
            (
                "no @.json",
                backup_meta(&status(), None, Some(&done()), Some(&stamp(true))),
                Token::BackupIncomplete,
            ),
            (
                "no @.done.json",
                backup_meta(&status(), Some(&dump("")), None, Some(&stamp(true))),
                Token::BackupIncomplete,
            ),
            (
                "no serverClock.end",
                backup_meta(&status(), Some(&dump("")), Some(&done()), Some(&stamp(false))),
                Token::BackupIncomplete,
            ),
            (
                "schema filters",
                backup_meta(
                    &status(),
                    Some(&dump(r#","includeSchemas":["app"]"#)),
                    Some(&done()),
                    Some(&stamp(true)),
                ),
                Token::BackupFiltered,
            ),
        ];
        for (case, meta, token) in cases {
            assert_eq!(step_two(&meta), Some(token), "{case}");
        }
    }
}
