//! `bloodraven runbook run <id> <group> --write`: a runbook walked with its actions. Each step
//! is shown over a fresh read of the group; a step's action goes through the guided-operations
//! flow of [`crate::ops`] — `prepare` (uncached read, preflight, the exact request), the
//! identity and RBAC review, the typed confirmation (at a terminal, or `--yes --confirm
//! <name>` for scripts) and `send` (journal before and after, the `ConsoleOperation` Event) —
//! then the walk waits on the step's `expect` with a countdown and moves on.
//!
//! Nothing is ever sent without the confirmation the operation's risk asks for, and nothing is
//! retried: a conflict (the group changed since it was read) stops the walk.

use std::collections::BTreeSet;
use std::io::{IsTerminal as _, Write};
use std::path::PathBuf;
use std::time::Duration;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_runbook::{AdvanceError, GroupView, NextStep, Progress, Runbook, Target, advance};
use clap::Args;
use kube::Api;

use crate::client::{WriteSwitch, connect_guarded};
use crate::ops::confirm::Origin;
use crate::ops::send::{self, Prepared, SendError, Session};
use crate::ops::{GroupRef, confirmation_name, data_loss_statement};

/// Flags of `runbook run` that turn the read-only walk into one that sends its actions.
#[derive(Clone, Debug, Default, Args)]
pub struct ActArgs {
    /// Send each step's action (after its preflight and confirmation) and wait for its
    /// expectation; without it the walk is read-only.
    #[arg(long)]
    pub write: bool,
    /// Do not ask: send each action the preflight allows whose confirmation name equals
    /// --confirm (needs --write and --confirm).
    #[arg(long, requires_all = ["write", "confirm"])]
    pub yes: bool,
    /// The name the confirmations ask for (the group for data-loss decisions, the target site
    /// of a planned failover).
    #[arg(long, value_name = "NAME", requires = "write")]
    pub confirm: Option<String>,
    /// How long a step that waits for the group to change (its check loops back) is re-read
    /// before the walk stops there.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, requires = "write")]
    pub settle: u64,
    /// The audit journal's folder (default: $XDG_STATE_HOME/bloodraven/journal).
    #[arg(long, env = "BLOODRAVEN_JOURNAL_DIR", value_name = "DIR")]
    pub journal_dir: Option<PathBuf>,
}

/// How each action is confirmed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confirm {
    /// `--yes --confirm <name>`: sent when the name equals the operation's confirmation name.
    Token(String),
    /// Typed at the terminal (stdin), the prompt on stderr.
    Terminal,
}

/// How a walk with actions runs.
#[derive(Clone, Debug)]
pub struct ActOptions {
    pub confirm: Confirm,
    /// How often the group is re-read while a step waits.
    pub poll: Duration,
    /// How long a step that waits for the group to change is re-read before the walk stops.
    pub settle: Duration,
}

/// Where a walk with actions ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActEnd {
    /// The runbook finished.
    Finished,
    /// The step's action has no guided operation: the human does it as the step explains.
    ByHand { step: String },
    /// The step waited `settle` for the group to change and it did not.
    Waits { step: String },
}

/// One operation a walk sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentAction {
    /// The step it came from.
    pub step: String,
    /// The operation's kind (`acknowledge-hold`).
    pub operation: String,
    /// The journal's operation id.
    pub operation_id: String,
}

/// What a walk with actions did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActReport {
    pub end: ActEnd,
    /// The steps shown, in order (a step shown again after a wait counts again).
    pub path: Vec<String>,
    pub sent: Vec<SentAction>,
}

/// Why a walk with actions stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error("cannot read group {group}: {source}")]
    Read { group: GroupRef, source: Box<kube::Error> },
    #[error(transparent)]
    Advance(#[from] AdvanceError),
    #[error(
        "runbook {runbook}, step {step}: the preflight refuses {op}: nothing was sent\n{checks}"
    )]
    Refused { runbook: String, step: String, op: String, checks: String },
    #[error(
        "runbook {runbook}, step {step}: not confirmed (the confirmation is {expected:?}): nothing was sent"
    )]
    NotConfirmed { runbook: String, step: String, expected: String },
    #[error("runbook {runbook}, step {step}: {user} is {access} to send {op}: nothing was sent")]
    NotAllowed { runbook: String, step: String, user: String, access: String, op: String },
    #[error("runbook {runbook}, step {step}: {source}")]
    Send { runbook: String, step: String, source: Box<SendError> },
    #[error(
        "runbook {runbook}, step {step}: waited {waited_s}s for {expect} after the action; it did not happen (check the operator's Events, then run the runbook again)"
    )]
    TimedOut { runbook: String, step: String, expect: String, waited_s: u64 },
    #[error("writing the walk: {0}")]
    Output(#[from] std::io::Error),
}

/// Reads the group as it is now (uncached).
async fn read(client: &kube::Client, group: &GroupRef) -> Result<MysqlFailoverGroup, ActError> {
    let api: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), &group.namespace);
    api.get(&group.name)
        .await
        .map_err(|source| ActError::Read { group: group.clone(), source: Box::new(source) })
}

fn step_id(runbook: &Runbook, index: usize) -> String {
    runbook.steps.get(index).map_or_else(|| "?".to_owned(), |s| s.id.clone())
}

/// The prepared operation as the confirmation shows it.
fn describe_prepared(prepared: &Prepared, origin: &Origin) -> String {
    let mut out = format!("   proposing: {} ({})\n", prepared.op.summary(), origin.describe());
    for line in prepared.preflight.render().lines() {
        out.push_str(&format!("     {line}\n"));
    }
    if let Ok(patch) = &prepared.patch {
        out.push_str(&format!(
            "     request: {} {} {}\n",
            patch.verb.method(),
            patch.path,
            serde_json::to_string(&patch.body).unwrap_or_default()
        ));
    }
    let primary_down = crate::ops::verbs::primary_down(prepared);
    if let Some(statement) = data_loss_statement(&prepared.op, primary_down) {
        out.push_str(&format!("     data loss: {statement}\n"));
    }
    out
}

/// Proposes, confirms and sends the offer of step `index`.
async fn act(
    runbook: &Runbook,
    index: usize,
    op: crate::ops::WriteOp,
    session: &Session,
    options: &ActOptions,
    out: &mut (dyn Write + Send),
) -> Result<SentAction, ActError> {
    let step = step_id(runbook, index);
    let origin = Origin::Runbook { runbook: runbook.id.clone(), step: step.clone() };
    let send_error = |source| ActError::Send {
        runbook: runbook.id.clone(),
        step: step.clone(),
        source: Box::new(source),
    };
    let prepared =
        send::prepare(&session.client, op, jiff::Timestamp::now()).await.map_err(send_error)?;
    out.write_all(describe_prepared(&prepared, &origin).as_bytes())?;
    if !prepared.confirmable() {
        return Err(ActError::Refused {
            runbook: runbook.id.clone(),
            step,
            op: prepared.op.summary(),
            checks: prepared.preflight.render(),
        });
    }
    let access = send::access(&session.client, &prepared).await;
    if access.allowed == Some(false) {
        return Err(ActError::NotAllowed {
            runbook: runbook.id.clone(),
            step,
            user: access.user.clone().unwrap_or_else(|| "this identity".to_owned()),
            access: access.describe(),
            op: prepared.op.summary(),
        });
    }
    let expected = confirmation_name(&prepared.op).to_owned();
    out.flush()?;
    let confirmed = match &options.confirm {
        Confirm::Token(token) => *token == expected,
        Confirm::Terminal => crate::ops::verbs::ask(&expected)?,
    };
    if !confirmed {
        return Err(ActError::NotConfirmed { runbook: runbook.id.clone(), step, expected });
    }
    let sent =
        send::send(session, &prepared, access.user.as_deref(), &origin, jiff::Timestamp::now())
            .await
            .map_err(send_error)?;
    writeln!(
        out,
        "   sent: {} (operation {}, resourceVersion {})",
        prepared.op.summary(),
        sent.operation_id,
        sent.resource_version.as_deref().unwrap_or("?")
    )?;
    Ok(SentAction {
        step,
        operation: prepared.op.kind().to_owned(),
        operation_id: sent.operation_id,
    })
}

/// Walks `runbook` over the live `group`, sending each step's action through the confirm flow
/// and waiting for its expectation. Returns where it ended; an error names the step.
pub async fn walk_with_actions(
    runbook: &Runbook,
    session: &Session,
    group: &GroupRef,
    options: &ActOptions,
    out: &mut (dyn Write + Send),
) -> Result<ActReport, ActError> {
    let mut progress = Progress::start(runbook);
    let mut report = ActReport { end: ActEnd::Finished, path: Vec::new(), sent: Vec::new() };
    // Steps shown since the last move forward by an action; coming back to one means the
    // walk waits for the group to change.
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    let mut waiting_since: Option<tokio::time::Instant> = None;
    let mut last_shown: Option<(usize, bool)> = None;
    let mut last_countdown: Option<u64> = None;
    writeln!(out, "{} on {group} (sending actions)", runbook.id)?;
    loop {
        let object = read(&session.client, group).await?;
        let view = GroupView::of(&object);
        let shown = advance(runbook, &progress, &view, jiff::Timestamp::now())?;
        match &shown {
            NextStep::Finished => {
                writeln!(out, "\nfinished")?;
                report.end = ActEnd::Finished;
                return Ok(report);
            }
            NextStep::Waiting { step, remaining } => {
                let (step, seconds) = (*step, remaining.as_secs());
                // One line every ten seconds of the countdown.
                if last_countdown.is_none_or(|last| last / 10 != seconds / 10) {
                    let expect = runbook.steps.get(step).and_then(|s| s.expect.as_ref());
                    writeln!(
                        out,
                        "   waiting for {} ({seconds}s left)",
                        expect.map_or("", |e| e.expr.source.trim())
                    )?;
                    last_countdown = Some(seconds);
                }
                tokio::time::sleep(options.poll).await;
            }
            NextStep::Satisfied { step, next } => {
                writeln!(out, "   done: {}", step_id(runbook, *step))?;
                progress = progress.moved(runbook, next);
                waiting_since = None;
                seen.clear();
                last_countdown = None;
                last_shown = None;
            }
            NextStep::TimedOut { step, waited } => {
                let expect = runbook
                    .steps
                    .get(*step)
                    .and_then(|s| s.expect.as_ref())
                    .map_or_else(String::new, |e| e.expr.source.trim().to_owned());
                return Err(ActError::TimedOut {
                    runbook: runbook.id.clone(),
                    step: step_id(runbook, *step),
                    expect,
                    waited_s: waited.as_secs(),
                });
            }
            NextStep::Show { step, check, offer, next } => {
                let step = *step;
                let passed = check.as_ref().is_none_or(|c| c.passed);
                if passed {
                    waiting_since = None;
                }
                if last_shown != Some((step, passed)) {
                    report.path.push(step_id(runbook, step));
                    out.write_all(super::render_show(runbook, &shown, group, true).as_bytes())?;
                    last_shown = Some((step, passed));
                }
                if let Some(offer) = offer {
                    let Some(op) = super::write_op(offer, group) else {
                        writeln!(
                            out,
                            "\nstopped at {}: no guided operation sends {}; do it by hand as the step explains",
                            step_id(runbook, step),
                            offer.action.name()
                        )?;
                        report.end = ActEnd::ByHand { step: step_id(runbook, step) };
                        return Ok(report);
                    };
                    let sent = act(runbook, step, op, session, options, out).await?;
                    report.sent.push(sent);
                    // The group the action was decided on: the step's `expect` tells its own
                    // result from an earlier one with it (`before`).
                    progress = progress.acted_on(jiff::Timestamp::now(), &view);
                    continue;
                }
                match next {
                    Target::Step(index) if seen.contains(index) => {
                        let since = *waiting_since.get_or_insert_with(tokio::time::Instant::now);
                        if since.elapsed() >= options.settle {
                            let at = step_id(runbook, *index);
                            writeln!(
                                out,
                                "\nstopped at {at}: waited {}s for the group to change (run again later)",
                                options.settle.as_secs()
                            )?;
                            report.end = ActEnd::Waits { step: at };
                            return Ok(report);
                        }
                        // Start over from the step the walk came back to, on a fresh read.
                        progress = progress.moved(runbook, next);
                        tokio::time::sleep(options.poll).await;
                    }
                    Target::Step(_) | Target::Done => {
                        seen.insert(step);
                        progress = progress.moved(runbook, next);
                    }
                }
            }
        }
    }
}

/// `runbook run <id> <group> --write`: connects with a client that writes only the console's
/// allow-list (refused for a context the config pins read-only), opens the journal and walks.
pub async fn run_cli(
    runbook: &Runbook,
    group: &str,
    args: &ActArgs,
    at: &crate::ops::verbs::Where,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<ActReport> {
    let (config_path, config) = crate::ops::verbs::load_config(at)?;
    let switch = WriteSwitch::read_only();
    let (client, connection) =
        connect_guarded(at.kubeconfig.as_deref(), at.context.as_deref(), switch.clone()).await?;
    if let Some(pattern) = config.pinned_by(&connection.context) {
        anyhow::bail!(
            "context {} is pinned read-only by {pattern:?} in {}: nothing was sent; run without --write for the read-only walk",
            connection.context,
            config_path.map(|path| path.display().to_string()).unwrap_or_default()
        );
    }
    let confirm = match (&args.confirm, args.yes) {
        (Some(name), true) => Confirm::Token(name.clone()),
        _ if std::io::stdin().is_terminal() => Confirm::Terminal,
        _ => anyhow::bail!(
            "non-interactive use needs --yes --confirm <name> (the group for data-loss decisions, the target site of a planned failover): nothing was sent"
        ),
    };
    switch.set(true);
    let session = crate::ops::verbs::open_session(
        client,
        connection.context.clone(),
        switch,
        args.journal_dir.as_ref(),
    )?;
    let namespace = at.namespace.clone().unwrap_or(connection.default_namespace);
    let options = ActOptions {
        confirm,
        poll: Duration::from_secs(1),
        settle: Duration::from_secs(args.settle),
    };
    Ok(walk_with_actions(runbook, &session, &GroupRef::new(namespace, group), &options, out)
        .await?)
}
