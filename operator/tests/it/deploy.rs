//! `deploy/` against what runs: the operator's RBAC is exactly what its code calls, and all of
//! `deploy/` applies with real kubectl (1.20 and 1.36), after which the console's roles answer
//! `kubectl auth can-i` as their documents say.
//!
//! `operator_rbac_is_exactly_what_the_operator_calls` needs no MySQL (the sites do not answer);
//! the kubectl test needs `source scripts/provision.sh` (BLOODRAVEN_KUBECTL_1_20,
//! BLOODRAVEN_KUBECTL_1_36) and fails naming it otherwise.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::SiteState;
use bloodraven_kubelet::{Kubelet, KubeletConfig};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_operator::controller::Context;
use bloodraven_operator::lease::{LeaseConfig, try_acquire_or_renew};
use bloodraven_operator::manager::Tuning;
use bloodraven_sites::mysqld::MysqlDist;
use bloodraven_sites::proxy::ProxyHub;
use bloodraven_sites::template::ensure_template_async;
use bloodraven_workloads::{Resolver, ServiceAddress, labels};
use serde_json::{Value, json};

use super::harness::{self, Operator};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";
const OPERATOR_USER: &str = "system:serviceaccount:bloodraven-system:bloodraven-operator";
/// Generous: CI shares 2 cores with other real servers.
const BOUND: Duration = Duration::from_secs(120);
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    harness::wait_for(what, BOUND, Duration::from_millis(200), check).await
}

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{path}"))
        .unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// Every site resolves to a port nobody listens on: the sites do not answer (refused).
struct Closed(u16);

impl Resolver for Closed {
    fn resolve(&self, _namespace: &str, _service: &str, _port: u16) -> Option<ServiceAddress> {
        Some(ServiceAddress { host: "127.0.0.1".to_owned(), port: self.0 })
    }
}

/// (API group, resource[/subresource], verb) of a request the lab logged. The lab names a
/// resource of a named group `<plural>.<group>`.
fn used(record: &bloodraven_lab::RequestRecord) -> Option<(String, String, String)> {
    let resource = record.resource.as_deref()?;
    let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
    let plural = match &record.subresource {
        Some(sub) => format!("{plural}/{sub}"),
        None => plural.to_owned(),
    };
    Some((group.to_owned(), plural, record.verb.clone()))
}

/// Every (API group, resource, verb) the named Role/ClusterRole objects grant.
fn granted(roles: &[Value]) -> BTreeSet<(String, String, String)> {
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .map(|items| items.iter().filter_map(|item| item.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let mut all = BTreeSet::new();
    for role in roles {
        for rule in role["rules"].as_array().into_iter().flatten() {
            for group in strings(&rule["apiGroups"]) {
                for resource in strings(&rule["resources"]) {
                    for verb in strings(&rule["verbs"]) {
                        assert!(
                            group != "*" && resource != "*" && verb != "*",
                            "least privilege: no wildcard in {rule}"
                        );
                        all.insert((group.clone(), resource.clone(), verb));
                    }
                }
            }
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_rbac_is_exactly_what_the_operator_calls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let lab = Lab::start(LabConfig::default().with_rbac()).await.expect("the lab API server");
    lab.load_crds(&read("deploy/crds/mysqlfailovergroups.shipstream.io.yaml")).unwrap();
    // The operator watches MysqlBackups too (the /pitr-cutoff answer), and verifications.
    lab.load_crds(&read("deploy/crds/mysqlbackups.shipstream.io.yaml")).unwrap();
    lab.load_crds(&read("deploy/crds/mysqlbackupverifications.shipstream.io.yaml")).unwrap();
    lab.apply_yaml(&read("deploy/examples/group.yaml")).expect("deploy/examples/group.yaml");
    lab.apply_yaml(&read("deploy/operator/rbac.yaml")).expect("deploy/operator/rbac.yaml");
    // The pods a kubelet would run (no MySQL here): the manager labels them.
    let group: MysqlFailoverGroup = serde_json::from_value(
        lab.get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some(NAMESPACE), GROUP).unwrap(),
    )
    .unwrap();
    for site in &group.spec.sites {
        let pod_labels = labels::site_labels(GROUP, &site.name, &site.effective_role());
        lab.apply(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": format!("mysql-{GROUP}-{}-0", site.name), "namespace": NAMESPACE,
                "labels": pod_labels,
            },
            "spec": { "containers": [{ "name": "mysql", "image": "mysql:9.7" }] },
        }))
        .unwrap();
    }

    // As the operator's ServiceAccount, through its token: exactly deploy/operator/rbac.yaml.
    let token = lab.service_account_token("bloodraven-system", "bloodraven-operator").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    lab.write_kubeconfig_with_token(&kubeconfig, "operator", &token).unwrap();
    let client = client_from(&kubeconfig).await;

    // The binary's calls: the leader Lease (created, then renewed), the controller over every
    // namespace (as the ClusterRole is meant), the topology managers.
    take_lease(&client).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let tuning = Tuning { poll_interval: Duration::from_millis(500), ..Tuning::default() };
    let Operator { context, controller } =
        Operator::start(&client, Arc::new(Closed(closed)), tuning, None, "test");

    // The test reads through the library (never logged as the operator's calls).
    wait_for("a status with three unreachable sites", || async {
        let refused = refused(&lab);
        assert!(refused.is_empty(), "deploy/operator/rbac.yaml refused the operator: {refused:#?}");
        let group =
            lab.get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some(NAMESPACE), GROUP)?;
        let status = serde_json::from_value::<MysqlFailoverGroup>(group).ok()?.status?;
        (status.sites.len() == 3
            && status.sites.iter().all(|site| site.state == Some(SiteState::Unreachable)))
        .then_some(())
    })
    .await;
    wait_for("every pod labelled role=replica", || async {
        lab.list("v1", "Pod")
            .iter()
            .all(|pod| pod["metadata"]["labels"][labels::ROLE] == labels::ROLE_REPLICA)
            .then_some(())
    })
    .await;
    wait_for("an Event from the operator", || async {
        (!lab.list("events.k8s.io/v1", "Event").is_empty()).then_some(())
    })
    .await;
    repeat_an_event(&context, &group).await;
    // A few more polls, so that every steady-state call has been made.
    tokio::time::sleep(Duration::from_secs(2)).await;
    controller.abort();
    let _ = controller.await;
    drop(context);

    check_rbac(&lab, &[&["dnsendpoints", PLANNED_BOOKKEEPING], BACKUP_CALLS].concat());
    lab.stop().await.expect("the lab stops");
}

/// The group patch of the planned failover's annotation bookkeeping: granted, reached only by
/// the planned-failover drills (which run without RBAC).
const PLANNED_BOOKKEEPING: &str = "mysqlfailovergroups:patch";

/// The MysqlBackup controller's calls once a backup exists (these runs create none; reached
/// by `backup_live.rs`): read the backup, write its status, create and read its Job and
/// credentials Secret, read the Job pod's log; and the verification controller's.
const BACKUP_CALLS: &[&str] = &[
    "mysqlbackups:get",
    "mysqlbackups/status",
    "jobs:get",
    "jobs:create",
    "secrets:create",
    "pods/log",
    // The MysqlBackupVerification controller's, once a verification exists (reached by
    // `backup_verify_live.rs`): read it, write its status.
    "mysqlbackupverifications:get",
    "mysqlbackupverifications/status",
    // Schedules, retention and artifact cleanup (backup/housekeeping.rs, cleanup_io.rs), once
    // a group has schedules or backups (reached by `backup_schedule_live.rs`).
    "mysqlbackups:patch",
    "mysqlbackups:delete",
    "mysqlbackups:create",
    "jobs:patch",
    "jobs:delete",
    "cronjobs:create",
    "cronjobs:patch",
    "cronjobs:delete",
];

/// The operator's calls the lab refused (403), as `verb path?query`.
fn refused(lab: &Lab) -> Vec<String> {
    lab.requests()
        .into_iter()
        .filter(|request| request.user == OPERATOR_USER && request.status == 403)
        .map(|request| format!("{} {}?{}", request.verb, request.path, request.query))
        .collect()
}

/// (a) no call of the operator's ServiceAccount was refused; (b) every (API group, resource,
/// verb) deploy/operator/rbac.yaml grants was used, but for the resources (or
/// `resource:verb`) in `not_reached` (paths this run cannot reach). `mysqlfailovergroups:patch`
/// is the planned failover's annotation bookkeeping (`planned/io`), which the planned drills
/// reach without RBAC.
fn check_rbac(lab: &Lab, not_reached: &[&str]) {
    let requests: Vec<_> =
        lab.requests().into_iter().filter(|request| request.user == OPERATOR_USER).collect();
    let forbidden: Vec<_> = requests
        .iter()
        .filter(|request| request.status == 403)
        .map(|request| format!("{} {} {}", request.verb, request.path, request.query))
        .collect();
    assert!(forbidden.is_empty(), "calls deploy/operator/rbac.yaml does not allow: {forbidden:#?}");
    let mut calls = BTreeSet::new();
    for request in &requests {
        let Some(call) = used(request) else { continue };
        // Kubernetes authorizes a server-side apply that creates its object as a create too
        // (https://kubernetes.io/docs/reference/using-api/server-side-apply/, "RBAC and
        // permissions"); the lab answers such an apply 201.
        if call.2 == "patch" && request.status == 201 {
            calls.insert((call.0.clone(), call.1.clone(), "create".to_owned()));
        }
        calls.insert(call);
    }
    // The self reviews are the API server's own (system:basic-user), not the operator's.
    calls.retain(|(group, _, _)| !group.starts_with("authorization.k8s.io"));
    let roles = [
        lab.get("rbac.authorization.k8s.io/v1", "ClusterRole", None, "bloodraven-operator")
            .expect("the operator's ClusterRole"),
        lab.get(
            "rbac.authorization.k8s.io/v1",
            "Role",
            Some("bloodraven-system"),
            "bloodraven-operator-leader-election",
        )
        .expect("the operator's leader-election Role"),
    ];
    let granted = granted(&roles);
    let unused: Vec<_> = granted
        .difference(&calls)
        .filter(|(_, resource, verb)| {
            !not_reached.contains(&resource.as_str())
                && !not_reached.contains(&format!("{resource}:{verb}").as_str())
        })
        .collect();
    assert!(
        unused.is_empty(),
        "deploy/operator/rbac.yaml grants what the operator never called (least privilege: \
         remove them): {unused:#?}\nthe calls: {calls:#?}"
    );
    let ungranted: Vec<_> = calls.difference(&granted).collect();
    assert!(ungranted.is_empty(), "called but not granted (and not refused?): {ungranted:#?}");
}

async fn client_from(kubeconfig: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
    kube::Client::try_from(config).unwrap()
}

/// The leader Lease as the binary takes it: created, then renewed.
async fn take_lease(client: &kube::Client) {
    let lease = LeaseConfig {
        namespace: "bloodraven-system".to_owned(),
        name: "bloodraven-operator".to_owned(),
        identity: "replica-a".to_owned(),
        duration: Duration::from_secs(15),
    };
    assert!(try_acquire_or_renew(client, &lease).await.unwrap(), "creates the Lease");
    assert!(try_acquire_or_renew(client, &lease).await.unwrap(), "renews the Lease");
}

/// An Event that repeats: the operator's recorder (its client, its reporter) patches the
/// first one into a series, as it does when a manager publishes the same alert again.
async fn repeat_an_event(context: &Context, group: &MysqlFailoverGroup) {
    let repeated = kube::runtime::events::Event {
        type_: kube::runtime::events::EventType::Warning,
        reason: "NoPrimaryDetected".to_owned(),
        note: Some("the same alert, published twice".to_owned()),
        action: "NoPrimaryDetected".to_owned(),
        secondary: None,
    };
    let reference = kube::Resource::object_ref(group, &());
    for _ in 0..2 {
        context.shared.recorder.publish(&repeated, &reference).await.expect("the Event");
    }
}

/// The converged active site: Ready, a writable primary, both followers replicating.
fn converged(group: &Value) -> Option<String> {
    let status = &group["status"];
    let active = status["activeSite"].as_str()?;
    let ready = status["conditions"]
        .as_array()?
        .iter()
        .any(|condition| condition["type"] == "Ready" && condition["status"] == "True");
    let sites = status["sites"].as_array()?;
    let followers = sites
        .iter()
        .filter(|site| site["name"] != active)
        .all(|site| site["replicating"] == true && site["sourceConvergenceState"] == "Converged");
    (ready && sites.len() == 3 && followers).then(|| active.to_owned())
}

/// The same check on a live group (real MySQL 9.7, the lab kubelet): a converged group whose
/// active site is published through ExternalDNS's DNSEndpoint (spec.dns.hostname), so every
/// path of a healthy group runs, DNS included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_rbac_covers_a_live_group_publishing_dns() {
    let dist = MysqlDist::from_env().expect("MySQL 9.7: run `source scripts/provision.sh`");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let config = LabConfig::default().with_rbac().with_admin("root", "root-token");
    let lab = Lab::start(config).await.expect("the lab API server");
    lab.load_crds(&read("deploy/crds/mysqlfailovergroups.shipstream.io.yaml")).unwrap();
    // The operator watches MysqlBackups too (the /pitr-cutoff answer), and verifications.
    lab.load_crds(&read("deploy/crds/mysqlbackups.shipstream.io.yaml")).unwrap();
    lab.load_crds(&read("deploy/crds/mysqlbackupverifications.shipstream.io.yaml")).unwrap();
    lab.load_crds(&read("deploy/crds/external/dnsendpoints.externaldns.k8s.io.yaml")).unwrap();
    let applied = lab.apply_yaml(&read("deploy/examples/group.yaml")).unwrap();
    let mut group = applied
        .into_iter()
        .find(|object| object["kind"] == "MysqlFailoverGroup")
        .expect("the example group");
    group["spec"]["dns"] = json!({ "hostname": "orders.db.example.test" });
    lab.apply(group).expect("the example group with spec.dns");
    lab.apply_yaml(&read("deploy/operator/rbac.yaml")).expect("deploy/operator/rbac.yaml");

    let dir = tempfile::tempdir().unwrap();
    lab.write_kubeconfig(&dir.path().join("admin"), Some("root")).unwrap();
    let admin = client_from(&dir.path().join("admin")).await;
    let token = lab.service_account_token("bloodraven-system", "bloodraven-operator").unwrap();
    lab.write_kubeconfig_with_token(&dir.path().join("operator"), "operator", &token).unwrap();
    let operator = client_from(&dir.path().join("operator")).await;
    take_lease(&operator).await;

    let template = ensure_template_async(&dist).await.expect("the template data directory");
    let root = tempfile::Builder::new().prefix("brd-").tempdir_in("/tmp").expect("a short root");
    let hub = Arc::new(ProxyHub::current().expect("a tokio runtime"));
    let mut config = KubeletConfig::new(root.path());
    config.namespace = Some(NAMESPACE.to_owned());
    let kubelet =
        Kubelet::start(admin, dist, template, hub, config).await.expect("the lab kubelet");
    let tuning = Tuning { poll_interval: Duration::from_secs(1), ..Tuning::default() };
    let Operator { context, controller } =
        Operator::start(&operator, Arc::new(kubelet.resolver()), tuning, None, "test");

    wait_for("the group to converge (Ready, one primary, followers replicating)", || async {
        let refused = refused(&lab);
        assert!(refused.is_empty(), "deploy/operator/rbac.yaml refused the operator: {refused:#?}");
        converged(&lab.get(
            "shipstream.io/v1alpha1",
            "MysqlFailoverGroup",
            Some(NAMESPACE),
            GROUP,
        )?)
    })
    .await;
    let endpoint = bloodraven_operator::dns::endpoint_name(GROUP);
    wait_for("the DNSEndpoint of spec.dns.hostname", || async {
        lab.get("externaldns.k8s.io/v1alpha1", "DNSEndpoint", Some(NAMESPACE), &endpoint)
    })
    .await;
    let group: MysqlFailoverGroup = serde_json::from_value(
        lab.get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some(NAMESPACE), GROUP).unwrap(),
    )
    .unwrap();
    repeat_an_event(&context, &group).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    controller.abort();
    let _ = controller.await;
    drop(context);
    kubelet.shutdown().await;
    check_rbac(&lab, &[&[PLANNED_BOOKKEEPING], BACKUP_CALLS].concat());
    lab.stop().await.expect("the lab stops");
}

fn program(variable: &str) -> PathBuf {
    std::env::var_os(variable).map(PathBuf::from).unwrap_or_else(|| {
        panic!("{variable} is not set: `source scripts/provision.sh` exports it")
    })
}

/// Runs kubectl to completion (bounded) with `home/kubeconfig`: (success, stdout, stderr).
fn kubectl(program: &Path, home: &Path, kubeconfig: &str, args: &[&str]) -> (bool, String, String) {
    let mut child = Command::new(program)
        .arg("--kubeconfig")
        .arg(home.join(kubeconfig))
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

async fn apply_deploy_and_check_roles(variable: &str) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let kubectl_program = program(variable);
    let config = LabConfig { tls: true, ..LabConfig::default() }
        .with_rbac()
        .with_admin("root", "root-token");
    let lab = Lab::start(config).await.expect("the lab API server");
    let home = tempfile::tempdir().unwrap();
    lab.write_kubeconfig(&home.path().join("admin"), Some("root")).unwrap();
    let run_blocking = |kubeconfig: &'static str, args: Vec<String>| {
        let program = kubectl_program.clone();
        let home = home.path().to_owned();
        async move {
            tokio::task::spawn_blocking(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                kubectl(&program, &home, kubeconfig, &args)
            })
            .await
            .unwrap()
        }
    };
    let args = |args: &[&str]| args.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>();

    // CRDs first (a custom resource in the same apply would find no mapping yet), then the
    // operator, the console roles, the example group: every file of deploy/.
    for folder in ["crds", "operator", "console", "examples"] {
        let path = format!("{ROOT}/deploy/{folder}");
        let (ok, stdout, stderr) = run_blocking("admin", args(&["apply", "-R", "-f", &path])).await;
        assert!(ok, "{variable}: kubectl apply -R -f deploy/{folder}: {stdout}{stderr}");
    }
    // Applying again changes nothing and still succeeds (what a rollout does).
    let path = format!("{ROOT}/deploy");
    let (ok, stdout, stderr) = run_blocking("admin", args(&["apply", "-R", "-f", &path])).await;
    assert!(ok, "{variable}: kubectl apply -R -f deploy/ (again): {stdout}{stderr}");
    assert!(
        lab.get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some(NAMESPACE), GROUP).is_some(),
        "the example group is stored"
    );

    for account in ["bloodraven-console", "bloodraven-console-operator", "bloodraven-operator"] {
        let token = lab.service_account_token("bloodraven-system", account).unwrap();
        lab.write_kubeconfig_with_token(&home.path().join(account), account, &token).unwrap();
    }
    // (account, verb, resource, extra args, allowed)
    let checks: &[(&str, &str, &str, &[&str], bool)] = &[
        ("bloodraven-console", "get", "mysqlfailovergroups", &[], true),
        ("bloodraven-console", "list", "mysqlfailovergroups", &[], true),
        ("bloodraven-console", "watch", "mysqlfailovergroups", &[], true),
        ("bloodraven-console", "list", "mysqlbackups", &[], true),
        ("bloodraven-console", "watch", "mysqlbackupverifications", &[], true),
        ("bloodraven-console", "watch", "events", &[], true),
        // The operator's leader Lease: read, never written.
        ("bloodraven-console", "watch", "leases.coordination.k8s.io", &[], true),
        ("bloodraven-console", "get", "leases.coordination.k8s.io", &[], true),
        ("bloodraven-console", "update", "leases.coordination.k8s.io", &[], false),
        ("bloodraven-console-operator", "watch", "leases.coordination.k8s.io", &[], true),
        ("bloodraven-console", "patch", "mysqlfailovergroups", &[], false),
        ("bloodraven-console", "patch", "mysqlfailovergroups", &["--subresource=status"], false),
        ("bloodraven-console", "create", "mysqlbackups", &[], false),
        ("bloodraven-console", "delete", "mysqlfailovergroups", &[], false),
        ("bloodraven-console", "get", "secrets", &[], false),
        ("bloodraven-console-operator", "watch", "mysqlfailovergroups", &[], true),
        ("bloodraven-console-operator", "patch", "mysqlfailovergroups", &[], true),
        (
            "bloodraven-console-operator",
            "patch",
            "mysqlfailovergroups",
            &["--subresource=status"],
            true,
        ),
        ("bloodraven-console-operator", "create", "mysqlbackups", &[], true),
        ("bloodraven-console-operator", "update", "mysqlfailovergroups", &[], false),
        ("bloodraven-console-operator", "delete", "mysqlfailovergroups", &[], false),
        ("bloodraven-console-operator", "delete", "mysqlbackups", &[], false),
        ("bloodraven-console-operator", "get", "secrets", &[], false),
        ("bloodraven-console-operator", "patch", "deployments.apps", &[], false),
        ("bloodraven-operator", "patch", "mysqlfailovergroups", &["--subresource=status"], true),
        ("bloodraven-operator", "patch", "mysqlfailovergroups", &[], true),
        ("bloodraven-operator", "update", "mysqlfailovergroups", &[], false),
        ("bloodraven-operator", "delete", "pods", &[], false),
    ];
    for (account, verb, resource, extra, allowed) in checks {
        let mut command = args(&["auth", "can-i", verb, resource, "-n", NAMESPACE]);
        command.extend(extra.iter().map(|arg| (*arg).to_owned()));
        let (ok, stdout, stderr) = run_blocking(account, command).await;
        let want = if *allowed { "yes" } else { "no" };
        assert!(
            ok == *allowed && stdout.trim() == want,
            "{variable}: as {account}, can-i {verb} {resource} {extra:?}: want {want}, got \
             {stdout}{stderr}"
        );
    }

    // And the real calls: the read-only console lists and cannot annotate; the
    // operator-console annotates (a planned-failover request).
    let (ok, stdout, stderr) =
        run_blocking("bloodraven-console", args(&["get", "mfg", "-A", "-o", "name"])).await;
    assert!(ok && stdout.contains(GROUP), "{variable}: read-only get mfg: {stdout}{stderr}");
    let annotate = |account: &'static str| {
        run_blocking(
            account,
            args(&[
                "annotate",
                "mfg",
                GROUP,
                "-n",
                NAMESPACE,
                "--overwrite",
                "bloodraven.shipstream.io/planned-failover=pdx",
            ]),
        )
    };
    let (ok, _, stderr) = annotate("bloodraven-console").await;
    assert!(!ok && stderr.contains("Forbidden"), "{variable}: read-only annotate: {stderr}");
    let (ok, stdout, stderr) = annotate("bloodraven-console-operator").await;
    assert!(ok, "{variable}: operator-console annotate: {stdout}{stderr}");
    let group =
        lab.get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some(NAMESPACE), GROUP).unwrap();
    assert_eq!(
        group["metadata"]["annotations"]["bloodraven.shipstream.io/planned-failover"],
        "pdx"
    );
    lab.stop().await.expect("the lab stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_applies_with_kubectl_1_20_and_the_roles_answer_can_i() {
    apply_deploy_and_check_roles("BLOODRAVEN_KUBECTL_1_20").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_applies_with_kubectl_1_36_and_the_roles_answer_can_i() {
    apply_deploy_and_check_roles("BLOODRAVEN_KUBECTL_1_36").await;
}
