//! `bloodraven doctor` on the live lab at the end of operator drills (issue #19): the drill
//! tests hand [`doctor_at_end`] to the runner, which calls it after the last step and before
//! the teardown. It runs the console's `doctor` (the library function the CLI runs) against the
//! lab API server and checks its findings against the drill's end state: every expected
//! finding present (kind, site, the runbook to open), nothing else but the tolerated kinds.
//! It reuses each drill's own end state: no extra MySQL run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bloodraven_console::cli::{DoctorArgs, DoctorFormat};
use bloodraven_console::doctor;
use bloodraven_console::status::Scope;
use bloodraven_drill::{AtEnd, EndState};
use futures::future::BoxFuture;
use serde_json::Value;

/// How long the doctor is re-asked for the end state (the status settles a poll or two after
/// the drill's last check).
const SETTLE: Duration = Duration::from_secs(45);

/// A finding the end state must show.
#[derive(Clone, Debug)]
pub(crate) struct Expected {
    /// The verdict kind (`SiteDiverged`).
    pub kind: &'static str,
    /// The site it names, when it names one.
    pub site: Option<&'static str>,
    /// The runbook the doctor must point to (`None`: not checked).
    pub runbook: Option<&'static str>,
}

/// What the doctor must say at the end of a drill.
#[derive(Clone, Debug, Default)]
pub(crate) struct Expect {
    pub required: Vec<Expected>,
    /// Kinds that may also appear (a follower left Blocked/GTIDDiverged by an asynchronous
    /// failover, a site the drill left dead).
    pub tolerated: Vec<&'static str>,
}

impl Expect {
    /// No finding at all (a converged group).
    pub(crate) fn healthy() -> Expect {
        Expect::default()
    }

    /// Also requires `kind` (at `site`) pointing to `runbook`.
    pub(crate) fn finding(
        mut self,
        kind: &'static str,
        site: Option<&'static str>,
        runbook: Option<&'static str>,
    ) -> Expect {
        self.required.push(Expected { kind, site, runbook });
        self
    }

    /// Also tolerates `kinds`.
    pub(crate) fn tolerating(mut self, kinds: &[&'static str]) -> Expect {
        self.tolerated.extend_from_slice(kinds);
        self
    }

    /// Why the doctor's JSON does not match, or `None`.
    fn mismatch(&self, json: &Value) -> Option<String> {
        let findings = json["groups"][0]["findings"].as_array().cloned().unwrap_or_default();
        let mut problems = Vec::new();
        for expected in &self.required {
            let found = findings.iter().any(|finding| {
                finding["kind"] == expected.kind
                    && expected.site.is_none_or(|site| finding["site"] == site)
                    && expected.runbook.is_none_or(|runbook| finding["runbook"] == runbook)
            });
            if !found {
                problems.push(format!(
                    "no {} finding{}{}",
                    expected.kind,
                    expected.site.map(|site| format!(" at {site}")).unwrap_or_default(),
                    expected.runbook.map(|id| format!(" pointing to {id}")).unwrap_or_default()
                ));
            }
        }
        for finding in &findings {
            let kind = finding["kind"].as_str().unwrap_or_default();
            if !self.required.iter().any(|expected| expected.kind == kind)
                && !self.tolerated.contains(&kind)
            {
                problems.push(format!("unexpected {kind} finding: {}", finding["cause"]));
            }
        }
        (!problems.is_empty()).then(|| problems.join("; "))
    }
}

/// The console's `doctor <group> -o json` against the lab API server.
async fn doctor_json(state: &EndState) -> Result<Value, String> {
    let args =
        DoctorArgs { group: Some(state.group.clone()), output: DoctorFormat::Json, fail_on: None };
    let mut out = Vec::new();
    let mut err = Vec::new();
    doctor::run(
        state.client.clone(),
        &Scope::Namespace(state.namespace.clone()),
        &args,
        jiff::Timestamp::now(),
        &mut out,
        &mut err,
    )
    .await
    .map_err(|error| format!("doctor failed: {error:#}"))?;
    serde_json::from_slice(&out).map_err(|error| {
        format!("doctor printed no JSON ({error}): {}", String::from_utf8_lossy(&out))
    })
}

/// The hook: the doctor's findings must match `expect` within [`SETTLE`]. A drill that already
/// failed is left to its own report. `ran` is set when the runner called it (the caller checks
/// it, so a runner that stops calling the hook fails the tests).
pub(crate) fn doctor_at_end(expect: Expect, ran: Arc<AtomicBool>) -> Box<AtEnd> {
    let expect = Arc::new(expect);
    Box::new(move |state: EndState| -> BoxFuture<'static, Option<String>> {
        let expect = expect.clone();
        ran.store(true, Ordering::SeqCst);
        Box::pin(async move {
            if !state.passed {
                return None;
            }
            let started = Instant::now();
            loop {
                let last = match doctor_json(&state).await {
                    Ok(json) => match expect.mismatch(&json) {
                        None => return None,
                        Some(why) => format!("{why}; doctor said: {json}"),
                    },
                    Err(error) => error,
                };
                if started.elapsed() >= SETTLE {
                    return Some(format!(
                        "waited {} s for the doctor's findings to match the drill's end state \
                         ({expect:?}); last: {last}",
                        SETTLE.as_secs()
                    ));
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    })
}

#[test]
fn the_matcher_wants_every_expected_finding_and_nothing_else() {
    let json = serde_json::json!({"groups": [{"findings": [
        {"kind": "SiteDiverged", "site": "fra", "runbook": "diverged-follower", "cause": "c"},
        {"kind": "BackupTooOld", "site": null, "runbook": null, "cause": "d"},
    ]}]});
    let diverged =
        Expect::healthy().finding("SiteDiverged", Some("fra"), Some("diverged-follower"));
    assert!(diverged.mismatch(&json).unwrap().contains("unexpected BackupTooOld"));
    assert_eq!(diverged.clone().tolerating(&["BackupTooOld"]).mismatch(&json), None);
    let wrong_site = Expect::healthy()
        .finding("SiteDiverged", Some("pdx"), None)
        .tolerating(&["BackupTooOld", "SiteDiverged"]);
    assert!(wrong_site.mismatch(&json).unwrap().contains("no SiteDiverged finding at pdx"));
    assert!(Expect::healthy().mismatch(&json).is_some());
    assert_eq!(
        Expect::healthy().mismatch(&serde_json::json!({"groups": [{"findings": []}]})),
        None
    );
}
