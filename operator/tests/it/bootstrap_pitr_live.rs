//! `spec.initFromBackup.pointInTime` end to end in the live lab (issue 17): lab API server,
//! lab kubelet running real MySQL 9.7 sites with their sidecars archiving PITR binlogs to a
//! PVC archive, and the bootstrap restore Job's init containers (`dump-meta`,
//! `pitr-download`) and main container (the load and the replay) as `bloodraven-sidecar`
//! processes; the operator in this process. `source scripts/provision.sh` and `cargo build -p
//! bloodraven-sidecar` first.
//!
//! The setup of `verification_pitr_live.rs` ([`pitr_source_with_backup`]: a 3-site group
//! `orders` with PITR on its PVC profile, a backup `b1`, two write batches a whole-second
//! target T apart, all archived; the Jobs' claim folder linked to the sidecars' archive
//! folder). Then a new group `restored` with `initFromBackup` from `b1` and `pointInTime:
//! {stopTime: T, archiveProfileName: source-archive}` (a profile of the new group on the
//! source's archive claim and subPath): the restore ends Succeeded with
//! `provenance.pointInTime.outcome` TargetCovered; the seed's `gtid_executed` is the
//! provenance's `gtidExecuted`, holds the first batch and none of the second; its table holds
//! exactly the first batch's rows (and the backup's).
//!
//! The replay runs as the operator account and needs REPLICATION_APPLIER (or BINLOG_ADMIN,
//! or SUPER) for mysqlbinlog's `BINLOG` statements. The lab's operator account holds spec
//! 000's documented minimum for a custom restore account ("The restore account"), which lacks
//! it, so without a grant the restore fails PITRReplayFailed (`ERROR 1227 … Access denied`).
//! The test grants it on the seed before the operator can build the Job: the restored group's
//! operator Secret is created only after the grant, and until then the operator observes
//! nothing of the group.

use std::time::Duration;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::{PointInTimeOutcome, RestorePhase};
use bloodraven_gtid::GtidSet;
use bloodraven_workloads::{Resolver as _, ports};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use mysql_async::prelude::Queryable;
use serde_json::json;

use super::harness::Operator;
use super::live_lab::{
    LiveLab, LiveLabOptions, PitrSource, bounded_wait_for, conn, executed, pitr_source_with_backup,
    tool,
};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
const RESTORED: &str = "restored";
/// The restored group's operator Secret, created once its seed has the replay's grant.
const RESTORED_CREDS: &str = "restored-operator-creds";
/// The source profile's subPath: the backup at `<claim>/orders/b1`, the archive at
/// `<claim>/orders/binlogs`.
const SUB_PATH: &str = "orders";
/// Generous: CI shares 2 cores with other real servers (three source sites, two restored
/// ones, their sidecars, and the restore Job's load and replay).
const BOUND: Duration = Duration::from_secs(300);

bounded_wait_for!(BOUND, Duration::from_millis(500));

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_point_in_time_bootstrap_restore_replays_the_sidecars_archive_to_the_target() {
    let options = LiveLabOptions {
        crds: &["mysqlfailovergroups", "mysqlbackups"],
        job_env: Some(&[
            "BLOODRAVEN_MYSQLDUMP",
            "BLOODRAVEN_MYSQL",
            "BLOODRAVEN_MYSQLD",
            "BLOODRAVEN_MYSQLBINLOG",
            "BLOODRAVEN_MYSQL_BASEDIR",
            "BLOODRAVEN_MYSQL_LC_MESSAGES_DIR",
            "BLOODRAVEN_MYSQL_PLUGIN_DIR",
        ]),
        ..LiveLabOptions::sites(NAMESPACE)
    };
    let live = LiveLab::start_with(options, true).await;
    let Operator { context, controller } = live.operator("test");
    let PitrSource { source, backup_gtids, at_target, acknowledged, target } =
        pitr_source_with_backup(&live, GROUP, SUB_PATH, BOUND).await;
    let after_target = acknowledged.difference(&at_target);
    assert!(backup_gtids.is_subset(&at_target), "the first batch follows the backup");

    // The new group: the backup's profile `pvc` and `source-archive`, both on the source's
    // claim and subPath; no PITR of its own.
    let storage = json!({ "type": "PVC", "pvc": { "claimName": "backups", "subPath": SUB_PATH } });
    let stop = target.to_string();
    let restored: MysqlFailoverGroup = serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlFailoverGroup",
        "metadata": { "name": RESTORED, "namespace": NAMESPACE },
        "spec": {
            "sites": [
                { "name": "iad", "serverID": 201, "role": "PrimaryCandidate", "storage": { "size": "1Gi" } },
                { "name": "pdx", "serverID": 202, "role": "PrimaryCandidate", "storage": { "size": "1Gi" } },
            ],
            "credentials": { "operatorSecretName": RESTORED_CREDS },
            "pollInterval": "1s",
            "backup": { "profiles": [
                { "name": "pvc", "storage": storage },
                { "name": "source-archive", "storage": storage },
            ]},
            "initFromBackup": {
                "source": { "backupRef": { "name": "b1" } },
                "pointInTime": { "stopTime": stop, "archiveProfileName": "source-archive" },
            },
        },
    }))
    .unwrap();
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(live.client.clone(), NAMESPACE);
    groups.create(&PostParams::default(), &restored).await.expect("the restored group");
    // The replay needs REPLICATION_APPLIER (or BINLOG_ADMIN, or SUPER) for mysqlbinlog's
    // BINLOG statements; the lab's operator account holds spec 000's documented minimum for a
    // custom restore account, which lacks it (the default setup's account holds ALL
    // PRIVILEGES). The restored group's Secret does not exist yet, so the operator observes
    // nothing and builds no Job until the seed has the grant.
    let resolver = live.kubelet.resolver();
    let seed_addr = wait_for("the restored group's seed iad to answer", || async {
        let service = format!("mysql-{RESTORED}-iad-internal");
        let address = resolver.resolve(NAMESPACE, &service, ports::MYSQL)?;
        let addr = format!("{}:{}", address.host, address.port);
        conn(&addr).await.map(drop)?;
        Some(addr)
    })
    .await;
    grant_as_root(&seed_addr, "GRANT REPLICATION_APPLIER ON *.* TO 'bloodraven_operator'@'%'")
        .await;
    let secrets: Api<Secret> = Api::namespaced(live.client.clone(), NAMESPACE);
    let mut creds = secrets.get("mysql-operator-creds").await.expect("the operator Secret");
    creds.metadata = kube::api::ObjectMeta {
        name: Some(RESTORED_CREDS.to_owned()),
        ..kube::api::ObjectMeta::default()
    };
    secrets.create(&PostParams::default(), &creds).await.expect("the restored group's Secret");
    let restore = wait_for("the point-in-time bootstrap restore to end", || async {
        let restore = groups.get(RESTORED).await.ok()?.status?.restore?;
        matches!(restore.phase, Some(RestorePhase::Succeeded | RestorePhase::Failed))
            .then_some(restore)
    })
    .await;
    assert_eq!(
        restore.phase,
        Some(RestorePhase::Succeeded),
        "{restore:#?}\nthe Jobs' logs: {}",
        live.job_logs()
    );
    let verdict = restore
        .provenance
        .as_ref()
        .and_then(|provenance| provenance.point_in_time.clone())
        .unwrap_or_else(|| panic!("no provenance.pointInTime: {restore:#?}"));
    assert_eq!(verdict.outcome, Some(PointInTimeOutcome::TargetCovered), "{verdict:#?}");
    assert!(verdict.transactions.unwrap_or(0) > 0, "it replayed the archive: {verdict:#?}");
    let certified: GtidSet = verdict
        .gtid_executed
        .clone()
        .unwrap_or_else(|| panic!("no gtidExecuted: {verdict:#?}"))
        .replace('\n', "")
        .parse()
        .expect("the verdict's GTID set");

    // The seed holds what the verdict certified: the first batch, none of the second.
    assert_eq!(restore.target_site.as_deref(), Some("iad"), "the granted seed: {restore:#?}");
    let mut seeded = conn(&seed_addr).await.expect("the seed answers");
    let seed_set = executed(&mut seeded).await;
    assert_eq!(seed_set, certified, "the seed's gtid_executed is provenance.pointInTime's");
    assert!(
        at_target.is_subset(&seed_set) && seed_set.intersection(&after_target).is_empty(),
        "the seed holds the set at {stop}: {at_target} ⊆ {seed_set}, nothing of {after_target}"
    );
    let ids: Vec<i32> = seeded.query("SELECT id FROM app.orders ORDER BY id").await.unwrap();
    assert_eq!(ids, (0..75).collect::<Vec<_>>(), "the backup's rows and the first batch's only");
    let _ = seeded.disconnect().await;
    let _ = source.disconnect().await;

    controller.abort();
    let _ = controller.await;
    drop(context);
    live.stop().await;
}

/// Runs `statement` as root over the unix socket of the site at `addr` (its `@@socket`), with
/// `sql_log_bin = 0` so the site stays without transactions and `super_read_only` lifted for
/// it (then put back); panics if it fails.
async fn grant_as_root(addr: &str, statement: &str) {
    let mut site = conn(addr).await.expect("the site answers");
    let socket: String =
        site.query_first("SELECT @@socket").await.expect("reading @@socket").expect("a row");
    let _ = site.disconnect().await;
    let output = tokio::process::Command::new(tool("BLOODRAVEN_MYSQL"))
        .arg("--no-defaults")
        .arg("--user=root")
        .arg(format!("--socket={socket}"))
        .arg("--batch")
        .arg("-e")
        .arg(format!(
            "SET SESSION sql_log_bin = 0; SET @prior = @@global.super_read_only; \
             SET GLOBAL super_read_only = OFF; {statement}; SET GLOBAL super_read_only = @prior"
        ))
        .kill_on_drop(true)
        .output()
        .await
        .expect("running the mysql client");
    assert!(
        output.status.success(),
        "{statement} as root on {socket}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
