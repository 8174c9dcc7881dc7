//! Summary fields that disagree with the facts: `Ready=True` while writes are down or a
//! critical finding stands, `status.pitr.archive.state=Verified` while the archive is not.

use bloodraven_crd::ConditionType;
use bloodraven_crd::group::ArchiveState;

use super::{DerivedArchive, Finding, Inputs, Kind, Severity};

pub(super) fn check(inputs: &Inputs<'_>, archive: &DerivedArchive, out: &mut Vec<Finding>) {
    let Some(status) = inputs.group.status.as_ref() else { return };
    let ready_true =
        status.condition(&ConditionType::Ready).is_some_and(bloodraven_crd::Condition::is_true);
    if ready_true {
        let blocked = out.iter().find(|finding| {
            finding.kind == Kind::PlannedFailoverInFlight && finding.severity >= Severity::Warning
        });
        let critical = out.iter().find(|finding| finding.severity == Severity::Critical);
        if let Some(finding) = critical.or(blocked) {
            out.push(
                Finding::new(
                    Severity::Warning,
                    Kind::SummaryDisagrees,
                    format!("Ready=True disagrees with the facts: {}", finding.cause),
                )
                .fact(format!("status.conditions[Ready]=True; {}", finding.fact))
                .action("trust the facts; the operator (or an older one) wrote a summary they do not support"),
            );
        }
    }
    let recorded =
        status.pitr.as_ref().and_then(|pitr| pitr.archive.as_ref()).and_then(|a| a.state.as_ref());
    if recorded == Some(&ArchiveState::Verified) && !archive.ok {
        out.push(
            Finding::new(
                Severity::Warning,
                Kind::SummaryDisagrees,
                format!("status.pitr.archive.state=Verified disagrees with the facts: the archive is {}", archive.state),
            )
            .fact("status.pitr.archive.state=Verified; PITRArchiveReady and the archive say otherwise")
            .action("trust the condition and the archive"),
        );
    }
}
