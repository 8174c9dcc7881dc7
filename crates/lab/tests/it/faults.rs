//! Fault injection, pause, identities and the request log.

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

use bloodraven_lab::Fault;

use crate::support::{Widget, api_status, bounded, client, client_as, lab, widget};

#[tokio::test]
async fn failing_the_next_matching_requests() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        widgets.create(&PostParams::default(), &widget("w", "red")).await.unwrap();
        // 500, not 503: kube's client retries 503 (and 429, 504) by itself.
        lab.inject(
            Fault::fail(500).verb("patch").resource("widgets").times(2).message("etcd is down"),
        );

        let merge = Patch::Merge(json!({"spec": {"color": "blue"}}));
        for _ in 0..2 {
            let error =
                api_status(widgets.patch("w", &PatchParams::default(), &merge).await.unwrap_err());
            assert_eq!(
                (error.code, error.reason.as_str(), error.message.as_str()),
                (500, "InternalError", "etcd is down")
            );
            assert_eq!(
                widgets.get("w").await.unwrap().spec.color.as_deref(),
                Some("red"),
                "reads are not affected"
            );
        }
        widgets.patch("w", &PatchParams::default(), &merge).await.unwrap();

        lab.inject(Fault::fail(500).resource("configmaps"));
        let maps: Api<ConfigMap> = Api::namespaced(client(&lab).await, "default");
        assert_eq!(
            widgets.list(&ListParams::default()).await.unwrap().items.len(),
            1,
            "other resources are not affected"
        );
        assert_eq!(api_status(maps.list(&ListParams::default()).await.unwrap_err()).code, 500);
        assert!(maps.list(&ListParams::default()).await.is_ok(), "times defaults to one");

        let statuses: Vec<u16> = lab
            .requests()
            .iter()
            .filter(|request| request.verb == "patch")
            .map(|request| request.status)
            .collect();
        assert_eq!(statuses, [500, 500, 200], "injected failures are logged with their status");

        // A 503 is retried by kube's client: two injected 503s cost it three attempts.
        lab.inject(Fault::fail(503).verb("get").times(2));
        widgets.get("w").await.unwrap();
        let gets: Vec<u16> = lab
            .requests()
            .iter()
            .filter(|request| request.verb == "get")
            .map(|request| request.status)
            .collect();
        assert_eq!(gets[gets.len() - 3..], [503, 503, 200]);
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn delays_and_pause_hold_requests() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        lab.inject(Fault::delay(Duration::from_millis(300)).verb("get"));
        widgets.create(&PostParams::default(), &widget("w", "red")).await.unwrap();
        let started = Instant::now();
        widgets.get("w").await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(300), "the get was held");

        lab.pause();
        let held = tokio::spawn({
            let widgets = widgets.clone();
            async move { widgets.get("w").await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!held.is_finished(), "a paused server answers nothing");
        lab.resume();
        held.await.unwrap().unwrap();
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn a_watcher_survives_failed_relists() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        widgets.create(&PostParams::default(), &widget("a", "red")).await.unwrap();
        lab.inject(Fault::fail(500).verb("list").times(2));
        let mut stream = watcher(widgets.clone(), watcher::Config::default()).boxed();
        let mut errors = 0;
        loop {
            match stream.next().await.unwrap() {
                Err(_) => errors += 1,
                Ok(watcher::Event::InitDone) => break,
                Ok(_) => {}
            }
        }
        assert_eq!(errors, 2);
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn tokens_name_users_and_the_log_proves_read_only_clients() {
    let lab = lab().await;
    bounded(async {
        let writer: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        writer.create(&PostParams::default(), &widget("w", "red")).await.unwrap();

        let reader: Api<Widget> = Api::namespaced(client_as(&lab, Some("reader")).await, "default");
        reader.list(&ListParams::default()).await.unwrap();
        reader.get("w").await.unwrap();

        let requests = lab.requests();
        let by_reader: Vec<_> =
            requests.iter().filter(|request| request.user == "reader").collect();
        assert_eq!(by_reader.len(), 2);
        assert!(by_reader.iter().all(|request| !request.is_write()), "the reader sent no write");
        assert_eq!(
            by_reader
                .iter()
                .map(|request| (request.verb.as_str(), request.path.as_str(), request.status))
                .collect::<Vec<_>>(),
            [
                ("list", "/apis/lab.bloodraven.test/v1/namespaces/default/widgets", 200),
                ("get", "/apis/lab.bloodraven.test/v1/namespaces/default/widgets/w", 200),
            ]
        );
        assert_eq!(by_reader[1].resource.as_deref(), Some("widgets.lab.bloodraven.test"));
        assert_eq!(by_reader[1].name.as_deref(), Some("w"));
        let by_alice: Vec<_> = requests.iter().filter(|request| request.user == "alice").collect();
        assert_eq!(
            by_alice.iter().map(|request| request.verb.as_str()).collect::<Vec<_>>(),
            ["create"]
        );
        assert!(by_alice[0].time <= by_reader[0].time);

        lab.clear_requests();
        assert!(lab.requests().is_empty());

        let anonymous: Api<Widget> = Api::namespaced(client_as(&lab, None).await, "default");
        anonymous.get("w").await.unwrap();
        assert_eq!(lab.requests()[0].user, "system:anonymous");
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn unknown_tokens_and_disabled_anonymous_access_get_401() {
    let config = bloodraven_lab::LabConfig {
        allow_anonymous: false,
        ..bloodraven_lab::LabConfig::default()
    }
    .with_user("alice", "alice-token");
    let lab = crate::support::start_lab(config).await;
    bounded(async {
        let anonymous: Api<Widget> = Api::namespaced(client_as(&lab, None).await, "default");
        let error = api_status(anonymous.list(&ListParams::default()).await.unwrap_err());
        assert_eq!((error.code, error.reason.as_str()), (401, "Unauthorized"));

        let mut kubeconfig = lab.kubeconfig(Some("alice"));
        kubeconfig = kubeconfig.replace("alice-token", "stolen-token");
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&kubeconfig).unwrap();
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
        let stranger: Api<Widget> =
            Api::namespaced(kube::Client::try_from(config).unwrap(), "default");
        assert_eq!(api_status(stranger.list(&ListParams::default()).await.unwrap_err()).code, 401);
        let alice: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        alice.list(&ListParams::default()).await.unwrap();
        let statuses: Vec<u16> = lab.requests().iter().map(|request| request.status).collect();
        assert_eq!(statuses, [401, 401, 200]);
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn kube_clients_reach_a_tls_lab_with_the_generated_kubeconfig() {
    let config = bloodraven_lab::LabConfig { tls: true, ..bloodraven_lab::LabConfig::default() }
        .with_user("alice", "alice-token");
    let lab = crate::support::start_lab(config).await;
    bounded(async {
        assert!(lab.url().starts_with("https://127.0.0.1:"));
        assert!(lab.ca_pem().is_some_and(|pem| pem.starts_with("-----BEGIN CERTIFICATE-----")));
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        widgets.create(&PostParams::default(), &widget("w", "red")).await.unwrap();
        let mut stream = watcher(widgets.clone(), watcher::Config::default()).boxed();
        while !matches!(stream.next().await.unwrap().unwrap(), watcher::Event::InitDone) {}
        let users: Vec<String> = lab.requests().into_iter().map(|request| request.user).collect();
        assert!(users.iter().all(|user| user == "alice"), "{users:?}");
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn a_subresource_fault_refuses_only_status_writes() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        widgets.create(&PostParams::default(), &widget("w", "red")).await.unwrap();
        lab.inject(
            Fault::fail(403)
                .verb("patch")
                .resource("widgets")
                .subresource("status")
                .times(usize::MAX)
                .message("status writes are forbidden"),
        );
        let status = Patch::Merge(json!({"status": {"phase": "Ready"}}));
        let refused = api_status(
            widgets.patch_status("w", &PatchParams::default(), &status).await.unwrap_err(),
        );
        assert_eq!((refused.code, refused.message.as_str()), (403, "status writes are forbidden"));
        let spec = Patch::Merge(json!({"spec": {"color": "blue"}}));
        widgets
            .patch("w", &PatchParams::default(), &spec)
            .await
            .expect("the main resource is not refused");
        lab.clear_faults();
        let written = widgets.patch_status("w", &PatchParams::default(), &status).await.unwrap();
        assert_eq!(written.status.unwrap().phase.as_deref(), Some("Ready"));
    })
    .await;
    lab.stop().await.unwrap();
}

/// The widget's color and resourceVersion as stored.
async fn stored(widgets: &Api<Widget>) -> (Option<String>, String) {
    let widget = widgets.get("w").await.unwrap();
    (widget.spec.color, widget.metadata.resource_version.unwrap())
}

#[tokio::test]
async fn a_write_served_then_failed_is_applied_although_the_client_sees_a_5xx() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        widgets.create(&PostParams::default(), &widget("w", "red")).await.unwrap();
        let (_, before) = stored(&widgets).await;
        lab.inject(Fault::fail_after_serving(500).verb("patch").resource("widgets"));

        let merge = Patch::Merge(json!({"spec": {"color": "blue"}}));
        let error =
            api_status(widgets.patch("w", &PatchParams::default(), &merge).await.unwrap_err());
        assert_eq!(error.code, 500, "{error:?}");
        assert!(error.message.contains("after the request was served"), "{}", error.message);
        let (color, after) = stored(&widgets).await;
        assert_eq!(color.as_deref(), Some("blue"), "the write was applied");
        assert_ne!(after, before, "the applied write moved the resourceVersion");
        let patches: Vec<u16> = lab
            .requests()
            .iter()
            .filter(|request| request.verb == "patch")
            .map(|request| request.status)
            .collect();
        assert_eq!(patches, [500], "the client's view is logged");
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn a_write_served_then_dropped_is_applied_although_the_client_sees_a_reset_or_its_timeout() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        widgets.create(&PostParams::default(), &widget("w", "red")).await.unwrap();

        // Dropped at once: the client sees a transport error, not an API answer.
        lab.inject(Fault::drop_after_serving(Duration::ZERO).verb("patch").resource("widgets"));
        let blue = Patch::Merge(json!({"spec": {"color": "blue"}}));
        let (_, before) = stored(&widgets).await;
        match widgets.patch("w", &PatchParams::default(), &blue).await {
            Err(kube::Error::Api(status)) => {
                panic!("an API answer to a dropped request: {status:?}")
            }
            Err(_) => {}
            Ok(widget) => panic!("a dropped request answered: {widget:?}"),
        }
        let (color, after) = stored(&widgets).await;
        assert_eq!(color.as_deref(), Some("blue"), "the write was applied");
        assert_ne!(after, before);

        // Held past the client's own bound: it times out, and the write is applied anyway.
        lab.inject(
            Fault::drop_after_serving(Duration::from_secs(2)).verb("patch").resource("widgets"),
        );
        let green = Patch::Merge(json!({"spec": {"color": "green"}}));
        let started = Instant::now();
        let timed_out = tokio::time::timeout(
            Duration::from_millis(300),
            widgets.patch("w", &PatchParams::default(), &green),
        )
        .await;
        assert!(timed_out.is_err(), "the response was held: {timed_out:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(stored(&widgets).await.0.as_deref(), Some("green"), "applied before the hold");
        // Both dropped requests are logged with status 0 (no answer), once the hold ended.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let dropped = lab
                .requests()
                .iter()
                .filter(|request| request.verb == "patch" && request.status == 0)
                .count();
            if dropped == 2 {
                break;
            }
            assert!(Instant::now() < deadline, "waited 10 s for 2 dropped patches, saw {dropped}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn a_fault_can_match_on_the_request_body() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        widgets.create(&PostParams::default(), &widget("w", "red")).await.unwrap();
        lab.inject(
            Fault::fail(500).verb("patch").resource("widgets").body_contains("\"color\":\"blue\""),
        );
        let green = Patch::Merge(json!({"spec": {"color": "green"}}));
        widgets.patch("w", &PatchParams::default(), &green).await.unwrap();
        assert_eq!(stored(&widgets).await.0.as_deref(), Some("green"), "another body passes");
        let blue = Patch::Merge(json!({"spec": {"color": "blue"}}));
        let error =
            api_status(widgets.patch("w", &PatchParams::default(), &blue).await.unwrap_err());
        assert_eq!(error.code, 500);
        assert_eq!(stored(&widgets).await.0.as_deref(), Some("green"), "refused, not applied");
        widgets.patch("w", &PatchParams::default(), &blue).await.unwrap();
        assert_eq!(stored(&widgets).await.0.as_deref(), Some("blue"), "times defaults to one");
    })
    .await;
    lab.stop().await.unwrap();
}
