//! Restores: the peer reclone queue (Held, stuck, draining), a refused bootstrap restore, a
//! failed in-place restore.

use bloodraven_crd::catalog;
use bloodraven_crd::group::{RestoreInPlacePhase, RestorePhase, RestoreReclonesPhase};
use jiff::SignedDuration;

use super::{Finding, Inputs, Kind, Severity, format_time, since};

/// A requested reclone still current after this long is stuck. The operator's own stall
/// window (ten unstarted minutes) needs what only it watched; a clone of a large site takes
/// hours, so the console waits longer before it calls one stuck.
pub const RECLONE_STALL_AFTER: SignedDuration = SignedDuration::from_secs(6 * 3_600);

/// One of the spec's choices for a Held queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// What to do.
    pub title: &'static str,
    /// What follows from it.
    pub consequence: &'static str,
    /// The command, when one applies.
    pub command: Option<String>,
}

/// The spec's three choices for a Held reclone queue, with their commands.
pub fn held_queue_choices(inputs: &Inputs<'_>) -> [Choice; 3] {
    [
        Choice {
            title: "Restore the held data into the primary",
            consequence: "take a MysqlBackup with spec.sourceSite set to a held site, then run a new full-instance restore from it; it reclones every peer once it succeeds",
            command: None,
        },
        Choice {
            title: "Keep the primary's data",
            consequence: "once the primary is verified good, the held sites are recloned from it and lose their pre-restore data",
            command: Some(format!(
                "{} --subresource=status --type=merge -p '{{\"status\":{{\"restoreReclones\":{{\"phase\":\"Draining\"}}}}}}'",
                inputs.kubectl("patch")
            )),
        },
        Choice {
            title: "Release the hold",
            consequence: "the held sites resume replicating from the current primary and replay whatever the failed restore did to it",
            command: Some(format!(
                "{} --subresource=status --type=json -p '[{{\"op\":\"remove\",\"path\":\"/status/restoreReclones\"}}]'",
                inputs.kubectl("patch")
            )),
        },
    ]
}

pub(super) fn check(inputs: &Inputs<'_>, out: &mut Vec<Finding>) {
    let now = inputs.now;
    let Some(status) = inputs.group.status.as_ref() else { return };
    if let Some(queue) = status.restore_reclones.as_ref() {
        let pending =
            if queue.pending.is_empty() { "-".to_owned() } else { queue.pending.join(", ") };
        match queue.phase.as_ref() {
            Some(RestoreReclonesPhase::Held) => {
                let [_, keep, _] = held_queue_choices(inputs);
                out.push(
                    Finding::new(
                        Severity::Critical,
                        Kind::RecloneHeld,
                        format!("the reclone queue is Held: {pending} keep their pre-restore data and do not replicate"),
                    )
                    .fact(format!("status.restoreReclones.phase=Held; pending={pending}"))
                    .action("choose: restore the held data into the primary, keep the primary's data (below), or release the hold; suspend backup schedules whose retention could age out the last good backup")
                    .command(keep.command.unwrap_or_default()),
                );
            }
            phase => {
                let phase_name = phase.map_or("?", |phase| phase.as_str());
                if let Some(current) = queue.current.as_ref()
                    && let Some(requested) = current.request_time.as_ref()
                    && now.duration_since(requested.0) > RECLONE_STALL_AFTER
                {
                    let site = current.site.as_deref().unwrap_or("?");
                    out.push(
                        Finding::new(
                            Severity::Warning,
                            Kind::RecloneStuck,
                            format!(
                                "the reclone of {site} was requested {} and has not finished",
                                since(now, requested.0)
                            ),
                        )
                        .site(site)
                        .fact(format!(
                            "status.restoreReclones.current.requestTime={}",
                            format_time(requested.0)
                        ))
                        .action(
                            "check the clone on the site (sidecar logs, the reclone annotation)",
                        )
                        .command(format!(
                            "kubectl get events -n {} --field-selector involvedObject.name={}",
                            inputs.namespace(),
                            inputs.name()
                        )),
                    );
                }
                for failure in &queue.failures {
                    let site = failure.site.as_deref().unwrap_or("?");
                    let retry = failure
                        .retry_time
                        .as_ref()
                        .map(|time| format!(", next retry {}", format_time(time.0)))
                        .unwrap_or_default();
                    out.push(
                        Finding::new(
                            Severity::Warning,
                            Kind::RecloneStuck,
                            format!(
                                "the reclone of {site} failed {} time(s){retry}: {}",
                                failure.attempts.unwrap_or(0),
                                failure.message.as_deref().unwrap_or("no message")
                            ),
                        )
                        .site(site)
                        .fact(format!(
                            "status.restoreReclones.failures[{site}].attempts={}",
                            failure.attempts.unwrap_or(0)
                        ))
                        .action("the operator retries; fix what the message names"),
                    );
                }
                let current = queue
                    .current
                    .as_ref()
                    .map(|current| {
                        format!(
                            "; recloning {} (requested {})",
                            current.site.as_deref().unwrap_or("?"),
                            current.request_time.as_ref().map_or_else(
                                || "at an unknown time".to_owned(),
                                |time| since(now, time.0)
                            )
                        )
                    })
                    .unwrap_or_default();
                out.push(
                    Finding::new(
                        Severity::Info,
                        Kind::RecloneDraining,
                        format!("the reclone queue is {phase_name}: {pending} wait to be recloned{current}"),
                    )
                    .fact(format!("status.restoreReclones.phase={phase_name}"))
                    .action("queued sites do not replicate and cannot be promoted until recloned"),
                );
            }
        }
    }
    if let Some(restore) = status.restore.as_ref()
        && restore.phase == Some(RestorePhase::Failed)
    {
        let token = restore.reason.as_ref().map(|reason| reason.as_str());
        let entry = token.and_then(|token| catalog::lookup(catalog::Kind::PitrRefusal, token));
        out.push(
            Finding::new(
                Severity::Critical,
                Kind::RestoreRefused,
                format!(
                    "the bootstrap restore {}{}",
                    token.map_or_else(
                        || "failed".to_owned(),
                        |token| format!("was refused: {token}")
                    ),
                    entry.map(|entry| format!(" ({})", entry.meaning)).unwrap_or_default()
                ),
            )
            .fact(format!(
                "status.restore.phase=Failed; reason={}; message={}",
                token.unwrap_or("<none>"),
                restore.message.as_deref().unwrap_or("<none>")
            ))
            .action(
                entry.map_or("read the restore Job's log and the message", |entry| entry.remedy),
            )
            .command(inputs.kubectl("describe")),
        );
    }
    if let Some(restore) = status.restore_in_place.as_ref()
        && restore.phase == Some(RestoreInPlacePhase::Failed)
    {
        let token = restore.reason.as_ref().map(|reason| reason.as_str());
        let entry = token.and_then(|token| catalog::lookup(catalog::Kind::RestoreInPlace, token));
        out.push(
            Finding::new(
                Severity::Warning,
                Kind::RestoreInPlaceFailed,
                format!(
                    "the in-place restore failed{}",
                    token.map(|token| format!(": {token}")).unwrap_or_default()
                ),
            )
            .fact(format!(
                "status.restoreInPlace.phase=Failed; reason={}",
                token.unwrap_or("<none>")
            ))
            .action(entry.map_or("read the restore's message and Events", |entry| entry.remedy))
            .command(inputs.kubectl("describe")),
        );
    }
}
