//! History-integrity checks (pure): the settings an archive needs to certify history.
//!
//! Spec ("History integrity"): no replication filters, no binlog filters, `binlog_format=ROW`,
//! `binlog_row_image=FULL`, `replica_preserve_commit_order=ON`. The first violation found is
//! persisted as the manifest's `historyIntegrity` marker, which is permanent for the prefix.

use bloodraven_archive::manifest::Violation;

/// The settings one scan read from the server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IntegritySettings {
    /// Rows of `performance_schema.replication_applier_filters` and
    /// `replication_applier_global_filters` (`FILTER_NAME: FILTER_RULE`).
    pub replication_filters: Vec<String>,
    /// `Binlog_Do_DB` of `SHOW BINARY LOG STATUS`.
    pub binlog_do_db: String,
    /// `Binlog_Ignore_DB` of `SHOW BINARY LOG STATUS`.
    pub binlog_ignore_db: String,
    /// `@@binlog_format`.
    pub binlog_format: String,
    /// `@@binlog_row_image`.
    pub binlog_row_image: String,
    /// `@@replica_preserve_commit_order` (`1`/`ON`).
    pub replica_preserve_commit_order: String,
}

/// The first violation, with its detail, in the spec's order.
pub fn check(settings: &IntegritySettings) -> Option<(Violation, String)> {
    if let Some(first) = settings.replication_filters.first() {
        return Some((Violation::ReplicationFilter, format!("replication filter {first} is set")));
    }
    if !settings.binlog_do_db.is_empty() || !settings.binlog_ignore_db.is_empty() {
        return Some((
            Violation::BinlogFilter,
            format!(
                "binlog filters are set (Binlog_Do_DB={:?}, Binlog_Ignore_DB={:?})",
                settings.binlog_do_db, settings.binlog_ignore_db
            ),
        ));
    }
    if !settings.binlog_format.eq_ignore_ascii_case("ROW") {
        return Some((
            Violation::BinlogFormat,
            format!("binlog_format={} (ROW is required)", settings.binlog_format),
        ));
    }
    if !settings.binlog_row_image.eq_ignore_ascii_case("FULL") {
        return Some((
            Violation::BinlogRowImage,
            format!("binlog_row_image={} (FULL is required)", settings.binlog_row_image),
        ));
    }
    let order = settings.replica_preserve_commit_order.as_str();
    if !(order == "1" || order.eq_ignore_ascii_case("ON")) {
        return Some((
            Violation::CommitOrder,
            format!("replica_preserve_commit_order={order} (ON is required)"),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn safe() -> IntegritySettings {
        IntegritySettings {
            binlog_format: "ROW".into(),
            binlog_row_image: "FULL".into(),
            replica_preserve_commit_order: "1".into(),
            ..Default::default()
        }
    }

    /// An edit of the safe settings.
    type Edit = fn(&mut IntegritySettings);

    #[test]
    fn each_setting_is_its_violation() {
        assert_eq!(check(&safe()), None);
        let cases: [(Edit, Violation); 5] = [
            (
                |s| s.replication_filters.push("REPLICATE_DO_DB: (app)".into()),
                Violation::ReplicationFilter,
            ),
            (|s| s.binlog_ignore_db = "tmp".into(), Violation::BinlogFilter),
            (|s| s.binlog_format = "MIXED".into(), Violation::BinlogFormat),
            (|s| s.binlog_row_image = "MINIMAL".into(), Violation::BinlogRowImage),
            (|s| s.replica_preserve_commit_order = "0".into(), Violation::CommitOrder),
        ];
        for (edit, violation) in cases {
            let mut settings = safe();
            edit(&mut settings);
            assert_eq!(check(&settings).map(|(v, _)| v), Some(violation));
        }
    }
}
