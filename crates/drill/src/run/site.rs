//! What a drill reads and does on one site, in either world: the `sites` star harness (root
//! over the unix socket) or the live lab's kubelet pods (the operator account over TCP,
//! straight to mysqld: the drill's own reads never cross a fault-proxy link).

use std::net::SocketAddr;

use bloodraven_gtid::GtidSet;
use bloodraven_sites::accounts;
use bloodraven_sites::mysqld::{ReplicaStatus, ServerFlags};
use mysql_async::Row;
use mysql_async::prelude::Queryable as _;

use super::{StepError, World};

fn text(row: &Row, column: &str) -> String {
    row.get_opt::<Option<String>, _>(column).and_then(Result::ok).flatten().unwrap_or_default()
}

fn sql_error(sql: &str, site: &str, e: mysql_async::Error) -> StepError {
    StepError::Failed(format!("{sql} on {site}: {e}"))
}

impl World {
    /// An administrative session on `site`: root over the socket, or the operator account.
    pub(crate) async fn admin_conn(&self, site: &str) -> Result<mysql_async::Conn, StepError> {
        if let Some(live) = &self.live {
            let addr = live.mysql_addr(site)?;
            return mysql_async::Conn::new(accounts::opts(&accounts::OPERATOR, addr, None))
                .await
                .map_err(|e| StepError::Failed(format!("connecting to {site} at {addr}: {e}")));
        }
        Ok(self.group()?.site(site)?.instance.root_conn().await?)
    }

    async fn first_row(&self, site: &str, sql: &str) -> Result<Option<Row>, StepError> {
        let mut conn = self.admin_conn(site).await?;
        let row = conn.query_first::<Row, _>(sql).await.map_err(|e| sql_error(sql, site, e))?;
        let _ = conn.disconnect().await;
        Ok(row)
    }

    /// Statements in order on one session.
    pub(crate) async fn execute(&self, site: &str, statements: &[&str]) -> Result<(), StepError> {
        if self.live.is_none() {
            return Ok(self.group()?.site(site)?.instance.execute(statements).await?);
        }
        let mut conn = self.admin_conn(site).await?;
        for sql in statements {
            conn.query_drop(*sql).await.map_err(|e| sql_error(sql, site, e))?;
        }
        let _ = conn.disconnect().await;
        Ok(())
    }

    /// `@@gtid_executed`.
    pub(crate) async fn gtid_executed(&self, site: &str) -> Result<GtidSet, StepError> {
        if self.live.is_none() {
            return Ok(self.group()?.site(site)?.instance.gtid_executed().await?);
        }
        let sql = "SELECT @@global.gtid_executed";
        let row = self.first_row(site, sql).await?;
        let text: String =
            row.and_then(|r| r.get_opt::<String, _>(0).and_then(Result::ok)).unwrap_or_default();
        text.replace('\n', "")
            .parse()
            .map_err(|e| StepError::Failed(format!("{sql} on {site} gave {text:?}: {e}")))
    }

    /// The fencing flags.
    pub(crate) async fn flags(&self, site: &str) -> Result<ServerFlags, StepError> {
        if self.live.is_none() {
            return Ok(self.group()?.site(site)?.instance.flags().await?);
        }
        let sql = "SELECT @@global.read_only, @@global.super_read_only, @@global.offline_mode";
        let row = self
            .first_row(site, sql)
            .await?
            .ok_or_else(|| StepError::Failed(format!("{sql} on {site}: no row")))?;
        let flag = |i: usize| row.get_opt::<i64, _>(i).and_then(Result::ok).unwrap_or(0) != 0;
        Ok(ServerFlags { read_only: flag(0), super_read_only: flag(1), offline_mode: flag(2) })
    }

    /// `SHOW REPLICA STATUS` (`None`: no replication configured).
    pub(crate) async fn replica_status(
        &self,
        site: &str,
    ) -> Result<Option<ReplicaStatus>, StepError> {
        if self.live.is_none() {
            return Ok(self.group()?.site(site)?.instance.replica_status().await?);
        }
        let Some(row) = self.first_row(site, "SHOW REPLICA STATUS").await? else {
            return Ok(None);
        };
        Ok(Some(ReplicaStatus {
            io_running: text(&row, "Replica_IO_Running"),
            sql_running: text(&row, "Replica_SQL_Running"),
            io_state: text(&row, "Replica_IO_State"),
            source_port: text(&row, "Source_Port").trim().parse().unwrap_or(0),
            last_io_errno: text(&row, "Last_IO_Errno").trim().parse().unwrap_or(0),
            last_io_error: text(&row, "Last_IO_Error"),
            last_sql_errno: text(&row, "Last_SQL_Errno").trim().parse().unwrap_or(0),
            last_sql_error: text(&row, "Last_SQL_Error"),
            retrieved_gtid_set: text(&row, "Retrieved_Gtid_Set").replace('\n', ""),
            executed_gtid_set: text(&row, "Executed_Gtid_Set").replace('\n', ""),
            seconds_behind_source: text(&row, "Seconds_Behind_Source").trim().parse().ok(),
        }))
    }

    /// The address `follower` dials to replicate from `source`: the replication link in the
    /// star, `source`'s internal Service link in the live lab (where the operator points it).
    pub(crate) fn source_addr(
        &self,
        follower: &str,
        source: &str,
    ) -> Result<SocketAddr, StepError> {
        if let Some(live) = &self.live {
            return Ok(live.drill_link(&format!("repl:{follower}->{source}"))?.addr());
        }
        Ok(self.group()?.replication_link(follower, source)?.addr())
    }

    /// Points `follower` at `source` by hand.
    pub(crate) async fn replicate_from(
        &self,
        follower: &str,
        source: &str,
    ) -> Result<String, StepError> {
        let addr = self.source_addr(follower, source)?;
        let change =
            bloodraven_sites::mysqld::query::change_source_sql(addr, &accounts::REPLICATION);
        self.execute(follower, &["STOP REPLICA", &change, "START REPLICA"]).await?;
        Ok(format!("{follower} replicates from {source} ({addr}) by hand"))
    }

    /// Where the ledger's rows of `site` are read (as the application account).
    pub(crate) fn app_addr(&self, site: &str) -> Result<SocketAddr, StepError> {
        if let Some(live) = &self.live {
            return Ok(live.mysql_addr(site)?);
        }
        Ok(self.group()?.site(site)?.app.addr())
    }

    /// The primary now: the star's, or the operator's `status.activeSite`.
    pub(crate) fn primary(&self) -> Result<String, StepError> {
        if let Some(live) = &self.live {
            let group = live.group_object().unwrap_or_default();
            return group["status"]["activeSite"].as_str().map(str::to_owned).ok_or_else(|| {
                StepError::Failed("the group has no status.activeSite (no primary)".into())
            });
        }
        Ok(self.group()?.primary().to_owned())
    }
}
