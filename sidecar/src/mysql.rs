//! The local MySQL server: its fencing flags, the fence itself (`SET GLOBAL
//! super_read_only=ON`, read back) and the `/health` ping. Every call is bounded.

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Pool, PoolConstraints, PoolOpts};

use crate::decide::ServerState;

/// Where and as whom the sidecar reaches its server.
#[derive(Clone, PartialEq, Eq)]
pub struct MysqlTarget {
    /// Host (`127.0.0.1` in the pod).
    pub host: String,
    /// Port.
    pub port: u16,
    /// Account name.
    pub user: String,
    /// Its password.
    pub password: String,
}

impl std::fmt::Debug for MysqlTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MysqlTarget")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// Why a MySQL call failed.
#[derive(Debug, thiserror::Error)]
pub enum MysqlError {
    /// The server answered with an error, or the connection failed.
    #[error("mysql at {address}: {what} failed: {source}")]
    Driver {
        /// `host:port`.
        address: String,
        /// The step.
        what: &'static str,
        /// The cause.
        source: mysql_async::Error,
    },
    /// No answer within the bound.
    #[error("mysql at {address}: {what} got no answer within {bound:?}")]
    Timeout {
        /// `host:port`.
        address: String,
        /// The step.
        what: &'static str,
        /// The bound.
        bound: Duration,
    },
    /// The fence did not read back.
    #[error(
        "mysql at {address}: super_read_only reads back OFF after SET GLOBAL super_read_only=ON; \
         check the sidecar account's SYSTEM_VARIABLES_ADMIN grant"
    )]
    FenceNotApplied {
        /// `host:port`.
        address: String,
    },
}

/// The local server.
#[derive(Debug, Clone)]
pub struct Server {
    pool: Pool,
    address: String,
    bound: Duration,
}

impl Server {
    /// A pool of at most two connections; nothing is dialled until the first call.
    pub fn new(target: &MysqlTarget, bound: Duration) -> Self {
        let constraints = PoolConstraints::new(0, 2).unwrap_or_default();
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(target.host.clone())
            .tcp_port(target.port)
            .user(Some(target.user.clone()))
            .pass(Some(target.password.clone()))
            .prefer_socket(false)
            // A non-zero idle TTL: with mysql_async's default of zero a pool whose `min` is 0
            // closes every returned connection, and each check would dial and log in anew.
            .pool_opts(
                PoolOpts::default()
                    .with_constraints(constraints)
                    .with_inactive_connection_ttl(Duration::from_secs(60)),
            );
        Self { pool: Pool::new(opts), address: format!("{}:{}", target.host, target.port), bound }
    }

    async fn bounded<T>(
        &self,
        what: &'static str,
        step: impl Future<Output = Result<T, mysql_async::Error>>,
    ) -> Result<T, MysqlError> {
        match tokio::time::timeout(self.bound, step).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(source)) => {
                Err(MysqlError::Driver { address: self.address.clone(), what, source })
            }
            Err(_) => {
                Err(MysqlError::Timeout { address: self.address.clone(), what, bound: self.bound })
            }
        }
    }

    async fn conn(&self) -> Result<Conn, MysqlError> {
        self.bounded("connect", self.pool.get_conn()).await
    }

    /// `SELECT 1` (the readiness check: MySQL only).
    pub async fn ping(&self) -> Result<(), MysqlError> {
        let mut conn = self.conn().await?;
        self.bounded("SELECT 1", conn.query_drop("SELECT 1")).await
    }

    /// `@@global.read_only`, `@@global.super_read_only`.
    pub async fn state(&self) -> Result<ServerState, MysqlError> {
        let mut conn = self.conn().await?;
        let row: Option<(u8, u8)> = self
            .bounded(
                "reading read_only and super_read_only",
                conn.query_first("SELECT @@global.read_only, @@global.super_read_only"),
            )
            .await?;
        Ok(match row {
            Some((_, 1)) => ServerState::Fenced,
            Some((1, _)) => ServerState::ReadOnly,
            Some(_) => ServerState::Writable,
            None => ServerState::Unknown,
        })
    }

    /// `SET GLOBAL super_read_only=ON`, then reads it back.
    pub async fn fence(&self) -> Result<(), MysqlError> {
        let mut conn = self.conn().await?;
        self.bounded(
            "SET GLOBAL super_read_only=ON",
            conn.query_drop("SET GLOBAL super_read_only = ON"),
        )
        .await?;
        let on: Option<u8> = self
            .bounded(
                "reading super_read_only back",
                conn.query_first("SELECT @@global.super_read_only"),
            )
            .await?;
        if on == Some(1) {
            Ok(())
        } else {
            Err(MysqlError::FenceNotApplied { address: self.address.clone() })
        }
    }

    /// Closes the pool's connections.
    pub async fn close(self) {
        let _ = tokio::time::timeout(self.bound, self.pool.disconnect()).await;
    }
}
