use proptest::prelude::*;

use super::*;

const LEASE: Duration = Duration::from_secs(20);
const TIMINGS: Timings = Timings { lease_timeout: LEASE, freshness: Duration::from_secs(6) };

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn names(site: &str, seconds: i64) -> Authority {
    Authority {
        active_site: Some(site.to_owned()),
        observed_at: at(seconds),
        topology_generation: 1,
    }
}

/// A released primary: booted at 0, named active by the operator at 1, writable since 1.
fn primary() -> PeerView {
    let peers = ["pdx:8080".to_owned(), "fra:8080".to_owned()];
    let mut view = PeerView::new("iad", &peers, at(0));
    view.record_server(ServerState::Writable, at(0));
    view.record_operator(Some(names("iad", 1)), &TIMINGS, at(1));
    assert_eq!(view.startup, Startup::Released);
    view
}

fn is_lease(action: &Action) -> bool {
    matches!(action, Action::Fence(FenceReason::LeaseExpired { .. }))
}

#[test]
fn a_booting_server_is_fenced_until_the_operator_names_it() {
    let mut view = PeerView::new("iad", &["pdx:8080".to_owned()], at(0));
    assert_eq!(decide(&view, &TIMINGS, at(0)), Action::Hold, "nothing read yet");
    view.record_server(ServerState::ReadOnly, at(0));
    assert_eq!(
        decide(&view, &TIMINGS, at(0)),
        Action::Fence(FenceReason::StartupUnconfirmed),
        "read_only alone is not the fence the net asks for"
    );
    view.record_server(ServerState::Fenced, at(1));
    assert_eq!(decide(&view, &TIMINGS, at(1)), Action::Hold);
    // The operator names another site: still pending.
    view.record_operator(Some(names("pdx", 2)), &TIMINGS, at(2));
    assert_eq!(view.startup, Startup::Pending);
    // A stale observation naming it does not release it.
    view.record_peer("pdx:8080", Some(names("iad", -30)), &TIMINGS, at(3));
    assert_eq!(view.startup, Startup::Pending);
    // A fresh one relayed by a peer does.
    view.record_peer("pdx:8080", Some(names("iad", 3)), &TIMINGS, at(4));
    assert_eq!(view.startup, Startup::Released);
}

#[test]
fn a_sidecar_restarting_beside_a_writable_server_fences_it_unless_it_is_named() {
    let mut view = PeerView::new("iad", &[], at(0));
    view.record_server(ServerState::Writable, at(0));
    assert_eq!(decide(&view, &TIMINGS, at(0)), Action::Fence(FenceReason::StartupUnconfirmed));

    let mut view = PeerView::new("iad", &[], at(0));
    view.record_operator(Some(names("iad", 0)), &TIMINGS, at(0));
    view.record_server(ServerState::Writable, at(0));
    assert_eq!(decide(&view, &TIMINGS, at(0)), Action::Hold);
}

#[test]
fn the_operator_lifting_the_fence_releases_the_startup_net() {
    let mut view = PeerView::new("iad", &[], at(0));
    view.record_server(ServerState::Fenced, at(0));
    view.record_server(ServerState::Writable, at(2));
    assert_eq!(view.startup, Startup::Released);
    assert_eq!(decide(&view, &TIMINGS, at(2)), Action::Hold);
}

#[test]
fn one_reachable_peer_keeps_the_primary_writable() {
    let mut view = primary();
    for second in (5..200).step_by(5) {
        view.record_peer("fra:8080", None, &TIMINGS, at(second));
        assert_eq!(decide(&view, &TIMINGS, at(second)), Action::Hold, "at {second}s");
    }
}

#[test]
fn the_operator_and_every_peer_silent_beyond_the_lease_fences() {
    let view = primary();
    assert_eq!(decide(&view, &TIMINGS, at(21)), Action::Hold, "20 s after the operator");
    let action = decide(&view, &TIMINGS, at(22));
    assert_eq!(
        action,
        Action::Fence(FenceReason::LeaseExpired {
            operator_last_ok: Some(at(1)),
            peer_last_ok: None
        })
    );
}

#[test]
fn the_lease_counts_from_start_and_from_turning_writable() {
    let mut view = PeerView::new("iad", &["pdx:8080".to_owned()], at(0));
    view.record_server(ServerState::Fenced, at(0));
    view.record_server(ServerState::Writable, at(100));
    assert_eq!(decide(&view, &TIMINGS, at(119)), Action::Hold, "a full lease after promotion");
    assert!(is_lease(&decide(&view, &TIMINGS, at(121))));
}

#[test]
fn a_fresh_observation_naming_another_site_fences_a_stale_primary() {
    let mut view = primary();
    view.record_peer("pdx:8080", Some(names("pdx", 10)), &TIMINGS, at(11));
    assert_eq!(
        decide(&view, &TIMINGS, at(11)),
        Action::Fence(FenceReason::AuthorityNamesOther {
            active_site: "pdx".to_owned(),
            observed_at: at(10)
        })
    );
    // Once stale it no longer counts, and the reachable peer keeps it writable.
    view.record_peer("pdx:8080", None, &TIMINGS, at(30));
    assert_eq!(decide(&view, &TIMINGS, at(30)), Action::Hold);
}

#[test]
fn an_observation_older_than_the_promotion_does_not_fence_it() {
    let mut view = PeerView::new("pdx", &["iad:8080".to_owned()], at(0));
    view.record_server(ServerState::Fenced, at(0));
    view.record_operator(Some(names("iad", 4)), &TIMINGS, at(4));
    view.record_server(ServerState::Writable, at(5));
    assert_eq!(decide(&view, &TIMINGS, at(5)), Action::Hold, "observed before the promotion");
}

#[test]
fn an_older_relay_never_replaces_a_newer_observation_and_far_future_ones_are_ignored() {
    let mut view = primary();
    view.record_peer("pdx:8080", Some(names("pdx", 0)), &TIMINGS, at(2));
    assert_eq!(view.authority.as_ref().unwrap().authority.active_site.as_deref(), Some("iad"));
    view.record_peer("pdx:8080", Some(names("pdx", 3600)), &TIMINGS, at(3));
    assert_eq!(view.authority.as_ref().unwrap().authority.observed_at, at(1));
}

fn timestamp() -> impl Strategy<Value = Option<i64>> {
    proptest::option::of(0_i64..400)
}

fn server() -> impl Strategy<Value = ServerState> {
    prop_oneof![
        Just(ServerState::Unknown),
        Just(ServerState::Fenced),
        Just(ServerState::ReadOnly),
        Just(ServerState::Writable),
    ]
}

fn authority() -> impl Strategy<Value = Option<Authority>> {
    proptest::option::of(
        (
            proptest::option::of(prop_oneof![Just("iad".to_owned()), Just("pdx".to_owned())]),
            0_i64..400,
        )
            .prop_map(|(site, seconds)| Authority {
                active_site: site,
                observed_at: at(seconds),
                topology_generation: 0,
            }),
    )
}

prop_compose! {
    fn view()(
        operator in timestamp(),
        peers in proptest::collection::vec(timestamp(), 0..4),
        held in authority(),
        server in server(),
        since in timestamp(),
        released in any::<bool>(),
    ) -> PeerView {
        PeerView {
            site: "iad".to_owned(),
            started_at: at(0),
            operator_last_ok: operator.map(at),
            peers: peers.iter().enumerate().map(|(i, last)| PeerLiveness {
                address: format!("peer{i}:8080"),
                last_ok: last.map(at),
            }).collect(),
            authority: held.map(|authority| HeldAuthority { authority, via: Via::Operator }),
            server,
            writable_since: if server == ServerState::Writable { since.map(at) } else { None },
            startup: if released { Startup::Released } else { Startup::Pending },
            read_once: true,
        }
    }
}

proptest! {
    /// A fenced or unread server is never fenced again.
    #[test]
    fn nothing_is_done_to_a_fenced_or_unread_server(view in view(), now in 0_i64..500) {
        prop_assume!(matches!(view.server, ServerState::Fenced | ServerState::Unknown));
        prop_assert_eq!(decide(&view, &TIMINGS, at(now)), Action::Hold);
    }

    /// The lease rule fires only when the operator and every peer are silent beyond the lease
    /// (counted from start or promotion), and then it always fires unless another rule does.
    #[test]
    fn the_lease_fires_exactly_when_everyone_is_silent(view in view(), now in 0_i64..500) {
        let action = decide(&view, &TIMINGS, at(now));
        let base = view.writable_since.unwrap_or(at(0)).max(at(0));
        let heard = |last: Option<Timestamp>| {
            now - (last.map_or(base, |t| t.max(base)).as_second() - 1_800_000_000) <= 20
        };
        let someone = heard(view.operator_last_ok) || view.peers.iter().any(|p| heard(p.last_ok));
        if is_lease(&action) {
            prop_assert!(view.server == ServerState::Writable && !someone);
            prop_assert_eq!(view.startup, Startup::Released);
        }
        if view.server == ServerState::Writable && view.startup == Startup::Released && !someone {
            prop_assert!(action != Action::Hold, "everyone silent, yet {:?}", action);
        }
    }

    /// A released writable server whose operator observation names it (or nothing fresh names
    /// another site) is fenced only by the lease.
    #[test]
    fn only_another_fresh_name_fences_without_the_lease(view in view(), now in 0_i64..500) {
        if let Action::Fence(FenceReason::AuthorityNamesOther { active_site, observed_at }) =
            decide(&view, &TIMINGS, at(now))
        {
            prop_assert_ne!(active_site.as_str(), "iad");
            let held = view.fresh_authority(&TIMINGS, at(now));
            prop_assert!(held.is_some());
            prop_assert!(observed_at > view.writable_since.unwrap_or(at(0)));
        }
    }

    /// Hearing from a peer never turns a hold into a lease fence.
    #[test]
    fn hearing_a_peer_never_causes_a_lease_fence(mut view in view(), now in 0_i64..500) {
        prop_assume!(!view.peers.is_empty());
        let before = decide(&view, &TIMINGS, at(now));
        let address = view.peers[0].address.clone();
        view.record_peer(&address, None, &TIMINGS, at(now));
        let after = decide(&view, &TIMINGS, at(now));
        prop_assert!(!is_lease(&after), "{:?} -> {:?}", before, after);
    }
}
