//! Split-brain resolution (topology document, "Split-brain resolution").

use crate::classify::SiteFacts;

/// How the winner was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WinnerBy {
    /// The site the operator itself last recorded as active (`status.activeSite`) is writable:
    /// applications were sent there, so it keeps the writes (the "recent failover history" of
    /// the document; spec ambiguity 20).
    RecordedActive,
    /// The first entry of `sitePriorities` that is writable and a PrimaryCandidate.
    Priority,
}

/// Why no winner can be named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoWinner {
    /// `sitePriorities` is empty.
    EmptyPriorities,
    /// No entry of `sitePriorities` is a writable PrimaryCandidate.
    NoListedWritableCandidate,
}

impl std::fmt::Display for WinnerBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::RecordedActive => "it is the recorded active site",
            Self::Priority => "it is the first writable candidate of sitePriorities",
        })
    }
}

impl std::fmt::Display for NoWinner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::EmptyPriorities => "sitePriorities is empty",
            Self::NoListedWritableCandidate => {
                "no entry of sitePriorities is a writable PrimaryCandidate"
            }
        })
    }
}

/// What to do when more than one site is writable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SplitBrain {
    /// Keep `winner` writable and fence every site in `fence` (`super_read_only=ON`).
    Resolve {
        /// The site that stays writable.
        winner: String,
        /// How it was chosen.
        by: WinnerBy,
        /// The other writable sites, in declared order.
        fence: Vec<String>,
    },
    /// Alert only: manual resolution ("don't guess").
    AlertOnly {
        /// The writable sites, in declared order.
        writable: Vec<String>,
        /// Why no winner was named.
        why: NoWinner,
    },
}

/// Resolves a split brain: `None` when at most one site is writable.
///
/// The recorded active site wins when it is writable and a PrimaryCandidate; otherwise the first
/// `sitePriorities` entry that is writable and a PrimaryCandidate; otherwise alert only. Writable
/// readers are among the fenced (they are fenced on every poll anyway).
pub fn resolve_split_brain(
    facts: &[SiteFacts],
    recorded_active: Option<&str>,
    priorities: &[String],
) -> Option<SplitBrain> {
    let writable: Vec<&SiteFacts> = facts.iter().filter(|site| site.is_writable()).collect();
    if writable.len() < 2 {
        return None;
    }
    let writable_candidate =
        |name: &str| writable.iter().find(|site| site.name == name && site.is_candidate()).copied();
    let winner = recorded_active
        .and_then(writable_candidate)
        .map(|site| (site, WinnerBy::RecordedActive))
        .or_else(|| {
            priorities
                .iter()
                .find_map(|name| writable_candidate(name))
                .map(|site| (site, WinnerBy::Priority))
        });
    Some(match winner {
        Some((winner, by)) => SplitBrain::Resolve {
            winner: winner.name.clone(),
            by,
            fence: writable
                .iter()
                .filter(|site| site.name != winner.name)
                .map(|site| site.name.clone())
                .collect(),
        },
        None => SplitBrain::AlertOnly {
            writable: writable.iter().map(|site| site.name.clone()).collect(),
            why: if priorities.is_empty() {
                NoWinner::EmptyPriorities
            } else {
                NoWinner::NoListedWritableCandidate
            },
        },
    })
}
