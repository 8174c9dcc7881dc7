//! What the user must read and type before an operation is sent, tiered by risk.

use super::WriteOp;

/// How much confirmation an operation asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Risk {
    /// Creates a resource that changes no data (a backup, a verification): Cancel is the
    /// default, Enter on Confirm sends it.
    Low,
    /// Moves the primary: the user types the target site.
    Moves,
    /// May discard data or release a safety hold: the user types the group name after the
    /// data-loss statement.
    DataLoss,
}

/// The risk tier of `op`.
pub fn risk(op: &WriteOp) -> Risk {
    match op {
        WriteOp::RequestPlannedFailover { .. } => Risk::Moves,
        WriteOp::AcknowledgeHold { .. }
        | WriteOp::RecloneQueueDrain { .. }
        | WriteOp::RecloneQueueRelease { .. }
        | WriteOp::Reclone { .. } => Risk::DataLoss,
        WriteOp::BackupFromSite { .. }
        | WriteOp::CreateBackup { .. }
        | WriteOp::CreateVerification { .. } => Risk::Low,
        // A new group: the source group and its data are untouched.
        WriteOp::RestorePitrToNewGroup { .. } => Risk::Low,
    }
}

/// The text the user must type to confirm (`--confirm <name>` on the command line): the
/// target site of a planned failover, the group name of a data-loss decision, the name of
/// the object a create makes.
pub fn confirmation_name(op: &WriteOp) -> &str {
    match op {
        WriteOp::RequestPlannedFailover { target, .. } => target,
        WriteOp::AcknowledgeHold { group, .. }
        | WriteOp::RecloneQueueDrain { group }
        | WriteOp::RecloneQueueRelease { group }
        | WriteOp::Reclone { group, .. } => &group.name,
        WriteOp::BackupFromSite { group, .. }
        | WriteOp::CreateBackup { group, .. }
        | WriteOp::CreateVerification { group, .. } => &group.name,
        WriteOp::RestorePitrToNewGroup { name, .. } => name,
    }
}

/// The spec's statement of what the choice costs (backup-and-restore document, "Deciding
/// about a Held queue", "Explicit promotion"; planned-failover document, "The automation
/// hold"), or `None` when it loses nothing.
pub fn data_loss_statement(op: &WriteOp, primary_down: bool) -> Option<&'static str> {
    match op {
        WriteOp::RecloneQueueDrain { .. } => Some(
            "Keep the primary's data: the held sites are recloned from the current primary and lose the pre-restore data they keep, which may be the only intact copy. Only do this once the primary is verified good.",
        ),
        WriteOp::RecloneQueueRelease { .. } if primary_down => Some(
            "Accept the stale copy: clearing the queue lets automatic failover promote a queued site, which holds its data from before the restore.",
        ),
        WriteOp::RecloneQueueRelease { .. } => Some(
            "Release the hold: the held sites resume replication from the current primary, which replicates whatever the failed restore did to it. Only do this when that is what you want.",
        ),
        WriteOp::AcknowledgeHold { .. } => Some(
            "Acknowledging releases the automation hold: emergency failover and split-brain resolution resume and may fence the site they do not keep, which may hold acknowledged writes. Resolve the split brain by hand first.",
        ),
        WriteOp::Reclone { .. } => Some(
            "Recloning replaces the site's data with a clone of the primary: whatever the site has that the primary lacks is lost.",
        ),
        WriteOp::RequestPlannedFailover { .. } => None,
        WriteOp::BackupFromSite { .. }
        | WriteOp::CreateBackup { .. }
        | WriteOp::CreateVerification { .. }
        | WriteOp::RestorePitrToNewGroup { .. } => None,
    }
}
