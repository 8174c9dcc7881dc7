//! Playing a drill against a group of real MySQL sites (the `sites` star harness) and
//! recording the timeline. Drills that need the operator are refused here until it exists.

mod checks;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bloodraven_gtid::GtidSet;
use bloodraven_sites::SitesError;
use bloodraven_sites::group::{Group, GroupSpec};
use bloodraven_sites::ledger::Ledger;
use bloodraven_sites::proxy::{Fault, Link};
use bloodraven_sites::workload::{Workload, WorkloadConfig};

use crate::error::DrillError;
use crate::load::LoadedDrill;
use crate::model::{Check, Step};
use crate::report::{Report, StepRecord};

/// How a drill is run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The operator binary; drills with `requires: [operator]` are refused without it.
    pub operator_bin: Option<PathBuf>,
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
    /// A check did not hold, or a step cannot run here.
    #[error("{0}")]
    Failed(String),
}

/// The state of the world along the timeline.
#[derive(Default)]
pub(crate) struct World {
    pub(crate) group: Option<Group>,
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

    fn link(&self, name: &str) -> Result<Link, StepError> {
        self.group()?
            .hub()
            .get(name)
            .ok_or_else(|| StepError::Failed(format!("no link {name:?} in this group")))
    }
}

/// Bound on one site control (stop, restart).
const SITE_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs a validated drill. `Err` only when the drill cannot run here at all (it needs the
/// operator); a failing step ends the run and is reported in the [`Report`]. Every mysqld and
/// link the drill started is gone when this returns.
pub async fn run(drill: &LoadedDrill, options: &RunOptions) -> Result<Report, DrillError> {
    if drill.requires_operator() {
        let message = match &options.operator_bin {
            None => format!(
                "drill {:?} requires the operator (`requires: [operator]`); pass \
                 --operator-bin PATH to run it",
                drill.drill.name
            ),
            Some(bin) => format!(
                "drill {:?} requires the operator; --operator-bin {} was given, but the live \
                 lab cannot start an operator yet (the operator issue adds it)",
                drill.drill.name,
                bin.display()
            ),
        };
        return Err(DrillError::Refused { file: drill.path.clone(), message });
    }
    let started = Instant::now();
    let mut world = World::default();
    let mut records = Vec::new();
    let mut error = None;
    for (index, step) in drill.drill.steps.iter().enumerate() {
        let at = started.elapsed();
        let remaining = drill.timeout.saturating_sub(at);
        let result = match tokio::time::timeout(remaining, play(drill, &mut world, step)).await {
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

async fn play(drill: &LoadedDrill, world: &mut World, step: &Step) -> Result<String, StepError> {
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
        Step::StopWorkload(_) => {
            let (name, w) = world
                .workload
                .take()
                .ok_or_else(|| StepError::Failed("no workload runs".into()))?;
            let ledger = w.stop().await?;
            let acked = ledger.acknowledged().count();
            let detail = format!(
                "workload {name:?} stopped: {} attempts, {acked} acknowledged",
                ledger.attempts.len()
            );
            world.ledgers.insert(name, ledger);
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
        Step::Cut(l) => fault(world, &l.link, Fault::Blackhole),
        Step::Refuse(l) => fault(world, &l.link, Fault::Refuse),
        Step::Delay(d) => fault(world, &d.link, Fault::Delay { ms: d.ms }),
        Step::Heal(l) => fault(world, &l.link, Fault::Pass),
        Step::Reset(l) => {
            let link = world.link(&l.link)?;
            let n = link.live_connections();
            link.reset();
            Ok(format!("{}: {n} live connections reset", l.link))
        }
        Step::ErrantWrite(e) => {
            let instance = &world.group()?.site(&e.site)?.instance;
            let before = instance.gtid_executed().await?;
            let fenced = instance.flags().await?.super_read_only;
            let insert = format!(
                "INSERT INTO app.ledger (k, writer, written_at_us) VALUES ({}, 'errant', 0)",
                e.key
            );
            let mut statements = vec!["SET GLOBAL super_read_only = OFF", insert.as_str()];
            if fenced {
                statements.push("SET GLOBAL super_read_only = ON");
            }
            instance.execute(&statements).await?;
            let errant = instance.gtid_executed().await?.difference(&before);
            let detail = format!("errant write of key {} on {}: {errant}", e.key, e.site);
            if let Some(name) = &e.name {
                world.recorded.insert(name.clone(), errant);
            }
            Ok(detail)
        }
        Step::Fence(s) => {
            world.group()?.site(&s.site)?.instance.set_super_read_only(true).await?;
            Ok(format!("{} fenced (super_read_only=ON)", s.site))
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
        Step::Sleep(s) => {
            let d = s.duration.to_std().map_err(|e| StepError::Failed(e.to_string()))?;
            tokio::time::sleep(d).await;
            Ok(format!("slept {}", s.duration))
        }
        Step::Annotate(_) | Step::Patch(_) => Err(StepError::Failed(
            "needs the lab API server of the operator's world, which this run lacks".into(),
        )),
        Step::Wait(w) => {
            let timeout = w.timeout.to_std().map_err(|e| StepError::Failed(e.to_string()))?;
            checks::wait(world, &w.until, timeout).await
        }
        Step::Assert(c) => checks::assert(world, c).await,
    }
}

fn fault(world: &World, name: &str, fault: Fault) -> Result<String, StepError> {
    let link = world.link(name)?;
    link.set(fault)?;
    Ok(format!("{name}: {fault}"))
}

/// A check's description for messages (`replica pdx io=Connecting`).
pub(crate) fn describe(check: &Check) -> String {
    serde_json::to_string(check).unwrap_or_else(|_| check.kind().to_owned())
}
