//! Custom resource validation through real clients: a kube-rs client gets the API server's 422
//! with its causes on create, update, every patch type and `/status`; the project's CRDs
//! (`deploy/crds/*.yaml`) refuse a `MysqlFailoverGroup` whose `spec.sites` is a string; the
//! test-only `Lab::insert_unvalidated` stores it anyway, as CRD version skew would.

use bloodraven_crd::fixtures::GroupFixture;
use bloodraven_lab::{Error, Lab, LabConfig};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams, ValidationDirective};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::support::{api_status, bounded, client, lab, start_lab};

fn widgets(client: kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("lab.bloodraven.test", "v1", "Widget"),
        "widgets",
    );
    Api::namespaced_with(client, "default", &resource)
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "lab.bloodraven.test/v1", "kind": "Widget",
        "metadata": { "name": name, "namespace": "default" },
        "spec": spec,
    }))
    .unwrap()
}

/// The `(field, message)` of each cause of a 422.
fn causes(status: &kube::core::Status) -> Vec<(String, String)> {
    assert_eq!(status.code, 422, "{status:?}");
    assert_eq!(status.reason, "Invalid", "{status:?}");
    status
        .details
        .as_ref()
        .map(|details| {
            details
                .causes
                .iter()
                .map(|cause| (cause.field.clone(), cause.message.clone()))
                .collect()
        })
        .unwrap_or_default()
}

const REPLICAS_TYPE: &str =
    "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"";

#[tokio::test]
async fn writes_that_break_the_schema_get_422_with_the_field_paths() {
    bounded(async {
        let lab = lab().await;
        let api = widgets(client(&lab).await);
        // Create.
        let error = api
            .create(&PostParams::default(), &widget("bad", json!({ "replicas": "three" })))
            .await
            .unwrap_err();
        let status = api_status(error);
        assert_eq!(causes(&status)[0], ("spec.replicas".to_string(), REPLICAS_TYPE.to_string()));
        assert_eq!(
            status.message,
            format!(
                "Widget.lab.bloodraven.test \"bad\" is invalid: [spec.replicas: {REPLICAS_TYPE}, <nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"
            )
        );
        assert!(api.get_opt("bad").await.unwrap().is_none(), "nothing was stored");

        // Update, merge patch, JSON patch and server-side apply of a stored object.
        let good = api
            .create(&PostParams::default(), &widget("good", json!({ "replicas": 1 })))
            .await
            .unwrap();
        let mut replaced = good.clone();
        replaced.data["spec"]["replicas"] = json!("three");
        let update = api.replace("good", &PostParams::default(), &replaced).await.unwrap_err();
        let merge = api
            .patch(
                "good",
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "replicas": "three" } })),
            )
            .await
            .unwrap_err();
        let json_patch: json_patch::Patch = serde_json::from_value(json!([
            { "op": "replace", "path": "/spec/replicas", "value": "three" }
        ]))
        .unwrap();
        let json = api
            .patch("good", &PatchParams::default(), &Patch::Json::<()>(json_patch))
            .await
            .unwrap_err();
        let apply = api
            .patch(
                "good",
                &PatchParams::apply("test").force(),
                &Patch::Apply(json!({
                    "apiVersion": "lab.bloodraven.test/v1", "kind": "Widget",
                    "metadata": { "name": "good" }, "spec": { "replicas": "three" },
                })),
            )
            .await
            .unwrap_err();
        for (verb, error) in [("update", update), ("merge", merge), ("json", json), ("apply", apply)]
        {
            let status = api_status(error);
            assert_eq!(
                causes(&status)[0],
                ("spec.replicas".to_string(), REPLICAS_TYPE.to_string()),
                "{verb}"
            );
        }
        let stored = api.get("good").await.unwrap();
        assert_eq!(stored.data["spec"]["replicas"], json!(1));
        lab.stop().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn status_writes_check_the_status_and_main_writes_ignore_it() {
    bounded(async {
        let lab = lab().await;
        let api = widgets(client(&lab).await);
        api.create(&PostParams::default(), &widget("w", json!({ "color": "red" }))).await.unwrap();
        let bad_status = Patch::Merge(json!({ "status": { "observedGeneration": "one" } }));
        let status = api_status(
            api.patch_status("w", &PatchParams::default(), &bad_status).await.unwrap_err(),
        );
        assert_eq!(
            causes(&status)[0],
            (
                "status.observedGeneration".to_string(),
                "Invalid value: \"string\": observedGeneration in body must be of type integer: \"string\""
                    .to_string()
            )
        );
        // The main resource ignores status, so a bad status there is no refusal.
        let patched = api
            .patch("w", &PatchParams::default(), &Patch::Merge(json!({ "status": { "observedGeneration": "one" }, "spec": { "color": "blue" } })))
            .await
            .unwrap();
        assert_eq!(patched.data["spec"]["color"], json!("blue"));
        assert!(patched.data.get("status").is_none(), "{:?}", patched.data);
        // Unknown fields are pruned on both.
        let patched = api
            .patch_status(
                "w",
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": { "phase": "Ready", "mood": "good" } })),
            )
            .await
            .unwrap();
        assert_eq!(patched.data["status"], json!({ "phase": "Ready" }));
        lab.stop().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn strict_field_validation_refuses_unknown_fields_that_are_otherwise_pruned() {
    bounded(async {
        let lab = lab().await;
        let api = widgets(client(&lab).await);
        let applied = |spec: Value| {
            Patch::Apply(json!({
                "apiVersion": "lab.bloodraven.test/v1", "kind": "Widget",
                "metadata": { "name": "w" }, "spec": spec,
            }))
        };
        let strict = PatchParams::apply("test").validation(ValidationDirective::Strict);
        let error = api
            .patch("w", &strict, &applied(json!({ "color": "red", "shade": "dark" })))
            .await
            .unwrap_err();
        let status = api_status(error);
        assert_eq!(status.code, 400, "{status:?}");
        assert_eq!(
            status.message,
            "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.shade\""
        );
        let pruned = api
            .patch("w", &PatchParams::apply("test"), &applied(json!({ "color": "red", "shade": "dark" })))
            .await
            .unwrap();
        assert_eq!(pruned.data["spec"], json!({ "color": "red" }));
        lab.stop().await.unwrap();
    })
    .await;
}

/// Every CRD of the project (`deploy/crds/*.yaml`) as one multi-document YAML.
pub(crate) fn project_crds() -> String {
    let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/crds");
    let mut paths: Vec<_> = std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "yaml"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 3, "the project's CRDs in {directory}");
    paths
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// The fixture group with `spec.sites` a string: what item 8 of issue 10 saw stored.
pub(crate) fn group_with_string_sites(name: &str) -> Value {
    let fixture = GroupFixture::three_sites().with_name(name).with_namespace("default");
    let mut group = serde_json::to_value(fixture.without_status().build()).unwrap();
    group["spec"]["sites"] = json!("not a list");
    group
}

async fn project_lab() -> Lab {
    let lab = start_lab(LabConfig::default().with_user("alice", "alice-token")).await;
    lab.load_crds(&project_crds()).unwrap();
    lab
}

#[tokio::test]
async fn a_failover_group_whose_sites_is_a_string_is_refused() {
    bounded(async {
        let lab = project_lab().await;
        // The fixture itself passes the schema and the CEL rules.
        let healthy = GroupFixture::three_sites().with_name("healthy").with_namespace("default");
        let healthy = serde_json::to_value(healthy.build()).unwrap();
        lab.apply(healthy).unwrap();

        let refused = lab.apply(group_with_string_sites("broken")).unwrap_err();
        let Error::Api { status, .. } = refused else { panic!("expected a refusal, got {refused}") };
        assert_eq!(status.code, 422);
        assert!(
            status.message.starts_with(
                "MysqlFailoverGroup.shipstream.io \"broken\" is invalid: [spec.sites: Invalid value: \"string\": spec.sites in body must be of type array: \"string\""
            ),
            "{}",
            status.message
        );
        assert_eq!(status.details.as_ref().unwrap()["causes"][0]["field"], json!("spec.sites"));
        assert!(lab.get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some("default"), "broken").is_none());

        // Through a client, as kubectl or the console would write it.
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("shipstream.io", "v1alpha1", "MysqlFailoverGroup"),
            "mysqlfailovergroups",
        );
        let api: Api<DynamicObject> = Api::namespaced_with(client(&lab).await, "default", &resource);
        let object: DynamicObject = serde_json::from_value(group_with_string_sites("broken")).unwrap();
        let status = api_status(api.create(&PostParams::default(), &object).await.unwrap_err());
        assert_eq!(causes(&status)[0].0, "spec.sites");
        lab.stop().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn insert_unvalidated_stores_what_validation_refuses() {
    bounded(async {
        let lab = project_lab().await;
        let mut skewed = group_with_string_sites("skewed");
        skewed["spec"]["fieldOfANewerOperator"] = json!({ "kept": true });
        lab.insert_unvalidated(skewed).unwrap();
        let stored = lab
            .get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some("default"), "skewed")
            .unwrap();
        assert_eq!(stored["spec"]["sites"], json!("not a list"));
        assert_eq!(stored["spec"]["fieldOfANewerOperator"], json!({ "kept": true }), "not pruned");
        // Clients read it back as stored.
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("shipstream.io", "v1alpha1", "MysqlFailoverGroup"),
            "mysqlfailovergroups",
        );
        let api: Api<DynamicObject> =
            Api::namespaced_with(client(&lab).await, "default", &resource);
        let read = api.get("skewed").await.unwrap();
        assert_eq!(read.data["spec"]["sites"], json!("not a list"));
        // Validation is back on for the next write.
        assert!(lab.apply(group_with_string_sites("next")).is_err());
        // Ratcheting: writes that leave the bad field alone are accepted, as by a real
        // API server (1.33+); the status subresource can still be written.
        let patched = api
            .patch_status(
                "skewed",
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": { "observedGeneration": 1 } })),
            )
            .await
            .unwrap();
        assert_eq!(patched.data["status"]["observedGeneration"], json!(1));
        lab.stop().await.unwrap();
    })
    .await;
}
