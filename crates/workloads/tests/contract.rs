//! The contract as objects: snapshots of a 3-site group and the properties every consumer
//! relies on.

use std::collections::BTreeMap;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::fixtures::GroupFixture;
use bloodraven_crd::group::{ServiceTemplate, ServiceType};
use bloodraven_workloads::labels::{self, selector_matches};
use bloodraven_workloads::{
    MY_CNF_KEY, WorkloadError, check_group, primary_service, replicas_service, site_objects,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn group() -> MysqlFailoverGroup {
    GroupFixture::three_sites().build()
}

#[test]
fn snapshot_of_a_three_site_group() {
    let group = group();
    for site in ["iad", "pdx", "fra"] {
        let objects = site_objects(&group, site).unwrap();
        insta::assert_yaml_snapshot!(format!("{site}-configmap"), objects.configmap);
        insta::assert_yaml_snapshot!(format!("{site}-pvc"), objects.pvc);
        insta::assert_yaml_snapshot!(format!("{site}-deployment"), objects.deployment);
        insta::assert_yaml_snapshot!(format!("{site}-client-service"), objects.services.client);
        insta::assert_yaml_snapshot!(format!("{site}-internal-service"), objects.services.internal);
    }
    insta::assert_yaml_snapshot!("primary-service", primary_service(&group, Some("iad")).unwrap());
    insta::assert_yaml_snapshot!("replicas-service", replicas_service(&group).unwrap());
}

fn owned_and_labelled(meta: &ObjectMeta, what: &str) {
    let owners = meta.owner_references.as_ref().unwrap_or_else(|| panic!("{what}: no owner"));
    assert_eq!(owners.len(), 1, "{what}");
    assert_eq!(owners[0].kind, "MysqlFailoverGroup", "{what}");
    assert_eq!(owners[0].uid, "8d0e8a34-5a8e-4c1e-9f59-0f3c2b1a7d11", "{what}");
    assert_eq!(owners[0].controller, Some(true), "{what}");
    let labels = meta.labels.as_ref().unwrap_or_else(|| panic!("{what}: no labels"));
    assert_eq!(labels.get(labels::GROUP).map(String::as_str), Some("orders"), "{what}");
    assert_eq!(labels.get(labels::MANAGED_BY).map(String::as_str), Some("bloodraven"), "{what}");
    assert_eq!(meta.namespace.as_deref(), Some("orders"), "{what}");
}

#[test]
fn every_object_is_owned_by_the_group_and_carries_its_label() {
    let group = group();
    for site in ["iad", "pdx", "fra"] {
        let objects = site_objects(&group, site).unwrap();
        owned_and_labelled(&objects.configmap.metadata, "configmap");
        owned_and_labelled(&objects.pvc.metadata, "pvc");
        owned_and_labelled(&objects.deployment.metadata, "deployment");
        owned_and_labelled(&objects.services.client.metadata, "client");
        owned_and_labelled(&objects.services.internal.metadata, "internal");
        let template = objects.deployment.spec.template.metadata.unwrap().labels.unwrap();
        assert_eq!(template.get(labels::SITE).map(String::as_str), Some(site));
        assert!(!template.contains_key(labels::ROLE), "a new pod starts without a serving role");
        assert!(!template.contains_key(labels::HEALTHY), "a new pod starts unhealthy");
        let selector = objects.deployment.spec.selector.match_labels.unwrap();
        assert!(selector_matches(&selector, &template));
    }
    owned_and_labelled(&primary_service(&group, None).unwrap().metadata, "primary");
}

#[test]
fn the_primary_selector_follows_the_active_site_and_the_role_label() {
    let group = group();
    let pdx = site_objects(&group, "pdx").unwrap();
    let mut pod_labels = pdx.deployment.spec.template.metadata.unwrap().labels.unwrap();
    let selector =
        |active| primary_service(&group, active).unwrap().spec.unwrap().selector.unwrap();
    assert!(!selector_matches(&selector(Some("pdx")), &pod_labels), "no role label yet");
    pod_labels.insert(labels::ROLE.to_owned(), labels::ROLE_PRIMARY.to_owned());
    assert!(selector_matches(&selector(Some("pdx")), &pod_labels));
    assert!(!selector_matches(&selector(Some("iad")), &pod_labels), "a stale label on pdx");
    assert!(selector_matches(&selector(None), &pod_labels));
    assert_eq!(
        primary_service(&group, Some("lax")).unwrap_err(),
        WorkloadError::UnknownSite { site: "lax".to_owned() }
    );
}

#[test]
fn the_client_service_is_gated_on_health_and_the_internal_one_is_not() {
    let group = group();
    let iad = site_objects(&group, "iad").unwrap();
    let pod_labels = iad.deployment.spec.template.metadata.unwrap().labels.unwrap();
    let client = iad.services.client.spec.unwrap();
    let internal = iad.services.internal.spec.unwrap();
    assert!(!selector_matches(client.selector.as_ref().unwrap(), &pod_labels));
    assert!(selector_matches(internal.selector.as_ref().unwrap(), &pod_labels));
    assert_eq!(internal.publish_not_ready_addresses, Some(true));
    let mut healthy = pod_labels.clone();
    healthy.insert(labels::HEALTHY.to_owned(), "true".to_owned());
    assert!(selector_matches(client.selector.as_ref().unwrap(), &healthy));
}

#[test]
fn a_reader_takes_its_service_template_but_ignores_the_load_balancer_ip() {
    let mut group = GroupFixture::three_sites().with_reader("reader", 104).build();
    let template = ServiceTemplate {
        type_: Some(ServiceType::LoadBalancer),
        external_traffic_policy: Some("Local".to_owned()),
        annotations: Some(BTreeMap::from([("lb/internal".to_owned(), "true".to_owned())])),
    };
    for site in &mut group.spec.sites {
        site.service_template = Some(template.clone());
        site.load_balancer_ip = Some("10.9.9.9".to_owned());
    }
    let reader = site_objects(&group, "reader").unwrap().services.client;
    let spec = reader.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(spec.external_traffic_policy.as_deref(), Some("Local"));
    assert_eq!(spec.load_balancer_ip, None);
    assert_eq!(reader.metadata.annotations.unwrap()["lb/internal"], "true");
    let iad = site_objects(&group, "iad").unwrap().services.client.spec.unwrap();
    assert_eq!(iad.load_balancer_ip.as_deref(), Some("10.9.9.9"));
}

#[test]
fn a_changed_option_changes_the_pod_template_hash() {
    let mut group = group();
    let hash = |group: &MysqlFailoverGroup| {
        let deployment = site_objects(group, "iad").unwrap().deployment;
        deployment.spec.template.metadata.unwrap().annotations.unwrap()[labels::CONFIG_HASH].clone()
    };
    let before = hash(&group);
    assert_eq!(before, hash(&group));
    group.spec.mysql_conf =
        Some(BTreeMap::from([("innodb_buffer_pool_size".to_owned(), "2G".to_owned())]));
    assert_ne!(before, hash(&group));
}

#[test]
fn server_ids_come_from_the_spec_and_must_be_unique() {
    let mut group = group();
    check_group(&group).unwrap();
    for (site, id) in [("iad", "101"), ("pdx", "102"), ("fra", "103")] {
        let configmap = site_objects(&group, site).unwrap().configmap;
        let text = &configmap.data.unwrap()[MY_CNF_KEY];
        let parsed = bloodraven_workloads::mycnf::parse(text).unwrap();
        assert_eq!(parsed["mysqld"]["server_id"], id);
    }
    group.spec.sites[2].server_id = 101;
    assert_eq!(
        check_group(&group).unwrap_err().to_string(),
        "spec.sites[2].serverID 101 repeats spec.sites[0].serverID; every site needs its own server id"
    );
}

#[test]
fn a_group_that_was_never_stored_is_refused_with_the_missing_field() {
    let mut group = group();
    group.metadata.namespace = None;
    assert_eq!(
        site_objects(&group, "iad").unwrap_err(),
        WorkloadError::MissingMetadata { field: "namespace" }
    );
    let mut group = GroupFixture::three_sites().build();
    group.metadata.uid = None;
    let objects = site_objects(&group, "iad").unwrap();
    assert_eq!(objects.deployment.metadata.owner_references, None);
}
