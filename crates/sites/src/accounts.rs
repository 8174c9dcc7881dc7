//! The accounts every site has (created in the template) and how clients log in as them.
//!
//! Least privilege as the spec's preflights expect; the README says why each grant is there.
//! All accounts use `caching_sha2_password` (MySQL 9 has no `mysql_native_password`). Clients
//! connect over plain TCP and, on a cold authentication cache, fetch the server's RSA public key
//! to send the password (the server generates the key pair at initialisation).

use std::net::SocketAddr;

/// A lab account: user name and password (lab-only secrets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Account {
    /// The user name (`'<user>'@'%'`).
    pub user: &'static str,
    /// The password.
    pub password: &'static str,
}

/// The operator's administrative account (`spec.credentials.operatorSecret`).
pub const OPERATOR: Account = Account { user: "bloodraven_operator", password: "lab-operator-pw" };
/// The dedicated replication account (`MYSQL_REPLICATION_USER`): followers log in with it.
pub const REPLICATION: Account = Account { user: "bloodraven_repl", password: "lab-repl-pw" };
/// The sidecar's account (self-fence, peer and status checks, binlog archiving).
pub const SIDECAR: Account = Account { user: "bloodraven_sidecar", password: "lab-sidecar-pw" };
/// The backup account (`credentials.backupSecretName`).
pub const BACKUP: Account = Account { user: "bloodraven_backup", password: "lab-backup-pw" };
/// The application account: DML and DDL on [`APP_SCHEMA`] only.
pub const APPLICATION: Account = Account { user: "app", password: "lab-app-pw" };

/// Every account, in creation order.
pub const ALL: [Account; 5] = [OPERATOR, REPLICATION, SIDECAR, BACKUP, APPLICATION];

/// The application's schema (exists in the template, so it carries no GTID).
pub const APP_SCHEMA: &str = "app";
/// The workload's table (exists in the template).
pub const LEDGER_TABLE: &str = "ledger";

/// The grants of each account. Global dynamic privileges are granted `ON *.*`.
pub(crate) fn grants(account: &Account) -> Vec<String> {
    let user = format!("'{}'@'%'", account.user);
    let list: &[&str] = match account.user {
        u if u == OPERATOR.user => &[
            // Planned failover, fencing, repointing, restore (spec 000 "The restore account"):
            // CONNECTION_ADMIN (works under offline_mode, kills sessions), SYSTEM_VARIABLES_ADMIN
            // (super_read_only, offline_mode, local_infile), PROCESS (sees other sessions),
            // REPLICATION_SLAVE_ADMIN (CHANGE REPLICATION SOURCE, START/STOP/RESET REPLICA),
            // REPLICATION CLIENT (SHOW REPLICA STATUS, SHOW BINARY LOGS),
            // REPLICATION SLAVE (peers replicate as the operator in the default setup),
            // CLONE_ADMIN + BACKUP_ADMIN (reclone: recipient and donor), RELOAD (FLUSH BINARY LOGS),
            // DDL/DML on every schema (restores drop and reload user schemas).
            "CONNECTION_ADMIN, SYSTEM_VARIABLES_ADMIN, REPLICATION_SLAVE_ADMIN, CLONE_ADMIN, \
             BACKUP_ADMIN ON *.*",
            "PROCESS, RELOAD, REPLICATION CLIENT, REPLICATION SLAVE, SELECT, INSERT, UPDATE, \
             DELETE, CREATE, DROP, ALTER, INDEX, REFERENCES, CREATE VIEW, SHOW VIEW, TRIGGER, \
             EVENT, CREATE ROUTINE, ALTER ROUTINE, EXECUTE, LOCK TABLES, CREATE TEMPORARY TABLES \
             ON *.*",
        ],
        u if u == REPLICATION.user => &["REPLICATION SLAVE ON *.*"],
        u if u == SIDECAR.user => &[
            // Self-fence (SET GLOBAL super_read_only) and status (read_only, gtid_executed,
            // SHOW REPLICA STATUS, SHOW BINARY LOGS); the archiver reads binlogs over the
            // replication protocol; history-integrity reads replication filters.
            "SYSTEM_VARIABLES_ADMIN ON *.*",
            "REPLICATION CLIENT, REPLICATION SLAVE ON *.*",
            "SELECT ON performance_schema.*",
        ],
        u if u == BACKUP.user => &[
            // Spec 000 "Required MySQL privileges" for consistent dumps.
            "RELOAD, LOCK TABLES, PROCESS, REPLICATION CLIENT, SELECT, SHOW VIEW, EVENT, TRIGGER \
             ON *.*",
            "BACKUP_ADMIN ON *.*",
        ],
        // No CONNECTION_ADMIN or SUPER: offline_mode and super_read_only must apply to it.
        _ => &["SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX ON `app`.*"],
    };
    list.iter().map(|g| format!("GRANT {g} TO {user}")).collect()
}

/// The SQL that sets up a fresh data directory: accounts, grants, the app schema and ledger
/// table. Run with `sql_log_bin = 0`, so nothing of it is a transaction to replicate.
pub(crate) fn template_sql() -> String {
    let mut sql = String::from("SET SESSION sql_log_bin = 0;\n");
    for account in ALL {
        sql.push_str(&format!(
            "CREATE USER '{}'@'%' IDENTIFIED WITH caching_sha2_password BY '{}';\n",
            account.user, account.password
        ));
        for grant in grants(&account) {
            sql.push_str(&grant);
            sql.push_str(";\n");
        }
    }
    sql.push_str(&format!("CREATE DATABASE `{APP_SCHEMA}`;\n"));
    sql.push_str(&format!(
        "CREATE TABLE `{APP_SCHEMA}`.`{LEDGER_TABLE}` (\n  \
           k BIGINT UNSIGNED NOT NULL PRIMARY KEY,\n  \
           writer VARCHAR(64) NOT NULL,\n  \
           written_at_us BIGINT NOT NULL\n\
         ) ENGINE=InnoDB;\n"
    ));
    sql
}

/// Client options for `account` at `addr` (plain TCP; the RSA key is fetched on a cold cache).
pub fn opts(account: &Account, addr: SocketAddr, db: Option<&str>) -> mysql_async::Opts {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname(addr.ip().to_string())
        .tcp_port(addr.port())
        .user(Some(account.user))
        .pass(Some(account.password))
        .db_name(db)
        .prefer_socket(false)
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_account_has_no_admin_privileges() {
        let g = grants(&APPLICATION).join("\n");
        for bad in ["CONNECTION_ADMIN", "SUPER", "SYSTEM_VARIABLES_ADMIN", "*.*"] {
            assert!(!g.contains(bad), "{bad} in {g}");
        }
    }

    #[test]
    fn operator_holds_what_the_restore_preflight_checks() {
        let g = grants(&OPERATOR).join("\n");
        for want in
            ["CONNECTION_ADMIN", "SYSTEM_VARIABLES_ADMIN", "PROCESS", "REPLICATION_SLAVE_ADMIN"]
        {
            assert!(g.contains(want), "{want} missing from {g}");
        }
        assert!(!g.contains("SUPER"), "SUPER would hide a missing grant");
    }

    #[test]
    fn template_sql_is_unlogged_and_creates_every_account() {
        let sql = template_sql();
        assert!(sql.starts_with("SET SESSION sql_log_bin = 0;"));
        for a in ALL {
            assert!(sql.contains(&format!("CREATE USER '{}'@'%'", a.user)));
        }
    }
}
