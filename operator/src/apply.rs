//! Apply: the MySQL side of the planned steps (fence, promote, repoint), each statement bounded
//! and each flag read back. The Kubernetes side (status, Services, labels) is in `manager`.

use bloodraven_facts::Unreachable;
use bloodraven_gtid::GtidSet;
use mysql_async::Pool;

use crate::observe::{self, Bounds};
use crate::sql;

/// Why a MySQL step failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The site could not be reached or answered with an error.
    #[error("site {site}: {action} failed ({why:?}); the next poll observes and retries")]
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

/// `STOP REPLICA`, clear `super_read_only` and `read_only`, read back. Returns the executed set
/// at promotion.
pub async fn promote(pool: &Pool, site: &str, bounds: Bounds) -> Result<GtidSet, ApplyError> {
    let mut conn = observe::connect(pool, bounds).await.map_err(site_error(site, "promote"))?;
    observe::exec(&mut conn, sql::STOP_REPLICA, bounds)
        .await
        .map_err(site_error(site, "promote"))?;
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
    observe::exec(&mut conn, sql::STOP_REPLICA, bounds)
        .await
        .map_err(site_error(follower, "repoint"))?;
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
