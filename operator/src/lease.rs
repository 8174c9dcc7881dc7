//! Leader election with a `coordination.k8s.io/v1` Lease: only the holder runs controllers, so
//! two operator replicas never both act.
//!
//! The decision is pure ([`decide`]); [`try_acquire_or_renew`] reads the Lease and writes it
//! with its `resourceVersion`, so two replicas racing for an expired Lease cannot both win
//! (the loser's write gets 409 Conflict).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};

/// Which Lease, held by whom, for how long.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name (the leader election id).
    pub name: String,
    /// This replica's identity (its pod name).
    pub identity: String,
    /// How long a Lease not renewed stays the holder's.
    pub duration: Duration,
}

/// What to do with the Lease as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No Lease yet: create it.
    Create,
    /// This replica holds it: renew.
    Renew,
    /// The holder stopped renewing: take it over.
    TakeOver,
    /// Another replica holds it until `until`.
    Wait {
        /// The holder.
        holder: String,
        /// When its hold lapses unless renewed.
        until: Timestamp,
    },
}

/// Decides from the Lease as read at `now`.
pub fn decide(lease: Option<&Lease>, identity: &str, now: Timestamp) -> Decision {
    let Some(spec) = lease.and_then(|lease| lease.spec.as_ref()) else {
        return if lease.is_some() { Decision::TakeOver } else { Decision::Create };
    };
    let holder = spec.holder_identity.clone().unwrap_or_default();
    if holder == identity {
        return Decision::Renew;
    }
    if holder.is_empty() {
        return Decision::TakeOver;
    }
    let seconds = i64::from(spec.lease_duration_seconds.unwrap_or(15).max(1));
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref()).map(|time| time.0);
    match renewed {
        Some(renewed) => {
            let until =
                renewed.saturating_add(SignedDuration::from_secs(seconds)).unwrap_or(renewed);
            if now >= until { Decision::TakeOver } else { Decision::Wait { holder, until } }
        }
        None => Decision::TakeOver,
    }
}

fn spec(
    config: &LeaseConfig,
    now: Timestamp,
    previous: Option<&LeaseSpec>,
    takeover: bool,
) -> LeaseSpec {
    let transitions = previous.and_then(|spec| spec.lease_transitions).unwrap_or(0);
    LeaseSpec {
        holder_identity: Some(config.identity.clone()),
        lease_duration_seconds: Some(i32::try_from(config.duration.as_secs().max(1)).unwrap_or(15)),
        acquire_time: if takeover || previous.is_none() {
            Some(MicroTime(now))
        } else {
            previous.and_then(|spec| spec.acquire_time.clone())
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(if takeover { transitions + 1 } else { transitions }),
        ..LeaseSpec::default()
    }
}

/// One round: `Ok(true)` when this replica holds the Lease after it.
///
/// # Errors
/// When the API server fails a request other than by a write conflict.
pub async fn try_acquire_or_renew(
    client: &kube::Client,
    config: &LeaseConfig,
) -> Result<bool, kube::Error> {
    let api: Api<Lease> = Api::namespaced(client.clone(), &config.namespace);
    let current = api.get_opt(&config.name).await?;
    let now = Timestamp::now();
    let result = match decide(current.as_ref(), &config.identity, now) {
        Decision::Wait { .. } => return Ok(false),
        Decision::Create => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(config.name.clone()),
                    namespace: Some(config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(spec(config, now, None, false)),
            };
            api.create(&PostParams::default(), &lease).await.map(drop)
        }
        decision @ (Decision::Renew | Decision::TakeOver) => {
            let Some(mut lease) = current else { return Ok(false) };
            let takeover = decision == Decision::TakeOver;
            lease.spec = Some(spec(config, now, lease.spec.as_ref(), takeover));
            api.replace(&config.name, &PostParams::default(), &lease).await.map(drop)
        }
    };
    match result {
        Ok(()) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error),
    }
}

/// Waits until this replica holds the Lease, trying every `duration / 3`.
///
/// # Errors
/// When the API server fails a request other than by a write conflict.
pub async fn acquire(client: &kube::Client, config: &LeaseConfig) -> Result<(), kube::Error> {
    loop {
        if try_acquire_or_renew(client, config).await? {
            tracing::info!(lease = %config.name, identity = %config.identity, "leader lease acquired");
            return Ok(());
        }
        tokio::time::sleep(config.duration / 3).await;
    }
}

/// Renews the held Lease every `duration / 3`; returns when it is lost (or cannot be renewed
/// within `duration`), after which the caller must stop acting.
pub async fn hold(client: &kube::Client, config: &LeaseConfig) {
    let mut last_renewed = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(config.duration / 3).await;
        match try_acquire_or_renew(client, config).await {
            Ok(true) => last_renewed = tokio::time::Instant::now(),
            Ok(false) => {
                tracing::error!(lease = %config.name, "leader lease lost to another replica");
                return;
            }
            Err(error) => {
                tracing::warn!(lease = %config.name, %error, "renewing the leader lease failed")
            }
        }
        if last_renewed.elapsed() >= config.duration {
            tracing::error!(lease = %config.name, "leader lease not renewed within its duration");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, renewed: &str, seconds: i32) -> Lease {
        Lease {
            metadata: ObjectMeta::default(),
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.to_owned()),
                lease_duration_seconds: Some(seconds),
                renew_time: Some(MicroTime(renewed.parse().unwrap())),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn a_live_lease_of_another_replica_is_waited_for_and_an_expired_one_taken() {
        let now: Timestamp = "2026-11-30T17:00:10Z".parse().unwrap();
        assert_eq!(decide(None, "a", now), Decision::Create);
        assert_eq!(
            decide(Some(&lease("a", "2026-11-30T17:00:00Z", 15)), "a", now),
            Decision::Renew
        );
        assert_eq!(
            decide(Some(&lease("b", "2026-11-30T17:00:00Z", 15)), "a", now),
            Decision::Wait {
                holder: "b".to_owned(),
                until: "2026-11-30T17:00:15Z".parse().unwrap()
            }
        );
        assert_eq!(
            decide(Some(&lease("b", "2026-11-30T16:59:55Z", 15)), "a", now),
            Decision::TakeOver
        );
        assert_eq!(
            decide(Some(&lease("", "2026-11-30T17:00:09Z", 15)), "a", now),
            Decision::TakeOver
        );
    }
}
