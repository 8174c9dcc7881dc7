//! `bloodraven lab --live`: a live lab on this machine, through the drill crate's harness
//! (`bloodraven_drill::live`): the lab API server, the lab kubelet (real `mysqld` per site
//! Deployment), the fault proxies (one link per Service endpoint), the operator (the
//! workspace's own `bloodraven-operator` build) and the 3-site group of
//! `deploy/examples/group.yaml` (`iad`, `pdx` PrimaryCandidate, `fra` DisasterRecovery), whose
//! site workloads the operator creates.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_drill::live::{LiveLab, OperatorLauncher, ProcessLauncher};
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
         fra DisasterRecovery) from deploy/examples/group.yaml",
        bin.display()
    );
    let live = tokio::select! {
        live = start(bin.clone()) => live?,
        () = crate::termination_signal() => return Ok(()),
    };
    let outcome = tokio::select! {
        r = serve(args, &live, bin) => r,
        () = crate::termination_signal() => Ok(false),
    };
    // The console handles `q` and the signals itself (and restores the terminal).
    let outcome = match outcome {
        Ok(true) => console(cli, &live).await,
        Ok(false) => Ok(()),
        Err(e) => Err(e),
    };
    live.stop().await;
    outcome
}

async fn console(cli: &crate::cli::Cli, live: &LiveLab) -> anyhow::Result<()> {
    let kubeconfig = live.kubeconfig();
    let (client, connection, write) =
        crate::console_client(&cli.global, Some(&kubeconfig), None).await?;
    let options = crate::tui::app::Options {
        context: format!("{} (live lab)", connection.context),
        scope: crate::tui::state::Scope::Namespace(live.namespace().to_owned()),
        no_color: cli.global.no_color,
        archive_root: cli.global.archive_root.clone(),
        archive_credentials_from_secret: cli.global.archive_credentials_from_secret,
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
