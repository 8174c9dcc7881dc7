//! pitr-download's index pass over one downloaded row (000 line 817): authenticate the bytes by
//! the row's content ID and size, then parse them into the transactions the planner reads.
//!
//! Pure: the caller downloads; this takes the bytes and returns [`RowBytes`].

use bloodraven_archive::ContentIdKey;
use bloodraven_archive::manifest::FileRow;
use bloodraven_binlog::{Terminator, TransactionId};
use jiff::Timestamp;

use crate::model::{RowBytes, Txn};

/// Authenticates `bytes` as the object of `row` and indexes its transactions.
///
/// A digest or size mismatch, a parse problem, a file ending inside a transaction and a
/// transaction without its terminator are [`RowBytes::Unreadable`] with the reason (the planner
/// refuses `PITRArchiveObjectInvalid` when the plan needs the row). A legacy row without a
/// content ID is indexed unauthenticated.
pub fn index_row(row: &FileRow, key: &ContentIdKey, bytes: &[u8]) -> RowBytes {
    if let Some(id) = &row.id {
        let got = key.content_id(bytes);
        if got != *id {
            return RowBytes::Unreadable(format!(
                "{}: the bytes do not match the row's content ID (digest {got}, row {id})",
                row.key
            ));
        }
    }
    if row.size != bytes.len() as u64 {
        return RowBytes::Unreadable(format!(
            "{}: the manifest row says {} bytes, the authenticated object has {}",
            row.key,
            row.size,
            bytes.len()
        ));
    }
    index_bytes(&row.key, bytes)
}

/// Parses binlog `bytes` (named `what` in messages) into transactions, without authentication.
pub fn index_bytes(what: &str, bytes: &[u8]) -> RowBytes {
    let summary = bloodraven_binlog::scan(bytes);
    if let Some(problem) = &summary.problem {
        return RowBytes::Unreadable(format!("{what}: {problem}"));
    }
    let mut txns = Vec::with_capacity(summary.transactions.len());
    for txn in &summary.transactions {
        if txn.terminator.is_none() {
            return RowBytes::Unreadable(format!(
                "{what}: the transaction at byte {} has no terminator (the file ends inside it)",
                txn.start
            ));
        }
        let gtid = match txn.id {
            TransactionId::Gtid(gtid) => Some(gtid),
            _ => None,
        };
        let commit = txn
            .original_commit_us
            .and_then(|us| i64::try_from(us).ok())
            .and_then(|us| Timestamp::from_microsecond(us).ok())
            .or_else(|| Timestamp::from_second(i64::from(txn.timestamp)).ok());
        txns.push(Txn {
            gtid,
            commit,
            server_id: txn.server_id,
            xa: txn.xa || matches!(txn.terminator, Some(Terminator::XaPrepare)),
            // A GTID with no change: GTID, BEGIN, COMMIT.
            empty: txn.row_events == 0
                && txn.event_count <= 3
                && matches!(txn.terminator, Some(Terminator::Commit)),
            // The transaction's bytes bound its largest event.
            max_event: txn.end.saturating_sub(txn.start),
        });
    }
    RowBytes::Read(txns)
}
