//! The runner on real MySQL 9.7: template, instance, controls, accounts.

use std::time::Duration;

use bloodraven_sites::accounts::{self, APPLICATION, OPERATOR};
use bloodraven_sites::mysqld::{Instance, InstanceSpec, MysqlDist, StopOutcome};
use bloodraven_sites::template::{Template, ensure_template_async};
use mysql_async::prelude::Queryable as _;

pub(crate) const READY: Duration = Duration::from_secs(90);

/// The distribution and template, or a loud failure naming the provisioning script.
pub(crate) async fn dist_and_template() -> (MysqlDist, Template) {
    let dist = MysqlDist::from_env().unwrap_or_else(|e| panic!("{e}"));
    let template = ensure_template_async(&dist).await.unwrap_or_else(|e| panic!("{e}"));
    (dist, template)
}

async fn started(name: &str, server_id: u32) -> Instance {
    let (dist, template) = dist_and_template().await;
    let mut site =
        Instance::create(&dist, &template, InstanceSpec::new(name, server_id)).await.unwrap();
    site.start_and_wait(READY).await.unwrap_or_else(|e| panic!("{e}"));
    site
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instance_starts_reports_flags_and_logs_in_every_account_over_tcp() {
    let site = started("flags", 11).await;
    let flags = site.flags().await.unwrap();
    assert!(!flags.read_only && !flags.super_read_only && !flags.offline_mode, "{flags:?}");
    site.set_super_read_only(true).await.unwrap();
    let flags = site.flags().await.unwrap();
    assert!(flags.read_only && flags.super_read_only, "{flags:?}");
    site.execute(&["SET GLOBAL offline_mode = ON"]).await.unwrap();
    assert!(site.offline_mode().await.unwrap());
    site.execute(&["SET GLOBAL offline_mode = OFF"]).await.unwrap();
    site.set_super_read_only(false).await.unwrap();
    assert!(!site.read_only().await.unwrap());
    // A fresh server_uuid per copy; an empty GTID history (the template wrote no binlog).
    assert_eq!(site.server_uuid().await.unwrap().len(), 36);
    assert!(site.gtid_executed().await.unwrap().is_empty());

    // Every account logs in over plain TCP with a cold cache (RSA key fetch).
    for account in accounts::ALL {
        let mut conn = tokio::time::timeout(
            Duration::from_secs(20),
            mysql_async::Conn::new(accounts::opts(&account, site.addr(), None)),
        )
        .await
        .unwrap_or_else(|_| panic!("login as {} timed out", account.user))
        .unwrap_or_else(|e| panic!("login as {}: {e}\n{}", account.user, site.error_log_tail(20)));
        let user: Option<String> = conn.query_first("SELECT CURRENT_USER()").await.unwrap();
        assert_eq!(user.unwrap(), format!("{}@%", account.user));
        conn.disconnect().await.unwrap();
    }
    // The application may write its schema and nothing else.
    let mut app = mysql_async::Conn::new(accounts::opts(&APPLICATION, site.addr(), Some("app")))
        .await
        .unwrap();
    app.query_drop("INSERT INTO ledger (k, writer, written_at_us) VALUES (1, 't', 0)")
        .await
        .unwrap();
    let err = app.query_drop("CREATE DATABASE other").await.unwrap_err();
    assert!(err.to_string().contains("denied"), "{err}");
    let err = app.query_drop("SET GLOBAL super_read_only = ON").await.unwrap_err();
    assert!(err.to_string().contains("denied") || err.to_string().contains("1227"), "{err}");
    app.disconnect().await.unwrap();
    // The operator holds what the restore preflight checks.
    let mut op =
        mysql_async::Conn::new(accounts::opts(&OPERATOR, site.addr(), None)).await.unwrap();
    let grants: Vec<String> = op.query("SHOW GRANTS").await.unwrap();
    let all = grants.join("\n");
    for want in ["CONNECTION_ADMIN", "SYSTEM_VARIABLES_ADMIN", "PROCESS", "REPLICATION_SLAVE_ADMIN"]
    {
        assert!(all.contains(want), "{want} missing: {all}");
    }
    op.disconnect().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_restart_kill_freeze_and_drop_cleanup() {
    let mut site = started("controls", 12).await;
    site.execute(&["INSERT INTO app.ledger (k, writer, written_at_us) VALUES (7, 't', 0)"])
        .await
        .unwrap();
    let before = site.gtid_executed().await.unwrap();
    assert!(!before.is_empty());

    // Restart keeps the data directory.
    site.restart(READY).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(site.gtid_executed().await.unwrap(), before);

    // A frozen server accepts TCP but never answers.
    site.freeze().unwrap();
    let attempt = tokio::time::timeout(
        Duration::from_secs(2),
        mysql_async::Conn::new(accounts::opts(&OPERATOR, site.addr(), None)),
    )
    .await;
    assert!(attempt.is_err(), "a frozen server must not answer");
    site.thaw().unwrap();
    site.wait_ready(READY).await.unwrap();

    // SIGKILL: the crash drill; the data survives and the server recovers.
    site.kill().await.unwrap();
    assert!(!site.is_running());
    assert!(site.error_log_path().exists());
    site.start_and_wait(READY).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(site.gtid_executed().await.unwrap(), before);

    let outcome = site.stop(Duration::from_secs(60)).await.unwrap();
    assert_eq!(outcome, StopOutcome::Clean, "{}", site.error_log_tail(20));
    site.start_and_wait(READY).await.unwrap();

    let dir = site.dir().to_path_buf();
    let pid = site.pid().unwrap();
    drop(site);
    assert!(!dir.exists(), "drop removes the folder");
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "drop kills mysqld");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_folder_is_reused_like_a_pvc_and_extra_options_win() {
    let (dist, template) = dist_and_template().await;
    let parent = tempfile::Builder::new().prefix("brpvc-").tempdir().unwrap();
    let dir = parent.path().join("site");
    let mut spec = InstanceSpec::new("pvc", 21);
    spec.dir = Some(dir.clone());
    spec.keep_on_drop = true;
    spec.extra_options = vec![("read_only".into(), "ON".into())];
    let mut first = Instance::create(&dist, &template, spec.clone()).await.unwrap();
    first.start_and_wait(READY).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(first.read_only().await.unwrap(), "the caller's option comes last and wins");
    first.set_super_read_only(false).await.unwrap();
    first
        .execute(&["INSERT INTO app.ledger (k, writer, written_at_us) VALUES (1, 't', 0)"])
        .await
        .unwrap();
    let (uuid, gtids) = (first.server_uuid().await.unwrap(), first.gtid_executed().await.unwrap());
    drop(first);
    assert!(dir.join("data").exists(), "keep_on_drop keeps the folder");

    // A new Instance on the same folder reuses the data directory (same server, same history).
    let mut second = Instance::create(&dist, &template, spec).await.unwrap();
    second.start_and_wait(READY).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(second.server_uuid().await.unwrap(), uuid);
    assert_eq!(second.gtid_executed().await.unwrap(), gtids);
    second.kill().await.unwrap();
}

/// Seen in CI: another process bound the automatically chosen port between choosing and
/// mysqld's bind, and the lab kubelet restarted mysqld on that port forever. The runner's
/// own start retries on another port, and a caller driving `start`/`wait_ready` itself (the
/// kubelet) gets `replace_port_if_taken` to do the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_taken_before_mysqld_binds_it_is_replaced() {
    let (dist, template) = dist_and_template().await;
    let mut site =
        Instance::create(&dist, &template, InstanceSpec::new("taken", 31)).await.unwrap();
    let squatter = std::net::TcpListener::bind(("127.0.0.1", site.port())).unwrap();
    site.start().unwrap();
    let failure = site.wait_ready(READY).await.expect_err("the port is taken: mysqld must exit");
    assert!(site.replace_port_if_taken(&failure).unwrap(), "not seen as a taken port: {failure}");
    assert_ne!(site.port(), squatter.local_addr().unwrap().port());
    site.start().unwrap();
    site.wait_ready(READY).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(site.flags().await.is_ok());

    // The runner's own start does it unasked; a fixed port is never replaced.
    let mut again =
        Instance::create(&dist, &template, InstanceSpec::new("taken2", 32)).await.unwrap();
    let squatter = std::net::TcpListener::bind(("127.0.0.1", again.port())).unwrap();
    again.start_and_wait(READY).await.unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(again.port(), squatter.local_addr().unwrap().port());
    drop(squatter);
    let mut fixed = InstanceSpec::new("fixed", 33);
    let busy = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    fixed.port = Some(busy.local_addr().unwrap().port());
    let mut fixed = Instance::create(&dist, &template, fixed).await.unwrap();
    fixed.start().unwrap();
    let failure = fixed.wait_ready(READY).await.expect_err("the fixed port is taken");
    assert!(!fixed.replace_port_if_taken(&failure).unwrap(), "a fixed port is the caller's");
    site.kill().await.unwrap();
    again.kill().await.unwrap();
}
