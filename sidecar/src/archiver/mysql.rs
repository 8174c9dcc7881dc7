//! The archiver's MySQL queries: the role probe and the history-integrity settings.

use std::future::Future;

use bloodraven_gtid::GtidSet;
use mysql_async::prelude::Queryable as _;

use super::integrity::IntegritySettings;

/// What the role probe reads (`@@read_only, @@server_uuid, @@server_id, @@gtid_executed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleRow {
    /// `@@read_only`.
    pub read_only: bool,
    /// `@@server_uuid`.
    pub server_uuid: bloodraven_gtid::Uuid,
    /// `@@server_id`.
    pub server_id: u32,
    /// `@@gtid_executed`.
    pub gtid_executed: GtidSet,
}

/// A failed query, with what was asked.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The server refused or the connection failed.
    #[error("{what}: {source}")]
    Mysql { what: &'static str, source: mysql_async::Error },
    /// The answer could not be read.
    #[error("{what}: unexpected answer: {detail}")]
    Unexpected { what: &'static str, detail: String },
}

/// The seam the sampler and the scan use (a real server, or a test double).
pub trait Server: Send + Sync {
    /// One role probe.
    fn role(&self) -> impl Future<Output = Result<RoleRow, QueryError>> + Send;
    /// The history-integrity settings.
    fn integrity(&self) -> impl Future<Output = Result<IntegritySettings, QueryError>> + Send;
}

/// A MySQL server reached through a small pool.
#[derive(Debug, Clone)]
pub struct MysqlServer {
    pool: mysql_async::Pool,
}

impl MysqlServer {
    /// A server reached with `opts`.
    pub fn new(opts: mysql_async::Opts) -> Self {
        MysqlServer { pool: mysql_async::Pool::new(opts) }
    }

    /// Closes the pool.
    pub async fn close(self) {
        let _ = self.pool.disconnect().await;
    }

    async fn conn(&self, what: &'static str) -> Result<mysql_async::Conn, QueryError> {
        self.pool.get_conn().await.map_err(|source| QueryError::Mysql { what, source })
    }
}

impl Server for MysqlServer {
    async fn role(&self) -> Result<RoleRow, QueryError> {
        const WHAT: &str = "role probe";
        let mut conn = self.conn(WHAT).await?;
        let row: Option<(u8, String, u32, String)> = conn
            .query_first("SELECT @@read_only, @@server_uuid, @@server_id, @@gtid_executed")
            .await
            .map_err(|source| QueryError::Mysql { what: WHAT, source })?;
        let Some((read_only, uuid, server_id, gtids)) = row else {
            return Err(QueryError::Unexpected { what: WHAT, detail: "no row".into() });
        };
        let unexpected = |detail: String| QueryError::Unexpected { what: WHAT, detail };
        Ok(RoleRow {
            read_only: read_only != 0,
            server_uuid: uuid
                .parse()
                .map_err(|e| unexpected(format!("server_uuid {uuid:?}: {e}")))?,
            server_id,
            gtid_executed: gtids
                .replace('\n', "")
                .parse()
                .map_err(|e| unexpected(format!("gtid_executed {gtids:?}: {e}")))?,
        })
    }

    async fn integrity(&self) -> Result<IntegritySettings, QueryError> {
        const WHAT: &str = "history integrity";
        let mut conn = self.conn(WHAT).await?;
        let failed = |source| QueryError::Mysql { what: WHAT, source };
        let replication_filters: Vec<String> = conn
            .query(
                "SELECT CONCAT(FILTER_NAME, ': ', FILTER_RULE) FROM performance_schema.replication_applier_filters \
                 UNION ALL \
                 SELECT CONCAT(FILTER_NAME, ': ', FILTER_RULE) FROM performance_schema.replication_applier_global_filters",
            )
            .await
            .map_err(failed)?;
        let status: Option<mysql_async::Row> =
            conn.query_first("SHOW BINARY LOG STATUS").await.map_err(failed)?;
        let column = |name: &str| -> String {
            status
                .as_ref()
                .and_then(|row| row.get_opt::<String, &str>(name))
                .and_then(Result::ok)
                .unwrap_or_default()
        };
        let (binlog_do_db, binlog_ignore_db) = (column("Binlog_Do_DB"), column("Binlog_Ignore_DB"));
        let settings: Option<(String, String, String)> = conn
            .query_first(
                "SELECT @@binlog_format, @@binlog_row_image, CAST(@@replica_preserve_commit_order AS CHAR)",
            )
            .await
            .map_err(failed)?;
        let Some((binlog_format, binlog_row_image, order)) = settings else {
            return Err(QueryError::Unexpected { what: WHAT, detail: "no row".into() });
        };
        Ok(IntegritySettings {
            replication_filters,
            binlog_do_db,
            binlog_ignore_db,
            binlog_format,
            binlog_row_image,
            replica_preserve_commit_order: order,
        })
    }
}
