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

/// How long a promotion waits for the receiver to stop: not long, since the stopped applier
/// already guarantees nothing more is applied; a receiver stuck on a frozen source stops in the
/// server by `replica_net_timeout`.
pub(crate) const PROMOTE_RECEIVER_BOUND: Duration = Duration::from_millis(500);

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
        let id = conn.id();
        match tokio::time::timeout(bound, conn.query_drop(statement)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                return Err(site_error(site, action)(observe::classify_error(&error)));
            }
            Err(_) => {
                tracing::info!(site, statement, id, "bound elapsed; killing the stuck session");
                if let Ok(mut other) = observe::connect(pool, bounds).await
                    && let Err(why) = observe::exec(&mut other, &sql::kill(id), bounds).await
                {
                    tracing::info!(site, id, ?why, "KILL of the stuck session failed");
                }
                *conn = observe::connect(pool, bounds).await.map_err(site_error(site, action))?;
                if receiver {
                    return Ok(Stopped::ApplierOnly);
                }
                return Err(site_error(site, action)(Unreachable::Timeout));
            }
        }
    }
    Ok(Stopped::Both)
}

/// Stops replication (bounded: the applier first, then the receiver, a stuck receiver left to
/// stop in the server), clears `super_read_only` and `read_only`, reads back. Returns the
/// executed set at promotion.
pub async fn promote(pool: &Pool, site: &str, bounds: Bounds) -> Result<GtidSet, ApplyError> {
    let mut conn = observe::connect(pool, bounds).await.map_err(site_error(site, "promote"))?;
    let receiver_bound = bounds.query.min(PROMOTE_RECEIVER_BOUND);
    if stop_replication(pool, &mut conn, site, "promote", bounds, receiver_bound).await?
        == Stopped::ApplierOnly
    {
        tracing::info!(site, "promoting with the receiver still stopping (frozen source)");
    }
    for statement in sql::UNFENCE {
        observe::exec(&mut conn, statement, bounds).await.map_err(site_error(site, "promote"))?;
    }
    let (read_only, super_read_only, _, gtid) =
        observe::read_flags(&mut conn, bounds).await.map_err(site_error(site, "promote"))?;
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
