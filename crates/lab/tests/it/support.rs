//! Shared fixtures: a started lab with the test CRDs, clients, and the Widget type.

use std::time::Duration;

use bloodraven_lab::{Lab, LabConfig};
use kube::CustomResource;
use kube::config::{KubeConfigOptions, Kubeconfig};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub(crate) const WIDGET_CRDS: &str = include_str!("../data/widgets.yaml");

/// Every test is bounded: a hung request fails the test instead of hanging the suite.
pub(crate) const TEST_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(group = "lab.bloodraven.test", version = "v1", kind = "Widget", namespaced)]
#[kube(status = "WidgetStatus", shortname = "wdg")]
pub(crate) struct WidgetSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

pub(crate) fn widget(name: &str, color: &str) -> Widget {
    Widget::new(name, WidgetSpec { color: Some(color.to_string()), ..WidgetSpec::default() })
}

pub(crate) async fn start_lab(config: LabConfig) -> Lab {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let lab = Lab::start(config).await.unwrap();
    lab.load_crds(WIDGET_CRDS).unwrap();
    lab
}

pub(crate) async fn lab() -> Lab {
    start_lab(
        LabConfig::default().with_user("alice", "alice-token").with_user("reader", "reader-token"),
    )
    .await
}

/// A kube client built from the lab's generated kubeconfig (as `user`).
pub(crate) async fn client_as(lab: &Lab, user: Option<&str>) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(&lab.kubeconfig(user)).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

pub(crate) async fn client(lab: &Lab) -> kube::Client {
    client_as(lab, Some("alice")).await
}

/// Runs a test body with the suite-wide time bound.
pub(crate) async fn bounded<F: std::future::Future<Output = T>, T>(future: F) -> T {
    tokio::time::timeout(TEST_TIMEOUT, future)
        .await
        .expect("the test finished within its time bound")
}

/// The Kubernetes `Status` of a failed kube call.
pub(crate) fn api_status(error: kube::Error) -> kube::core::Status {
    match error {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}
