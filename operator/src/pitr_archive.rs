//! The PITR archive roll-up (backup-and-restore document, "PITRArchiveReady condition" and
//! `status.pitr.archive`): every 30 s the operator polls each site's sidecar
//! `/archiver/status` and turns the answers into one `PITRArchiveReady` condition and the
//! `status.pitr` summary. Also the registry the HTTP server's `/pitr-cutoff` reads: each
//! group's PITR render (set by the reconcile) and the MysqlBackups (one watch).
//!
//! [`roll_up`] is pure; [`run`] is the loop (polls, the status apply, the Events).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::backup::MysqlBackup;
use bloodraven_crd::condition::{Condition, ConditionReason, ConditionStatus, ConditionType};
use bloodraven_crd::group::{ArchiveIdentity, ArchiveRefusal, ArchiveState, ArchiverSummary};
use bloodraven_workloads::pitr::PitrRender;
use jiff::{SignedDuration, Timestamp};

use crate::manager::GroupKey;

/// How often every site is polled.
pub const POLL_INTERVAL: Duration = Duration::from_secs(30);
/// Failed polls in a row before a site is SidecarUnreachable…
pub const UNREACHABLE_POLLS: u32 = 3;
/// …spanning at least this long.
pub const UNREACHABLE_SPAN: SignedDuration = SignedDuration::from_secs(60);
/// A sidecar that has not answered since the operator started is unreachable after this.
pub const NEVER_ANSWERED_GRACE: SignedDuration = SignedDuration::from_mins(5);
/// `consecutiveFailedScans` from which a site is ArchiverError (one failed scan never is).
pub const ARCHIVER_ERROR_SCANS: i64 = 2;
/// The field manager of the roll-up's status apply: its own, so the topology manager's
/// applies (which do not send `status.pitr`) never remove what this one owns.
pub const FIELD_MANAGER: &str = "bloodraven-operator-pitr";

/// One group's PITR entry: its render and its sites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPitr {
    /// The resolved render.
    pub render: PitrRender,
    /// The sites' names, in spec order.
    pub sites: Vec<String>,
}

#[derive(Debug, Default)]
struct Registry {
    groups: BTreeMap<GroupKey, GroupPitr>,
    /// `None` until the backup watch has listed once.
    backups: Option<Vec<MysqlBackup>>,
}

/// What the reconcile, the backup watch, the roll-up and `/pitr-cutoff` share.
#[derive(Clone, Debug, Default)]
pub struct PitrRegistry(Arc<Mutex<Registry>>);

impl PitrRegistry {
    /// Records the group's render (`None`: PITR off or the render failed).
    pub fn set_group(&self, key: &GroupKey, entry: Option<GroupPitr>) {
        let Ok(mut registry) = self.0.lock() else { return };
        match entry {
            Some(entry) => registry.groups.insert(key.clone(), entry),
            None => registry.groups.remove(key),
        };
    }

    /// The group's entry.
    pub fn group(&self, key: &GroupKey) -> Option<GroupPitr> {
        self.0.lock().ok()?.groups.get(key).cloned()
    }

    /// Every group with PITR.
    pub fn groups(&self) -> Vec<(GroupKey, GroupPitr)> {
        self.0
            .lock()
            .map(|registry| registry.groups.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    /// Replaces the known MysqlBackups (the watch's store after each change).
    pub fn set_backups(&self, backups: Vec<MysqlBackup>) {
        if let Ok(mut registry) = self.0.lock() {
            registry.backups = Some(backups);
        }
    }

    /// The group's MysqlBackups (`failoverGroupRef` names it, same namespace); `None` while
    /// the watch has not listed yet.
    pub fn backups(&self, key: &GroupKey) -> Option<Vec<MysqlBackup>> {
        let registry = self.0.lock().ok()?;
        Some(
            registry
                .backups
                .as_ref()?
                .iter()
                .filter(|backup| {
                    backup.metadata.namespace.as_deref() == Some(key.namespace.as_str())
                        && backup.spec.failover_group_ref.name == key.name
                })
                .cloned()
                .collect(),
        )
    }
}

/// Per-site poll bookkeeping (the SidecarUnreachable rule).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PollTrack {
    /// The last answer's body.
    pub last: Option<serde_json::Value>,
    /// When the site last answered.
    pub last_ok: Option<Timestamp>,
    /// Failed polls since the last answer.
    pub failures: u32,
    /// When the first of them happened.
    pub first_failure: Option<Timestamp>,
    /// The last failure's text.
    pub last_failure: Option<String>,
}

impl PollTrack {
    /// Folds an answer in.
    pub fn answered(&mut self, body: serde_json::Value, now: Timestamp) {
        *self = PollTrack { last: Some(body), last_ok: Some(now), ..PollTrack::default() };
    }

    /// Folds a failed poll in.
    pub fn failed(&mut self, why: String, now: Timestamp) {
        self.failures += 1;
        self.first_failure.get_or_insert(now);
        self.last_failure = Some(why);
    }

    /// What the roll-up sees of this site.
    pub fn poll(&self, started: Timestamp, now: Timestamp) -> SitePoll {
        let unreachable = match self.last_ok {
            None => now.duration_since(started) >= NEVER_ANSWERED_GRACE,
            Some(_) => {
                self.failures >= UNREACHABLE_POLLS
                    && self
                        .first_failure
                        .is_some_and(|first| now.duration_since(first) >= UNREACHABLE_SPAN)
            }
        };
        let why = self.last_failure.clone().unwrap_or_else(|| "no answer yet".to_owned());
        match (&self.last, unreachable) {
            (_, true) => SitePoll::Unreachable(why),
            (Some(body), false) => SitePoll::Answered(body.clone()),
            (None, false) => SitePoll::Waiting(why),
        }
    }
}

/// One site as the roll-up sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum SitePoll {
    /// The sidecar's `/archiver/status` (the last answer while failures are below the rule).
    Answered(serde_json::Value),
    /// Not answered yet, still within the grace.
    Waiting(String),
    /// SidecarUnreachable.
    Unreachable(String),
}

/// The roll-up's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct RollUp {
    /// `True`, `False` or `Unknown`.
    pub status: ConditionStatus,
    /// The reason (`Healthy` when True).
    pub reason: ConditionReason,
    /// A sentence naming the sites.
    pub message: String,
    /// `status.pitr.archive`.
    pub archive: ArchiveIdentity,
    /// `status.pitr.sites`.
    pub sites: Vec<ArchiverSummary>,
}

fn refusal_rank(reason: &ConditionReason) -> Option<usize> {
    ArchiveRefusal::KNOWN.iter().position(|known| *known == reason.as_str())
}

/// Lower ranks first (spec: ArchiveStoreInitFailed, then the identity refusals, then
/// ArchiverError, SidecarOutdated, ArchiverDisabled; SidecarUnreachable, whose position the
/// document does not give, last: it says nothing about the archive itself).
fn rank(reason: &ConditionReason) -> usize {
    match reason {
        ConditionReason::ArchiveStoreInitFailed => 0,
        ConditionReason::ArchiverError => 100,
        ConditionReason::SidecarOutdated => 101,
        ConditionReason::ArchiverDisabled => 102,
        ConditionReason::SidecarUnreachable => 103,
        other => refusal_rank(other).map_or(99, |position| 1 + position),
    }
}

fn text<'a>(body: &'a serde_json::Value, field: &str) -> Option<&'a str> {
    body.get(field).and_then(serde_json::Value::as_str)
}

fn time_field(
    body: &serde_json::Value,
    field: &str,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time> {
    text(body, field)?
        .parse::<Timestamp>()
        .ok()
        .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time)
}

fn summary(site: &str, body: &serde_json::Value) -> ArchiverSummary {
    let int = |field: &str| body.get(field).and_then(serde_json::Value::as_i64);
    let flag = |field: &str| body.get(field).and_then(serde_json::Value::as_bool);
    ArchiverSummary {
        site: site.to_owned(),
        enabled: flag("enabled"),
        store_ready: flag("storeReady"),
        primary: flag("primary"),
        last_scan_at: time_field(body, "lastScanAt"),
        files_archived: int("filesArchived"),
        backlog_files: int("backlog").or_else(|| int("backlogFiles")),
        upload_failures: int("uploadFailures"),
        consecutive_failed_scans: int("consecutiveFailedScans"),
        last_error: text(body, "lastError").filter(|e| !e.is_empty()).map(str::to_owned),
        storage_type: text(body, "storageType")
            .filter(|t| !t.is_empty())
            .map(|t| t.parse().unwrap_or_else(|e: std::convert::Infallible| match e {})),
        manifest_prefix: text(body, "manifestPrefix").filter(|p| !p.is_empty()).map(str::to_owned),
        oldest_archived_time: time_field(body, "oldestArchivedTime"),
        newest_archived_time: time_field(body, "newestArchivedTime"),
        promotion_recorded_at: time_field(body, "promotionRecordedAt"),
        history_integrity: body
            .get("historyIntegrity")
            .and_then(|value| serde_json::from_value(value.clone()).ok()),
        divergent_rows: int("divergentRows"),
        quarantined_rows: int("quarantinedRows"),
        archive: body.get("archive").and_then(|value| serde_json::from_value(value.clone()).ok()),
        ..ArchiverSummary::default()
    }
}

/// One site's verdict: `None` when it is healthy.
fn site_problem(
    render: &PitrRender,
    body: &serde_json::Value,
) -> Option<(ConditionReason, String)> {
    if body.get("enabled").and_then(serde_json::Value::as_bool) != Some(true) {
        return Some((
            ConditionReason::ArchiverDisabled,
            "reports its archiver disabled".to_owned(),
        ));
    }
    let last_error = text(body, "lastError").unwrap_or_default();
    if body.get("storeReady").and_then(serde_json::Value::as_bool) == Some(false) {
        return Some((ConditionReason::ArchiveStoreInitFailed, last_error.to_owned()));
    }
    let Some(archive) = body.get("archive").filter(|archive| archive.is_object()) else {
        return Some((ConditionReason::SidecarOutdated, "reports no archive identity".to_owned()));
    };
    // Only reports for the active destination count (a pod on an older render does not).
    let current = text(archive, "destination") == Some(render.normalized.as_str());
    if current && text(archive, "state") == Some("Refused") {
        let reason = text(archive, "reason").unwrap_or("ArchiveForeign");
        return Some((ConditionReason::parse(reason), last_error.to_owned()));
    }
    if body.get("historyIntegrity").is_some_and(|marker| !marker.is_null()) {
        return Some((ConditionReason::ArchiveUnsafeHistory, last_error.to_owned()));
    }
    let failed =
        body.get("consecutiveFailedScans").and_then(serde_json::Value::as_i64).unwrap_or(0);
    if failed >= ARCHIVER_ERROR_SCANS {
        return Some((
            ConditionReason::ArchiverError,
            format!("{failed} scans failed in a row: {last_error}"),
        ));
    }
    None
}

/// Rolls the sites' polls into the condition and `status.pitr`.
pub fn roll_up(render: &PitrRender, sites: &[(String, SitePoll)], now: Timestamp) -> RollUp {
    let mut problems: Vec<(ConditionReason, String)> = Vec::new();
    let mut waiting = Vec::new();
    let mut summaries = Vec::new();
    let mut states = Vec::new();
    for (site, poll) in sites {
        match poll {
            SitePoll::Answered(body) => {
                summaries.push(summary(site, body));
                if let Some((reason, detail)) = site_problem(render, body) {
                    problems.push((reason, format!("{site}: {detail}")));
                }
                if let Some(archive) = body.get("archive")
                    && text(archive, "destination") == Some(render.normalized.as_str())
                {
                    states.push((
                        text(archive, "state").unwrap_or_default().to_owned(),
                        text(archive, "archiveID").unwrap_or_default().to_owned(),
                        text(archive, "reason").map(str::to_owned),
                    ));
                }
            }
            SitePoll::Waiting(why) => waiting.push(format!("{site} ({why})")),
            SitePoll::Unreachable(why) => problems.push((
                ConditionReason::SidecarUnreachable,
                format!("{site}: /archiver/status does not answer: {why}"),
            )),
        }
    }
    let refused = states.iter().find(|(state, _, _)| state == "Refused");
    let verified = !states.is_empty()
        && states.len() == sites.len()
        && states
            .iter()
            .all(|(state, id, _)| state == "Verified" && id == render.archive_id.as_str());
    let archive = ArchiveIdentity {
        destination: Some(render.normalized.to_string()),
        archive_id: Some(render.archive_id.to_string()),
        encryption_mode: Some(
            render.encryption_mode.parse().unwrap_or_else(|e: std::convert::Infallible| match e {}),
        ),
        state: Some(if refused.is_some() {
            ArchiveState::Refused
        } else if verified {
            ArchiveState::Verified
        } else {
            ArchiveState::AwaitingDescriptor
        }),
        reason: refused.and_then(|(_, _, reason)| reason.as_deref()).map(ArchiveRefusal::parse),
        key_revision: None,
        observed_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now)),
        ..ArchiveIdentity::default()
    };
    problems.sort_by_key(|(reason, _)| rank(reason));
    let (status, reason, message) = match problems.first() {
        Some((reason, _)) => {
            let same: Vec<&str> = problems
                .iter()
                .filter(|(other, _)| other == reason)
                .map(|(_, detail)| detail.as_str())
                .collect();
            (ConditionStatus::False, reason.clone(), same.join("; "))
        }
        None if !waiting.is_empty() => (
            ConditionStatus::Unknown,
            ConditionReason::SidecarUnreachable,
            format!("waiting for the first /archiver/status answer of {}", waiting.join(", ")),
        ),
        None => (
            ConditionStatus::True,
            ConditionReason::Healthy,
            format!(
                "every site reports a running archiver ({})",
                sites.iter().map(|(site, _)| site.as_str()).collect::<Vec<_>>().join(", ")
            ),
        ),
    };
    RollUp { status, reason, message, archive, sites: summaries }
}

/// The condition, keeping `lastTransitionTime` when the status did not change.
pub fn condition(
    roll: &RollUp,
    previous: &[Condition],
    generation: Option<i64>,
    now: Timestamp,
) -> Condition {
    let before = previous.iter().find(|c| c.type_ == ConditionType::PitrArchiveReady);
    let transition = match before {
        Some(before) if before.status == roll.status => before.last_transition_time.clone(),
        _ => Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now)),
    };
    Condition {
        reason: Some(roll.reason.clone()),
        message: Some(roll.message.clone()),
        observed_generation: generation,
        last_transition_time: transition,
        ..Condition::new(ConditionType::PitrArchiveReady, roll.status.clone())
    }
}

/// The status apply body: `status.pitr.{archive, sites}` and the conditions (the atomic list:
/// every other condition carried, ours replaced).
pub fn status_body(roll: &RollUp, group: &MysqlFailoverGroup, now: Timestamp) -> serde_json::Value {
    let previous = group.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default();
    let ours = condition(roll, &previous, group.metadata.generation, now);
    let mut conditions: Vec<Condition> =
        previous.into_iter().filter(|c| c.type_ != ConditionType::PitrArchiveReady).collect();
    conditions.push(ours);
    // The group-wide bounds: the oldest and the newest archived time any site reports
    // (retention and freshness; a site that reports none does not count).
    let oldest = roll.sites.iter().filter_map(|site| site.oldest_archived_time.clone()).min();
    let newest = roll.sites.iter().filter_map(|site| site.newest_archived_time.clone()).max();
    let mut pitr = serde_json::json!({ "archive": roll.archive, "sites": roll.sites });
    for (key, value) in [("oldestArchivedTime", oldest), ("newestArchivedTime", newest)] {
        if let Some(value) = value {
            pitr[key] = serde_json::json!(value);
        }
    }
    serde_json::json!({
        "apiVersion": format!("{}/{}", bloodraven_crd::API_GROUP, bloodraven_crd::API_VERSION),
        "kind": "MysqlFailoverGroup",
        "status": {
            "pitr": pitr,
            "conditions": conditions,
        },
    })
}

/// The largest `/archiver/status` answer read.
const MAX_ANSWER: u64 = 256 * 1024;
/// The bound on one poll.
const POLL_TIMEOUT: Duration = Duration::from_secs(5);

/// `GET http://<address><path>` (HTTP/1.0, one request per connection), the body as JSON.
async fn get_json(address: &str, path: &str) -> Result<serde_json::Value, String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let exchange = async {
        let mut stream =
            tokio::net::TcpStream::connect(address).await.map_err(|e| e.to_string())?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut answer = Vec::new();
        stream.take(MAX_ANSWER).read_to_end(&mut answer).await.map_err(|e| e.to_string())?;
        Ok::<_, String>(answer)
    };
    let answer = tokio::time::timeout(POLL_TIMEOUT, exchange)
        .await
        .map_err(|_| format!("no answer within {POLL_TIMEOUT:?}"))??;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").ok_or("the answer is not HTTP")?;
    let status = head.split_whitespace().nth(1).unwrap_or_default();
    if status != "200" {
        return Err(format!("HTTP {status}: {}", body.trim()));
    }
    serde_json::from_str(body).map_err(|e| format!("the answer is not JSON: {e}"))
}

/// Keeps [`PitrRegistry`]'s backups current from one MysqlBackup watch (no LIST per request).
/// An API server without the MysqlBackup kind leaves them unknown: `/pitr-cutoff` defers.
async fn watch_backups(client: kube::Client, registry: PitrRegistry, namespace: Option<String>) {
    use futures::StreamExt as _;
    use kube::runtime::{WatchStreamExt as _, reflector, watcher};
    let api: kube::Api<MysqlBackup> = match &namespace {
        Some(namespace) => kube::Api::namespaced(client, namespace),
        None => kube::Api::all(client),
    };
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(api, watcher::Config::default())).default_backoff();
    futures::pin_mut!(stream);
    let mut synced = false;
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::InitDone) => synced = true,
            Ok(_) => {}
            Err(error) => {
                tracing::debug!(%error, "MysqlBackup watch failed; /pitr-cutoff defers meanwhile");
                continue;
            }
        }
        if synced {
            registry.set_backups(reader.state().iter().map(|backup| (**backup).clone()).collect());
        }
    }
}

async fn poll_group(
    shared: &crate::manager::Shared,
    key: &GroupKey,
    entry: &GroupPitr,
    tracks: &mut BTreeMap<(GroupKey, String), PollTrack>,
    started: Timestamp,
) {
    use kube::api::{Api, Patch, PatchParams};
    let now = Timestamp::now();
    let mut polls = Vec::new();
    for site in &entry.sites {
        let track = tracks.entry((key.clone(), site.clone())).or_default();
        let service = bloodraven_workloads::SiteNames::new(&key.name, site).internal_service;
        let port = bloodraven_workloads::ports::SIDECAR_HTTP;
        match shared.resolver.resolve(&key.namespace, &service, port) {
            None => track.failed(format!("Service {service} has no endpoint"), now),
            Some(address) => match get_json(&address.to_string(), "/archiver/status").await {
                Ok(body) => track.answered(body, now),
                Err(why) => track.failed(why, now),
            },
        }
        polls.push((site.clone(), track.poll(started, now)));
    }
    let roll = roll_up(&entry.render, &polls, now);
    let api: Api<MysqlFailoverGroup> = Api::namespaced(shared.client.clone(), &key.namespace);
    let group = match api.get_status(&key.name).await {
        Ok(group) => group,
        Err(error) => {
            tracing::debug!(%error, namespace = %key.namespace, group = %key.name, "PITR roll-up: reading the group failed");
            return;
        }
    };
    let before = group
        .status
        .as_ref()
        .and_then(|status| status.condition(&ConditionType::PitrArchiveReady))
        .map(|condition| condition.status.clone());
    let body = status_body(&roll, &group, now);
    if let Err(error) = api
        .patch_status(&key.name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(body))
        .await
    {
        tracing::warn!(%error, namespace = %key.namespace, group = %key.name, "PITR roll-up: applying status.pitr failed");
        return;
    }
    match (before, &roll.status) {
        (Some(ConditionStatus::False), ConditionStatus::False) => {}
        (_, ConditionStatus::False) => {
            let note =
                format!("PITRArchiveReady is False ({}): {}", roll.reason.as_str(), roll.message);
            crate::publish::event(shared, &group, true, "PITRArchiveNotReady", note).await;
        }
        (Some(ConditionStatus::False), ConditionStatus::True) => {
            let note = format!("PITRArchiveReady is True again: {}", roll.message);
            crate::publish::event(shared, &group, false, "PITRArchiveRecovered", note).await;
        }
        _ => {}
    }
}

/// Polls every PITR group's sidecars every `interval` and applies the roll-up; keeps the
/// backups of `/pitr-cutoff` current. Runs as long as the controller does.
pub async fn run(
    shared: Arc<crate::manager::Shared>,
    namespace: Option<String>,
    interval: Duration,
) {
    let started = Timestamp::now();
    let watch = watch_backups(shared.client.clone(), shared.pitr.clone(), namespace);
    let polls = async {
        let mut tracks = BTreeMap::new();
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let groups = shared.pitr.groups();
            tracks.retain(|(key, _), _| groups.iter().any(|(known, _)| known == key));
            for (key, entry) in groups {
                poll_group(&shared, &key, &entry, &mut tracks, started).await;
            }
        }
    };
    tokio::join!(watch, polls);
}

#[cfg(test)]
#[path = "pitr_archive_tests.rs"]
mod tests;
