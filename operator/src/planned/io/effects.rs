//! The MySQL side effects of a planned failover, each on one pinned session (one connection
//! from the site's pool, held for the whole effect), every statement bounded, every flag read
//! back. Each effect returns what it did as a [`Report`] for the next pass; a failure is logged
//! and reported only as far as the statements got.

use std::time::Duration;

use bloodraven_facts::Unreachable;
use mysql_async::{Conn, Pool};

use crate::apply::{self, Stopped};
use crate::observe::{self as site_io, Account, Bounds};
use crate::planned::Report;
use crate::sql;

/// Why an effect stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EffectError {
    /// The site did not answer or answered with an error.
    #[error("site {site}: {action} failed ({why}); the next pass observes and decides again")]
    Site {
        /// The site.
        site: String,
        /// What was being done.
        action: &'static str,
        /// Refused, timed out or an error answer.
        why: Unreachable,
    },
    /// The site is another server than the run's record names.
    #[error(
        "site {site}: {action} refused: the server is {found}, the run's record names {expected}"
    )]
    OtherServer {
        /// The site.
        site: String,
        /// What was being done.
        action: &'static str,
        /// The `@@server_uuid` it has.
        found: String,
        /// The `@@server_uuid` the record names.
        expected: String,
    },
    /// The site has no pool (no address).
    #[error("site {site}: no address to reach it for {action}")]
    NoAddress {
        /// The site.
        site: String,
        /// What was being done.
        action: &'static str,
    },
    /// A flag did not read back as set.
    #[error("site {site}: after {action}, read_only={read_only} super_read_only={super_read_only}")]
    ReadBack {
        /// The site.
        site: String,
        /// What was being done.
        action: &'static str,
        /// `read_only`.
        read_only: bool,
        /// `super_read_only`.
        super_read_only: bool,
    },
}

fn failed(site: &str, action: &'static str) -> impl FnOnce(Unreachable) -> EffectError {
    let site = site.to_owned();
    move |why| EffectError::Site { site, action, why }
}

/// A pinned session to `site`, checked to be the server `expected` names (when given).
async fn pinned(
    pool: Option<&Pool>,
    site: &str,
    action: &'static str,
    expected: Option<&str>,
    bounds: Bounds,
) -> Result<Conn, EffectError> {
    let pool = pool.ok_or_else(|| EffectError::NoAddress { site: site.to_owned(), action })?;
    let mut conn = site_io::connect(pool, bounds).await.map_err(failed(site, action))?;
    if let Some(expected) = expected {
        let rows = site_io::rows(&mut conn, "SELECT @@global.server_uuid", bounds)
            .await
            .map_err(failed(site, action))?;
        let found: String = rows
            .into_iter()
            .next()
            .and_then(|row| row.get::<String, usize>(0))
            .ok_or_else(|| failed(site, action)(Unreachable::Error))?;
        if !found.eq_ignore_ascii_case(expected) {
            return Err(EffectError::OtherServer {
                site: site.to_owned(),
                action,
                found,
                expected: expected.to_owned(),
            });
        }
    }
    Ok(conn)
}

/// Fence: on one pinned session to the server the intent names, `super_read_only=ON`, read
/// back. [`Report::FenceSent`] once the statement ran.
pub(crate) async fn fence(
    pool: Option<&Pool>,
    site: &str,
    server_uuid: &str,
    bounds: Bounds,
) -> (Vec<Report>, Result<(), EffectError>) {
    let action = "fence";
    let mut conn = match pinned(pool, site, action, Some(server_uuid), bounds).await {
        Ok(conn) => conn,
        Err(error) => return (Vec::new(), Err(error)),
    };
    if let Err(why) = site_io::exec(&mut conn, sql::FENCE, bounds).await {
        return (Vec::new(), Err(failed(site, action)(why)));
    }
    let reports = vec![Report::FenceSent { server_uuid: server_uuid.to_owned() }];
    let checked = match site_io::read_flags(&mut conn, bounds).await {
        Ok((_, true, _, _)) => Ok(()),
        Ok((read_only, super_read_only, _, _)) => {
            Err(EffectError::ReadBack { site: site.to_owned(), action, read_only, super_read_only })
        }
        Err(why) => Err(failed(site, action)(why)),
    };
    (reports, checked)
}

/// Whether a `SHOW PROCESSLIST` row is an application session: not a server thread, not the
/// operator's or the replication account, not `root` (an administrator), not this session.
fn application_session(user: &str, id: u64, own: u64, skip: &[&str]) -> bool {
    id != own
        && !matches!(user, "system user" | "event_scheduler" | "root")
        && !skip.contains(&user)
}

/// The application sessions of a server (their IDs).
async fn app_sessions(
    conn: &mut Conn,
    skip: &[&str],
    bounds: Bounds,
) -> Result<Vec<u64>, Unreachable> {
    let own = u64::from(conn.id());
    let rows = site_io::rows(conn, "SHOW PROCESSLIST", bounds).await?;
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let id = row.get_opt::<u64, &str>("Id").and_then(Result::ok)?;
            let user = row
                .get_opt::<Option<String>, &str>("User")
                .and_then(Result::ok)
                .flatten()
                .unwrap_or_default();
            application_session(&user, id, own, skip).then_some(id)
        })
        .collect())
}

/// How long the drain's count waits for the sessions it killed to leave the process list.
const KILL_SETTLE: Duration = Duration::from_millis(250);
/// How often it looks meanwhile.
const KILL_SETTLE_POLL: Duration = Duration::from_millis(25);

/// KillAppConnections: kill every application session on the source, then count what is
/// left (the killed sessions given [`KILL_SETTLE`] to go). Always reports [`Report::Drained`]
/// (the count, or why the query failed).
pub(crate) async fn kill_app_connections(
    pool: Option<&Pool>,
    site: &str,
    accounts: &[&Account],
    bounds: Bounds,
) -> Report {
    let skip: Vec<&str> = accounts.iter().map(|account| account.user.as_str()).collect();
    let counted = async {
        let mut conn = pinned(pool, site, "drain", None, bounds).await?;
        let sessions =
            app_sessions(&mut conn, &skip, bounds).await.map_err(failed(site, "drain"))?;
        for &id in &sessions {
            // A session that ended meanwhile answers "Unknown thread id": not an error here.
            let id = u32::try_from(id).unwrap_or(u32::MAX);
            if let Err(why) = site_io::exec(&mut conn, &sql::kill(id), bounds).await {
                tracing::debug!(site, id, ?why, "KILL of an application session failed");
            }
        }
        // A killed session stays in the process list until its thread notices the kill (at
        // once when idle, after its rollback when busy). Counted right after the KILLs it
        // would cost a whole drain cadence (a second of write outage) for sessions already
        // on their way out, so the count waits up to KILL_SETTLE for them; sessions that are
        // not leaving (new ones, or a long rollback) are what it reports.
        let settle_until = tokio::time::Instant::now() + KILL_SETTLE;
        loop {
            let left =
                app_sessions(&mut conn, &skip, bounds).await.map_err(failed(site, "drain"))?;
            let leaving = left.iter().any(|id| sessions.contains(id));
            if !leaving || tokio::time::Instant::now() >= settle_until {
                break Ok::<u32, EffectError>(u32::try_from(left.len()).unwrap_or(u32::MAX));
            }
            tokio::time::sleep(KILL_SETTLE_POLL).await;
        }
    };
    Report::Drained(counted.await.map_err(|error| error.to_string()))
}

/// Promote: on one pinned session to the server the intent names, stop replication (bounded),
/// `RESET REPLICA ALL`, then `super_read_only=OFF`, `read_only=OFF`, read back.
/// [`Report::PromotionFailed`] when a statement before the write failed;
/// [`Report::WriteSent`] once `super_read_only=OFF` is about to be sent.
pub(crate) async fn promote(
    pool: Option<&Pool>,
    site: &str,
    server_uuid: &str,
    bounds: Bounds,
) -> (Vec<Report>, Result<(), EffectError>) {
    let action = "promote";
    let before = async {
        let mut conn = pinned(pool, site, action, Some(server_uuid), bounds).await?;
        if let Some(pool) = pool {
            let receiver = bounds.query.min(apply::PROMOTE_RECEIVER_BOUND);
            match apply::stop_replication(pool, &mut conn, site, action, bounds, receiver).await {
                Ok(Stopped::Both) => {}
                Ok(Stopped::ApplierOnly) => {
                    tracing::info!(site, "promoting with the receiver still stopping");
                }
                Err(error) => {
                    return Err(EffectError::Site {
                        site: site.to_owned(),
                        action,
                        why: match error {
                            apply::ApplyError::Site { why, .. } => why,
                            _ => Unreachable::Error,
                        },
                    });
                }
            }
        }
        site_io::exec(&mut conn, sql::RESET_REPLICA_ALL, bounds)
            .await
            .map_err(failed(site, action))?;
        Ok(conn)
    };
    let mut conn = match before.await {
        Ok(conn) => conn,
        Err(error) => return (vec![Report::PromotionFailed(error.to_string())], Err(error)),
    };
    let reports = vec![Report::WriteSent];
    for statement in sql::UNFENCE {
        if let Err(why) = site_io::exec(&mut conn, statement, bounds).await {
            return (reports, Err(failed(site, action)(why)));
        }
    }
    let checked = match site_io::read_flags(&mut conn, bounds).await {
        Ok((false, false, _, _)) => Ok(()),
        Ok((read_only, super_read_only, _, _)) => {
            Err(EffectError::ReadBack { site: site.to_owned(), action, read_only, super_read_only })
        }
        Err(why) => Err(failed(site, action)(why)),
    };
    (reports, checked)
}

/// RefenceTarget: `super_read_only=ON` on the target, read back.
pub(crate) async fn refence_target(
    pool: Option<&Pool>,
    site: &str,
    bounds: Bounds,
) -> (Vec<Report>, Result<(), EffectError>) {
    let Some(pool) = pool else {
        return (
            Vec::new(),
            Err(EffectError::NoAddress { site: site.to_owned(), action: "re-fence" }),
        );
    };
    match apply::fence(pool, site, bounds).await {
        Ok(()) => (vec![Report::TargetRefenced], Ok(())),
        Err(error) => (
            Vec::new(),
            Err(EffectError::Site {
                site: site.to_owned(),
                action: "re-fence",
                why: match error {
                    apply::ApplyError::Site { why, .. } => why,
                    _ => Unreachable::Error,
                },
            }),
        ),
    }
}

/// Where the restored channel of the target points, and as whom.
pub(crate) struct Restore<'a> {
    /// The target's pool.
    pub(crate) target_pool: Option<&'a Pool>,
    /// The target site.
    pub(crate) target: &'a str,
    /// The source's address as the target dials it.
    pub(crate) source_address: Option<&'a (String, u16)>,
    /// The replication account.
    pub(crate) replication: &'a Account,
}

/// Unfence: restore the target's channel toward the source when asked, then on one pinned
/// session to the fenced server `super_read_only=OFF`, `read_only=OFF`, read back.
pub(crate) async fn unfence(
    pool: Option<&Pool>,
    site: &str,
    server_uuid: &str,
    restore: Option<Restore<'_>>,
    bounds: Bounds,
) -> (Vec<Report>, Result<(), EffectError>) {
    if let Some(restore) = restore {
        let restored = async {
            let (host, port) = restore.source_address.ok_or_else(|| EffectError::NoAddress {
                site: site.to_owned(),
                action: "channel restore",
            })?;
            let mut conn =
                pinned(restore.target_pool, restore.target, "channel restore", None, bounds)
                    .await?;
            let target = sql::SourceTarget {
                host,
                port: *port,
                user: &restore.replication.user,
                password: &restore.replication.password,
            };
            site_io::exec(&mut conn, &sql::change_source(&target), bounds)
                .await
                .map_err(failed(restore.target, "channel restore"))?;
            site_io::exec(&mut conn, sql::START_REPLICA, bounds)
                .await
                .map_err(failed(restore.target, "channel restore"))
        };
        if let Err(error) = restored.await {
            return (Vec::new(), Err(error));
        }
    }
    let action = "unfence";
    let mut conn = match pinned(pool, site, action, Some(server_uuid), bounds).await {
        Ok(conn) => conn,
        Err(error) => return (Vec::new(), Err(error)),
    };
    let mut reports = Vec::new();
    for statement in sql::UNFENCE {
        if let Err(why) = site_io::exec(&mut conn, statement, bounds).await {
            return (reports, Err(failed(site, action)(why)));
        }
        if reports.is_empty() {
            reports.push(Report::UnfenceSent);
        }
    }
    let checked = match site_io::read_flags(&mut conn, bounds).await {
        Ok((false, false, _, _)) => Ok(()),
        Ok((read_only, super_read_only, _, _)) => {
            Err(EffectError::ReadBack { site: site.to_owned(), action, read_only, super_read_only })
        }
        Err(why) => Err(failed(site, action)(why)),
    };
    (reports, checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_sessions_leave_out_servers_threads_accounts_and_ourselves() {
        let skip = ["bloodraven", "repl"];
        assert!(application_session("app", 10, 7, &skip));
        assert!(!application_session("app", 7, 7, &skip), "our own session");
        assert!(!application_session("system user", 3, 7, &skip));
        assert!(!application_session("event_scheduler", 4, 7, &skip));
        assert!(!application_session("repl", 11, 7, &skip), "a replica's dump thread");
        assert!(!application_session("bloodraven", 12, 7, &skip), "the operator's pool");
    }
}
