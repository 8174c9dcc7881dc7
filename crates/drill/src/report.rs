//! The timeline report: one record per step, printed for humans (relative times) or as JSON.

use std::fmt::Write as _;

use serde::Serialize;

/// What happened to one step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRecord {
    /// 0-based index in the drill file.
    pub index: usize,
    /// The step's key (`kill`, `wait`, …).
    pub kind: String,
    /// When it began, in milliseconds since the drill began.
    pub at_ms: u64,
    /// How long it took.
    pub took_ms: u64,
    /// Whether it succeeded.
    pub ok: bool,
    /// What it did or saw; on failure, why.
    pub detail: String,
}

/// A drill run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The drill's name.
    pub drill: String,
    /// The drill file.
    pub file: String,
    /// Whether every step succeeded.
    pub passed: bool,
    /// The whole run, in milliseconds.
    pub total_ms: u64,
    /// The steps run, in order (a failed step is the last).
    pub steps: Vec<StepRecord>,
    /// Why the drill failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn secs(ms: u64) -> String {
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}

impl Report {
    /// The report for humans: one line per step with its time since the start.
    pub fn human(&self) -> String {
        let mut out = String::new();
        let verdict = if self.passed { "PASSED" } else { "FAILED" };
        let _ = writeln!(
            out,
            "drill {} ({}): {verdict} in {}",
            self.drill,
            self.file,
            secs(self.total_ms)
        );
        for s in &self.steps {
            let mark = if s.ok { "ok  " } else { "FAIL" };
            let _ = writeln!(
                out,
                "  +{:>9}  {mark} steps[{}] {:<13} ({:>8})  {}",
                secs(s.at_ms),
                s.index,
                s.kind,
                secs(s.took_ms),
                s.detail
            );
        }
        if let Some(e) = &self.error {
            let _ = writeln!(out, "  error: {e}");
        }
        out
    }

    /// The report as pretty JSON.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}
