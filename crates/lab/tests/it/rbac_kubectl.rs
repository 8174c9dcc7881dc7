//! kubectl as a client-certificate user under RBAC: a read-only user's patch is
//! `Error from server (Forbidden)`, `kubectl auth can-i` (SelfSubjectAccessReview) answers the
//! same, `kubectl auth whoami` (SelfSubjectReview, not in 1.20) names the certificate's user
//! and groups. kubectl 1.20 (`BLOODRAVEN_KUBECTL_1_20`) and 1.36 (`BLOODRAVEN_KUBECTL_1_36`),
//! both exported by scripts/provision.sh.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bloodraven_lab::{Lab, LabConfig};
use serde_json::json;

use crate::support::{start_lab, widget};

const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

const POLICY: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: widget-reader }
rules:
- apiGroups: ["lab.bloodraven.test"]
  resources: ["widgets"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: widget-readers }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-reader }
subjects:
- { apiGroup: rbac.authorization.k8s.io, kind: Group, name: readers }
"#;

fn program(variable: &str) -> PathBuf {
    std::env::var_os(variable).map(PathBuf::from).unwrap_or_else(|| {
        panic!("{variable} is not set: `source scripts/provision.sh` exports it")
    })
}

/// Runs kubectl to completion (bounded): (success, stdout, stderr).
fn kubectl(program: &PathBuf, home: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let mut child = Command::new(program)
        .arg("--kubeconfig")
        .arg(home.join("kubeconfig"))
        .arg("--cache-dir")
        .arg(home.join("cache"))
        .args(args)
        .env("HOME", home)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            let output = child.wait_with_output().unwrap();
            return (
                output.status.success(),
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

fn scenario(lab: &Lab, program: &PathBuf, whoami: bool) {
    let home = tempfile::tempdir().unwrap();
    lab.write_kubeconfig_with_certificate(&home.path().join("kubeconfig"), "bob", &["readers"])
        .unwrap();
    let run = |args: &[&str]| kubectl(program, home.path(), args);

    let (ok, stdout, stderr) = run(&["get", "widgets", "-o", "name"]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "widget.lab.bloodraven.test/w1");

    let (ok, _, stderr) =
        run(&["patch", "widget", "w1", "--type", "merge", "-p", r#"{"spec":{"color":"blue"}}"#]);
    assert!(!ok);
    assert!(
        stderr.contains(
            "Error from server (Forbidden): widgets.lab.bloodraven.test \"w1\" is forbidden: \
                User \"bob\" cannot patch resource \"widgets\" in API group \
                \"lab.bloodraven.test\" in the namespace \"default\""
        ),
        "{stderr}"
    );

    let (ok, stdout, stderr) = run(&["auth", "can-i", "patch", "widgets"]);
    assert!(!ok && stdout.trim() == "no", "{stdout}{stderr}");
    let (ok, stdout, stderr) = run(&["auth", "can-i", "list", "widgets"]);
    assert!(ok && stdout.trim() == "yes", "{stdout}{stderr}");
    let (ok, stdout, stderr) = run(&["auth", "can-i", "get", "widgets", "-n", "elsewhere"]);
    assert!(
        ok && stdout.trim() == "yes",
        "a ClusterRoleBinding grants every namespace: {stdout}{stderr}"
    );
    let (ok, stdout, stderr) = run(&["auth", "can-i", "delete", "configmaps"]);
    assert!(!ok && stdout.trim() == "no", "{stdout}{stderr}");

    if whoami {
        let (ok, stdout, stderr) = run(&["auth", "whoami", "-o", "json"]);
        assert!(ok, "{stderr}");
        let review: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(
            review["status"]["userInfo"],
            json!({ "username": "bob", "groups": ["readers", "system:authenticated"] })
        );
    }

    let requests = lab.requests();
    assert!(
        requests.iter().all(|request| request.user == "bob"),
        "the certificate names every request"
    );
    let reviews = requests
        .iter()
        .filter(|request| request.path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
        .count();
    assert_eq!(reviews, 4, "kubectl auth can-i asks the API server");
    assert_eq!(
        lab.get("lab.bloodraven.test/v1", "Widget", Some("default"), "w1").unwrap()["spec"]["color"],
        "red"
    );
}

async fn run_scenario(program: PathBuf, whoami: bool) {
    let lab = start_lab(LabConfig { tls: true, ..LabConfig::default() }.with_rbac()).await;
    lab.apply_yaml(POLICY).unwrap();
    lab.apply(serde_json::to_value(widget("w1", "red")).unwrap()).unwrap();
    let lab = std::sync::Arc::new(lab);
    let shared = lab.clone();
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || scenario(&shared, &program, whoami)),
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
async fn kubectl_1_20_as_a_certificate_user_under_rbac() {
    run_scenario(program("BLOODRAVEN_KUBECTL_1_20"), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_36_as_a_certificate_user_under_rbac() {
    run_scenario(program("BLOODRAVEN_KUBECTL_1_36"), true).await;
}
