//! `bloodraven lab --live` through its library entry: the operator binary (the workspace's own
//! build, `cargo build -p bloodraven-operator`) creates the example group's sites, which the lab
//! kubelet runs as real MySQL 9.7 (needs `source scripts/provision.sh`).

use std::time::{Duration, Instant};

use bloodraven_console::live;

/// The workspace's operator build, next to this package's binaries.
pub(crate) fn operator_bin() -> std::path::PathBuf {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_bloodraven"))
        .with_file_name("bloodraven-operator");
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo build -p bloodraven-operator`",
        bin.display()
    );
    bin
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_lab_operator_creates_a_ready_three_site_group_and_stops_leaving_no_mysqld() {
    crate::install_crypto();
    let live = live::start(operator_bin()).await.unwrap_or_else(|e| panic!("{e:#}"));
    // The operator (not the console) creates the site workloads the kubelet runs.
    live::wait_ready(&live, Duration::from_secs(180)).await.unwrap_or_else(|e| panic!("{e:#}"));
    let pids: Vec<u32> = live
        .pods()
        .into_iter()
        .map(|(deployment, pid, _)| pid.unwrap_or_else(|| panic!("{deployment} has no mysqld")))
        .collect();
    assert_eq!(pids.len(), 3, "iad, pdx and fra");
    assert!(pids.iter().all(|pid| alive(*pid)), "{pids:?}");
    let deployment = live
        .lab()
        .get("apps/v1", "Deployment", Some("orders"), "mysql-orders-iad")
        .expect("the operator's Deployment");
    let managers = deployment["metadata"]["managedFields"].as_array().cloned().unwrap_or_default();
    assert!(
        managers.iter().any(|entry| entry["manager"] == "bloodraven-operator"),
        "applied by the operator: {managers:?}"
    );
    let started = Instant::now();
    loop {
        // The operator binary dials the sites (through the lab's service-address file): the
        // group converges on a writable active site with Ready=True.
        let group = live.group_object().unwrap_or_default();
        let status = &group["status"];
        let ready = status["conditions"].as_array().is_some_and(|conditions| {
            conditions.iter().any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        if status["sites"].as_array().is_some_and(|sites| sites.len() == 3)
            && status["activeSite"].is_string()
            && ready
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "waited 120 s for the operator binary to converge the group (3 sites, an active \
             site, Ready=True); group status: {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let directory = live.dir().to_owned();
    live.stop().await;
    let started = Instant::now();
    while pids.iter().any(|pid| alive(*pid)) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "waited 60 s for the mysqld processes {pids:?} to end after stop"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!directory.exists(), "{} left behind", directory.display());
}

/// The real binary: `lab --live --serve` reaches Ready sites, and SIGHUP (a closed terminal)
/// ends it with every mysqld and its folder.
#[test]
fn the_live_lab_binary_stops_every_mysqld_on_sighup() {
    use std::io::BufRead as _;
    use std::process::{Command, Stdio};

    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_bloodraven"))
        .env("BLOODRAVEN_OPERATOR_BIN", operator_bin())
        .args(["lab", "--live", "--serve"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut child = Reap(child);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut seen = Vec::new();
    let ready = loop {
        let line = receiver
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|e| panic!("waited for `live lab ready` ({e}); saw {seen:#?}"));
        if line.starts_with("live lab ready:") {
            break line;
        }
        seen.push(line);
    };
    assert!(
        seen.iter().any(|l| l.contains("the operator") && l.contains("group.yaml")),
        "{seen:#?}"
    );
    let pids: Vec<u32> = ready
        .split("(pid ")
        .skip(1)
        .filter_map(|rest| rest.split(')').next()?.parse().ok())
        .collect();
    assert_eq!(pids.len(), 3, "{ready}");
    let kubeconfig = ready
        .split("kubeconfig ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .map(std::path::PathBuf::from)
        .unwrap();
    assert!(kubeconfig.is_file(), "{ready}");

    let hup = Command::new("kill").args(["-HUP", &child.0.id().to_string()]).status().unwrap();
    assert!(hup.success());
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "lab --live did not stop on SIGHUP");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}");
    assert!(pids.iter().all(|pid| !alive(*pid)), "mysqld left running: {pids:?}");
    assert!(!kubeconfig.exists(), "{} left behind", kubeconfig.display());
}
