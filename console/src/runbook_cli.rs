//! `bloodraven runbook list|show|run <id> <group>`: the shipped runbooks (compiled in from
//! `runbooks/`), one runbook's steps, and a read-only walk over a group. Without `--write`,
//! `run` never writes: a step with an action prints the guided operation
//! ([`crate::ops::WriteOp`]) it would propose. With `--write` the walk sends each action through
//! the confirm flow of `ops` and waits for its expectation ([`act`]).

use std::fmt::Write as _;
use std::io::Write;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_runbook::{
    Action, GroupView, NextStep, Offer, Runbook, Target, WalkEnd, applicable, walk,
};
use jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};

use crate::cli::RunbookCommand;
use crate::ops::{GroupRef, WriteOp};
use crate::status::{KubectlError, kubectl_error};

/// An unknown runbook id.
#[derive(Debug, thiserror::Error)]
#[error("no runbook {id:?}: `bloodraven runbook list` shows the {count} shipped runbooks")]
pub struct UnknownRunbook {
    /// The id asked for.
    pub id: String,
    /// How many runbooks are shipped.
    pub count: usize,
}

/// The runbook with this id.
pub fn find<'a>(runbooks: &'a [Runbook], id: &str) -> Result<&'a Runbook, UnknownRunbook> {
    runbooks
        .iter()
        .find(|runbook| runbook.id == id)
        .ok_or_else(|| UnknownRunbook { id: id.to_owned(), count: runbooks.len() })
}

/// `runbook list`: most severe first, then by id.
pub fn list(runbooks: &[Runbook]) -> String {
    let mut sorted: Vec<&Runbook> = runbooks.iter().collect();
    sorted.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.id.cmp(&b.id)));
    let width = sorted.iter().map(|r| r.id.len()).max().unwrap_or(2).max(2);
    let mut out = format!("{:<width$}   {:<8}   {:<9}   TITLE\n", "ID", "SEVERITY", "DATA LOSS");
    for runbook in sorted {
        let risk = match runbook.data_loss {
            bloodraven_runbook::RiskLevel::None => "none",
            bloodraven_runbook::RiskLevel::Possible => "possible",
        };
        let _ = writeln!(
            out,
            "{:<width$}   {:<8}   {:<9}   {}",
            runbook.id,
            runbook.severity.as_str(),
            risk,
            runbook.title
        );
    }
    out
}

fn target_name(runbook: &Runbook, target: &Target) -> String {
    match target {
        Target::Step(index) => runbook.steps.get(*index).map_or("?", |s| s.id.as_str()).to_owned(),
        Target::Done => "done".to_owned(),
    }
}

fn indent(text: &str, by: &str) -> String {
    text.trim_end().lines().map(|line| format!("{by}{line}\n")).collect()
}

/// `runbook show`: the runbook as a human reads it.
pub fn show(runbook: &Runbook) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", runbook.id, runbook.title);
    let _ = writeln!(out, "spec:         {}", runbook.spec);
    let _ = writeln!(out, "severity:     {}", runbook.severity.as_str());
    let _ = writeln!(out, "applies when: {}", runbook.applies_when.source.trim());
    let _ = writeln!(out, "data loss:    {}", runbook.data_loss_sentence.trim());
    for (index, step) in runbook.steps.iter().enumerate() {
        let _ = writeln!(out, "\n{}. {}", index + 1, step.id);
        out.push_str(&indent(&step.explain, "   "));
        if let Some(check) = &step.check {
            let _ = writeln!(
                out,
                "   check:  {} (passes when {})",
                check.expr.source.trim(),
                check.expect
            );
            let _ = writeln!(out, "           fails: {}", check.meaning.trim());
        }
        if let Some(call) = &step.action {
            let params: Vec<String> = call
                .params
                .iter()
                .map(|(name, expr)| format!("{name}={}", expr.source.trim()))
                .collect();
            let _ = writeln!(out, "   action: {}({})", call.action.name(), params.join(", "));
        }
        if let Some(expect) = &step.expect {
            let _ = writeln!(
                out,
                "   expect: {} within {}s",
                expect.expr.source.trim(),
                expect.timeout.as_secs()
            );
        }
        let _ = writeln!(
            out,
            "   next:   {}{}",
            target_name(runbook, &step.on_pass),
            if step.check.is_some() {
                format!(" (check fails: {})", target_name(runbook, &step.on_fail))
            } else {
                String::new()
            }
        );
    }
    out
}

/// The guided operation an offer maps to, when the console's confirm flow has one.
pub fn write_op(offer: &Offer, group: &GroupRef) -> Option<WriteOp> {
    let param = |name: &str| {
        offer.params.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone())
    };
    let group = group.clone();
    Some(match offer.action {
        Action::PlannedFailover => WriteOp::RequestPlannedFailover {
            group,
            target: param("targetSite")?,
            max_lag_wait: None,
        },
        Action::AcknowledgeHold => WriteOp::AcknowledgeHold { group, run_id: param("runId")? },
        Action::RecloneQueueKeepPrimary => WriteOp::RecloneQueueDrain { group },
        Action::RecloneQueueRelease => WriteOp::RecloneQueueRelease { group },
        Action::RecloneSite => WriteOp::Reclone { group, site: param("site")? },
        // A backup needs a name and a profile the runbook cannot draw from the group; the
        // offline fence is released on the primary by hand (000 "Application sessions").
        Action::RecloneQueueRestoreHeldData | Action::ReleaseOfflineFence => return None,
    })
}

/// The offer as one line, and what would send it.
pub fn describe_offer(offer: &Offer, group: &GroupRef) -> String {
    let params: Vec<String> =
        offer.params.iter().map(|(name, value)| format!("{name}={value}")).collect();
    let head = format!("{}({})", offer.action.name(), params.join(", "));
    match write_op(offer, group) {
        Some(op) => format!(
            "{head}: would propose \"{}\" through the confirm flow (not sent: `runbook run` is read-only)",
            op.summary()
        ),
        None => format!(
            "{head}: no guided operation of the console sends this yet; do it by hand as the step explains"
        ),
    }
}

/// One shown step: its explanation, the check with the values it read, and the action it
/// offers (`sending`: the walk with actions proposes it next; else the read-only walk says what
/// it would propose) or where it leads.
pub(crate) fn render_show(
    runbook: &Runbook,
    shown: &NextStep,
    reference: &GroupRef,
    sending: bool,
) -> String {
    let mut out = String::new();
    let NextStep::Show { step, check, offer, next } = shown else { return out };
    let Some(definition) = runbook.steps.get(*step) else { return out };
    let _ = writeln!(out, "\n{}. {}", step + 1, definition.id);
    out.push_str(&indent(&definition.explain, "   "));
    if let (Some(outcome), Some(check)) = (check, &definition.check) {
        let verdict = if outcome.passed { "PASS" } else { "FAIL" };
        let _ = writeln!(out, "   [{verdict}] {}", check.expr.source.trim());
        for (field, value) in &outcome.reads {
            let _ = writeln!(out, "          {field} = {value:?}");
        }
        if !outcome.passed {
            let _ = writeln!(out, "          {}", check.meaning.trim());
        }
    }
    if let Some(offer) = offer {
        if sending {
            let params: Vec<String> =
                offer.params.iter().map(|(name, value)| format!("{name}={value}")).collect();
            let _ = writeln!(out, "   action: {}({})", offer.action.name(), params.join(", "));
        } else {
            let _ = writeln!(out, "   action: {}", describe_offer(offer, reference));
        }
        if let Some(expect) = &definition.expect {
            let _ = writeln!(
                out,
                "   then waits up to {}s for: {}",
                expect.timeout.as_secs(),
                expect.expr.source.trim()
            );
        }
    } else {
        let _ = writeln!(out, "   next: {}", target_name(runbook, next));
    }
    out
}

/// `runbook run`: a read-only walk of `runbook` over `group`, each check with what it read.
pub fn run_text(runbook: &Runbook, group: &MysqlFailoverGroup, now: Timestamp) -> String {
    let view = GroupView::of(group);
    let reference = GroupRef::new(view.namespace.clone(), view.name.clone());
    let mut out = format!("{} on {}/{}\n", runbook.id, view.namespace, view.name);
    let all = std::slice::from_ref(runbook);
    let ranked = applicable(all, &view);
    if let Some(error) = ranked.errors.first() {
        let _ = writeln!(out, "appliesWhen failed to evaluate: {error}");
    } else if ranked.runbooks.is_empty() {
        let _ = writeln!(out, "note: appliesWhen is false for this group; walking it anyway");
    }
    let walked = match walk(runbook, &view, now) {
        Ok(walked) => walked,
        Err(error) => {
            let _ = writeln!(out, "error: {error}");
            return out;
        }
    };
    for shown in &walked.shown {
        out.push_str(&render_show(runbook, shown, &reference, false));
    }
    let end = match walked.end {
        WalkEnd::Finished => "finished".to_owned(),
        WalkEnd::Offer(index) => format!(
            "stopped at {}: its action needs a confirmation",
            runbook.steps.get(index).map_or("?", |s| s.id.as_str())
        ),
        WalkEnd::Waits(index) => format!(
            "stopped at {}: it waits for the group to change (run again later)",
            runbook.steps.get(index).map_or("?", |s| s.id.as_str())
        ),
    };
    let _ = writeln!(out, "\n{end}");
    out
}

/// Runs a `runbook` verb; `run --write` walks with actions ([`act`]) through `at`.
pub async fn run(
    command: &RunbookCommand,
    client: impl AsyncFnOnce() -> anyhow::Result<(Client, String)>,
    at: &crate::ops::verbs::Where,
    now: Timestamp,
    out: &mut (impl Write + Send),
) -> anyhow::Result<()> {
    let runbooks = bloodraven_runbook::shipped()?;
    let text = match command {
        RunbookCommand::List => list(&runbooks),
        RunbookCommand::Show { id } => show(find(&runbooks, id)?),
        RunbookCommand::Run { id, group, act } if act.write => {
            act::run_cli(find(&runbooks, id)?, group, act, at, out).await?;
            return Ok(());
        }
        RunbookCommand::Run { id, group, .. } => {
            let runbook = find(&runbooks, id)?;
            let (client, namespace) = client().await?;
            let resource = ApiResource::erase::<MysqlFailoverGroup>(&());
            let api: Api<DynamicObject> = Api::namespaced_with(client, &namespace, &resource);
            let object = api.get(group).await.map_err(|error| kubectl_error(error, Some(group)))?;
            let decoded = crate::decode::decode::<MysqlFailoverGroup>("MysqlFailoverGroup", object)
                .map_err(|unreadable| KubectlError(format!("error: {unreadable}")))?;
            run_text(runbook, &decoded, now)
        }
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

pub mod act;

#[cfg(all(test, feature = "lab"))]
mod tests;
