//! `bloodraven lab --live`: a live lab on this machine, through the drill crate's harness
//! (`bloodraven_drill::live`): the lab API server, the lab kubelet (real `mysqld` per site
//! Deployment), the fault proxies (one link per Service endpoint), the operator (the
//! workspace's own `bloodraven-operator` build) and the 3-site group of
//! `deploy/examples/group.yaml` (`iad`, `pdx` PrimaryCandidate, `fra` DisasterRecovery), whose
//! site workloads the operator creates. With `--encrypted-archive` the group archives its
//! binlogs encrypted ([`start_encrypted`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_drill::live::{LiveLab, LiveOptions, OperatorLauncher, ProcessLauncher};
use serde::Deserialize as _;

/// The example group (with its Namespace and credentials Secret, which the harness makes).
const EXAMPLE: &str = include_str!("../../deploy/examples/group.yaml");

/// The MysqlFailoverGroup of a multi-document manifest.
pub fn example_group(text: &str) -> anyhow::Result<MysqlFailoverGroup> {
    for document in serde_norway::Deserializer::from_str(text) {
        let value = serde_json::Value::deserialize(document).context("a manifest document")?;
        if value["kind"] == "MysqlFailoverGroup" {
            return serde_json::from_value(value).context("the example MysqlFailoverGroup");
        }
    }
    anyhow::bail!("deploy/examples/group.yaml has no MysqlFailoverGroup")
}

/// The operator binary: `BLOODRAVEN_OPERATOR_BIN`, else `bloodraven-operator` next to this
/// binary (the workspace's own build: `cargo build -p bloodraven-operator`).
pub fn operator_bin() -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os("BLOODRAVEN_OPERATOR_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().context("locating this binary")?;
    let sibling = exe.with_file_name("bloodraven-operator");
    anyhow::ensure!(
        sibling.is_file(),
        "the live lab starts the operator, and {} does not exist: run `cargo build -p \
         bloodraven-operator` (or set BLOODRAVEN_OPERATOR_BIN)",
        sibling.display()
    );
    Ok(sibling)
}

/// Starts the live lab with the example group and the operator. Needs MySQL 9.7 (`source
/// scripts/provision.sh`).
pub async fn start(bin: PathBuf) -> anyhow::Result<LiveLab> {
    let group = example_group(EXAMPLE)?;
    let launcher: Arc<dyn OperatorLauncher> = Arc::new(ProcessLauncher { bin });
    LiveLab::start(&group, Some(launcher)).await.context("starting the live lab")
}

/// What `--encrypted-archive` set up: where the archive is and the passphrase the console
/// opens it with. The passphrase itself is only in the Secret and the 0600 file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabArchive {
    /// The passphrase Secret (in the group's namespace) and its key.
    pub secret: String,
    pub key: String,
    /// The profile's claim and subPath (the archive is `<subPath>/binlogs` on the claim).
    pub claim: String,
    pub sub_path: String,
    /// The console's `--archive-root` for it: the lab's stand-in for the sidecars' PVC mount,
    /// holding the archive at `<namespace>/<claim>/<subPath>/binlogs`.
    pub archive_root: PathBuf,
    /// The console's `--pitr-passphrase-file` for it.
    pub passphrase_file: PathBuf,
}

/// The archive profile `--encrypted-archive` adds.
pub const ARCHIVE_PROFILE: &str = "archive";
/// Its claim.
pub const ARCHIVE_CLAIM: &str = "pitr";
/// The key of the passphrase Secret.
pub const ARCHIVE_KEY: &str = "passphrase";

/// `group` archiving its binlogs encrypted: a PVC profile [`ARCHIVE_PROFILE`] (claim
/// [`ARCHIVE_CLAIM`], subPath the group's name) whose `encryption.passphraseSecretKeyRef` is
/// key [`ARCHIVE_KEY`] of Secret `<group>-archive-key`, and PITR on it. Returns the Secret's
/// name.
pub fn encrypt_archive(group: &mut MysqlFailoverGroup) -> String {
    use bloodraven_crd::group::{
        BackupEncryption, BackupProfile, BackupStorage, PitrSpec, PvcStorage, StorageType,
    };
    let name = group.metadata.name.clone().unwrap_or_default();
    let secret = format!("{name}-archive-key");
    let backup = group.spec.backup.get_or_insert_with(Default::default);
    backup.profiles.retain(|profile| profile.name != ARCHIVE_PROFILE);
    backup.profiles.push(BackupProfile {
        name: ARCHIVE_PROFILE.to_owned(),
        storage: BackupStorage {
            type_: StorageType::Pvc,
            s3: None,
            pvc: Some(PvcStorage {
                provisioned: None,
                claim_name: Some(ARCHIVE_CLAIM.to_owned()),
                sub_path: Some(name),
            }),
        },
        dump: None,
        retention: None,
        encryption: Some(BackupEncryption {
            algorithm: None,
            passphrase_secret_key_ref: k8s_openapi::api::core::v1::SecretKeySelector {
                name: secret.clone(),
                key: ARCHIVE_KEY.to_owned(),
                optional: None,
            },
        }),
        verification: None,
    });
    backup.pitr = Some(PitrSpec {
        enabled: Some(true),
        profile_name: Some(ARCHIVE_PROFILE.to_owned()),
        // A file sealed by a rotation is archived within seconds in the lab.
        archive_poll_interval: Some(bloodraven_crd::Duration::new("5s")),
        ..PitrSpec::default()
    });
    secret
}

/// A fresh passphrase: 32 bytes from the kernel, as 64 hexadecimal characters.
fn new_passphrase() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    bloodraven_store::random::fill(&mut bytes).context("drawing the archive passphrase")?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Starts the live lab as [`start`] does, its group archiving encrypted ([`encrypt_archive`]):
/// a `bloodraven-sidecar` beside every mysqld (`BLOODRAVEN_SIDECAR_BIN`, else next to this
/// binary: `cargo build -p bloodraven-sidecar`), the passphrase Secret created with a random
/// passphrase, also written to a 0600 file in the lab's folder, and the claim's folder reachable
/// at the console's archive root. Until the Secret exists (a moment after the group) the
/// sidecars report `ArchiveStoreInitFailed` and upload nothing, as in a cluster.
pub async fn start_encrypted(bin: PathBuf) -> anyhow::Result<(LiveLab, LabArchive)> {
    let mut group = example_group(EXAMPLE)?;
    let secret = encrypt_archive(&mut group);
    let sidecar = bloodraven_kubelet::SidecarConfig::locate().context(
        "--encrypted-archive runs a sidecar beside every mysqld, and no bloodraven-sidecar was \
         found: run `cargo build -p bloodraven-sidecar` (or set BLOODRAVEN_SIDECAR_BIN)",
    )?;
    let launcher: Arc<dyn OperatorLauncher> = Arc::new(ProcessLauncher { bin });
    let options = LiveOptions { sidecar: Some(sidecar), ..LiveOptions::default() };
    let live = LiveLab::start_with(&group, Some(launcher), options)
        .await
        .context("starting the live lab")?;
    match key_archive(&live, &group, secret) {
        Ok(archive) => Ok((live, archive)),
        Err(error) => {
            live.stop().await;
            Err(error)
        }
    }
}

/// Creates the passphrase Secret and the console's passphrase file and archive root.
fn key_archive(
    live: &LiveLab,
    group: &MysqlFailoverGroup,
    secret: String,
) -> anyhow::Result<LabArchive> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let namespace = live.namespace().to_owned();
    let passphrase = new_passphrase()?;
    let passphrase_file = live.dir().join("pitr-passphrase");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&passphrase_file)
        .and_then(|mut file| file.write_all(passphrase.as_bytes()).map(|()| file))
        .with_context(|| format!("writing {}", passphrase_file.display()))?;
    file.flush().with_context(|| format!("writing {}", passphrase_file.display()))?;
    live.lab()
        .apply(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": secret, "namespace": namespace},
            "stringData": {ARCHIVE_KEY: passphrase},
        }))
        .with_context(|| format!("creating the passphrase Secret {namespace}/{secret}"))?;
    // The console reads `<root>/<namespace>/<claim>/<subPath>/binlogs`, the PVC layout the
    // sidecars' store writes under their mount (the store layout of `bloodraven-store`), and
    // the lab's folder standing in for that mount is the sidecars' store root: it is the
    // console's archive root as it is.
    let archive_root = live.pvc_archive_dir();
    Ok(LabArchive {
        secret,
        key: ARCHIVE_KEY.to_owned(),
        claim: ARCHIVE_CLAIM.to_owned(),
        sub_path: group.metadata.name.clone().unwrap_or_default(),
        archive_root,
        passphrase_file,
    })
}

/// Waits until every site's Pod is Ready; the error names the ones that are not.
pub async fn wait_ready(live: &LiveLab, timeout: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let pods = live.pods();
        let waiting: Vec<&str> =
            pods.iter().filter(|(_, _, ready)| !ready).map(|(d, _, _)| d.as_str()).collect();
        if waiting.is_empty() {
            return Ok(());
        }
        if started.elapsed() >= timeout {
            anyhow::bail!(
                "waited {timeout:?} for the operator's site pods to be Ready; not Ready: {}",
                waiting.join(", ")
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Bound on the sites becoming Ready.
const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// `bloodraven lab --live [--serve] [--drill FILE [--json]]`. Every process it started ends on
/// `q` (the console), SIGINT, SIGTERM or SIGHUP.
#[allow(clippy::print_stdout, reason = "the live lab's banner and the drill report are its output")]
pub async fn run(cli: &crate::cli::Cli, args: &crate::cli::LabArgs) -> anyhow::Result<()> {
    let bin = operator_bin()?;
    println!(
        "live lab: the operator {} creates the 3-site group orders (iad, pdx PrimaryCandidate; \
         fra DisasterRecovery) from deploy/examples/group.yaml{}",
        bin.display(),
        if args.encrypted_archive { ", archiving its binlogs encrypted" } else { "" }
    );
    let started = async {
        if args.encrypted_archive {
            start_encrypted(bin.clone()).await.map(|(live, archive)| (live, Some(archive)))
        } else {
            start(bin.clone()).await.map(|live| (live, None))
        }
    };
    let (live, archive) = tokio::select! {
        live = started => live?,
        () = crate::termination_signal() => return Ok(()),
    };
    if let Some(archive) = &archive {
        println!(
            "encrypted archive: Secret {}/{} (key {}) holds its passphrase; the console reads it \
             with --archive-root {} --pitr-passphrase-file {}",
            live.namespace(),
            archive.secret,
            archive.key,
            archive.archive_root.display(),
            archive.passphrase_file.display()
        );
    }
    let outcome = tokio::select! {
        r = serve(args, &live, bin) => r,
        () = crate::termination_signal() => Ok(false),
    };
    // The console handles `q` and the signals itself (and restores the terminal).
    let outcome = match outcome {
        Ok(true) => console(cli, &live, archive.as_ref()).await,
        Ok(false) => Ok(()),
        Err(e) => Err(e),
    };
    live.stop().await;
    outcome
}

/// The console on the live lab; with the lab's encrypted archive, its archive root and
/// passphrase file unless the command line gives others.
async fn console(
    cli: &crate::cli::Cli,
    live: &LiveLab,
    archive: Option<&LabArchive>,
) -> anyhow::Result<()> {
    let kubeconfig = live.kubeconfig();
    let (client, connection, write) =
        crate::console_client(&cli.global, Some(&kubeconfig), None).await?;
    let options = crate::tui::app::Options {
        context: format!("{} (live lab)", connection.context),
        scope: crate::tui::state::Scope::Namespace(live.namespace().to_owned()),
        no_color: cli.global.no_color,
        archive_root: cli
            .global
            .archive_root
            .clone()
            .or_else(|| archive.map(|archive| archive.archive_root.clone())),
        archive_credentials_from_secret: cli.global.archive_credentials_from_secret,
        archive_passphrase_file: cli
            .global
            .pitr_passphrase_file
            .clone()
            .or_else(|| archive.map(|archive| archive.passphrase_file.clone())),
        kubeconfig: Some(live.kubeconfig()),
        write: Some(write),
    };
    crate::console(client, options).await
}

/// Waits for the sites, then runs the drill or serves; `Ok(true)`: open the console.
#[allow(clippy::print_stdout, reason = "the live lab's banner and the drill report are its output")]
async fn serve(args: &crate::cli::LabArgs, live: &LiveLab, bin: PathBuf) -> anyhow::Result<bool> {
    wait_ready(live, READY_TIMEOUT).await?;
    println!(
        "live lab ready: API server {}, kubeconfig {}, namespace {}, sites {}; operator log {}",
        live.lab().url(),
        live.kubeconfig().display(),
        live.namespace(),
        live.pods()
            .iter()
            .map(|(d, pid, _)| format!("{d} (pid {})", pid.map_or("-".into(), |p| p.to_string())))
            .collect::<Vec<_>>()
            .join(", "),
        live.dir().join("operator-operator.log").display()
    );
    if let Some(file) = &args.drill {
        let drill = bloodraven_drill::load(file)?;
        // A drill starts its own world: its own group (operator drills: its own live lab and
        // operator, the same binary), beside this one.
        println!("drill {}: run in its own world beside this one", drill.drill.name);
        let options = bloodraven_drill::RunOptions {
            operator_bin: drill.requires_operator().then_some(bin),
            launcher: None,
        };
        let report = bloodraven_drill::run(&drill, &options).await?;
        if args.json {
            println!("{}", report.json());
        } else {
            print!("{}", report.human());
        }
        if !report.passed {
            anyhow::bail!("drill {} failed", report.drill);
        }
        return Ok(false);
    }
    if args.serve {
        println!("export KUBECONFIG={}\nCtrl-C stops it.", live.kubeconfig().display());
        crate::termination_signal().await;
        return Ok(false);
    }
    Ok(true)
}
