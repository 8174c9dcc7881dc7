//! Backup schedules (pure): each `spec.backup.schedules[]` entry becomes a CronJob owned by the
//! group, named `mysql-<group>-backup-<schedule>` (over 52 characters: the first 43, `-` and an
//! 8-character hash), with the schedule's cron expression, `timeZone` (default `Etc/UTC`) and
//! `suspend`. Each run's Job runs `bloodraven-sidecar scheduled-backup`; the operator turns every
//! run (a Job carrying [`names::SCHEDULE_LABEL`]) into one MysqlBackup named after the Job
//! ([`backup_for_run`]), so a re-run pod, a restarted operator or a stale cache converge on
//! one backup per run, and the run's pods need no Kubernetes credentials.

use std::collections::BTreeMap;

use bloodraven_backup::names;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_crd::group::{BackupSchedule, MysqlFailoverGroup};
use bloodraven_workloads::labels;
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, Job, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, PodSecurityContext, PodSpec, PodTemplateSpec, SeccompProfile,
    SecurityContext,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::json;

use super::job::env;

/// The profile of a run (a label on the CronJob, its Jobs and the MysqlBackups it makes).
pub const PROFILE_LABEL: &str = "bloodraven.shipstream.io/backup-profile";
/// The annotation marking a run whose MysqlBackup was created (so retention's delete is not
/// undone by the next pass).
pub const CREATED_ANNOTATION: &str = "bloodraven.shipstream.io/backup-created";
/// The annotation with the hash of the rendered CronJob spec (applied only when it changes).
pub const SPEC_HASH_ANNOTATION: &str = "bloodraven.shipstream.io/spec-hash";
/// The default `timeZone`.
pub const DEFAULT_TIME_ZONE: &str = "Etc/UTC";

fn owner(group: &MysqlFailoverGroup) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: "shipstream.io/v1alpha1".to_owned(),
        kind: "MysqlFailoverGroup".to_owned(),
        name: group.metadata.name.clone()?,
        uid: group.metadata.uid.clone()?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

fn run_labels(group: &str, schedule: &BackupSchedule) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::MANAGED_BY.to_owned(), labels::MANAGER.to_owned()),
        (labels::GROUP.to_owned(), group.to_owned()),
        (names::SCHEDULE_LABEL.to_owned(), schedule.name.clone()),
        (PROFILE_LABEL.to_owned(), schedule.profile_name.clone()),
    ])
}

/// The CronJob of `schedule` in `group`; `image` has the sidecar binary.
pub fn cronjob(group: &MysqlFailoverGroup, schedule: &BackupSchedule, image: &str) -> CronJob {
    let group_name = group.metadata.name.clone().unwrap_or_default();
    let run_labels = run_labels(&group_name, schedule);
    let runtime_default =
        || Some(SeccompProfile { type_: "RuntimeDefault".to_owned(), localhost_profile: None });
    let container = Container {
        name: "schedule".to_owned(),
        image: Some(image.to_owned()),
        command: Some(vec!["bloodraven-sidecar".to_owned(), "scheduled-backup".to_owned()]),
        env: Some(vec![
            env("BLOODRAVEN_GROUP", group_name.clone()),
            env("BLOODRAVEN_SCHEDULE", schedule.name.clone()),
            env("BLOODRAVEN_PROFILE", schedule.profile_name.clone()),
        ]),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            capabilities: Some(Capabilities { drop: Some(vec!["ALL".to_owned()]), add: None }),
            seccomp_profile: runtime_default(),
            ..SecurityContext::default()
        }),
        ..Container::default()
    };
    let spec = CronJobSpec {
        schedule: schedule.schedule.clone(),
        time_zone: Some(schedule.time_zone.clone().unwrap_or_else(|| DEFAULT_TIME_ZONE.to_owned())),
        suspend: Some(schedule.suspend.unwrap_or(false)),
        concurrency_policy: Some("Forbid".to_owned()),
        successful_jobs_history_limit: Some(3),
        failed_jobs_history_limit: Some(1),
        job_template: JobTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(run_labels.clone()),
                ..ObjectMeta::default()
            }),
            spec: Some(JobSpec {
                backoff_limit: Some(0),
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(run_labels.clone()),
                        ..ObjectMeta::default()
                    }),
                    spec: Some(PodSpec {
                        restart_policy: Some("Never".to_owned()),
                        containers: vec![container],
                        security_context: Some(PodSecurityContext {
                            run_as_non_root: Some(true),
                            run_as_user: Some(27),
                            run_as_group: Some(27),
                            seccomp_profile: runtime_default(),
                            ..PodSecurityContext::default()
                        }),
                        ..PodSpec::default()
                    }),
                },
                ..JobSpec::default()
            }),
        },
        ..CronJobSpec::default()
    };
    let hash = names::hash8(&json!(spec).to_string());
    CronJob {
        metadata: ObjectMeta {
            name: Some(names::cronjob_name(&group_name, &schedule.name)),
            namespace: group.metadata.namespace.clone(),
            labels: Some(run_labels),
            annotations: Some(BTreeMap::from([(SPEC_HASH_ANNOTATION.to_owned(), hash)])),
            owner_references: owner(group).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    }
}

/// Every CronJob `group` should have.
pub fn desired(group: &MysqlFailoverGroup, image: &str) -> Vec<CronJob> {
    group
        .spec
        .backup
        .iter()
        .flat_map(|backup| backup.schedules.iter())
        .map(|schedule| cronjob(group, schedule, image))
        .collect()
}

/// The MysqlBackup of a schedule run (a Job carrying the schedule's labels), or `None` for a
/// Job that is not a run or was already turned into one.
pub fn backup_for_run(job: &Job) -> Option<MysqlBackup> {
    let labels = job.metadata.labels.as_ref()?;
    let schedule = labels.get(names::SCHEDULE_LABEL)?;
    let group = labels.get(labels::GROUP)?;
    let profile = labels.get(PROFILE_LABEL)?;
    let created =
        job.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(CREATED_ANNOTATION));
    if created {
        return None;
    }
    let name = job.metadata.name.clone()?;
    serde_json::from_value(json!({
        "apiVersion": "shipstream.io/v1alpha1",
        "kind": "MysqlBackup",
        "metadata": {
            "name": name,
            "namespace": job.metadata.namespace,
            "labels": {
                labels::MANAGED_BY: labels::MANAGER,
                labels::GROUP: group,
                names::SCHEDULE_LABEL: schedule,
            },
            "annotations": { names::ATTEMPT_ANNOTATION: "1" },
        },
        "spec": { "failoverGroupRef": { "name": group }, "profileName": profile },
    }))
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(schedules: serde_json::Value) -> MysqlFailoverGroup {
        serde_json::from_value(json!({
            "apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlFailoverGroup",
            "metadata": { "name": "orders", "namespace": "orders", "uid": "g-1" },
            "spec": {
                "sites": [],
                "backup": {
                    "profiles": [{ "name": "p", "storage": { "type": "PVC", "pvc": { "claimName": "c" } } }],
                    "schedules": schedules,
                },
            },
        }))
        .unwrap()
    }

    #[test]
    fn each_schedule_becomes_a_cronjob_with_the_spec_name_and_time_zone() {
        let group = group(json!([
            { "name": "nightly", "profileName": "p", "schedule": "0 2 * * *", "timeZone": "America/Los_Angeles" },
            { "name": "hourly", "profileName": "p", "schedule": "0 * * * *", "suspend": true },
        ]));
        let cronjobs = desired(&group, "img");
        assert_eq!(cronjobs.len(), 2);
        let nightly = &cronjobs[0];
        assert_eq!(nightly.metadata.name.as_deref(), Some("mysql-orders-backup-nightly"));
        let spec = &nightly.spec;
        assert_eq!(spec.schedule, "0 2 * * *");
        assert_eq!(spec.time_zone.as_deref(), Some("America/Los_Angeles"));
        assert_eq!(spec.concurrency_policy.as_deref(), Some("Forbid"));
        let owner = &nightly.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("MysqlFailoverGroup", "g-1"));
        let hourly = &cronjobs[1].spec;
        assert_eq!(hourly.time_zone.as_deref(), Some("Etc/UTC"));
        assert_eq!(hourly.suspend, Some(true));
        let labels = hourly.job_template.metadata.as_ref().unwrap().labels.as_ref().unwrap();
        assert_eq!(labels[names::SCHEDULE_LABEL], "hourly");
    }

    #[test]
    fn a_long_name_is_cut_to_52_characters() {
        let group = group(json!([
            { "name": "a-very-long-schedule-name-for-the-nightly-run", "profileName": "p", "schedule": "0 2 * * *" },
        ]));
        let name = desired(&group, "img")[0].metadata.name.clone().unwrap();
        assert_eq!(name.len(), 52, "{name}");
    }

    #[test]
    fn a_run_becomes_one_backup_named_after_its_job_once() {
        let group =
            group(json!([{ "name": "nightly", "profileName": "p", "schedule": "* * * * *" }]));
        let template = desired(&group, "img")[0].spec.clone().job_template;
        let mut job = Job {
            metadata: ObjectMeta {
                name: Some("mysql-orders-backup-nightly-29000000".into()),
                namespace: Some("orders".into()),
                labels: template.metadata.unwrap().labels,
                ..ObjectMeta::default()
            },
            ..Job::default()
        };
        let backup = backup_for_run(&job).expect("a backup");
        assert_eq!(backup.metadata.name.as_deref(), Some("mysql-orders-backup-nightly-29000000"));
        assert_eq!(backup.spec.profile_name, "p");
        assert_eq!(backup.spec.failover_group_ref.name, "orders");
        assert_eq!(backup.metadata.labels.unwrap()[names::SCHEDULE_LABEL], "nightly");
        job.metadata.annotations =
            Some(BTreeMap::from([(CREATED_ANNOTATION.into(), "true".into())]));
        assert!(backup_for_run(&job).is_none());
    }
}
