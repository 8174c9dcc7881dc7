//! Properties over arbitrary input: no parser, patch or write path panics, whatever a client
//! sends.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::managed;
use crate::patch::{PatchType, apply_patch, strategic_merge};
use crate::registry::{GroupResource, Registry, ResourceInfo};
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{State, WriteContext};
use crate::table::json_path;

const KEYS: &str = "[a-z$/.:{}\"]{0,6}|containers|name|finalizers|metadata|status|spec|labels|\\$patch|\\$retainKeys|f:data|k:\\{\"name\":\"a\"\\}|v:\"x\"";

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z$/.:{}\"]{0,6}|delete|replace".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(KEYS, inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn info(group: &str, resource: &str) -> ResourceInfo {
    Registry::default()
        .get(&GroupResource::new(group, resource))
        .cloned()
        .unwrap_or_else(|| unreachable!())
}

fn custom_info() -> ResourceInfo {
    let mut registry = Registry::default();
    let crd = json!({
        "metadata": {"name": "widgets.x.io"},
        "spec": {"group": "x.io", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "containers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set"}}}}}}}]},
    });
    let key = registry.register_crd(&crd).unwrap_or_else(|message| panic!("{message}"));
    registry.get(&key).cloned().unwrap_or_else(|| unreachable!())
}

fn ctx(force: bool) -> WriteContext {
    WriteContext {
        field_manager: "fuzz".to_string(),
        dry_run: false,
        force,
        now: "2026-01-01T00:00:00Z".to_string(),
    }
}

proptest! {
    #[test]
    fn selectors_never_panic(text in "\\PC{0,40}", group in "|apps", kind in "Pod|Event|ConfigMap") {
        let _ = LabelSelector::parse(&text).map(|selector| selector.matches(&json!({"metadata": {"labels": {"a": "b"}}})));
        let _ = FieldSelector::parse(&text, &group, &kind).map(|selector| selector.matches(&json!({"metadata": {"name": "a"}})));
    }

    #[test]
    fn queries_and_paths_never_panic(text in "\\PC{0,40}", object in json_value()) {
        let _ = crate::server::parse_target(&text);
        let _ = json_path(&object, &text);
        let _ = crate::table::Format::from_accept(&text);
    }

    #[test]
    fn patches_never_panic(target in json_value(), patch in json_value(), raw in "\\PC{0,60}") {
        let mut merged = target.clone();
        let _ = strategic_merge(&mut merged, &patch);
        let body = patch.to_string();
        for patch_type in [PatchType::Json, PatchType::Merge, PatchType::Strategic] {
            let _ = apply_patch(patch_type, &target, body.as_bytes());
            let _ = apply_patch(patch_type, &target, raw.as_bytes());
        }
    }

    #[test]
    fn managed_fields_never_panic(live in json_value(), applied in json_value(), fields in json_value(), force in any::<bool>()) {
        let set = managed::from_fields_v1(&fields);
        prop_assert_eq!(managed::from_fields_v1(&managed::to_fields_v1(&set)), set);
        for resource in [info("", "configmaps"), info("", "pods"), custom_info()] {
            let mut live = live.clone();
            if let Some(map) = live.as_object_mut() {
                map.insert("metadata".to_string(), json!({"name": "a", "managedFields": [{"manager": "other", "operation": "Apply", "fieldsV1": fields.clone()}]}));
            }
            for subresource in [None, Some("status")] {
                let _ = managed::apply(&resource, "v1", &live, &applied, &ctx(force), subresource);
                let _ = managed::update_entries(&resource, "v1", Some(&live), &applied, &fields, &ctx(force), subresource);
            }
        }
    }

    #[test]
    fn writes_never_panic(body in json_value(), update in json_value()) {
        let mut state = State::new(10);
        for resource in [info("", "configmaps"), info("", "namespaces"), info("apiextensions.k8s.io", "customresourcedefinitions"), custom_info()] {
            let namespace = resource.namespaced.then_some("default");
            let _ = state.create(&resource, "v1", namespace, body.clone(), &ctx(false), None);
            let mut named = json!({"metadata": {"name": "a", "finalizers": ["x"]}});
            let _ = state.create(&resource, "v1", namespace, named.clone(), &ctx(false), None);
            if let Some(map) = named.as_object_mut() && let Some(update) = update.as_object() {
                map.extend(update.clone());
            }
            let _ = state.update(&resource, "v1", namespace, "a", named.clone(), None, &ctx(false), None);
            let _ = state.update(&resource, "v1", namespace, "a", update.clone(), Some("status"), &ctx(false), None);
            let _ = state.delete(&resource, "v1", namespace, "a", &update, &ctx(false));
        }
    }
}
