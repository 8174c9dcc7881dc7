//! The runbooks of `runbooks/`, compiled into the binary so the console needs no files at run
//! time. A test keeps this list equal to the folder.

use std::path::Path;

use crate::error::RunbookError;
use crate::load::parse;
use crate::runbook::Runbook;

macro_rules! shipped {
    ($($name:literal),* $(,)?) => {
        /// `(file name, text)` of every shipped runbook, sorted by file name.
        pub const FILES: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../../../runbooks/", $name))),)*
        ];
    };
}

shipped![
    "archive-not-ready.yaml",
    "automation-hold.yaml",
    "diverged-follower.yaml",
    "failed-bootstrap-restore.yaml",
    "held-reclone-queue.yaml",
    "manual-recovery-required.yaml",
    "no-primary.yaml",
    "pitr-archive-gap.yaml",
    "pitr-backup-after-target.yaml",
    "pitr-divergent-history.yaml",
    "pitr-unsafe-history.yaml",
    "planned-failover-after.yaml",
    "planned-failover-before.yaml",
    "planned-failover-during.yaml",
    "promoted-unconfirmed.yaml",
    "release-offline-fence.yaml",
    "source-left-fenced.yaml",
];

/// Every shipped runbook, checked (messages name `runbooks/<file>`).
pub fn shipped() -> Result<Vec<Runbook>, RunbookError> {
    FILES.iter().map(|(name, text)| parse(&Path::new("runbooks").join(name), text)).collect()
}
