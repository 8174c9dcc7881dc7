//! The `BLOODRAVEN_PITR_*` lines of the restore container and the verdict (000 lines 949–975).
//! Pure: values in, lines out.

use bloodraven_gtid::GtidSet;
use bloodraven_pitr::{Outcome, Plan, Segment};
use sha2::{Digest, Sha256};

/// Who the verdict names: the archive and its source group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictSource {
    /// The archive ID.
    pub archive: String,
    /// `None` or `Passphrase`.
    pub encryption_mode: String,
    /// The source group's UID, namespace and name.
    pub source_uid: String,
    pub source_namespace: String,
    pub source_name: String,
}

/// Percent-encodes a verdict value: everything but ASCII letters, digits and `-._~`.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `BLOODRAVEN_PITR_SEGMENT` for segment `k` (from 1).
pub fn segment_line(k: usize, segment: &Segment) -> String {
    format!(
        "BLOODRAVEN_PITR_SEGMENT k={k} site={} file={} transactions={} gtids={}",
        segment.site,
        segment.file,
        segment.transactions,
        segment.gtids.to_compact_string()
    )
}

/// `BLOODRAVEN_PITR_TARGET_LOCAL`: the target's own transactions kept through the restore.
pub fn target_local_line(local: &GtidSet) -> String {
    format!("BLOODRAVEN_PITR_TARGET_LOCAL gtids={}", local.to_compact_string())
}

/// `BLOODRAVEN_PITR_DIVERGENT` count and set lines (the excluded divergent transactions).
pub fn divergent_lines(plan: &Plan) -> [String; 2] {
    [
        format!("BLOODRAVEN_PITR_DIVERGENT count={}", plan.excluded_divergent.count()),
        format!(
            "BLOODRAVEN_PITR_DIVERGENT_SET gtids={}",
            plan.excluded_divergent.to_compact_string()
        ),
    ]
}

/// `BLOODRAVEN_PITR_RESULT v=1 executed=<gtid_executed>`.
pub fn result_line(executed: &GtidSet) -> String {
    format!("BLOODRAVEN_PITR_RESULT v=1 executed={}", executed.to_compact_string())
}

/// The verdict (`BLOODRAVEN_PITR_VERDICT v=2 …`) of a replay that proved `executed`; `stop`
/// is the target of a timestamp restore.
pub fn verdict_line(
    plan: &Plan,
    stop: Option<jiff::Timestamp>,
    source: &VerdictSource,
    executed: &GtidSet,
) -> String {
    let mode = if matches!(plan.outcome, Outcome::Latest) { "latest" } else { "timestamp" };
    let outcome = match plan.outcome {
        Outcome::TargetCovered => "TargetCovered",
        Outcome::Partial => "Partial",
        Outcome::Latest => "Latest",
    };
    let mut files: Vec<(&str, &str)> =
        plan.segments.iter().map(|s| (s.site.as_str(), s.file.as_str())).collect();
    files.dedup();
    let mut distinct = files.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let mut sites: Vec<&str> = plan.segments.iter().map(|s| s.site.as_str()).collect();
    sites.sort_unstable();
    sites.dedup();
    let transactions: usize = plan.segments.iter().map(|s| s.transactions).sum();
    let last_file = files.last().map(|(site, file)| format!("{site}/{file}")).unwrap_or_default();
    let newest = plan.newest_replayed.map(bloodraven_archive::format_timestamp).unwrap_or_default();
    let digest = Sha256::digest(executed.to_compact_string().as_bytes());
    let sha: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let mut line = format!("BLOODRAVEN_PITR_VERDICT v=2 mode={mode}");
    if let Some(stop) = stop {
        line.push_str(&format!(" stop={}", encode(&bloodraven_archive::format_timestamp(stop))));
    }
    line.push_str(&format!(
        " outcome={outcome} archive={} encryptionMode={} sourceUID={} sourceNamespace={} sourceName={} segments={} files={} transactions={transactions} lastFile={} newest={} divergent={} onHistoryExcluded={} executedSha256={sha} sites={}",
        encode(&source.archive),
        encode(&source.encryption_mode),
        encode(&source.source_uid),
        encode(&source.source_namespace),
        encode(&source.source_name),
        plan.segments.len(),
        distinct.len(),
        encode(&last_file),
        encode(&newest),
        plan.excluded_divergent.count(),
        plan.on_history_excluded.count(),
        encode(&sites.join(",")),
    ));
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_percent_encoded_as_the_document_prints_them() {
        assert_eq!(encode("2026-04-15T09:30:00.000000Z"), "2026-04-15T09%3A30%3A00.000000Z");
        assert_eq!(encode("iad/mysql-bin.000042"), "iad%2Fmysql-bin.000042");
        assert_eq!(encode("iad,pdx"), "iad%2Cpdx");
    }
}
