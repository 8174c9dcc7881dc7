//! Steps 2 and 3: the dump's metadata and the archive open.

use crate::plan::Ctx;
use crate::refusal::{Refusal, Token};

impl Ctx<'_> {
    pub(crate) fn dump_meta(&mut self) -> Result<(), Refusal> {
        let meta = self.input.backup;
        let refuse = |token, message: &str| Err(Refusal::new(token, message));
        if meta.source_uid.is_empty() {
            return refuse(
                Token::BackupIdentityUnknown,
                "the backup records no source failover group UID, so it has no stamp; take a new full backup",
            );
        }
        let Some(stamp) = &meta.stamp else {
            return refuse(
                Token::BackupIdentityUnknown,
                "the dump has no readable backup stamp; take a new full backup after the archive has its descriptor",
            );
        };
        if stamp.backup_uid != meta.backup_uid || stamp.source_uid != meta.source_uid {
            return refuse(
                Token::BackupIdentityMismatch,
                "the dump's stamp names another backup or source group than the backupRef",
            );
        }
        if !meta.dump_json {
            return refuse(Token::BackupIncomplete, "the dump has no @.json");
        }
        let Some(gtids) = &meta.gtid_executed else {
            return refuse(Token::BackupInconsistent, "the dump's @.json records no gtidExecuted");
        };
        if !meta.gtid_matches_status {
            return refuse(
                Token::BackupIdentityMismatch,
                "the backup's recorded gtidExecuted is not the one in the dump's @.json",
            );
        }
        if meta.inconsistent {
            return refuse(
                Token::BackupInconsistent,
                "the dump's @.json reports gtidExecutedInconsistent",
            );
        }
        if meta.filtered {
            return refuse(
                Token::BackupFiltered,
                "the dump was taken with schema filters; replay covers every schema, take an unfiltered backup",
            );
        }
        if meta.dump_end.is_none() || stamp.server_clock_end.is_none() {
            return refuse(
                Token::BackupIncomplete,
                "the dump never finished (no @.done.json, or a stamp without serverClock.end)",
            );
        }
        self.backup = gtids.clone();
        Ok(())
    }

    pub(crate) fn archive_open(&mut self) -> Result<(), Refusal> {
        if let Some(refusal) = self.input.open_refusal {
            return Err(Refusal::new(Token::from_archive(refusal.token), refusal.message.clone()));
        }
        let named = self.input.backup.stamp.as_ref().map(|s| s.pitr_archive_id.as_str());
        if let Some(named) = named
            && named != self.history().archive_id
        {
            return Err(Refusal::new(
                Token::ArchiveIdentityMismatch,
                format!(
                    "the dump's stamp names archive {named:?}, but the archive profile reads {}; use the archive the backup was taken against",
                    self.history().archive_id
                ),
            ));
        }
        Ok(())
    }
}
