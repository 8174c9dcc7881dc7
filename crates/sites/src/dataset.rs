//! A sized dataset for throughput benchmarks (backup, restore, reclone per GiB): one InnoDB
//! table `bench.rows` of 1 KiB rows (hex of SHA2 over random numbers, so it compresses about
//! 2:1, as hex does), inserted 64 MiB per statement by a recursive CTE on the server itself.

use mysql_async::Conn;
use mysql_async::prelude::Queryable as _;

use crate::{Result, SitesError};

/// The schema the dataset lives in.
pub const SCHEMA: &str = "bench";
/// The table (`bench.rows`).
pub const TABLE: &str = "bench.rows";
/// Rows inserted per statement (1 KiB each: 64 MiB).
const BATCH_ROWS: u64 = 65_536;

/// The size of a benchmark's dataset in MiB: the variable `var` when it holds a positive
/// number (a small run, such as 64 to check a benchmark works), else `default`.
pub fn mib_from_env(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&m| m > 0)
        .unwrap_or(default)
}

/// Creates `bench.rows` through `conn` (`target` names the server in errors) and fills it with
/// about `mib` MiB; returns the table's InnoDB `data_length` in MiB after `ANALYZE TABLE`.
pub async fn load(conn: &mut Conn, target: &str, mib: u64) -> Result<f64> {
    let run = |what: &'static str| move |source| SitesError::mysql(what, target, source);
    conn.query_drop(format!(
        "CREATE DATABASE {SCHEMA}; CREATE TABLE {TABLE} (id BIGINT PRIMARY KEY, \
         payload VARCHAR(1024) CHARACTER SET ascii)"
    ))
    .await
    .map_err(run("creating bench.rows"))?;
    conn.query_drop("SET SESSION cte_max_recursion_depth = 1000000")
        .await
        .map_err(run("raising cte_max_recursion_depth"))?;
    let rows = mib.saturating_mul(1024);
    let mut next = 0;
    while next < rows {
        let count = BATCH_ROWS.min(rows - next);
        conn.query_drop(format!(
            "INSERT INTO {TABLE} (id, payload) WITH RECURSIVE n (i) AS \
             (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {count}) \
             SELECT {next} + i, CONCAT(SHA2(RAND(), 512), SHA2(RAND(), 512), \
             SHA2(RAND(), 512), SHA2(RAND(), 512), SHA2(RAND(), 512), SHA2(RAND(), 512), \
             SHA2(RAND(), 512), SHA2(RAND(), 512)) FROM n"
        ))
        .await
        .map_err(run("inserting into bench.rows"))?;
        next += count;
    }
    conn.query_drop(format!("ANALYZE TABLE {TABLE}"))
        .await
        .map_err(run("ANALYZE TABLE bench.rows"))?;
    let bytes: Option<u64> = conn
        .query_first(format!(
            "SELECT data_length FROM information_schema.tables \
             WHERE table_schema = '{SCHEMA}' AND table_name = 'rows'"
        ))
        .await
        .map_err(run("reading bench.rows' data_length"))?;
    let bytes = bytes.ok_or_else(|| SitesError::Unexpected {
        what: "bench.rows' data_length".to_owned(),
        target: target.to_owned(),
        detail: "no row in information_schema.tables".to_owned(),
    })?;
    // A report's figure: a byte count far below 2^52 converts exactly.
    Ok(bytes as f64 / (1024.0 * 1024.0))
}
