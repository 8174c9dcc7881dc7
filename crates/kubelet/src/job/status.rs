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

/// The Pod status of an attempt whose (only) container is `name` with `image`.
pub fn pod_status(
    name: &str,
    image: &str,
    container: &Container,
    created: jiff::Timestamp,
) -> Value {
    let (phase, state, container_id, ready) = match container {
        Container::Waiting { reason, message } => {
            ("Pending", json!({ "waiting": { "reason": reason, "message": message } }), None, false)
        }
        Container::Running { pid, started_at } => {
            ("Running", json!({ "running": { "startedAt": started_at.to_string() } }), *pid, true)
        }
        Container::Terminated { pid, exit_code, reason, message, started_at, finished_at } => (
            if *exit_code == 0 { "Succeeded" } else { "Failed" },
            json!({ "terminated": {
                "exitCode": exit_code, "reason": reason,
                "message": (!message.is_empty()).then_some(message),
                "startedAt": started_at.to_string(), "finishedAt": finished_at.to_string(),
            }}),
            *pid,
            false,
        ),
    };
    let condition = |type_: &str, value: bool| {
        json!({ "type": type_, "status": if value { "True" } else { "False" },
                "lastTransitionTime": created.to_string() })
    };
    json!({
        "phase": phase,
        "conditions": [condition("PodScheduled", true), condition("Initialized", true),
                       condition("ContainersReady", ready), condition("Ready", ready)],
        "containerStatuses": [{
            "name": name, "image": image, "imageID": "",
            "containerID": container_id.map(|pid| format!("lab://{pid}")),
            "ready": ready, "restartCount": 0, "started": matches!(container, Container::Running { .. }),
            "state": state,
        }],
        "hostIP": POD_IP, "podIP": POD_IP, "podIPs": [{ "ip": POD_IP }],
        "startTime": created.to_string(),
    })
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
    if tail.len() <= 2048 {
        return tail;
    }
    let mut start = tail.len() - 2048;
    while !tail.is_char_boundary(start) {
        start += 1;
    }
    tail[start..].to_owned()
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
        let status: k8s_openapi::api::core::v1::PodStatus = serde_json::from_value(pod_status(
            "backup",
            "img",
            &Container::Terminated {
                pid: Some(7),
                exit_code: 1,
                reason: "Error".into(),
                message: "Error: boom".into(),
                started_at: at(1),
                finished_at: at(2),
            },
            at(0),
        ))
        .unwrap();
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
}
