//! The restore's MySQL statements the topology manager runs for its guards, bounded.

use mysql_async::Pool;

use crate::apply::ApplyError;
use crate::observe::{self, Bounds};

/// The fence re-asserted on every poll while the restore runs (never persisted).
pub const OFFLINE_MODE_ON: &str = "SET GLOBAL offline_mode = ON";

/// Runs one guard statement on `site`.
pub async fn run(
    pool: &Pool,
    site: &str,
    statement: &'static str,
    bounds: Bounds,
) -> Result<(), ApplyError> {
    let action = if statement == OFFLINE_MODE_ON { "offline fence" } else { "receiver hold" };
    let error = |why| ApplyError::Site { site: site.to_owned(), action, why };
    let mut conn = observe::connect(pool, bounds).await.map_err(error)?;
    observe::exec(&mut conn, statement, bounds).await.map_err(error)
}
