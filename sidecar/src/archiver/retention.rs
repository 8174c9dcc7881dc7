//! Binlog retention (pure part) and the operator seam (`/pitr-cutoff`).
//!
//! Spec ("Binlog retention"): a row retires only when every retained successful backup covers
//! every transaction in it, by a complete `gtidCoverage` proof whose content id matches the
//! row's identity; the file's last event precedes the cutoff, future cutoffs are ignored, and
//! files less than 24 hours old are kept. Divergent and quarantined rows are loss evidence and
//! never retire here. Retirement is two manifest writes (`Manifest::retire`, then
//! `Manifest::acknowledge_deleted`), driven by the archiver.

use std::future::Future;

use bloodraven_archive::manifest::Manifest;
use bloodraven_archive::{ArchiveId, ContentId};
use bloodraven_gtid::GtidSet;
use jiff::{SignedDuration, Timestamp};

/// The coverage capability this sidecar understands.
pub const COVERAGE_GTID_V1: &str = "gtid-v1";
/// Files younger than this are kept whatever the proof says.
pub const MIN_AGE: SignedDuration = SignedDuration::from_hours(24);

/// The operator's retention proof (`/pitr-cutoff` reply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutoffProof {
    /// The archive ID the operator echoes.
    pub archive: String,
    /// `gtid-v1`.
    pub coverage: String,
    /// `gtidExecuted` of every successful, non-deleting group backup.
    pub retained_gtids: Vec<GtidSet>,
    /// The minimum known backup StartTime.
    pub cutoff_time: Option<Timestamp>,
}

/// The operator's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CutoffReply {
    /// A proof.
    Proof(CutoffProof),
    /// No cutoff: the operator's `retentionDeferredReason` (`noRetainedBackups`,
    /// `backupInFlight`, …).
    Deferred(String),
}

/// Why the cutoff could not be fetched (an error: logged at WARN, retried later).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pitr cutoff: {0}")]
pub struct CutoffError(pub String);

/// Where proofs come from: the operator's `/pitr-cutoff` (a later change adds the HTTP client;
/// tests pass values).
pub trait CutoffSource: Send + Sync {
    /// Asks for a fresh proof.
    fn fetch(&self) -> impl Future<Output = Result<CutoffReply, CutoffError>> + Send;
}

/// No operator configured: retention always defers.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCutoff;

impl CutoffSource for NoCutoff {
    async fn fetch(&self) -> Result<CutoffReply, CutoffError> {
        Ok(CutoffReply::Deferred("noCutoffSource".to_owned()))
    }
}

/// The operator's `/pitr-cutoff` over HTTP (`BLOODRAVEN_ADDRESS`): `GET
/// /pitr-cutoff?namespace=&group=&archive=<BLOODRAVEN_PITR_ARCHIVE_ID>&coverage=gtid-v1`.
/// Without an operator address retention always defers (`noCutoffSource`).
#[derive(Debug, Clone)]
pub struct OperatorCutoff {
    /// The operator's `host:port`; `None`: none configured.
    pub operator: Option<String>,
    /// The group's namespace.
    pub namespace: String,
    /// The group's name.
    pub group: String,
    /// This sidecar's archive ID.
    pub archive: String,
}

/// How long one `/pitr-cutoff` request may take.
const CUTOFF_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The reply's JSON (the operator's `CutoffBody`).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CutoffBody {
    #[serde(default)]
    archive: String,
    #[serde(default)]
    coverage: Option<String>,
    #[serde(rename = "retainedGTIDs", default)]
    retained_gtids: Vec<String>,
    #[serde(default)]
    cutoff_time: Option<Timestamp>,
    #[serde(default)]
    retention_deferred_reason: Option<String>,
}

/// Reads a `/pitr-cutoff` answer (status and body).
pub fn parse_cutoff_reply(status: u16, body: &str) -> Result<CutoffReply, CutoffError> {
    match status {
        200 => {}
        429 => {
            return Err(CutoffError(
                "the operator rate-limited this caller (429); retrying after the retention interval".to_owned(),
            ));
        }
        other => {
            return Err(CutoffError(format!("the operator answered {other}: {}", body.trim())));
        }
    }
    let body: CutoffBody = serde_json::from_str(body)
        .map_err(|e| CutoffError(format!("the operator's answer is not a cutoff reply: {e}")))?;
    if let Some(reason) = body.retention_deferred_reason {
        return Ok(CutoffReply::Deferred(reason));
    }
    let retained_gtids = body
        .retained_gtids
        .iter()
        .enumerate()
        .map(|(index, text)| {
            text.parse::<GtidSet>().map_err(|e| {
                CutoffError(format!(
                    "retainedGTIDs[{index}] is not a GTID set ({e}); retention defers"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CutoffReply::Proof(CutoffProof {
        archive: body.archive,
        coverage: body.coverage.unwrap_or_default(),
        retained_gtids,
        cutoff_time: body.cutoff_time,
    }))
}

impl CutoffSource for OperatorCutoff {
    async fn fetch(&self) -> Result<CutoffReply, CutoffError> {
        let Some(operator) = self.operator.as_deref().filter(|operator| !operator.is_empty())
        else {
            return Ok(CutoffReply::Deferred("noCutoffSource".to_owned()));
        };
        let path = format!(
            "/pitr-cutoff?namespace={}&group={}&archive={}&coverage={COVERAGE_GTID_V1}",
            self.namespace, self.group, self.archive
        );
        let reply = crate::http_get::get(operator, &path, CUTOFF_TIMEOUT)
            .await
            .map_err(|e| CutoffError(e.to_string()))?;
        parse_cutoff_reply(reply.status, &reply.body)
    }
}

/// Why no row may retire under this proof.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Deferral {
    /// The proof names another archive.
    #[error("the cutoff names archive {0:?}, not this one")]
    OtherArchive(String),
    /// The proof lacks the `gtid-v1` capability (a time-only reply from an older operator).
    #[error("the cutoff has coverage {0:?}, not gtid-v1")]
    Coverage(String),
    /// No retained backups.
    #[error("noRetainedBackups")]
    NoRetainedBackups,
    /// No cutoff time.
    #[error("the cutoff has no cutoffTime")]
    NoCutoffTime,
    /// The cutoff is in the future (ignored).
    #[error("the cutoff {0} is in the future")]
    FutureCutoff(Timestamp),
}

/// The rows (name, id) of `manifest` that may retire under `proof` at `now`.
pub fn eligible(
    manifest: &Manifest,
    proof: &CutoffProof,
    archive_id: &ArchiveId,
    now: Timestamp,
) -> Result<Vec<(String, Option<ContentId>)>, Deferral> {
    if proof.archive != archive_id.as_str() {
        return Err(Deferral::OtherArchive(proof.archive.clone()));
    }
    if proof.coverage != COVERAGE_GTID_V1 {
        return Err(Deferral::Coverage(proof.coverage.clone()));
    }
    if proof.retained_gtids.is_empty() {
        return Err(Deferral::NoRetainedBackups);
    }
    let cutoff = proof.cutoff_time.ok_or(Deferral::NoCutoffTime)?;
    if cutoff > now {
        return Err(Deferral::FutureCutoff(cutoff));
    }
    let young = now - MIN_AGE;
    Ok(manifest
        .files
        .iter()
        .filter(|row| !row.divergent && !row.quarantined)
        .filter(|row| {
            let Some(coverage) = row.gtid_coverage.as_ref().filter(|c| c.complete) else {
                return false;
            };
            let identified = row.id.is_some() && coverage.content_id == row.id;
            let Some(last) = row.last_event_time else { return false };
            identified
                && last < cutoff
                && last <= young
                && proof.retained_gtids.iter().all(|backup| coverage.gtids.is_subset(backup))
        })
        .map(|row| (row.name.clone(), row.id))
        .collect())
}

#[cfg(test)]
mod tests {
    use bloodraven_archive::manifest::{FileRow, GtidCoverage};
    use bloodraven_archive::{ContentIdKey, Destination};

    use super::*;

    const A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

    fn archive_id() -> ArchiveId {
        let destination = Destination::Pvc {
            namespace: "prod".into(),
            claim: "backups".into(),
            sub_path: String::new(),
        };
        ArchiveId::derive("uid-1", &destination.normalize().unwrap())
    }

    fn day(n: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + n * 86_400).unwrap()
    }

    fn row(name: &str, gtids: &str, last: Timestamp, complete: bool) -> FileRow {
        let id = ContentIdKey::Plain.content_id(name.as_bytes());
        FileRow {
            name: name.into(),
            id: Some(id),
            key: String::new(),
            size: 1,
            previous_gtids: GtidSet::new(),
            gtids: gtids.parse().unwrap(),
            first_event_time: Some(last),
            last_event_time: Some(last),
            archived_at: Some(last),
            gtid_coverage: Some(GtidCoverage {
                complete,
                gtids: gtids.parse().unwrap(),
                content_id: Some(id),
                extra: Default::default(),
            }),
            divergent: false,
            quarantined: false,
            base_gtids: None,
            extra: Default::default(),
        }
    }

    fn proof(backups: &[&str], cutoff: Timestamp) -> CutoffProof {
        CutoffProof {
            archive: archive_id().as_str().to_owned(),
            coverage: COVERAGE_GTID_V1.into(),
            retained_gtids: backups.iter().map(|s| s.parse().unwrap()).collect(),
            cutoff_time: Some(cutoff),
        }
    }

    #[test]
    fn only_rows_every_retained_backup_covers_old_enough_and_proven_retire() {
        let mut manifest = Manifest::new(archive_id(), "a");
        manifest.files.push(row("binlog.000001", &format!("{A}:1-10"), day(0), true));
        manifest.files.push(row("binlog.000002", &format!("{A}:11-20"), day(1), true));
        manifest.files.push(row("binlog.000003", &format!("{A}:21-30"), day(2), false));
        manifest.files.push(row("binlog.000004", "", day(2), true));
        let mut recent = row("binlog.000005", "", day(10), true);
        recent.last_event_time = Some(day(10) - SignedDuration::from_hours(1));
        manifest.files.push(recent);
        let mut wrong_id = row("binlog.000006", "", day(2), true);
        wrong_id.gtid_coverage.as_mut().unwrap().content_id = None;
        manifest.files.push(wrong_id);

        // One backup covers 1-20, the other only 1-10: only file 1 (and the empty file 4).
        let result = eligible(
            &manifest,
            &proof(&[&format!("{A}:1-20"), &format!("{A}:1-10")], day(9)),
            &archive_id(),
            day(10),
        )
        .unwrap();
        let names: Vec<_> = result.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["binlog.000001", "binlog.000004"]);

        let deferred =
            |p: CutoffProof| eligible(&manifest, &p, &archive_id(), day(10)).unwrap_err();
        assert_eq!(deferred(proof(&[], day(9))), Deferral::NoRetainedBackups);
        assert!(matches!(
            deferred(proof(&[&format!("{A}:1-20")], day(11))),
            Deferral::FutureCutoff(_)
        ));
        let mut time_only = proof(&[&format!("{A}:1-20")], day(9));
        time_only.coverage = String::new();
        assert!(matches!(deferred(time_only), Deferral::Coverage(_)));
        let mut other = proof(&[&format!("{A}:1-20")], day(9));
        other.archive = "ar1-aaaaaaaaaaaaaaaaaaaaaaaaaa".into();
        assert!(matches!(deferred(other), Deferral::OtherArchive(_)));
    }

    #[test]
    fn the_operators_reply_reads_as_a_proof_or_a_deferral() {
        let proof = parse_cutoff_reply(
            200,
            &format!(
                r#"{{"namespace":"prod","group":"lion","archive":"{}","coverage":"gtid-v1","retainedGTIDs":["{A}:1-20"],"cutoffTime":"2026-11-10T00:00:00Z"}}"#,
                archive_id()
            ),
        )
        .unwrap();
        let CutoffReply::Proof(proof) = proof else { panic!("expected a proof") };
        assert_eq!(proof.archive, archive_id().as_str());
        assert_eq!(proof.coverage, COVERAGE_GTID_V1);
        assert_eq!(proof.retained_gtids, vec![format!("{A}:1-20").parse::<GtidSet>().unwrap()]);
        assert_eq!(proof.cutoff_time, Some("2026-11-10T00:00:00Z".parse().unwrap()));
        assert_eq!(
            parse_cutoff_reply(
                200,
                r#"{"archive":"x","retentionDeferredReason":"noRetainedBackups"}"#
            )
            .unwrap(),
            CutoffReply::Deferred("noRetainedBackups".to_owned())
        );
        // A time-only reply from an older operator reads as a proof without coverage, which
        // `eligible` refuses.
        let CutoffReply::Proof(old) =
            parse_cutoff_reply(200, r#"{"cutoffTime":"2026-11-10T00:00:00Z"}"#).unwrap()
        else {
            panic!("expected a proof")
        };
        assert!(old.coverage.is_empty());
        assert!(parse_cutoff_reply(429, "").unwrap_err().0.contains("429"));
        assert!(
            parse_cutoff_reply(404, "not this archive").unwrap_err().0.contains("not this archive")
        );
        let bad = parse_cutoff_reply(200, r#"{"coverage":"gtid-v1","retainedGTIDs":["nope"]}"#);
        assert!(bad.unwrap_err().0.contains("retainedGTIDs[0]"));
    }
}
