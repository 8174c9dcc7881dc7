//! `bloodraven backup <group> --wait` against a live lab: the lab API server, the lab kubelet
//! running the example group's sites as real MySQL 9.7 and backup Jobs as `bloodraven-sidecar
//! backup` processes, and the workspace's `bloodraven-operator` binary (its MysqlBackup
//! controller makes the Job). Needs `source scripts/provision.sh`, `cargo build -p
//! bloodraven-operator -p bloodraven-sidecar`.
//!
//! A backup to a PVC profile is followed to Succeeded: exit 0 and the artifact printed. A
//! backup to an S3 endpoint nothing serves is followed to Failed: a non-zero exit naming the
//! reason.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_drill::live::{OperatorEnv, OperatorLauncher as _, ProcessLauncher};
use bloodraven_kubelet::{JobConfig, Kubelet, KubeletConfig, SidecarConfig};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::ensure_template_async;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::tmux::BINARY;

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
/// Generous: CI shares 2 cores with three mysqlds, the operator and the Job.
const BOUND: Duration = Duration::from_secs(240);

/// `bloodraven -n orders backup orders --profile <profile> --wait --yes --confirm orders`, off
/// the runtime (the lab and the kubelet run on it), bounded, killed when it overruns; its
/// exit status, stdout and stderr.
async fn backup_wait(kubeconfig: &Path, journal: &Path, profile: &str) -> (bool, String, String) {
    let (kubeconfig, journal, profile) =
        (kubeconfig.to_owned(), journal.to_owned(), profile.to_owned());
    tokio::task::spawn_blocking(move || {
        let out = journal.join(format!("{profile}.out"));
        let err = journal.join(format!("{profile}.err"));
        std::fs::create_dir_all(&journal).unwrap();
        let mut child = Command::new(BINARY)
            .env("BLOODRAVEN_JOURNAL_DIR", journal.join("records"))
            .env("XDG_CONFIG_HOME", journal.join("config"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["-n", NAMESPACE, "backup", GROUP, "--profile", &profile, "--wait"])
            .args(["--wait-timeout", &BOUND.as_secs().to_string(), "--yes", "--confirm", GROUP])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + BOUND + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "`backup --profile {profile} --wait` did not end in {BOUND:?}; stdout:\n{}",
                    std::fs::read_to_string(&out).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        (
            status.success(),
            std::fs::read_to_string(&out).unwrap(),
            std::fs::read_to_string(&err).unwrap(),
        )
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::print_stdout, reason = "the verb's output is the test's record (--no-capture)")]
async fn backup_wait_prints_the_artifact_and_a_failed_backup_exits_non_zero_with_its_reason() {
    crate::install_crypto();
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let sidecar = SidecarConfig::locate()
        .expect("the sidecar binary: run `cargo build -p bloodraven-sidecar` first");
    let mysqldump = std::env::var("BLOODRAVEN_MYSQLDUMP")
        .expect("BLOODRAVEN_MYSQLDUMP is unset: run `source scripts/provision.sh` first");
    let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
    let root_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    for crd in ["mysqlfailovergroups", "mysqlbackups"] {
        let text =
            std::fs::read_to_string(format!("{root_dir}/deploy/crds/{crd}.shipstream.io.yaml"))
                .expect("deploy/crds");
        lab.load_crds(&text).expect("the CRD");
    }
    let example = std::fs::read_to_string(format!("{root_dir}/deploy/examples/group.yaml"))
        .expect("deploy/examples/group.yaml");
    lab.apply_yaml(&example).expect("the example group");
    lab.apply(json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": { "name": "backups", "namespace": NAMESPACE },
        "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } },
    }))
    .expect("the backup claim");
    lab.apply(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "name": "s3-keys", "namespace": NAMESPACE },
        "stringData": { "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK" },
    }))
    .expect("the S3 keys");
    let url = lab.url().parse().expect("the lab's URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("a client of the lab");
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);
    let profiles = json!({ "spec": { "backup": { "profiles": [
        { "name": "pvc", "storage": { "type": "PVC", "pvc": { "claimName": "backups" } } },
        { "name": "nowhere", "storage": { "type": "S3", "s3": {
            "bucket": "backups", "endpointURL": "http://127.0.0.1:1", "region": "us-east-1",
            "credentialsSecretName": "s3-keys" } } },
    ]}}});
    groups
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&profiles))
        .await
        .expect("the backup profiles");

    let template = ensure_template_async(&dist).await.expect("the template data directory");
    let root = tempfile::Builder::new().prefix("brc-").tempdir_in("/tmp").expect("a short root");
    let kubeconfig = root.path().join("kubeconfig");
    lab.write_kubeconfig(&kubeconfig, None).expect("a kubeconfig of the lab");
    let hub = Arc::new(ProxyHub::current().expect("a tokio runtime"));
    let mut config = KubeletConfig::new(root.path().join("c"));
    config.namespace = Some(NAMESPACE.to_owned());
    config.jobs = Some(
        JobConfig::new(root.path().join("jobs"))
            .executable("bloodraven-sidecar", &sidecar)
            .env("BLOODRAVEN_MYSQLDUMP", mysqldump),
    );
    let kubelet =
        Kubelet::start(client.clone(), dist, template, hub, config).await.expect("the kubelet");
    lab.set_pod_logs(Arc::new(kubelet.log_source()));
    let operator = ProcessLauncher { bin: crate::live::operator_bin() }
        .launch(&OperatorEnv {
            client: client.clone(),
            kubeconfig: kubeconfig.clone(),
            resolver: kubelet.resolver(),
            namespace: NAMESPACE.to_owned(),
            name: "operator".to_owned(),
            log_dir: root.path().to_owned(),
            http: None,
        })
        .unwrap_or_else(|e| panic!("{e}"));

    // The operator converges the group (a backup needs a source site).
    let started = Instant::now();
    loop {
        let status = groups.get(GROUP).await.ok().and_then(|group| group.status);
        if status.as_ref().is_some_and(|status| {
            status.active_site.is_some()
                && status.sites.len() == 3
                && status.sites.iter().all(|site| {
                    Some(&site.name) == status.active_site.as_ref()
                        || site.replicating == Some(true)
                })
        }) {
            break;
        }
        assert!(
            started.elapsed() < BOUND,
            "waited {BOUND:?} for the operator to converge the group; status: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let journal = root.path().join("journal");
    let (succeeded, stdout, stderr) = backup_wait(&kubeconfig, &journal, "pvc").await;
    assert!(succeeded, "backup --wait failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("phase Succeeded"), "{stdout}");
    assert!(
        stdout.contains("outcome: Succeeded: artifact ") && stdout.contains("(PVC claim backups)"),
        "the artifact is printed:\n{stdout}"
    );
    assert!(stdout.contains("gtidExecuted "), "{stdout}");
    println!("backup --profile pvc --wait (exit 0):\n{stdout}");

    let (succeeded, stdout, stderr) = backup_wait(&kubeconfig, &journal, "nowhere").await;
    assert!(!succeeded, "a failed backup exits non-zero:\n{stdout}\n{stderr}");
    assert!(stdout.contains("phase Failed"), "{stdout}\n{stderr}");
    assert!(stderr.contains("ended Failed ("), "the reason is named:\n{stderr}");
    println!("backup --profile nowhere --wait (exit non-zero):\n{stdout}{stderr}");

    drop(operator);
    kubelet.shutdown().await;
    lab.stop().await.expect("the lab API server stops");
}
