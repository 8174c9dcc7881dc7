//! `batch/v1` CronJobs: the lab's stand-in for kube-controller-manager's CronJob controller,
//! so a CronJob the operator renders fires in the lab as it would in a cluster. Every
//! [`CronConfig::tick`] the kubelet lists the CronJobs it watches and, for each one not
//! suspended whose schedule (five fields, in its `timeZone`, default UTC) has a time in
//! `(lastScheduleTime, now]`, creates a Job from `jobTemplate` for the latest such time and
//! records it in `status.lastScheduleTime` (the Job runner then runs it like any other Job).
//!
//! | Kubernetes | lab |
//! | --- | --- |
//! | Job name `<cronjob>-<scheduled time in minutes since the epoch>`, owned by the CronJob, annotation `batch.kubernetes.io/cronjob-scheduled-timestamp` | the same |
//! | missed runs: only the latest is started | the same (at most [`MAX_MISSED`] are walked) |
//! | `concurrencyPolicy: Forbid`: no new run while one is active | the same; `Replace` and `Allow` behave as `Allow` |
//! | wall-clock time | scaled: [`CronConfig::speedup`] cron minutes per real minute from the kubelet's start, so `* * * * *` fires every `60 / speedup` seconds |
//! | `successfulJobsHistoryLimit`, `failedJobsHistoryLimit`, `startingDeadlineSeconds` | not applied (runs are kept) |

use std::time::Duration;

use croner::Cron;
use croner::parser::{CronParser, Seconds};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::watch;

/// The most missed schedule times walked per CronJob and pass.
pub const MAX_MISSED: usize = 1000;
/// The annotation a run carries: its scheduled time.
pub const SCHEDULED_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// How the lab runs CronJobs.
#[derive(Debug, Clone)]
pub struct CronConfig {
    /// Cron minutes per real minute (1: real time).
    pub speedup: u32,
    /// How often CronJobs are checked (real time).
    pub tick: Duration,
}

impl CronConfig {
    /// Real time, checked every second.
    pub fn new() -> Self {
        Self { speedup: 1, tick: Duration::from_secs(1) }
    }

    /// `speedup` cron minutes per real minute.
    pub fn speedup(mut self, speedup: u32) -> Self {
        self.speedup = speedup.max(1);
        self
    }
}

impl Default for CronConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// A bad schedule.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("schedule {schedule:?} is not a five-field cron expression: {message}")]
    Cron { schedule: String, message: String },
    #[error("timeZone {zone:?} is not a known IANA zone: {message}")]
    Zone { zone: String, message: String },
}

/// The latest time of `schedule` (in `time_zone`, default UTC) in `(last, now]`, if any.
pub fn due(
    schedule: &str,
    time_zone: Option<&str>,
    last: Timestamp,
    now: Timestamp,
) -> Result<Option<Timestamp>, ScheduleError> {
    let cron: Cron =
        CronParser::builder().seconds(Seconds::Disallowed).build().parse(schedule).map_err(
            |error| ScheduleError::Cron {
                schedule: schedule.to_owned(),
                message: error.to_string(),
            },
        )?;
    let zone = match time_zone.filter(|z| !z.is_empty()) {
        Some(name) => TimeZone::get(name).map_err(|error| ScheduleError::Zone {
            zone: name.to_owned(),
            message: error.to_string(),
        })?,
        None => TimeZone::UTC,
    };
    let mut cursor = last.to_zoned(zone);
    let mut latest = None;
    for _ in 0..MAX_MISSED {
        let Ok(next) = cron.find_next_occurrence(&cursor, false) else { break };
        if next.timestamp() > now {
            break;
        }
        latest = Some(next.timestamp());
        cursor = next;
    }
    Ok(latest)
}

/// The scaled clock: cron time runs `speedup` times as fast as real time from `origin`.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Timestamp,
    speedup: i64,
}

impl Clock {
    /// A clock that starts at `origin` (real and cron time agree there).
    pub fn new(origin: Timestamp, speedup: u32) -> Self {
        Self { origin, speedup: i64::from(speedup.max(1)) }
    }

    /// The cron time at real time `real`.
    pub fn cron_time(&self, real: Timestamp) -> Timestamp {
        let elapsed = real.duration_since(self.origin);
        let scaled = SignedDuration::from_millis(
            elapsed
                .as_millis()
                .saturating_mul(i128::from(self.speedup))
                .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
        );
        self.origin.checked_add(scaled).unwrap_or(real)
    }
}

/// The run of `cronjob` scheduled at `at`.
pub fn run_job(cronjob: &CronJob, at: Timestamp) -> Job {
    let name = cronjob.metadata.name.clone().unwrap_or_default();
    let template = cronjob.spec.job_template.clone();
    let template_meta = template.metadata.unwrap_or_default();
    let mut annotations = template_meta.annotations.unwrap_or_default();
    annotations.insert(SCHEDULED_ANNOTATION.to_owned(), at.to_string());
    Job {
        metadata: ObjectMeta {
            name: Some(format!("{name}-{}", at.as_second().div_euclid(60))),
            namespace: cronjob.metadata.namespace.clone(),
            labels: template_meta.labels,
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".to_owned(),
                kind: "CronJob".to_owned(),
                name,
                uid: cronjob.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    }
}

fn finished(job: &Job) -> bool {
    job.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|conditions| {
        conditions
            .iter()
            .any(|c| c.status == "True" && (c.type_ == "Complete" || c.type_ == "Failed"))
    })
}

/// The loop: one pass every tick until `shutdown`.
pub(crate) async fn run(
    client: kube::Client,
    namespace: Option<String>,
    config: CronConfig,
    mut shutdown: watch::Receiver<bool>,
) {
    let clock = Clock::new(Timestamp::now(), config.speedup);
    loop {
        if let Err(error) = pass(&client, namespace.as_deref(), &clock).await {
            tracing::debug!(%error, "cronjob pass failed");
        }
        tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => return,
            () = tokio::time::sleep(config.tick) => {}
        }
    }
}

async fn pass(client: &kube::Client, namespace: Option<&str>, clock: &Clock) -> kube::Result<()> {
    let (cronjobs, jobs): (Api<CronJob>, Api<Job>) = match namespace {
        Some(namespace) => {
            (Api::namespaced(client.clone(), namespace), Api::namespaced(client.clone(), namespace))
        }
        None => (Api::all(client.clone()), Api::all(client.clone())),
    };
    let now = clock.cron_time(Timestamp::now());
    let all_jobs = jobs.list(&ListParams::default()).await?.items;
    for cronjob in cronjobs.list(&ListParams::default()).await?.items {
        if cronjob.spec.suspend == Some(true) || cronjob.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let (Some(name), Some(ns), Some(uid)) = (
            cronjob.metadata.name.clone(),
            cronjob.metadata.namespace.clone(),
            cronjob.metadata.uid.clone(),
        ) else {
            continue;
        };
        let last = cronjob
            .status
            .as_ref()
            .and_then(|s| s.last_schedule_time.as_ref())
            .map(|t| t.0)
            .or_else(|| cronjob.metadata.creation_timestamp.as_ref().map(|t| clock.cron_time(t.0)))
            .unwrap_or(now);
        let at = match due(&cronjob.spec.schedule, cronjob.spec.time_zone.as_deref(), last, now) {
            Ok(Some(at)) => at,
            Ok(None) => continue,
            Err(error) => {
                tracing::warn!(namespace = %ns, cronjob = %name, %error, "cronjob not run");
                continue;
            }
        };
        let active: Vec<&Job> = all_jobs
            .iter()
            .filter(|job| job.metadata.namespace.as_deref() == Some(ns.as_str()))
            .filter(|job| job.metadata.owner_references.iter().flatten().any(|o| o.uid == uid))
            .filter(|job| !finished(job))
            .collect();
        if cronjob.spec.concurrency_policy.as_deref() == Some("Forbid") && !active.is_empty() {
            continue;
        }
        let job = run_job(&cronjob, at);
        let api: Api<Job> = Api::namespaced(client.clone(), &ns);
        match api.create(&PostParams::default(), &job).await {
            Ok(_) => {
                tracing::info!(namespace = %ns, cronjob = %name, job = ?job.metadata.name, "cronjob fired")
            }
            Err(kube::Error::Api(response)) if response.code == 409 => {}
            Err(error) => return Err(error),
        }
        let patch = json!({ "status": { "lastScheduleTime": Time(at) } });
        Api::<CronJob>::namespaced(client.clone(), &ns)
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn the_latest_missed_time_is_due() {
        let last = ts("2026-01-01T00:00:00Z");
        assert_eq!(due("* * * * *", None, last, ts("2026-01-01T00:00:30Z")).unwrap(), None);
        assert_eq!(
            due("* * * * *", None, last, ts("2026-01-01T00:03:10Z")).unwrap(),
            Some(ts("2026-01-01T00:03:00Z"))
        );
        assert_eq!(
            due("0 2 * * *", None, last, ts("2026-01-03T12:00:00Z")).unwrap(),
            Some(ts("2026-01-03T02:00:00Z"))
        );
    }

    #[test]
    fn the_time_zone_moves_the_run() {
        let last = ts("2026-01-01T00:00:00Z");
        // 02:00 in Los Angeles (UTC-8 in January) is 10:00 UTC.
        assert_eq!(
            due("0 2 * * *", Some("America/Los_Angeles"), last, ts("2026-01-01T12:00:00Z"))
                .unwrap(),
            Some(ts("2026-01-01T10:00:00Z"))
        );
    }

    #[test]
    fn bad_schedules_and_zones_are_errors() {
        let last = ts("2026-01-01T00:00:00Z");
        assert!(due("not cron", None, last, last).is_err());
        assert!(due("* * * * * *", None, last, last).is_err(), "six fields are not Kubernetes'");
        assert!(due("* * * * *", Some("Mars/Olympus"), last, last).is_err());
    }

    #[test]
    fn the_scaled_clock_runs_faster() {
        let origin = ts("2026-01-01T00:00:00Z");
        let clock = Clock::new(origin, 30);
        assert_eq!(clock.cron_time(ts("2026-01-01T00:00:02Z")), ts("2026-01-01T00:01:00Z"));
    }
}
