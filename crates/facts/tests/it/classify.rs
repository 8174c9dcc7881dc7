use bloodraven_crd::fixtures::GroupFixture;
use bloodraven_crd::group::{SiteRole, SiteState};
use bloodraven_facts::{
    GroupObservation, ServerReading, SiteObservation, Unreachable, Writers, classify,
    non_candidates_to_fence, site_facts, writers,
};
use jiff::{SignedDuration, Timestamp};

use crate::{A, candidate, set, site};

fn now() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

fn reading(read_only: bool, super_read_only: bool) -> ServerReading {
    ServerReading {
        read_only,
        super_read_only,
        offline_mode: false,
        gtid_executed: set(&format!("{A}:1-10")),
        replica: None,
    }
}

fn seen(
    site: &str,
    seconds_ago: i64,
    reading: Result<ServerReading, Unreachable>,
) -> SiteObservation {
    SiteObservation {
        site: site.to_string(),
        observed_at: now() - SignedDuration::from_secs(seconds_ago),
        reading,
    }
}

#[test]
fn classification_follows_the_flags_and_the_failure_kind() {
    let stale = SignedDuration::from_secs(10);
    let table = [
        (Ok(reading(false, false)), 0, SiteState::Writable),
        (Ok(reading(true, false)), 0, SiteState::ReadOnly),
        (Ok(reading(true, true)), 0, SiteState::ReadOnly),
        // super_read_only alone is enough: MySQL turns read_only on with it.
        (Ok(reading(false, true)), 0, SiteState::ReadOnly),
        (Err(Unreachable::Refused), 0, SiteState::Unreachable),
        (Err(Unreachable::Timeout), 0, SiteState::Unreachable),
        // The server answered with an error: it may still take writes.
        (Err(Unreachable::Error), 0, SiteState::Unknown),
        // Eleven seconds old with a ten-second window: says nothing about now.
        (Ok(reading(false, false)), 11, SiteState::Unknown),
        (Ok(reading(false, false)), 10, SiteState::Writable),
    ];
    for (reading, age, expected) in table {
        let observation = seen("iad", age, reading.clone());
        assert_eq!(classify(&observation, now(), stale), expected, "{reading:?} seen {age}s ago");
    }
}

#[test]
fn site_facts_keep_declared_order_and_drop_stale_readings() {
    let group = GroupFixture::three_sites().build();
    let sites: Vec<String> = group.spec.sites.iter().map(|site| site.name.clone()).collect();
    let observation = GroupObservation {
        sites: vec![
            seen(&sites[2], 0, Ok(reading(true, true))),
            seen(&sites[0], 0, Ok(reading(false, false))),
            seen(&sites[1], 60, Ok(reading(true, true))),
        ],
    };
    let facts = site_facts(&group.spec, &observation, now(), SignedDuration::from_secs(10));
    let names: Vec<&str> = facts.iter().map(|site| site.name.as_str()).collect();
    assert_eq!(names, sites.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(facts[0].state, SiteState::Writable);
    assert_eq!(facts[1].state, SiteState::Unknown);
    assert_eq!(facts[1].gtid_executed, None, "a stale reading carries no executed set");
    assert!(facts[1].observed_at.is_some(), "but the time it was last seen stays");
    assert_eq!(facts[2].state, SiteState::ReadOnly);
}

#[test]
fn writers_compare_with_the_recorded_active_site() {
    use SiteState::{ReadOnly, Unreachable as Down, Writable};
    let gtid = format!("{A}:1-3");
    let iad = |state| candidate("iad", state, &gtid);
    let pdx = |state| candidate("pdx", state, &gtid);
    let fra = |state| site("fra", SiteRole::DisasterRecovery, state, &gtid);

    assert_eq!(writers(&[iad(ReadOnly), pdx(Down)], Some("iad")), Writers::None);
    assert_eq!(
        writers(&[iad(Writable), pdx(ReadOnly)], Some("iad")),
        Writers::Consistent { active: "iad".into() }
    );
    assert_eq!(
        writers(&[iad(ReadOnly), pdx(Writable)], Some("iad")),
        Writers::Moved { recorded: Some("iad".into()), observed: "pdx".into() }
    );
    assert_eq!(
        writers(&[iad(ReadOnly), pdx(Writable)], None),
        Writers::Moved { recorded: None, observed: "pdx".into() }
    );
    assert_eq!(
        writers(&[iad(ReadOnly), pdx(ReadOnly), fra(Writable)], Some("iad")),
        Writers::NotCandidate { site: "fra".into(), role: SiteRole::DisasterRecovery }
    );
    assert_eq!(
        writers(&[iad(Writable), pdx(ReadOnly), fra(Writable)], Some("iad")),
        Writers::Several { sites: vec!["iad".into(), "fra".into()] }
    );
}

#[test]
fn writable_readers_and_disaster_recovery_sites_are_fenced_even_as_the_only_writers() {
    let gtid = format!("{A}:1-3");
    let facts = [
        candidate("iad", SiteState::ReadOnly, &gtid),
        site("reader", SiteRole::ReadOnly, SiteState::Writable, &gtid),
        site("fra", SiteRole::DisasterRecovery, SiteState::Writable, &gtid),
    ];
    assert_eq!(non_candidates_to_fence(&facts), vec!["reader".to_string(), "fra".to_string()]);
}
