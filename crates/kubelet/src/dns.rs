//! The lab's DNS: the ExternalDNS `DNSEndpoint` records the operator publishes
//! (`externaldns.k8s.io/v1alpha1`), read as the lab's resolver would apply them.
//!
//! A `CNAME` whose target is a cluster Service name (`<svc>.<ns>.svc.cluster.local` or
//! `<svc>.<ns>.svc`) resolves to that Service; anything else (`A`/`AAAA` records, foreign
//! targets) does not resolve in the lab. The kubelet watches DNSEndpoints in every namespace it
//! watches; while the CRD is not served the watch retries with backoff and nothing resolves.

use kube::api::{ApiResource, DynamicObject, GroupVersionKind};

/// The proxy link prefix of DNS names: `dns/<hostname>:<port>`.
pub const DNS_LINK_PREFIX: &str = "dns/";

/// The proxy link name of `hostname`'s port `port`.
pub fn dns_link_name(hostname: &str, port: u16) -> String {
    format!("{DNS_LINK_PREFIX}{}:{port}", normalize(hostname))
}

/// The API resource of ExternalDNS's `DNSEndpoint`.
pub fn api_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("externaldns.k8s.io", "v1alpha1", "DNSEndpoint"),
        "dnsendpoints",
    )
}

/// Lower case, without the trailing root dot.
fn normalize(hostname: &str) -> String {
    hostname.trim_end_matches('.').to_ascii_lowercase()
}

/// The cluster Service `(namespace, service)` that `hostname` is a CNAME of in `records`, if
/// any. The first record (by object namespace/name) naming `hostname` wins.
pub fn cname_service<'a>(
    records: impl IntoIterator<Item = &'a DynamicObject>,
    hostname: &str,
) -> Option<(String, String)> {
    let wanted = normalize(hostname);
    let mut records: Vec<&DynamicObject> = records.into_iter().collect();
    records.sort_by(|a, b| {
        (a.metadata.namespace.as_deref(), a.metadata.name.as_deref())
            .cmp(&(b.metadata.namespace.as_deref(), b.metadata.name.as_deref()))
    });
    let endpoint = records.into_iter().find_map(|record| {
        record.data.get("spec")?.get("endpoints")?.as_array()?.iter().find(|endpoint| {
            endpoint
                .get("dnsName")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|name| normalize(name) == wanted)
        })
    })?;
    if endpoint.get("recordType").and_then(serde_json::Value::as_str) != Some("CNAME") {
        return None;
    }
    let target = endpoint.get("targets")?.as_array()?.first()?.as_str()?;
    service_of(target)
}

/// `(namespace, service)` of a cluster Service host name, `None` for a foreign name.
fn service_of(target: &str) -> Option<(String, String)> {
    let target = normalize(target);
    let trimmed =
        target.strip_suffix(".svc.cluster.local").or_else(|| target.strip_suffix(".svc"))?;
    let (service, namespace) = trimmed.split_once('.')?;
    if service.is_empty() || namespace.is_empty() || namespace.contains('.') {
        return None;
    }
    Some((namespace.to_owned(), service.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, record_type: &str, target: &str) -> DynamicObject {
        let mut object = DynamicObject::new("orders", &api_resource()).within("shop");
        object.data = serde_json::json!({"spec": {"endpoints": [{
            "dnsName": name, "recordType": record_type, "targets": [target],
        }]}});
        object
    }

    #[test]
    fn a_cname_of_a_service_resolves_to_that_service() {
        let records = [record(
            "orders.db.example.internal",
            "CNAME",
            "mysql-orders-iad.shop.svc.cluster.local",
        )];
        assert_eq!(
            cname_service(&records, "Orders.db.example.internal."),
            Some(("shop".to_owned(), "mysql-orders-iad".to_owned()))
        );
        assert_eq!(cname_service(&records, "other.example.internal"), None);
    }

    #[test]
    fn a_records_and_foreign_targets_do_not_resolve() {
        let a = [record("orders.db.example.internal", "A", "10.0.0.10")];
        assert_eq!(cname_service(&a, "orders.db.example.internal"), None);
        let foreign = [record("orders.db.example.internal", "CNAME", "db.example.com")];
        assert_eq!(cname_service(&foreign, "orders.db.example.internal"), None);
    }

    #[test]
    fn link_names_are_normalized() {
        assert_eq!(dns_link_name("Orders.Example.", 3306), "dns/orders.example:3306");
    }
}
