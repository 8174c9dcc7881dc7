use bloodraven_facts::{
    Convergence, ReplicaObservation, RepointReason, SourceAddress, convergence, distance,
};

use crate::{A, B, set};

const PRIMARY: SourceAddress<'static> = SourceAddress { host: "orders-iad-internal", port: 3306 };

fn channel(host: &str, port: u16, io: bool, sql: bool) -> ReplicaObservation {
    ReplicaObservation {
        source_host: host.into(),
        source_port: port,
        io_running: io,
        sql_running: sql,
        auto_position: true,
        ..ReplicaObservation::default()
    }
}

#[test]
fn a_follower_replicating_from_the_primary_is_converged() {
    let primary = set(&format!("{A}:1-10"));
    let follower = set(&format!("{A}:1-8"));
    let ok = channel("ORDERS-IAD-INTERNAL", 3306, true, true);
    assert_eq!(convergence(&primary, PRIMARY, &follower, Some(&ok)), Convergence::Converged);
}

#[test]
fn chained_stopped_or_missing_channels_are_repointed() {
    let primary = set(&format!("{A}:1-10"));
    let follower = set(&format!("{A}:1-8"));
    let chained = channel("orders-pdx-internal", 3306, true, true);
    assert_eq!(
        convergence(&primary, PRIMARY, &follower, Some(&chained)),
        Convergence::Repoint(RepointReason::WrongSource {
            host: "orders-pdx-internal".into(),
            port: 3306
        })
    );
    let stopped = channel("orders-iad-internal", 3306, false, true);
    assert_eq!(
        convergence(&primary, PRIMARY, &follower, Some(&stopped)),
        Convergence::Repoint(RepointReason::Stopped { io_running: false, sql_running: true })
    );
    let mut positional = channel("orders-iad-internal", 3306, true, true);
    positional.auto_position = false;
    assert_eq!(
        convergence(&primary, PRIMARY, &follower, Some(&positional)),
        Convergence::Repoint(RepointReason::NoAutoPosition)
    );
    assert_eq!(
        convergence(&primary, PRIMARY, &follower, None),
        Convergence::Repoint(RepointReason::NoChannel)
    );
}

#[test]
fn a_diverged_follower_is_blocked_whatever_its_channel_says() {
    let primary = set(&format!("{A}:1-10"));
    let follower = set(&format!("{A}:1-8,{B}:1-2"));
    let ok = channel("orders-iad-internal", 3306, true, true);
    assert_eq!(
        convergence(&primary, PRIMARY, &follower, Some(&ok)),
        Convergence::Diverged { divergent: set(&format!("{B}:1-2")) }
    );
}

#[test]
fn distance_counts_both_ways_without_double_counting() {
    let primary = set(&format!("{A}:1-5:3-10"));
    let follower = set(&format!("{A}:1-4,{B}:7"));
    let gap = distance(&primary, &follower);
    assert_eq!(gap.behind, 6);
    assert_eq!(gap.ahead, set(&format!("{B}:7")));
    assert!(!gap.is_contained());
    assert!(distance(&primary, &primary).is_caught_up());
}
