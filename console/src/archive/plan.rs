//! `bloodraven pitr plan <group> --backup <name> (--target <RFC 3339> | --latest)
//! [--exclude-gtids SET] [-o json]`: the restore planner (`bloodraven-pitr`) over the group's
//! archive, read and indexed as pitr-download reads it (`bloodraven-replay`), printing the plan
//! or the refusal the restore would give. Read-only: the store is listed and read, nothing is
//! staged.
//!
//! The backup's metadata comes from the MysqlBackup's status (`gtidExecuted`, `completionTime`
//! as the dump's end, through [`super::backup_meta`], as the archive panel's windows): dump-meta's stamp and `@.done.json` are not read here, so a target in
//! the upload's time after the dump refuses `PITRBackupAfterTarget` where the restore may not.

use std::io::Write;

use anyhow::Context as _;
use bloodraven_crd::{MysqlBackup, MysqlFailoverGroup};
use bloodraven_gtid::GtidSet;
use bloodraven_pitr::{History, Input, Limits, Plan, Refusal, Request, coverage_json};
use bloodraven_store::ObjectStore;

use super::{ArchiveAccess, ArchiveLocation, ArchiveStore, Read, backup_meta, locate, open_store};

/// What to plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanQuery {
    pub namespace: String,
    pub group: String,
    pub backup: String,
    /// RFC 3339; `None`: latest.
    pub target: Option<String>,
    pub exclude_gtids: String,
    pub json: bool,
}

/// The planner's answer, with the archive it read.
#[derive(Debug)]
pub struct PlanAnswer {
    pub archive_id: String,
    pub request: Request,
    pub result: Result<Plan, Refusal>,
}

/// Plans over the archive at `root`. An encrypted archive the console's key cannot open is an
/// error of the command (the console's key, not the restore's answer), naming the archive.
async fn plan_in<S: ObjectStore>(
    store: &S,
    root: &bloodraven_store::ArchiveRoot,
    access: &ArchiveAccess,
    location: &ArchiveLocation,
    backup: (GtidSet, jiff::Timestamp),
    request: Request,
) -> anyhow::Result<PlanAnswer> {
    let opened = super::read(store, root, access, location)
        .await
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("reading the archive {location}"))?;
    let (history, refusal) = match opened {
        Read::Opened(downloaded) => (downloaded.history, None),
        Read::Refused(refusal) => (History::default(), Some(refusal)),
        Read::Locked(error) => return Err(error.into()),
    };
    let meta = backup_meta(backup.0, backup.1, &history.archive_id);
    let result = bloodraven_pitr::plan(Input {
        history: &history,
        open_refusal: refusal.as_ref(),
        backup: &meta,
        request: &request,
        limits: Limits::default(),
    });
    Ok(PlanAnswer { archive_id: history.archive_id.clone(), request, result })
}

/// Reads the group and the backup, plans, and returns the answer.
pub async fn plan(
    client: kube::Client,
    access: &ArchiveAccess,
    query: &PlanQuery,
) -> anyhow::Result<PlanAnswer> {
    let groups: kube::Api<MysqlFailoverGroup> =
        kube::Api::namespaced(client.clone(), &query.namespace);
    let group = groups.get(&query.group).await.with_context(|| {
        format!("reading MysqlFailoverGroup {}/{}", query.namespace, query.group)
    })?;
    let backups: kube::Api<MysqlBackup> = kube::Api::namespaced(client, &query.namespace);
    let backup = backups
        .get(&query.backup)
        .await
        .with_context(|| format!("reading MysqlBackup {}/{}", query.namespace, query.backup))?;
    let status = backup.status.as_ref();
    let gtids = status
        .and_then(|status| status.gtid_executed.as_deref())
        .with_context(|| format!("MysqlBackup {} has no status.gtidExecuted yet", query.backup))?
        .parse::<GtidSet>()
        .with_context(|| format!("MysqlBackup {}: status.gtidExecuted", query.backup))?;
    let completed = status
        .and_then(|status| status.completion_time.as_ref())
        .map(|time| time.0)
        .with_context(|| format!("MysqlBackup {} has not completed", query.backup))?;
    let location = locate(&group).map_err(anyhow::Error::msg).with_context(|| {
        format!("MysqlFailoverGroup {}/{} has no PITR archive", query.namespace, query.group)
    })?;
    let request = Request {
        target: query.target.clone(),
        exclude_gtids: query.exclude_gtids.clone(),
        allow_partial: false,
    };
    match open_store(access, &location).await.map_err(anyhow::Error::msg)? {
        ArchiveStore::Fs(store, root) => {
            plan_in(&store, &root, access, &location, (gtids, completed), request).await
        }
        ArchiveStore::S3(store, root) => {
            plan_in(&store, &root, access, &location, (gtids, completed), request).await
        }
    }
}

/// Prints `answer` as text or as `coverage.json` (version 2).
pub fn print(answer: &PlanAnswer, json: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    if json {
        let document = coverage_json(&answer.archive_id, &answer.request, &answer.result);
        serde_json::to_writer_pretty(&mut *out, &document)?;
        writeln!(out)?;
        return Ok(());
    }
    match &answer.result {
        Err(refusal) => {
            writeln!(out, "refused: {refusal}")?;
            if let Some(full) = &refusal.full_set {
                writeln!(out, "full set: {full}")?;
            }
        }
        Ok(plan) => {
            writeln!(out, "outcome: {:?}", plan.outcome)?;
            if let Some(witness) = &plan.witness {
                writeln!(
                    out,
                    "witness: {} ({}/{}, committed {})",
                    witness.gtid,
                    witness.site,
                    witness.file,
                    bloodraven_archive::format_timestamp(witness.committed)
                )?;
            }
            writeln!(out, "segments: {}", plan.segments.len())?;
            for (k, segment) in plan.segments.iter().enumerate() {
                writeln!(
                    out,
                    "  {}. {}/{} --include-gtids={} ({} transactions)",
                    k + 1,
                    segment.site,
                    segment.file,
                    segment.gtids.to_compact_string(),
                    segment.transactions
                )?;
            }
            writeln!(out, "certified: {}", plan.certified.to_compact_string())?;
            if !plan.excluded_divergent.is_empty() {
                writeln!(
                    out,
                    "excluded divergent: {}",
                    plan.excluded_divergent.to_compact_string()
                )?;
            }
            if !plan.on_history_excluded.is_empty() {
                writeln!(
                    out,
                    "on-history exclusions: {}",
                    plan.on_history_excluded.to_compact_string()
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(all(test, feature = "lab"))]
#[path = "plan_tests.rs"]
mod tests;
