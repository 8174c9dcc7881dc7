//! The reclone itself: MySQL's CLONE plugin copies the primary's data into a queued site
//! (`CLONE INSTANCE FROM` the primary, run on the recipient). The statements are pure
//! ([`statements`]); [`clone_from`] runs them.
//!
//! The recipient's mysqld stops after the clone and must be restarted by its supervisor (the
//! pod's container restart, or the lab's kubelet); without one, MySQL answers error 3707
//! ("not managed by supervisor process"), which here counts as a finished clone awaiting its
//! restart. The plugin is `mysql_clone.so` from the server's plugin directory
//! (`BLOODRAVEN_MYSQL_PLUGIN_DIR` in the lab); it is installed on both ends when missing.

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder};

use crate::sql::quote;

/// MySQL's "restart server failed (mysqld is not managed by supervisor process)": the clone
/// finished and the recipient shut down.
pub const ER_CLONE_RESTART_NO_SUPERVISOR: u16 = 3707;

/// Where the clone comes from, and as whom (an account with BACKUP_ADMIN on the donor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Donor<'a> {
    /// Host as the recipient reaches it.
    pub host: &'a str,
    /// Port.
    pub port: u16,
    /// User.
    pub user: &'a str,
    /// Password.
    pub password: &'a str,
}

/// Does the server have the clone plugin active.
pub const PLUGIN_ACTIVE: &str = "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'clone' AND PLUGIN_STATUS = 'ACTIVE'";

/// The recipient's fence.
const READ_SUPER_READ_ONLY: &str = "SELECT @@global.super_read_only";
/// Lifted for the clone (`read_only` stays ON).
const UNFENCE_FOR_CLONE: &str = "SET GLOBAL super_read_only = OFF";
/// Put back after a clone that failed before it started.
const REFENCE_AFTER_CLONE: &str = "SET GLOBAL super_read_only = ON";

/// Installs the clone plugin.
pub const INSTALL_PLUGIN: &str = "INSTALL PLUGIN clone SONAME 'mysql_clone.so'";

/// The recipient's statements, in order: stop replication (the clone replaces its data and
/// the receiver must not pull anything meanwhile), name the donor as valid, clone.
pub fn statements(donor: &Donor<'_>) -> [String; 3] {
    [
        "STOP REPLICA".to_owned(),
        format!(
            "SET GLOBAL clone_valid_donor_list = {}",
            quote(&format!("{}:{}", donor.host, donor.port))
        ),
        format!(
            "CLONE INSTANCE FROM {}@{}:{} IDENTIFIED BY {}",
            quote(donor.user),
            quote(donor.host),
            donor.port,
            quote(donor.password),
        ),
    ]
}

/// Why a reclone failed.
#[derive(Debug, thiserror::Error)]
pub enum CloneError {
    /// Connecting to a site failed.
    #[error(
        "connecting to {what} at {address} failed: {source}; check that it runs and the operator account"
    )]
    Connect {
        /// Donor or recipient.
        what: &'static str,
        /// host:port.
        address: String,
        /// The driver's error.
        #[source]
        source: mysql_async::Error,
    },
    /// A statement failed.
    #[error("{what}: {statement} failed: {source}")]
    Statement {
        /// Donor or recipient.
        what: &'static str,
        /// The statement (the password elided).
        statement: String,
        /// The driver's error.
        #[source]
        source: mysql_async::Error,
    },
    /// The clone did not finish in time.
    #[error(
        "the clone did not finish within {0:?}; the recipient may be mid-clone: check its error log"
    )]
    Timeout(Duration),
}

/// How a finished clone left the recipient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cloned {
    /// The statement returned normally.
    Done,
    /// mysqld shut down and has no supervisor: whoever runs it must start it again.
    NeedsRestart,
    /// The connection dropped during the statement (a restart, or a crash): the caller
    /// verifies the recipient's executed set once it answers again.
    ConnectionLost,
}

/// A site to connect to.
#[derive(Clone, Debug)]
pub struct Endpoint<'a> {
    /// Host.
    pub host: &'a str,
    /// Port.
    pub port: u16,
    /// User (the operator account).
    pub user: &'a str,
    /// Password.
    pub password: &'a str,
}

async fn connect(
    what: &'static str,
    endpoint: &Endpoint<'_>,
    bound: Duration,
) -> Result<Conn, CloneError> {
    let opts: Opts = OptsBuilder::default()
        .ip_or_hostname(endpoint.host)
        .tcp_port(endpoint.port)
        .user(Some(endpoint.user))
        .pass(Some(endpoint.password))
        .prefer_socket(false)
        .into();
    let address = format!("{}:{}", endpoint.host, endpoint.port);
    match tokio::time::timeout(bound, Conn::new(opts)).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(source)) => Err(CloneError::Connect { what, address, source }),
        Err(_) => Err(CloneError::Timeout(bound)),
    }
}

async fn ensure_plugin(what: &'static str, conn: &mut Conn) -> Result<(), CloneError> {
    let active: Option<u64> = conn.query_first(PLUGIN_ACTIVE).await.map_err(|source| {
        CloneError::Statement { what, statement: PLUGIN_ACTIVE.into(), source }
    })?;
    if active.unwrap_or(0) == 0 {
        conn.query_drop(INSTALL_PLUGIN).await.map_err(|source| CloneError::Statement {
            what,
            statement: INSTALL_PLUGIN.into(),
            source,
        })?;
    }
    Ok(())
}

/// Reclones `recipient` from `donor`: the plugin on both ends, then [`statements`] on the
/// recipient, the clone bounded by `bound`.
pub async fn clone_from(
    recipient: &Endpoint<'_>,
    donor: &Donor<'_>,
    donor_admin: &Endpoint<'_>,
    bound: Duration,
) -> Result<Cloned, CloneError> {
    let connect_bound = Duration::from_secs(10);
    let mut donor_conn = connect("donor", donor_admin, connect_bound).await?;
    ensure_plugin("donor", &mut donor_conn).await?;
    drop(donor_conn);
    let mut conn = connect("recipient", recipient, connect_bound).await?;
    // A queued follower runs super_read_only, which refuses INSTALL PLUGIN (and the clone's
    // DDL); read_only stays ON meanwhile, so applications still cannot write. Put back when
    // the clone fails before it replaced anything; a clone that ran restarts the server.
    let fenced: Option<u8> = conn.query_first(READ_SUPER_READ_ONLY).await.map_err(|source| {
        CloneError::Statement { what: "recipient", statement: READ_SUPER_READ_ONLY.into(), source }
    })?;
    let fenced = fenced == Some(1);
    if fenced {
        conn.query_drop(UNFENCE_FOR_CLONE).await.map_err(|source| CloneError::Statement {
            what: "recipient",
            statement: UNFENCE_FOR_CLONE.into(),
            source,
        })?;
    }
    let outcome = clone_on(&mut conn, donor, bound).await;
    // A clone that ran restarts the server; only one that failed before it is re-fenced.
    if fenced
        && outcome.is_err()
        && let Err(error) = conn.query_drop(REFENCE_AFTER_CLONE).await
    {
        tracing::warn!(
            %error,
            "could not put super_read_only back after a failed clone; the topology manager re-fences it"
        );
    }
    outcome
}

async fn clone_on(
    conn: &mut Conn,
    donor: &Donor<'_>,
    bound: Duration,
) -> Result<Cloned, CloneError> {
    ensure_plugin("recipient", conn).await?;
    let [stop, donors, clone] = statements(donor);
    for statement in [&stop, &donors] {
        conn.query_drop(statement.as_str()).await.map_err(|source| CloneError::Statement {
            what: "recipient",
            statement: statement.clone(),
            source,
        })?;
    }
    tracing::info!(donor = %format!("{}:{}", donor.host, donor.port), "CLONE INSTANCE starts");
    let outcome = tokio::time::timeout(bound, conn.query_drop(clone.as_str())).await;
    match outcome {
        Err(_) => Err(CloneError::Timeout(bound)),
        Ok(Ok(())) => Ok(Cloned::Done),
        Ok(Err(mysql_async::Error::Server(error)))
            if error.code == ER_CLONE_RESTART_NO_SUPERVISOR =>
        {
            Ok(Cloned::NeedsRestart)
        }
        // The server went away: it restarted itself after the clone, or failed.
        Ok(Err(mysql_async::Error::Io(_) | mysql_async::Error::Driver(_))) => {
            Ok(Cloned::ConnectionLost)
        }
        Ok(Err(source)) => Err(CloneError::Statement {
            what: "recipient",
            statement: format!("CLONE INSTANCE FROM {}@{}:{}", donor.user, donor.host, donor.port),
            source,
        }),
    }
}

/// A clone that has not finished in this long is given up (and retried by whoever asked).
pub const CLONE_BOUND: Duration = Duration::from_secs(6 * 3_600);
/// After the clone, the recipient must answer again within this long.
pub const RESTART_BOUND: Duration = Duration::from_secs(600);

/// Why reading a site's `gtid_executed` failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadGtidError {
    /// The connection or the query did not answer in time.
    #[error("{step} on {address} timed out after {bound:?}")]
    Timeout {
        /// Connecting, or reading `gtid_executed`.
        step: &'static str,
        /// host:port.
        address: String,
        /// How long it waited.
        bound: Duration,
    },
    /// The driver failed.
    #[error("{step} on {address}: {source}")]
    Driver {
        /// Connecting, or reading `gtid_executed`.
        step: &'static str,
        /// host:port.
        address: String,
        /// The driver's error.
        #[source]
        source: mysql_async::Error,
    },
    /// The server's answer is not a GTID set.
    #[error("gtid_executed on {address} is not a GTID set: {source}")]
    Parse {
        /// host:port.
        address: String,
        /// The parser's error.
        #[source]
        source: bloodraven_gtid::GtidError,
    },
}

/// Why a site's reclone ([`reclone_site`]) failed.
#[derive(Debug, thiserror::Error)]
pub enum RecloneError {
    /// The donor's executed set could not be read before the clone.
    #[error("reading the donor's gtid_executed: {0}")]
    Donor(#[source] ReadGtidError),
    /// The clone itself failed.
    #[error(transparent)]
    Clone(#[from] CloneError),
    /// The recipient answered after its clone without the donor's set.
    #[error("after the clone the recipient holds {held}, not the donor's {donor}")]
    Short {
        /// The recipient's `gtid_executed`.
        held: bloodraven_gtid::GtidSet,
        /// The donor's, read before the clone.
        donor: bloodraven_gtid::GtidSet,
    },
    /// The recipient did not answer again in time.
    #[error("the recipient did not answer within {bound:?} after its clone: {source}")]
    NoAnswer {
        /// How long it waited.
        bound: Duration,
        /// The last failed read.
        #[source]
        source: ReadGtidError,
    },
}

/// Reads `@@global.gtid_executed` of `endpoint`, each step bounded by 10 s.
pub async fn read_gtid_executed(
    endpoint: &Endpoint<'_>,
) -> Result<bloodraven_gtid::GtidSet, ReadGtidError> {
    let address = format!("{}:{}", endpoint.host, endpoint.port);
    let opts = OptsBuilder::default()
        .ip_or_hostname(endpoint.host)
        .tcp_port(endpoint.port)
        .user(Some(endpoint.user))
        .pass(Some(endpoint.password))
        .prefer_socket(false);
    let bound = Duration::from_secs(10);
    let timeout = |step| ReadGtidError::Timeout { step, address: address.clone(), bound };
    let driver = |step, source| ReadGtidError::Driver { step, address: address.clone(), source };
    let mut conn = tokio::time::timeout(bound, Conn::new(opts))
        .await
        .map_err(|_| timeout("connecting"))?
        .map_err(|source| driver("connecting", source))?;
    let read = "reading gtid_executed";
    let text: Option<String> =
        tokio::time::timeout(bound, conn.query_first("SELECT @@global.gtid_executed"))
            .await
            .map_err(|_| timeout(read))?
            .map_err(|source| driver(read, source))?;
    let _ = conn.disconnect().await;
    text.unwrap_or_default()
        .replace('\n', "")
        .parse()
        .map_err(|source| ReadGtidError::Parse { address: address.clone(), source })
}

/// A site's whole reclone: the donor's executed set first, the clone ([`clone_from`], bounded
/// by [`CLONE_BOUND`]), then the recipient must answer again within [`RESTART_BOUND`] holding
/// at least that set. Both ends are reached as the operator account (`user`, `password`).
pub async fn reclone_site(
    recipient: &(String, u16),
    donor: &(String, u16),
    user: &str,
    password: &str,
) -> Result<(), RecloneError> {
    let recipient_endpoint = Endpoint { host: &recipient.0, port: recipient.1, user, password };
    let donor_endpoint = Endpoint { host: &donor.0, port: donor.1, user, password };
    let donor_set = read_gtid_executed(&donor_endpoint).await.map_err(RecloneError::Donor)?;
    let donor_spec = Donor { host: &donor.0, port: donor.1, user, password };
    let cloned = clone_from(&recipient_endpoint, &donor_spec, &donor_endpoint, CLONE_BOUND).await?;
    tracing::info!(?cloned, "clone finished; waiting for the recipient to answer");
    let deadline = tokio::time::Instant::now() + RESTART_BOUND;
    loop {
        match read_gtid_executed(&recipient_endpoint).await {
            Ok(held) if donor_set.is_subset(&held) => return Ok(()),
            Ok(held) => return Err(RecloneError::Short { held, donor: donor_set }),
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(source) => {
                return Err(RecloneError::NoAnswer { bound: RESTART_BOUND, source });
            }
        }
    }
}
