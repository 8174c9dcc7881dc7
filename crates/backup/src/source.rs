//! Dump source selection: a replica when it is healthy (reachable, replicating, lag within
//! `maxLagSecondsForSource`), else the primary; a pinned `spec.sourceSite` is used or the
//! backup fails at once. While no source is healthy the backup waits, for at most
//! [`PENDING_BOUND`].

use std::time::Duration;

use jiff::Timestamp;

/// The default `spec.backup.maxLagSecondsForSource`.
pub const DEFAULT_MAX_LAG_SECONDS: i64 = 300;
/// How long a backup may stay Pending (any pending reason) before it fails.
pub const PENDING_BOUND: Duration = Duration::from_secs(30 * 60);

/// What the operator observed of one site (in `spec.sites` order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteView {
    pub name: String,
    /// The site is the active (writable) site.
    pub primary: bool,
    /// Its server answered the last poll.
    pub reachable: bool,
    /// Both replication threads run (replicas only).
    pub replicating: bool,
    /// Seconds behind the primary; `None` when unknown.
    pub lag_seconds: Option<i64>,
}

/// The selection's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Dump from this site.
    Site { site: String, fallback_to_primary: bool },
    /// Nothing healthy now: stay Pending with `WaitingForHealthySource`.
    Wait { message: String },
    /// Fail now with `NoHealthySource` (a pinned site that cannot be used).
    Fail { message: String },
}

fn replica_problem(site: &SiteView, max_lag: i64) -> Option<String> {
    if !site.reachable {
        return Some(format!("replica {} is unreachable", site.name));
    }
    if !site.replicating {
        return Some(format!("replica {} is not replicating", site.name));
    }
    match site.lag_seconds {
        None => Some(format!("replica {} reports no lag", site.name)),
        Some(lag) if lag > max_lag => Some(format!(
            "replica {} lags {lag}s, more than maxLagSecondsForSource {max_lag}s",
            site.name
        )),
        Some(_) => None,
    }
}

/// Chooses the dump source among `sites`.
pub fn select_source(
    sites: &[SiteView],
    pinned: Option<&str>,
    max_lag_seconds: Option<i64>,
) -> Selection {
    let max_lag = max_lag_seconds.unwrap_or(DEFAULT_MAX_LAG_SECONDS);
    if let Some(pinned) = pinned {
        let Some(site) = sites.iter().find(|site| site.name == pinned) else {
            return Selection::Fail {
                message: format!("spec.sourceSite {pinned} is not a site of the group"),
            };
        };
        let problem = if site.primary {
            (!site.reachable).then(|| format!("primary {} is unreachable", site.name))
        } else {
            replica_problem(site, max_lag)
        };
        return match problem {
            None => Selection::Site { site: site.name.clone(), fallback_to_primary: false },
            Some(problem) => Selection::Fail {
                message: format!("spec.sourceSite {pinned} cannot be used: {problem}"),
            },
        };
    }
    let mut problems = Vec::new();
    let mut best: Option<&SiteView> = None;
    for site in sites.iter().filter(|site| !site.primary) {
        match replica_problem(site, max_lag) {
            Some(problem) => problems.push(problem),
            None => {
                if best.is_none_or(|best| site.lag_seconds < best.lag_seconds) {
                    best = Some(site);
                }
            }
        }
    }
    if let Some(site) = best {
        return Selection::Site { site: site.name.clone(), fallback_to_primary: false };
    }
    match sites.iter().find(|site| site.primary) {
        Some(primary) if primary.reachable => Selection::Site {
            site: primary.name.clone(),
            fallback_to_primary: !problems.is_empty(),
        },
        Some(primary) => {
            problems.push(format!("primary {} is unreachable", primary.name));
            Selection::Wait { message: problems.join("; ") }
        }
        None => {
            problems.push("the group has no active site".to_owned());
            Selection::Wait { message: problems.join("; ") }
        }
    }
}

/// A pending backup past [`PENDING_BOUND`]: the failure message
/// `pending for <duration> (<reason>): <message>`; `None` while it may still wait.
pub fn pending_timed_out(
    pending_since: Timestamp,
    now: Timestamp,
    reason: &str,
    message: &str,
) -> Option<String> {
    let waited = now.duration_since(pending_since);
    let bound = jiff::SignedDuration::try_from(PENDING_BOUND).unwrap_or(jiff::SignedDuration::MAX);
    (waited >= bound).then(|| {
        let minutes = waited.as_secs() / 60;
        format!("pending for {minutes}m ({reason}): {message}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(
        name: &str,
        primary: bool,
        reachable: bool,
        replicating: bool,
        lag: Option<i64>,
    ) -> SiteView {
        SiteView { name: name.into(), primary, reachable, replicating, lag_seconds: lag }
    }

    #[test]
    fn a_healthy_replica_is_preferred() {
        let sites = [site("iad", true, true, false, None), site("sfo", false, true, true, Some(3))];
        assert_eq!(
            select_source(&sites, None, None),
            Selection::Site { site: "sfo".into(), fallback_to_primary: false }
        );
    }

    #[test]
    fn the_least_lagging_replica_wins() {
        let sites = [
            site("iad", true, true, false, None),
            site("sfo", false, true, true, Some(30)),
            site("ord", false, true, true, Some(2)),
        ];
        assert_eq!(
            select_source(&sites, None, None),
            Selection::Site { site: "ord".into(), fallback_to_primary: false }
        );
    }

    #[test]
    fn a_lagging_or_broken_replica_falls_back_to_the_primary() {
        for replica in [
            site("sfo", false, false, true, Some(0)),
            site("sfo", false, true, false, Some(0)),
            site("sfo", false, true, true, Some(121)),
            site("sfo", false, true, true, None),
        ] {
            let sites = [site("iad", true, true, false, None), replica];
            assert_eq!(
                select_source(&sites, None, Some(120)),
                Selection::Site { site: "iad".into(), fallback_to_primary: true }
            );
        }
    }

    #[test]
    fn nothing_healthy_waits() {
        let sites = [site("iad", true, false, false, None), site("sfo", false, false, false, None)];
        assert!(matches!(select_source(&sites, None, None), Selection::Wait { .. }));
        assert!(matches!(select_source(&[], None, None), Selection::Wait { .. }));
    }

    #[test]
    fn a_pinned_site_is_used_or_fails_at_once() {
        let sites =
            [site("iad", true, true, false, None), site("sfo", false, true, false, Some(0))];
        assert_eq!(
            select_source(&sites, Some("iad"), None),
            Selection::Site { site: "iad".into(), fallback_to_primary: false }
        );
        assert!(matches!(select_source(&sites, Some("sfo"), None), Selection::Fail { .. }));
        assert!(matches!(select_source(&sites, Some("nyc"), None), Selection::Fail { .. }));
    }

    #[test]
    fn pending_is_bounded_by_30_minutes() {
        let since: Timestamp = "2026-11-05T09:00:00Z".parse().unwrap();
        let early: Timestamp = "2026-11-05T09:29:59Z".parse().unwrap();
        let late: Timestamp = "2026-11-05T09:30:00Z".parse().unwrap();
        assert_eq!(pending_timed_out(since, early, "WaitingForHealthySource", "m"), None);
        assert_eq!(
            pending_timed_out(since, late, "WaitingForHealthySource", "m").unwrap(),
            "pending for 30m (WaitingForHealthySource): m"
        );
    }
}
