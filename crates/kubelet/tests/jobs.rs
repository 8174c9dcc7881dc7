//! The lab kubelet's `batch/v1` Job support: a Job's first container runs as a local process
//! (`/bin/sh` here) with its Secret env and volumes; the Job's status is what a Job controller
//! writes (Complete; Failed with BackoffLimitExceeded after `backoffLimit + 1` pods; Failed
//! with DeadlineExceeded after `activeDeadlineSeconds`, the process killed).
//!
//! Needs `source scripts/provision.sh` (the kubelet starts with the MySQL distribution even
//! when it runs no site); fails naming it otherwise.

mod support;

use std::sync::Arc;
use std::time::Duration;

use bloodraven_kubelet::{JobConfig, KubeletConfig};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use support::{Wait, World};

const NAMESPACE: &str = "jobs";
/// Generous: CI shares 2 cores with other real servers.
const WAIT: Wait = Wait { bound: Duration::from_secs(120), poll: Duration::from_millis(200) };

fn job(name: &str, script: &str, backoff_limit: i32, deadline: Option<i64>) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": { "name": name, "namespace": NAMESPACE },
        "spec": {
            "backoffLimit": backoff_limit,
            "activeDeadlineSeconds": deadline,
            "template": { "spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "step", "image": "busybox",
                    "command": ["/bin/sh", "-c", script],
                    "terminationMessagePolicy": "FallbackToLogsOnError",
                    "env": [
                        { "name": "CREDS", "value": "/run/creds" },
                        { "name": "TOKEN", "valueFrom": { "secretKeyRef": { "name": "creds", "key": "token" } } },
                        { "name": "ME", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } },
                    ],
                    "volumeMounts": [
                        { "name": "creds", "mountPath": "/run/creds", "readOnly": true },
                        { "name": "tmp", "mountPath": "/tmp" },
                    ],
                }],
                "volumes": [
                    { "name": "creds", "secret": { "secretName": "creds", "defaultMode": 256 } },
                    { "name": "tmp", "emptyDir": {} },
                ],
            }},
        },
    }))
    .expect("a Job")
}

fn condition(job: &Job, type_: &str) -> Option<(String, String)> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
        .map(|c| (c.reason.clone().unwrap_or_default(), c.message.clone().unwrap_or_default()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_run_as_processes_and_report_complete_backoff_and_deadline() {
    let World { lab, kubelet, client, _root, .. } = support::start(NAMESPACE, "brj-", |root| {
        let mut config = KubeletConfig::new(root.join("claims"));
        config.jobs = Some(JobConfig::new(root.join("jobs")).executable("sh", "/bin/sh"));
        config
    })
    .await;

    let post = PostParams::default();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": { "name": "creds" },
        "stringData": { "token": "s3cret", "user": "backup" },
    }))
    .unwrap();
    secrets.create(&post, &secret).await.expect("the secret");
    let jobs: Api<Job> = Api::namespaced(client.clone(), NAMESPACE);
    let ok = r#"echo "token=$TOKEN user=$(cat $CREDS/user) me=$ME""#;
    jobs.create(&post, &job("ok", ok, 0, None)).await.expect("job ok");
    jobs.create(&post, &job("fails", "echo Error: boom; exit 3", 1, None))
        .await
        .expect("job fails");
    jobs.create(&post, &job("slow", "echo started; sleep 60", 6, Some(2))).await.expect("job slow");

    let done = |name: &'static str, type_: &'static str| {
        let jobs = jobs.clone();
        async move {
            WAIT.until(&format!("job {name} condition {type_}"), || async {
                let found = jobs.get(name).await.ok()?;
                condition(&found, type_).map(|c| (found, c))
            })
            .await
        }
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let job_pods = |name: &'static str| {
        let pods = pods.clone();
        async move {
            pods.list(&ListParams::default().labels(&format!("job-name={name}")))
                .await
                .expect("listing pods")
                .items
        }
    };

    // Success: env from the Secret and the pod's name, the Secret volume's files.
    let (found, (reason, _)) = done("ok", "Complete").await;
    assert_eq!(reason, "CompletionsReached");
    let status = found.status.unwrap();
    assert_eq!((status.succeeded, status.failed, status.active), (Some(1), Some(0), Some(0)));
    assert!(status.start_time.is_some() && status.completion_time.is_some());
    let ok_pods = job_pods("ok").await;
    assert_eq!(ok_pods.len(), 1);
    let pod_name = ok_pods[0].metadata.name.clone().unwrap();
    assert_eq!(ok_pods[0].status.as_ref().unwrap().phase.as_deref(), Some("Succeeded"));
    let log = kubelet.job_log(NAMESPACE, &pod_name).expect("the ok pod's log");
    assert!(log.contains(&format!("token=s3cret user=backup me={pod_name}")), "{log}");
    // What `kubectl logs` (and the operator) read through the API server.
    lab.set_pod_logs(Arc::new(kubelet.log_source()));
    let served = pods.logs(&pod_name, &Default::default()).await.expect("pods/log");
    assert_eq!(served, log);

    // Failure: backoffLimit 1 → two pods, then Failed; the pod's message is the log's tail.
    let (found, (reason, _)) = done("fails", "Failed").await;
    assert_eq!(reason, "BackoffLimitExceeded");
    assert_eq!(found.status.unwrap().failed, Some(2));
    let failed_pods = job_pods("fails").await;
    assert_eq!(failed_pods.len(), 2, "one pod per attempt");
    let terminated = failed_pods[0].status.clone().unwrap().container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .expect("terminated");
    assert_eq!((terminated.exit_code, terminated.message.as_deref()), (3, Some("Error: boom")));

    // Deadline: the process is killed and the Job fails with DeadlineExceeded.
    let (_, (reason, _)) = done("slow", "Failed").await;
    assert_eq!(reason, "DeadlineExceeded");
    let slow = kubelet.job_pods(NAMESPACE);
    let slow: Vec<_> = slow.values().filter(|p| p.job == "slow").collect();
    assert_eq!(slow.len(), 1);
    assert_eq!((slow[0].pid, slow[0].exit_code), (None, Some(137)));

    kubelet.shutdown().await;
    lab.stop().await.expect("the lab stops");
}

/// A Job whose pod runs init containers `inits` (name, script) and then `main`, all `/bin/sh`,
/// sharing the emptyDir `work` at `/work` (`$WORK`); `$MSG` names each container's
/// termination-message file (`/dev/termination-log`, or `/var/msg` for the init container
/// `first`, which sets that `terminationMessagePath`); the main container mounts `/work`
/// read-only.
fn init_job(name: &str, inits: &[(&str, &str)], main: &str) -> Job {
    let container = |name: &str, script: &str, read_only: bool| {
        let path = if name == "first" { "/var/msg" } else { "/dev/termination-log" };
        json!({
            "name": name, "image": "busybox",
            "command": ["/bin/sh", "-c", script],
            "terminationMessagePath": path,
            "terminationMessagePolicy": "FallbackToLogsOnError",
            "env": [
                { "name": "WORK", "value": "/work" },
                { "name": "MSG", "value": path },
                { "name": format!("ONLY_{}", name.to_uppercase()), "value": "yes" },
            ],
            "volumeMounts": [{ "name": "work", "mountPath": "/work", "readOnly": read_only }],
        })
    };
    let inits: Vec<_> = inits.iter().map(|(name, script)| container(name, script, false)).collect();
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": { "name": name, "namespace": NAMESPACE },
        "spec": {
            "backoffLimit": 0,
            "template": { "spec": {
                "restartPolicy": "Never",
                "initContainers": inits,
                "containers": [container("main", main, true)],
                "volumes": [{ "name": "work", "emptyDir": {} }],
            }},
        },
    }))
    .expect("a Job")
}

/// `(exit code, message)` of a terminated container status, `None` when it did not terminate.
fn terminated(status: &k8s_openapi::api::core::v1::ContainerStatus) -> Option<(i32, String)> {
    let terminated = status.state.as_ref()?.terminated.as_ref()?;
    Some((terminated.exit_code, terminated.message.clone().unwrap_or_default()))
}

fn waiting_reason(status: &k8s_openapi::api::core::v1::ContainerStatus) -> Option<String> {
    status.state.as_ref()?.waiting.as_ref()?.reason.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_containers_run_in_order_share_empty_dirs_and_a_failed_one_stops_the_pod() {
    let World { lab, kubelet, client, _root, .. } = support::start(NAMESPACE, "bri-", |root| {
        let mut config = KubeletConfig::new(root.join("claims"));
        config.jobs = Some(JobConfig::new(root.join("jobs")).executable("sh", "/bin/sh"));
        config
    })
    .await;
    lab.set_pod_logs(Arc::new(kubelet.log_source()));
    let post = PostParams::default();
    let jobs: Api<Job> = Api::namespaced(client.clone(), NAMESPACE);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);

    // Order, own environment, the shared emptyDir, each container's termination message.
    let first = r#"echo "first ONLY_SECOND=${ONLY_SECOND:-unset}" >> "$WORK/order"; echo fetched > "$WORK/data"; printf 'first ok' > "$MSG"; echo first-log"#;
    let second = r#"test "$(cat "$WORK/order")" = "first ONLY_SECOND=unset" || exit 9; echo second >> "$WORK/order"; printf 'second ok' > "$MSG""#;
    let main = r#"grep -q ' ro - ' "$BLOODRAVEN_MOUNTINFO_FILE" || exit 8; echo main-log; printf 'verdict %s order=%s' "$(cat "$WORK/data")" "$(tr '\n' , < "$WORK/order")" > "$MSG""#;
    jobs.create(&post, &init_job("chain", &[("first", first), ("second", second)], main))
        .await
        .expect("job chain");
    // A failing init container: the pod fails with its message, later containers never start.
    let broken = r#"echo 'not the message'; printf 'PITRArchiveGap: the archive has a hole' > "$MSG"; exit 4"#;
    let fallback = r#"echo 'Error: no message file, so the log tail'; exit 5"#;
    jobs.create(
        &post,
        &init_job(
            "broken",
            &[("first", "true"), ("second", broken), ("third", r#"touch "$WORK/third-ran""#)],
            r#"touch "$WORK/main-ran""#,
        ),
    )
    .await
    .expect("job broken");
    jobs.create(&post, &init_job("fallback", &[("second", fallback)], "true"))
        .await
        .expect("job fallback");

    let done = |name: &'static str, type_: &'static str| {
        let jobs = jobs.clone();
        async move {
            WAIT.until(&format!("job {name} condition {type_}"), || async {
                let found = jobs.get(name).await.ok()?;
                condition(&found, type_).map(|c| (found, c))
            })
            .await
        }
    };
    let only_pod = |name: &'static str| {
        let pods = pods.clone();
        async move {
            let mut items = pods
                .list(&ListParams::default().labels(&format!("job-name={name}")))
                .await
                .expect("listing pods")
                .items;
            assert_eq!(items.len(), 1, "one pod for job {name}");
            items.remove(0)
        }
    };

    let (_, (reason, _)) = done("chain", "Complete").await;
    assert_eq!(reason, "CompletionsReached");
    let pod = only_pod("chain").await;
    let pod_name = pod.metadata.name.clone().expect("a pod name");
    let status = pod.status.expect("the pod's status");
    assert_eq!(status.phase.as_deref(), Some("Succeeded"));
    let init = status.init_container_statuses.expect("initContainerStatuses");
    let names: Vec<&str> = init.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["first", "second"]);
    assert_eq!(terminated(&init[0]), Some((0, "first ok".to_owned())));
    assert_eq!(terminated(&init[1]), Some((0, "second ok".to_owned())));
    let main_status = &status.container_statuses.expect("containerStatuses")[0];
    assert_eq!(main_status.name, "main");
    assert_eq!(
        terminated(main_status),
        Some((0, "verdict fetched order=first ONLY_SECOND=unset,second,".to_owned())),
        "the main container saw both init containers' writes in the shared emptyDir, in order"
    );
    // Logs per container; `pods/log` serves the main container's.
    let served = pods.logs(&pod_name, &Default::default()).await.expect("pods/log");
    assert_eq!(served.trim(), "main-log");
    let first_log = kubelet.job_container_log(NAMESPACE, &pod_name, "first");
    assert_eq!(first_log.as_deref().map(str::trim), Some("first-log"));

    let (found, (reason, _)) = done("broken", "Failed").await;
    assert_eq!(
        (reason.as_str(), found.status.and_then(|s| s.failed)),
        ("BackoffLimitExceeded", Some(1))
    );
    let pod = only_pod("broken").await;
    let pod_name = pod.metadata.name.clone().expect("a pod name");
    let status = pod.status.expect("the pod's status");
    assert_eq!(status.phase.as_deref(), Some("Failed"));
    let initialized = status.conditions.iter().flatten().find(|c| c.type_ == "Initialized");
    assert_eq!(initialized.map(|c| c.status.as_str()), Some("False"));
    let init = status.init_container_statuses.expect("initContainerStatuses");
    assert_eq!(terminated(&init[0]).map(|t| t.0), Some(0));
    assert_eq!(
        terminated(&init[1]),
        Some((4, "PITRArchiveGap: the archive has a hole".to_owned())),
        "the termination-message file wins over the log"
    );
    assert_eq!(waiting_reason(&init[2]).as_deref(), Some("PodInitializing"));
    let main_status = &status.container_statuses.expect("containerStatuses")[0];
    assert_eq!(waiting_reason(main_status).as_deref(), Some("PodInitializing"));
    assert_eq!(kubelet.job_container_log(NAMESPACE, &pod_name, "third"), None, "never started");
    assert_eq!(kubelet.job_log(NAMESPACE, &pod_name), None, "the main container never started");
    assert_eq!(kubelet.job_pods(NAMESPACE)[&pod_name].exit_code, Some(4));

    let _ = done("fallback", "Failed").await;
    let status = only_pod("fallback").await.status.expect("the pod's status");
    let init = status.init_container_statuses.expect("initContainerStatuses");
    assert_eq!(
        terminated(&init[0]),
        Some((5, "Error: no message file, so the log tail".to_owned())),
        "FallbackToLogsOnError with an empty message file"
    );

    kubelet.shutdown().await;
    lab.stop().await.expect("the lab stops");
}
