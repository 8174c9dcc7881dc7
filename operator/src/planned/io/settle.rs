//! Settling an ambiguous status write on the API server: uncached re-reads and the status
//! fence, around the pure [`crate::planned::settle`].

use std::time::{Duration, Instant};

use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_crd::annotations::{PLANNED_FAILOVER_STATUS_FENCE, StatusFence};
use kube::api::{Api, Patch, PatchParams};

use crate::manager::GroupKey;
use crate::planned::{Reread, Settlement, StatusWrite, settle};

/// How an ambiguous write was settled.
#[derive(Debug)]
pub(crate) enum Settled {
    /// It committed: the group as re-read.
    Landed(Box<MysqlFailoverGroup>),
    /// It can never commit: the group as last read (or as the fence left it).
    NotLanded(Box<MysqlFailoverGroup>),
    /// Neither could be proven within the settlement budget.
    Unknown,
}

/// The pause between settlement attempts that could not prove anything.
const RETRY: Duration = Duration::from_millis(100);

/// The stored status fence of `group`, when it parses.
fn stored_fence(group: &MysqlFailoverGroup) -> Option<StatusFence> {
    let annotations = group.metadata.annotations.as_ref()?;
    StatusFence::parse(annotations.get(PLANNED_FAILOVER_STATUS_FENCE)?).ok()
}

/// Settles `write` (conditioned on `write.resource_version`): re-reads uncached, compares,
/// and fences an unchanged object, within `budget`; each request bounded by `bound`.
pub(crate) async fn ambiguous_write(
    groups: &Api<MysqlFailoverGroup>,
    key: &GroupKey,
    write: &StatusWrite,
    budget: Duration,
    bound: Duration,
) -> Settled {
    let started = Instant::now();
    let mut attempts = 0_u32;
    while started.elapsed() < budget {
        attempts += 1;
        if attempts > 1 {
            tokio::time::sleep(RETRY).await;
        }
        let group = match tokio::time::timeout(bound, groups.get(&key.name)).await {
            Ok(Ok(group)) => group,
            Ok(Err(error)) => {
                tracing::warn!(namespace = %key.namespace, group = %key.name, %error, attempts, "planned failover: settling: the re-read failed");
                continue;
            }
            Err(_) => {
                tracing::warn!(namespace = %key.namespace, group = %key.name, ?bound, attempts, "planned failover: settling: the re-read was not answered");
                continue;
            }
        };
        let status = group.status.as_ref();
        let reread = Reread {
            resource_version: group.metadata.resource_version.as_deref().unwrap_or_default(),
            block: status.and_then(|status| status.planned_failover.as_ref()),
            hold: status.and_then(|status| status.planned_failover_hold.as_ref()),
            status_fence: stored_fence(&group),
        };
        let fence = match settle(write, &reread, crate::planned::io::observe::now()) {
            Settlement::Landed => {
                tracing::info!(namespace = %key.namespace, group = %key.name, attempts, "planned failover: settled: the status write committed");
                return Settled::Landed(Box::new(group));
            }
            Settlement::NotLanded => {
                tracing::info!(namespace = %key.namespace, group = %key.name, attempts, "planned failover: settled: the status write can never commit");
                return Settled::NotLanded(Box::new(group));
            }
            Settlement::Unprovable => {
                tracing::warn!(namespace = %key.namespace, group = %key.name, "planned failover: settling: the status fence cannot move; the write stays unknown");
                return Settled::Unknown;
            }
            Settlement::Fence(fence) => fence,
        };
        // Conditioned on the version the write was: once this commits, that write cannot.
        let patch = serde_json::json!({
            "metadata": {
                "resourceVersion": write.resource_version,
                "annotations": { PLANNED_FAILOVER_STATUS_FENCE: fence.to_string() },
            }
        });
        let (params, patch) = (PatchParams::default(), Patch::Merge(patch));
        match tokio::time::timeout(bound, groups.patch(&key.name, &params, &patch)).await {
            Ok(Ok(fenced))
                if fenced.metadata.resource_version.as_deref()
                    != Some(write.resource_version.as_str()) =>
            {
                tracing::info!(namespace = %key.namespace, group = %key.name, %fence, attempts, "planned failover: settled: the status fence proves the write can never commit");
                return Settled::NotLanded(Box::new(fenced));
            }
            // Not moved (a no-op), refused, conflicting (the object changed: the write may be
            // what changed it), or itself ambiguous: read again.
            Ok(Ok(_)) => {}
            Ok(Err(error)) => {
                tracing::info!(namespace = %key.namespace, group = %key.name, %error, attempts, "planned failover: settling: the status fence was not written; reading again");
            }
            Err(_) => {
                tracing::info!(namespace = %key.namespace, group = %key.name, ?bound, attempts, "planned failover: settling: the status fence was not answered; reading again");
            }
        }
    }
    tracing::warn!(namespace = %key.namespace, group = %key.name, attempts, ?budget, "planned failover: settling: the status write stays unknown after its attempts");
    Settled::Unknown
}
