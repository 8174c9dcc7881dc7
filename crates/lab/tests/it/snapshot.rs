//! Persistence: a snapshot file written at stop and loaded at start resumes a drill.

use kube::api::{Api, PostParams};

use bloodraven_lab::LabConfig;

use crate::support::{Widget, bounded, client, start_lab, widget};

#[tokio::test]
async fn a_snapshot_resumes_objects_crds_and_versions() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("lab.json");
    let config = LabConfig { snapshot: Some(path.clone()), ..LabConfig::default() };

    let lab = start_lab(config.clone()).await;
    let (uid, version) = bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        let created = widgets.create(&PostParams::default(), &widget("kept", "red")).await.unwrap();
        (created.metadata.uid.unwrap(), created.metadata.resource_version.unwrap())
    })
    .await;
    lab.stop().await.unwrap();
    assert!(path.exists());

    let _ = rustls::crypto::ring::default_provider().install_default();
    let lab = bloodraven_lab::Lab::start(config).await.unwrap();
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        let kept = widgets.get("kept").await.unwrap();
        assert_eq!(kept.metadata.uid.unwrap(), uid);
        assert_eq!(kept.metadata.resource_version.unwrap(), version);
        let next = widgets.create(&PostParams::default(), &widget("next", "red")).await.unwrap();
        let next_version: u64 = next.metadata.resource_version.unwrap().parse().unwrap();
        assert!(
            next_version > version.parse::<u64>().unwrap(),
            "versions stay monotonic across restarts"
        );
    })
    .await;
    lab.stop().await.unwrap();

    std::fs::write(&path, "{\"resourceVersion\": 5,\n \"objects\": [}").unwrap();
    let error = bloodraven_lab::Lab::start(LabConfig {
        snapshot: Some(path.clone()),
        ..LabConfig::default()
    })
    .await
    .unwrap_err();
    assert!(error.to_string().contains("line 2 column"), "{error}");
}
