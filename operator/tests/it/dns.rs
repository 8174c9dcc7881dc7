//! The DNS record of `spec.dns.hostname` through ExternalDNS's `DNSEndpoint`, against the lab
//! API server (no MySQL): the record follows the active site, only once it is seen writable,
//! is owned by the group (collected with it), and its drift is repaired.

use std::sync::Arc;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::group::{SiteRole, SiteState};
use bloodraven_facts::SiteFacts;
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_operator::controller::Context;
use bloodraven_operator::dns;
use bloodraven_operator::manager::{GroupKey, Tuning};
use bloodraven_workloads::{Resolver, ServiceAddress};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

const NAMESPACE: &str = "orders";
const GROUP: &str = "orders";

struct Nowhere;

impl Resolver for Nowhere {
    fn resolve(&self, _namespace: &str, _service: &str, _port: u16) -> Option<ServiceAddress> {
        None
    }
}

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

async fn start() -> (Lab, kube::Client) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    for crd in [
        "deploy/crds/mysqlfailovergroups.shipstream.io.yaml",
        "deploy/crds/external/dnsendpoints.externaldns.k8s.io.yaml",
    ] {
        let text = std::fs::read_to_string(format!("{root}/{crd}")).expect(crd);
        lab.load_crds(&text).expect(crd);
    }
    let example = std::fs::read_to_string(format!("{root}/deploy/examples/group.yaml"))
        .expect("deploy/examples/group.yaml");
    lab.apply_yaml(&example).expect("the example group");
    let url = lab.url().parse().expect("the lab's URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("a client of the lab");
    (lab, client)
}

fn record(object: &DynamicObject) -> (String, String, Vec<String>, i64) {
    let endpoint = &object.data["spec"]["endpoints"][0];
    (
        endpoint["dnsName"].as_str().unwrap_or_default().to_owned(),
        endpoint["recordType"].as_str().unwrap_or_default().to_owned(),
        serde_json::from_value(endpoint["targets"].clone()).unwrap_or_default(),
        endpoint["recordTTL"].as_i64().unwrap_or_default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dns_endpoint_follows_the_writable_active_site() {
    let (lab, client) = start().await;
    let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), NAMESPACE);
    // The example has no spec.dns: add one, and a loadBalancerIP on pdx only.
    let patch = json!({"spec": {
        "dns": {"hostname": "orders.db.example.internal", "ttl": 30},
    }});
    groups.patch(GROUP, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    let mut group = groups.get(GROUP).await.unwrap();
    group.spec.sites[1].load_balancer_ip = Some("10.1.0.10".to_owned());
    groups.replace(GROUP, &Default::default(), &group).await.unwrap();
    let group = groups.get(GROUP).await.unwrap();

    let context = Arc::new(Context::new(client.clone(), Arc::new(Nowhere), Tuning::default(), "t"));
    let shared = &context.shared;
    let key = GroupKey { namespace: NAMESPACE.to_owned(), name: GROUP.to_owned() };
    let endpoints: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &dns::api_resource());
    let name = dns::endpoint_name(GROUP);

    // No active site, then an active site not seen writable: nothing is published.
    dns::reconcile(shared, &group, &key, None, &[fact("iad", SiteState::Writable)]).await;
    dns::reconcile(shared, &group, &key, Some("iad"), &[fact("iad", SiteState::ReadOnly)]).await;
    assert!(endpoints.get_opt(&name).await.unwrap().is_none(), "published too early");

    // iad writable: a CNAME to iad's client Service, owned by the group.
    dns::reconcile(shared, &group, &key, Some("iad"), &[fact("iad", SiteState::Writable)]).await;
    let object = endpoints.get(&name).await.expect("the DNSEndpoint");
    assert_eq!(
        record(&object),
        (
            "orders.db.example.internal".to_owned(),
            "CNAME".to_owned(),
            vec!["mysql-orders-iad.orders.svc.cluster.local".to_owned()],
            30
        )
    );
    let owners = object.metadata.owner_references.clone().unwrap_or_default();
    assert!(owners.iter().any(|o| o.kind == "MysqlFailoverGroup" && o.name == GROUP), "{owners:?}");

    // A failover to pdx: the record moves only once pdx is seen writable, to its address.
    let promoted_not_yet_seen =
        [fact("iad", SiteState::Unreachable), fact("pdx", SiteState::ReadOnly)];
    dns::reconcile(shared, &group, &key, Some("pdx"), &promoted_not_yet_seen).await;
    assert_eq!(record(&endpoints.get(&name).await.unwrap()).1, "CNAME", "moved before writable");
    let pdx_writable = [fact("iad", SiteState::Unreachable), fact("pdx", SiteState::Writable)];
    dns::reconcile(shared, &group, &key, Some("pdx"), &pdx_writable).await;
    let (_, kind, targets, _) = record(&endpoints.get(&name).await.unwrap());
    assert_eq!((kind.as_str(), targets), ("A", vec!["10.1.0.10".to_owned()]));

    // Drift (someone edits the record) is repaired on the next poll; a steady poll writes
    // nothing.
    let version = endpoints.get(&name).await.unwrap().metadata.resource_version;
    dns::reconcile(shared, &group, &key, Some("pdx"), &pdx_writable).await;
    assert_eq!(endpoints.get(&name).await.unwrap().metadata.resource_version, version);
    let drift = json!({"spec": {"endpoints": [{"dnsName": "orders.db.example.internal",
        "recordType": "A", "targets": ["192.0.2.1"], "recordTTL": 30}]}});
    endpoints.patch(&name, &PatchParams::default(), &Patch::Merge(&drift)).await.unwrap();
    dns::reconcile(shared, &group, &key, Some("pdx"), &pdx_writable).await;
    assert_eq!(record(&endpoints.get(&name).await.unwrap()).2, vec!["10.1.0.10".to_owned()]);

    // Flips counted per site (iad once, pdx once: the drift repair is no flip), Events sent.
    let metrics = shared.metrics.render();
    for site in ["iad", "pdx"] {
        let line = format!(
            r#"bloodraven_dns_flips_total{{namespace="orders",group="orders",site="{site}"}} 1"#
        );
        assert!(metrics.contains(&line), "{line} in\n{metrics}");
    }
    // kube's recorder folds repeats of one reason into a series.
    let events = lab.list("events.k8s.io/v1", "Event");
    let updated = events.iter().find(|e| e["reason"] == "DNSRecordUpdated").expect("an Event");
    let count = updated["series"]["count"].as_i64().unwrap_or(1);
    assert!(count >= 2, "DNSRecordUpdated for iad and pdx: {updated}");

    // A bad hostname is reported, never published, and the record stays.
    let mut bad = group.clone();
    bad.spec.dns.as_mut().unwrap().hostname = "orders..example".to_owned();
    dns::reconcile(shared, &bad, &key, Some("iad"), &[fact("iad", SiteState::Writable)]).await;
    assert_eq!(record(&endpoints.get(&name).await.unwrap()).2, vec!["10.1.0.10".to_owned()]);
    let metrics = shared.metrics.render();
    assert!(
        metrics.contains(
            r#"bloodraven_dns_update_failures_total{namespace="orders",group="orders"} 1"#
        ),
        "{metrics}"
    );
    let events = lab.list("events.k8s.io/v1", "Event");
    let failed = events.iter().find(|e| e["reason"] == "DNSUpdateFailed").expect("DNSUpdateFailed");
    let note = failed["note"].as_str().unwrap_or_default();
    assert!(note.contains("spec.dns.hostname \"orders..example\""), "{note}");

    // Deleting the group collects the record (owner reference).
    groups.delete(GROUP, &Default::default()).await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while endpoints.get_opt(&name).await.unwrap().is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "gave up waiting for the DNSEndpoint to be collected"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    drop(context);
    lab.stop().await.expect("the lab stops");
}
