//! The MySQL reads and statements of a full-instance in-place restore run, bounded: the
//! account's grants, `offline_mode`, the sessions to evict, a peer's receiver.

use std::collections::BTreeSet;

use bloodraven_gtid::GtidSet;
use mysql_async::{Pool, Row};

use super::core_run::{Receiver, Session};
use crate::observe::{self, Bounds};
use bloodraven_facts::Unreachable;

/// The privileges `SHOW GRANTS` lists on `*.*`, upper case (`ALL PRIVILEGES` kept as such).
pub fn parse_grants(lines: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in lines {
        let upper = line.to_ascii_uppercase();
        let Some(rest) = upper.strip_prefix("GRANT ") else { continue };
        let Some((privileges, _)) = rest.split_once(" ON *.* ") else { continue };
        for privilege in privileges.split(',') {
            let privilege = privilege.trim();
            if !privilege.is_empty() {
                out.insert(privilege.to_owned());
            }
        }
    }
    out
}

/// The operator account's grants on a site.
pub async fn grants(pool: &Pool, bounds: Bounds) -> Result<BTreeSet<String>, Unreachable> {
    let mut conn = observe::connect(pool, bounds).await?;
    let rows = observe::rows(&mut conn, "SHOW GRANTS", bounds).await?;
    let lines: Vec<String> = rows.into_iter().filter_map(|row| row.get::<String, _>(0)).collect();
    Ok(parse_grants(&lines))
}

/// `@@global.offline_mode`.
pub async fn offline_mode(pool: &Pool, bounds: Bounds) -> Result<bool, Unreachable> {
    let mut conn = observe::connect(pool, bounds).await?;
    let (_, _, offline, _) = observe::read_flags(&mut conn, bounds).await?;
    Ok(offline)
}

/// `@@global.gtid_executed`.
pub async fn gtid_executed(pool: &Pool, bounds: Bounds) -> Result<GtidSet, Unreachable> {
    let mut conn = observe::connect(pool, bounds).await?;
    let (_, _, _, gtid) = observe::read_flags(&mut conn, bounds).await?;
    Ok(gtid)
}

/// Runs `statement` on a site.
pub async fn exec(pool: &Pool, statement: &str, bounds: Bounds) -> Result<(), Unreachable> {
    let mut conn = observe::connect(pool, bounds).await?;
    observe::exec(&mut conn, statement, bounds).await
}

/// `SET GLOBAL offline_mode = ON`, then the largest session id: every session with a larger
/// id connected after the fence (connection ids only grow while mysqld runs).
pub async fn fence(pool: &Pool, bounds: Bounds) -> Result<u64, Unreachable> {
    let mut conn = observe::connect(pool, bounds).await?;
    observe::exec(&mut conn, super::io::OFFLINE_MODE_ON, bounds).await?;
    let rows =
        observe::rows(&mut conn, "SELECT MAX(ID) FROM information_schema.PROCESSLIST", bounds)
            .await?;
    rows.first().and_then(|row| row.get::<u64, _>(0)).ok_or(Unreachable::Error)
}

/// Every client session but this connection's and the server's own threads; dump threads
/// marked.
const SESSIONS: &str = "SELECT ID, USER, COMMAND FROM information_schema.PROCESSLIST \
     WHERE ID <> CONNECTION_ID() AND USER NOT IN ('system user', 'event_scheduler')";

/// The sessions on the primary; those with an id above `boundary` ([`fence`]) connected after
/// the fence (only accounts `offline_mode` exempts can).
pub async fn sessions(
    pool: &Pool,
    boundary: u64,
    bounds: Bounds,
) -> Result<Vec<Session>, Unreachable> {
    let mut conn = observe::connect(pool, bounds).await?;
    let rows = observe::rows(&mut conn, SESSIONS, bounds).await?;
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let id: u64 = row.get(0)?;
            let user: String = row.get::<Option<String>, _>(1).flatten().unwrap_or_default();
            let command: String = row.get::<Option<String>, _>(2).flatten().unwrap_or_default();
            Some(Session {
                id,
                user,
                dump_thread: command.starts_with("Binlog Dump"),
                system_user: false,
                before_fence: id <= boundary,
            })
        })
        .collect())
}

/// Kills a session; a session that is gone already counts as killed. `Err` names why it
/// stays (a SYSTEM_USER session the account cannot kill).
pub async fn kill(pool: &Pool, id: u64, bounds: Bounds) -> Result<(), String> {
    let mut conn = observe::connect(pool, bounds).await.map_err(|e| e.to_string())?;
    match tokio::time::timeout(
        bounds.query,
        mysql_async::prelude::Queryable::query_drop(&mut conn, format!("KILL {id}")),
    )
    .await
    {
        Err(_) => Err("KILL timed out".to_owned()),
        Ok(Ok(())) => Ok(()),
        // 1094: unknown thread id (it ended meanwhile).
        Ok(Err(mysql_async::Error::Server(error))) if error.code == 1094 => Ok(()),
        Ok(Err(error)) => Err(error.to_string()),
    }
}

/// A peer's receiver as Fencing sees it.
pub async fn receiver(pool: &Pool, bounds: Bounds) -> Receiver {
    let read = async {
        let mut conn = observe::connect(pool, bounds).await?;
        let rows = observe::rows(&mut conn, "SHOW REPLICA STATUS", bounds).await?;
        Ok::<Vec<Row>, Unreachable>(rows)
    };
    let rows = match read.await {
        Ok(rows) => rows,
        Err(why) => return Receiver::Unknown { why: why.to_string() },
    };
    let Some(row) = rows.first() else { return Receiver::Stopped };
    let text =
        |name: &str| -> String { row.get::<Option<String>, _>(name).flatten().unwrap_or_default() };
    match text("Replica_IO_Running").as_str() {
        "Yes" => {
            let parse = |name: &str| observe::parse_gtid(&text(name)).unwrap_or_default();
            let received = parse("Retrieved_Gtid_Set").union(&parse("Executed_Gtid_Set"));
            Receiver::Running { received }
        }
        "Connecting" => Receiver::Connecting,
        _ => Receiver::Stopped,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_grants;

    #[test]
    fn grants_on_every_schema_are_read_and_others_ignored() {
        let lines = [
            "GRANT SELECT, PROCESS, REPLICATION SLAVE ON *.* TO `op`@`%`".to_owned(),
            "GRANT CONNECTION_ADMIN,SYSTEM_VARIABLES_ADMIN ON *.* TO `op`@`%`".to_owned(),
            "GRANT ALL PRIVILEGES ON `app`.* TO `op`@`%`".to_owned(),
        ];
        let grants = parse_grants(&lines);
        assert!(grants.contains("PROCESS"));
        assert!(grants.contains("CONNECTION_ADMIN"));
        assert!(grants.contains("SYSTEM_VARIABLES_ADMIN"));
        assert!(!grants.contains("ALL PRIVILEGES"), "a schema grant is not a global one");
    }
}
