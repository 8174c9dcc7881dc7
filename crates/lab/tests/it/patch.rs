//! Every patch type through kube-rs: merge, JSON (with `test`), strategic merge, and
//! server-side apply with managers, conflicts and `force`.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::{Widget, api_status, bounded, client, lab, widget};

#[tokio::test]
async fn merge_and_json_patches() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        widgets.create(&PostParams::default(), &widget("w", "red")).await.unwrap();

        let merged = widgets
            .patch(
                "w",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 3}})),
            )
            .await
            .unwrap();
        assert_eq!(merged.spec.replicas, Some(3));
        assert_eq!(merged.spec.color.as_deref(), Some("red"));
        assert_eq!(merged.metadata.labels.unwrap()["a"], "1");

        let removed = widgets
            .patch("w", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": null}})))
            .await
            .unwrap();
        assert_eq!(removed.spec.replicas, None);

        let json_patch: json_patch::Patch = serde_json::from_value(json!([
            {"op": "test", "path": "/spec/color", "value": "red"},
            {"op": "replace", "path": "/spec/color", "value": "green"},
        ]))
        .unwrap();
        let patched = widgets
            .patch("w", &PatchParams::default(), &Patch::<()>::Json(json_patch.clone()))
            .await
            .unwrap();
        assert_eq!(patched.spec.color.as_deref(), Some("green"));
        let failed = api_status(
            widgets
                .patch("w", &PatchParams::default(), &Patch::<()>::Json(json_patch))
                .await
                .unwrap_err(),
        );
        assert_eq!(
            (failed.code, failed.reason.as_str()),
            (422, "Invalid"),
            "a failed test op is a precondition failure"
        );
        assert_eq!(widgets.get("w").await.unwrap().spec.color.as_deref(), Some("green"));

        let stale_version = json!({"metadata": {"resourceVersion": "1"}, "spec": {"color": "x"}});
        let conflict = api_status(
            widgets
                .patch("w", &PatchParams::default(), &Patch::Merge(stale_version))
                .await
                .unwrap_err(),
        );
        assert_eq!(conflict.code, 409, "a resourceVersion in a patch is a precondition");

        let strategic = api_status(
            widgets
                .patch(
                    "w",
                    &PatchParams::default(),
                    &Patch::Strategic(json!({"spec": {"color": "x"}})),
                )
                .await
                .unwrap_err(),
        );
        assert_eq!(strategic.code, 415, "custom resources do not support strategic merge patch");

        let dry = widgets
            .patch(
                "w",
                &PatchParams::default().dry_run(),
                &Patch::Merge(json!({"spec": {"color": "dry"}})),
            )
            .await
            .unwrap();
        assert_eq!(dry.spec.color.as_deref(), Some("dry"));
        assert_eq!(
            widgets.get("w").await.unwrap().spec.color.as_deref(),
            Some("green"),
            "dry run changes nothing"
        );
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn strategic_merge_patch_on_core_kinds() {
    let lab = lab().await;
    bounded(async {
        let pods: Api<Pod> = Api::namespaced(client(&lab).await, "default");
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "labels": {"keep": "1", "drop": "1"}},
            "spec": {"containers": [
                {"name": "mysql", "image": "mysql:8.0", "env": [{"name": "A", "value": "1"}]},
                {"name": "sidecar", "image": "sidecar:1"},
            ]},
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
        let patch = json!({
            "metadata": {"labels": {"drop": null, "new": "1"}},
            "spec": {"containers": [{"name": "sidecar", "image": "sidecar:2"}, {"name": "mysql", "env": [{"name": "B", "value": "2"}]}]},
        });
        let patched = pods.patch("p", &PatchParams::default(), &Patch::Strategic(patch)).await.unwrap();
        let labels = patched.metadata.labels.unwrap();
        assert_eq!(labels.keys().map(String::as_str).collect::<Vec<_>>(), ["keep", "new"]);
        let containers = patched.spec.unwrap().containers;
        assert_eq!(containers.len(), 2, "containers merge by name");
        assert_eq!(containers[0].image.as_deref(), Some("mysql:8.0"));
        let env: Vec<String> = containers[0].env.clone().unwrap().into_iter().map(|variable| variable.name).collect();
        assert_eq!(env, ["A", "B"]);
        assert_eq!(containers[1].image.as_deref(), Some("sidecar:2"));
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn server_side_apply_with_managers_conflicts_and_force() {
    let lab = lab().await;
    bounded(async {
        let maps: Api<ConfigMap> = Api::namespaced(client(&lab).await, "default");
        let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1", "b": "2"}});
        let created = maps.patch("cfg", &PatchParams::apply("alpha"), &Patch::Apply(&applied)).await.unwrap();
        let managed = created.metadata.managed_fields.clone().unwrap();
        assert_eq!(managed.len(), 1);
        assert_eq!(managed[0].manager.as_deref(), Some("alpha"));
        assert_eq!(managed[0].operation.as_deref(), Some("Apply"));
        assert_eq!(managed[0].fields_v1.as_ref().unwrap().0, json!({"f:data": {"f:a": {}, "f:b": {}}}));

        let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "changed", "c": "3"}});
        let conflict = api_status(maps.patch("cfg", &PatchParams::apply("beta"), &Patch::Apply(&other)).await.unwrap_err());
        assert_eq!(conflict.code, 409);
        assert_eq!(conflict.message, "Apply failed with 1 conflict: conflict with \"alpha\": .data.a");
        let cause = &conflict.details.unwrap().causes[0];
        assert_eq!((cause.reason.as_str(), cause.field.as_str()), ("FieldManagerConflict", ".data.a"));

        let forced = maps.patch("cfg", &PatchParams::apply("beta").force(), &Patch::Apply(&other)).await.unwrap();
        assert_eq!(forced.data.clone().unwrap()["a"], "changed");
        let managers: Vec<(String, serde_json::Value)> = forced
            .metadata
            .managed_fields
            .unwrap()
            .into_iter()
            .map(|entry| (entry.manager.unwrap(), entry.fields_v1.unwrap().0))
            .collect();
        assert_eq!(
            managers,
            [
                ("alpha".to_string(), json!({"f:data": {"f:b": {}}})),
                ("beta".to_string(), json!({"f:data": {"f:a": {}, "f:c": {}}})),
            ]
        );

        // alpha stops applying b: b is removed because nobody else owns it.
        let shrink = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {}});
        let shrunk = maps.patch("cfg", &PatchParams::apply("alpha"), &Patch::Apply(&shrink)).await.unwrap();
        let data = shrunk.data.unwrap();
        assert!(!data.contains_key("b"));
        assert_eq!(data["a"], "changed");

        // A non-apply update takes ownership from appliers without conflicts.
        let updated = maps
            .patch("cfg", &PatchParams { field_manager: Some("editor".to_string()), ..PatchParams::default() }, &Patch::Merge(json!({"data": {"c": "edited"}})))
            .await
            .unwrap();
        let editor = updated.metadata.managed_fields.unwrap().into_iter().find(|entry| entry.manager.as_deref() == Some("editor")).unwrap();
        assert_eq!(editor.operation.as_deref(), Some("Update"));
        assert_eq!(editor.fields_v1.unwrap().0, json!({"f:data": {"f:c": {}}}));

        let missing_manager = api_status(
            maps.patch("cfg", &PatchParams::default(), &Patch::Apply(&applied)).await.unwrap_err(),
        );
        assert_eq!(missing_manager.code, 422, "apply needs a field manager");
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn server_side_apply_merges_associative_lists_of_a_crd_schema() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        let first = json!({"apiVersion": "lab.bloodraven.test/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"tags": ["a"], "ports": [{"name": "http", "port": 80}]}});
        widgets.patch("w", &PatchParams::apply("one"), &Patch::Apply(&first)).await.unwrap();
        let second = json!({"apiVersion": "lab.bloodraven.test/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"tags": ["b"], "ports": [{"name": "mysql", "port": 3306}]}});
        let merged = widgets.patch("w", &PatchParams::apply("two"), &Patch::Apply(&second)).await.unwrap();
        assert_eq!(merged.spec.tags, Some(vec!["a".to_string(), "b".to_string()]), "sets merge");
        let raw: serde_json::Value = serde_json::to_value(lab.get("lab.bloodraven.test/v1", "Widget", Some("default"), "w").unwrap()).unwrap();
        assert_eq!(raw["spec"]["ports"], json!([{"name": "http", "port": 80}, {"name": "mysql", "port": 3306}]), "map lists merge by key");
        let owned = merged.metadata.managed_fields.unwrap()[1].fields_v1.clone().unwrap().0;
        assert_eq!(
            owned,
            json!({"f:spec": {"f:ports": {"k:{\"name\":\"mysql\"}": {".": {}, "f:name": {}, "f:port": {}}}, "f:tags": {"v:\"b\"": {}}}})
        );
    })
    .await;
    lab.stop().await.unwrap();
}
