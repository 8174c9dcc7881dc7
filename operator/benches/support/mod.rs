//! What the operator benchmarks share: the operator as a child process of its own (this
//! benchmark binary again, in child mode) so that its RSS and CPU time are its own, the lab's
//! request log as the poll counter, the child's CPU time (read by the child itself) and `/proc`
//! readings of its memory.
//!
//! Child mode (`BLOODRAVEN_BENCH_OPERATOR_CHILD=<dir>`): the operator's controller and topology
//! managers (`controller::run`, every namespace, as the binary runs them) against the lab API
//! server of `<dir>/kubeconfig`, resolving Services through `<dir>/resolve.json`
//! (`{"<namespace>/<service>:<port>": "127.0.0.1:<port>"}`, re-read when a name is missing;
//! anything else resolves to a closed port: a site that does not answer). The only
//! difference from the shipped binary is that resolver (the binary's is the cluster DNS).

#![allow(dead_code, reason = "each benchmark uses a part")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bloodraven_lab::Lab;
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::manager::Tuning;
use bloodraven_workloads::{Resolver, ServiceAddress};
use serde_json::Value;

pub(crate) const CHILD_ENV: &str = "BLOODRAVEN_BENCH_OPERATOR_CHILD";
pub(crate) const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

pub(crate) fn quick() -> bool {
    std::env::var_os("BLOODRAVEN_BENCH_QUICK").is_some()
}

/// In child mode, runs the operator until killed and never returns.
pub(crate) fn run_child_if_asked() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else { return };
    let dir = PathBuf::from(dir);
    serve_cpu_time(&dir);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let kubeconfig = kube::config::Kubeconfig::read_from(dir.join("kubeconfig")).unwrap();
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
        let client = kube::Client::try_from(config).unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let resolver = FileResolver {
            file: dir.join("resolve.json"),
            map: Mutex::default(),
            closed: closed.port(),
        };
        let context =
            Arc::new(Context::new(client, Arc::new(resolver), Tuning::default(), "bench"));
        controller::run(context, None).await;
    });
    std::process::exit(0);
}

/// This process's CPU time (every thread, live or exited) in nanoseconds.
fn process_cpu_nanos() -> u128 {
    let spec = nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID).unwrap();
    spec.tv_sec() as u128 * 1_000_000_000 + spec.tv_nsec() as u128
}

/// Answers every connection to a 127.0.0.1 port (written to `<dir>/cpu.port`) with this
/// process's CPU time in nanoseconds: the parent reads the child's CPU with nanosecond
/// resolution (`/proc/<pid>/stat` counts 10 ms ticks, ±0.1 ms per poll over a 30 s window).
/// The thread sleeps in `accept` between the two readings of a window.
fn serve_cpu_time(dir: &Path) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let tmp = dir.join("cpu.port.tmp");
    std::fs::write(&tmp, port.to_string()).unwrap();
    std::fs::rename(tmp, dir.join("cpu.port")).unwrap();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            use std::io::Write as _;
            let _ = stream.write_all(process_cpu_nanos().to_string().as_bytes());
        }
    });
}

struct FileResolver {
    file: PathBuf,
    map: Mutex<BTreeMap<String, String>>,
    closed: u16,
}

impl Resolver for FileResolver {
    fn resolve(&self, namespace: &str, service: &str, port: u16) -> Option<ServiceAddress> {
        let key = format!("{namespace}/{service}:{port}");
        let mut map = self.map.lock().unwrap();
        if !map.contains_key(&key)
            && let Ok(text) = std::fs::read_to_string(&self.file)
            && let Ok(read) = serde_json::from_str(&text)
        {
            *map = read;
        }
        let Some(addr) = map.get(&key) else {
            return Some(ServiceAddress { host: "127.0.0.1".to_owned(), port: self.closed });
        };
        let (host, port) = addr.rsplit_once(':')?;
        Some(ServiceAddress { host: host.to_owned(), port: port.parse().ok()? })
    }
}

/// Writes `<dir>/resolve.json` atomically.
pub(crate) fn write_resolve(dir: &Path, map: &BTreeMap<String, String>) {
    let tmp = dir.join("resolve.json.tmp");
    std::fs::write(&tmp, serde_json::to_string(map).unwrap()).unwrap();
    std::fs::rename(tmp, dir.join("resolve.json")).unwrap();
}

/// The operator child; killed (and reaped) on drop.
pub(crate) struct OperatorChild(Child, PathBuf);

impl OperatorChild {
    pub(crate) fn spawn(lab: &Lab, dir: &Path) -> Self {
        lab.write_kubeconfig(&dir.join("kubeconfig"), None).unwrap();
        let log = std::fs::File::create(dir.join("operator.log")).unwrap();
        let child = Command::new(std::env::current_exe().unwrap())
            .env(CHILD_ENV, dir)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        OperatorChild(child, dir.to_owned())
    }

    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }

    /// The child's CPU time (every thread, live or exited) in seconds, nanosecond resolution,
    /// read from the child itself (`serve_cpu_time`); waits (bounded) for its port file.
    pub(crate) fn cpu_seconds(&self) -> f64 {
        use std::io::Read as _;
        let file = self.1.join("cpu.port");
        let deadline = Instant::now() + Duration::from_secs(60);
        let port: u16 = loop {
            if let Ok(text) = std::fs::read_to_string(&file) {
                break text.trim().parse().unwrap();
            }
            assert!(Instant::now() < deadline, "the operator child wrote no {}", file.display());
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text.trim().parse::<u128>().unwrap() as f64 / 1e9
    }

    /// A `/proc/<pid>/status` field in KiB (`VmRSS`, `VmHWM`).
    pub(crate) fn status_kib(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|value| value.split_whitespace().next()?.parse().ok())
            .unwrap()
    }
}

impl Drop for OperatorChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls run so far: each topology poll starts with one GET of its group by name (the
/// controller itself only lists and watches).
pub(crate) fn polls(lab: &Lab) -> usize {
    lab.requests()
        .iter()
        .filter(|request| {
            request.verb == "get"
                && request.resource.as_deref() == Some("mysqlfailovergroups.shipstream.io")
                && request.name.is_some()
                && request.subresource.is_none()
        })
        .count()
}

/// Waits (bounded) until `check` holds; panics naming `what` otherwise, after printing
/// `diagnose()`.
pub(crate) fn wait_until(
    what: &str,
    bound: Duration,
    mut check: impl FnMut() -> bool,
    diagnose: impl Fn() -> String,
) {
    let started = Instant::now();
    while !check() {
        if started.elapsed() > bound {
            eprintln!("{}", diagnose());
            panic!("gave up after {bound:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The end of the child's log and a group's stored status: what a failed wait prints.
pub(crate) fn diagnose(lab: &Lab, dir: &Path) -> String {
    let log = std::fs::read_to_string(dir.join("operator.log")).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(30).collect();
    let groups = lab.list("shipstream.io/v1alpha1", "MysqlFailoverGroup");
    let status = groups.first().map(|group| group["status"].to_string()).unwrap_or_default();
    format!(
        "{} groups stored; the first one's status: {status}\nthe operator's log (last 30 lines, newest first):\n{}",
        groups.len(),
        tail.join("\n")
    )
}

/// The CRDs an installation has (`deploy/crds/`, and ExternalDNS's DNSEndpoint): without one,
/// the operator's watch of that kind retries against a 404, which is not the steady state
/// being measured.
const INSTALLED_CRDS: [&str; 4] = [
    "deploy/crds/mysqlfailovergroups.shipstream.io.yaml",
    "deploy/crds/mysqlbackups.shipstream.io.yaml",
    "deploy/crds/mysqlbackupverifications.shipstream.io.yaml",
    "deploy/crds/external/dnsendpoints.externaldns.k8s.io.yaml",
];

/// Loads the installed CRDs and deploy/examples/group.yaml (Namespace `orders`, its credentials
/// Secret, group `orders`) into `lab`; returns the stored group.
pub(crate) fn apply_example(lab: &Lab) -> Value {
    for path in INSTALLED_CRDS {
        let crd = std::fs::read_to_string(format!("{ROOT}/{path}")).unwrap();
        lab.load_crds(&crd).unwrap();
    }
    let yaml = std::fs::read_to_string(format!("{ROOT}/deploy/examples/group.yaml")).unwrap();
    lab.apply_yaml(&yaml)
        .unwrap()
        .into_iter()
        .find(|object| object["kind"] == "MysqlFailoverGroup")
        .expect("deploy/examples/group.yaml has a MysqlFailoverGroup")
}

/// A copy of `group` (a MysqlFailoverGroup object) named `name`, with no server-set fields.
pub(crate) fn renamed(group: &Value, name: &str) -> Value {
    let mut copy = group.clone();
    let namespace = group["metadata"]["namespace"].clone();
    copy["metadata"] = serde_json::json!({ "name": name, "namespace": namespace });
    if let Some(object) = copy.as_object_mut() {
        object.remove("status");
    }
    copy
}

/// The lab's base folder for the live benchmarks' MySQL data: short (socket paths).
pub(crate) fn short_root() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("brb-").tempdir_in("/tmp").unwrap()
}

pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
}
