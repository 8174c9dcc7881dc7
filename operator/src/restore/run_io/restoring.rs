//! Restoring: building and creating the restore Job, and reading its outcome.

use std::collections::BTreeMap;

use bloodraven_crashpoint::Step as CrashStep;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_crd::group::{MysqlFailoverGroupStatus, RestoreInPlaceReason, RestoreInPlaceStatus};
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use serde_json::json;

use super::{RunContext, RunIoError, RunPassed, fail, kube};
use crate::restore::job::{self, RestoreJobInput};

/// The restore Job of this run, or why it cannot be built.
pub(super) async fn build_job(
    ctx: &RunContext<'_>,
    run: &RestoreInPlaceStatus,
    site: &str,
) -> Result<Result<job::RestoreJob, String>, RunIoError> {
    let Some(spec) = ctx.group.spec.restore_in_place.as_ref() else {
        return Ok(Err("spec.restoreInPlace is gone".into()));
    };
    let Some(name) = spec.source.backup_ref.as_ref().map(|r| r.name.clone()) else {
        return Ok(Err(job::RestoreJobError::NoBackupRef.to_string()));
    };
    let backups: Api<MysqlBackup> =
        Api::namespaced(ctx.client.clone(), &ctx.group.namespace().unwrap_or_default());
    let Some(backup) = backups.get_opt(&name).await.map_err(kube("reading the MysqlBackup"))?
    else {
        return Ok(Err(format!(
            "MysqlBackup {name} (spec.restoreInPlace.source.backupRef) does not exist"
        )));
    };
    let Some(site_spec) = ctx.group.spec.sites.iter().find(|s| s.name == site) else {
        return Ok(Err(format!("the target site {site} is not in spec.sites")));
    };
    let mut credentials = BTreeMap::new();
    credentials.insert("username".to_owned(), ByteString(ctx.account.user.clone().into_bytes()));
    credentials
        .insert("password".to_owned(), ByteString(ctx.account.password.clone().into_bytes()));
    let image = ctx
        .group
        .spec
        .sidecar
        .as_ref()
        .and_then(|sidecar| sidecar.image.clone())
        .unwrap_or_else(|| bloodraven_workloads::DEFAULT_SIDECAR_IMAGE.to_owned());
    Ok(job::build(&RestoreJobInput {
        group: ctx.group,
        backup: &backup,
        site: site_spec,
        run_id: run.run_id.as_deref().unwrap_or_default(),
        image,
        operator_credentials: &credentials,
    })
    .map_err(|error| error.to_string()))
}

/// A Job's outcome.
pub(super) fn job_outcome(job: &Job) -> Option<bool> {
    let status = job.status.as_ref()?;
    for condition in status.conditions.iter().flatten() {
        if condition.status == "True" {
            match condition.type_.as_str() {
                "Complete" | "SuccessCriteriaMet" => return Some(true),
                "Failed" | "FailureTarget" => return Some(false),
                _ => {}
            }
        }
    }
    if status.succeeded.unwrap_or(0) > 0 {
        return Some(true);
    }
    if status.failed.unwrap_or(0) > 0 && status.active.unwrap_or(0) == 0 {
        return Some(false);
    }
    None
}

pub(super) async fn restoring(
    ctx: &RunContext<'_>,
    status: &MysqlFailoverGroupStatus,
    run: &RestoreInPlaceStatus,
) -> Result<RunPassed, RunIoError> {
    let _ = status;
    let namespace = ctx.group.namespace().unwrap_or_default();
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    let Some(site) = run.target_site.clone() else { return Ok(RunPassed::Idle) };
    let Some(job_name) = run.job_name.clone() else {
        // jobCreating is durable: create (or find) the Job, then record its name.
        let built = match build_job(ctx, run, &site).await? {
            Ok(built) => built,
            Err(message) => return fail(ctx, run, None, true, message, false).await,
        };
        let name = built.job.metadata.name.clone().unwrap_or_default();
        let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
        match secrets.create(&PostParams::default(), &built.secret).await {
            Ok(_) => {}
            Err(kube::Error::Api(answer)) if answer.code == 409 => {}
            Err(error) => {
                return Err(RunIoError::Kube {
                    what: "creating the restore Job's Secret",
                    source: error,
                });
            }
        }
        ctx.crash(CrashStep::OperatorRestoreBeforeJobCreate);
        match jobs.create(&PostParams::default(), &built.job).await {
            Ok(_) => {}
            Err(kube::Error::Api(answer)) if answer.code == 409 => {}
            Err(kube::Error::Api(answer)) if matches!(answer.code, 400 | 403 | 422) => {
                // Refused outright: the mark is withdrawn, the run never started.
                return fail(
                    ctx,
                    run,
                    Some(RestoreInPlaceReason::RestoreInPlaceRejected),
                    false,
                    format!("the API server refused the restore Job {name}: {}", answer.message),
                    true,
                )
                .await;
            }
            Err(error) => {
                return Err(RunIoError::Kube { what: "creating the restore Job", source: error });
            }
        }
        ctx.crash(CrashStep::OperatorRestoreAfterJobCreate);
        ctx.write(
            json!({ "restoreInPlace": {
                "jobName": name,
                "message": format!("restore Job {name} is loading the dump into {site}"),
            }}),
            "recording the restore Job's name",
        )
        .await?;
        return Ok(RunPassed::Acted);
    };
    let Some(job) = jobs.get_opt(&job_name).await.map_err(kube("reading the restore Job"))? else {
        return fail(
            ctx,
            run,
            Some(RestoreInPlaceReason::RestoreInPlaceJobLost),
            true,
            format!("the restore Job {job_name} disappeared before the run saw it finish; check the primary's data before relying on it"),
            false,
        )
        .await;
    };
    match job_outcome(&job) {
        None => Ok(RunPassed::Idle),
        Some(true) => {
            ctx.write(
                json!({ "restoreInPlace": {
                    "phase": "Resuming",
                    "message": format!("restore Job {job_name} succeeded; releasing the fence"),
                }}),
                "recording Resuming",
            )
            .await?;
            Ok(RunPassed::Acted)
        }
        Some(false) => {
            fail(
                ctx,
                run,
                None,
                true,
                format!("the restore Job {job_name} failed; inspect its log, fix the cause, then bump confirm"),
                false,
            )
            .await
        }
    }
}
