//! Apply: the MySQL side of the planned steps (fence, promote, repoint), each statement bounded
//! and each flag read back. The Kubernetes side (status, Services, labels) is in `manager`.

use bloodraven_facts::Unreachable;
use bloodraven_gtid::GtidSet;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Pool};
use std::time::Duration;

use crate::observe::{self, Bounds};
use crate::sql;

/// Why a MySQL step failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The site could not be reached or answered with an error.
    #[error("site {site}: {action} failed ({why}); the next poll observes and retries")]
    Site {
        /// The site.
        site: String,
        /// What was being done.
        action: &'static str,
        /// Refused, timed out or an error answer.
        why: Unreachable,
    },
    /// A flag did not read back as set.
    #[error(
        "site {site}: after {action}, read_only={read_only} super_read_only={super_read_only}; \
         check the server's error log"
    )]
    ReadBack {
        /// The site.
        site: String,
        /// What was being done.
        action: &'static str,
        /// `read_only` as read back.
        read_only: bool,
        /// `super_read_only` as read back.
        super_read_only: bool,
    },
    /// The receiver thread did not stop within the bound (its source does not answer); the
    /// stuck `STOP REPLICA IO_THREAD` session was killed, the server finishes the stop.
    #[error(
        "site {site}: the replication receiver is still stopping (its source does not \
         answer); the next poll retries the repoint"
    )]
    ReceiverStopping {
        /// The follower.
        site: String,
    },
    /// The candidate's applier did not execute, within the catch-up bound, every transaction
    /// its receiver had written to the relay log: promoting now would drop them from the new
    /// history (and the failed primary would read as diverged later). Not promoted; the
    /// receiver stays stopped and the applier keeps applying until the next poll waits again.
    #[error(
        "site {site}: {count} received transaction(s) not applied yet ({missing}) after \
         waiting {waited:?}; not promoted, the next poll waits again{hint}"
    )]
    ApplierBehind {
        /// The candidate.
        site: String,
        /// The received transactions it has not executed.
        missing: GtidSet,
        /// How many they are.
        count: u128,
        /// The catch-up bound it waited.
        waited: Duration,
        /// What the applier reports (`Last_SQL_Error`), as a sentence, or nothing.
        hint: String,
    },
    /// The follower gained transactions the primary lacks while its applier ran.
    #[error(
        "site {site}: after STOP REPLICA it holds {divergent} that the primary lacks; not \
         repointed (its transactions are kept; the next poll reports it Blocked)"
    )]
    NotContained {
        /// The follower.
        site: String,
        /// What the primary lacks.
        divergent: GtidSet,
    },
}

fn site_error(site: &str, action: &'static str) -> impl FnOnce(Unreachable) -> ApplyError {
    let site = site.to_owned();
    move |why| ApplyError::Site { site, action, why }
}

/// `SET GLOBAL super_read_only = ON`, read back.
pub async fn fence(pool: &Pool, site: &str, bounds: Bounds) -> Result<(), ApplyError> {
    let mut conn = observe::connect(pool, bounds).await.map_err(site_error(site, "fence"))?;
    observe::exec(&mut conn, sql::FENCE, bounds).await.map_err(site_error(site, "fence"))?;
    let (read_only, super_read_only, _, _) =
        observe::read_flags(&mut conn, bounds).await.map_err(site_error(site, "fence"))?;
    if !super_read_only {
        return Err(ApplyError::ReadBack {
            site: site.to_owned(),
            action: "fence",
            read_only,
            super_read_only,
        });
    }
    Ok(())
}

/// How long a promotion waits for the receiver to stop: not long; a receiver stuck on a frozen
/// source stops in the server by `replica_net_timeout`, and nothing it could still receive
/// from a frozen source is waited for.
pub(crate) const PROMOTE_RECEIVER_BOUND: Duration = Duration::from_millis(500);

/// The bounds of a promotion (the topology manager's `Tuning::promote`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PromoteTimings {
    /// How long `STOP REPLICA IO_THREAD` may take before its session is killed and the
    /// promotion goes on with the receiver still stopping (a frozen source).
    pub receiver_stop: Duration,
    /// How long, per attempt, the applier gets to execute what the receiver wrote to the relay
    /// log before the site is made writable (`WAIT_FOR_EXECUTED_GTID_SET`, whole seconds).
    /// When it elapses the site is not promoted ([`ApplyError::ApplierBehind`]) and the next
    /// poll waits again.
    pub applier_catch_up: Duration,
}

impl PromoteTimings {
    /// The defaults: the receiver bound above, and 30 s of catch-up per attempt (the backup
    /// document's catch-up bound for peers of an in-place restore; the topology document
    /// names none).
    pub const fn document() -> Self {
        Self { receiver_stop: PROMOTE_RECEIVER_BOUND, applier_catch_up: Duration::from_secs(30) }
    }
}

impl Default for PromoteTimings {
    fn default() -> Self {
        Self::document()
    }
}

/// What a promotion must have applied before the site takes writes: what the receiver wrote to
/// the relay log (`received`) that the site has not executed, less the transaction the receiver
/// was in the middle of when it stopped (`queueing`: never complete in the relay log, so the
/// applier cannot apply it). Empty: nothing to wait for. Pure.
pub fn backlog(executed: &GtidSet, received: &GtidSet, queueing: &GtidSet) -> GtidSet {
    received.difference(queueing).difference(executed)
}

/// Whether a site whose relay log held `backlog` may be made writable now that it executed
/// `executed`: yes once every backlog transaction is executed; otherwise what is still
/// missing. Pure.
pub fn missing_after_catch_up(backlog: &GtidSet, executed: &GtidSet) -> Option<GtidSet> {
    let missing = backlog.difference(executed);
    (!missing.is_empty()).then_some(missing)
}

/// How a bounded stop of replication ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// Both threads stopped.
    Both,
    /// The applier stopped; the receiver's stop outlasted the bound (a frozen source) and goes
    /// on in the server. Nothing more is applied.
    ApplierOnly,
}

/// Stops replication within the bounds: the applier (`STOP REPLICA SQL_THREAD`) first, then the
/// receiver (`STOP REPLICA IO_THREAD`). A statement that outlasts the bound is not left
/// holding the session: it is killed from a second connection (`KILL <id>` shuts its socket at
/// once), and `conn` is replaced by a fresh one, so neither this step nor the next poll waits
/// on it.
pub(crate) async fn stop_replication(
    pool: &Pool,
    conn: &mut Conn,
    site: &str,
    action: &'static str,
    bounds: Bounds,
    receiver_bound: Duration,
) -> Result<Stopped, ApplyError> {
    for (statement, receiver, bound) in [
        (sql::STOP_REPLICA_SQL_THREAD, false, bounds.query),
        (sql::STOP_REPLICA_IO_THREAD, true, receiver_bound),
    ] {
        let finished = run_bounded(pool, conn, site, action, statement, bound, bounds).await?;
        if !finished {
            if receiver {
                return Ok(Stopped::ApplierOnly);
            }
            return Err(site_error(site, action)(Unreachable::Timeout));
        }
    }
    Ok(Stopped::Both)
}

/// Runs `statement` on `conn` within `bound`: `Ok(true)` when it finished, `Ok(false)` when the
/// bound elapsed, in which case its session was killed from a second connection (`KILL <id>`
/// shuts its socket at once) and `conn` replaced by a fresh one.
async fn run_bounded(
    pool: &Pool,
    conn: &mut Conn,
    site: &str,
    action: &'static str,
    statement: &str,
    bound: Duration,
    bounds: Bounds,
) -> Result<bool, ApplyError> {
    let id = conn.id();
    match tokio::time::timeout(bound, conn.query_drop(statement)).await {
        Ok(Ok(())) => Ok(true),
        Ok(Err(error)) => Err(site_error(site, action)(observe::classify_error(&error))),
        Err(_) => {
            tracing::info!(site, statement, id, "bound elapsed; killing the stuck session");
            if let Ok(mut other) = observe::connect(pool, bounds).await
                && let Err(why) = observe::exec(&mut other, &sql::kill(id), bounds).await
            {
                tracing::info!(site, id, ?why, "KILL of the stuck session failed");
            }
            *conn = observe::connect(pool, bounds).await.map_err(site_error(site, action))?;
            Ok(false)
        }
    }
}

/// Promotes `site`: the receiver stopped first (`STOP REPLICA IO_THREAD`, bounded; a receiver
/// stuck on a frozen source is left stopping), then what it had written to the relay log
/// applied (the applier started if someone stopped it, `WAIT_FOR_EXECUTED_GTID_SET` within
/// `timings.applier_catch_up`), then the applier stopped, `super_read_only` and `read_only`
/// cleared and read back. Returns the executed set at promotion. A site that does not catch up
/// within the bound is not made writable ([`ApplyError::ApplierBehind`]): promoting it would
/// drop transactions it had received.
pub async fn promote(
    pool: &Pool,
    site: &str,
    bounds: Bounds,
    timings: PromoteTimings,
) -> Result<GtidSet, ApplyError> {
    let error = |why| site_error(site, "promote")(why);
    let mut conn = observe::connect(pool, bounds).await.map_err(error)?;
    let receiver_bound = bounds.query.min(timings.receiver_stop);
    let stopped = run_bounded(
        pool,
        &mut conn,
        site,
        "promote",
        sql::STOP_REPLICA_IO_THREAD,
        receiver_bound,
        bounds,
    )
    .await?;
    if !stopped {
        tracing::info!(site, "promoting with the receiver still stopping (frozen source)");
    }
    catch_up(pool, &mut conn, site, bounds, timings.applier_catch_up).await?;
    if !run_bounded(
        pool,
        &mut conn,
        site,
        "promote",
        sql::STOP_REPLICA_SQL_THREAD,
        bounds.query,
        bounds,
    )
    .await?
    {
        return Err(error(Unreachable::Timeout));
    }
    for statement in sql::UNFENCE {
        observe::exec(&mut conn, statement, bounds).await.map_err(error)?;
    }
    let (read_only, super_read_only, _, gtid) =
        observe::read_flags(&mut conn, bounds).await.map_err(error)?;
    if read_only || super_read_only {
        return Err(ApplyError::ReadBack {
            site: site.to_owned(),
            action: "promote",
            read_only,
            super_read_only,
        });
    }
    Ok(gtid)
}

/// Applies what the (stopped) receiver wrote to the relay log: reads the received set, starts
/// the applier when it is off and something is to be applied, waits within `catch_up`, and
/// checks the executed set read after the wait ([`missing_after_catch_up`]).
async fn catch_up(
    pool: &Pool,
    conn: &mut Conn,
    site: &str,
    bounds: Bounds,
    catch_up: Duration,
) -> Result<(), ApplyError> {
    let error = |why| site_error(site, "promote")(why);
    let rows = observe::rows(conn, sql::READ_RECEIVED, bounds).await.map_err(error)?;
    // No row: no replication channel, nothing received.
    let Some(row) = rows.into_iter().next() else { return Ok(()) };
    let text = |index: usize| row.get::<Option<String>, usize>(index).flatten().unwrap_or_default();
    let received = observe::parse_gtid(&text(0)).map_err(error)?;
    let queueing = observe::parse_gtid(&text(1)).map_err(error)?;
    let applier_on = text(2) == "ON";
    let executed = read_executed(conn, bounds).await.map_err(error)?;
    let backlog = backlog(&executed, &received, &queueing);
    if backlog.is_empty() {
        return Ok(());
    }
    tracing::info!(
        site, count = backlog.count(), %backlog, applier_on,
        "applying what the receiver wrote to the relay log before promoting"
    );
    if !applier_on {
        observe::exec(conn, sql::START_REPLICA_SQL_THREAD, bounds).await.map_err(error)?;
    }
    let wait = sql::wait_for_executed(&backlog, catch_up);
    // The server gives up after `catch_up` (rounded up to whole seconds); the client bound
    // leaves it that and one query bound more before killing the session.
    let client_bound = catch_up + Duration::from_secs(1) + bounds.query;
    run_bounded(pool, conn, site, "promote", &wait, client_bound, bounds).await?;
    let executed = read_executed(conn, bounds).await.map_err(error)?;
    let Some(missing) = missing_after_catch_up(&backlog, &executed) else { return Ok(()) };
    let hint = match observe::read_site(conn, bounds).await {
        Ok(reading) => match reading.replica {
            Some(replica) if !replica.last_sql_error.is_empty() => format!(
                "; its applier reports: {} (fix it and START REPLICA SQL_THREAD, or promote \
                 another site by hand knowing these transactions are lost)",
                replica.last_sql_error
            ),
            _ => String::new(),
        },
        Err(_) => String::new(),
    };
    Err(ApplyError::ApplierBehind {
        site: site.to_owned(),
        count: missing.count(),
        missing,
        waited: catch_up,
        hint,
    })
}

async fn read_executed(conn: &mut Conn, bounds: Bounds) -> Result<GtidSet, Unreachable> {
    let rows = observe::rows(conn, sql::READ_GTID_EXECUTED, bounds).await?;
    let row = rows.into_iter().next().ok_or(Unreachable::Error)?;
    observe::parse_gtid(&row.get::<String, usize>(0).unwrap_or_default())
}

/// Repoints `follower` at the primary: `STOP REPLICA`, the containment re-check against the
/// primary's set read after the stop (the applier race), `CHANGE REPLICATION SOURCE TO …`,
/// `START REPLICA`. A follower that is no longer contained stays stopped, its transactions
/// kept.
pub async fn repoint(
    follower_pool: &Pool,
    follower: &str,
    primary_pool: &Pool,
    target: &sql::SourceTarget<'_>,
    bounds: Bounds,
) -> Result<(), ApplyError> {
    let mut conn =
        observe::connect(follower_pool, bounds).await.map_err(site_error(follower, "repoint"))?;
    if stop_replication(follower_pool, &mut conn, follower, "repoint", bounds, bounds.query).await?
        == Stopped::ApplierOnly
    {
        return Err(ApplyError::ReceiverStopping { site: follower.to_owned() });
    }
    let (_, _, _, follower_set) =
        observe::read_flags(&mut conn, bounds).await.map_err(site_error(follower, "repoint"))?;
    let mut primary =
        observe::connect(primary_pool, bounds).await.map_err(site_error(follower, "repoint"))?;
    let (_, _, _, primary_set) =
        observe::read_flags(&mut primary, bounds).await.map_err(site_error(follower, "repoint"))?;
    let divergent = follower_set.difference(&primary_set);
    if !divergent.is_empty() {
        return Err(ApplyError::NotContained { site: follower.to_owned(), divergent });
    }
    observe::exec(&mut conn, &sql::change_source(target), bounds)
        .await
        .map_err(site_error(follower, "repoint"))?;
    observe::exec(&mut conn, sql::START_REPLICA, bounds)
        .await
        .map_err(site_error(follower, "repoint"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> GtidSet {
        text.parse().unwrap()
    }

    const A: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

    #[test]
    fn the_backlog_is_what_was_received_and_not_executed() {
        let executed = set(&format!("{A}:1-80"));
        // Nothing received beyond the executed set: nothing to wait for.
        assert!(backlog(&executed, &set(&format!("{A}:1-80")), &GtidSet::new()).is_empty());
        assert!(backlog(&executed, &GtidSet::new(), &GtidSet::new()).is_empty());
        // A relay backlog.
        assert_eq!(
            backlog(&executed, &set(&format!("{A}:1-100")), &GtidSet::new()),
            set(&format!("{A}:81-100"))
        );
        // The transaction the receiver was in the middle of is never complete: not waited for.
        assert_eq!(
            backlog(&executed, &set(&format!("{A}:1-100")), &set(&format!("{A}:100"))),
            set(&format!("{A}:81-99"))
        );
    }

    #[test]
    fn a_site_is_made_writable_only_once_its_backlog_is_executed() {
        let backlog = set(&format!("{A}:81-100"));
        assert_eq!(missing_after_catch_up(&backlog, &set(&format!("{A}:1-100"))), None);
        assert_eq!(missing_after_catch_up(&GtidSet::new(), &set(&format!("{A}:1-5"))), None);
        assert_eq!(
            missing_after_catch_up(&backlog, &set(&format!("{A}:1-90"))),
            Some(set(&format!("{A}:91-100")))
        );
        // The multi-threaded applier may commit out of order: a gap is still missing.
        assert_eq!(
            missing_after_catch_up(&backlog, &set(&format!("{A}:1-85:87-100"))),
            Some(set(&format!("{A}:86")))
        );
    }

    #[test]
    fn the_promote_timings_default_to_the_documented_bounds() {
        let timings = PromoteTimings::default();
        assert_eq!(timings.receiver_stop, PROMOTE_RECEIVER_BOUND);
        assert_eq!(timings.applier_catch_up, Duration::from_secs(30));
    }

    #[test]
    fn an_applier_behind_names_what_it_lacks_and_what_happens_next() {
        let error = ApplyError::ApplierBehind {
            site: "pdx".to_owned(),
            missing: set(&format!("{A}:91-100")),
            count: 10,
            waited: Duration::from_secs(30),
            hint: String::new(),
        };
        assert_eq!(
            error.to_string(),
            format!(
                "site pdx: 10 received transaction(s) not applied yet ({A}:91-100) after \
                 waiting 30s; not promoted, the next poll waits again"
            )
        );
    }

    #[test]
    fn a_failed_step_names_the_cause_in_words() {
        let error =
            ApplyError::Site { site: "pdx".to_owned(), action: "fence", why: Unreachable::Timeout };
        assert_eq!(
            error.to_string(),
            "site pdx: fence failed (no answer within the poll's bound); the next poll observes \
             and retries"
        );
    }
}
