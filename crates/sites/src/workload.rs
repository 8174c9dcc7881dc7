//! The application workload: writers at a set total rate through an address (the group's
//! `primary` link), unique keys into `app.ledger`, each write recorded in a [`Ledger`].
//!
//! [`WorkloadConfig::sessions`] concurrent sessions (one by default) with
//! `session_track_gtids = OWN_GTID` take their writes from one schedule ([`pacer`]): write `n`
//! is due `n / rate` after the first and writes the key `first_key + n`, so the keys are
//! disjoint across sessions and the sessions together keep the rate whatever each one's
//! latency, as long as one is free when a write is due (a session waits for its write's
//! COMMIT: a rate × commit latency of sessions are busy at once). Each write is `BEGIN`,
//! `INSERT` (one round trip), then `COMMIT` (a second), acknowledged only when COMMIT returned
//! OK, with the GTID from that OK packet. A connection error or timeout drops the session; its
//! next write reconnects.
//! [`Workload::stop`] merges the sessions' ledgers into one ([`Ledger::merge`]), which
//! [`ledger::verify`] checks as a whole.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mysql_async::prelude::Queryable as _;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::accounts::{self, APP_SCHEMA, Account, LEDGER_TABLE};
use crate::error::{Result, SitesError};
use crate::ledger::{self, Attempt, FailureKind, Ledger, Outcome, Report, Stage};
use crate::wire::{Session, StatementsError, WireError};

mod pacer;

use pacer::Pacer;

/// How far the schedule may fall behind before missed writes are dropped ([`Pacer`]): after an
/// outage the workload bursts at most this long a stretch of writes.
const SCHEDULE_SLACK: Duration = Duration::from_millis(100);

/// How the workload writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadConfig {
    /// Where to connect (the `primary` link's address).
    pub addr: SocketAddr,
    /// As whom.
    pub account: Account,
    /// Writes per second, all sessions together.
    pub rate_per_sec: u32,
    /// The first key; write `n` of the schedule writes `first_key + n` (one key per attempt;
    /// a write taken from the schedule when the workload stops is not attempted).
    pub first_key: u64,
    /// Concurrent sessions (at least 1) sharing the schedule: enough for `rate_per_sec` times
    /// the commit latency to be in flight at once.
    pub sessions: u32,
    /// The writer's name (stored in each row).
    pub writer: String,
    /// Bound on connecting and on each statement.
    pub op_timeout: Duration,
}

impl WorkloadConfig {
    /// 50 writes/s in one session as the application account, 2 s per operation, keys from 1.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            account: accounts::APPLICATION,
            rate_per_sec: 50,
            first_key: 1,
            sessions: 1,
            writer: "workload".into(),
            op_timeout: Duration::from_secs(2),
        }
    }
}

/// Live counters of a running workload.
#[derive(Debug, Default)]
pub struct Progress {
    /// Acknowledged writes so far.
    pub acknowledged: AtomicU64,
    /// Failed writes so far.
    pub failed: AtomicU64,
}

/// A running workload; [`Workload::stop`] returns its ledger.
#[derive(Debug)]
pub struct Workload {
    stop: watch::Sender<bool>,
    writer: String,
    tasks: Vec<JoinHandle<Ledger>>,
    progress: Arc<Progress>,
}

impl Workload {
    /// Starts writing on the current tokio runtime: [`WorkloadConfig::sessions`] tasks.
    pub fn start(config: WorkloadConfig) -> Self {
        let (stop, stopped) = watch::channel(false);
        let progress = Arc::new(Progress::default());
        let pacer = Arc::new(Mutex::new(Pacer::new(config.rate_per_sec, SCHEDULE_SLACK)));
        let tasks = (0..config.sessions.max(1))
            .map(|_| {
                tokio::spawn(run(
                    config.clone(),
                    Arc::clone(&pacer),
                    stopped.clone(),
                    Arc::clone(&progress),
                ))
            })
            .collect();
        Self { stop, writer: config.writer, tasks, progress }
    }

    /// Acknowledged writes so far.
    pub fn acknowledged(&self) -> u64 {
        self.progress.acknowledged.load(Ordering::Relaxed)
    }

    /// Failed writes so far.
    pub fn failed(&self) -> u64 {
        self.progress.failed.load(Ordering::Relaxed)
    }

    /// Waits until at least `n` writes were acknowledged (bounded).
    pub async fn wait_acknowledged(&self, n: u64, timeout: Duration) -> Result<()> {
        self.wait_for(timeout, &format!("{n} acknowledged writes"), || self.acknowledged() >= n)
            .await
    }

    /// Waits until at least `n` writes failed (bounded).
    pub async fn wait_failed(&self, n: u64, timeout: Duration) -> Result<()> {
        self.wait_for(timeout, &format!("{n} failed writes"), || self.failed() >= n).await
    }

    async fn wait_for(&self, timeout: Duration, what: &str, done: impl Fn() -> bool) -> Result<()> {
        let started = std::time::Instant::now();
        while !done() {
            if started.elapsed() >= timeout {
                return Err(SitesError::Timeout {
                    what: what.to_owned(),
                    waited_ms: started.elapsed().as_millis(),
                    detail: format!(
                        " (acknowledged {}, failed {})",
                        self.acknowledged(),
                        self.failed()
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// Stops after the writes in flight and returns the sessions' ledgers merged into one.
    pub async fn stop(self) -> Result<Ledger> {
        let _ = self.stop.send(true);
        let mut ledgers = Vec::with_capacity(self.tasks.len());
        for task in self.tasks {
            ledgers.push(task.await.map_err(|e| SitesError::Invalid {
                what: "workload task",
                detail: e.to_string(),
            })?);
        }
        Ok(Ledger::merge(self.writer, ledgers))
    }
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn classify(error: &WireError) -> FailureKind {
    match error {
        WireError::Io(_) | WireError::Protocol(_) => FailureKind::Connection,
        WireError::Timeout(_) => FailureKind::Timeout,
        WireError::Server { code, message, .. } => ledger::classify_server_error(*code, message),
    }
}

/// A failure that ends the session (the next write reconnects).
fn drops_session(error: &WireError) -> bool {
    match error {
        WireError::Server { code, .. } => *code == 3032,
        _ => true,
    }
}

async fn connect(config: &WorkloadConfig) -> Result<Session, WireError> {
    let mut s = Session::connect(
        config.addr,
        config.account.user,
        config.account.password,
        Some(APP_SCHEMA),
        config.op_timeout,
    )
    .await?;
    s.query("SET SESSION session_track_gtids = OWN_GTID").await?;
    Ok(s)
}

/// One write in two round trips: `BEGIN; INSERT …` as one query, then `COMMIT`. Acknowledged
/// only with the COMMIT's OK (and its GTID). Any failure before the COMMIT was sent means
/// nothing committed (the open transaction is rolled back, by `ROLLBACK` or by the dropped
/// connection): stage Write. Only a connection error or timeout after the COMMIT was sent
/// leaves the outcome unknown: stage Commit, in doubt. (One round trip for all three would
/// put every connection error — a pool reset, a killed session — in doubt, as the COMMIT may
/// have run; the ledger names exactly the lost writes only when in-doubt writes are the rare
/// ones cut during their COMMIT.)
async fn write_one(session: &mut Session, sql: &str) -> Result<Option<String>, (Stage, WireError)> {
    if let Err(StatementsError { error, .. }) = session.query_statements(&["BEGIN", sql]).await {
        if !drops_session(&error) {
            let _ = session.query("ROLLBACK").await;
        }
        return Err((Stage::Write, error));
    }
    match session.query("COMMIT").await {
        Ok(commit) => Ok(commit.gtids),
        Err(error) => Err((Stage::Commit, error)),
    }
}

/// One session: takes the next write from the shared schedule, waits until it is due, writes.
async fn run(
    config: WorkloadConfig,
    pacer: Arc<Mutex<Pacer>>,
    mut stopped: watch::Receiver<bool>,
    progress: Arc<Progress>,
) -> Ledger {
    let mut ledger = Ledger::new(config.writer.clone());
    let mut session: Option<Session> = None;
    loop {
        // A poisoned lock only means another session panicked holding it; the schedule is a
        // counter and an instant, never half-updated.
        let (ticket, due) =
            pacer.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take(Instant::now());
        tokio::select! {
            () = tokio::time::sleep_until(due.into()) => {}
            _ = stopped.changed() => break,
        }
        if *stopped.borrow() {
            break;
        }
        let started_at = SystemTime::now();
        let this_key = config.first_key + ticket;
        let outcome = match session.as_mut() {
            Some(_) => Ok(()),
            None => match connect(&config).await {
                Ok(s) => {
                    session = Some(s);
                    Ok(())
                }
                Err(e) => Err((Stage::Connect, e)),
            },
        };
        let result = match (outcome, session.as_mut()) {
            (Ok(()), Some(s)) => {
                let sql = format!(
                    "INSERT INTO `{LEDGER_TABLE}` (k, writer, written_at_us) VALUES ({this_key}, '{}', {})",
                    config.writer.replace('\'', "''"),
                    now_us()
                );
                write_one(s, &sql).await
            }
            (Err(e), _) => Err(e),
            (Ok(()), None) => Err((Stage::Connect, WireError::Protocol("no session".into()))),
        };
        let ended_at = SystemTime::now();
        let outcome = match result {
            Ok(gtid) => {
                progress.acknowledged.fetch_add(1, Ordering::Relaxed);
                Outcome::Acknowledged { gtid: gtid.and_then(|g| g.trim().parse().ok()) }
            }
            Err((stage, e)) => {
                progress.failed.fetch_add(1, Ordering::Relaxed);
                if drops_session(&e) {
                    session = None;
                }
                tracing::debug!(key = this_key, ?stage, error = %e, "workload write failed");
                Outcome::Failed { kind: classify(&e), stage, detail: e.to_string() }
            }
        };
        ledger.record(Attempt { key: this_key, started_at, ended_at, outcome });
    }
    ledger
}

/// Reads every key of `app.ledger` at `addr` as `account` (over a proxy link or directly).
pub async fn read_site_keys(addr: SocketAddr, account: &Account) -> Result<Vec<u64>> {
    let target = addr.to_string();
    let mut conn = mysql_async::Conn::new(accounts::opts(account, addr, Some(APP_SCHEMA)))
        .await
        .map_err(|e| SitesError::mysql("connecting to read the ledger table", &target, e))?;
    let sql = format!("SELECT k FROM `{LEDGER_TABLE}`");
    let keys: Vec<u64> = conn.query(&sql).await.map_err(|e| SitesError::mysql(&sql, &target, e))?;
    let _ = conn.disconnect().await;
    Ok(keys)
}

/// Reads the site's keys and [`ledger::verify`]s the ledger against them.
pub async fn verify_at(ledger: &Ledger, addr: SocketAddr, account: &Account) -> Result<Report> {
    let keys = read_site_keys(addr, account).await?;
    Ok(ledger::verify(ledger, &keys))
}
