//! WATCH: raw watches with resume, selectors, bookmarks, timeouts and 410; kube-runtime's
//! watcher recovering from 410 and dropped streams; a reflector store; a toy Controller.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, WatchStreamExt, reflector, watcher};
use kube::{Resource, ResourceExt};
use serde_json::json;

use bloodraven_lab::LabConfig;

use crate::support::{Widget, bounded, client, lab, start_lab, widget};

fn version_of(widget: &Widget) -> String {
    widget.metadata.resource_version.clone().unwrap()
}

fn summarize(event: &WatchEvent<Widget>) -> String {
    match event {
        WatchEvent::Added(object) => format!("ADDED {}", object.name_any()),
        WatchEvent::Modified(object) => format!("MODIFIED {}", object.name_any()),
        WatchEvent::Deleted(object) => format!("DELETED {}", object.name_any()),
        WatchEvent::Bookmark(_) => "BOOKMARK".to_string(),
        WatchEvent::Error(error) => format!("ERROR {}", error.code),
    }
}

#[tokio::test]
async fn watch_resumes_from_a_resource_version() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        let first = widgets.create(&PostParams::default(), &widget("a", "red")).await.unwrap();
        let resume_from = version_of(&first);
        widgets.create(&PostParams::default(), &widget("b", "red")).await.unwrap();
        widgets
            .patch("a", &PatchParams::default(), &Patch::Merge(json!({"spec": {"color": "blue"}})))
            .await
            .unwrap();
        widgets.delete("b", &DeleteParams::default()).await.unwrap();

        let events: Vec<String> = widgets
            .watch(&WatchParams::default().timeout(1), &resume_from)
            .await
            .unwrap()
            .map(|event| summarize(&event.unwrap()))
            .filter(|event| std::future::ready(event != "BOOKMARK"))
            .collect()
            .await;
        assert_eq!(events, ["ADDED b", "MODIFIED a", "DELETED b"]);

        // "0" starts with the current state as synthetic ADDED events.
        let started = Instant::now();
        let events: Vec<String> = widgets
            .watch(&WatchParams::default().timeout(1), "0")
            .await
            .unwrap()
            .map(|event| summarize(&event.unwrap()))
            .collect()
            .await;
        assert_eq!(events.first().map(String::as_str), Some("ADDED a"));
        assert_eq!(
            events.last().map(String::as_str),
            Some("BOOKMARK"),
            "a bookmark ends a timed-out watch"
        );
        assert!(started.elapsed() < Duration::from_secs(10), "timeoutSeconds ends the watch");
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn watch_with_a_label_selector_sees_objects_leave_it() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        let mut labelled = widget("a", "red");
        labelled.metadata.labels = Some([("team".to_string(), "db".to_string())].into());
        let created = widgets.create(&PostParams::default(), &labelled).await.unwrap();
        widgets.create(&PostParams::default(), &widget("other", "red")).await.unwrap();
        widgets
            .patch(
                "a",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"team": "web"}}})),
            )
            .await
            .unwrap();
        widgets
            .patch(
                "a",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"team": "db"}}})),
            )
            .await
            .unwrap();
        let events: Vec<String> = widgets
            .watch(
                &WatchParams::default().labels("team=db").timeout(1).disable_bookmarks(),
                &version_of(&created),
            )
            .await
            .unwrap()
            .map(|event| summarize(&event.unwrap()))
            .collect()
            .await;
        assert_eq!(events, ["DELETED a", "ADDED a"]);
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn watch_from_a_compacted_version_gets_410() {
    let lab = start_lab(LabConfig { history_limit: 3, ..LabConfig::default() }).await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        let first = widgets.create(&PostParams::default(), &widget("a", "red")).await.unwrap();
        for color in ["1", "2", "3", "4"] {
            widgets
                .patch(
                    "a",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"color": color}})),
                )
                .await
                .unwrap();
        }
        let events: Vec<WatchEvent<Widget>> = widgets
            .watch(&WatchParams::default().timeout(5), &version_of(&first))
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let [WatchEvent::Error(error)] = events.as_slice() else {
            panic!("expected one ERROR event, got {events:?}")
        };
        assert_eq!((error.code, error.reason.as_str()), (410, "Expired"));
        assert!(error.message.starts_with("too old resource version"), "{}", error.message);

        let latest = widgets.get("a").await.unwrap();
        lab.compact();
        let events: Vec<WatchEvent<Widget>> = widgets
            .watch(&WatchParams::default().timeout(1), &version_of(&latest))
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert!(
            events.iter().all(|event| !matches!(event, WatchEvent::Error(_))),
            "the current version is still watchable"
        );
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn kube_runtime_watcher_recovers_from_410_and_dropped_streams() {
    let lab = Arc::new(lab().await);
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        widgets.create(&PostParams::default(), &widget("before", "red")).await.unwrap();
        let mut stream = watcher(widgets.clone(), watcher::Config::default()).boxed();
        let mut inits = 0;
        let mut seen = Vec::new();
        let mut step = 0;
        let mut helper = None;
        while let Some(event) = stream.next().await {
            match event {
                Ok(watcher::Event::Init) => inits += 1,
                Ok(watcher::Event::InitApply(object) | watcher::Event::Apply(object)) => {
                    seen.push(object.name_any())
                }
                Ok(watcher::Event::InitDone) if step == 0 => {
                    step = 1;
                    // Drop the stream and forget history: the re-watch must get 410 and relist.
                    lab.compact();
                    widgets.create(&PostParams::default(), &widget("during", "red")).await.unwrap();
                    lab.compact();
                    lab.drop_watches();
                }
                Ok(watcher::Event::InitDone) if step == 1 => {
                    step = 2;
                    // Once the watcher's next watch is open, end it: it must re-watch (no relist).
                    let lab = lab.clone();
                    let widgets = widgets.clone();
                    helper = Some(tokio::spawn(async move {
                        while lab
                            .requests()
                            .iter()
                            .filter(|request| request.verb == "watch")
                            .count()
                            < 2
                        {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                        lab.drop_watches();
                        widgets
                            .create(&PostParams::default(), &widget("after", "red"))
                            .await
                            .unwrap();
                    }));
                }
                Ok(_) | Err(_) => {}
            }
            if seen.iter().any(|name| name == "after") {
                break;
            }
        }
        helper.unwrap().await.unwrap();
        assert_eq!(inits, 2, "one relist after the 410, none after a plain drop");
        assert!(
            seen.contains(&"during".to_string()),
            "the relist saw the object created meanwhile: {seen:?}"
        );
        let watches = lab.requests().iter().filter(|request| request.verb == "watch").count();
        assert!(watches >= 3, "the watcher re-watched after each drop ({watches} watches)");
    })
    .await;
    Arc::into_inner(lab).expect("the helper task released the lab").stop().await.unwrap();
}

#[tokio::test]
async fn streaming_list_watcher_gets_initial_events_end() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        widgets.create(&PostParams::default(), &widget("a", "red")).await.unwrap();
        let mut stream =
            watcher(widgets.clone(), watcher::Config::default().streaming_lists()).boxed();
        let mut events = Vec::new();
        while let Some(event) = stream.try_next().await.unwrap() {
            match event {
                watcher::Event::Init => events.push("init".to_string()),
                watcher::Event::InitApply(object) => {
                    events.push(format!("init-apply {}", object.name_any()))
                }
                watcher::Event::InitDone => {
                    events.push("init-done".to_string());
                    widgets.create(&PostParams::default(), &widget("b", "red")).await.unwrap();
                }
                watcher::Event::Apply(object) => {
                    events.push(format!("apply {}", object.name_any()));
                    break;
                }
                watcher::Event::Delete(_) => {}
            }
        }
        assert_eq!(events, ["init", "init-apply a", "init-done", "apply b"]);
        let watch = lab.requests().into_iter().find(|request| request.verb == "watch").unwrap();
        assert!(watch.query.contains("sendInitialEvents=true"), "{}", watch.query);
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn reflector_store_follows_the_server() {
    let lab = lab().await;
    bounded(async {
        let widgets: Api<Widget> = Api::namespaced(client(&lab).await, "default");
        for name in ["a", "b", "c"] {
            widgets.create(&PostParams::default(), &widget(name, "red")).await.unwrap();
        }
        let (reader, writer) = reflector::store();
        let stream =
            reflector(writer, watcher(widgets.clone(), watcher::Config::default().page_size(2)))
                .applied_objects()
                .for_each(|_| std::future::ready(()));
        let task = tokio::spawn(stream);
        reader.wait_until_ready().await.unwrap();
        let mut names: Vec<String> =
            reader.state().iter().map(|widget| widget.name_any()).collect();
        names.sort();
        assert_eq!(names, ["a", "b", "c"]);

        widgets
            .patch("a", &PatchParams::default(), &Patch::Merge(json!({"spec": {"color": "blue"}})))
            .await
            .unwrap();
        widgets.delete("b", &DeleteParams::default()).await.unwrap();
        loop {
            let state = reader.state();
            let a_blue = state.iter().any(|widget| {
                widget.name_any() == "a" && widget.spec.color.as_deref() == Some("blue")
            });
            if a_blue && state.len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let lists = lab.requests().iter().filter(|request| request.verb == "list").count();
        assert_eq!(lists, 2, "three objects in pages of two");
        task.abort();
    })
    .await;
    lab.stop().await.unwrap();
}

struct Context {
    client: kube::Client,
    reconciles: AtomicUsize,
}

#[derive(Debug, thiserror::Error)]
#[error("reconcile failed: {0}")]
struct ReconcileError(#[from] kube::Error);

async fn reconcile(widget: Arc<Widget>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    ctx.reconciles.fetch_add(1, Ordering::SeqCst);
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &widget.namespace().unwrap());
    let status = json!({
        "apiVersion": Widget::api_version(&()),
        "kind": Widget::kind(&()),
        "metadata": {"name": widget.name_any()},
        "status": {"phase": "Ready", "observedGeneration": widget.metadata.generation},
    });
    widgets
        .patch_status(
            &widget.name_any(),
            &PatchParams::apply("toy-controller").force(),
            &Patch::Apply(&status),
        )
        .await?;
    Ok(Action::requeue(Duration::from_secs(300)))
}

fn error_policy(_: Arc<Widget>, _: &ReconcileError, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_millis(100))
}

#[tokio::test]
async fn toy_controller_reconciles_and_writes_status() {
    let lab = lab().await;
    bounded(async {
        let client = client(&lab).await;
        let widgets: Api<Widget> = Api::namespaced(client.clone(), "default");
        let ctx = Arc::new(Context { client: client.clone(), reconciles: AtomicUsize::new(0) });
        let controller = Controller::new(widgets.clone(), watcher::Config::default())
            .run(reconcile, error_policy, ctx.clone())
            .for_each(|_| std::future::ready(()));
        let task = tokio::spawn(controller);

        widgets.create(&PostParams::default(), &widget("w", "red")).await.unwrap();
        let observed = |generation: i64| {
            let widgets = widgets.clone();
            async move {
                loop {
                    let current = widgets.get("w").await.unwrap();
                    if current.status.as_ref().and_then(|status| status.observed_generation)
                        == Some(generation)
                    {
                        return current;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        };
        let ready = observed(1).await;
        assert_eq!(ready.status.unwrap().phase.as_deref(), Some("Ready"));
        widgets
            .patch("w", &PatchParams::default(), &Patch::Merge(json!({"spec": {"color": "blue"}})))
            .await
            .unwrap();
        observed(2).await;
        // The status write itself wakes the controller once more; the no-op write that follows
        // must not (no version bump, no event): reconciles settle.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let settled = ctx.reconciles.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(ctx.reconciles.load(Ordering::SeqCst), settled, "no reconcile hot loop");
        assert!(settled <= 6, "{settled} reconciles");
        task.abort();
    })
    .await;
    lab.stop().await.unwrap();
}
