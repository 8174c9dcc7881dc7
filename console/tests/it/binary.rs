//! The real binary: `status` against the lab API server, and the kubectl plugin name.

use std::process::{Command, Output};

use bloodraven_console::lab::RunningLab;

const BINARY: &str = env!("CARGO_BIN_EXE_bloodraven");

async fn run(arguments: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || Command::new(BINARY).args(arguments).output().unwrap())
        .await
        .unwrap()
}

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reads_the_lab_and_writes_nothing() {
    crate::install_crypto();
    let running = RunningLab::start("hold-standing", jiff::Timestamp::now()).await.unwrap();
    let kubeconfig = running.kubeconfig().display().to_string();
    let arguments = |rest: &[&str]| {
        let mut all = vec!["--kubeconfig".to_owned(), kubeconfig.clone()];
        all.extend(rest.iter().map(|s| (*s).to_owned()));
        all
    };

    let list = stdout(&run(arguments(&["status", "-A"])).await);
    assert!(list.starts_with("NAMESPACE  NAME    ACTIVE  READY       VERDICT"), "{list}");
    assert!(list.contains("False+held"), "{list}");
    assert!(list.contains("Failed(ForeignWritable)"), "{list}");

    let wide = stdout(&run(arguments(&["status", "-n", "orders", "-o", "wide"])).await);
    assert!(wide.contains("LAST-FAILOVER"), "{wide}");

    let report = stdout(&run(arguments(&["status", "orders", "-n", "orders"])).await);
    assert!(report.starts_with("MysqlFailoverGroup: orders/orders\n"), "{report}");
    assert!(report.contains("Automation hold:"), "{report}");
    assert!(report.contains("bloodraven.shipstream.io/acknowledge-planned-failover-hold=6f1c2a4e-4b7d-4a1f-9a0e-2d5b8c3f7e10"), "{report}");

    let json = stdout(&run(arguments(&["status", "orders", "-n", "orders", "-o", "json"])).await);
    let object: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        object["status"]["plannedFailoverHold"]["ambiguousSites"],
        serde_json::json!(["iad", "pdx"])
    );
    let yaml = stdout(&run(arguments(&["status", "-A", "-o", "yaml"])).await);
    assert!(yaml.contains("kind: List"), "{yaml}");

    let missing = run(arguments(&["status", "nope", "-n", "orders"])).await;
    assert!(!missing.status.success());
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "Error from server (NotFound): mysqlfailovergroups \"nope\" not found\n"
    );

    assert!(running.lab.requests().iter().all(|request| !request.is_write()));
    running.stop().await.unwrap();
}

/// A group an older or newer operator (or a hand edit) could leave: `spec.sites` is a string.
/// It carries a value that must never reach a log.
pub(crate) fn broken_group() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "shipstream.io/v1alpha1",
        "kind": "MysqlFailoverGroup",
        "metadata": {
            "name": "broken",
            "namespace": "orders",
            "annotations": { "example.com/token": "hunter2-do-not-log" },
        },
        "spec": { "sites": "not a list", "image": "mysql:9.7" },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_lists_an_unreadable_group_after_the_others() {
    crate::install_crypto();
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    running.lab.insert_unvalidated(broken_group()).unwrap();
    let directory = tempfile::tempdir().unwrap();
    let log = directory.path().join("console.log");
    let arguments = |rest: &[&str]| {
        let mut all = vec![
            "--kubeconfig".to_owned(),
            running.kubeconfig().display().to_string(),
            "--log-file".to_owned(),
            log.display().to_string(),
        ];
        all.extend(rest.iter().map(|s| (*s).to_owned()));
        all
    };

    let list = stdout(&run(arguments(&["status", "-A"])).await);
    assert!(list.starts_with("NAMESPACE  NAME    ACTIVE  READY  VERDICT"), "{list}");
    assert!(list.contains("ledger"), "the healthy groups are listed: {list}");
    assert!(list.contains("\nUnreadable (1): "), "{list}");
    assert!(
        list.contains("  orders/broken  at spec.sites: invalid type: string \"not a list\", expected a sequence\n"),
        "{list}"
    );

    let json = stdout(&run(arguments(&["status", "-A", "-o", "json"])).await);
    let list: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 4, "the objects as stored");
    let unreadable = &list["unreadable"];
    assert_eq!(unreadable.as_array().map(Vec::len), Some(1), "{unreadable}");
    assert_eq!(unreadable[0]["name"], "broken");
    assert_eq!(unreadable[0]["path"], "spec.sites");
    assert!(unreadable[0]["error"].as_str().unwrap().contains("expected a sequence"));

    let one = run(arguments(&["status", "broken", "-n", "orders"])).await;
    assert!(!one.status.success());
    let error = String::from_utf8_lossy(&one.stderr);
    assert!(
        error.starts_with("error: MysqlFailoverGroup orders/broken is unreadable at spec.sites: "),
        "{error}"
    );

    // The log names the object and the error, never its body.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("namespace=orders name=broken path=spec.sites"), "{logged}");
    assert!(!logged.contains("hunter2"), "a response body reached the log: {logged}");
    assert!(running.lab.requests().iter().all(|request| !request.is_write()));
    running.stop().await.unwrap();
}

#[test]
fn installed_as_kubectl_bloodraven_it_calls_itself_kubectl_bloodraven() {
    let directory = tempfile::tempdir().unwrap();
    let plugin = directory.path().join("kubectl-bloodraven");
    std::fs::copy(BINARY, &plugin).unwrap();
    let output = Command::new(&plugin).arg("--help").output().unwrap();
    let help = stdout(&output);
    assert!(help.contains("Usage: kubectl bloodraven [OPTIONS] [COMMAND]"), "{help}");
    let output = Command::new(BINARY).arg("--help").output().unwrap();
    let help = stdout(&output);
    assert!(help.contains("Usage: bloodraven [OPTIONS] [COMMAND]"), "{help}");
    insta::assert_snapshot!("help", help);
}

#[test]
fn lab_serve_prints_a_working_kubeconfig_and_stops_on_sigterm() {
    use std::io::BufRead as _;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let mut child = Command::new(BINARY)
        .args(["lab", "--scenario", "reclone-draining", "--serve"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the server whatever happens below.
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let server_stdout = child.stdout.take().unwrap();
    let mut child = Reap(child);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(server_stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let kubeconfig = loop {
        let line =
            receiver.recv_timeout(deadline.saturating_duration_since(Instant::now())).unwrap();
        if let Some(path) = line.strip_prefix("kubeconfig: ") {
            break std::path::PathBuf::from(path);
        }
    };
    assert!(kubeconfig.is_file());
    let output = Command::new(BINARY)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["status", "orders", "-n", "orders"])
        .output()
        .unwrap();
    let report = stdout(&output);
    assert!(report.contains("Reclone queue:"), "{report}");
    assert!(report.contains("Pending:          pdx, fra"), "{report}");

    let killed = Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "lab --serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert!(!kubeconfig.exists(), "the temporary kubeconfig is removed on exit");
}

/// `status` as a kubectl plugin: exit codes with `--fail-on`, `-o name`, `--no-headers`,
/// `-l`, "no groups" on stderr, `-o json` without managedFields and with the verdict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_behaves_like_a_kubectl_plugin() {
    crate::install_crypto();
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    let kubeconfig = running.kubeconfig().display().to_string();
    let arguments = |rest: &[&str]| {
        let mut all = vec!["--kubeconfig".to_owned(), kubeconfig.clone()];
        all.extend(rest.iter().map(|s| (*s).to_owned()));
        all
    };
    let code = |output: &Output| output.status.code();

    // carts' active site is read-only while Ready=True: critical, whatever the summary says.
    let list = run(arguments(&["status", "-A"])).await;
    assert_eq!(code(&list), Some(0));
    let text = String::from_utf8(list.stdout).unwrap();
    let carts = text.lines().find(|line| line.contains("carts")).unwrap();
    assert!(carts.contains("True") && carts.contains("critical"), "{text}");
    assert_eq!(code(&run(arguments(&["status", "-A", "--fail-on", "critical"])).await), Some(2));
    assert_eq!(code(&run(arguments(&["status", "-A", "--fail-on", "Warning"])).await), Some(2));
    let orders = run(arguments(&["status", "orders", "-n", "orders", "--fail-on", "info"])).await;
    assert_eq!(code(&orders), Some(0), "{}", String::from_utf8_lossy(&orders.stderr));
    let bad = run(arguments(&["status", "-A", "--fail-on", "fatal"])).await;
    assert_eq!(code(&bad), Some(2), "clap's usage error code");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("info, warning or critical"));

    let report = stdout(&run(arguments(&["status", "carts", "-n", "orders"])).await);
    assert!(report.contains("Verdict:       critical"), "{report}");
    assert!(report.contains("run:   kubectl describe mfg carts -n orders\n"), "{report}");

    let names = stdout(&run(arguments(&["status", "-n", "orders", "-o", "name"])).await);
    assert_eq!(
        names,
        "mysqlfailovergroup.shipstream.io/carts\nmysqlfailovergroup.shipstream.io/orders\n"
            .lines()
            .filter(|line| names.contains(line))
            .map(|line| format!("{line}\n"))
            .collect::<String>()
    );
    assert_eq!(names.lines().count(), 2, "{names}");

    let bare = stdout(&run(arguments(&["status", "-n", "orders", "--no-headers"])).await);
    assert!(!bare.contains("NAME"), "{bare}");
    assert_eq!(bare.lines().count(), 2, "{bare}");

    let none = run(arguments(&["status", "-n", "orders", "-l", "app=nothing-has-this"])).await;
    assert_eq!(code(&none), Some(0));
    assert!(none.stdout.is_empty());
    assert_eq!(String::from_utf8_lossy(&none.stderr), "no groups in namespace orders\n");
    let empty = run(arguments(&["status", "-n", "empty"])).await;
    assert_eq!(String::from_utf8_lossy(&empty.stderr), "no groups in namespace empty\n");

    let json = stdout(&run(arguments(&["status", "-A", "-o", "json"])).await);
    let list: serde_json::Value = serde_json::from_str(&json).unwrap();
    for item in list["items"].as_array().unwrap() {
        assert!(item["metadata"].get("managedFields").is_none(), "{item}");
        assert!(item["bloodravenVerdict"]["findings"].is_array(), "{item}");
    }
    let one = stdout(&run(arguments(&["status", "carts", "-n", "orders", "-o", "yaml"])).await);
    assert!(one.contains("bloodravenVerdict:") && one.contains("kind: NoWriter"), "{one}");

    assert!(running.lab.requests().iter().all(|request| !request.is_write()));
    running.stop().await.unwrap();
}

/// `status | head`: a closed stdout ends the command quietly, with exit code 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_ends_quietly_on_a_broken_pipe() {
    crate::install_crypto();
    let running = RunningLab::start("fleet-1000", jiff::Timestamp::now()).await.unwrap();
    let kubeconfig = running.kubeconfig().display().to_string();
    let output = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(BINARY)
            .args(["--kubeconfig", &kubeconfig, "status", "-A", "-o", "json"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Closing the read end at once: the megabytes of JSON cannot fit the pipe's buffer.
        drop(child.stdout.take());
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stderr.is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
    running.stop().await.unwrap();
}

/// `status -w`: the list, then one row per change made by another client (not the list again),
/// until interrupted; it writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_watch_prints_a_row_for_each_change_after_the_list() {
    use tokio::io::AsyncBufReadExt as _;
    crate::install_crypto();
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    let directory = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(BINARY)
        .arg("--kubeconfig")
        .arg(running.kubeconfig())
        .arg("--log-file")
        .arg(directory.path().join("console.log"))
        .args(["status", "-n", "orders", "-w", "--no-headers"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || {
        tokio::time::timeout(std::time::Duration::from_secs(60), lines.next_line())
            .await
            .expect("a row within 60 s")
            .unwrap()
            .expect("status -w still running")
    };
    let listed = [next().await, next().await];
    assert!(listed.iter().any(|row| row.starts_with("carts ")), "{listed:?}");
    let orders = listed.iter().find(|row| row.starts_with("orders ")).expect("orders listed");
    assert!(orders.contains("True"), "{orders}");

    // Another client marks orders not Ready: the next row is that change, nothing before it.
    let mut group = running
        .lab
        .get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some("orders"), "orders")
        .unwrap();
    for condition in group["status"]["conditions"].as_array_mut().unwrap() {
        if condition["type"] == "Ready" {
            condition["status"] = "False".into();
            condition["reason"] = "NoPrimary".into();
        }
    }
    running.lab.apply(group).unwrap();
    let changed = next().await;
    assert!(changed.starts_with("orders ") && changed.contains("False"), "{changed}");

    child.start_kill().unwrap();
    let _ = child.wait().await;
    assert!(running.lab.requests().iter().all(|request| !request.is_write()));
    running.stop().await.unwrap();
}
