//! `coverage.json` version 2: what pitr-download writes beside the staged files, also on
//! refusal.

use jiff::Timestamp;
use serde::Serialize;

use crate::plan::{Outcome, Plan, Segment, Witness};
use crate::refusal::Refusal;
use crate::request::Request;

/// The document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CoverageJson {
    /// Always 2.
    pub version: u32,
    /// The archive read.
    pub archive: String,
    /// `timestamp` or `latest`.
    pub mode: &'static str,
    /// The requested target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
    /// The outcome, when planned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// The refusal token, when refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The refusal message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The witness.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<Witness>,
    /// The backup's newest archived commit (possibly a lower bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_newest_commit_time: Option<Timestamp>,
    /// The segments.
    pub segments: Vec<Segment>,
    /// The certified executed set (empty on refusal).
    pub certified: String,
    /// The complete divergent (or lost) set of a divergence refusal.
    pub divergent: String,
    /// Excluded transactions on the target history that precede a replayed one.
    pub on_history_excluded: String,
}

/// Builds coverage.json for a plan or a refusal.
pub fn coverage_json(
    archive: &str,
    request: &Request,
    result: &Result<Plan, Refusal>,
) -> CoverageJson {
    let mut doc = CoverageJson {
        version: 2,
        archive: archive.to_owned(),
        mode: if request.target.is_some() { "timestamp" } else { "latest" },
        stop: request.target.clone(),
        outcome: None,
        refusal: None,
        message: None,
        witness: None,
        backup_newest_commit_time: None,
        segments: Vec::new(),
        certified: String::new(),
        divergent: String::new(),
        on_history_excluded: String::new(),
    };
    match result {
        Ok(plan) => {
            doc.outcome = Some(plan.outcome);
            doc.witness = plan.witness.clone();
            doc.backup_newest_commit_time = plan.backup_newest_commit_time;
            doc.segments = plan.segments.clone();
            doc.certified = plan.certified.to_compact_string();
            doc.divergent = plan.excluded_divergent.to_compact_string();
            doc.on_history_excluded = plan.on_history_excluded.to_compact_string();
        }
        Err(refusal) => {
            doc.refusal = Some(refusal.token.as_str().to_owned());
            doc.message = Some(refusal.message.clone());
            doc.divergent = refusal.full_set.clone().unwrap_or_default();
        }
    }
    doc
}
