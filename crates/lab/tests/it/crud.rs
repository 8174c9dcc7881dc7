//! Typed CRUD through kube-rs, selectors, pagination, conflicts, finalizers and errors.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;

use crate::support::{Widget, api_status, bounded, client, lab, widget};

fn config_map(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(
                labels.iter().map(|(key, value)| (key.to_string(), value.to_string())).collect(),
            ),
            ..ObjectMeta::default()
        },
        data: Some([("key".to_string(), "value".to_string())].into()),
        ..ConfigMap::default()
    }
}

#[tokio::test]
async fn typed_crud_of_a_custom_resource() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        let created = widgets.create(&PostParams::default(), &widget("w1", "red")).await.unwrap();
        let metadata = &created.metadata;
        assert_eq!(metadata.namespace.as_deref(), Some("default"));
        assert_eq!(metadata.generation, Some(1));
        assert!(metadata.uid.as_ref().is_some_and(|uid| uid.len() == 36));
        assert!(metadata.creation_timestamp.is_some());
        let first_version: u64 = metadata.resource_version.as_ref().unwrap().parse().unwrap();

        let fetched = widgets.get("w1").await.unwrap();
        assert_eq!(fetched.spec.color.as_deref(), Some("red"));

        let mut changed = fetched.clone();
        changed.spec.color = Some("blue".to_string());
        let replaced = widgets.replace("w1", &PostParams::default(), &changed).await.unwrap();
        let second_version: u64 = replaced.metadata.resource_version.as_ref().unwrap().parse().unwrap();
        assert!(second_version > first_version, "resource versions grow");
        assert_eq!(replaced.metadata.generation, Some(2), "a spec change bumps generation");

        let stale = api_status(widgets.replace("w1", &PostParams::default(), &changed).await.unwrap_err());
        assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));
        assert_eq!(
            stale.message,
            "Operation cannot be fulfilled on widgets.lab.bloodraven.test \"w1\": the object has been modified; please apply your changes to the latest version and try again"
        );

        let exists = api_status(widgets.create(&PostParams::default(), &widget("w1", "red")).await.unwrap_err());
        assert_eq!((exists.code, exists.reason.as_str()), (409, "AlreadyExists"));
        assert_eq!(exists.message, "widgets.lab.bloodraven.test \"w1\" already exists");

        let deleted = widgets.delete("w1", &DeleteParams::default()).await.unwrap();
        assert!(deleted.is_left(), "the deleted object comes back");
        let missing = api_status(widgets.get("w1").await.unwrap_err());
        assert_eq!((missing.code, missing.reason.as_str()), (404, "NotFound"));
        assert_eq!(missing.message, "widgets.lab.bloodraven.test \"w1\" not found");
        assert_eq!(missing.details.unwrap().kind, "widgets");
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn generate_name_and_validation() {
    let lab = lab().await;
    bounded(async {
        let maps: Api<ConfigMap> = Api::namespaced(client(&lab).await, "default");
        let mut generated = config_map("", &[]);
        generated.metadata.name = None;
        generated.metadata.generate_name = Some("gen-".to_string());
        let first = maps.create(&PostParams::default(), &generated).await.unwrap();
        let second = maps.create(&PostParams::default(), &generated).await.unwrap();
        let (first, second) = (first.metadata.name.unwrap(), second.metadata.name.unwrap());
        assert!(first.starts_with("gen-") && first.len() == 9, "{first}");
        assert_ne!(first, second);

        let mut nameless = config_map("", &[]);
        nameless.metadata.name = None;
        let invalid = api_status(maps.create(&PostParams::default(), &nameless).await.unwrap_err());
        assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));

        let bad_name = api_status(
            maps.create(&PostParams::default(), &config_map("Not_Valid", &[])).await.unwrap_err(),
        );
        assert_eq!(bad_name.code, 422);

        let elsewhere: Api<ConfigMap> = Api::namespaced(client(&lab).await, "nowhere");
        let no_namespace = api_status(
            elsewhere.create(&PostParams::default(), &config_map("x", &[])).await.unwrap_err(),
        );
        assert_eq!(
            (no_namespace.code, no_namespace.message.as_str()),
            (404, "namespaces \"nowhere\" not found")
        );
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn selectors_and_pagination() {
    let lab = lab().await;
    bounded(async {
        let maps: Api<ConfigMap> = Api::namespaced(client(&lab).await, "default");
        for index in 0..7 {
            let tier = if index % 2 == 0 { "even" } else { "odd" };
            maps.create(
                &PostParams::default(),
                &config_map(&format!("cm-{index}"), &[("app", "lab"), ("tier", tier)]),
            )
            .await
            .unwrap();
        }
        let names = |list: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
            list.items.into_iter().map(|map| map.metadata.name.unwrap()).collect()
        };
        assert_eq!(
            names(maps.list(&ListParams::default().labels("tier=odd")).await.unwrap()),
            ["cm-1", "cm-3", "cm-5"]
        );
        assert_eq!(
            names(maps.list(&ListParams::default().labels("tier notin (odd),app")).await.unwrap())
                .len(),
            4
        );
        assert_eq!(
            names(
                maps.list(&ListParams::default().labels("tier in (odd, even),!missing"))
                    .await
                    .unwrap()
            )
            .len(),
            7
        );
        assert_eq!(
            names(maps.list(&ListParams::default().labels("tier!=odd")).await.unwrap()).len(),
            4
        );
        assert_eq!(
            names(maps.list(&ListParams::default().fields("metadata.name=cm-2")).await.unwrap()),
            ["cm-2"]
        );
        assert_eq!(
            names(
                maps.list(
                    &ListParams::default().fields("metadata.namespace=default,metadata.name!=cm-2")
                )
                .await
                .unwrap()
            )
            .len(),
            6
        );
        let unsupported = api_status(
            maps.list(&ListParams::default().fields("data.key=value")).await.unwrap_err(),
        );
        assert_eq!(
            (unsupported.code, unsupported.message.as_str()),
            (400, "field label not supported: data.key")
        );

        let first = maps.list(&ListParams::default().limit(3)).await.unwrap();
        let token = first.metadata.continue_.clone().unwrap();
        assert_eq!(first.metadata.remaining_item_count, Some(4));
        let list_version = first.metadata.resource_version.clone();
        let mut seen = names(first);
        let second =
            maps.list(&ListParams::default().limit(3).continue_token(&token)).await.unwrap();
        assert_eq!(
            second.metadata.resource_version, list_version,
            "pages share the first page's version"
        );
        let token = second.metadata.continue_.clone().unwrap();
        seen.extend(names(second));
        let third =
            maps.list(&ListParams::default().limit(3).continue_token(&token)).await.unwrap();
        assert!(third.metadata.continue_.as_deref().is_none_or(str::is_empty));
        seen.extend(names(third));
        assert_eq!(seen, (0..7).map(|index| format!("cm-{index}")).collect::<Vec<_>>());

        maps.create(&PostParams::default(), &config_map("later", &[])).await.unwrap();
        lab.compact();
        let expired = api_status(
            maps.list(&ListParams::default().limit(3).continue_token(&token)).await.unwrap_err(),
        );
        assert_eq!((expired.code, expired.reason.as_str()), (410, "Expired"));

        let all: Api<ConfigMap> = Api::all(client(&lab).await);
        assert_eq!(all.list(&ListParams::default()).await.unwrap().items.len(), 8);
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        let mut held = widget("held", "red");
        held.metadata.finalizers = Some(vec!["lab.bloodraven.test/cleanup".to_string()]);
        widgets.create(&PostParams::default(), &held).await.unwrap();
        let pending = widgets.delete("held", &DeleteParams::default()).await.unwrap();
        let pending = pending.left().unwrap();
        assert!(pending.metadata.deletion_timestamp.is_some());
        let still_there = widgets.get("held").await.unwrap();
        assert!(still_there.metadata.deletion_timestamp.is_some());

        let mut more = still_there.clone();
        more.metadata.finalizers.as_mut().unwrap().push("another".to_string());
        let forbidden =
            api_status(widgets.replace("held", &PostParams::default(), &more).await.unwrap_err());
        assert_eq!(forbidden.code, 422);

        let patch = json!({"metadata": {"finalizers": null}});
        widgets
            .patch("held", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&patch))
            .await
            .unwrap();
        assert_eq!(api_status(widgets.get("held").await.unwrap_err()).code, 404);

        let precondition = DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                uid: Some("wrong".to_string()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        widgets.create(&PostParams::default(), &widget("guarded", "red")).await.unwrap();
        let refused = api_status(widgets.delete("guarded", &precondition).await.unwrap_err());
        assert_eq!(refused.code, 409);
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn namespaces_cluster_scope_and_unknown_resources() {
    let lab = lab().await;
    bounded(async {
        let client = client(&lab).await;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let created = namespaces
            .create(
                &PostParams::default(),
                &Namespace {
                    metadata: ObjectMeta {
                        name: Some("team".to_string()),
                        ..ObjectMeta::default()
                    },
                    ..Namespace::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(created.status.unwrap().phase.as_deref(), Some("Active"));
        let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
        maps.create(&PostParams::default(), &config_map("inside", &[])).await.unwrap();
        namespaces.delete("team", &DeleteParams::default()).await.unwrap();
        assert_eq!(
            api_status(maps.get("inside").await.unwrap_err()).code,
            404,
            "namespace content is deleted"
        );
        assert_eq!(api_status(namespaces.get("team").await.unwrap_err()).code, 404);

        let gadget_kind = GroupVersionKind::gvk("lab.bloodraven.test", "v1", "Gadget");
        let gadgets: Api<DynamicObject> =
            Api::all_with(client.clone(), &ApiResource::from_gvk(&gadget_kind));
        let mut gadget = DynamicObject::new("g1", &ApiResource::from_gvk(&gadget_kind));
        gadget.data = json!({"spec": {"anything": [1, 2, 3]}});
        let created = gadgets.create(&PostParams::default(), &gadget).await.unwrap();
        assert!(created.metadata.namespace.is_none());
        assert_eq!(created.data["spec"]["anything"], json!([1, 2, 3]));

        let unknown_kind = GroupVersionKind::gvk("lab.bloodraven.test", "v1", "Nothing");
        let unknown: Api<DynamicObject> =
            Api::all_with(client.clone(), &ApiResource::from_gvk(&unknown_kind));
        let missing = api_status(unknown.list(&ListParams::default()).await.unwrap_err());
        assert_eq!((missing.code, missing.reason.as_str()), (404, "NotFound"));

        // Deleting the CRD removes the resource and its objects.
        lab.delete(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            None,
            "gadgets.lab.bloodraven.test",
        )
        .unwrap();
        assert_eq!(api_status(gadgets.list(&ListParams::default()).await.unwrap_err()).code, 404);
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn events_recorded_through_events_k8s_io_are_core_events_too() {
    use k8s_openapi::api::core::v1::{Event as CoreEvent, ObjectReference};
    use k8s_openapi::api::events::v1::Event as EventsEvent;
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};

    let lab = lab().await;
    bounded(async {
        let client = client(&lab).await;
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: "toy-operator".to_string(),
                instance: Some("pod-0".to_string()),
            },
        );
        let regarding = ObjectReference {
            api_version: Some("lab.bloodraven.test/v1".to_string()),
            kind: Some("Widget".to_string()),
            name: Some("w".to_string()),
            namespace: Some("default".to_string()),
            ..ObjectReference::default()
        };
        let event = Event {
            type_: EventType::Normal,
            reason: "Promoted".to_string(),
            note: Some("site b is primary".to_string()),
            action: "Failover".to_string(),
            secondary: None,
        };
        recorder.publish(&event, &regarding).await.unwrap();
        recorder.publish(&event, &regarding).await.unwrap();

        let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
        let listed = core
            .list(&ListParams::default().fields("involvedObject.kind=Widget,involvedObject.name=w"))
            .await
            .unwrap();
        assert_eq!(listed.items.len(), 1, "the repeat is a series on one event");
        let seen = &listed.items[0];
        assert_eq!(seen.message.as_deref(), Some("site b is primary"));
        assert_eq!(seen.reason.as_deref(), Some("Promoted"));
        assert_eq!(seen.reporting_component.as_deref(), Some("toy-operator"));

        let new_api: Api<EventsEvent> = Api::namespaced(client, "default");
        let listed = new_api.list(&ListParams::default()).await.unwrap();
        assert_eq!(listed.items[0].note.as_deref(), Some("site b is primary"));
        assert_eq!(listed.items[0].series.as_ref().map(|series| series.count), Some(2));
        let requests = lab.requests();
        assert!(requests.iter().any(|request| request.verb == "create"
            && request.path.starts_with("/apis/events.k8s.io/v1/")));
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn dependents_are_collected_and_collections_deleted() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    let lab = lab().await;
    bounded(async {
        let client = client(&lab).await;
        let widgets: Api<Widget> = Api::namespaced(client.clone(), "default");
        let maps: Api<ConfigMap> = Api::namespaced(client, "default");
        let owner = widgets.create(&PostParams::default(), &widget("owner", "red")).await.unwrap();
        let mut owned = config_map("owned", &[("app", "lab")]);
        owned.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "lab.bloodraven.test/v1".to_string(),
            kind: "Widget".to_string(),
            name: "owner".to_string(),
            uid: owner.metadata.uid.clone().unwrap(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        let owned = maps.create(&PostParams::default(), &owned).await.unwrap();
        assert_eq!(owned.metadata.generation, None, "ConfigMaps have no generation");
        widgets.delete("owner", &DeleteParams::default()).await.unwrap();
        assert_eq!(api_status(maps.get("owned").await.unwrap_err()).code, 404, "garbage collected");

        for name in ["a", "b", "c"] {
            let labels: &[(&str, &str)] =
                if name == "c" { &[("app", "other")] } else { &[("app", "lab")] };
            maps.create(&PostParams::default(), &config_map(name, labels)).await.unwrap();
        }
        maps.delete_collection(&DeleteParams::default(), &ListParams::default().labels("app=lab"))
            .await
            .unwrap();
        let left: Vec<String> = maps
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|map| map.metadata.name.unwrap())
            .collect();
        assert_eq!(left, ["c"]);
        assert!(lab.requests().iter().any(|request| request.verb == "deletecollection"));
    })
    .await;
    lab.stop().await.unwrap();
}
