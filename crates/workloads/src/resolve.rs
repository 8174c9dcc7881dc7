//! The one seam between a Service name and the address a client dials.
//!
//! Production resolves `<service>.<namespace>.svc.cluster.local` by DNS ([`ClusterDns`]: the
//! name is handed to the client library, which asks the cluster's resolver). The live lab has no
//! cluster DNS: its resolver (the lab kubelet's) maps each Service to a fault-proxy link whose
//! upstream is the ready pod's `mysqld`. Code that dials a Service (operator, sidecar,
//! workload generator) takes a `&dyn Resolver` and never builds addresses itself, so the lab
//! runs the production code paths with only this object swapped.

use std::fmt;

use crate::names::service_dns_name;

/// A host and port to dial: a DNS name in production, `127.0.0.1` in the lab.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServiceAddress {
    pub host: String,
    pub port: u16,
}

impl fmt::Display for ServiceAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Service name → address. `port` is the Service port (such as 3306); `None` means the Service
/// is unknown or has no ready endpoint right now (retry later, as a client of a Service with
/// no endpoints would).
pub trait Resolver: Send + Sync {
    fn resolve(&self, namespace: &str, service: &str, port: u16) -> Option<ServiceAddress>;
}

/// Production: the cluster DNS name, port unchanged. Always answers; whether anything listens
/// is the network's business.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterDns;

impl Resolver for ClusterDns {
    fn resolve(&self, namespace: &str, service: &str, port: u16) -> Option<ServiceAddress> {
        Some(ServiceAddress { host: service_dns_name(service, namespace), port })
    }
}

/// The key of one Service port in a service-address file (`"<namespace>/<service>:<port>"`):
/// the lab writes such a file from its resolver, and an operator run as a separate process in
/// the lab reads it (`bloodraven-operator --service-address-file`). Production has no file.
pub fn address_key(namespace: &str, service: &str, port: u16) -> String {
    format!("{namespace}/{service}:{port}")
}

/// Reads a Service host name as written in `PEER_ADDRESSES` and similar settings:
/// `<service>.<namespace>.svc.cluster.local`, `<service>.<namespace>.svc`,
/// `<service>.<namespace>`, or a bare `<service>` (in `default_namespace`).
/// Returns `(namespace, service)`, or `None` for anything else (an IP, a foreign domain).
pub fn parse_service_host(host: &str, default_namespace: &str) -> Option<(String, String)> {
    let trimmed = host
        .strip_suffix(".svc.cluster.local")
        .or_else(|| host.strip_suffix(".svc"))
        .unwrap_or(host);
    let mut parts = trimmed.split('.');
    let service = parts.next().filter(|part| !part.is_empty())?;
    let namespace = parts.next();
    if parts.next().is_some() || service.parse::<u8>().is_ok() {
        return None;
    }
    Some((namespace.unwrap_or(default_namespace).to_owned(), service.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_dns_names_the_service_in_its_namespace() {
        let address = ClusterDns.resolve("orders", "mysql-orders-primary", 3306).unwrap();
        assert_eq!(address.to_string(), "mysql-orders-primary.orders.svc.cluster.local:3306");
    }

    #[test]
    fn service_hosts_parse_back_to_namespace_and_name() {
        for host in [
            "mysql-orders-iad-internal.orders.svc.cluster.local",
            "mysql-orders-iad-internal.orders.svc",
            "mysql-orders-iad-internal.orders",
        ] {
            assert_eq!(
                parse_service_host(host, "default"),
                Some(("orders".to_owned(), "mysql-orders-iad-internal".to_owned())),
                "{host}"
            );
        }
        assert_eq!(
            parse_service_host("bloodraven", "ops"),
            Some(("ops".to_owned(), "bloodraven".to_owned()))
        );
        assert_eq!(parse_service_host("10.0.0.1", "ops"), None);
        assert_eq!(parse_service_host("db.example.com", "ops"), None);
    }
}
