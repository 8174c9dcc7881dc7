//! `bloodraven doctor [group] [-A] [-o json|yaml]`: triage. Each finding of the verdict
//! ([`crate::verdict`], the one truth; nothing is recomputed here) with its severity and the
//! runbook to open: the first runbook the finding's kind points to whose `appliesWhen` holds
//! for the group (the same evaluation the console's runbook player ranks by).
//!
//! Exit codes as `status`: 0 done, 1 error, 2 when `--fail-on` is given and a group has a
//! finding at or above it.

use std::io::Write;

use bloodraven_crd::{MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};
use bloodraven_facts::verdict::{Finding, Kind, Severity, Verdict};
use bloodraven_runbook::{GroupView, Runbook, applicable};
use jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::{Value, json};

use crate::cli::{DoctorArgs, DoctorFormat};
use crate::decode::{self, Unreadable};
use crate::status::{Outcome, Scope, kubectl_error};

/// The runbooks a finding of `kind` may be answered by, most specific first. The first one
/// that applies to the group is the one to open.
pub fn candidates(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::AutomationHeld => &["automation-hold"],
        Kind::SplitBrain => {
            &["automation-hold", "promoted-unconfirmed", "manual-recovery-required"]
        }
        Kind::NoWriter | Kind::SiteUnreachable | Kind::SiteStale => {
            &["promoted-unconfirmed", "source-left-fenced", "no-primary", "release-offline-fence"]
        }
        Kind::SiteDiverged => &["diverged-follower", "manual-recovery-required"],
        Kind::PlannedFailoverInFlight => &["planned-failover-during"],
        Kind::PlannedFailoverFailed => {
            &["source-left-fenced", "promoted-unconfirmed", "planned-failover-after"]
        }
        Kind::RecloneHeld => &["held-reclone-queue"],
        Kind::RestoreRefused => &[
            "pitr-divergent-history",
            "pitr-archive-gap",
            "pitr-backup-after-target",
            "pitr-unsafe-history",
            "failed-bootstrap-restore",
        ],
        Kind::RestoreInPlaceFailed => &["release-offline-fence", "held-reclone-queue"],
        Kind::ArchiveNotReady | Kind::ArchiveDamaged | Kind::ArchiverFailing => {
            &["archive-not-ready", "pitr-unsafe-history"]
        }
        Kind::ArchiveStale
        | Kind::NoStatus
        | Kind::WriterMoved
        | Kind::NonCandidateWritable
        | Kind::OperatorSilent
        | Kind::RecloneStuck
        | Kind::RecloneDraining
        | Kind::BackupFailing
        | Kind::BackupTooOld
        | Kind::VerificationFailed
        | Kind::SummaryDisagrees => &[],
    }
}

/// One finding and the runbook to open for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The verdict's finding, unchanged.
    pub finding: Finding,
    /// The runbook's id, when one applies.
    pub runbook: Option<String>,
}

/// The doctor's answer for one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnosis {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// Worst first, as the verdict orders them.
    pub entries: Vec<Entry>,
    /// Every runbook that applies, ranked (empty for a group without findings: not evaluated).
    pub runbooks: Vec<String>,
    /// Runbooks whose `appliesWhen` failed to evaluate.
    pub errors: Vec<String>,
}

impl Diagnosis {
    /// The worst severity.
    pub fn worst(&self) -> Option<Severity> {
        self.entries.iter().map(|entry| entry.finding.severity).max()
    }
}

/// The diagnosis of one group from its verdict. Runbooks are evaluated only for a group with
/// findings (a fleet is mostly healthy).
pub fn diagnose(group: &MysqlFailoverGroup, verdict: &Verdict, runbooks: &[Runbook]) -> Diagnosis {
    let mut diagnosis = Diagnosis {
        namespace: group.metadata.namespace.clone().unwrap_or_default(),
        name: group.metadata.name.clone().unwrap_or_default(),
        entries: Vec::with_capacity(verdict.findings.len()),
        runbooks: Vec::new(),
        errors: Vec::new(),
    };
    if verdict.findings.is_empty() {
        return diagnosis;
    }
    let ranked = applicable(runbooks, &GroupView::of(group));
    diagnosis.runbooks = ranked.runbooks.iter().map(|runbook| runbook.id.clone()).collect();
    diagnosis.errors = ranked.errors.iter().map(ToString::to_string).collect();
    for finding in &verdict.findings {
        let runbook = candidates(finding.kind)
            .iter()
            .find(|id| diagnosis.runbooks.iter().any(|applies| applies == *id))
            .map(|id| (*id).to_owned());
        diagnosis.entries.push(Entry { finding: finding.clone(), runbook });
    }
    diagnosis
}

/// Verdicts and diagnoses for decoded groups.
pub fn diagnose_all(
    groups: &[MysqlFailoverGroup],
    backups: &[MysqlBackup],
    verifications: &[MysqlBackupVerification],
    runbooks: &[Runbook],
    now: Timestamp,
) -> Vec<Diagnosis> {
    groups
        .iter()
        .map(|group| {
            let verdict = crate::verdict::of(group, backups, verifications, now);
            diagnose(group, &verdict, runbooks)
        })
        .collect()
}

/// The table: one row a finding. Groups without findings are counted in the last line.
pub fn table(diagnoses: &[Diagnosis], unreadable: &[Unreadable], namespaces: bool) -> String {
    let mut rows: Vec<[String; 6]> = Vec::new();
    for diagnosis in diagnoses {
        for entry in &diagnosis.entries {
            let finding = &entry.finding;
            rows.push([
                diagnosis.namespace.clone(),
                diagnosis.name.clone(),
                format!("{} {}", finding.severity.marker(), finding.severity.as_str()),
                finding.kind.as_str().to_owned(),
                entry.runbook.clone().unwrap_or_else(|| "-".to_owned()),
                finding.next_action(),
            ]);
        }
    }
    let header = ["NAMESPACE", "GROUP", "SEVERITY", "FINDING", "RUNBOOK", "CAUSE / NEXT"];
    let skip = usize::from(!namespaces);
    let mut widths = [0usize; 6];
    for row in std::iter::once(header.map(str::to_owned)).chain(rows.iter().cloned()) {
        for (width, cell) in widths.iter_mut().zip(row.iter()) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |row: &[String; 6]| -> String {
        let mut text = String::new();
        for (index, cell) in row.iter().enumerate().skip(skip) {
            if index == 5 {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}   ", width = widths[index]));
            }
        }
        format!("{}\n", text.trim_end())
    };
    let mut out = String::new();
    if !rows.is_empty() {
        out.push_str(&line(&header.map(str::to_owned)));
        for row in &rows {
            out.push_str(&line(row));
        }
    }
    let sick = diagnoses.iter().filter(|d| !d.entries.is_empty()).count();
    out.push_str(&format!(
        "{} group(s), {sick} with findings, {} healthy\n",
        diagnoses.len(),
        diagnoses.len() - sick
    ));
    out.push_str(&crate::report::unreadable(unreadable));
    out
}

/// The JSON form: `{"groups": [{namespace, name, worst, findings: [... runbook], runbooks}],
/// "unreadable": [...]}`.
pub fn to_json(diagnoses: &[Diagnosis], unreadable: &[Unreadable]) -> Value {
    let groups: Vec<Value> = diagnoses
        .iter()
        .map(|diagnosis| {
            json!({
                "namespace": diagnosis.namespace,
                "name": diagnosis.name,
                "worst": diagnosis.worst().map(Severity::as_str),
                "findings": diagnosis.entries.iter().map(|entry| json!({
                    "severity": entry.finding.severity.as_str(),
                    "kind": entry.finding.kind.as_str(),
                    "site": entry.finding.site,
                    "cause": entry.finding.cause,
                    "fact": entry.finding.fact,
                    "action": entry.finding.action,
                    "command": entry.finding.command,
                    "runbook": entry.runbook,
                })).collect::<Vec<_>>(),
                "runbooks": diagnosis.runbooks,
                "runbookErrors": diagnosis.errors,
            })
        })
        .collect();
    let unreadable: Vec<Value> = unreadable
        .iter()
        .map(|u| {
            json!({"kind": u.kind, "namespace": u.namespace, "name": u.name, "path": u.path, "error": u.error})
        })
        .collect();
    json!({ "groups": groups, "unreadable": unreadable })
}

/// Everything after the list arrived: decode, judge, diagnose and render. What the benchmark
/// measures.
pub fn report(
    objects: Vec<DynamicObject>,
    backups: &[MysqlBackup],
    verifications: &[MysqlBackupVerification],
    runbooks: &[Runbook],
    format: DoctorFormat,
    namespaces: bool,
    now: Timestamp,
) -> anyhow::Result<(String, Outcome)> {
    let (groups, unreadable) =
        decode::decode_all::<MysqlFailoverGroup>("MysqlFailoverGroup", objects);
    let diagnoses = diagnose_all(&groups, backups, verifications, runbooks, now);
    let outcome = Outcome { worst: diagnoses.iter().filter_map(Diagnosis::worst).max() };
    let text = match format {
        DoctorFormat::Table => table(&diagnoses, &unreadable, namespaces),
        DoctorFormat::Json => {
            format!("{}\n", serde_json::to_string_pretty(&to_json(&diagnoses, &unreadable))?)
        }
        DoctorFormat::Yaml => serde_norway::to_string(&to_json(&diagnoses, &unreadable))?,
    };
    Ok((text, outcome))
}

/// Reads the groups in scope (and their backups and verifications) and prints the diagnosis.
pub async fn run(
    client: Client,
    scope: &Scope,
    args: &DoctorArgs,
    now: Timestamp,
    out: &mut impl Write,
    err: &mut impl Write,
) -> anyhow::Result<Outcome> {
    let runbooks = bloodraven_runbook::shipped()?;
    let api = |resource: &ApiResource| -> Api<DynamicObject> {
        match scope {
            Scope::Namespace(namespace) => {
                Api::namespaced_with(client.clone(), namespace, resource)
            }
            Scope::All => Api::all_with(client.clone(), resource),
        }
    };
    if let (Scope::All, Some(_)) = (scope, &args.group) {
        return Err(crate::status::KubectlError(
            "error: a resource cannot be retrieved by name across all namespaces".to_owned(),
        )
        .into());
    }
    let raw = api(&ApiResource::erase::<MysqlFailoverGroup>(&()));
    let objects = match &args.group {
        Some(name) => vec![raw.get(name).await.map_err(|error| kubectl_error(error, Some(name)))?],
        None => {
            raw.list(&ListParams::default())
                .await
                .map_err(|error| kubectl_error(error, None))?
                .items
        }
    };
    if objects.is_empty() {
        writeln!(
            err,
            "no groups {}",
            match scope {
                Scope::Namespace(namespace) => format!("in namespace {namespace}"),
                Scope::All => "in any namespace".to_owned(),
            }
        )?;
        return Ok(Outcome::default());
    }
    let backups: Vec<MysqlBackup> =
        related(api(&ApiResource::erase::<MysqlBackup>(&())), "MysqlBackup").await;
    let verifications: Vec<MysqlBackupVerification> = related(
        api(&ApiResource::erase::<MysqlBackupVerification>(&())),
        "MysqlBackupVerification",
    )
    .await;
    let (text, outcome) = report(
        objects,
        &backups,
        &verifications,
        &runbooks,
        args.output,
        *scope == Scope::All,
        now,
    )?;
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(outcome)
}

/// A related kind in scope; a list that fails (RBAC, an older CRD) is logged and judged without.
async fn related<K: serde::de::DeserializeOwned>(api: Api<DynamicObject>, kind: &str) -> Vec<K> {
    match api.list(&ListParams::default()).await {
        Ok(objects) => decode::decode_all::<K>(kind, objects.items).0,
        Err(error) => {
            tracing::warn!(kind, %error, "listing for the doctor failed; judging without them");
            Vec::new()
        }
    }
}

#[cfg(all(test, feature = "lab"))]
mod tests;
