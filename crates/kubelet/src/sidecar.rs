//! The `sidecar` container: the `bloodraven-sidecar` binary run as a child process beside the
//! pod's mysqld (so a drill can SIGKILL it), configured from the container's environment in the
//! pod template with the lab's addresses substituted:
//!
//! | variable | lab value |
//! | --- | --- |
//! | `PEER_ADDRESSES` | one proxy link per peer, per pod: `sidecar/<ns>/<deployment>-><svc>:<port>`, upstream the peer pod's sidecar (re-pointed as pods come and go) |
//! | `BLOODRAVEN_ADDRESS` | the proxy link `sidecar/<ns>/<deployment>->operator` to [`SidecarConfig::operator`] (empty when none) |
//! | `MYSQL_HOST`, `MYSQL_PORT` | the pod's mysqld (direct: same pod) |
//! | `MYSQL_USER`, `MYSQL_PASSWORD` | [`SidecarConfig::user`]/`password` (the template names a Secret the lab kubelet does not read) |
//! | `SIDECAR_LISTEN` | `127.0.0.1:<free port>`; the Services' sidecar port resolves there |
//! | `BLOODRAVEN_MYSQL_DATA_DIR` | the pod's mysqld data folder (`<claim folder>/data`) |
//! | `BLOODRAVEN_LAB_PVC_MOUNT` | with PITR rendered and [`SidecarConfig::pvc_archive`] set: that folder, standing in for the PVC archive mount (the sidecar's mount check accepts it) |
//!
//! | a value naming a file in a Secret volume's mount (`BLOODRAVEN_PITR_PASSPHRASE_FILE`) | the same file in the pod's projected folder (`<claim folder>/secrets/<volume>/`, [`crate::secrets`]) |
//!
//! Every other literal variable (`LEASE_TIMEOUT`, `PEER_CHECK_INTERVAL`, …) is passed as is.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;

use bloodraven_sites::proxy::{Link, ProxyHub};
use bloodraven_workloads::resolve::parse_service_host;
use bloodraven_workloads::{containers, sidecar_env};
use k8s_openapi::api::apps::v1::Deployment;
use tokio::process::{Child, Command};
use tracing::{info, warn};

use crate::LabResolver;

/// The prefix of the per-pod sidecar links.
pub const SIDECAR_LINK_PREFIX: &str = "sidecar/";

/// How the lab runs sidecars.
#[derive(Debug, Clone)]
pub struct SidecarConfig {
    /// The `bloodraven-sidecar` binary.
    pub binary: PathBuf,
    /// The operator's HTTP address (its `/active-site`), if one runs.
    pub operator: Option<SocketAddr>,
    /// The sidecar's MySQL account.
    pub user: String,
    /// Its password.
    pub password: String,
    /// `RUST_LOG` for the child.
    pub log_filter: String,
    /// The folder standing in for the PVC archive claim (every pod's sidecar shares it, as the
    /// claim would be shared); `None`: a PVC archive's mount check fails, as without a volume.
    pub pvc_archive: Option<PathBuf>,
}

impl SidecarConfig {
    /// `binary` with the lab's sidecar account and no operator.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self {
            binary: binary.into(),
            operator: None,
            user: bloodraven_sites::accounts::SIDECAR.user.to_owned(),
            password: bloodraven_sites::accounts::SIDECAR.password.to_owned(),
            log_filter: "info".to_owned(),
            pvc_archive: None,
        }
    }

    /// The binary from `BLOODRAVEN_SIDECAR_BIN`, else `bloodraven-sidecar` in the target
    /// folder of the running test (`target/<profile>/`, built by `cargo build -p
    /// bloodraven-sidecar`). `None` when neither exists.
    pub fn locate() -> Option<PathBuf> {
        if let Some(path) = std::env::var_os("BLOODRAVEN_SIDECAR_BIN") {
            return Some(PathBuf::from(path));
        }
        let exe = std::env::current_exe().ok()?;
        exe.ancestors()
            .skip(1)
            .take(3)
            .map(|dir| dir.join("bloodraven-sidecar"))
            .find(|candidate| candidate.is_file())
    }
}

/// The name of the link from `deployment`'s sidecar to `target` (`operator` or `<svc>:<port>`).
pub fn sidecar_link_name(namespace: &str, deployment: &str, target: &str) -> String {
    format!("{SIDECAR_LINK_PREFIX}{namespace}/{deployment}->{target}")
}

/// One peer entry of `PEER_ADDRESSES` and its link.
#[derive(Debug, Clone)]
struct Peer {
    namespace: String,
    service: String,
    port: u16,
    link: Link,
}

/// The running sidecar process of one pod.
#[derive(Debug)]
pub(crate) struct Running {
    child: Child,
    pub(crate) addr: SocketAddr,
    pub(crate) mysql: SocketAddr,
    pub(crate) started_at: jiff::Timestamp,
    peers: Vec<Peer>,
}

impl Running {
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Whether the process still runs.
    pub(crate) fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Re-points the peer links at the peers' current sidecars.
    pub(crate) fn refresh(&self, resolver: &LabResolver) {
        for peer in &self.peers {
            if let Some(upstream) = resolver.upstream(&peer.namespace, &peer.service, peer.port)
                && upstream != peer.link.upstream()
            {
                peer.link.set_upstream(upstream);
            }
        }
    }

    /// SIGKILL and reap.
    pub(crate) async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

fn link(hub: &ProxyHub, name: String, upstream: SocketAddr) -> Option<Link> {
    if let Some(existing) = hub.get(&name) {
        existing.set_upstream(upstream);
        return Some(existing);
    }
    match hub.link(name.clone(), upstream) {
        Ok(link) => Some(link),
        Err(error) => {
            warn!(link = %name, %error, "cannot create a sidecar link");
            hub.get(&name)
        }
    }
}

fn free_addr() -> std::io::Result<SocketAddr> {
    std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()
}

/// Nowhere: a peer with no sidecar yet (connections are refused).
fn nowhere() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 1))
}

/// Starts the sidecar of `deployment`'s pod beside the mysqld at `mysql`.
#[expect(
    clippy::too_many_arguments,
    reason = "one call site (the pod worker) passing the pod's parts; a struct would only rename them"
)]
pub(crate) fn start(
    config: &SidecarConfig,
    deployment: &Deployment,
    namespace: &str,
    deployment_name: &str,
    mysql: SocketAddr,
    resolver: &LabResolver,
    log: &std::path::Path,
    claim_folder: Option<&std::path::Path>,
    projected: &[crate::secrets::Projected],
) -> std::io::Result<Running> {
    let container = deployment
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|spec| spec.containers.iter().find(|c| c.name == containers::SIDECAR))
        .cloned()
        .unwrap_or_default();
    let hub = &resolver.hub;
    let mut command = Command::new(&config.binary);
    command.env_clear();
    let mut peers = Vec::new();
    for variable in container.env.unwrap_or_default() {
        let Some(value) = variable.value else { continue };
        match variable.name.as_str() {
            "PEER_ADDRESSES" => {
                let mut addresses = Vec::new();
                for entry in value.split(',').map(str::trim).filter(|entry| !entry.is_empty()) {
                    let Some((host, port)) = entry.rsplit_once(':') else { continue };
                    let (Some((peer_namespace, service)), Ok(port)) =
                        (parse_service_host(host, namespace), port.parse::<u16>())
                    else {
                        warn!(%entry, "a PEER_ADDRESSES entry the lab cannot map; skipped");
                        continue;
                    };
                    let upstream =
                        resolver.upstream(&peer_namespace, &service, port).unwrap_or_else(nowhere);
                    let name =
                        sidecar_link_name(namespace, deployment_name, &format!("{service}:{port}"));
                    let Some(link) = link(hub, name, upstream) else { continue };
                    addresses.push(link.addr().to_string());
                    peers.push(Peer { namespace: peer_namespace, service, port, link });
                }
                command.env("PEER_ADDRESSES", addresses.join(","));
            }
            "BLOODRAVEN_ADDRESS" => {
                let address = config
                    .operator
                    .and_then(|operator| {
                        link(
                            hub,
                            sidecar_link_name(namespace, deployment_name, "operator"),
                            operator,
                        )
                    })
                    .map(|link| link.addr().to_string())
                    .unwrap_or_default();
                command.env("BLOODRAVEN_ADDRESS", address);
            }
            "MYSQL_HOST" | "MYSQL_PORT" | "MYSQL_USER" | "MYSQL_PASSWORD" | "SIDECAR_LISTEN" => {}
            name if name == sidecar_env::MYSQL_DATA_DIR => {
                let dir = claim_folder.map_or_else(|| value.clone().into(), |f| f.join("data"));
                command.env(name, dir);
            }
            name if name == sidecar_env::PITR_ARCHIVE_ID => {
                if let Some(dir) = &config.pvc_archive {
                    command.env(sidecar_env::LAB_PVC_MOUNT, dir);
                }
                command.env(name, value);
            }
            name => {
                command.env(name, crate::secrets::rewrite(&value, projected));
            }
        }
    }
    // A field reference (POD_NAMESPACE) is the pod's own namespace.
    command.env("POD_NAMESPACE", namespace);
    let addr = free_addr()?;
    command
        .env("MYSQL_HOST", mysql.ip().to_string())
        .env("MYSQL_PORT", mysql.port().to_string())
        .env("MYSQL_USER", &config.user)
        .env("MYSQL_PASSWORD", &config.password)
        .env("SIDECAR_LISTEN", addr.to_string())
        .env("RUST_LOG", &config.log_filter)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::OpenOptions::new().create(true).append(true).open(log)?)
        .kill_on_drop(true);
    let child = command.spawn()?;
    info!(deployment = %deployment_name, pid = ?child.id(), %addr, "sidecar started");
    Ok(Running { child, addr, mysql, started_at: jiff::Timestamp::now(), peers })
}
