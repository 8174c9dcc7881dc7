//! The site's MySQL option file: what the topology needs, merged with the user's `mysqlConf`,
//! rendered into the ConfigMap's [`MY_CNF_KEY`](crate::MY_CNF_KEY), and parsed back by whoever
//! runs the server (the lab kubelet).
//!
//! Option names are normalised the way `mysqld` reads them: `-` and `_` are the same, so the
//! file always says `log_replica_updates`, never `log-replica-updates`.

use std::collections::BTreeMap;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::SiteSpec;

use crate::error::WorkloadError;
use crate::names::SiteNames;

/// The only section the operator writes.
pub const MYSQLD_SECTION: &str = "mysqld";

/// The binlog basename (in the data directory) the archiver and the lab expect.
pub const LOG_BIN: &str = "mysql-bin";
/// The relay log basename.
pub const RELAY_LOG: &str = "relay-bin";

/// `[mysqld]` options, keys normalised (`_`), in key order.
pub type MysqlOptions = BTreeMap<String, String>;

/// Options the topology depends on; a `mysqlConf` entry may repeat one with the same value but
/// never change it (an error names the entry).
///
/// `super_read_only = ON` at boot is the startup safety net: a server that restarts is never
/// writable until the operator decides it is the primary.
pub fn managed_options(group: &MysqlFailoverGroup, site: &SiteSpec) -> MysqlOptions {
    let mut options = MysqlOptions::new();
    let mut set = |key: &str, value: String| {
        options.insert(key.to_owned(), value);
    };
    set("server_id", site.server_id.to_string());
    set("gtid_mode", "ON".to_owned());
    set("enforce_gtid_consistency", "ON".to_owned());
    set("log_bin", LOG_BIN.to_owned());
    set("log_replica_updates", "ON".to_owned());
    set("read_only", "ON".to_owned());
    set("super_read_only", "ON".to_owned());
    // The operator starts replication after its containment checks, never the server.
    set("skip_replica_start", "ON".to_owned());
    set("port", crate::ports::MYSQL.to_string());
    if let Some(size) = group
        .spec
        .backup
        .as_ref()
        .and_then(|backup| backup.pitr.as_ref())
        .and_then(|pitr| pitr.max_binlog_size.clone())
    {
        set("max_binlog_size", size);
    }
    options
}

/// Defaults a `mysqlConf` entry may change.
pub fn default_options(group: &MysqlFailoverGroup, site: &SiteSpec) -> MysqlOptions {
    let group_name = group.metadata.name.as_deref().unwrap_or_default();
    let names = SiteNames::new(group_name, &site.name);
    MysqlOptions::from([
        ("binlog_expire_logs_seconds".to_owned(), "604800".to_owned()),
        ("max_binlog_size".to_owned(), bloodraven_crd::group::defaults::MAX_BINLOG_SIZE.to_owned()),
        ("sync_binlog".to_owned(), "1".to_owned()),
        ("innodb_flush_log_at_trx_commit".to_owned(), "1".to_owned()),
        ("relay_log".to_owned(), RELAY_LOG.to_owned()),
        ("relay_log_recovery".to_owned(), "ON".to_owned()),
        ("replica_preserve_commit_order".to_owned(), "ON".to_owned()),
        // What `SHOW REPLICAS` on the source shows: the site's internal Service.
        ("report_host".to_owned(), names.internal_service),
    ])
}

/// `key` as `mysqld` reads it: `-` → `_`, lower case.
pub fn normalize_key(key: &str) -> String {
    key.trim().replace('-', "_").to_ascii_lowercase()
}

fn check_entry(scope: &str, key: &str, value: &str) -> Result<String, WorkloadError> {
    let normalized = normalize_key(key);
    let invalid = |reason: &'static str| WorkloadError::InvalidMysqlOption {
        scope: scope.to_owned(),
        key: key.to_owned(),
        reason,
    };
    if normalized.is_empty()
        || !normalized.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    {
        return Err(invalid("an option name has only letters, digits, '-', '_' and '.'"));
    }
    if value.chars().any(|c| c.is_control() || c == '#' || c == '"' || c == '\'') {
        return Err(invalid(
            "a value cannot hold control characters, '#' or quotes (they end or escape a line of my.cnf)",
        ));
    }
    if value.trim() != value {
        return Err(invalid("a value cannot start or end with whitespace"));
    }
    Ok(normalized)
}

/// The merged `[mysqld]` options: defaults, then the group's `mysqlConf`, then the site's, then
/// the managed options (which a `mysqlConf` entry may only repeat).
pub fn site_options(
    group: &MysqlFailoverGroup,
    site: &SiteSpec,
) -> Result<MysqlOptions, WorkloadError> {
    let managed = managed_options(group, site);
    let mut options = default_options(group, site);
    let site_index = group.spec.sites.iter().position(|s| s.name == site.name).unwrap_or(0);
    let layers = [
        ("spec.mysqlConf".to_owned(), group.spec.mysql_conf.as_ref()),
        (format!("spec.sites[{site_index}].mysqlConf"), site.mysql_conf.as_ref()),
    ];
    for (scope, layer) in layers {
        for (key, value) in layer.into_iter().flatten() {
            let normalized = check_entry(&scope, key, value)?;
            if let Some(wanted) = managed.get(&normalized)
                && !wanted.eq_ignore_ascii_case(value)
            {
                return Err(WorkloadError::ManagedMysqlOption {
                    scope,
                    key: key.clone(),
                    value: wanted.clone(),
                });
            }
            options.insert(normalized, value.clone());
        }
    }
    options.extend(managed);
    Ok(options)
}

/// The option file text: a header line, `[mysqld]`, then `key = value` lines in key order.
pub fn render(options: &MysqlOptions) -> String {
    let mut text = String::from(
        "# Written by the Bloodraven operator from the MysqlFailoverGroup; edits are overwritten.\n[mysqld]\n",
    );
    for (key, value) in options {
        text.push_str(key);
        text.push_str(" = ");
        text.push_str(value);
        text.push('\n');
    }
    text
}

/// A line of an option file that could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("my.cnf line {line}: {reason}: {text:?}")]
pub struct ParseError {
    /// 1-based.
    pub line: usize,
    pub reason: &'static str,
    pub text: String,
}

/// Reads an option file: `[section]` headers, `key = value`, `key=value` and bare `key` (read as
/// `ON`), comments (`#`, `;`) and blank lines; values lose matching outer quotes. Returns the
/// sections' options with normalised keys, later lines winning. `!include` is refused: the
/// ConfigMap is the whole configuration.
pub fn parse(text: &str) -> Result<BTreeMap<String, MysqlOptions>, ParseError> {
    let mut sections = BTreeMap::<String, MysqlOptions>::new();
    let mut current: Option<String> = None;
    for (index, raw) in text.lines().enumerate() {
        let error = |reason| ParseError { line: index + 1, reason, text: raw.to_owned() };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('!') {
            return Err(error("include directives are not supported"));
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name =
                rest.strip_suffix(']').ok_or_else(|| error("a section header ends in ']'"))?;
            let name = name.trim().to_ascii_lowercase();
            if name.is_empty() {
                return Err(error("a section needs a name"));
            }
            sections.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        let section =
            current.as_ref().ok_or_else(|| error("an option comes before any section"))?;
        let (key, value) = match line.split_once('=') {
            Some((key, value)) => (key.trim(), strip_comment(value.trim())),
            None => (line, "ON"),
        };
        if key.is_empty() {
            return Err(error("an option needs a name"));
        }
        let value = unquote(value);
        sections.entry(section.clone()).or_default().insert(normalize_key(key), value.to_owned());
    }
    Ok(sections)
}

fn strip_comment(value: &str) -> &str {
    if value.starts_with('"') || value.starts_with('\'') {
        return value;
    }
    value.split_once(" #").map_or(value, |(kept, _)| kept.trim_end())
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|rest| rest.strip_suffix(quote)) {
            return inner;
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloodraven_crd::fixtures::GroupFixture;
    use pretty_assertions::assert_eq;

    fn group() -> MysqlFailoverGroup {
        GroupFixture::three_sites().build()
    }

    #[test]
    fn the_topology_options_are_set_and_survive_a_round_trip() {
        let group = group();
        let options = site_options(&group, &group.spec.sites[1]).unwrap();
        for (key, value) in [
            ("server_id", "102"),
            ("gtid_mode", "ON"),
            ("enforce_gtid_consistency", "ON"),
            ("log_bin", "mysql-bin"),
            ("log_replica_updates", "ON"),
            ("super_read_only", "ON"),
            ("read_only", "ON"),
            ("skip_replica_start", "ON"),
        ] {
            assert_eq!(options.get(key).map(String::as_str), Some(value), "{key}");
        }
        let parsed = parse(&render(&options)).unwrap();
        assert_eq!(parsed.get(MYSQLD_SECTION), Some(&options));
    }

    #[test]
    fn site_conf_overrides_group_conf_which_overrides_defaults() {
        let mut group = group();
        group.spec.mysql_conf = Some(BTreeMap::from([
            ("innodb-buffer-pool-size".to_owned(), "1G".to_owned()),
            ("sync_binlog".to_owned(), "0".to_owned()),
        ]));
        group.spec.sites[2].mysql_conf =
            Some(BTreeMap::from([("innodb_buffer_pool_size".to_owned(), "4G".to_owned())]));
        let fra = site_options(&group, &group.spec.sites[2]).unwrap();
        assert_eq!(fra["innodb_buffer_pool_size"], "4G");
        assert_eq!(fra["sync_binlog"], "0");
        let iad = site_options(&group, &group.spec.sites[0]).unwrap();
        assert_eq!(iad["innodb_buffer_pool_size"], "1G");
    }

    #[test]
    fn a_managed_option_can_be_repeated_but_not_changed() {
        let mut group = group();
        group.spec.sites[1].mysql_conf = Some(BTreeMap::from([
            ("gtid-mode".to_owned(), "on".to_owned()),
            ("super_read_only".to_owned(), "OFF".to_owned()),
        ]));
        let error = site_options(&group, &group.spec.sites[1]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "spec.sites[1].mysqlConf.super_read_only: the operator manages this option (it must be ON); remove the entry"
        );
    }

    #[test]
    fn values_that_would_break_the_file_are_refused_with_their_position() {
        let mut group = group();
        group.spec.mysql_conf =
            Some(BTreeMap::from([("sql_mode".to_owned(), "A\n[client]".to_owned())]));
        let error = site_options(&group, &group.spec.sites[0]).unwrap_err();
        assert!(error.to_string().starts_with("spec.mysqlConf.sql_mode: "), "{error}");
        group.spec.mysql_conf = Some(BTreeMap::from([("bad key".to_owned(), "1".to_owned())]));
        let error = site_options(&group, &group.spec.sites[0]).unwrap_err();
        assert!(error.to_string().starts_with("spec.mysqlConf.bad key: "), "{error}");
    }

    #[test]
    fn pitr_max_binlog_size_is_managed() {
        let mut group = GroupFixture::three_sites().with_s3_profile("nightly").build();
        if let Some(backup) = group.spec.backup.as_mut() {
            backup.pitr = Some(bloodraven_crd::group::PitrSpec {
                max_binlog_size: Some("16M".to_owned()),
                ..Default::default()
            });
        }
        let options = site_options(&group, &group.spec.sites[0]).unwrap();
        assert_eq!(options["max_binlog_size"], "16M");
        group.spec.mysql_conf =
            Some(BTreeMap::from([("max_binlog_size".to_owned(), "1G".to_owned())]));
        assert!(site_options(&group, &group.spec.sites[0]).is_err());
    }

    #[test]
    fn the_parser_reads_what_hand_written_files_say() {
        let text = "# c\n[client]\nport=1\n[mysqld]\nskip-name-resolve\nlog-bin = \"b\" \nserver_id=3 # id\n; x\n[mysqld]\nserver-id=4\n";
        let parsed = parse(text).unwrap();
        let mysqld = &parsed["mysqld"];
        assert_eq!(mysqld["skip_name_resolve"], "ON");
        assert_eq!(mysqld["log_bin"], "b");
        assert_eq!(mysqld["server_id"], "4");
        assert_eq!(parsed["client"]["port"], "1");
    }

    #[test]
    fn the_parser_names_the_bad_line() {
        assert_eq!(parse("a=1\n").unwrap_err().line, 1);
        assert_eq!(parse("[mysqld]\n[x\n").unwrap_err().line, 2);
        assert_eq!(
            parse("[mysqld]\n!include /etc/x\n").unwrap_err().reason,
            "include directives are not supported"
        );
    }
}
