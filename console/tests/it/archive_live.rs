//! `bloodraven lab --live --encrypted-archive` through its library entry (issue 18): the
//! operator binary renders the passphrase Secret as each sidecar's key file, the primary's
//! sidecar seals what it archives, and the console's archive source opens the lab's archive
//! with the passphrase file the lab wrote, covering the acknowledged writes; without a
//! passphrase file it reports the archive Locked with the flag to set, and with a wrong one it
//! names the file. Needs MySQL 9.7 (`source scripts/provision.sh`), the operator and the
//! sidecar binaries (`cargo build -p bloodraven-operator -p bloodraven-sidecar`).

use std::time::{Duration, Instant};

use bloodraven_console::archive::{
    ArchiveAccess, ArchiveKeyError, ArchiveOutcome, ArchiveRequest, load, locate,
};
use bloodraven_console::live;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_gtid::GtidSet;
use bloodraven_sites::accounts::{self, OPERATOR};
use mysql_async::prelude::Queryable as _;

use crate::live::operator_bin;

/// Polls `probe` every 500 ms until it gives a value; after `timeout` panics naming `what` and
/// the last thing seen.
async fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut probe: impl AsyncFnMut() -> Result<T, String>,
) -> T {
    let started = Instant::now();
    loop {
        match probe().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                started.elapsed() < timeout,
                "waited {timeout:?} for {what}; last seen: {seen}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_opens_the_encrypted_lab_archive_with_its_key_file_and_is_locked_without() {
    crate::install_crypto();
    let (live, archive) =
        live::start_encrypted(operator_bin()).await.unwrap_or_else(|e| panic!("{e:#}"));
    let run = async {
        live::wait_ready(&live, Duration::from_secs(180)).await.unwrap_or_else(|e| panic!("{e:#}"));
        // The workload on the primary: acknowledged writes, then a rotation seals the file.
        // The `-primary` Service gets its link once the operator named the active site.
        let pool = wait_for("the primary to take a write", Duration::from_secs(150), async || {
            let addr = live.primary_addr().map_err(|e| e.to_string())?;
            let pool = mysql_async::Pool::new(accounts::opts(&OPERATOR, addr, None));
            let created = async {
                let mut conn = pool.get_conn().await?;
                conn.query_drop("CREATE TABLE IF NOT EXISTS app.sealed (id INT PRIMARY KEY)").await
            }
            .await;
            match created {
                Ok(()) => Ok(pool),
                Err(error) => {
                    let _ = pool.disconnect().await;
                    Err(error.to_string())
                }
            }
        })
        .await;
        let mut conn = pool.get_conn().await.unwrap();
        for id in 0..20 {
            conn.exec_drop("INSERT INTO app.sealed VALUES (?)", (id,)).await.unwrap();
        }
        let acknowledged: String =
            conn.query_first("SELECT @@global.gtid_executed").await.unwrap().unwrap();
        let acknowledged: GtidSet = acknowledged.replace('\n', "").parse().unwrap();
        conn.query_drop("FLUSH BINARY LOGS").await.unwrap();
        drop(conn);
        pool.disconnect().await.unwrap();

        let group: MysqlFailoverGroup =
            serde_json::from_value(live.group_object().expect("the group")).unwrap();
        let location = locate(&group).unwrap();
        assert_eq!(location.to_string(), "pvc://orders/pitr/orders/binlogs");
        let request = ArchiveRequest { location: location.clone(), backups: Vec::new() };
        let access = |file: Option<std::path::PathBuf>| ArchiveAccess {
            archive_root: Some(archive.archive_root.clone()),
            secret_client: None,
            passphrase_file: file,
        };
        // With the lab's passphrase file: every acknowledged write is in the rows the console
        // read (opened, authenticated and indexed as pitr-download reads them).
        let keyed = access(Some(archive.passphrase_file.clone()));
        let summary = wait_for(
            "the console to read the acknowledged writes from the encrypted archive",
            Duration::from_secs(120),
            async || match load(&keyed, &request).await {
                ArchiveOutcome::Covered(summary) => {
                    let history = summary.history.as_ref().ok_or("no history")?;
                    let mut read = GtidSet::new();
                    for file in &history.0.files {
                        for gtid in file.txns().iter().filter_map(|txn| txn.gtid.as_ref()) {
                            read.insert(gtid).map_err(|e| e.to_string())?;
                        }
                    }
                    if acknowledged.is_subset(&read) {
                        Ok(summary)
                    } else {
                        Err(format!("read {read}, acknowledged {acknowledged}"))
                    }
                }
                other => Err(format!("{other:?}")),
            },
        )
        .await;
        assert!(summary.sites.iter().any(|site| !site.files.is_empty()), "{:?}", summary.sites);

        // Without a passphrase file: Locked, saying what to set.
        let outcome = load(&access(None), &request).await;
        let ArchiveOutcome::Locked(error) = &outcome else { panic!("{outcome:?}") };
        assert_eq!(error, &ArchiveKeyError::Encrypted { location: location.to_string() });
        assert!(error.to_string().contains("--pitr-passphrase-file"), "{error}");

        // A wrong passphrase: Locked, naming the file.
        let wrong = live.dir().join("wrong-passphrase");
        std::fs::write(&wrong, b"not the lab's passphrase").unwrap();
        let outcome = load(&access(Some(wrong.clone())), &request).await;
        let ArchiveOutcome::Locked(ArchiveKeyError::WrongKey { file, .. }) = &outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(file, &wrong);
    };
    // The lab is stopped whatever the assertions said, and within a bound.
    let bounded = tokio::time::timeout(Duration::from_secs(600), run);
    let outcome = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(bounded)).await;
    let directory = live.dir().to_owned();
    live.stop().await;
    match outcome {
        Err(panic) => std::panic::resume_unwind(panic),
        Ok(Err(_)) => panic!("the encrypted live lab test did not finish within 600 s"),
        Ok(Ok(())) => {}
    }
    assert!(!directory.exists(), "{} left behind", directory.display());
}
