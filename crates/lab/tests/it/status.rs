//! The status subresource and `metadata.generation`.

use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::Widget;
use crate::support::{WidgetStatus, bounded, client, lab, widget};

#[tokio::test]
async fn status_is_written_only_through_the_subresource() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        let mut with_status = widget("w", "red");
        with_status.status = Some(WidgetStatus { phase: Some("Ignored".to_string()), observed_generation: None });
        let created = widgets.create(&PostParams::default(), &with_status).await.unwrap();
        assert_eq!(created.status, None, "status is dropped on create");

        let main = widgets
            .patch("w", &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Main"}, "metadata": {"labels": {"l": "1"}}})))
            .await
            .unwrap();
        assert_eq!(main.status, None, "status changes on the main resource are ignored");
        assert_eq!(main.metadata.generation, Some(1), "metadata changes do not bump generation");

        let status = widgets
            .patch_status("w", &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Ready", "observedGeneration": 1}, "spec": {"color": "ignored"}})))
            .await
            .unwrap();
        assert_eq!(status.status.as_ref().unwrap().phase.as_deref(), Some("Ready"));
        assert_eq!(status.spec.color.as_deref(), Some("red"), "spec changes on /status are ignored");
        assert_eq!(status.metadata.generation, Some(1), "status changes do not bump generation");

        let mut replaced = status.clone();
        replaced.status.as_mut().unwrap().phase = Some("Replaced".to_string());
        let replaced = widgets.replace_status("w", &PostParams::default(), &replaced).await.unwrap();
        assert_eq!(replaced.status.unwrap().phase.as_deref(), Some("Replaced"));

        let fetched = widgets.get_status("w").await.unwrap();
        let version_before = fetched.metadata.resource_version.clone();
        let unchanged = widgets
            .patch_status("w", &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Replaced"}})))
            .await
            .unwrap();
        assert_eq!(unchanged.metadata.resource_version, version_before, "a no-op write does not bump the version");

        let spec = widgets.patch("w", &PatchParams::default(), &Patch::Merge(json!({"spec": {"color": "blue"}}))).await.unwrap();
        assert_eq!(spec.metadata.generation, Some(2));
        assert_eq!(spec.status.unwrap().phase.as_deref(), Some("Replaced"));

        let applied = json!({"apiVersion": "lab.bloodraven.test/v1", "kind": "Widget", "metadata": {"name": "w"},
            "status": {"phase": "Applied", "observedGeneration": 2}});
        let applied = widgets.patch_status("w", &PatchParams::apply("operator").force(), &Patch::Apply(&applied)).await.unwrap();
        assert_eq!(applied.status.unwrap().observed_generation, Some(2));
        let entry = applied.metadata.managed_fields.unwrap().into_iter().find(|entry| entry.manager.as_deref() == Some("operator")).unwrap();
        assert_eq!(entry.subresource.as_deref(), Some("status"));
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn kube_runtime_finalizer_helper_adds_and_removes_its_finalizer() {
    use kube::runtime::controller::Action;
    use kube::runtime::finalizer::{Event, finalizer};

    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        let created = widgets.create(&PostParams::default(), &widget("w", "red")).await.unwrap();
        let outcome = finalizer(
            &widgets,
            "lab.bloodraven.test/cleanup",
            std::sync::Arc::new(created),
            |event| async move {
                match event {
                    Event::Apply(_) | Event::Cleanup(_) => {
                        Ok::<_, std::convert::Infallible>(Action::await_change())
                    }
                }
            },
        )
        .await;
        assert!(outcome.is_ok(), "{outcome:?}");
        let held = widgets.get("w").await.unwrap();
        assert_eq!(
            held.metadata.finalizers.as_deref(),
            Some(&["lab.bloodraven.test/cleanup".to_string()][..])
        );

        widgets.delete("w", &kube::api::DeleteParams::default()).await.unwrap();
        let deleting = widgets.get("w").await.unwrap();
        let cleaned = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = cleaned.clone();
        finalizer(
            &widgets,
            "lab.bloodraven.test/cleanup",
            std::sync::Arc::new(deleting),
            |event| async move {
                if let Event::Cleanup(_) = event {
                    flag.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                Ok::<_, std::convert::Infallible>(Action::await_change())
            },
        )
        .await
        .unwrap();
        assert!(cleaned.load(std::sync::atomic::Ordering::SeqCst));
        assert!(
            widgets.get_opt("w").await.unwrap().is_none(),
            "removing the last finalizer deletes the object"
        );
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn metadata_watcher_gets_partial_objects() {
    use futures::StreamExt;
    use kube::core::PartialObjectMeta;
    use kube::runtime::watcher;

    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        let mut labelled = widget("w", "red");
        labelled.metadata.labels = Some([("team".to_string(), "db".to_string())].into());
        widgets.create(&PostParams::default(), &labelled).await.unwrap();
        let metadata: Api<PartialObjectMeta<Widget>> =
            Api::namespaced(client(&lab).await, "default");
        let mut stream = watcher(metadata, watcher::Config::default()).boxed();
        loop {
            if let watcher::Event::InitApply(meta) = stream.next().await.unwrap().unwrap() {
                assert_eq!(meta.metadata.name.as_deref(), Some("w"));
                assert_eq!(meta.metadata.labels.unwrap()["team"], "db");
                break;
            }
        }
        let listed = widgets.list_metadata(&kube::api::ListParams::default()).await.unwrap();
        assert_eq!(listed.items.len(), 1);
    })
    .await;
    lab.stop().await.unwrap();
}
