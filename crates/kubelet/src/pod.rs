//! The Pod objects the lab kubelet writes (pure: values in, objects out; `now` is passed).

use std::collections::BTreeMap;

use bloodraven_workloads::containers;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, Pod, PodCondition, PodIP, PodStatus, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use sha2::{Digest, Sha256};

/// The node name every lab pod is bound to.
pub const NODE_NAME: &str = "bloodraven-lab";
/// Every lab pod's (and node's) address: processes listen on 127.0.0.1.
pub const POD_IP: &str = "127.0.0.1";
/// The waiting reason of a container the lab does not run yet (the sidecar).
pub const NOT_RUN_IN_LAB: &str = "NotRunInLab";

/// `<deployment>-<10 hex of the template's hash>`: a changed template is a new pod.
pub fn pod_name(deployment: &str, template: &PodTemplateSpec) -> String {
    let bytes = serde_json::to_vec(template).unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    let hash = data_encoding::HEXLOWER.encode(&digest[..5]);
    format!("{deployment}-{hash}")
}

/// The Pod of `deployment` named `name`: the template's labels, annotations and spec, owned by
/// the Deployment, bound to the lab's node.
pub fn pod_object(deployment: &Deployment, name: &str) -> Pod {
    let template = &deployment.spec.template;
    let template_meta = template.metadata.clone().unwrap_or_default();
    let owner = deployment.metadata.uid.clone().map(|uid| OwnerReference {
        api_version: "apps/v1".to_owned(),
        kind: "Deployment".to_owned(),
        name: deployment.metadata.name.clone().unwrap_or_default(),
        uid,
        controller: Some(true),
        block_owner_deletion: Some(true),
    });
    let mut spec = template.spec.clone().unwrap_or_default();
    spec.node_name = Some(NODE_NAME.to_owned());
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: deployment.metadata.namespace.clone(),
            labels: template_meta.labels,
            annotations: template_meta.annotations,
            owner_references: owner.map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// What the lab knows of the `mysql` container.
#[derive(Debug, Clone, PartialEq)]
pub enum MysqlState {
    /// Not started: the ConfigMap or claim is missing, or the process is being (re)started.
    Waiting { reason: String, message: String },
    /// Running since `started_at`; `ready` once it answers.
    Running { started_at: jiff::Timestamp, pid: Option<u32>, ready: bool },
}

/// A pod's reportable state.
#[derive(Debug, Clone, PartialEq)]
pub struct PodReport {
    pub created_at: jiff::Timestamp,
    pub mysql: MysqlState,
    pub restart_count: i32,
    /// How the previous process ended (after a restart).
    pub last_terminated: Option<(jiff::Timestamp, String)>,
    /// When the pod's readiness last changed.
    pub ready_since: jiff::Timestamp,
    /// The images of the template's containers, by name.
    pub images: BTreeMap<String, String>,
    /// The sidecar process, when the lab runs it.
    pub sidecar: Option<SidecarReport>,
}

/// The `sidecar` container as the lab runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct SidecarReport {
    /// When the process started (`None`: being restarted).
    pub started_at: Option<jiff::Timestamp>,
    /// Its PID.
    pub pid: Option<u32>,
    /// How often it was restarted.
    pub restart_count: i32,
}

impl PodReport {
    pub fn ready(&self) -> bool {
        matches!(self.mysql, MysqlState::Running { ready: true, .. })
    }
}

fn condition(type_: &str, value: bool, at: jiff::Timestamp) -> PodCondition {
    PodCondition {
        type_: type_.to_owned(),
        status: if value { "True" } else { "False" }.to_owned(),
        last_transition_time: Some(Time(at)),
        ..PodCondition::default()
    }
}

/// The Pod status: phase, conditions (Ready counts the containers the lab runs: `mysql`), the
/// `mysql` container's state and restarts, the sidecar waiting with [`NOT_RUN_IN_LAB`].
pub fn pod_status(report: &PodReport) -> PodStatus {
    let ready = report.ready();
    let image = |name: &str| report.images.get(name).cloned().unwrap_or_default();
    let (state, started, phase, container_id) = match &report.mysql {
        MysqlState::Waiting { reason, message } => (
            ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(reason.clone()),
                    message: Some(message.clone()),
                }),
                ..ContainerState::default()
            },
            false,
            if report.restart_count > 0 { "Running" } else { "Pending" },
            None,
        ),
        MysqlState::Running { started_at, pid, .. } => (
            ContainerState {
                running: Some(ContainerStateRunning { started_at: Some(Time(*started_at)) }),
                ..ContainerState::default()
            },
            true,
            "Running",
            pid.map(|pid| format!("lab://{pid}")),
        ),
    };
    let last_state = report.last_terminated.as_ref().map(|(at, reason)| ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: 137,
            finished_at: Some(Time(*at)),
            reason: Some(reason.clone()),
            ..ContainerStateTerminated::default()
        }),
        ..ContainerState::default()
    });
    let mysql = ContainerStatus {
        name: containers::MYSQL.to_owned(),
        image: image(containers::MYSQL),
        image_id: String::new(),
        container_id,
        ready,
        restart_count: report.restart_count,
        started: Some(started),
        state: Some(state),
        last_state,
        ..ContainerStatus::default()
    };
    let sidecar = match &report.sidecar {
        None => ContainerStatus {
            name: containers::SIDECAR.to_owned(),
            image: image(containers::SIDECAR),
            image_id: String::new(),
            ready: false,
            restart_count: 0,
            started: Some(false),
            state: Some(ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(NOT_RUN_IN_LAB.to_owned()),
                    message: Some("the lab kubelet runs no sidecar binary".to_owned()),
                }),
                ..ContainerState::default()
            }),
            ..ContainerStatus::default()
        },
        Some(sidecar) => ContainerStatus {
            name: containers::SIDECAR.to_owned(),
            image: image(containers::SIDECAR),
            image_id: String::new(),
            container_id: sidecar.pid.map(|pid| format!("lab://{pid}")),
            // Its readiness probe is `/health`, which checks MySQL only.
            ready: ready && sidecar.started_at.is_some(),
            restart_count: sidecar.restart_count,
            started: Some(sidecar.started_at.is_some()),
            state: Some(match sidecar.started_at {
                Some(at) => ContainerState {
                    running: Some(ContainerStateRunning { started_at: Some(Time(at)) }),
                    ..ContainerState::default()
                },
                None => ContainerState {
                    waiting: Some(ContainerStateWaiting {
                        reason: Some("ContainerCreating".to_owned()),
                        message: None,
                    }),
                    ..ContainerState::default()
                },
            }),
            ..ContainerStatus::default()
        },
    };
    let statuses = std::iter::once(mysql)
        .chain(report.images.contains_key(containers::SIDECAR).then_some(sidecar))
        .collect();
    PodStatus {
        phase: Some(phase.to_owned()),
        conditions: Some(vec![
            condition("PodScheduled", true, report.created_at),
            condition("Initialized", true, report.created_at),
            condition("ContainersReady", ready, report.ready_since),
            condition("Ready", ready, report.ready_since),
        ]),
        container_statuses: Some(statuses),
        host_ip: Some(POD_IP.to_owned()),
        pod_ip: Some(POD_IP.to_owned()),
        pod_ips: Some(vec![PodIP { ip: POD_IP.to_owned() }]),
        start_time: Some(Time(report.created_at)),
        ..PodStatus::default()
    }
}

/// Whether a Pod's status says Ready.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|status| status.conditions.as_ref()).is_some_and(|conditions| {
        conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloodraven_workloads::site_objects;

    fn deployment() -> Deployment {
        let group = bloodraven_crd::fixtures::GroupFixture::three_sites().build();
        let mut deployment = site_objects(&group, "iad").unwrap().deployment;
        deployment.metadata.uid = Some("d-uid".to_owned());
        deployment
    }

    #[test]
    fn the_pod_takes_the_template_and_its_name_follows_the_template() {
        let deployment = deployment();
        let name = pod_name("mysql-orders-iad", &deployment.spec.template);
        assert!(
            name.starts_with("mysql-orders-iad-") && name.len() == "mysql-orders-iad-".len() + 10
        );
        let pod = pod_object(&deployment, &name);
        assert_eq!(pod.metadata.labels, deployment.spec.template.metadata.clone().unwrap().labels);
        assert_eq!(pod.metadata.owner_references.unwrap()[0].uid, "d-uid");
        let mut changed = deployment.spec.template.clone();
        changed.metadata.as_mut().unwrap().annotations = None;
        assert_ne!(name, pod_name("mysql-orders-iad", &changed));
    }

    #[test]
    fn ready_follows_the_mysql_container_and_restarts_are_counted() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let mut report = PodReport {
            created_at: now,
            mysql: MysqlState::Waiting {
                reason: "ContainerCreating".into(),
                message: String::new(),
            },
            restart_count: 0,
            last_terminated: None,
            ready_since: now,
            images: BTreeMap::from([
                ("mysql".to_owned(), "mysql:9.7".to_owned()),
                ("sidecar".to_owned(), "s".to_owned()),
            ]),
            sidecar: None,
        };
        let status = pod_status(&report);
        assert_eq!(status.phase.as_deref(), Some("Pending"));
        let pod = Pod { status: Some(status), ..Pod::default() };
        assert!(!is_ready(&pod));
        report.mysql = MysqlState::Running { started_at: now, pid: Some(7), ready: true };
        report.restart_count = 1;
        report.last_terminated = Some((now, "Error".to_owned()));
        let status = pod_status(&report);
        let mysql = &status.container_statuses.as_ref().unwrap()[0];
        assert_eq!((mysql.ready, mysql.restart_count), (true, 1));
        assert_eq!(mysql.container_id.as_deref(), Some("lab://7"));
        assert!(mysql.last_state.as_ref().unwrap().terminated.is_some());
        let sidecar = &status.container_statuses.as_ref().unwrap()[1];
        assert!(!sidecar.ready);
        assert!(is_ready(&Pod { status: Some(status), ..Pod::default() }));
    }
}
