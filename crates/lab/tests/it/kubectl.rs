//! The real kubectl against the lab: Debian's 1.20 (`BLOODRAVEN_KUBECTL_1_20`, extracted by
//! scripts/test.sh) and the machine's current kubectl (`BLOODRAVEN_KUBECTL` or `kubectl` on
//! PATH). get (-o yaml, -w), annotate, patch, apply (client- and server-side), create, delete
//! against a CRD-backed object, over plain HTTP with a bearer token.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bloodraven_lab::Lab;

use bloodraven_lab::LabConfig;

use crate::support::start_lab;

const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

fn find_on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).map(|dir| dir.join(program)).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .find(|candidate| candidate.is_file())
}

fn client_version(kubectl: &Path) -> String {
    let output = Command::new(kubectl).args(["version", "--client"]).output().unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Debian's kubectl 1.20: the env var, else a `kubectl` on PATH that is 1.20.
fn kubectl_1_20() -> PathBuf {
    if let Some(path) = std::env::var_os("BLOODRAVEN_KUBECTL_1_20") {
        return PathBuf::from(path);
    }
    match find_on_path("kubectl") {
        Some(path) if client_version(&path).contains("v1.20.") => path,
        _ => panic!(
            "kubectl 1.20 not found: set BLOODRAVEN_KUBECTL_1_20 (scripts/test.sh extracts Debian's kubernetes-client into target/tools and exports it)"
        ),
    }
}

fn kubectl_current() -> PathBuf {
    if let Some(path) = std::env::var_os("BLOODRAVEN_KUBECTL") {
        return PathBuf::from(path);
    }
    find_on_path("kubectl").unwrap_or_else(|| {
        panic!("kubectl not found on PATH (set BLOODRAVEN_KUBECTL; scripts/test.sh documents the test programs)")
    })
}

struct Kubectl {
    program: PathBuf,
    home: tempfile::TempDir,
}

impl Kubectl {
    fn new(program: PathBuf, lab: &Lab) -> Self {
        let home = tempfile::tempdir().unwrap();
        lab.write_kubeconfig(&home.path().join("kubeconfig"), Some("alice")).unwrap();
        Self { program, home }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.program);
        command
            .arg("--kubeconfig")
            .arg(self.home.path().join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.home.path().join("cache"))
            .args(args)
            .env("HOME", self.home.path())
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// Runs kubectl to completion (bounded), returning stdout; panics with stderr on failure.
    fn run(&self, args: &[&str]) -> String {
        let (status, stdout, stderr) = self.run_status(args);
        assert!(status, "kubectl {args:?} failed:\n{stderr}\n{stdout}");
        stdout
    }

    fn run_status(&self, args: &[&str]) -> (bool, String, String) {
        let mut child = self.command(args).spawn().unwrap();
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let output = child.wait_with_output().unwrap();
                return (
                    status.success(),
                    String::from_utf8_lossy(&output.stdout).into_owned(),
                    String::from_utf8_lossy(&output.stderr).into_owned(),
                );
            }
            if started.elapsed() > COMMAND_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                panic!("kubectl {args:?} did not finish within {COMMAND_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.home.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

fn widget_yaml(name: &str, color: &str) -> String {
    format!(
        "apiVersion: lab.bloodraven.test/v1\nkind: Widget\nmetadata:\n  name: {name}\n  labels:\n    app: lab\nspec:\n  color: {color}\n  replicas: 1\n"
    )
}

fn field(lab: &Lab, name: &str, pointer: &str) -> Option<serde_json::Value> {
    lab.get("lab.bloodraven.test/v1", "Widget", Some("default"), name)
        .and_then(|object| object.pointer(pointer).cloned())
}

/// The whole scenario; run on a blocking thread because kubectl runs synchronously.
fn scenario(lab: &Lab, kubectl: &Kubectl) {
    let version = kubectl.run(&["version", "-o", "json"]);
    assert!(version.contains("\"serverVersion\""), "{version}");

    let (ok, _, stderr) = kubectl.run_status(&["get", "widgets"]);
    assert!(ok && stderr.contains("No resources found in default namespace."), "{stderr}");

    let file = kubectl.write("w1.yaml", &widget_yaml("w1", "red"));
    let created = kubectl.run(&["apply", "-f", &file]);
    assert_eq!(created.trim(), "widget.lab.bloodraven.test/w1 created");
    assert!(
        field(lab, "w1", "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration")
            .is_some()
    );

    let yaml = kubectl.run(&["get", "widget", "w1", "-o", "yaml"]);
    assert!(yaml.contains("color: red") && yaml.contains("kind: Widget"), "{yaml}");

    let table = kubectl.run(&["get", "wdg"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("COLOR") && lines[0].contains("AGE"),
        "{table}"
    );
    assert!(lines[1].starts_with("w1") && lines[1].contains("red"), "{table}");

    let namespaces = kubectl.run(&["get", "namespaces"]);
    let header = namespaces.lines().next().unwrap_or_default();
    assert!(header.starts_with("NAME") && header.contains("STATUS"), "{namespaces}");
    assert!(
        namespaces.lines().any(|line| line.starts_with("default") && line.contains("Active")),
        "{namespaces}"
    );

    let listed =
        kubectl.run(&["get", "widgets.lab.bloodraven.test", "-l", "app=lab", "-o", "name"]);
    assert_eq!(listed.trim(), "widget.lab.bloodraven.test/w1");

    let annotated = kubectl.run(&["annotate", "widget", "w1", "lab/note=hello"]);
    assert_eq!(annotated.trim(), "widget.lab.bloodraven.test/w1 annotated");
    assert_eq!(field(lab, "w1", "/metadata/annotations/lab~1note"), Some("hello".into()));

    let patched = kubectl.run(&[
        "patch",
        "widget",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"color":"blue"}}"#,
    ]);
    assert_eq!(patched.trim(), "widget.lab.bloodraven.test/w1 patched");
    kubectl.run(&[
        "patch",
        "widget",
        "w1",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/replicas","value":2}]"#,
    ]);
    assert_eq!(field(lab, "w1", "/spec/replicas"), Some(2.into()));
    let (ok, _, stderr) =
        kubectl.run_status(&["patch", "widget", "w1", "-p", r#"{"spec":{"color":"x"}}"#]);
    assert!(
        !ok && (stderr.contains("415")
            || stderr.contains("unknown format")
            || stderr.contains("not supported")),
        "{stderr}"
    );

    let configured =
        kubectl.run(&["apply", "-f", &kubectl.write("w1b.yaml", &widget_yaml("w1", "green"))]);
    assert_eq!(configured.trim(), "widget.lab.bloodraven.test/w1 configured");
    assert_eq!(field(lab, "w1", "/spec/color"), Some("green".into()));
    assert_eq!(
        field(lab, "w1", "/metadata/annotations/lab~1note"),
        Some("hello".into()),
        "apply keeps others' fields"
    );

    let unchanged =
        kubectl.run(&["apply", "-f", &kubectl.write("w1c.yaml", &widget_yaml("w1", "green"))]);
    assert_eq!(unchanged.trim(), "widget.lab.bloodraven.test/w1 unchanged");

    let server_side = kubectl.run(&[
        "apply",
        "--server-side",
        "-f",
        &kubectl.write("w2.yaml", &widget_yaml("w2", "red")),
    ]);
    assert_eq!(server_side.trim(), "widget.lab.bloodraven.test/w2 serverside-applied");

    let created =
        kubectl.run(&["create", "-f", &kubectl.write("w3.yaml", &widget_yaml("w3", "red"))]);
    assert_eq!(created.trim(), "widget.lab.bloodraven.test/w3 created");
    let (ok, _, stderr) = kubectl.run_status(&[
        "create",
        "-f",
        &kubectl.write("w3again.yaml", &widget_yaml("w3", "red")),
    ]);
    assert!(
        !ok && (stderr.contains("AlreadyExists") || stderr.contains("already exists")),
        "{stderr}"
    );

    // A built-in kind: kubectl's apply sends a strategic merge patch for it.
    let config_map = |value: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: {value}\n  keep: \"yes\"\n"
        )
    };
    let applied = kubectl.run(&["apply", "-f", &kubectl.write("cm1.yaml", &config_map("one"))]);
    assert_eq!(applied.trim(), "configmap/settings created");
    let applied = kubectl.run(&["apply", "-f", &kubectl.write("cm2.yaml", &config_map("two"))]);
    assert_eq!(applied.trim(), "configmap/settings configured");
    let mode =
        kubectl.run(&["get", "configmap", "settings", "-o", "jsonpath={.data.mode}/{.data.keep}"]);
    assert_eq!(mode, "two/yes");
    assert!(lab.requests().iter().any(
        |request| request.verb == "patch" && request.resource.as_deref() == Some("configmaps")
    ));
    let deleted = kubectl.run(&["delete", "-f", &kubectl.write("cm3.yaml", &config_map("two"))]);
    assert_eq!(deleted.trim(), "configmap \"settings\" deleted");

    // get -w: the current row, then a row for a change.
    let mut watch =
        kubectl.command(&["get", "widget", "w1", "-w", "--output-watch-events"]).spawn().unwrap();
    let stdout = watch.stdout.take().unwrap();
    let (lines, received) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut output = Vec::new();
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    let mut patched = false;
    while Instant::now() < deadline {
        match received.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => output.push(line),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if !patched && output.iter().any(|line| line.contains("w1")) {
            kubectl.run(&[
                "patch",
                "widget",
                "w1",
                "--type=merge",
                "-p",
                r#"{"spec":{"color":"purple"}}"#,
            ]);
            patched = true;
        }
        if output.iter().any(|line| line.contains("purple")) {
            break;
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    let _ = reader.join();
    assert!(output.iter().any(|line| line.contains("ADDED") && line.contains("w1")), "{output:?}");
    assert!(
        output.iter().any(|line| line.contains("MODIFIED") && line.contains("purple")),
        "{output:?}"
    );

    let deleted = kubectl.run(&["delete", "widget", "w1"]);
    assert_eq!(deleted.trim(), "widget.lab.bloodraven.test \"w1\" deleted");
    assert!(field(lab, "w1", "/metadata/name").is_none());
    let (ok, _, stderr) = kubectl.run_status(&["get", "widget", "w1"]);
    assert!(!ok && stderr.contains("NotFound") && stderr.contains("\"w1\" not found"), "{stderr}");

    let requests = lab.requests();
    let strangers: Vec<_> = requests.iter().filter(|request| request.user != "alice").collect();
    assert!(strangers.is_empty(), "the kubeconfig's token names every request: {strangers:#?}");
}

async fn run_scenario(program: PathBuf) {
    // https: kubectl sends the kubeconfig's bearer token only to an https server.
    let config = LabConfig { tls: true, ..LabConfig::default() }.with_user("alice", "alice-token");
    let lab = start_lab(config).await;
    let lab = std::sync::Arc::new(lab);
    let shared = lab.clone();
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || {
            let kubectl = Kubectl::new(program, &shared);
            scenario(&shared, &kubectl);
        }),
    )
    .await
    .expect("the kubectl scenario finished in time");
    let lab = std::sync::Arc::into_inner(lab).expect("the scenario released the lab");
    lab.stop().await.unwrap();
    if let Err(error) = outcome {
        std::panic::resume_unwind(error.into_panic());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_20_against_a_custom_resource() {
    run_scenario(kubectl_1_20()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn current_kubectl_against_a_custom_resource() {
    run_scenario(kubectl_current()).await;
}

/// kubectl 1.36 from Debian sid (`BLOODRAVEN_KUBECTL_1_36`, exported by scripts/provision.sh).
fn kubectl_1_36() -> PathBuf {
    match std::env::var_os("BLOODRAVEN_KUBECTL_1_36") {
        Some(path) => PathBuf::from(path),
        None => panic!(
            "kubectl 1.36 not found: set BLOODRAVEN_KUBECTL_1_36 (`source scripts/provision.sh` fetches Debian sid's kubectl and exports it)"
        ),
    }
}

/// Runs `body` with a kubectl against a TLS lab holding the project's CRDs.
async fn with_project_crds(program: PathBuf, body: fn(&Lab, &Kubectl)) {
    let config = LabConfig { tls: true, ..LabConfig::default() }.with_user("alice", "alice-token");
    let lab = start_lab(config).await;
    lab.load_crds(&crate::validation::project_crds()).unwrap();
    let lab = std::sync::Arc::new(lab);
    let shared = lab.clone();
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || body(&shared, &Kubectl::new(program, &shared))),
    )
    .await
    .expect("the kubectl commands finished in time");
    let lab = std::sync::Arc::into_inner(lab).expect("the commands released the lab");
    lab.stop().await.unwrap();
    if let Err(error) = outcome {
        std::panic::resume_unwind(error.into_panic());
    }
}

/// `kubectl explain` reads the CRD's schema from `/openapi/v3`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_36_explains_the_crd_schema() {
    with_project_crds(kubectl_1_36(), |lab, kubectl| {
        let sites = kubectl.run(&["explain", "mfg.spec.sites"]);
        assert!(sites.contains("KIND:") && sites.contains("MysqlFailoverGroup"), "{sites}");
        assert!(sites.contains("FIELD: sites <[]Object>"), "{sites}");
        assert!(sites.contains("serverID"), "the item fields are listed: {sites}");
        let spec = kubectl.run(&["explain", "mysqlfailovergroups.spec"]);
        assert!(spec.contains("sites"), "{spec}");
        let pods = kubectl.run(&["explain", "pods"]);
        assert!(pods.contains("KIND:") && pods.contains("Pod"), "{pods}");
        let (ok, _, stderr) = kubectl.run_status(&["explain", "mfg.spec.nothing"]);
        assert!(!ok && stderr.contains("nothing"), "{stderr}");
        assert!(lab.requests().iter().any(|request| request.path.starts_with("/openapi/v3")));
    })
    .await;
}

/// kubectl 1.36 refuses a `sites` string with the API server's words (server-side validation).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_36_shows_the_validation_refusal() {
    with_project_crds(kubectl_1_36(), |lab, kubectl| {
        let group = crate::validation::group_with_string_sites("broken");
        let path = kubectl.write("broken.json", &group.to_string());
        let (ok, _, stderr) = kubectl.run_status(&["create", "-f", &path]);
        assert!(!ok, "refused");
        assert!(
            stderr.contains("spec.sites: Invalid value: \"string\": spec.sites in body must be of type array: \"string\""),
            "{stderr}"
        );
        assert!(lab.get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some("default"), "broken").is_none());
        // kubectl 1.27+ asks for strict field validation: an unknown field is a 400.
        let mut group = crate::validation::group_with_string_sites("unknown");
        group["spec"]["sites"] = serde_json::json!([]);
        group["spec"]["bogus"] = serde_json::json!(true);
        let path = kubectl.write("unknown.json", &group.to_string());
        let (ok, _, stderr) = kubectl.run_status(&["create", "-f", &path]);
        assert!(!ok, "refused");
        assert!(stderr.contains("strict decoding error: unknown field \"spec.bogus\""), "{stderr}");
    })
    .await;
}

/// kubectl 1.20 explains from `/openapi/v2` (protobuf only), which the lab serves empty: it
/// cannot find the resource's schema. This pins that documented limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_20_explain_finds_no_schema() {
    with_project_crds(kubectl_1_20(), |_, kubectl| {
        let (ok, stdout, stderr) = kubectl.run_status(&["explain", "mfg.spec.sites"]);
        assert!(!ok, "kubectl 1.20 explain unexpectedly worked:\n{stdout}");
        assert!(stderr.contains("couldn't find resource"), "{stderr}");
    })
    .await;
}
