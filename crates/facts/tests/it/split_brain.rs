use bloodraven_crd::group::{SiteRole, SiteState};
use bloodraven_facts::{NoWinner, SplitBrain, WinnerBy, resolve_split_brain};

use crate::{A, candidate, site};

use SiteState::{ReadOnly, Writable};

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| name.to_string()).collect()
}

#[test]
fn one_writer_is_no_split_brain() {
    let gtid = format!("{A}:1");
    let facts = [candidate("iad", Writable, &gtid), candidate("pdx", ReadOnly, &gtid)];
    assert_eq!(resolve_split_brain(&facts, Some("iad"), &names(&["iad"])), None);
}

#[test]
fn the_recorded_active_site_wins_over_priorities() {
    // pdx was promoted by the operator (recorded active); iad came back writable. Priorities
    // list iad first, but applications were sent to pdx: iad is fenced.
    let gtid = format!("{A}:1");
    let facts = [candidate("iad", Writable, &gtid), candidate("pdx", Writable, &gtid)];
    assert_eq!(
        resolve_split_brain(&facts, Some("pdx"), &names(&["iad", "pdx"])),
        Some(SplitBrain::Resolve {
            winner: "pdx".into(),
            by: WinnerBy::RecordedActive,
            fence: names(&["iad"])
        })
    );
}

#[test]
fn without_history_the_first_writable_listed_candidate_wins() {
    let gtid = format!("{A}:1");
    let facts = [
        candidate("iad", Writable, &gtid),
        candidate("pdx", Writable, &gtid),
        site("fra", SiteRole::DisasterRecovery, Writable, &gtid),
        site("reader", SiteRole::ReadOnly, Writable, &gtid),
    ];
    // fra is listed first but is not a PrimaryCandidate; the reader cannot win either.
    assert_eq!(
        resolve_split_brain(&facts, None, &names(&["fra", "reader", "pdx", "iad"])),
        Some(SplitBrain::Resolve {
            winner: "pdx".into(),
            by: WinnerBy::Priority,
            fence: names(&["iad", "fra", "reader"])
        })
    );
    // A recorded active site that is not writable gives no history.
    assert_eq!(
        resolve_split_brain(&facts[..2], Some("sfo"), &names(&["iad"])),
        Some(SplitBrain::Resolve {
            winner: "iad".into(),
            by: WinnerBy::Priority,
            fence: names(&["pdx"])
        })
    );
}

#[test]
fn empty_or_unmatched_priorities_alert_only() {
    let gtid = format!("{A}:1");
    let facts = [
        candidate("iad", Writable, &gtid),
        candidate("pdx", Writable, &gtid),
        candidate("sfo", ReadOnly, &gtid),
    ];
    assert_eq!(
        resolve_split_brain(&facts, None, &[]),
        Some(SplitBrain::AlertOnly {
            writable: names(&["iad", "pdx"]),
            why: NoWinner::EmptyPriorities
        })
    );
    assert_eq!(
        resolve_split_brain(&facts, None, &names(&["sfo"])),
        Some(SplitBrain::AlertOnly {
            writable: names(&["iad", "pdx"]),
            why: NoWinner::NoListedWritableCandidate
        })
    );
}
