//! The read-only proof on the client `main` builds: `client::connect`, against the lab API
//! server. A write is refused inside the process and never reaches the lab's request log; the
//! two reviews the allow-list lets through do reach it.

use bloodraven_console::client::{REVIEW_PATHS, connect, refusals};
use bloodraven_console::lab::RunningLab;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// Every request the lab saw used GET (and no proxy, exec, attach or port-forward), or was a
/// POST of one of the two reviews: checked by method and path.
pub(crate) fn assert_only_reads_and_reviews(requests: &[bloodraven_lab::RequestRecord]) {
    let offending: Vec<_> = requests
        .iter()
        .filter(|request| {
            let acting = request
                .path
                .split('/')
                .any(|segment| ["proxy", "exec", "attach", "portforward"].contains(&segment));
            let read = request.method == "GET" && !acting && !request.is_write();
            let review = request.method == "POST" && REVIEW_PATHS.contains(&request.path.as_str());
            !(read || review)
        })
        .collect();
    assert!(offending.is_empty(), "the console sent more than reads and reviews: {offending:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_main_builds_refuses_writes_before_they_leave_the_process() {
    crate::install_crypto();
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    let (client, _) = connect(Some(&running.kubeconfig()), None).await.unwrap();
    let mut refused = refusals();
    running.lab.clear_requests();

    // The writes go to a namespace of their own, so the announcements counted below are
    // this test's even when other tests share the process.
    const NS: &str = "readonly-proof";
    Api::<ConfigMap>::namespaced(client.clone(), "orders")
        .list(&ListParams::default())
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let object: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "planted", "namespace": NS },
        "data": { "a": "b" },
    }))
    .unwrap();
    let merge = Patch::Merge(json!({ "data": { "a": "c" } }));
    let errors = [
        api.create(&PostParams::default(), &object).await.map(|_| ()).unwrap_err(),
        api.replace("planted", &PostParams::default(), &object).await.map(|_| ()).unwrap_err(),
        api.patch("planted", &PatchParams::default(), &merge).await.map(|_| ()).unwrap_err(),
        api.patch("planted", &PatchParams::apply("bloodraven").force(), &Patch::Apply(&object))
            .await
            .map(|_| ())
            .unwrap_err(),
        api.delete("orders", &DeleteParams::default()).await.map(|_| ()).unwrap_err(),
        api.delete_collection(&DeleteParams::default(), &ListParams::default())
            .await
            .map(|_| ())
            .unwrap_err(),
    ];
    for error in &errors {
        assert!(error.to_string().contains("the console is read-only: refused"), "{error}");
    }
    // A group's status, as an operator would write it.
    let groups: Api<bloodraven_crd::MysqlFailoverGroup> = Api::namespaced(client.clone(), NS);
    let status = Patch::Merge(json!({ "status": { "activeSite": "pdx" } }));
    let error = groups.patch_status("orders", &PatchParams::default(), &status).await.unwrap_err();
    assert!(error.to_string().contains("read-only"), "{error}");
    // A proxy GET reaches a workload: refused too.
    let proxy = format!("/api/v1/namespaces/{NS}/pods/db-0/proxy/");
    let request = hyper::Request::get(&proxy).body(Vec::new()).unwrap();
    let error = client.request_text(request).await.unwrap_err();
    assert!(error.to_string().contains(&format!("refused GET {proxy}")), "{error}");
    // The two reviews pass the layer (whatever the server answers).
    for path in REVIEW_PATHS {
        let body = json!({ "apiVersion": "v1", "kind": "Review", "spec": {} });
        let request = hyper::Request::post(path)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap();
        let _ = client.request_text(request).await;
    }

    let requests = running.lab.requests();
    assert_only_reads_and_reviews(&requests);
    let writes: Vec<_> = requests
        .iter()
        .filter(|request| request.is_write() && !REVIEW_PATHS.contains(&request.path.as_str()))
        .collect();
    assert!(writes.is_empty(), "{writes:#?}");
    assert!(
        running.lab.list("v1", "ConfigMap").iter().all(|cm| cm["metadata"]["name"] != "planted")
    );
    let seen: Vec<(&str, &str)> =
        requests.iter().map(|request| (request.method.as_str(), request.path.as_str())).collect();
    assert!(seen.contains(&("GET", "/api/v1/namespaces/orders/configmaps")), "{seen:?}");
    for path in REVIEW_PATHS {
        assert!(seen.contains(&("POST", path)), "the allow-list let {path} through: {seen:?}");
    }
    // Each refusal was announced (the console's status line shows them).
    let mut announced = 0;
    while let Ok(refusal) = refused.try_recv() {
        if refusal.path.contains(&format!("/namespaces/{NS}/")) {
            announced += 1;
        }
    }
    assert_eq!(announced, errors.len() + 2, "one announcement per refused request");
    running.stop().await.unwrap();
}
