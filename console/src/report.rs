//! The `status` verb's text: pure functions over the CRD types and `now`.

use std::fmt::Write as _;

use bloodraven_crd::annotations::ACKNOWLEDGE_PLANNED_FAILOVER_HOLD;
use bloodraven_crd::catalog::Kind;
use bloodraven_crd::group::{
    PitrStatus, PlannedFailoverHold, PlannedFailoverStatus, RestoreInPlaceStatus, RestoreReclones,
    RestoreStatus,
};
use bloodraven_crd::{ConditionType, MysqlFailoverGroup};
use bloodraven_facts::verdict::Verdict;
use jiff::Timestamp;

use crate::summary::{self, NONE};

/// Columns of the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListStyle {
    /// `[NAMESPACE] NAME ACTIVE READY SITES PLANNED AGE`.
    Table,
    /// Every column, including the reclone queue, restore and archive.
    Wide,
}

/// Lays out rows as tabwriter does with 2-space padding: each column as wide as its widest
/// cell, the last column unpadded.
pub fn columns(rows: &[Vec<String>]) -> String {
    let width_count = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; width_count];
    for row in rows {
        for (index, cell) in row.iter().enumerate() {
            widths[index] = widths[index].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (index, cell) in row.iter().enumerate() {
            if index + 1 == row.len() {
                line.push_str(cell);
            } else {
                let pad = widths[index] - cell.chars().count() + 2;
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The list of groups, sorted by namespace then name.
pub fn list(
    groups: &[MysqlFailoverGroup],
    now: Timestamp,
    style: ListStyle,
    all_namespaces: bool,
) -> String {
    let judged: Vec<(&MysqlFailoverGroup, Option<&Verdict>)> =
        groups.iter().map(|group| (group, None)).collect();
    list_judged(&judged, now, style, all_namespaces, true)
}

/// The one word `status` prints for a verdict: `ok`, `info`, `warning` or `critical` (the
/// TUI shows the same word after its marker).
pub fn verdict_word(verdict: &Verdict) -> &'static str {
    verdict.worst().map_or("ok", bloodraven_facts::verdict::Severity::as_str)
}

/// The list of groups with their verdicts: a `VERDICT` column after `READY`, and with `Wide`
/// the worst finding's cause last (never cut: the last column is not padded). Without
/// `headers`, the header row is left out (`--no-headers`).
pub fn list_judged(
    groups: &[(&MysqlFailoverGroup, Option<&Verdict>)],
    now: Timestamp,
    style: ListStyle,
    all_namespaces: bool,
    headers: bool,
) -> String {
    let judged = groups.iter().any(|(_, verdict)| verdict.is_some());
    let mut sorted: Vec<(&MysqlFailoverGroup, Option<&Verdict>)> = groups.to_vec();
    sorted.sort_by(|(a, _), (b, _)| {
        (a.metadata.namespace.as_deref(), a.metadata.name.as_deref())
            .cmp(&(b.metadata.namespace.as_deref(), b.metadata.name.as_deref()))
    });
    let mut header: Vec<&str> = Vec::new();
    if all_namespaces {
        header.push("NAMESPACE");
    }
    header.extend(["NAME", "ACTIVE", "READY"]);
    if judged {
        header.push("VERDICT");
    }
    header.extend(["SITES", "PLANNED"]);
    if style == ListStyle::Wide {
        header.extend(["LAST-FAILOVER", "RECOVERY", "RECLONES", "RESTORE", "ARCHIVE"]);
    }
    header.push("AGE");
    if judged && style == ListStyle::Wide {
        header.push("FINDING");
    }
    let mut rows = vec![header.into_iter().map(str::to_owned).collect::<Vec<_>>()];
    for (group, verdict) in sorted {
        let mut row = Vec::new();
        if all_namespaces {
            row.push(group.metadata.namespace.clone().unwrap_or_else(|| NONE.to_owned()));
        }
        row.push(group.metadata.name.clone().unwrap_or_else(|| NONE.to_owned()));
        row.push(summary::active_site(group));
        row.push(summary::ready_with_hold(group));
        if judged {
            row.push(verdict.map_or(NONE, verdict_word).to_owned());
        }
        row.push(summary::site_counts(group).to_string());
        row.push(summary::planned_phase(group));
        if style == ListStyle::Wide {
            row.push(summary::last_failover_age(group, now));
            row.push(summary::recovery(group));
            row.push(summary::reclone_queue(group));
            row.push(summary::restore_phase(group));
            row.push(match verdict {
                // The archive as the facts say, never Verified while a condition disagrees.
                Some(verdict) => verdict.archive.state.clone(),
                None => summary::archive_state(group),
            });
        }
        row.push(summary::age_of(now, group.metadata.creation_timestamp.as_ref()));
        if judged && style == ListStyle::Wide {
            row.push(
                verdict
                    .and_then(|verdict| verdict.problems().next())
                    .map_or_else(|| NONE.to_owned(), |finding| finding.cause.clone()),
            );
        }
        rows.push(row);
    }
    if rows.len() == 1 {
        return "No MysqlFailoverGroups found.\n".to_owned();
    }
    if !headers {
        rows.remove(0);
    }
    columns(&rows)
}

/// The findings of a single-group report: worst first, each with its cause, the fact it rests
/// on, what to do and the command on a line of its own (never wrapped or cut).
pub fn findings(verdict: &Verdict) -> String {
    let mut out = String::new();
    if verdict.findings.is_empty() {
        out.push_str("Verdict:       ok (no finding)\n");
        return out;
    }
    let _ = writeln!(
        out,
        "Verdict:       {} ({} critical, {} warning, {} info)",
        verdict_word(verdict),
        verdict.count(bloodraven_facts::verdict::Severity::Critical),
        verdict.count(bloodraven_facts::verdict::Severity::Warning),
        verdict.count(bloodraven_facts::verdict::Severity::Info),
    );
    for finding in &verdict.findings {
        let _ = writeln!(
            out,
            "  {} {} {}: {}",
            finding.severity.marker(),
            finding.severity.as_str(),
            finding.kind.as_str(),
            finding.cause
        );
        if !finding.fact.is_empty() {
            let _ = writeln!(out, "      fact:  {}", finding.fact);
        }
        if !finding.action.is_empty() {
            let _ = writeln!(out, "      next:  {}", finding.action);
        }
        if let Some(command) = &finding.command {
            let _ = writeln!(out, "      run:   {command}");
        }
    }
    out
}

/// The objects `status` could not decode, after the list: one line each with the path and the
/// decode error. Empty when there are none.
pub fn unreadable(objects: &[crate::decode::Unreadable]) -> String {
    if objects.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nUnreadable ({}): these objects do not decode (a newer or older operator, or a hand edit):\n",
        objects.len()
    );
    for object in objects {
        let _ = writeln!(
            out,
            "  {}/{}  at {}: {}",
            object.namespace, object.name, object.path, object.error
        );
    }
    out
}

/// `  Label:  value` lines with aligned values.
struct Block {
    title: String,
    lines: Vec<(String, String)>,
}

impl Block {
    fn new(title: impl Into<String>) -> Self {
        Self { title: title.into(), lines: Vec::new() }
    }

    fn line(&mut self, label: &str, value: impl Into<String>) {
        self.lines.push((label.to_owned(), value.into()));
    }

    fn render(&self, out: &mut String) {
        let _ = writeln!(out, "{}", self.title);
        let width = self.lines.iter().map(|(label, _)| label.chars().count()).max().unwrap_or(0);
        for (label, value) in &self.lines {
            if label.is_empty() {
                let _ = writeln!(out, "  {:width$}   {value}", "");
            } else {
                let _ = writeln!(
                    out,
                    "  {label}:{:pad$} {value}",
                    "",
                    pad = width - label.chars().count() + 1
                );
            }
        }
    }
}

fn explained(kind: Kind, token: &str) -> String {
    format!("{token} — {}", summary::meaning(kind, token))
}

fn opt(value: Option<&str>) -> String {
    value.map_or_else(|| NONE.to_owned(), str::to_owned)
}

fn time_and_age(
    now: Timestamp,
    time: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
) -> String {
    time.map_or_else(
        || NONE.to_owned(),
        |time| format!("{} ({} ago)", summary::timestamp(time), summary::age(now, time.0)),
    )
}

/// The planned-failover record's lines.
pub fn planned_failover_block(
    record: &PlannedFailoverStatus,
    now: Timestamp,
) -> Vec<(String, String)> {
    let mut block = Block::new("");
    if let Some(run_id) = &record.run_id {
        block.line("Run", run_id.clone());
    }
    if let Some(phase) = &record.phase {
        block.line("Phase", explained(Kind::PlannedFailoverPhase, phase.as_str()));
    }
    block.line(
        "Source -> Target",
        format!("{} -> {}", opt(record.source_site.as_deref()), opt(record.target_site.as_deref())),
    );
    if let Some(admission) = &record.admission {
        if let Some(wait) = &admission.wait_reason {
            block.line("Waiting", explained(Kind::PlannedFailoverWaitReason, wait.as_str()));
        }
        let admitting = record.phase.as_ref().is_some_and(|phase| {
            matches!(phase.as_str(), "Admitting" | "Deferred" | "Pending" | "Validating")
        });
        if let (Some(deadline), true) = (&admission.deadline_time, admitting) {
            block.line(
                "Admission deadline",
                format!(
                    "{} ({})",
                    summary::timestamp(deadline),
                    summary::countdown(now, deadline.0)
                ),
            );
        }
        if let Some(defer) = &admission.defer_reason {
            block.line("Deferred", explained(Kind::PlannedFailoverDeferReason, defer.as_str()));
        }
        if let Some(retry) = &admission.retry_time {
            block.line(
                "Retry after",
                format!("{} ({})", summary::timestamp(retry), summary::countdown(now, retry.0)),
            );
        }
    }
    let terminal = record.phase.as_ref().is_some_and(|phase| phase.is_terminal());
    if let Some(lag_wait) = &record.lag_wait
        && !terminal
        && let (Some(start), None) = (&lag_wait.start_time, &lag_wait.catch_up_time)
        && let Some(max_lag_wait) = record
            .settings
            .as_ref()
            .and_then(|settings| settings.max_lag_wait.as_ref())
            .and_then(|wait| wait.to_std().ok())
    {
        let seconds = i64::try_from(max_lag_wait.as_secs()).unwrap_or(i64::MAX);
        let deadline =
            Timestamp::from_second(start.0.as_second().saturating_add(seconds)).unwrap_or(start.0);
        block.line(
            "Lag wait deadline",
            format!(
                "{} ({}; maxLagWait {})",
                summary::at(deadline),
                summary::countdown(now, deadline),
                summary::short_duration(seconds)
            ),
        );
    }
    if record.phase.as_ref().is_some_and(|phase| phase.as_str() == "Draining")
        && let Some(drain) = &record.drain
        && let (Some(start), None) = (&drain.start_time, &drain.completion_time)
        && let Some(timeout) = record
            .settings
            .as_ref()
            .and_then(|settings| settings.drain_timeout.as_ref())
            .and_then(|timeout| timeout.to_std().ok())
    {
        let seconds = i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX);
        let deadline =
            Timestamp::from_second(start.0.as_second().saturating_add(seconds)).unwrap_or(start.0);
        block.line(
            "Drain deadline",
            format!(
                "{} ({}; drainTimeout {}; {} connections left)",
                summary::at(deadline),
                summary::countdown(now, deadline),
                summary::short_duration(seconds),
                drain.remaining_connections.map_or_else(|| NONE.to_owned(), |n| n.to_string())
            ),
        );
    }
    if let Some(result) = &record.result {
        if let Some(outcome) = &result.outcome {
            block.line("Outcome", explained(Kind::PlannedFailoverOutcome, outcome.as_str()));
        }
        if let Some(reason) = &result.reason {
            block.line("Reason", explained(Kind::PlannedFailoverReason, reason.as_str()));
            if let Some(remedy) = summary::remedy(Kind::PlannedFailoverReason, reason.as_str()) {
                block.line("Remedy", remedy);
            }
        }
        for warning in &result.warnings {
            block.line("Warning", explained(Kind::PlannedFailoverWarning, warning.as_str()));
        }
    }
    if let Some(message) = &record.message {
        block.line("Message", message.clone());
    }
    if let Some(start) = &record.start_time {
        block.line("Started", format!("{} ago", summary::age(now, start.0)));
    }
    if let Some(completed) =
        record.result.as_ref().and_then(|result| result.completion_time.as_ref())
    {
        block.line("Completed", format!("{} ago", summary::age(now, completed.0)));
        if let Some(start) = &record.start_time {
            block.line(
                "Duration",
                summary::short_duration(completed.0.as_second() - start.0.as_second()),
            );
        }
    }
    block.lines
}

/// What the hold's acknowledgement annotation would be (display only).
pub fn acknowledgement(hold: &PlannedFailoverHold) -> String {
    format!("{ACKNOWLEDGE_PLANNED_FAILOVER_HOLD}={}", opt(hold.run_id.as_deref()))
}

/// The automation hold's lines.
pub fn hold_block(hold: &PlannedFailoverHold, now: Timestamp) -> Vec<(String, String)> {
    let mut block = Block::new("");
    block.line("Run ID", opt(hold.run_id.as_deref()));
    if let Some(reason) = &hold.reason {
        block.line("Reason", explained(Kind::PlannedFailoverReason, reason.as_str()));
    }
    block.line(
        "Source -> Target",
        format!("{} -> {}", opt(hold.source_site.as_deref()), opt(hold.target_site.as_deref())),
    );
    block.line(
        "Ambiguous sites",
        if hold.ambiguous_sites.is_empty() {
            NONE.to_owned()
        } else {
            hold.ambiguous_sites.join(", ")
        },
    );
    if let Some(since) = &hold.hold_time {
        block.line(
            "Standing for",
            format!("{} (since {})", summary::age(now, since.0), summary::timestamp(since)),
        );
    }
    block.line("To release", "resolve the split brain by hand, then annotate the group:");
    block.line("", acknowledgement(hold));
    block.lines
}

/// The reclone queue's lines.
pub fn reclone_block(queue: &RestoreReclones, now: Timestamp) -> Vec<(String, String)> {
    let mut block = Block::new("");
    if let Some(phase) = &queue.phase {
        block.line("Phase", explained(Kind::RestoreReclonePhase, phase.as_str()));
    }
    block.line("Run ID", opt(queue.run_id.as_deref()));
    block.line(
        "Pending",
        if queue.pending.is_empty() { NONE.to_owned() } else { queue.pending.join(", ") },
    );
    if let Some(current) = &queue.current {
        block.line(
            "Current",
            format!(
                "{} ({}, requested {} ago)",
                opt(current.site.as_deref()),
                opt(current.request.as_deref()),
                summary::age_of(now, current.request_time.as_ref())
            ),
        );
    }
    for failure in &queue.failures {
        let retry = failure.retry_time.as_ref().map_or_else(
            || NONE.to_owned(),
            |retry| format!("{} ({})", summary::timestamp(retry), summary::countdown(now, retry.0)),
        );
        block.line(
            "Failure",
            format!(
                "{}: {} attempt(s), last {} ago, retry {retry}: {}",
                opt(failure.site.as_deref()),
                failure.attempts.unwrap_or(0),
                summary::age_of(now, failure.last_failure_time.as_ref()),
                opt(failure.message.as_deref())
            ),
        );
    }
    if let Some(fenced) = &queue.fenced_gtid_executed {
        block.line("Fenced GTID set", fenced.clone());
    }
    block.lines
}

/// The bootstrap restore's lines.
pub fn restore_block(restore: &RestoreStatus, now: Timestamp) -> Vec<(String, String)> {
    let mut block = Block::new("");
    if let Some(phase) = &restore.phase {
        block.line("Phase", explained(Kind::RestorePhase, phase.as_str()));
    }
    if let Some(site) = &restore.target_site {
        block.line("Target site", site.clone());
    }
    if let Some(reason) = &restore.reason {
        block.line("Reason", explained(Kind::PitrRefusal, reason.as_str()));
        if let Some(remedy) = summary::remedy(Kind::PitrRefusal, reason.as_str()) {
            block.line("Remedy", remedy);
        }
    }
    if let Some(message) = &restore.message {
        block.line("Message", message.clone());
    }
    if let Some(job) = &restore.job_name {
        block.line("Job", job.clone());
    }
    block.line("Started", time_and_age(now, restore.start_time.as_ref()));
    if restore.completion_time.is_some() {
        block.line("Completed", time_and_age(now, restore.completion_time.as_ref()));
    }
    block.lines
}

/// The in-place restore's lines.
pub fn restore_in_place_block(
    restore: &RestoreInPlaceStatus,
    now: Timestamp,
) -> Vec<(String, String)> {
    let mut block = Block::new("");
    if let Some(phase) = &restore.phase {
        block.line("Phase", explained(Kind::RestoreInPlacePhase, phase.as_str()));
    }
    if let Some(scope) = &restore.scope {
        let schema =
            restore.schema.as_deref().map(|schema| format!(" ({schema})")).unwrap_or_default();
        block.line("Scope", format!("{}{schema}", scope.as_str()));
    }
    if let Some(site) = &restore.target_site {
        block.line("Target site", site.clone());
    }
    if let Some(run_id) = &restore.run_id {
        block.line("Run ID", run_id.clone());
    }
    if let Some(reason) = &restore.reason {
        block.line("Reason", explained(Kind::RestoreInPlace, reason.as_str()));
        if let Some(remedy) = summary::remedy(Kind::RestoreInPlace, reason.as_str()) {
            block.line("Remedy", remedy);
        }
    }
    if let Some(message) = &restore.message {
        block.line("Message", message.clone());
    }
    block.line("Started", time_and_age(now, restore.start_time.as_ref()));
    if restore.completion_time.is_some() {
        block.line("Completed", time_and_age(now, restore.completion_time.as_ref()));
    }
    block.lines
}

/// The PITR archive's lines (identity and window, from status).
pub fn pitr_block(pitr: &PitrStatus, now: Timestamp) -> Vec<(String, String)> {
    let mut block = Block::new("");
    if let Some(archive) = &pitr.archive {
        block.line("Archive ID", opt(archive.archive_id.as_deref()));
        block.line("Destination", opt(archive.destination.as_deref()));
        if let Some(mode) = &archive.encryption_mode {
            let revision = archive
                .key_revision
                .map(|revision| format!(", key revision {revision}"))
                .unwrap_or_default();
            block.line("Encryption", format!("{}{revision}", mode.as_str()));
        }
        if let Some(state) = &archive.state {
            block.line("State", state.as_str().to_owned());
        }
        if let Some(reason) = &archive.reason {
            block.line("Reason", explained(Kind::ArchiveReason, reason.as_str()));
            if let Some(remedy) = summary::remedy(Kind::ArchiveReason, reason.as_str()) {
                block.line("Remedy", remedy);
            }
        }
    }
    match (&pitr.oldest_archived_time, &pitr.newest_archived_time) {
        (Some(oldest), Some(newest)) => block.line(
            "Window",
            format!(
                "{} -> {} ({})",
                summary::timestamp(oldest),
                summary::timestamp(newest),
                summary::short_duration(newest.0.as_second() - oldest.0.as_second())
            ),
        ),
        _ => block.line("Window", NONE),
    }
    if let Some(newest) = &pitr.newest_archived_time {
        block.line("Last archived", format!("{} ago", summary::age(now, newest.0)));
    }
    block.lines
}

/// The single-group report.
pub fn group(group: &MysqlFailoverGroup, now: Timestamp) -> String {
    let mut out = String::new();
    let status = group.status.clone().unwrap_or_default();
    let _ = writeln!(
        out,
        "MysqlFailoverGroup: {}/{}",
        opt(group.metadata.namespace.as_deref()),
        opt(group.metadata.name.as_deref())
    );
    let mut head = Block::new("");
    head.line("Active site", summary::active_site(group));
    let ready = status.condition(&ConditionType::Ready).map_or_else(
        || NONE.to_owned(),
        |condition| match &condition.reason {
            Some(reason) => format!("{} ({})", condition.status.as_str(), reason.as_str()),
            None => condition.status.as_str().to_owned(),
        },
    );
    head.line("Ready", ready);
    if summary::held(group) {
        head.line(
            "Automation",
            "HELD (+held): automatic failover is suspended; see Automation hold",
        );
    }
    if let Some(dns) = &group.spec.dns {
        head.line("DNS", format!("{} (TTL {}s)", dns.hostname, dns.ttl.unwrap_or(60)));
    }
    if let Some(last) = &status.last_failover {
        head.line(
            "Last failover",
            format!(
                "{} ago, target {}",
                summary::age_of(now, last.time.as_ref()),
                opt(last.target.as_deref())
            ),
        );
    }
    for (label, value) in head.lines {
        let _ = writeln!(out, "{label}:{:pad$} {value}", "", pad = 14 - label.len().min(13));
    }

    let _ = writeln!(out, "\nSites:");
    let mut rows = vec![
        [
            "NAME",
            "ROLE",
            "ZONE",
            "STATE",
            "REPL",
            "LAG",
            "GTIDS",
            "CONVERGENCE",
            "RECOVERY",
            "LAST-SEEN",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for site in &group.spec.sites {
        let observed = status.site(&site.name);
        let lag = observed.and_then(|site| site.seconds_behind_source).map_or_else(
            || NONE.to_owned(),
            |lag| if lag < 0 { "?".to_owned() } else { summary::short_duration(lag) },
        );
        rows.push(vec![
            site.name.clone(),
            site.effective_role().as_str().to_owned(),
            opt(site.zone.as_deref()),
            observed
                .and_then(|site| site.state.as_ref())
                .map_or_else(|| NONE.to_owned(), |s| s.as_str().to_owned()),
            observed.and_then(|site| site.replicating).map_or_else(
                || NONE.to_owned(),
                |replicating| if replicating { "yes".to_owned() } else { "no".to_owned() },
            ),
            lag,
            summary::GtidText::of(observed.and_then(|site| site.gtid_executed.as_deref())).count(),
            observed.and_then(|site| site.source_convergence_state.as_ref()).map_or_else(
                || NONE.to_owned(),
                |state| match observed.and_then(|site| site.source_convergence_reason.as_ref()) {
                    Some(reason) => format!("{}({})", state.as_str(), reason.as_str()),
                    None => state.as_str().to_owned(),
                },
            ),
            observed
                .and_then(|site| site.recovery_state.as_ref())
                .map_or_else(|| NONE.to_owned(), |state| state.as_str().to_owned()),
            summary::age_of(now, observed.and_then(|site| site.last_seen.as_ref())),
        ]);
    }
    for line in columns(&rows).lines() {
        let _ = writeln!(out, "  {line}");
    }

    let mut sections: Vec<(&str, Vec<(String, String)>)> = Vec::new();
    if let Some(record) = &status.planned_failover {
        sections.push(("Planned failover:", planned_failover_block(record, now)));
    }
    if let Some(hold) = &status.planned_failover_hold {
        sections.push(("Automation hold:", hold_block(hold, now)));
    }
    if let Some(queue) = &status.restore_reclones {
        sections.push(("Reclone queue:", reclone_block(queue, now)));
    }
    if let Some(restore) = &status.restore {
        sections.push(("Initial restore (initFromBackup):", restore_block(restore, now)));
    }
    if let Some(restore) = &status.restore_in_place {
        sections.push(("In-place restore:", restore_in_place_block(restore, now)));
    }
    for (title, lines) in sections {
        out.push('\n');
        Block { title: title.to_owned(), lines }.render(&mut out);
    }
    if !status.backup_schedules.is_empty() {
        let _ = writeln!(out, "\nBackup schedules:");
        let mut rows = vec![
            ["NAME", "LAST-RUN", "LAST-OK", "LAST-PHASE", "LAST-BACKUP", "ATTEMPT"]
                .map(str::to_owned)
                .to_vec(),
        ];
        for schedule in &status.backup_schedules {
            rows.push(vec![
                schedule.name.clone(),
                summary::age_of(now, schedule.last_schedule_time.as_ref()),
                summary::age_of(now, schedule.last_success_time.as_ref()),
                schedule
                    .last_backup_phase
                    .as_ref()
                    .map_or_else(|| NONE.to_owned(), |p| p.as_str().to_owned()),
                opt(schedule.last_backup_name.as_deref()),
                schedule.last_retry_attempt.map_or_else(|| NONE.to_owned(), |a| a.to_string()),
            ]);
        }
        for line in columns(&rows).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    if let Some(pitr) = &status.pitr {
        out.push('\n');
        let mut lines = Vec::new();
        if let Some(profile) = group
            .spec
            .backup
            .as_ref()
            .and_then(|backup| backup.pitr.as_ref())
            .and_then(|pitr| pitr.profile_name.clone())
        {
            lines.push(("Profile".to_owned(), profile));
        }
        lines.extend(pitr_block(pitr, now));
        let files: i64 = pitr.sites.iter().filter_map(|site| site.files_archived).sum();
        if !pitr.sites.is_empty() {
            let failing: Vec<&str> = pitr
                .sites
                .iter()
                .filter(|site| site.upload_failures.unwrap_or(0) > 0 || site.last_error.is_some())
                .map(|site| site.site.as_str())
                .collect();
            lines.push((
                "Files".to_owned(),
                format!(
                    "{files} archived by {} site(s){}",
                    pitr.sites.len(),
                    if failing.is_empty() {
                        String::new()
                    } else {
                        format!("; failing: {}", failing.join(", "))
                    }
                ),
            ));
        }
        Block { title: "PITR archive:".to_owned(), lines }.render(&mut out);
    }
    if !status.conditions.is_empty() {
        let _ = writeln!(out, "\nConditions:");
        let mut rows = vec![["TYPE", "STATUS", "REASON", "MESSAGE"].map(str::to_owned).to_vec()];
        for condition in &status.conditions {
            rows.push(vec![
                condition.type_.as_str().to_owned(),
                condition.status.as_str().to_owned(),
                condition
                    .reason
                    .as_ref()
                    .map_or_else(|| NONE.to_owned(), |r| r.as_str().to_owned()),
                summary::truncate(condition.message.as_deref().unwrap_or(NONE), 80),
            ]);
        }
        for line in columns(&rows).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

#[cfg(test)]
mod tests;
