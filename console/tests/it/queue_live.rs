//! Issue #16, a Held reclone queue decided from the console on the LIVE lab: the lab API
//! server, the lab kubelet running the example group's sites as real MySQL 9.7 and batch Jobs
//! as `bloodraven-sidecar` processes, and the workspace's `bloodraven-operator` binary (`source
//! scripts/provision.sh`, `cargo build -p bloodraven-operator -p bloodraven-sidecar`).
//!
//! The operator takes a backup (its MysqlBackup controller's Job), a chunk of it is damaged in
//! place (same size: the artifact check passes, the load fails after its DROP), and an in-place
//! restore of it fails: the operator holds the reclone queue with both peers, which keep their
//! pre-restore data. The console binary in tmux, in write mode, opens the group's reclone panel,
//! proposes "keep the primary's data" (Draining), shows the spec's data-loss statement, is
//! confirmed by typing the group name, and follows the queue draining site by site until every
//! peer is recloned from the primary. The audit journal holds one record pair and no lab secret.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_console::journal::Journal;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::{BackupPhase, MysqlBackup};
use bloodraven_crd::group::{RestoreInPlacePhase, RestoreReclonesPhase};
use bloodraven_drill::live::{OperatorEnv, OperatorLauncher as _, ProcessLauncher};
use bloodraven_kubelet::claims::claim_folder;
use bloodraven_kubelet::{JobConfig, Kubelet, KubeletConfig, SidecarConfig};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::ensure_template_async;
use bloodraven_sites::workload::{Workload, WorkloadConfig};
use bloodraven_workloads::{Resolver as _, ports};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::guided_live::{LAB_SECRETS, keys, wait_live};
use crate::tmux::{BINARY, Server, tmux_path};

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
const BACKUP: &str = "nightly-1";
/// Generous: CI shares 2 cores with three mysqlds, the operator, Jobs and the console; a step
/// here may include a CLONE.
const BOUND: Duration = Duration::from_secs(300);
const SCREEN_BOUND: Duration = Duration::from_secs(90);

/// Polls `check` every 500 ms until it yields, or fails after [`BOUND`] naming `what`.
async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(started.elapsed() < BOUND, "waited {BOUND:?} for {what}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn tool(var: &str) -> String {
    std::env::var(var)
        .unwrap_or_else(|_| panic!("{var} is unset: run `source scripts/provision.sh` first"))
}

/// The status's executed set of `site`.
fn executed(group: &MysqlFailoverGroup, site: &str) -> Option<String> {
    group
        .status
        .as_ref()?
        .sites
        .iter()
        .find(|s| s.name == site)?
        .gtid_executed
        .as_ref()
        .map(|set| set.replace('\n', ""))
}

/// The lab with the example group, a `backups` claim and a PVC profile, its kubelet (sites
/// and Jobs) and the operator binary.
struct World {
    lab: Lab,
    kubelet: Kubelet,
    groups: Api<MysqlFailoverGroup>,
    backups: Api<MysqlBackup>,
    operator: Box<dyn bloodraven_drill::live::RunningOperator>,
    kubeconfig: std::path::PathBuf,
    /// The `backups` claim's folder on this machine.
    claim: std::path::PathBuf,
}

async fn world(root: &Path) -> World {
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let sidecar = SidecarConfig::locate()
        .expect("the sidecar binary: run `cargo build -p bloodraven-sidecar` first");
    let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
    let root_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    // Every CRD the operator and the console watch (the console's sources need the
    // verifications too, or it stays "reconnecting").
    for crd in [
        "mysqlfailovergroups.shipstream.io",
        "mysqlbackups.shipstream.io",
        "mysqlbackupverifications.shipstream.io",
        "external/dnsendpoints.externaldns.k8s.io",
    ] {
        let text = std::fs::read_to_string(format!("{root_dir}/deploy/crds/{crd}.yaml"))
            .expect("deploy/crds");
        lab.load_crds(&text).expect("the CRD");
    }
    let example = std::fs::read_to_string(format!("{root_dir}/deploy/examples/group.yaml"))
        .expect("deploy/examples/group.yaml");
    lab.apply_yaml(&example).expect("the example group");
    let claim = lab
        .apply(json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": { "name": "backups", "namespace": NAMESPACE },
            "spec": { "accessModes": ["ReadWriteOnce"],
                      "resources": { "requests": { "storage": "1Gi" } } },
        }))
        .expect("the backup claim");
    let url = lab.url().parse().expect("the lab's URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("a client of the lab");
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);
    let profiles = json!({ "spec": { "backup": { "profiles": [
        { "name": "nightly", "storage": { "type": "PVC", "pvc": { "claimName": "backups" } } },
    ]}}});
    groups
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&profiles))
        .await
        .expect("the backup profile");

    let template = ensure_template_async(&dist).await.expect("the template data directory");
    let kubeconfig = root.join("kubeconfig");
    lab.write_kubeconfig(&kubeconfig, None).expect("a kubeconfig of the lab");
    let hub = Arc::new(ProxyHub::current().expect("a tokio runtime"));
    let mut config = KubeletConfig::new(root.join("c"));
    config.namespace = Some(NAMESPACE.to_owned());
    config.jobs = Some(
        JobConfig::new(root.join("jobs"))
            .executable("bloodraven-sidecar", &sidecar)
            .env("BLOODRAVEN_MYSQL", tool("BLOODRAVEN_MYSQL"))
            .env("BLOODRAVEN_MYSQLDUMP", tool("BLOODRAVEN_MYSQLDUMP")),
    );
    let kubelet =
        Kubelet::start(client.clone(), dist, template, hub, config).await.expect("the kubelet");
    lab.set_pod_logs(Arc::new(kubelet.log_source()));
    let uid = claim["metadata"]["uid"].as_str().expect("the claim's uid").to_owned();
    let claim = claim_folder(&root.join("c"), NAMESPACE, "backups", &uid);
    std::fs::create_dir_all(&claim).expect("the claim's folder");
    let operator = ProcessLauncher { bin: crate::live::operator_bin() }
        .launch(&OperatorEnv {
            client: client.clone(),
            kubeconfig: kubeconfig.clone(),
            resolver: kubelet.resolver(),
            namespace: NAMESPACE.to_owned(),
            name: "operator".to_owned(),
            log_dir: root.to_owned(),
            http: None,
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let backups = Api::namespaced(client, NAMESPACE);
    World { lab, kubelet, groups, backups, operator, kubeconfig, claim }
}

/// The restore's request: `spec.restoreInPlace` of backup [`BACKUP`], confirmed by `token`.
async fn restore_in_place(groups: &Api<MysqlFailoverGroup>, token: &str) {
    let body = json!({ "spec": { "restoreInPlace": {
        "confirm": token,
        "source": { "backupRef": { "name": BACKUP } },
    }}});
    groups.patch(GROUP, &PatchParams::default(), &Patch::Merge(body)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::print_stdout, reason = "the screens seen are the test's record (--no-capture)")]
async fn a_held_queue_from_a_failed_in_place_restore_is_drained_from_the_console_site_by_site() {
    crate::install_crypto();
    let root = tempfile::Builder::new().prefix("brq-").tempdir_in("/tmp").expect("a short root");
    let World { lab, kubelet, groups, backups, operator, kubeconfig, claim } =
        world(root.path()).await;

    // The operator converges the group.
    let primary = wait_for("the operator to converge the group", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let active = status.active_site.clone()?;
        (status.sites.len() == 3
            && status.sites.iter().all(|s| s.name == active || s.replicating == Some(true)))
        .then_some(active)
    })
    .await;
    // Data the backup holds: application writes through the primary.
    let address = kubelet
        .resolver()
        .resolve(NAMESPACE, &format!("mysql-{GROUP}-{primary}-internal"), ports::MYSQL)
        .expect("the primary's internal Service resolves");
    let addr = format!("{}:{}", address.host, address.port).parse().expect("an address");
    let mut config = WorkloadConfig::new(addr);
    config.rate_per_sec = 20;
    config.writer = "queue-live".into();
    let writes = Workload::start(config);
    writes.wait_acknowledged(30, SCREEN_BOUND).await.unwrap_or_else(|e| panic!("{e}"));
    writes.stop().await.unwrap_or_else(|e| panic!("{e}"));

    // The backup, by the operator's MysqlBackup controller and its Job.
    let backup: MysqlBackup = serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlBackup",
        "metadata": { "name": BACKUP, "namespace": NAMESPACE },
        "spec": { "failoverGroupRef": { "name": GROUP }, "profileName": "nightly" },
    }))
    .unwrap();
    backups.create(&kube::api::PostParams::default(), &backup).await.unwrap();
    wait_for("the backup to succeed", || async {
        let status = backups.get(BACKUP).await.ok()?.status?;
        assert_ne!(status.phase, Some(BackupPhase::Failed), "the backup failed: {status:?}");
        (status.phase == Some(BackupPhase::Succeeded)).then_some(())
    })
    .await;

    // A chunk damaged in place (same size, so the artifact check passes; its SHA-256 fails
    // during the load, after the DROP), then the in-place restore of it.
    let chunk = std::fs::read_dir(claim.join(BACKUP))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|path| {
            path.file_name().is_some_and(|n| !n.to_string_lossy().starts_with('@'))
                && path.is_file()
        })
        .expect("a chunk file in the backup");
    let mut bytes = std::fs::read(&chunk).unwrap();
    for byte in bytes.iter_mut().take(64) {
        *byte ^= 0xff;
    }
    std::fs::write(&chunk, bytes).unwrap();
    restore_in_place(&groups, "2030-01-01T00:00:00Z").await;
    let held = wait_for("the failed restore to hold the queue", || async {
        let status = groups.get(GROUP).await.ok()?.status?;
        let run = status.restore_in_place?;
        let queue = status.restore_reclones?;
        assert_ne!(
            run.phase,
            Some(RestoreInPlacePhase::Succeeded),
            "the restore of a damaged chunk succeeded: {:?}",
            run.message
        );
        (run.phase == Some(RestoreInPlacePhase::Failed)
            && queue.phase == Some(RestoreReclonesPhase::Held))
        .then_some(queue)
    })
    .await;
    let mut peers = held.pending.clone();
    peers.sort();
    assert_eq!(peers.len(), 2, "every peer is held: {held:?}");
    let before = groups.get(GROUP).await.unwrap();
    let held_sets: Vec<Option<String>> = peers.iter().map(|p| executed(&before, p)).collect();

    // The console, in write mode, decides the queue.
    let journal = root.path().join("journal");
    let command = format!(
        "exec env TERM=xterm-256color XDG_CONFIG_HOME={} BLOODRAVEN_JOURNAL_DIR={} {BINARY} \
         --log-file {} --kubeconfig {} -n {NAMESPACE} --write",
        root.path().join("config").display(),
        journal.display(),
        root.path().join("console.log").display(),
        kubeconfig.display()
    );
    let server = Server {
        tmux: tmux_path(),
        socket: format!("bloodraven-e2e-queue-live-{}", std::process::id()),
    };
    let driven = tokio::task::spawn_blocking(move || {
        let started =
            server.tmux(&["new-session", "-d", "-s", "console", "-x", "120", "-y", "40", &command]);
        assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
        wait_live(&server, &["orders", "connected", "WRITE"], SCREEN_BOUND);
        keys(&server, &["Enter"]);
        wait_live(&server, &["Overview", "orders/orders"], SCREEN_BOUND);
        keys(&server, &["4"]);
        let panel = wait_live(
            &server,
            &[
                "Held",
                "HELD: the held sites keep their pre-restore data",
                "a: choose through a confirm dialog (write mode is on)",
            ],
            SCREEN_BOUND,
        );
        keys(&server, &["a"]);
        wait_live(
            &server,
            &["guided operations: orders/orders · the reclone panel", "drain the held"],
            SCREEN_BOUND,
        );
        keys(&server, &["Enter"]);
        let dialog = wait_live(
            &server,
            &[
                "confirm: reclone-queue-drain",
                "data loss: Keep the primary's data",
                "RBAC: allowed",
                "type \"orders\" to confirm",
            ],
            SCREEN_BOUND,
        );
        assert!(!dialog.contains(" refuse "), "nothing refuses a Held queue:\n{dialog}");
        keys(&server, &["-l", "orders"]);
        wait_live(&server, &["type \"orders\" to confirm: orders_"], SCREEN_BOUND);
        keys(&server, &["Tab"]);
        wait_live(&server, &["[ Confirm ]"], SCREEN_BOUND);
        keys(&server, &["Enter"]);
        wait_live(&server, &["sent: operation reclone-queue-drain-"], SCREEN_BOUND);
        // The follow-through, site by site, until the queue is gone.
        let deadline = Instant::now() + BOUND;
        let mut seen: Vec<String> = Vec::new();
        let drained = loop {
            let screen = server.capture();
            let line = screen
                .lines()
                .find_map(|line| {
                    let at = line.find(" reclone queue: ")?;
                    let rest = &line[at + " reclone queue: ".len()..];
                    Some(rest.split(['│', ' ']).next().unwrap_or_default().to_owned())
                })
                .unwrap_or_default();
            if !line.is_empty() && seen.last() != Some(&line) {
                seen.push(line.clone());
            }
            if line == "-" {
                break screen;
            }
            assert!(
                Instant::now() < deadline,
                "waited {BOUND:?} for the queue to drain; followed {seen:?}; the pane:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        keys(&server, &["x"]);
        let after = wait_live(&server, &["No reclone queue"], SCREEN_BOUND);
        keys(&server, &["q"]);
        let deadline = Instant::now() + Duration::from_secs(20);
        while server.tmux(&["has-session", "-t", "console"]).status.success() {
            assert!(Instant::now() < deadline, "the console did not quit on q");
            std::thread::sleep(Duration::from_millis(100));
        }
        (panel, dialog, seen, drained, after)
    });
    let (panel, dialog, seen, drained, after) = tokio::time::timeout(BOUND * 2, driven)
        .await
        .unwrap_or_else(|_| panic!("the tmux run did not end within {:?}", BOUND * 2))
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()));
    println!("{panel}\n{dialog}\n{drained}\n{after}\nfollowed: {seen:?}");
    // Site by site: the queue shrank one site at a time to none.
    assert_eq!(seen.first().map(String::as_str), Some("Draining(2)"), "{seen:?}");
    assert!(seen.iter().any(|s| s == "Draining(1)"), "one site drained before the other: {seen:?}");
    assert_eq!(seen.last().map(String::as_str), Some("-"), "{seen:?}");

    // Every peer recloned from the primary: it holds the primary's set (not its held one)
    // and replicates.
    for (peer, held_set) in peers.iter().zip(&held_sets) {
        wait_for(&format!("{peer} recloned from the primary and replicating"), || async {
            let group = groups.get(GROUP).await.ok()?;
            let site = group.status.as_ref()?.sites.iter().find(|s| &s.name == peer)?.clone();
            let set = executed(&group, peer)?;
            (site.replicating == Some(true)
                && Some(&set) == executed(&group, &primary).as_ref()
                && Some(&set) != held_set.as_ref())
            .then_some(())
        })
        .await;
    }

    drop(operator);
    kubelet.shutdown().await;
    lab.stop().await.expect("the lab API server stops");

    let records = Journal::read_all(&journal).unwrap();
    assert_eq!(records.len(), 2, "{records:#?}");
    assert_eq!((&records[0]["phase"], &records[1]["phase"]), (&"before".into(), &"after".into()));
    assert_eq!(records[0]["id"], records[1]["id"]);
    assert_eq!(records[1]["result"], "sent", "{:#}", records[1]);
    let text: String = std::fs::read_dir(&journal)
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    assert!(text.contains("reclone-queue-drain"), "{text}");
    for secret in LAB_SECRETS {
        assert!(!text.contains(secret), "the journal holds the lab secret {secret}");
    }
}
