//! Observation: every site of a group read through `mysql_async` into a
//! [`GroupObservation`], each read bounded by a timeout, unreachability told apart
//! ([`Unreachable::Refused`], [`Unreachable::Timeout`], [`Unreachable::Error`]).

use std::collections::BTreeMap;
use std::time::Duration;

use bloodraven_facts::{
    GroupObservation, ReplicaObservation, ServerReading, SiteObservation, Unreachable,
};
use bloodraven_gtid::GtidSet;
use jiff::Timestamp;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Pool, PoolConstraints, PoolOpts, Row};

use crate::sql;

/// A MySQL account (from the group's credentials Secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// User name.
    pub user: String,
    /// Password.
    pub password: String,
}

/// The bounds of one site read.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Connecting (TCP + handshake).
    pub connect: Duration,
    /// One query.
    pub query: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Self { connect: Duration::from_secs(2), query: Duration::from_secs(2) }
    }
}

/// One pool per site, re-created when the site's address or account changes.
#[derive(Default)]
pub struct Pools {
    pools: BTreeMap<String, (String, u16, Account, Pool)>,
}

impl std::fmt::Debug for Pools {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Pools").field("sites", &self.pools.keys()).finish()
    }
}

impl Pools {
    /// The pool of `site` at `host:port` as `account`.
    pub fn pool(&mut self, site: &str, host: &str, port: u16, account: &Account) -> Pool {
        if let Some((h, p, a, pool)) = self.pools.get(site)
            && h == host
            && *p == port
            && a == account
        {
            return pool.clone();
        }
        let constraints = PoolConstraints::new(0, 2).unwrap_or_default();
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(host.to_owned())
            .tcp_port(port)
            .user(Some(account.user.clone()))
            .pass(Some(account.password.clone()))
            .prefer_socket(false)
            .pool_opts(site_pool_opts(constraints))
            .conn_ttl(Some(Duration::from_secs(30)));
        let pool = Pool::new(opts);
        if let Some((_, _, _, old)) = self
            .pools
            .insert(site.to_owned(), (host.to_owned(), port, account.clone(), pool.clone()))
        {
            tokio::spawn(async move {
                let _ = old.disconnect().await;
            });
        }
        pool
    }

    /// Closes every pool.
    pub async fn close(self) {
        for (_, (_, _, _, pool)) in self.pools {
            let _ = pool.disconnect().await;
        }
    }
}

/// How long an idle connection stays in a site's pool: well beyond any poll interval, so each
/// poll reuses the previous poll's connection.
pub const IDLE_CONNECTION_TTL: Duration = Duration::from_secs(60);

/// The pool options of a site's pool. With mysql_async's default `inactive_connection_ttl` of
/// zero the pool keeps only `min` idle connections: with `min` 0 every returned connection was
/// closed and each poll dialled and authenticated anew (issue 12's CPU goal). Nothing the
/// operator runs sets session state (only SET GLOBAL and replication statements), so a
/// returned connection needs no COM_RESET_CONNECTION round trip either.
fn site_pool_opts(constraints: PoolConstraints) -> PoolOpts {
    PoolOpts::default()
        .with_constraints(constraints)
        .with_inactive_connection_ttl(IDLE_CONNECTION_TTL)
        .with_reset_connection(false)
}

/// Why a MySQL operation failed, classified.
pub fn classify_error(error: &mysql_async::Error) -> Unreachable {
    match error {
        mysql_async::Error::Server(_) => Unreachable::Error,
        mysql_async::Error::Io(_) | mysql_async::Error::Driver(_) => Unreachable::Refused,
        _ => Unreachable::Error,
    }
}

/// Connects within the bound.
pub async fn connect(pool: &Pool, bounds: Bounds) -> Result<Conn, Unreachable> {
    match tokio::time::timeout(bounds.connect, pool.get_conn()).await {
        Err(_) => Err(Unreachable::Timeout),
        Ok(Err(error)) => Err(classify_error(&error)),
        Ok(Ok(conn)) => Ok(conn),
    }
}

/// Runs `query` within the bound and returns its rows.
pub async fn rows(conn: &mut Conn, query: &str, bounds: Bounds) -> Result<Vec<Row>, Unreachable> {
    match tokio::time::timeout(bounds.query, conn.query::<Row, _>(query)).await {
        Err(_) => Err(Unreachable::Timeout),
        Ok(Err(error)) => Err(classify_error(&error)),
        Ok(Ok(rows)) => Ok(rows),
    }
}

/// Runs `statement` within the bound.
pub async fn exec(conn: &mut Conn, statement: &str, bounds: Bounds) -> Result<(), Unreachable> {
    match tokio::time::timeout(bounds.query, conn.query_drop(statement)).await {
        Err(_) => Err(Unreachable::Timeout),
        Ok(Err(error)) => Err(classify_error(&error)),
        Ok(Ok(())) => Ok(()),
    }
}

/// Reads the flags and the executed set: `(read_only, super_read_only, offline_mode, gtid)`.
pub async fn read_flags(
    conn: &mut Conn,
    bounds: Bounds,
) -> Result<(bool, bool, bool, GtidSet), Unreachable> {
    let rows = rows(conn, sql::READ_FLAGS, bounds).await?;
    flags_from_rows(rows)
}

/// A poll's reading of a site ([`sql::READ_SITE`]): flags and executed set, and the
/// replication channel, in one round trip.
pub async fn read_site(conn: &mut Conn, bounds: Bounds) -> Result<ServerReading, Unreachable> {
    let read = async {
        let mut result = conn.query_iter(sql::READ_SITE).await?;
        let flags: Vec<Row> = result.collect().await?;
        let replica: Vec<Row> = result.collect().await?;
        drop(result);
        Ok::<_, mysql_async::Error>((flags, replica))
    };
    let (flags, replica) = match tokio::time::timeout(bounds.query, read).await {
        Err(_) => return Err(Unreachable::Timeout),
        Ok(Err(error)) => return Err(classify_error(&error)),
        Ok(Ok(sets)) => sets,
    };
    let (read_only, super_read_only, offline_mode, gtid_executed) = flags_from_rows(flags)?;
    let replica = replica.into_iter().next().map(|row| replica_from_row(&row));
    Ok(ServerReading { read_only, super_read_only, offline_mode, gtid_executed, replica })
}

fn flags_from_rows(rows: Vec<Row>) -> Result<(bool, bool, bool, GtidSet), Unreachable> {
    let row = rows.into_iter().next().ok_or(Unreachable::Error)?;
    let flag = |index: usize| row.get::<i64, usize>(index).map(|value| value != 0);
    let (Some(read_only), Some(super_read_only), Some(offline_mode)) = (flag(0), flag(1), flag(2))
    else {
        return Err(Unreachable::Error);
    };
    let gtid: String = row.get::<String, usize>(3).unwrap_or_default();
    let gtid = parse_gtid(&gtid)?;
    Ok((read_only, super_read_only, offline_mode, gtid))
}

/// Parses a server's `gtid_executed` (which may contain newlines).
pub fn parse_gtid(text: &str) -> Result<GtidSet, Unreachable> {
    let cleaned: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    cleaned.parse::<GtidSet>().map_err(|error| {
        tracing::warn!(%error, gtid = %cleaned, "the server's gtid_executed does not parse");
        Unreachable::Error
    })
}

fn column_string(row: &Row, name: &str) -> String {
    row.get_opt::<Option<String>, &str>(name).and_then(Result::ok).flatten().unwrap_or_default()
}

fn replica_from_row(row: &Row) -> ReplicaObservation {
    ReplicaObservation {
        source_host: column_string(row, "Source_Host"),
        source_port: column_string(row, "Source_Port").parse().unwrap_or(0),
        io_running: column_string(row, "Replica_IO_Running") == "Yes",
        io_connecting: column_string(row, "Replica_IO_Running") == "Connecting",
        sql_running: column_string(row, "Replica_SQL_Running") == "Yes",
        seconds_behind_source: column_string(row, "Seconds_Behind_Source").parse().ok(),
        auto_position: column_string(row, "Auto_Position") == "1",
        last_io_error: column_string(row, "Last_IO_Error"),
        last_sql_error: column_string(row, "Last_SQL_Error"),
        // A set that does not parse ranks as nothing received beyond the executed set (what
        // the ranking did before it read the relay log); `parse_gtid` logs it.
        retrieved_gtid_set: parse_gtid(&column_string(row, "Retrieved_Gtid_Set"))
            .unwrap_or_default(),
    }
}

/// Observes one site: connect, flags, replication channel.
pub async fn observe_site(pool: &Pool, site: &str, bounds: Bounds) -> SiteObservation {
    let reading = async {
        let mut conn = connect(pool, bounds).await?;
        read_site(&mut conn, bounds).await
    }
    .await;
    if let Err(why) = &reading {
        tracing::debug!(site, ?why, "site unreachable");
    }
    SiteObservation { site: site.to_owned(), observed_at: Timestamp::now(), reading }
}

/// Observes every site concurrently. A site without an address is `Refused` (nothing to dial).
pub async fn observe_group(
    targets: Vec<(String, Option<Pool>)>,
    bounds: Bounds,
) -> GroupObservation {
    let pools: Vec<Option<Pool>> = targets.iter().map(|(_, pool)| pool.clone()).collect();
    let reads = targets.into_iter().map(|(site, pool)| async move {
        match pool {
            Some(pool) => observe_site(&pool, &site, bounds).await,
            None => SiteObservation {
                site,
                observed_at: Timestamp::now(),
                reading: Err(Unreachable::Refused),
            },
        }
    });
    let mut sites = futures::future::join_all(reads).await;
    // The sites are read concurrently, so a follower's executed set can be read after the
    // writable primary's and hold a transaction the primary committed in between: the
    // containment check would call that follower diverged. Reading every writable site's
    // set again, after all the others, makes the comparison sound (a writer's set only
    // grows); a failed re-read keeps the first.
    let rereads = sites.iter_mut().zip(pools).filter_map(|(site, pool)| {
        let reading = site.reading.as_mut().ok().filter(|reading| !reading.read_only)?;
        let pool = pool?;
        Some(async move {
            let again = async {
                let mut conn = connect(&pool, bounds).await?;
                let rows = rows(&mut conn, sql::READ_GTID_EXECUTED, bounds).await?;
                let row = rows.into_iter().next().ok_or(Unreachable::Error)?;
                parse_gtid(&row.get::<String, usize>(0).unwrap_or_default())
            };
            if let Ok(gtid) = again.await {
                reading.gtid_executed = gtid;
            }
        })
    });
    futures::future::join_all(rereads).await;
    GroupObservation { sites }
}
