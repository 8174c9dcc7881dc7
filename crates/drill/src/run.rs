//! Playing a drill against a group of real MySQL sites and recording the timeline. Without the
//! operator the sites are the `sites` star harness; with `requires: [operator]` they are the
//! lab kubelet's pods in the live lab ([`crate::live`]), run by the operator.

mod checks;
mod operator;
mod site;
mod status;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_gtid::GtidSet;
use bloodraven_sites::SitesError;
use bloodraven_sites::group::{Group, GroupSpec};
use bloodraven_sites::ledger::Ledger;
use bloodraven_sites::proxy::{Fault, Link};
use bloodraven_sites::workload::{Workload, WorkloadConfig};

use crate::error::DrillError;
use crate::live::{LiveLab, OperatorLauncher, ProcessLauncher};
use crate::load::LoadedDrill;
use crate::model::{Check, Step};
use crate::report::{Report, StepRecord};

/// How a drill is run.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// The operator binary (a [`ProcessLauncher`]), when `launcher` is not given.
    pub operator_bin: Option<PathBuf>,
    /// How operator replicas are started; drills with `requires: [operator]` are refused
    /// without this or `operator_bin`.
    pub launcher: Option<Arc<dyn OperatorLauncher>>,
}

impl RunOptions {
    fn launcher(&self) -> Option<Arc<dyn OperatorLauncher>> {
        self.launcher.clone().or_else(|| {
            self.operator_bin.clone().map(|bin| {
                let launcher: Arc<dyn OperatorLauncher> = Arc::new(ProcessLauncher { bin });
                launcher
            })
        })
    }
}

/// Why a step failed (the report carries the text).
#[derive(Debug, thiserror::Error)]
pub(crate) enum StepError {
    /// The lab's MySQL world failed.
    #[error(transparent)]
    Sites(#[from] SitesError),
    /// A fault-proxy change failed.
    #[error("fault proxy: {0}")]
    Proxy(#[from] bloodraven_sites::proxy::ProxyError),
    /// The live lab (operator drills) failed.
    #[error(transparent)]
    Live(#[from] crate::live::LiveError),
    /// A check did not hold, or a step cannot run here.
    #[error("{0}")]
    Failed(String),
}

/// The state of the world along the timeline.
#[derive(Default)]
pub(crate) struct World {
    pub(crate) group: Option<Group>,
    /// The operator's world (operator drills).
    pub(crate) live: Option<LiveLab>,
    pub(crate) workload: Option<(String, Workload)>,
    pub(crate) ledgers: BTreeMap<String, Ledger>,
    pub(crate) recorded: BTreeMap<String, GtidSet>,
}

impl World {
    pub(crate) fn group(&self) -> Result<&Group, StepError> {
        self.group.as_ref().ok_or_else(|| StepError::Failed("the group is not started".into()))
    }

    fn group_mut(&mut self) -> Result<&mut Group, StepError> {
        self.group.as_mut().ok_or_else(|| StepError::Failed("the group is not started".into()))
    }

    pub(crate) fn live(&self) -> Result<&LiveLab, StepError> {
        self.live
            .as_ref()
            .ok_or_else(|| StepError::Failed("the operator's world is not started".into()))
    }

    fn link(&self, name: &str) -> Result<Link, StepError> {
        if let Some(live) = &self.live {
            return Ok(live.drill_link(name)?);
        }
        self.group()?
            .hub()
            .get(name)
            .ok_or_else(|| StepError::Failed(format!("no link {name:?} in this group")))
    }
}

/// Bound on one site control (stop, restart).
const SITE_TIMEOUT: Duration = Duration::from_secs(60);

/// The live lab as an operator drill left it, handed to a [`run_with`] hook before the
/// teardown: enough to read the end state through the lab API server (the console's `doctor`
/// in the drill tests).
#[derive(Clone)]
pub struct EndState {
    /// A client of the lab API server (full rights).
    pub client: kube::Client,
    /// A kubeconfig file for it.
    pub kubeconfig: PathBuf,
    /// The group's namespace.
    pub namespace: String,
    /// The group's name.
    pub group: String,
    /// Whether every step passed.
    pub passed: bool,
}

/// A hook [`run_with`] calls at the end of an operator drill; `Some(message)` fails the drill
/// with that message.
pub type AtEnd =
    dyn Fn(EndState) -> futures::future::BoxFuture<'static, Option<String>> + Send + Sync;

/// Runs a validated drill. `Err` only when the drill cannot run here at all (it needs the
/// operator); a failing step ends the run and is reported in the [`Report`]. Every mysqld and
/// link the drill started is gone when this returns.
pub async fn run(drill: &LoadedDrill, options: &RunOptions) -> Result<Report, DrillError> {
    run_with(drill, options, None).await
}

/// [`run`], calling `at_end` on the live lab of an operator drill after its last step (passed
/// or not) and before the teardown; a message it returns fails the drill.
pub async fn run_with(
    drill: &LoadedDrill,
    options: &RunOptions,
    at_end: Option<&AtEnd>,
) -> Result<Report, DrillError> {
    let launcher = options.launcher();
    if drill.requires_operator() && launcher.is_none() {
        let message = format!(
            "drill {:?} requires the operator (`requires: [operator]`); pass --operator-bin \
             PATH to run it",
            drill.drill.name
        );
        return Err(DrillError::Refused { file: drill.path.clone(), message });
    }
    let started = Instant::now();
    let mut world = World::default();
    let mut records = Vec::new();
    let mut error = None;
    for (index, step) in drill.drill.steps.iter().enumerate() {
        let at = started.elapsed();
        let remaining = drill.timeout.saturating_sub(at);
        let result =
            match tokio::time::timeout(remaining, play(drill, &launcher, &mut world, step)).await {
                Ok(r) => r,
                Err(_) => Err(StepError::Failed(format!(
                    "the drill's timeout ({:?}) ran out during this step",
                    drill.timeout
                ))),
            };
        let took = started.elapsed().saturating_sub(at);
        let ok = result.is_ok();
        // GTID sets print with a newline after each comma, as MySQL does: one line per step.
        let detail = match result {
            Ok(detail) => detail,
            Err(e) => e.to_string(),
        }
        .replace(",\n", ", ")
        .replace('\n', " ");
        tracing::info!(drill = %drill.drill.name, index, kind = step.kind(), ok, %detail, "drill step");
        if !ok {
            error = Some(format!("steps[{index}] ({}) failed: {detail}", step.kind()));
        }
        records.push(StepRecord {
            index,
            kind: step.kind().to_owned(),
            at_ms: millis(at),
            took_ms: millis(took),
            ok,
            detail,
        });
        if !ok {
            break;
        }
    }
    // Tear down: the workload first (it writes through the group), then every mysqld and link.
    if let Some((name, w)) = world.workload.take()
        && let Ok(ledger) = w.stop().await
        && let Some(e) = error.as_mut()
    {
        e.push_str(&format!("; workload {name:?} at the failure: {}", ledger_summary(&ledger)));
    }
    if let (Some(hook), Some(live)) = (at_end, world.live.as_ref()) {
        let state = EndState {
            client: live.client().clone(),
            kubeconfig: live.kubeconfig(),
            namespace: live.namespace().to_owned(),
            group: live.group_name().to_owned(),
            passed: error.is_none(),
        };
        if let Some(failure) = hook(state).await {
            tracing::info!(drill = %drill.drill.name, %failure, "the end-of-drill hook failed");
            match error.as_mut() {
                Some(e) => e.push_str(&format!("; at the end: {failure}")),
                None => error = Some(format!("at the end: {failure}")),
            }
        }
    }
    if let Some(live) = world.live.take() {
        live.stop().await;
    }
    drop(world);
    Ok(Report {
        drill: drill.drill.name.clone(),
        file: drill.path.display().to_string(),
        passed: error.is_none(),
        total_ms: millis(started.elapsed()),
        steps: records,
        error,
    })
}

/// Acknowledged and failed counts by kind, and the last failure's text.
fn ledger_summary(ledger: &Ledger) -> String {
    use bloodraven_sites::ledger::Outcome;
    let report = bloodraven_sites::ledger::verify(ledger, &[]);
    let last = ledger.attempts.iter().rev().find_map(|a| match &a.outcome {
        Outcome::Failed { detail, .. } => Some(detail.as_str()),
        Outcome::Acknowledged { .. } => None,
    });
    format!(
        "{} acknowledged, failures {:?}, last failure {:?}",
        report.acknowledged,
        report.failures,
        last.unwrap_or("none")
    )
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub(crate) async fn play_common(
    world: &mut World,
    step: &Step,
) -> Option<Result<String, StepError>> {
    Some(match step {
        Step::Cut(l) => fault(world, &l.link, Fault::Blackhole),
        Step::Refuse(l) => fault(world, &l.link, Fault::Refuse),
        Step::Delay(d) => fault(world, &d.link, Fault::Delay { ms: d.ms }),
        Step::Heal(l) => fault(world, &l.link, Fault::Pass),
        Step::Reset(l) => match world.link(&l.link) {
            Ok(link) => {
                let n = link.live_connections();
                link.reset();
                Ok(format!("{}: {n} live connections reset", l.link))
            }
            Err(e) => Err(e),
        },
        Step::Sleep(s) => match s.duration.to_std() {
            Ok(d) => {
                tokio::time::sleep(d).await;
                Ok(format!("slept {}", s.duration))
            }
            Err(e) => Err(StepError::Failed(e.to_string())),
        },
        Step::StopWorkload(_) => stop_workload(world).await,
        Step::DelayApplier(d) => delay_applier(world, &d.site, d.seconds).await,
        Step::Wait(w) => match w.timeout.to_std() {
            Ok(timeout) => checks::wait(world, &w.until, timeout).await,
            Err(e) => Err(StepError::Failed(e.to_string())),
        },
        Step::Assert(c) => checks::assert(world, c).await,
        _ => return None,
    })
}

/// `SOURCE_DELAY` on a follower's channel: the applier stopped, the delay set, the applier
/// started again.
async fn delay_applier(world: &World, site: &str, seconds: u32) -> Result<String, StepError> {
    let change = format!("CHANGE REPLICATION SOURCE TO SOURCE_DELAY = {seconds}");
    let statements = ["STOP REPLICA SQL_THREAD", change.as_str(), "START REPLICA SQL_THREAD"];
    world.execute(site, &statements).await?;
    Ok(format!("{site}: applier delayed {seconds} s behind its source (SOURCE_DELAY)"))
}

async fn stop_workload(world: &mut World) -> Result<String, StepError> {
    let (name, w) =
        world.workload.take().ok_or_else(|| StepError::Failed("no workload runs".into()))?;
    let ledger = w.stop().await?;
    let acked = ledger.acknowledged().count();
    let detail = format!(
        "workload {name:?} stopped: {} attempts, {acked} acknowledged",
        ledger.attempts.len()
    );
    world.ledgers.insert(name, ledger);
    Ok(detail)
}

async fn play(
    drill: &LoadedDrill,
    launcher: &Option<Arc<dyn OperatorLauncher>>,
    world: &mut World,
    step: &Step,
) -> Result<String, StepError> {
    if drill.requires_operator() {
        return operator::play(drill, launcher, world, step).await;
    }
    if let Some(result) = play_common(world, step).await {
        return result;
    }
    match step {
        Step::StartGroup(_) => {
            let names: Vec<&str> = drill.sites.iter().map(String::as_str).collect();
            let mut spec = GroupSpec::new(&names);
            spec.primary = drill.primary.clone();
            let group = Group::start(spec).await?;
            world.group = Some(group);
            Ok(format!(
                "sites {} started in a star from {}, {} primary",
                drill.sites.join(", "),
                drill.manifest_path.display(),
                drill.primary
            ))
        }
        Step::StartWorkload(w) => {
            if w.via == Some(crate::model::WorkloadVia::Dns) {
                return Err(StepError::Failed(
                    "startWorkload via dns needs the operator (requires: [operator]): only it \
                     publishes the DNSEndpoint"
                        .into(),
                ));
            }
            let name = w.name.clone().unwrap_or_else(|| crate::DEFAULT_WORKLOAD.to_owned());
            let mut config = WorkloadConfig::new(world.group()?.primary_link().addr());
            if let Some(rate) = w.rate {
                config.rate_per_sec = rate;
            }
            if let Some(first) = w.first_key {
                config.first_key = first;
            }
            config.writer = name.clone();
            let detail = format!(
                "workload {name:?}: {} writes/s from key {} through app:primary",
                config.rate_per_sec, config.first_key
            );
            world.workload = Some((name, Workload::start(config)));
            Ok(detail)
        }
        Step::Kill(s) => {
            world.group_mut()?.site_mut(&s.site)?.instance.kill().await?;
            Ok(format!("{} SIGKILLed", s.site))
        }
        Step::Freeze(s) => {
            world.group()?.site(&s.site)?.instance.freeze()?;
            Ok(format!("{} frozen (SIGSTOP)", s.site))
        }
        Step::Thaw(s) => {
            world.group()?.site(&s.site)?.instance.thaw()?;
            Ok(format!("{} thawed (SIGCONT)", s.site))
        }
        Step::Stop(s) => {
            let outcome = world.group_mut()?.site_mut(&s.site)?.instance.stop(SITE_TIMEOUT).await?;
            Ok(format!("{} stopped: {outcome:?}", s.site))
        }
        Step::Restart(s) => {
            world.group_mut()?.site_mut(&s.site)?.instance.restart(SITE_TIMEOUT).await?;
            Ok(format!("{} restarted on its data directory", s.site))
        }
        Step::ErrantWrite(e) => {
            operator::errant_write(world, &e.site, e.key, e.name.as_deref()).await
        }
        Step::Fence(s) => {
            world.group()?.site(&s.site)?.instance.set_super_read_only(true).await?;
            Ok(format!("{} fenced (super_read_only=ON)", s.site))
        }
        Step::ReplicateFrom(r) => world.replicate_from(&r.site, &r.source).await,
        Step::Unfence(s) => {
            let statements = ["SET GLOBAL super_read_only = OFF", "SET GLOBAL read_only = OFF"];
            world.group()?.site(&s.site)?.instance.execute(&statements).await?;
            Ok(format!("{} made writable by hand (super_read_only=OFF, read_only=OFF)", s.site))
        }
        Step::StartOperator(_) | Step::KillOperator(_) => {
            Err(StepError::Failed("operator replicas need `requires: [operator]`".into()))
        }
        Step::Promote(s) => {
            let group = world.group_mut()?;
            let old = group.primary().to_owned();
            group.promote(&s.site).await?;
            Ok(format!("{} promoted by hand (was {old}); app:primary follows it", s.site))
        }
        Step::RecordGtids(r) => {
            let set = world.group()?.site(&r.site)?.instance.gtid_executed().await?;
            let detail = format!("{} as {:?}: {set}", r.site, r.name);
            world.recorded.insert(r.name.clone(), set);
            Ok(detail)
        }
        Step::Annotate(_) | Step::Patch(_) => Err(StepError::Failed(
            "needs the lab API server of the operator's world, which this run lacks".into(),
        )),
        // Played by `play_common`.
        Step::StopWorkload(_)
        | Step::Cut(_)
        | Step::Refuse(_)
        | Step::Delay(_)
        | Step::DelayApplier(_)
        | Step::Heal(_)
        | Step::Reset(_)
        | Step::Sleep(_)
        | Step::Wait(_)
        | Step::Assert(_) => Err(StepError::Failed(format!("{} was not played", step.kind()))),
    }
}

pub(crate) fn fault(world: &World, name: &str, fault: Fault) -> Result<String, StepError> {
    let link = world.link(name)?;
    link.set(fault)?;
    Ok(format!("{name}: {fault}"))
}

/// A check's description for messages (`replica pdx io=Connecting`).
pub(crate) fn describe(check: &Check) -> String {
    serde_json::to_string(check).unwrap_or_else(|_| check.kind().to_owned())
}
