//! The PITR workbench's model (pure): for a restore request (backup, target, excludeGtids),
//! the planner's verdict; for `PITRArchiveDivergentHistory` the set D by site and time and the
//! document's three remedies (000 lines 845–847) — exclude D, an earlier target at or before
//! D's first commit, a later backup finished after D's last — each with the planner's verdict
//! computed before the user picks it, the on-history warning when an exclusion drops
//! transactions of the witness's own history, and the corrected request's preview.
//!
//! The TUI holds a [`Workbench`] (what the user asked, and [`compute`]'s answer on the last
//! archive read); `console/src/tui/{update,view}/workbench.rs` open and draw it, and the
//! guided-operations picker proposes its plannable requests as
//! [`WriteOp::RestorePitrToNewGroup`](crate::ops::WriteOp::RestorePitrToNewGroup).

use std::collections::BTreeMap;

use bloodraven_gtid::{Gtid, GtidSet};
use bloodraven_pitr::{BackupMeta, History, Input, Limits, Plan, Refusal, Request, Token};
use jiff::Timestamp;
use serde::Serialize;

/// D's transactions on one site: how many, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DivergentOnSite {
    pub site: String,
    pub gtids: GtidSet,
    pub first: Option<Timestamp>,
    pub last: Option<Timestamp>,
}

/// A remedy with the planner's verdict on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// What the user picks ("exclude D", …).
    pub label: String,
    /// The backup the corrected request names.
    pub backup: String,
    /// The corrected request (`None`: the remedy is not available, `verdict` says why).
    pub request: Option<Request>,
    /// The planner's answer for the corrected request.
    pub verdict: Result<Plan, Refusal>,
    /// Transactions of the witness's own history the exclusion drops (warn before confirming).
    pub on_history: GtidSet,
}

/// What the workbench shows for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bench {
    pub backup: String,
    pub request: Request,
    pub verdict: Result<Plan, Refusal>,
    /// D by site (only for `PITRArchiveDivergentHistory`).
    pub divergent: Vec<DivergentOnSite>,
    /// The remedies (only for `PITRArchiveDivergentHistory`).
    pub choices: Vec<Choice>,
}

fn run(history: &History, backup: &BackupMeta, request: &Request) -> Result<Plan, Refusal> {
    bloodraven_pitr::plan(Input {
        history,
        open_refusal: None,
        backup,
        request,
        limits: Limits::default(),
    })
}

/// D's transactions by site, with their first and last commit times in the archive.
fn by_site(history: &History, d: &GtidSet) -> Vec<DivergentOnSite> {
    let mut sites: BTreeMap<String, DivergentOnSite> = BTreeMap::new();
    for file in &history.files {
        for txn in file.txns() {
            let Some(gtid) = txn.gtid else { continue };
            if !d.contains(&gtid) {
                continue;
            }
            let entry = sites.entry(file.site.clone()).or_insert_with(|| DivergentOnSite {
                site: file.site.clone(),
                gtids: GtidSet::new(),
                first: None,
                last: None,
            });
            let _ = entry.gtids.insert(&gtid);
            if let Some(at) = txn.commit {
                entry.first = Some(entry.first.map_or(at, |first| first.min(at)));
                entry.last = Some(entry.last.map_or(at, |last| last.max(at)));
            }
        }
    }
    sites.into_values().collect()
}

fn second(at: Timestamp) -> Timestamp {
    Timestamp::from_second(at.as_second()).unwrap_or(at)
}

fn unavailable(why: String) -> Result<Plan, Refusal> {
    Err(Refusal::new(Token::TargetNotCovered, why))
}

/// The workbench for `request` against backup `chosen` of `backups` (name → metadata).
pub fn bench(
    history: &History,
    backups: &[(String, BackupMeta)],
    chosen: &str,
    request: &Request,
) -> Option<Bench> {
    let (_, backup) = backups.iter().find(|(name, _)| name == chosen)?;
    let verdict = run(history, backup, request);
    let mut bench = Bench {
        backup: chosen.to_owned(),
        request: request.clone(),
        verdict: verdict.clone(),
        divergent: Vec::new(),
        choices: Vec::new(),
    };
    let Err(refusal) = &verdict else { return Some(bench) };
    if refusal.token != Token::ArchiveDivergentHistory {
        return Some(bench);
    }
    let Some(d) = refusal.full_set.as_deref().and_then(|text| text.parse::<GtidSet>().ok()) else {
        return Some(bench);
    };
    bench.divergent = by_site(history, &d);
    let first = bench.divergent.iter().filter_map(|site| site.first).min();
    let last = bench.divergent.iter().filter_map(|site| site.last).max();

    // 1. Exclude D.
    let mut excluded: GtidSet = request.exclude_gtids.parse().unwrap_or_default();
    excluded.union_with(&d);
    let corrected = Request { exclude_gtids: excluded.to_compact_string(), ..request.clone() };
    let verdict = run(history, backup, &corrected);
    let on_history =
        verdict.as_ref().map(|plan| plan.on_history_excluded.clone()).unwrap_or_default();
    bench.choices.push(Choice {
        label: format!("exclude D ({} transactions)", d.count()),
        backup: chosen.to_owned(),
        request: Some(corrected),
        verdict,
        on_history,
    });

    // 2. An earlier target, at or before D's first commit.
    match first {
        Some(first) => {
            let target = second(first);
            let earlier = Request { target: Some(target.to_string()), ..request.clone() };
            let verdict = run(history, backup, &earlier);
            bench.choices.push(Choice {
                label: format!("earlier target {target}"),
                backup: chosen.to_owned(),
                request: Some(earlier),
                verdict,
                on_history: GtidSet::new(),
            });
        }
        None => bench.choices.push(Choice {
            label: "earlier target".to_owned(),
            backup: chosen.to_owned(),
            request: None,
            verdict: unavailable("D has no archived commit time".to_owned()),
            on_history: GtidSet::new(),
        }),
    }

    // 3. A later backup, finished after D's last commit: the newest that finished before the
    // target (its window can reach it), else the earliest after D (its verdict says why not).
    let target = request.target.as_deref().and_then(|text| text.parse::<Timestamp>().ok());
    let after: Vec<&(String, BackupMeta)> = backups
        .iter()
        .filter(|(_, meta)| meta.dump_end.zip(last).is_some_and(|(end, last)| end > last))
        .collect();
    let later = after
        .iter()
        .filter(|(_, meta)| meta.dump_end.zip(target).is_some_and(|(end, target)| end < target))
        .max_by_key(|(_, meta)| meta.dump_end)
        .or_else(|| after.iter().min_by_key(|(_, meta)| meta.dump_end))
        .copied();
    match later {
        Some((name, meta)) => bench.choices.push(Choice {
            label: format!("later backup {name}"),
            backup: name.clone(),
            request: Some(request.clone()),
            verdict: run(history, meta, request),
            on_history: GtidSet::new(),
        }),
        None => bench.choices.push(Choice {
            label: "later backup".to_owned(),
            backup: chosen.to_owned(),
            request: None,
            verdict: unavailable(format!(
                "no backup finished after {}; take a new backup",
                last.map(bloodraven_archive::format_timestamp).unwrap_or_default()
            )),
            on_history: GtidSet::new(),
        }),
    }
    Some(bench)
}

/// The target the user typed: a time, or a GTID (restore through it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `stopTime` itself (RFC 3339).
    Time(Timestamp),
    /// A transaction: the target is the whole second after its commit, so it is replayed
    /// (with every other transaction committed before that second).
    Gtid(Gtid),
}

impl Target {
    /// A time (RFC 3339) or a GTID (`<uuid>:<n>`).
    pub fn parse(text: &str) -> Result<Target, String> {
        if let Ok(at) = text.parse::<Timestamp>() {
            return Ok(Target::Time(at));
        }
        text.parse::<Gtid>().map(Target::Gtid).map_err(|_| {
            format!(
                "{text:?} is neither a time (RFC 3339, 2026-04-20T12:00:00Z) nor a GTID \
                 (<uuid>:<n>)"
            )
        })
    }
}

/// `stopTime` as the CRD writes it: a whole second, `Z`.
pub fn stop_time(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The workbench of one group, as the TUI holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workbench {
    /// The group (namespace, name).
    pub key: (String, String),
    /// The target as typed.
    pub target: String,
    /// The backup asked for (`None`: the newest that finished before the target).
    pub backup: Option<String>,
    /// `excludeGtids` as typed.
    pub exclude_gtids: String,
    /// When the archive read it was computed on arrived (`None`: not computed yet).
    pub read: Option<Timestamp>,
    /// The answer: the bench, or why there is none (no archive yet, out of the window).
    pub outcome: Result<Computed, String>,
}

/// The workbench's answer for one archive read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Computed {
    /// `stopTime`.
    pub stop_time: String,
    /// For a GTID target: the GTID and its commit time.
    pub through: Option<(String, Timestamp)>,
    /// The backup's restorable window (first run of planning targets) and what stops it.
    pub window: crate::archive::WindowLine,
    /// The newest archived commit.
    pub newest: Timestamp,
    /// The plan or refusal, the divergent set and the remedies.
    pub bench: Bench,
}

/// The newest archived commit time.
fn newest_commit(history: &History) -> Option<Timestamp> {
    history.files.iter().flat_map(|file| file.txns()).filter_map(|txn| txn.commit).max()
}

/// The commit time of `gtid` in the archive.
fn commit_of(history: &History, gtid: &Gtid) -> Option<Timestamp> {
    history
        .files
        .iter()
        .flat_map(|file| file.txns())
        .find(|txn| txn.gtid.as_ref() == Some(gtid))
        .and_then(|txn| txn.commit)
}

/// The workbench's answer for `target` on `summary` (an archive read with its bytes):
/// `backup` (else the newest backup that finished before the target), the target refused up
/// front when it is outside the backup's reach (before its window, or after the newest
/// archived commit: nothing witnesses it), else [`bench`].
pub fn compute(
    summary: &crate::archive::ArchiveSummary,
    backups: &[(String, BackupMeta)],
    backup: Option<&str>,
    target: &Target,
    exclude_gtids: &str,
) -> Result<Computed, String> {
    let history = summary
        .history
        .as_ref()
        .map(|history| &*history.0)
        .ok_or("the archive's binlogs were not read; the workbench needs them")?;
    let newest = newest_commit(history).ok_or("the archive holds no transactions yet")?;
    let (at, through) = match target {
        Target::Time(at) => (*at, None),
        Target::Gtid(gtid) => {
            let committed = commit_of(history, gtid).ok_or_else(|| {
                format!("{gtid} is not in the archive (never archived, or retired)")
            })?;
            let after = Timestamp::from_second(committed.as_second() + 1)
                .map_err(|error| format!("{gtid} committed at {committed}: {error}"))?;
            (after, Some((gtid.to_string(), committed)))
        }
    };
    let chosen = match backup {
        Some(name) => name.to_owned(),
        None => backups
            .iter()
            .filter(|(_, meta)| meta.dump_end.is_some_and(|end| end < at))
            .max_by_key(|(_, meta)| meta.dump_end)
            .or_else(|| backups.iter().min_by_key(|(_, meta)| meta.dump_end))
            .map(|(name, _)| name.clone())
            .ok_or("the group has no completed backup with a gtidExecuted to restore")?,
    };
    let window = summary
        .backups
        .iter()
        .find(|line| line.name == chosen)
        .ok_or_else(|| format!("backup {chosen:?} is not a backup of this group"))?
        .window
        .clone()
        .map_err(|reason| format!("backup {chosen} has no restorable window: {reason}"))?;
    let stop = stop_time(at);
    let reach = format!(
        "backup {chosen}'s window is {} -> {} and the archive's newest commit is {}",
        stop_time(window.start),
        window.end.map_or_else(|| "open".to_owned(), stop_time),
        bloodraven_archive::format_timestamp(newest)
    );
    if at < window.start {
        return Err(format!(
            "target {stop} is outside the window: {reach}; choose a target at or after {}, or \
             an older backup",
            stop_time(window.start)
        ));
    }
    if at > newest {
        return Err(format!(
            "target {stop} is outside the window: {reach}; nothing archived at or after {stop} \
             witnesses it (PITRTargetNotCovered): wait for the archive or choose an earlier \
             target"
        ));
    }
    let request = Request {
        target: Some(stop.clone()),
        exclude_gtids: exclude_gtids.to_owned(),
        allow_partial: false,
    };
    let bench = bench(history, backups, &chosen, &request)
        .ok_or_else(|| format!("backup {chosen:?} has no gtidExecuted or completion time"))?;
    Ok(Computed { stop_time: stop, through, window, newest, bench })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PointInTime<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_time: Option<&'a str>,
    #[serde(skip_serializing_if = "str::is_empty")]
    exclude_gtids: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    allow_partial: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BackupRef<'a> {
    name: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Restore<'a> {
    backup_ref: BackupRef<'a>,
    point_in_time: PointInTime<'a>,
}

/// The corrected request as the restore's `backupRef` + `pointInTime` YAML (the preview the
/// confirm step shows).
pub fn preview(backup: &str, request: &Request) -> String {
    let restore = Restore {
        backup_ref: BackupRef { name: backup },
        point_in_time: PointInTime {
            stop_time: request.target.as_deref(),
            exclude_gtids: &request.exclude_gtids,
            allow_partial: request.allow_partial,
        },
    };
    serde_norway::to_string(&restore).unwrap_or_default()
}

#[cfg(test)]
#[path = "workbench_tests.rs"]
mod tests;
