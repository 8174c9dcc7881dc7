//! Places where the lab once accepted what a real API server refuses (or did less than it).

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};

use crate::support::{Widget, api_status, bounded, client, lab, widget};

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v1"}})).unwrap()
}

#[tokio::test]
async fn apply_with_a_stale_resource_version_is_a_conflict() {
    let lab = lab().await;
    bounded(async {
        let maps: Api<ConfigMap> = Api::namespaced(client(&lab).await, "default");
        let created = maps.create(&PostParams::default(), &config_map("c")).await.unwrap();
        let stale = created.metadata.resource_version.clone().unwrap();
        let current = maps
            .patch("c", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "v2"}})))
            .await
            .unwrap();
        let applied = |version: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "resourceVersion": version}, "data": {"k": "v3"}})
        };
        let status = api_status(
            maps.patch("c", &PatchParams::apply("op").force(), &Patch::Apply(applied(&stale)))
                .await
                .unwrap_err(),
        );
        assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"), "{status:?}");
        assert!(status.message.contains("the object has been modified"), "{}", status.message);
        assert_eq!(maps.get("c").await.unwrap().data.unwrap()["k"], "v2", "nothing was applied");

        let version = current.metadata.resource_version.unwrap();
        let applied = maps
            .patch("c", &PatchParams::apply("op").force(), &Patch::Apply(applied(&version)))
            .await
            .unwrap();
        assert_eq!(
            applied.data.unwrap()["k"],
            "v3",
            "the current version is a passing precondition"
        );
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn marking_an_object_deleted_bumps_its_generation() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        let mut held = widget("w", "red");
        held.metadata.finalizers = Some(vec!["lab.bloodraven.test/hold".to_string()]);
        let created = widgets.create(&PostParams::default(), &held).await.unwrap();
        assert_eq!(created.metadata.generation, Some(1));
        widgets.delete("w", &DeleteParams::default()).await.unwrap();
        let deleting = widgets.get("w").await.unwrap();
        assert!(deleting.metadata.deletion_timestamp.is_some());
        assert_eq!(deleting.metadata.generation, Some(2), "as the API server's markAsDeleting");
        widgets.delete("w", &DeleteParams::default()).await.unwrap();
        assert_eq!(widgets.get("w").await.unwrap().metadata.generation, Some(2), "only once");
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn malformed_label_selectors_are_bad_requests() {
    let lab = lab().await;
    bounded(async {
        let maps: Api<ConfigMap> = Api::namespaced(client(&lab).await, "default");
        for selector in
            ["app=a/b", "-app=x", "a/b/c=x", "app=-x", "app in (a,b/c)", "Bad_Prefix/app"]
        {
            let error = maps.list(&ListParams::default().labels(selector)).await.unwrap_err();
            let status = api_status(error);
            assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"), "{selector}");
        }
        for selector in ["example.com/app=db", "app=", "app.kubernetes.io/name in (a, b_c)", "!x"] {
            maps.list(&ListParams::default().labels(selector)).await.unwrap();
        }
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn a_put_of_another_kind_is_a_bad_request() {
    let lab = lab().await;
    bounded(async {
        let client = client(&lab).await;
        let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let created = maps.create(&PostParams::default(), &config_map("c")).await.unwrap();
        let version = created.metadata.resource_version.unwrap();
        let request = kube::core::Request::new("/api/v1/namespaces/default/configmaps");
        for (api_version, kind) in [("v1", "Secret"), ("apps/v1", "ConfigMap")] {
            let body = json!({"apiVersion": api_version, "kind": kind,
                "metadata": {"name": "c", "resourceVersion": version}, "data": {"k": "v2"}});
            let put = request
                .replace("c", &PostParams::default(), serde_json::to_vec(&body).unwrap())
                .unwrap();
            let status = api_status(client.request::<Value>(put).await.unwrap_err());
            assert_eq!(status.code, 400, "{api_version} {kind}: {status:?}");
        }
        assert_eq!(maps.get("c").await.unwrap().data.unwrap()["k"], "v1");
    })
    .await;
    lab.stop().await.unwrap();
}

/// A drill that drops the lab to take the API server away must not find it still answering,
/// least of all on the watches clients hold open.
#[tokio::test]
async fn dropping_the_lab_ends_its_watches_and_connections() {
    for tls in [false, true] {
        let config = bloodraven_lab::LabConfig {
            tls,
            ..bloodraven_lab::LabConfig::default().with_user("alice", "alice-token")
        };
        let lab = crate::support::start_lab(config).await;
        let maps: Api<ConfigMap> = Api::namespaced(client(&lab).await, "default");
        bounded(async {
            maps.create(&PostParams::default(), &config_map("c")).await.unwrap();
            let mut events = maps.watch(&WatchParams::default(), "0").await.unwrap().boxed();
            assert!(matches!(events.next().await, Some(Ok(WatchEvent::Added(_)))));
            drop(lab);
            let end = tokio::time::timeout(Duration::from_secs(5), async {
                while let Some(Ok(_)) = events.next().await {}
            })
            .await;
            assert!(end.is_ok(), "tls {tls}: the watch outlived the lab");
            assert!(
                maps.list(&ListParams::default()).await.is_err(),
                "tls {tls}: served after drop"
            );
        })
        .await;
    }
}

/// Copying an object (say a Secret from the other site) and creating it with its
/// resourceVersion still set fails on a real API server; so it does here. Loading it through
/// the library is not a POST and takes it.
#[tokio::test]
async fn creating_an_object_with_a_resource_version_fails() {
    let lab = lab().await;
    bounded(async {
        let maps: Api<ConfigMap> = Api::namespaced(client(&lab).await, "default");
        let mut copied = config_map("c");
        copied.metadata.resource_version = Some("5".to_string());
        let status = api_status(maps.create(&PostParams::default(), &copied).await.unwrap_err());
        assert_eq!((status.code, status.reason.as_str()), (500, "InternalError"), "{status:?}");
        assert_eq!(
            status.message,
            "Internal error occurred: resourceVersion should not be set on objects to be created"
        );
        lab.apply_yaml(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default, resourceVersion: \"5\"}\n",
        )
        .unwrap();
        maps.get("c").await.unwrap();
    })
    .await;
    lab.stop().await.unwrap();
}

/// A client that resumes from a version this server never reached (a lab restarted without
/// its snapshot) must hear so, as from a real API server, not silently miss every change up
/// to that version.
#[tokio::test]
async fn a_resource_version_from_the_future_is_too_large() {
    let lab = lab().await;
    bounded(async {
        // kube retries a 504 (15 times, honouring Retry-After): ask once.
        let kubeconfig =
            kube::config::Kubeconfig::from_yaml(&lab.kubeconfig(Some("alice"))).unwrap();
        let mut config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
        config.default_retry = false;
        let maps: Api<ConfigMap> =
            Api::namespaced(kube::Client::try_from(config).unwrap(), "default");
        let status = api_status(maps.watch(&WatchParams::default(), "999999").await.err().unwrap());
        assert_eq!((status.code, status.reason.as_str()), (504, "Timeout"), "{status:?}");
        assert!(status.message.starts_with("Too large resource version: 999999, current: "));
        let list = ListParams::default().at("999999");
        let status = api_status(maps.list(&list).await.unwrap_err());
        assert_eq!((status.code, status.reason.as_str()), (504, "Timeout"), "{status:?}");
        let current = maps.list(&ListParams::default()).await.unwrap().metadata.resource_version;
        let mut events = maps.watch(&WatchParams::default(), &current.unwrap()).await.unwrap().boxed();
        maps.create(&PostParams::default(), &config_map("after")).await.unwrap();
        let event = events.next().await;
        assert!(
            matches!(&event, Some(Ok(WatchEvent::Added(map))) if map.metadata.name.as_deref() == Some("after")),
            "{event:?}"
        );
    })
    .await;
    lab.stop().await.unwrap();
}

/// Names are validated per kind, as the API server does: a dotted namespace or a service
/// starting with a digit would work here and nowhere else.
#[tokio::test]
async fn namespace_and_service_names_are_labels() {
    let lab = lab().await;
    bounded(async {
        let client = client(&lab).await;
        let named = |name: &str| json!({"metadata": {"name": name}});
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let services: Api<Service> = Api::namespaced(client.clone(), "default");
        let maps: Api<ConfigMap> = Api::namespaced(client, "default");
        for name in ["team.a", &"n".repeat(64)] {
            let namespace: Namespace = serde_json::from_value(named(name)).unwrap();
            let status = api_status(
                namespaces.create(&PostParams::default(), &namespace).await.unwrap_err(),
            );
            assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"), "{name}");
            assert!(status.message.contains("RFC 1123 label"), "{}", status.message);
        }
        let service: Service = serde_json::from_value(named("1db")).unwrap();
        let status =
            api_status(services.create(&PostParams::default(), &service).await.unwrap_err());
        assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
        assert!(status.message.contains("DNS-1035 label"), "{}", status.message);

        let namespace: Namespace = serde_json::from_value(named("1-team")).unwrap();
        namespaces.create(&PostParams::default(), &namespace).await.unwrap();
        let service: Service = serde_json::from_value(named("db-1")).unwrap();
        services.create(&PostParams::default(), &service).await.unwrap();
        maps.create(&PostParams::default(), &config_map("1.dotted.name")).await.unwrap();
    })
    .await;
    lab.stop().await.unwrap();
}
