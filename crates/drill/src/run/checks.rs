//! `wait` and `assert`: evaluate a check against the world, saying what was seen.

use std::time::{Duration, Instant};

use bloodraven_gtid::GtidSet;
use bloodraven_sites::accounts::APPLICATION;
use bloodraven_sites::ledger::FailureKind;
use bloodraven_sites::workload::verify_at;
use mysql_async::prelude::Queryable as _;

use super::{StepError, World, describe};
use crate::model::{Check, FailureKindName, GtidRelation, GtidSource, WorkloadCheck};

/// Bound on one evaluation: a frozen site must not hang the drill.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Pause between evaluations of a `wait`.
const POLL: Duration = Duration::from_millis(200);

/// What one evaluation found.
pub(super) struct Seen {
    pub(super) holds: bool,
    pub(super) seen: String,
}

/// Workload counters when a step began (for `wait: {until: {workload: …}}`).
#[derive(Clone, Copy, Default)]
struct Base {
    acknowledged: u64,
    failed: u64,
}

pub(super) async fn wait(
    world: &World,
    check: &Check,
    timeout: Duration,
) -> Result<String, StepError> {
    let base = match &world.workload {
        Some((_, w)) => Base { acknowledged: w.acknowledged(), failed: w.failed() },
        None => Base::default(),
    };
    let started = Instant::now();
    loop {
        let last = match probe(world, check, base).await {
            Ok(s) if s.holds => {
                return Ok(format!(
                    "{} after {:.1?}: {}",
                    describe(check),
                    started.elapsed(),
                    s.seen
                ));
            }
            Ok(s) => s.seen,
            Err(e) => e.to_string(),
        };
        if started.elapsed() >= timeout {
            return Err(StepError::Failed(format!(
                "waited {timeout:?} for {}, last seen: {last}",
                describe(check)
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// How long an `assert` on an Event that must exist waits for it: the operator writes its
/// status record first and the Event that reports it after (a record before each side
/// effect), so an Event may land a moment after the status a `wait` saw.
const EVENT_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

pub(super) async fn assert(world: &World, check: &Check) -> Result<String, StepError> {
    let mut s = probe(world, check, Base::default()).await?;
    if let Check::Event(event) = check
        && !event.absent.unwrap_or(false)
    {
        let deadline = tokio::time::Instant::now() + EVENT_GRACE;
        while !s.holds && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            s = probe(world, check, Base::default()).await?;
        }
    }
    if s.holds {
        Ok(format!("{} holds: {}", describe(check), s.seen))
    } else {
        Err(StepError::Failed(format!("expected {}, saw: {}", describe(check), s.seen)))
    }
}

async fn probe(world: &World, check: &Check, base: Base) -> Result<Seen, StepError> {
    match tokio::time::timeout(PROBE_TIMEOUT, evaluate(world, check, base)).await {
        Ok(r) => r,
        Err(_) => Ok(Seen { holds: false, seen: format!("no answer within {PROBE_TIMEOUT:?}") }),
    }
}

async fn gtids(world: &World, source: &GtidSource) -> Result<GtidSet, StepError> {
    match source {
        GtidSource::Site(site) => world.gtid_executed(site).await,
        GtidSource::Recorded(name) => world
            .recorded
            .get(name)
            .cloned()
            .ok_or_else(|| StepError::Failed(format!("nothing recorded as {name:?}"))),
    }
}

fn kind(name: FailureKindName) -> FailureKind {
    match name {
        FailureKindName::SuperReadOnly => FailureKind::SuperReadOnly,
        FailureKindName::ReadOnly => FailureKind::ReadOnly,
        FailureKindName::OfflineMode => FailureKind::OfflineMode,
        FailureKindName::Connection => FailureKind::Connection,
        FailureKindName::Timeout => FailureKind::Timeout,
        FailureKindName::Server => FailureKind::Server,
    }
}

async fn evaluate(world: &World, check: &Check, base: Base) -> Result<Seen, StepError> {
    match check {
        Check::Replica(c) => {
            let st = world.replica_status(&c.site).await?;
            let Some(st) = st else {
                return Ok(Seen { holds: false, seen: format!("{}: no replication", c.site) });
            };
            let source_port = match &c.source {
                Some(source) => Some(world.source_addr(&c.site, source)?.port()),
                None => None,
            };
            let holds = c.io.is_none_or(|io| st.io_running == io.as_str())
                && c.sql.is_none_or(|sql| st.sql_running == sql.as_str())
                && source_port.is_none_or(|port| st.source_port == port);
            Ok(Seen {
                holds,
                seen: format!(
                    "{}: source port {} io={} sql={} io_state={:?} last_io_errno={} behind={:?}",
                    c.site,
                    st.source_port,
                    st.io_running,
                    st.sql_running,
                    st.io_state,
                    st.last_io_errno,
                    st.seconds_behind_source
                ),
            })
        }
        Check::CaughtUp(c) => {
            let with = match &c.with {
                Some(with) => with.clone(),
                None => world.primary()?,
            };
            let want = world.gtid_executed(&with).await?;
            let have = world.gtid_executed(&c.site).await?;
            let missing = want.difference(&have);
            Ok(Seen {
                holds: missing.is_empty(),
                seen: if missing.is_empty() {
                    format!("{} has all of {with}'s {want}", c.site)
                } else {
                    format!("{} lacks {missing} of {with}", c.site)
                },
            })
        }
        Check::Flags(c) => {
            let f = world.flags(&c.site).await?;
            let holds = c.read_only.is_none_or(|v| v == f.read_only)
                && c.super_read_only.is_none_or(|v| v == f.super_read_only)
                && c.offline_mode.is_none_or(|v| v == f.offline_mode);
            Ok(Seen {
                holds,
                seen: format!(
                    "{}: read_only={} super_read_only={} offline_mode={}",
                    c.site, f.read_only, f.super_read_only, f.offline_mode
                ),
            })
        }
        Check::Gtid(c) => {
            let a = gtids(world, &c.a).await?;
            let b = gtids(world, &c.b).await?;
            let holds = match c.relation {
                GtidRelation::Subset => a.is_subset(&b),
                GtidRelation::NotSubset => !a.is_subset(&b),
                GtidRelation::Superset => a.is_superset(&b),
                GtidRelation::Equal => a == b,
            };
            Ok(Seen { holds, seen: format!("a={a} b={b} a-b={}", a.difference(&b)) })
        }
        Check::GtidSubtract(c) => {
            let a = gtids(world, &c.a).await?;
            let b = gtids(world, &c.b).await?;
            let want = match &c.equals {
                Some(e) => gtids(world, e).await?,
                None => GtidSet::new(),
            };
            let mut conn = world.admin_conn(&c.on).await?;
            let sql = format!("SELECT GTID_SUBTRACT('{a}', '{b}')");
            let got: Option<String> = conn
                .query_first(sql.as_str())
                .await
                .map_err(|e| StepError::Failed(format!("{sql} on {}: {e}", c.on)))?;
            let _ = conn.disconnect().await;
            let text = got.unwrap_or_default();
            let parsed: GtidSet = text
                .replace('\n', "")
                .parse()
                .map_err(|e| StepError::Failed(format!("GTID_SUBTRACT gave {text:?}: {e}")))?;
            Ok(Seen {
                holds: parsed == want,
                seen: format!(
                    "GTID_SUBTRACT on {} = {:?} (want {:?})",
                    c.on,
                    parsed.to_string(),
                    want.to_string()
                ),
            })
        }
        Check::Workload(c) => workload(world, c, base),
        Check::Ledger(c) => {
            let name = c.ledger.as_deref().unwrap_or(crate::DEFAULT_WORKLOAD);
            let ledger = world
                .ledgers
                .get(name)
                .ok_or_else(|| StepError::Failed(format!("no stopped ledger {name:?}")))?;
            let site = match &c.site {
                Some(site) => site.clone(),
                None => world.primary()?,
            };
            // Failure counts come from the ledger alone: no site needs to answer for them.
            let reads_site =
                c.rpo_zero.is_some() || c.lost_equals.is_some() || c.lost_within.is_some();
            let report = if reads_site {
                verify_at(ledger, world.app_addr(&site)?, &APPLICATION).await?
            } else {
                bloodraven_sites::ledger::verify(ledger, &[])
            };
            let mut problems = Vec::new();
            if let Some(want) = c.rpo_zero
                && report.rpo_zero() != want
            {
                problems.push(format!("rpoZero is {}", report.rpo_zero()));
            }
            if let Some(d) = &c.lost_equals {
                let of = gtids(world, &GtidSource::Recorded(d.of.clone())).await?;
                let minus = gtids(world, &GtidSource::Recorded(d.minus.clone())).await?;
                let want = of.difference(&minus);
                let lost = report.lost_gtids();
                if lost != want {
                    problems.push(format!(
                        "lost GTIDs {lost}, expected {} - {} = {want}",
                        d.of, d.minus
                    ));
                }
            }
            if let Some(d) = &c.lost_within {
                let of = gtids(world, &GtidSource::Recorded(d.of.clone())).await?;
                let minus = gtids(world, &GtidSource::Recorded(d.minus.clone())).await?;
                let allowed = of.difference(&minus);
                let outside = report.lost_gtids().difference(&allowed);
                let unknown = report.lost.iter().filter(|lost| lost.gtid.is_none()).count();
                if !outside.is_empty() || unknown > 0 {
                    problems.push(format!(
                        "lost GTIDs outside {} - {} = {allowed}: {outside} (and {unknown} lost \
                         writes without a GTID)",
                        d.of, d.minus
                    ));
                }
            }
            for (name, n) in &c.failures_at_least {
                let got = report.failures.get(&kind(*name)).copied().unwrap_or(0);
                if got < *n {
                    problems.push(format!("{name:?} failures {got} < {n}"));
                }
            }
            for (name, n) in &c.failures_at_most {
                let got = report.failures.get(&kind(*name)).copied().unwrap_or(0);
                if got > *n {
                    problems.push(format!("{name:?} failures {got} > {n}"));
                }
            }
            let found = if reads_site {
                // Every acknowledged write the site lacks is listed: key and GTID.
                let lost: Vec<String> = report
                    .lost
                    .iter()
                    .map(|lost| match &lost.gtid {
                        Some(gtid) => format!("key {} ({gtid})", lost.key),
                        None => format!("key {}", lost.key),
                    })
                    .collect();
                format!(
                    "on {site}: {} present, {} lost [{}] ({}), {} in doubt, ",
                    report.present,
                    report.lost.len(),
                    lost.join(", "),
                    report.lost_gtids(),
                    report.in_doubt.len()
                )
            } else {
                String::new()
            };
            let seen = format!(
                "ledger {name:?}: {} acknowledged, {found}failures {:?}{}",
                report.acknowledged,
                report.failures,
                if problems.is_empty() {
                    String::new()
                } else {
                    format!("; {}", problems.join("; "))
                }
            );
            Ok(Seen { holds: problems.is_empty(), seen })
        }
        Check::Status(c) => super::status::status(world.live()?, c),
        Check::Event(c) => Ok(super::status::event(world.live()?, c)),
        Check::Converged(c) => Ok(super::status::converged(world.live()?, c)),
        Check::Outcome(c) => Ok(super::status::outcome(world.live()?, c)),
    }
}

fn workload(world: &World, c: &WorkloadCheck, base: Base) -> Result<Seen, StepError> {
    let (name, w) =
        world.workload.as_ref().ok_or_else(|| StepError::Failed("no workload runs".into()))?;
    let acked = w.acknowledged().saturating_sub(base.acknowledged);
    let failed = w.failed().saturating_sub(base.failed);
    let holds = c.acknowledged.is_none_or(|n| acked >= n) && c.failed.is_none_or(|n| failed >= n);
    Ok(Seen { holds, seen: format!("workload {name:?}: +{acked} acknowledged, +{failed} failed") })
}
