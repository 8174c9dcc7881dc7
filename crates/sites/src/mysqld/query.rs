//! What a server reports (fencing flags, GTIDs, replica status) and replication set-up, asked as
//! root over the instance's unix socket.

use std::net::SocketAddr;

use bloodraven_gtid::GtidSet;
use mysql_async::Row;
use mysql_async::prelude::Queryable as _;

use super::Instance;
use crate::accounts::{self, Account};
use crate::error::{Result, SitesError};

/// The fencing flags as the server reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerFlags {
    /// `@@global.read_only`.
    pub read_only: bool,
    /// `@@global.super_read_only`.
    pub super_read_only: bool,
    /// `@@global.offline_mode`.
    pub offline_mode: bool,
}

/// The fields of `SHOW REPLICA STATUS` the lab looks at.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReplicaStatus {
    /// `Replica_IO_Running`: `Yes`, `No` or `Connecting`.
    pub io_running: String,
    /// `Replica_SQL_Running`.
    pub sql_running: String,
    /// `Replica_IO_State` (e.g. `Waiting for source to send event`, `Reconnecting after a failed
    /// source event read`).
    pub io_state: String,
    /// `Source_Port` (the proxy port of the link).
    pub source_port: u16,
    /// `Last_IO_Errno`.
    pub last_io_errno: u32,
    /// `Last_IO_Error`.
    pub last_io_error: String,
    /// `Last_SQL_Errno`.
    pub last_sql_errno: u32,
    /// `Last_SQL_Error`.
    pub last_sql_error: String,
    /// `Retrieved_Gtid_Set` (text as the server prints it).
    pub retrieved_gtid_set: String,
    /// `Executed_Gtid_Set`.
    pub executed_gtid_set: String,
    /// `Seconds_Behind_Source` (`NULL` → `None`).
    pub seconds_behind_source: Option<u64>,
}

fn text(row: &Row, column: &str) -> String {
    row.get_opt::<Option<String>, _>(column).and_then(Result::ok).flatten().unwrap_or_default()
}

fn number(row: &Row, column: &str) -> Option<u64> {
    text(row, column).trim().parse().ok()
}

impl ReplicaStatus {
    fn from_row(row: &Row) -> Self {
        Self {
            io_running: text(row, "Replica_IO_Running"),
            sql_running: text(row, "Replica_SQL_Running"),
            io_state: text(row, "Replica_IO_State"),
            source_port: number(row, "Source_Port")
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(0),
            last_io_errno: number(row, "Last_IO_Errno")
                .and_then(|p| u32::try_from(p).ok())
                .unwrap_or(0),
            last_io_error: text(row, "Last_IO_Error"),
            last_sql_errno: number(row, "Last_SQL_Errno")
                .and_then(|p| u32::try_from(p).ok())
                .unwrap_or(0),
            last_sql_error: text(row, "Last_SQL_Error"),
            retrieved_gtid_set: text(row, "Retrieved_Gtid_Set").replace('\n', ""),
            executed_gtid_set: text(row, "Executed_Gtid_Set").replace('\n', ""),
            seconds_behind_source: number(row, "Seconds_Behind_Source"),
        }
    }
}

/// Parses a GTID set as the server prints it.
pub(crate) fn parse_gtids(what: &str, target: &str, text: &str) -> Result<GtidSet> {
    text.parse::<GtidSet>().map_err(|e| SitesError::Unexpected {
        what: what.to_owned(),
        target: target.to_owned(),
        detail: format!("{text:?} is not a GTID set: {e}"),
    })
}

impl Instance {
    async fn first_row(&self, sql: &str) -> Result<Option<Row>> {
        let mut conn = self.root_conn().await?;
        let row = conn
            .query_first::<Row, _>(sql)
            .await
            .map_err(|e| SitesError::mysql(sql, self.name(), e))?;
        let _ = conn.disconnect().await;
        Ok(row)
    }

    /// Runs statements as root (over the socket), in order, on one session.
    pub async fn execute(&self, statements: &[&str]) -> Result<()> {
        let mut conn = self.root_conn().await?;
        for sql in statements {
            conn.query_drop(*sql).await.map_err(|e| SitesError::mysql(*sql, self.name(), e))?;
        }
        let _ = conn.disconnect().await;
        Ok(())
    }

    /// `read_only`, `super_read_only` and `offline_mode` as the server reports them.
    pub async fn flags(&self) -> Result<ServerFlags> {
        let sql = "SELECT @@global.read_only, @@global.super_read_only, @@global.offline_mode";
        let row = self.first_row(sql).await?.ok_or_else(|| SitesError::Unexpected {
            what: sql.into(),
            target: self.name().into(),
            detail: "no row".into(),
        })?;
        let flag = |i: usize| row.get_opt::<i64, usize>(i).and_then(Result::ok).unwrap_or(0) != 0;
        Ok(ServerFlags { read_only: flag(0), super_read_only: flag(1), offline_mode: flag(2) })
    }

    /// `@@global.read_only`.
    pub async fn read_only(&self) -> Result<bool> {
        Ok(self.flags().await?.read_only)
    }
    /// `@@global.super_read_only`.
    pub async fn super_read_only(&self) -> Result<bool> {
        Ok(self.flags().await?.super_read_only)
    }
    /// `@@global.offline_mode`.
    pub async fn offline_mode(&self) -> Result<bool> {
        Ok(self.flags().await?.offline_mode)
    }

    /// `SET GLOBAL super_read_only = ON` (which implies `read_only`), or both off.
    pub async fn set_super_read_only(&self, on: bool) -> Result<()> {
        if on {
            self.execute(&["SET GLOBAL super_read_only = ON"]).await
        } else {
            self.execute(&["SET GLOBAL super_read_only = OFF", "SET GLOBAL read_only = OFF"]).await
        }
    }

    /// `@@global.gtid_executed`.
    pub async fn gtid_executed(&self) -> Result<GtidSet> {
        let sql = "SELECT @@global.gtid_executed";
        let row = self.first_row(sql).await?;
        let text: String = row.map(|r| text_at(&r, 0)).unwrap_or_default();
        parse_gtids(sql, self.name(), &text)
    }

    /// `@@server_uuid`.
    pub async fn server_uuid(&self) -> Result<String> {
        let row = self.first_row("SELECT @@server_uuid").await?;
        Ok(row.map(|r| text_at(&r, 0)).unwrap_or_default())
    }

    /// `SHOW REPLICA STATUS`; `None` when the server has no replication configured.
    pub async fn replica_status(&self) -> Result<Option<ReplicaStatus>> {
        Ok(self.first_row("SHOW REPLICA STATUS").await?.map(|r| ReplicaStatus::from_row(&r)))
    }

    /// Points this server at `source` (a proxy link's address) with auto-positioning, as
    /// `account`, fetching the source's RSA key for `caching_sha2_password`; a 1 s heartbeat and
    /// 1 s connect retry so a cut link is noticed within `replica-net-timeout` (4 s). Then
    /// `START REPLICA`.
    pub async fn replicate_from(&self, source: SocketAddr, account: &Account) -> Result<()> {
        let change = change_source_sql(source, account);
        self.execute(&["STOP REPLICA", &change, "START REPLICA"]).await
    }

    /// `STOP REPLICA` (both threads).
    pub async fn stop_replica(&self) -> Result<()> {
        self.execute(&["STOP REPLICA"]).await
    }

    /// `STOP REPLICA; RESET REPLICA ALL`: forget the source (a promoted primary).
    pub async fn reset_replica_all(&self) -> Result<()> {
        self.execute(&["STOP REPLICA", "RESET REPLICA ALL"]).await
    }

    /// `FLUSH BINARY LOGS` (closes the active binlog so every file is sealed).
    pub async fn flush_binary_logs(&self) -> Result<()> {
        self.execute(&["FLUSH BINARY LOGS"]).await
    }

    /// The binlog file names, in order (`SHOW BINARY LOGS`).
    pub async fn binary_logs(&self) -> Result<Vec<String>> {
        let mut conn = self.root_conn().await?;
        let rows: Vec<Row> = conn
            .query("SHOW BINARY LOGS")
            .await
            .map_err(|e| SitesError::mysql("SHOW BINARY LOGS", self.name(), e))?;
        let _ = conn.disconnect().await;
        Ok(rows.iter().map(|r| text_at(r, 0)).collect())
    }
}

fn text_at(row: &Row, i: usize) -> String {
    row.get_opt::<Option<String>, usize>(i).and_then(Result::ok).flatten().unwrap_or_default()
}

/// The `CHANGE REPLICATION SOURCE TO` statement of [`Instance::replicate_from`].
pub fn change_source_sql(source: SocketAddr, account: &Account) -> String {
    format!(
        "CHANGE REPLICATION SOURCE TO SOURCE_HOST='{}', SOURCE_PORT={}, SOURCE_USER='{}', \
         SOURCE_PASSWORD='{}', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1, \
         SOURCE_CONNECT_RETRY=1, SOURCE_RETRY_COUNT=100000, SOURCE_HEARTBEAT_PERIOD=1",
        source.ip(),
        source.port(),
        account.user,
        account.password
    )
}

/// The default replication account.
pub const REPLICATION_ACCOUNT: Account = accounts::REPLICATION;
