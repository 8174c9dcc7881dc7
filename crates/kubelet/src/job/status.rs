//! The objects a Job attempt writes (pure; `now` is passed): its Pod, the Pod's status, and
//! the Job's status in the shape Kubernetes writes it (`active`, `ready`, `succeeded`,
//! `failed`, `startTime`, `completionTime`, conditions `SuccessCriteriaMet`+`Complete` or
//! `FailureTarget`+`Failed` with their reasons).

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::pod::{NODE_NAME, POD_IP};

/// The label (both spellings) Kubernetes puts on a Job's pods.
pub const JOB_NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
/// The controller-uid labels.
pub const CONTROLLER_UID_LABELS: [&str; 2] =
    ["controller-uid", "batch.kubernetes.io/controller-uid"];

/// The pod-name suffix alphabet of Kubernetes' name generator.
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `<job>-<5 characters>` derived from `seed` (the Job's uid, the attempt, the time).
pub fn pod_name(job: &str, seed: &str) -> String {
    let digest = Sha256::digest(seed.as_bytes());
    let suffix: String = digest
        .iter()
        .take(5)
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    format!("{job}-{suffix}")
}

/// The Pod of one attempt: the template's labels (plus the job labels), annotations and
/// spec, owned by the Job, bound to the lab's node.
pub fn pod_object(job: &Job, name: &str) -> Pod {
    let spec = job.spec.clone().unwrap_or_default();
    let template_meta = spec.template.metadata.clone().unwrap_or_default();
    let job_name = job.metadata.name.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let mut labels: BTreeMap<String, String> = template_meta.labels.unwrap_or_default();
    for key in JOB_NAME_LABELS {
        labels.insert(key.to_owned(), job_name.clone());
    }
    for key in CONTROLLER_UID_LABELS {
        labels.insert(key.to_owned(), uid.clone());
    }
    let mut pod_spec = spec.template.spec.unwrap_or_default();
    pod_spec.node_name = Some(NODE_NAME.to_owned());
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: job.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: template_meta.annotations,
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".to_owned(),
                kind: "Job".to_owned(),
                name: job_name,
                uid,
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: Some(pod_spec),
        status: None,
    }
}

/// What an attempt's container is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Container {
    Waiting {
        reason: String,
        message: String,
    },
    Running {
        pid: Option<u32>,
        started_at: jiff::Timestamp,
    },
    Terminated {
        pid: Option<u32>,
        exit_code: i32,
        reason: String,
        message: String,
        started_at: jiff::Timestamp,
        finished_at: jiff::Timestamp,
    },
}

impl Container {
    /// `waiting: PodInitializing`: a container whose turn has not come (the main container
    /// while init containers run, the init containers after the running one).
    pub fn initializing() -> Self {
        Container::Waiting { reason: "PodInitializing".to_owned(), message: String::new() }
    }

    fn failed(&self) -> bool {
        matches!(self, Container::Terminated { exit_code, .. } if *exit_code != 0)
    }

    fn completed(&self) -> bool {
        matches!(self, Container::Terminated { exit_code: 0, .. })
    }

    /// The container's entry of `containerStatuses`/`initContainerStatuses`.
    fn status(&self, name: &str, image: &str, ready: bool) -> Value {
        let (state, pid) = match self {
            Container::Waiting { reason, message } => (
                json!({ "waiting": { "reason": reason,
                                     "message": (!message.is_empty()).then_some(message) } }),
                None,
            ),
            Container::Running { pid, started_at } => {
                (json!({ "running": { "startedAt": started_at.to_string() } }), *pid)
            }
            Container::Terminated { pid, exit_code, reason, message, started_at, finished_at } => (
                json!({ "terminated": {
                    "exitCode": exit_code, "reason": reason,
                    "message": (!message.is_empty()).then_some(message),
                    "startedAt": started_at.to_string(), "finishedAt": finished_at.to_string(),
                }}),
                *pid,
            ),
        };
        json!({
            "name": name, "image": image, "imageID": "",
            "containerID": pid.map(|pid| format!("lab://{pid}")),
            "ready": ready, "restartCount": 0,
            "started": matches!(self, Container::Running { .. }),
            "state": state,
        })
    }
}

/// One container of an attempt's pod: its name, image and state.
#[derive(Debug, Clone, Copy)]
pub struct Named<'a> {
    pub name: &'a str,
    pub image: &'a str,
    pub state: &'a Container,
}

/// The Pod status of an attempt with init containers `init` (in order; empty when it has none)
/// and main container `main`, as a kubelet writes it for `restartPolicy: Never`: `Pending`
/// while init containers run (`Initialized` False, the main container `PodInitializing`),
/// `Failed` once any container failed, `Running`/`Succeeded` with the main container.
pub fn pod_status(init: &[Named<'_>], main: &Named<'_>, created: jiff::Timestamp) -> Value {
    let any_failed = init.iter().chain([main]).any(|c| c.state.failed());
    let phase = if any_failed {
        "Failed"
    } else if main.state.completed() {
        "Succeeded"
    } else if matches!(main.state, Container::Running { .. }) {
        "Running"
    } else {
        "Pending"
    };
    let initialized = init.iter().all(|c| c.state.completed());
    let ready = matches!(main.state, Container::Running { .. });
    let condition = |type_: &str, value: bool, reason: Option<&str>| {
        json!({ "type": type_, "status": if value { "True" } else { "False" },
                "reason": reason.filter(|_| !value),
                "lastTransitionTime": created.to_string() })
    };
    let mut status = json!({
        "phase": phase,
        "conditions": [
            condition("PodScheduled", true, None),
            condition("Initialized", initialized, Some("ContainersNotInitialized")),
            condition("ContainersReady", ready, Some("ContainersNotReady")),
            condition("Ready", ready, Some("ContainersNotReady")),
        ],
        "containerStatuses": [main.state.status(main.name, main.image, ready)],
        "hostIP": POD_IP, "podIP": POD_IP, "podIPs": [{ "ip": POD_IP }],
        "startTime": created.to_string(),
    });
    if !init.is_empty() {
        status["initContainerStatuses"] = init
            .iter()
            .map(|c| c.state.status(c.name, c.image, c.state.completed()))
            .collect::<Vec<_>>()
            .into();
    }
    status
}

/// Kubernetes' cap on one container's termination message (`MaxContainerTerminationMessageLength`).
pub const MESSAGE_LIMIT: usize = 4096;

/// A container's `terminated.message`, as a kubelet makes it: the last [`MESSAGE_LIMIT`] bytes
/// of its termination-message file; when that is empty, a failed container with
/// `FallbackToLogsOnError` gets its log's tail ([`log_tail`]).
pub fn termination_message(
    file: &str,
    exit_code: i32,
    fallback_to_logs: bool,
    log: &str,
) -> String {
    if !file.is_empty() {
        return tail_bytes(file, MESSAGE_LIMIT).to_owned();
    }
    if exit_code != 0 && fallback_to_logs { log_tail(log) } else { String::new() }
}

/// The last `limit` bytes of `text` at most, starting on a character boundary.
fn tail_bytes(text: &str, limit: usize) -> &str {
    let mut start = text.len().saturating_sub(limit);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// How a Job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Complete,
    /// `reason`: `BackoffLimitExceeded` or `DeadlineExceeded`.
    Failed {
        reason: String,
        message: String,
    },
}

/// The Job's counters now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub active: i32,
    pub ready: i32,
    pub succeeded: i32,
    pub failed: i32,
}

/// The Job's status (a merge patch body's `status`).
pub fn job_status(
    counts: Counts,
    start: jiff::Timestamp,
    end: Option<(&End, jiff::Timestamp)>,
) -> Value {
    let mut status = json!({
        "active": counts.active, "ready": counts.ready, "terminating": 0,
        "succeeded": counts.succeeded, "failed": counts.failed,
        "startTime": start.to_string(),
        "uncountedTerminatedPods": {},
    });
    let condition = |type_: &str, reason: &str, message: &str, at: jiff::Timestamp| {
        json!({ "type": type_, "status": "True", "reason": reason, "message": message,
                "lastProbeTime": at.to_string(), "lastTransitionTime": at.to_string() })
    };
    match end {
        None => {}
        Some((End::Complete, at)) => {
            status["completionTime"] = json!(at.to_string());
            let message = "Reached expected number of succeeded pods";
            status["conditions"] = json!([
                condition("SuccessCriteriaMet", "CompletionsReached", message, at),
                condition("Complete", "CompletionsReached", message, at),
            ]);
        }
        Some((End::Failed { reason, message }, at)) => {
            status["conditions"] = json!([
                condition("FailureTarget", reason, message, at),
                condition("Failed", reason, message, at),
            ]);
        }
    }
    status
}

/// Whether a Job already has a terminal condition (`Complete` or `Failed` True).
pub fn is_finished(job: &Job) -> bool {
    job.status.as_ref().and_then(|status| status.conditions.as_ref()).is_some_and(|conditions| {
        conditions
            .iter()
            .any(|c| matches!(c.type_.as_str(), "Complete" | "Failed") && c.status == "True")
    })
}

/// The last 80 lines, at most 2048 bytes, of a log (Kubernetes' `FallbackToLogsOnError`).
pub fn log_tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let tail = lines[lines.len().saturating_sub(80)..].join("\n");
    tail_bytes(&tail, 2048).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobStatus;

    fn at(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(seconds).unwrap()
    }

    #[test]
    fn job_status_has_the_kubernetes_shape() {
        let failed = End::Failed {
            reason: "BackoffLimitExceeded".into(),
            message: "Job has reached the specified backoff limit".into(),
        };
        let value = job_status(
            Counts { failed: 2, ..Counts::default() },
            at(100),
            Some((&failed, at(160))),
        );
        let status: JobStatus = serde_json::from_value(value).unwrap();
        assert_eq!(status.failed, Some(2));
        let conditions = status.conditions.unwrap();
        assert_eq!(conditions[1].type_, "Failed");
        assert_eq!(conditions[1].reason.as_deref(), Some("BackoffLimitExceeded"));
        let job = Job {
            status: Some(JobStatus { conditions: Some(conditions), ..JobStatus::default() }),
            ..Job::default()
        };
        assert!(is_finished(&job));
        let value = job_status(
            Counts { succeeded: 1, ..Counts::default() },
            at(100),
            Some((&End::Complete, at(130))),
        );
        let status: JobStatus = serde_json::from_value(value).unwrap();
        assert_eq!(status.completion_time.unwrap().0, at(130));
        assert!(status.conditions.unwrap().iter().any(|c| c.type_ == "Complete"));
        assert!(!is_finished(&Job::default()));
    }

    #[test]
    fn pods_are_named_and_labelled_as_a_job_controller_does() {
        let name = pod_name("mysqlbackup-x", "uid/1/now");
        assert_eq!(name.len(), "mysqlbackup-x-".len() + 5);
        assert_ne!(name, pod_name("mysqlbackup-x", "uid/2/now"));
        let mut job = Job::default();
        job.metadata.name = Some("mysqlbackup-x".into());
        job.metadata.uid = Some("u1".into());
        let pod = pod_object(&job, &name);
        let labels = pod.metadata.labels.unwrap();
        assert_eq!(labels["job-name"], "mysqlbackup-x");
        assert_eq!(labels["controller-uid"], "u1");
        assert_eq!(pod.metadata.owner_references.unwrap()[0].kind, "Job");
        let state = Container::Terminated {
            pid: Some(7),
            exit_code: 1,
            reason: "Error".into(),
            message: "Error: boom".into(),
            started_at: at(1),
            finished_at: at(2),
        };
        let main = Named { name: "backup", image: "img", state: &state };
        let status: k8s_openapi::api::core::v1::PodStatus =
            serde_json::from_value(pod_status(&[], &main, at(0))).unwrap();
        assert!(status.init_container_statuses.is_none());
        assert_eq!(status.phase.as_deref(), Some("Failed"));
        let terminated =
            status.container_statuses.unwrap()[0].state.clone().unwrap().terminated.unwrap();
        assert_eq!((terminated.exit_code, terminated.message.as_deref()), (1, Some("Error: boom")));
    }

    #[test]
    fn the_log_tail_keeps_the_last_80_lines_and_2048_bytes() {
        let log: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let tail = log_tail(&log);
        assert!(tail.starts_with("line 20\n") && tail.ends_with("line 99"), "{tail}");
        let long = "é".repeat(3000);
        assert!(log_tail(&long).len() <= 2048);
    }

    #[test]
    fn init_containers_are_reported_as_a_kubelet_does() {
        let done = Container::Terminated {
            pid: Some(1),
            exit_code: 0,
            reason: "Completed".into(),
            message: "fetched".into(),
            started_at: at(1),
            finished_at: at(2),
        };
        let running = Container::Running { pid: Some(2), started_at: at(3) };
        let waiting = Container::initializing();
        fn named<'a>(name: &'a str, state: &'a Container) -> Named<'a> {
            Named { name, image: "i", state }
        }
        let parse = |value: Value| -> k8s_openapi::api::core::v1::PodStatus {
            serde_json::from_value(value).unwrap()
        };
        let condition = |status: &k8s_openapi::api::core::v1::PodStatus, type_: &str| {
            status
                .conditions
                .clone()
                .unwrap()
                .into_iter()
                .find(|c| c.type_ == type_)
                .unwrap()
                .status
        };
        let (done, running, waiting) = (&done, &running, &waiting);
        // The second init container runs: Pending, not initialized, the main one waits.
        let status = parse(pod_status(
            &[named("a", done), named("b", running)],
            &named("main", waiting),
            at(0),
        ));
        assert_eq!(status.phase.as_deref(), Some("Pending"));
        assert_eq!(condition(&status, "Initialized"), "False");
        let init = status.init_container_statuses.clone().unwrap();
        assert_eq!(
            init[0].state.clone().unwrap().terminated.unwrap().message.as_deref(),
            Some("fetched")
        );
        assert!(init[1].state.clone().unwrap().running.is_some());
        let main = &status.container_statuses.clone().unwrap()[0];
        assert_eq!(
            main.state.clone().unwrap().waiting.unwrap().reason.as_deref(),
            Some("PodInitializing")
        );
        // The second one failed: the pod failed, the main container never started.
        let failed = &(Container::Terminated {
            pid: Some(2),
            exit_code: 4,
            reason: "Error".into(),
            message: "PITRArchiveGap: boom".into(),
            started_at: at(3),
            finished_at: at(4),
        });
        let status = parse(pod_status(
            &[named("a", done), named("b", failed), named("c", waiting)],
            &named("main", waiting),
            at(0),
        ));
        assert_eq!(status.phase.as_deref(), Some("Failed"));
        assert_eq!(condition(&status, "Initialized"), "False");
        let init = status.init_container_statuses.unwrap();
        let terminated = init[1].state.clone().unwrap().terminated.unwrap();
        assert_eq!(
            (terminated.exit_code, terminated.message.as_deref()),
            (4, Some("PITRArchiveGap: boom"))
        );
        assert!(init[2].state.clone().unwrap().waiting.is_some());
        // All initialized, the main one runs.
        let status = parse(pod_status(&[named("a", done)], &named("main", running), at(0)));
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert_eq!(
            (condition(&status, "Initialized"), condition(&status, "Ready")),
            ("True".into(), "True".into())
        );
    }

    #[test]
    fn the_termination_message_is_the_file_else_the_log_on_error() {
        assert_eq!(termination_message("verdict", 0, true, "log"), "verdict");
        assert_eq!(termination_message("verdict", 1, true, "log"), "verdict", "the file wins");
        assert_eq!(termination_message("", 1, true, "a\nb"), "a\nb");
        assert_eq!(termination_message("", 1, false, "log"), "");
        assert_eq!(termination_message("", 0, true, "log"), "");
        let long = format!("head{}", "x".repeat(5000));
        assert_eq!(
            termination_message(&long, 0, false, "").len(),
            MESSAGE_LIMIT,
            "the last 4096 bytes"
        );
    }
}
