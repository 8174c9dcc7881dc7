//! The lab's [`Resolver`]: a Service name → a fault-proxy link whose upstream is a ready pod's
//! `mysqld`.
//!
//! For Service `<svc>` in `<ns>` and port `P` the link is named `service/<ns>/<svc>:<P>` in the
//! lab's [`ProxyHub`] (so a drill can cut or delay it like any other link). Its upstream is the
//! first pod, by name, that the Service's selector matches (labels as the API server holds
//! them, so the operator's `role=primary` label moves the `-primary` Service) and that is
//! Ready — or merely running, when the Service publishes not-ready addresses (the internal
//! Service). The kubelet re-points every such link after each change it sees, so a client
//! that resolved once and reconnects to the same port follows the Service.
//!
//! Ports: the Service port whose target is the `mysql` container port maps to that pod's
//! mysqld; the one whose target is the sidecar's port maps to the pod's sidecar process while
//! the lab runs it ([`crate::KubeletConfig::sidecar`]).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use bloodraven_sites::proxy::{Link, ProxyHub};
use bloodraven_workloads::labels::selector_matches;
use bloodraven_workloads::{Resolver, ServiceAddress, ports};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::DynamicObject;
use kube::runtime::reflector::{ObjectRef, Store};
use tracing::warn;

use crate::Shared;
use crate::dns::{DNS_LINK_PREFIX, cname_service, dns_link_name};
use crate::pod::is_ready;

/// The prefix of the proxy links the resolver owns.
pub const LINK_PREFIX: &str = "service/";

/// The name of the proxy link for a Service port.
pub fn link_name(namespace: &str, service: &str, port: u16) -> String {
    format!("{LINK_PREFIX}{namespace}/{service}:{port}")
}

/// See the module documentation.
#[derive(Clone)]
pub struct LabResolver {
    pub(crate) services: Store<Service>,
    pub(crate) pods: Store<Pod>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) hub: Arc<ProxyHub>,
    /// The DNSEndpoints the kubelet sees (empty while the CRD is not served).
    pub(crate) dns: Store<DynamicObject>,
}

impl std::fmt::Debug for LabResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabResolver").finish_non_exhaustive()
    }
}

/// Which container a Service port reaches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Mysql,
    Sidecar,
}

fn target(service: &Service, port: u16) -> Option<Target> {
    let ports = service.spec.as_ref().and_then(|spec| spec.ports.as_ref())?;
    let entry = ports.iter().find(|entry| i64::from(entry.port) == i64::from(port))?;
    let (name, number) = match &entry.target_port {
        Some(IntOrString::String(name)) => (Some(name.as_str()), None),
        Some(IntOrString::Int(number)) => (None, Some(*number)),
        None => (None, Some(entry.port)),
    };
    if name == Some(ports::MYSQL_NAME) || number == Some(i32::from(ports::MYSQL)) {
        Some(Target::Mysql)
    } else if name == Some(ports::SIDECAR_HTTP_NAME)
        || number == Some(i32::from(ports::SIDECAR_HTTP))
    {
        Some(Target::Sidecar)
    } else {
        None
    }
}

impl LabResolver {
    /// The mysqld (or sidecar) address behind a Service port right now, if any pod serves it.
    pub fn upstream(&self, namespace: &str, service: &str, port: u16) -> Option<SocketAddr> {
        let found = self.services.get(&ObjectRef::new(service).within(namespace))?;
        let target = target(&found, port)?;
        let spec = found.spec.as_ref()?;
        let selector: BTreeMap<String, String> = spec.selector.clone().unwrap_or_default();
        let not_ready_too = spec.publish_not_ready_addresses == Some(true);
        let mut candidates: Vec<_> = self
            .pods
            .state()
            .into_iter()
            .filter(|pod| pod.metadata.namespace.as_deref() == Some(namespace))
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .filter(|pod| {
                selector_matches(
                    &selector,
                    pod.metadata.labels.as_ref().unwrap_or(&BTreeMap::new()),
                )
            })
            .filter(|pod| not_ready_too || is_ready(pod))
            .filter_map(|pod| pod.metadata.name.clone())
            .collect();
        candidates.sort();
        candidates.into_iter().find_map(|name| match target {
            Target::Mysql => self.shared.mysql_addr(namespace, &name),
            Target::Sidecar => self.shared.sidecar_addr(namespace, &name),
        })
    }

    /// Every Service port the lab can route now, keyed by
    /// [`bloodraven_workloads::address_key`], each resolved through its proxy link (so faults
    /// on the link apply): what an operator run as a separate process reads from its
    /// `--service-address-file`. Ports without a ready endpoint are left out.
    pub fn snapshot(&self) -> BTreeMap<String, SocketAddr> {
        let mut out = BTreeMap::new();
        for service in self.services.state() {
            let (Some(namespace), Some(name)) =
                (service.metadata.namespace.as_deref(), service.metadata.name.as_deref())
            else {
                continue;
            };
            let ports = service.spec.as_ref().and_then(|spec| spec.ports.as_ref());
            for entry in ports.into_iter().flatten() {
                let Ok(port) = u16::try_from(entry.port) else { continue };
                if let Some(address) = self.resolve(namespace, name, port) {
                    out.insert(
                        bloodraven_workloads::address_key(namespace, name, port),
                        SocketAddr::from((Ipv4Addr::LOCALHOST, address.port)),
                    );
                }
            }
        }
        out
    }

    /// The mysqld (or sidecar) address that DNS name `hostname` reaches on `port` right now:
    /// the endpoint of the cluster Service its DNSEndpoint `CNAME` names ([`crate::dns`]).
    pub fn host_upstream(&self, hostname: &str, port: u16) -> Option<SocketAddr> {
        let records = self.dns.state();
        let (namespace, service) = cname_service(records.iter().map(AsRef::as_ref), hostname)?;
        self.upstream(&namespace, &service, port)
    }

    /// Resolves DNS name `hostname` as the lab's resolver applies the operator's
    /// DNSEndpoints: a proxy link `dns/<hostname>:<port>` whose upstream follows the record
    /// (re-pointed by [`Self::refresh`] on every change the kubelet sees). `None` while no
    /// record names `hostname`, its target is not a cluster Service (an `A` record, a foreign
    /// name) or the Service has no endpoint.
    pub fn resolve_host(&self, hostname: &str, port: u16) -> Option<ServiceAddress> {
        let upstream = self.host_upstream(hostname, port)?;
        let link = self.link_to(dns_link_name(hostname, port), upstream)?;
        Some(ServiceAddress { host: Ipv4Addr::LOCALHOST.to_string(), port: link.addr().port() })
    }

    /// The link named `name`, made or re-pointed at `upstream`.
    fn link_to(&self, name: String, upstream: SocketAddr) -> Option<Link> {
        match self.hub.get(&name) {
            Some(link) => {
                if link.upstream() != upstream {
                    link.set_upstream(upstream);
                }
                Some(link)
            }
            None => match self.hub.link(name.clone(), upstream) {
                Ok(link) => Some(link),
                // Another caller made it in between.
                Err(_) => self.hub.get(&name).or_else(|| {
                    warn!(link = %name, "cannot create a proxy link of the resolver");
                    None
                }),
            },
        }
    }

    /// Points every link this resolver made at its Service's (or DNS name's) current endpoint
    /// (links whose Service has none keep their last upstream: connections there fail as the
    /// process is gone).
    pub fn refresh(&self) {
        for link in self.hub.links() {
            if let Some(rest) = link.name().strip_prefix(DNS_LINK_PREFIX) {
                let Some((hostname, port)) = rest.rsplit_once(':') else { continue };
                let Ok(port) = port.parse::<u16>() else { continue };
                if let Some(upstream) = self.host_upstream(hostname, port)
                    && upstream != link.upstream()
                {
                    link.set_upstream(upstream);
                }
                continue;
            }
            let Some(rest) = link.name().strip_prefix(LINK_PREFIX) else { continue };
            let Some((namespace, service_port)) = rest.split_once('/') else { continue };
            let Some((service, port)) = service_port.rsplit_once(':') else { continue };
            let Ok(port) = port.parse::<u16>() else { continue };
            if let Some(upstream) = self.upstream(namespace, service, port)
                && upstream != link.upstream()
            {
                link.set_upstream(upstream);
            }
        }
    }
}

impl Resolver for LabResolver {
    fn resolve(&self, namespace: &str, service: &str, port: u16) -> Option<ServiceAddress> {
        let upstream = self.upstream(namespace, service, port)?;
        let link = self.link_to(link_name(namespace, service, port), upstream)?;
        Some(ServiceAddress { host: Ipv4Addr::LOCALHOST.to_string(), port: link.addr().port() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunningPod;
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher::Event;

    fn service(name: &str, site: &str) -> Service {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {
                "selector": {"site": site},
                "ports": [{"port": 3306, "targetPort": ports::MYSQL_NAME}],
            },
        }))
        .expect("a valid Service")
    }

    fn pod(name: &str, site: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "shop", "labels": {"site": site}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }))
        .expect("a valid Pod")
    }

    fn record(target: &str) -> DynamicObject {
        let mut object = DynamicObject::new("orders", &crate::dns::api_resource()).within("shop");
        object.data = serde_json::json!({"spec": {"endpoints": [{
            "dnsName": "orders.db.example.internal", "recordType": "CNAME", "targets": [target],
        }]}});
        object
    }

    fn running(pod: &str, port: u16) -> RunningPod {
        RunningPod {
            pod: pod.to_owned(),
            pid: Some(1),
            mysql_addr: Some(SocketAddr::from((Ipv4Addr::LOCALHOST, port))),
            ready: true,
            restart_count: 0,
            data_dir: None,
            sidecar_pid: None,
            sidecar_addr: None,
            sidecar_restarts: 0,
        }
    }

    #[tokio::test]
    async fn the_dns_link_follows_a_dnsendpoint_edit_to_another_sites_service() {
        let mut services = Writer::<Service>::default();
        let mut pods = Writer::<Pod>::default();
        let mut dns = Writer::<DynamicObject>::new(crate::dns::api_resource());
        for (svc, site, pod_name) in
            [("mysql-orders-iad", "iad", "iad-0"), ("mysql-orders-pdx", "pdx", "pdx-0")]
        {
            services.apply_watcher_event(&Event::Apply(service(svc, site)));
            pods.apply_watcher_event(&Event::Apply(pod(pod_name, site)));
        }
        let shared = Arc::new(Shared::default());
        shared.set_pod(("shop".into(), "iad".into()), running("iad-0", 40001));
        shared.set_pod(("shop".into(), "pdx".into()), running("pdx-0", 40002));
        let hub = Arc::new(ProxyHub::current().expect("inside a tokio runtime"));
        let resolver = LabResolver {
            services: services.as_reader(),
            pods: pods.as_reader(),
            shared,
            hub: hub.clone(),
            dns: dns.as_reader(),
        };
        let hostname = "orders.db.example.internal";
        assert!(resolver.resolve_host(hostname, 3306).is_none(), "no record yet");

        dns.apply_watcher_event(&Event::Apply(record("mysql-orders-iad.shop.svc.cluster.local")));
        let address = resolver.resolve_host(hostname, 3306).expect("the CNAME resolves");
        let link = hub.get(&dns_link_name(hostname, 3306)).expect("the dns link exists");
        assert_eq!(link.addr().port(), address.port);
        assert_eq!(link.upstream().port(), 40001);

        dns.apply_watcher_event(&Event::Apply(record("mysql-orders-pdx.shop.svc.cluster.local")));
        resolver.refresh();
        assert_eq!(link.upstream().port(), 40002, "the link follows the record to pdx");
        assert_eq!(resolver.resolve_host(hostname, 3306).map(|a| a.port), Some(address.port));

        dns.apply_watcher_event(&Event::Apply(record("db.example.com")));
        assert!(resolver.resolve_host(hostname, 3306).is_none(), "a foreign target");
        hub.shutdown();
    }
}
