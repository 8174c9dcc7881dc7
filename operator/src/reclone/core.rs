//! An administrator's reclone request, pure: the group's `reclone-site` annotation, what the
//! status says of the site and the group, and what this process knows of the request's clone
//! come in; one [`Decision`] comes out.
//!
//! Backup-and-restore document, "Peer reclones after a full-instance restore" (the annotation,
//! its grammar, and RecloneRejected for a site queued while Armed or Held); topology document,
//! "Replication topology" (a diverged follower stays Blocked/GTIDDiverged until it is recloned
//! or the primary contains its set; DisasterRecovery and ReadOnly sites are never clone donors:
//! the donor is always the active primary).

use bloodraven_crd::annotations::RecloneRequest;
use bloodraven_crd::group::{
    MysqlFailoverGroupStatus, RestoreInPlacePhase, RestoreReclonesPhase, SiteState,
};
use bloodraven_gtid::GtidSet;

/// The Event of an accepted request (the older implementation's name; the spec names only
/// RecloneRejected for this annotation).
pub const REQUESTED: &str = "RecloneRequested";
/// The Event of a request whose clone succeeded.
pub const SUCCEEDED: &str = "RecloneSucceeded";
/// The Event of a request whose clone failed.
pub const FAILED: &str = "RecloneFailed";
/// The spec's refusal Event.
pub const REJECTED: &str = "RecloneRejected";

/// What this process knows of the clone an accepted request started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminProgress {
    /// No clone of this request is known (never accepted, or accepted by another process).
    NotStarted,
    /// The clone runs.
    Running,
    /// It finished and the site holds at least the donor's set.
    Succeeded,
    /// It failed.
    Failed {
        /// Why.
        message: String,
    },
}

/// One poll's view of an administrator's request.
#[derive(Clone, Debug)]
pub struct AdminView<'a> {
    /// The `reclone-site` annotation as read (after the reclone queue's own effects).
    pub annotation: Option<&'a str>,
    /// `metadata.name`.
    pub group: &'a str,
    /// `metadata.uid`.
    pub uid: &'a str,
    /// The sites of `spec.sites`.
    pub sites: &'a [String],
    /// The status as read (none before the first poll).
    pub status: Option<&'a MysqlFailoverGroupStatus>,
    /// A planned failover holds the claim.
    pub planned_failover_in_flight: bool,
    /// The clone of this request, as this process knows it.
    pub progress: AdminProgress,
}

/// What to do with the annotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No annotation, or one that is the reclone queue's to decide.
    Ignore,
    /// Refuse: remove the annotation (when it still has `value`), a RecloneRejected Warning.
    Reject {
        /// The annotation's value.
        value: String,
        /// The Event's note.
        note: String,
    },
    /// Accept: clone `site` from `donor` (the active primary); a RecloneRequested Event.
    Start {
        /// The annotation's value (the request's key in process memory).
        value: String,
        /// The recipient.
        site: String,
        /// The active primary.
        donor: String,
        /// The Event's note.
        note: String,
    },
    /// The clone runs; the annotation stays (it tells others a reclone is in flight).
    Wait {
        /// What it waits for.
        why: String,
    },
    /// The clone ended: remove the annotation (when it still has `value`) and publish `reason`.
    Finish {
        /// The annotation's value.
        value: String,
        /// [`SUCCEEDED`] or [`FAILED`].
        reason: &'static str,
        /// Warning (failed) or Normal.
        warning: bool,
        /// The Event's note.
        note: String,
    },
}

fn reject(value: &str, why: impl std::fmt::Display) -> Decision {
    Decision::Reject {
        value: value.to_owned(),
        note: format!("reclone request {value:?} refused: {why}; the annotation was removed"),
    }
}

/// Decides one poll. See the module documentation.
pub fn decide(view: &AdminView<'_>) -> Decision {
    let Some(value) = view.annotation else { return Decision::Ignore };
    let status = view.status;
    let queue = status.and_then(|s| s.restore_reclones.as_ref());
    // The queue's own request is the queue's business.
    if queue
        .and_then(|q| q.current.as_ref())
        .and_then(|c| c.request.as_deref())
        .is_some_and(|ours| ours == value)
    {
        return Decision::Ignore;
    }
    // A clone this process started for the request: its outcome first (the request was valid
    // when it started; what changed since cannot undo a clone that ran).
    match &view.progress {
        AdminProgress::Running => {
            return Decision::Wait { why: format!("the clone of request {value:?} runs") };
        }
        AdminProgress::Succeeded => {
            let site =
                RecloneRequest::parse(value).map(|r| r.site().to_owned()).unwrap_or_default();
            return Decision::Finish {
                value: value.to_owned(),
                reason: SUCCEEDED,
                warning: false,
                note: format!(
                    "{site} was recloned from the primary (request {value:?}); it repoints to the primary and replicates, and the annotation was removed"
                ),
            };
        }
        AdminProgress::Failed { message } => {
            let site =
                RecloneRequest::parse(value).map(|r| r.site().to_owned()).unwrap_or_default();
            return Decision::Finish {
                value: value.to_owned(),
                reason: FAILED,
                warning: true,
                note: format!(
                    "the reclone of {site} failed: {message}; the annotation was removed: check the site's pod and error log, then annotate again"
                ),
            };
        }
        AdminProgress::NotStarted => {}
    }
    let request = match RecloneRequest::parse(value) {
        Ok(request) => request,
        Err(error) => return reject(value, error),
    };
    let site = request.site();
    if request.confirm_group() != view.group {
        return reject(
            value,
            format!(
                "confirm={} does not name this group ({}); write <site>:confirm={}:uid=<metadata.uid>",
                request.confirm_group(),
                view.group,
                view.group
            ),
        );
    }
    if request.group_uid() != view.uid {
        return reject(
            value,
            format!(
                "uid={} is not this group's metadata.uid ({}); the request was written for another incarnation of the group",
                request.group_uid(),
                view.uid
            ),
        );
    }
    if !view.sites.iter().any(|s| s == site) {
        return reject(value, format!("{site} is not in spec.sites ({})", view.sites.join(", ")));
    }
    let active = status.and_then(|s| s.active_site.as_deref()).unwrap_or("");
    if active == site {
        return reject(value, format!("{site} is the active primary; a primary is never recloned"));
    }
    if let Some(queue) = queue
        && queue.pending.iter().any(|pending| pending == site)
        && !matches!(queue.phase, Some(RestoreReclonesPhase::Draining))
    {
        let phase = queue.phase.as_ref().map_or("without a phase", |p| p.as_str());
        return reject(
            value,
            format!(
                "{site} is queued for its post-restore reclone and the queue is {phase}; set status.restoreReclones.phase to Draining to clone it"
            ),
        );
    }
    if view.planned_failover_in_flight
        || status
            .and_then(|s| s.planned_failover.as_ref())
            .is_some_and(|run| run.phase.as_ref().is_some_and(|phase| !phase.is_terminal()))
    {
        return reject(
            value,
            "a planned failover is in flight, so the primary may change under the clone; annotate again once it ended",
        );
    }
    if let Some(hold) = status.and_then(|s| s.planned_failover_hold.as_ref()) {
        return reject(
            value,
            format!(
                "the automation hold of planned failover {} stands, so which site is the primary is not settled; resolve and acknowledge it first",
                hold.run_id.as_deref().unwrap_or("?")
            ),
        );
    }
    if let Some(run) = status.and_then(|s| s.restore_in_place.as_ref())
        && matches!(
            run.phase,
            Some(
                RestoreInPlacePhase::Preflight
                    | RestoreInPlacePhase::Fencing
                    | RestoreInPlacePhase::Restoring
                    | RestoreInPlacePhase::Resuming
            )
        )
    {
        return reject(
            value,
            format!(
                "in-place restore {} is in flight; its reclone queue reclones every peer once it succeeds",
                run.run_id.as_deref().unwrap_or("?")
            ),
        );
    }
    let writable =
        status.and_then(|s| s.site(active)).is_some_and(|s| s.state == Some(SiteState::Writable));
    if active.is_empty() || !writable {
        return reject(
            value,
            if active.is_empty() {
                "there is no active primary to clone from".to_owned()
            } else {
                format!(
                    "the active primary {active} is not writable, so there is nothing safe to clone from"
                )
            },
        );
    }
    if let Some(prefix) = request.gtid_prefix() {
        let recorded = status.and_then(|s| s.site(site)).and_then(|s| s.divergent_gtid.as_deref());
        let sources: Vec<String> = recorded
            .and_then(|text| text.replace('\n', "").parse::<GtidSet>().ok())
            .map(|set| set.uuids().map(|uuid| uuid.to_string()).collect())
            .unwrap_or_default();
        if !sources.iter().any(|uuid| uuid.eq_ignore_ascii_case(prefix)) {
            return reject(
                value,
                match recorded {
                    Some(set) => format!(
                        "gtidPrefix={prefix} is not a source of {site}'s recorded divergent transactions ({set}); name one of {}",
                        sources.join(", ")
                    ),
                    None => format!(
                        "gtidPrefix={prefix} confirms discarding divergent transactions, but {site} has none recorded; annotate without gtidPrefix"
                    ),
                },
            );
        }
    }
    let discards = match request.gtid_prefix() {
        Some(prefix) => format!("; its divergent transactions of {prefix} are discarded"),
        None => String::new(),
    };
    Decision::Start {
        value: value.to_owned(),
        site: site.to_owned(),
        donor: active.to_owned(),
        note: format!("reclone of {site} from the primary {active} requested ({value}){discards}"),
    }
}

/// The `gtidPrefix` the reclone queue writes for `site`: the first source UUID of the site's
/// recorded divergent transactions, when it has any.
pub fn divergent_source(status: &MysqlFailoverGroupStatus, site: &str) -> Option<String> {
    let recorded = status.site(site)?.divergent_gtid.as_deref()?;
    let set: GtidSet = recorded.replace('\n', "").parse().ok()?;
    set.uuids().next().map(|uuid| uuid.to_string())
}
