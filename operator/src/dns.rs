//! The DNS record of `spec.dns.hostname`, published through ExternalDNS's `DNSEndpoint`
//! (`externaldns.k8s.io/v1alpha1`), reconciled every poll.
//!
//! [`desired`] is pure: group, active site and this poll's facts → the record, a reason to
//! leave the record alone, or a problem with the spec. [`endpoint`] renders the object
//! (owned by the group, labelled like its workloads). [`reconcile`] reads the current object
//! and applies it by server-side apply only when it differs, so a steady group costs one GET
//! per poll; a changed target counts a flip (`bloodraven_dns_flips_total`) and emits
//! `DNSRecordUpdated`, a failure counts `bloodraven_dns_update_failures_total` and emits
//! `DNSUpdateFailed`.
//!
//! Target: the active site's `loadBalancerIP` (an `A` or `AAAA` record), else a `CNAME` to
//! the site's client Service `mysql-<group>-<site>.<ns>.svc.cluster.local` (resolvable in the
//! cluster only). Never a DisasterRecovery or ReadOnly site (the topology document), never a
//! site this poll did not see writable (the record moves after the promotion is read back,
//! never before it), never while automation is held (the planned-failover document holds
//! "DNS reconciliation") or a bootstrap restore has not succeeded (backup-and-restore: "the
//! spec.dns.hostname record is not written").

use std::net::IpAddr;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::{RestorePhase, SiteRole};
use bloodraven_facts::SiteFacts;
use bloodraven_workloads::labels;
use bloodraven_workloads::names::{SiteNames, bounded, service_dns_name};
use kube::Resource;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};

use crate::manager::{GroupKey, Shared};
use crate::metrics::{GroupLabels, SiteLabels};
use crate::status::FIELD_MANAGER;

/// ExternalDNS's API group.
pub const GROUP: &str = "externaldns.k8s.io";
/// Its version.
pub const VERSION: &str = "v1alpha1";
/// The kind.
pub const KIND: &str = "DNSEndpoint";
/// The resource (plural).
pub const PLURAL: &str = "dnsendpoints";
/// The record's TTL when `spec.dns.ttl` is absent (upstream's default).
pub const DEFAULT_TTL: i64 = 60;

/// The record the group should publish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// `spec.dns.hostname`, as written.
    pub dns_name: String,
    /// `A`, `AAAA` or `CNAME`.
    pub record_type: &'static str,
    /// The one target.
    pub target: String,
    /// Seconds.
    pub ttl: i64,
    /// The site it names.
    pub site: String,
}

/// Why the record is left as it is this poll.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keep {
    /// No `spec.dns`.
    NoHostname,
    /// No active site yet.
    NoActiveSite,
    /// The active site is not a PrimaryCandidate.
    NotCandidate(String),
    /// The active site was not seen writable this poll.
    NotWritable(String),
    /// Automation is held (planned failover hold).
    Held,
    /// The bootstrap restore has not succeeded.
    RestorePending,
}

/// A spec that cannot be published.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DnsProblem {
    /// `spec.dns.hostname` is not a DNS name.
    #[error(
        "spec.dns.hostname {hostname:?} is not a DNS name ({why}): use dot-separated labels of \
         letters, digits and '-' (each 1 to 63 characters, 253 in all)"
    )]
    BadHostname {
        /// As written.
        hostname: String,
        /// What is wrong.
        why: &'static str,
    },
    /// `spec.dns.ttl` is not positive.
    #[error("spec.dns.ttl is {ttl}; it must be at least 1 (seconds), or omit it for 60")]
    BadTtl {
        /// As written.
        ttl: i64,
    },
    /// The active site's `loadBalancerIP` is not an IP address.
    #[error(
        "spec.sites[{site}].loadBalancerIP {value:?} is not an IP address: write an IPv4 or \
         IPv6 address, or remove it to publish a CNAME to the site's client Service"
    )]
    BadAddress {
        /// The site.
        site: String,
        /// As written.
        value: String,
    },
}

/// The DNSEndpoint's name: `mysql-<group>` (hashed when longer than 63 characters).
pub fn endpoint_name(group: &str) -> String {
    bounded(format!("mysql-{group}"))
}

fn check_hostname(hostname: &str) -> Result<(), &'static str> {
    let name = hostname.strip_suffix('.').unwrap_or(hostname);
    if name.is_empty() {
        return Err("empty");
    }
    if name.len() > 253 {
        return Err("longer than 253 characters");
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err("an empty label");
        }
        if label.len() > 63 {
            return Err("a label longer than 63 characters");
        }
        if !label.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-') {
            return Err("a character other than a letter, a digit, '-' or '.'");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err("a label that starts or ends with '-'");
        }
    }
    Ok(())
}

/// What to publish for `group` with `active` as the active site after this poll.
pub fn desired(
    group: &MysqlFailoverGroup,
    namespace: &str,
    active: Option<&str>,
    facts: &[SiteFacts],
) -> Result<Result<Record, Keep>, DnsProblem> {
    let Some(dns) = &group.spec.dns else { return Ok(Err(Keep::NoHostname)) };
    check_hostname(&dns.hostname)
        .map_err(|why| DnsProblem::BadHostname { hostname: dns.hostname.clone(), why })?;
    let ttl = dns.ttl.unwrap_or(DEFAULT_TTL);
    if ttl < 1 {
        return Err(DnsProblem::BadTtl { ttl });
    }
    if group.automation_held() {
        return Ok(Err(Keep::Held));
    }
    if group.spec.init_from_backup.is_some() {
        let phase = group.status.as_ref().and_then(|s| s.restore.as_ref()?.phase.clone());
        if phase != Some(RestorePhase::Succeeded) {
            return Ok(Err(Keep::RestorePending));
        }
    }
    let Some(active) = active else { return Ok(Err(Keep::NoActiveSite)) };
    let Some(site) = group.spec.site(active) else {
        return Ok(Err(Keep::NotCandidate(active.to_owned())));
    };
    if site.effective_role() != SiteRole::PrimaryCandidate {
        return Ok(Err(Keep::NotCandidate(active.to_owned())));
    }
    if !facts.iter().any(|fact| fact.name == active && fact.is_writable()) {
        return Ok(Err(Keep::NotWritable(active.to_owned())));
    }
    let (record_type, target) = match site.load_balancer_ip.as_deref().map(str::trim) {
        Some(ip) if !ip.is_empty() => match ip.parse::<IpAddr>() {
            Ok(IpAddr::V4(ip)) => ("A", ip.to_string()),
            Ok(IpAddr::V6(ip)) => ("AAAA", ip.to_string()),
            Err(_) => {
                return Err(DnsProblem::BadAddress {
                    site: active.to_owned(),
                    value: ip.to_owned(),
                });
            }
        },
        _ => {
            let service = SiteNames::new(group_name(group), active).client_service;
            ("CNAME", service_dns_name(&service, namespace))
        }
    };
    Ok(Ok(Record {
        dns_name: dns.hostname.clone(),
        record_type,
        target,
        ttl,
        site: active.to_owned(),
    }))
}

fn group_name(group: &MysqlFailoverGroup) -> &str {
    group.metadata.name.as_deref().unwrap_or_default()
}

/// The `spec` of the DNSEndpoint for `record`.
pub fn endpoint_spec(record: &Record) -> serde_json::Value {
    serde_json::json!({
        "endpoints": [{
            "dnsName": record.dns_name,
            "recordType": record.record_type,
            "targets": [record.target],
            "recordTTL": record.ttl,
        }]
    })
}

/// The whole DNSEndpoint (server-side apply body), owned by the group.
pub fn endpoint(group: &MysqlFailoverGroup, namespace: &str, record: &Record) -> serde_json::Value {
    let name = group_name(group);
    let mut metadata = serde_json::json!({
        "name": endpoint_name(name),
        "namespace": namespace,
        "labels": {
            labels::NAME: labels::APP_NAME,
            labels::MANAGED_BY: labels::MANAGER,
            labels::INSTANCE: name,
            labels::GROUP: name,
            labels::SITE: record.site,
        },
    });
    if let Some(owner) = group.controller_owner_ref(&()) {
        metadata["ownerReferences"] = serde_json::json!([owner]);
    }
    serde_json::json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": metadata,
        "spec": endpoint_spec(record),
    })
}

/// The API resource of `DNSEndpoint`.
pub fn api_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), PLURAL)
}

/// The site an existing DNSEndpoint names (its label), and whether its spec is `want`.
fn current(object: &DynamicObject, want: &serde_json::Value) -> (Option<String>, bool) {
    let site = object.metadata.labels.as_ref().and_then(|labels| labels.get(labels::SITE)).cloned();
    let same = object.data.get("spec") == Some(want)
        && object.metadata.owner_references.as_ref().is_some_and(|owners| !owners.is_empty());
    (site, same)
}

/// Reconciles the group's DNSEndpoint; errors are logged, counted and reported as an Event,
/// never fail the poll (the `-primary` Service already carries writes).
pub async fn reconcile(
    shared: &Shared,
    group: &MysqlFailoverGroup,
    key: &GroupKey,
    active: Option<&str>,
    facts: &[SiteFacts],
) {
    let record = match desired(group, &key.namespace, active, facts) {
        Ok(Ok(record)) => record,
        Ok(Err(keep)) => {
            tracing::debug!(namespace = %key.namespace, group = %key.name, ?keep, "DNS record kept");
            return;
        }
        Err(problem) => {
            failed(shared, group, key, problem.to_string()).await;
            return;
        }
    };
    let api: kube::Api<DynamicObject> =
        kube::Api::namespaced_with(shared.client.clone(), &key.namespace, &api_resource());
    let name = endpoint_name(&key.name);
    let want = endpoint_spec(&record);
    let previous = match api.get_opt(&name).await {
        Ok(found) => found.map(|object| current(&object, &want)),
        Err(error) => {
            let message = format!(
                "reading DNSEndpoint {name}: {error}; install ExternalDNS's DNSEndpoint CRD \
                 (deploy/crds/external/) and grant the operator get/patch on dnsendpoints"
            );
            failed(shared, group, key, message).await;
            return;
        }
    };
    if let Some((_, true)) = previous {
        return;
    }
    let body = endpoint(group, &key.namespace, &record);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    if let Err(error) = api.patch(&name, &params, &Patch::Apply(&body)).await {
        let message = format!(
            "applying DNSEndpoint {name} ({} {} → {}): {error}; check the operator's RBAC for \
             dnsendpoints.externaldns.k8s.io",
            record.dns_name, record.record_type, record.target
        );
        failed(shared, group, key, message).await;
        return;
    }
    let from = previous.and_then(|(site, _)| site);
    if from.as_deref() != Some(record.site.as_str()) {
        let labels = SiteLabels {
            namespace: key.namespace.clone(),
            group: key.name.clone(),
            site: record.site.clone(),
        };
        shared.metrics.dns_flips.get_or_create(&labels).inc();
    }
    let note = format!(
        "{} {} → {} (site {}, TTL {}s; was {})",
        record.dns_name,
        record.record_type,
        record.target,
        record.site,
        record.ttl,
        from.as_deref().unwrap_or("unpublished")
    );
    tracing::info!(namespace = %key.namespace, group = %key.name, site = %record.site, target = %record.target, "DNS record published");
    crate::publish::event(shared, group, false, "DNSRecordUpdated", note).await;
}

async fn failed(shared: &Shared, group: &MysqlFailoverGroup, key: &GroupKey, message: String) {
    tracing::warn!(namespace = %key.namespace, group = %key.name, %message, "DNS update failed");
    let labels = GroupLabels { namespace: key.namespace.clone(), group: key.name.clone() };
    shared.metrics.dns_failures.get_or_create(&labels).inc();
    crate::publish::event(shared, group, true, "DNSUpdateFailed", message).await;
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::fixtures::GroupFixture;
    use bloodraven_crd::group::{DnsSpec, SiteState};

    use super::*;

    fn fact(name: &str, state: SiteState) -> SiteFacts {
        SiteFacts {
            name: name.to_owned(),
            role: SiteRole::PrimaryCandidate,
            state,
            unreachable: None,
            offline_mode: false,
            gtid_executed: None,
            replica: None,
            observed_at: None,
        }
    }

    fn group() -> MysqlFailoverGroup {
        GroupFixture::three_sites().build()
    }

    fn writable(site: &str) -> Vec<SiteFacts> {
        vec![fact(site, SiteState::Writable)]
    }

    #[test]
    fn the_active_sites_load_balancer_ip_is_an_a_record() {
        let record = desired(&group(), "orders", Some("iad"), &writable("iad")).unwrap().unwrap();
        assert_eq!(
            record,
            Record {
                dns_name: "orders.db.example.internal".to_owned(),
                record_type: "A",
                target: "10.0.0.10".to_owned(),
                ttl: 60,
                site: "iad".to_owned(),
            }
        );
        let body = endpoint(&group(), "orders", &record);
        assert_eq!(body["apiVersion"], "externaldns.k8s.io/v1alpha1");
        assert_eq!(body["metadata"]["name"], "mysql-orders");
        assert_eq!(body["metadata"]["ownerReferences"][0]["kind"], "MysqlFailoverGroup");
        assert_eq!(body["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(
            body["spec"],
            serde_json::json!({"endpoints": [{
                "dnsName": "orders.db.example.internal", "recordType": "A",
                "targets": ["10.0.0.10"], "recordTTL": 60,
            }]})
        );
    }

    #[test]
    fn without_an_address_the_record_is_a_cname_to_the_client_service() {
        let mut group = group();
        group.spec.sites[1].load_balancer_ip = None;
        group.spec.dns = Some(DnsSpec { hostname: "db.example.".to_owned(), ttl: Some(5) });
        let record = desired(&group, "shop", Some("pdx"), &writable("pdx")).unwrap().unwrap();
        assert_eq!(record.record_type, "CNAME");
        assert_eq!(record.target, "mysql-orders-pdx.shop.svc.cluster.local");
        assert_eq!(record.ttl, 5);
        group.spec.sites[1].load_balancer_ip = Some("fd00::1".to_owned());
        let record = desired(&group, "shop", Some("pdx"), &writable("pdx")).unwrap().unwrap();
        assert_eq!((record.record_type, record.target.as_str()), ("AAAA", "fd00::1"));
    }

    #[test]
    fn the_record_is_kept_when_it_must_not_move() {
        let group = group();
        let keep = |group: &MysqlFailoverGroup, active: Option<&str>, facts: &[SiteFacts]| {
            desired(group, "orders", active, facts).unwrap().unwrap_err()
        };
        assert_eq!(keep(&group, None, &writable("iad")), Keep::NoActiveSite);
        assert_eq!(
            keep(&group, Some("iad"), &[fact("iad", SiteState::ReadOnly)]),
            Keep::NotWritable("iad".to_owned())
        );
        assert_eq!(
            keep(&group, Some("fra"), &writable("fra")),
            Keep::NotCandidate("fra".to_owned())
        );
        assert_eq!(
            keep(&group, Some("ord"), &writable("ord")),
            Keep::NotCandidate("ord".to_owned())
        );
        let held = GroupFixture::three_sites()
            .with_hold(bloodraven_crd::fixtures::manual_recovery_hold())
            .build();
        assert_eq!(keep(&held, Some("iad"), &writable("iad")), Keep::Held);
        let mut none = group.clone();
        none.spec.dns = None;
        assert_eq!(keep(&none, Some("iad"), &writable("iad")), Keep::NoHostname);
    }

    #[test]
    fn a_bad_spec_is_a_problem_naming_the_field() {
        let mut group = group();
        for (hostname, why) in [
            ("", "empty"),
            ("db..example", "an empty label"),
            ("db_1.example", "a character other than"),
            ("-db.example", "starts or ends with '-'"),
        ] {
            group.spec.dns = Some(DnsSpec { hostname: hostname.to_owned(), ttl: None });
            let problem = desired(&group, "orders", Some("iad"), &writable("iad")).unwrap_err();
            let text = problem.to_string();
            assert!(text.starts_with("spec.dns.hostname"), "{text}");
            assert!(text.contains(why), "{hostname}: {text}");
        }
        group.spec.dns = Some(DnsSpec { hostname: "db.example".to_owned(), ttl: Some(0) });
        let problem = desired(&group, "orders", Some("iad"), &writable("iad")).unwrap_err();
        assert_eq!(problem, DnsProblem::BadTtl { ttl: 0 });
        group.spec.dns = Some(DnsSpec { hostname: "db.example".to_owned(), ttl: None });
        group.spec.sites[0].load_balancer_ip = Some("10.0.0".to_owned());
        let text =
            desired(&group, "orders", Some("iad"), &writable("iad")).unwrap_err().to_string();
        assert!(text.contains("spec.sites[iad].loadBalancerIP \"10.0.0\""), "{text}");
    }
}
