//! Steps of operator drills (`requires: [operator]`): the sites are the lab kubelet's pods,
//! the operator owns the topology, and the drill acts as a human or a fault would.

use std::sync::Arc;

use bloodraven_sites::workload::{Workload, WorkloadConfig};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use super::{StepError, World, play_common};
use crate::live::{LiveLab, OperatorLauncher};
use crate::load::LoadedDrill;
use crate::model::{ObjectRef, Step};

/// The API group, version and kind of an object kind a drill names.
pub(crate) fn api_version(kind: &str) -> Result<(&'static str, &'static str), StepError> {
    Ok(match kind {
        "MysqlFailoverGroup" | "MysqlBackup" | "MysqlBackupVerification" => {
            ("shipstream.io", "v1alpha1")
        }
        "Lease" => ("coordination.k8s.io", "v1"),
        "DNSEndpoint" => ("externaldns.k8s.io", "v1alpha1"),
        "Deployment" => ("apps", "v1"),
        "Service" | "Pod" | "ConfigMap" | "Secret" | "PersistentVolumeClaim" => ("", "v1"),
        other => {
            return Err(StepError::Failed(format!(
                "kind {other:?} is not known to the drill runner; known: MysqlFailoverGroup, \
                 MysqlBackup, MysqlBackupVerification, Lease, DNSEndpoint, Deployment, Service, \
                 Pod, ConfigMap, Secret, PersistentVolumeClaim"
            )));
        }
    })
}

/// The kind, `apiVersion` and name an object reference means (defaults: the group; the
/// Lease defaults to the operators' Lease).
pub(crate) fn resolve_object(
    live: &LiveLab,
    object: &ObjectRef,
) -> Result<(String, String, String), StepError> {
    let kind = object.kind.clone().unwrap_or_else(|| "MysqlFailoverGroup".into());
    let (group, version) = api_version(&kind)?;
    let api_version =
        if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
    let name = object.name.clone().unwrap_or_else(|| {
        if kind == "Lease" {
            crate::live::LEASE_NAME.to_owned()
        } else {
            live.group_name().to_owned()
        }
    });
    Ok((kind, api_version, name))
}

async fn merge_patch(live: &LiveLab, object: &ObjectRef, patch: Value) -> Result<(), StepError> {
    let (kind, _, name) = resolve_object(live, object)?;
    let (group, version) = api_version(&kind)?;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, &kind));
    let api: Api<DynamicObject> =
        Api::namespaced_with(live.client().clone(), live.namespace(), &resource);
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .map_err(|e| StepError::Failed(format!("merge-patching {kind} {name}: {e}")))
}

fn live_mut(world: &mut World) -> Result<&mut LiveLab, StepError> {
    world.live.as_mut().ok_or_else(|| StepError::Failed("the group is not started".into()))
}

fn signal(live: &LiveLab, site: &str, signal: &str) -> Result<u32, StepError> {
    let pid = live.pid(site)?;
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .map_err(|e| StepError::Failed(format!("kill {signal} {pid} ({site}): {e}")))?;
    if !status.success() {
        return Err(StepError::Failed(format!("kill {signal} {pid} ({site}) failed: {status}")));
    }
    Ok(pid)
}

pub(super) async fn play(
    drill: &LoadedDrill,
    launcher: &Option<Arc<dyn OperatorLauncher>>,
    world: &mut World,
    step: &Step,
) -> Result<String, StepError> {
    if let Step::StartGroup(_) = step {
        let live = LiveLab::start(&drill.group, launcher.clone()).await?;
        let detail = format!(
            "live lab: group {}/{} from {} applied, lab kubelet runs its sites, operator {:?} \
             started with {}",
            live.namespace(),
            live.group_name(),
            drill.manifest_path.display(),
            crate::DEFAULT_OPERATOR,
            launcher.as_ref().map(|l| l.describe()).unwrap_or_default()
        );
        world.live = Some(live);
        return Ok(detail);
    }
    if let Some(result) = play_common(world, step).await {
        return result;
    }
    match step {
        Step::StartOperator(o) => Ok(live_mut(world)?.start_operator(o.name())?),
        Step::KillOperator(o) => Ok(live_mut(world)?.kill_operator(o.name())?),
        Step::StartWorkload(w) => {
            let name = w.name.clone().unwrap_or_else(|| crate::DEFAULT_WORKLOAD.to_owned());
            let (addr, link) = if w.via == Some(crate::model::WorkloadVia::Dns) {
                // The kubelet sees the operator's DNSEndpoint a watch event after it is
                // written: give it a moment.
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                let link = loop {
                    match world.live()?.dns_link() {
                        Ok(link) => break link,
                        Err(error) if std::time::Instant::now() >= deadline => {
                            return Err(StepError::Failed(format!("waited 30s: {error}")));
                        }
                        Err(_) => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
                    }
                };
                (link.addr(), format!("app:dns ({})", world.live()?.dns_hostname()?))
            } else {
                (world.live()?.primary_addr()?, "app:primary".to_owned())
            };
            let mut config = WorkloadConfig::new(addr);
            if let Some(rate) = w.rate {
                config.rate_per_sec = rate;
            }
            if let Some(first) = w.first_key {
                config.first_key = first;
            }
            config.writer = name.clone();
            let detail = format!(
                "workload {name:?}: {} writes/s from key {} through {link}",
                config.rate_per_sec, config.first_key
            );
            world.workload = Some((name, Workload::start(config)));
            Ok(detail)
        }
        Step::Kill(s) => {
            let pid = signal(world.live()?, &s.site, "-KILL")?;
            Ok(format!("{} mysqld (pid {pid}) SIGKILLed; the kubelet restarts it", s.site))
        }
        Step::Freeze(s) => {
            let pid = signal(world.live()?, &s.site, "-STOP")?;
            Ok(format!("{} mysqld (pid {pid}) frozen (SIGSTOP)", s.site))
        }
        Step::Thaw(s) => {
            let pid = signal(world.live()?, &s.site, "-CONT")?;
            Ok(format!("{} mysqld (pid {pid}) thawed (SIGCONT)", s.site))
        }
        Step::Stop(_) | Step::Restart(_) => Err(StepError::Failed(
            "stop/restart are the kubelet's in the operator's world: use kill (the kubelet \
             restarts it) with a refused operator link to keep it away"
                .into(),
        )),
        Step::Promote(_) => Err(StepError::Failed("a hand promotion races the operator".into())),
        Step::Fence(s) => {
            world.execute(&s.site, &["SET GLOBAL super_read_only = ON"]).await?;
            Ok(format!("{} fenced by hand (super_read_only=ON)", s.site))
        }
        Step::ReplicateFrom(r) => world.replicate_from(&r.site, &r.source).await,
        Step::Unfence(s) => {
            let statements = ["SET GLOBAL super_read_only = OFF", "SET GLOBAL read_only = OFF"];
            world.execute(&s.site, &statements).await?;
            Ok(format!("{} made writable by hand (super_read_only=OFF, read_only=OFF)", s.site))
        }
        Step::ErrantWrite(e) => errant_write(world, &e.site, e.key, e.name.as_deref()).await,
        Step::RecordGtids(r) => {
            let set = world.gtid_executed(&r.site).await?;
            let detail = format!("{} as {:?}: {set}", r.site, r.name);
            world.recorded.insert(r.name.clone(), set);
            Ok(detail)
        }
        Step::Annotate(a) => {
            let value = a.value.clone().map_or(Value::Null, Value::String);
            let patch = json!({"metadata": {"annotations": {a.key.clone(): value}}});
            merge_patch(world.live()?, &a.object, patch).await?;
            Ok(match &a.value {
                Some(v) => format!("annotated {}={v:?}", a.key),
                None => format!("annotation {} removed", a.key),
            })
        }
        Step::Patch(p) => {
            merge_patch(world.live()?, &p.object, p.merge.clone()).await?;
            Ok(format!("merge-patched with {}", p.merge))
        }
        // Played by `play_common` or above.
        Step::StartGroup(_)
        | Step::StopWorkload(_)
        | Step::Cut(_)
        | Step::Refuse(_)
        | Step::Delay(_)
        | Step::DelayApplier(_)
        | Step::Heal(_)
        | Step::Reset(_)
        | Step::Sleep(_)
        | Step::Wait(_)
        | Step::Assert(_) => Err(StepError::Failed(format!("{} was not played", step.kind()))),
    }
}

/// One row written with `super_read_only` lifted for that moment (the operator account holds
/// `CONNECTION_ADMIN`, so `read_only` does not stop it); its GTID kept under `name`.
pub(crate) async fn errant_write(
    world: &mut World,
    site: &str,
    key: u64,
    name: Option<&str>,
) -> Result<String, StepError> {
    let before = world.gtid_executed(site).await?;
    let fenced = world.flags(site).await?.super_read_only;
    let insert =
        format!("INSERT INTO app.ledger (k, writer, written_at_us) VALUES ({key}, 'errant', 0)");
    let mut statements = vec!["SET GLOBAL super_read_only = OFF", insert.as_str()];
    if fenced {
        statements.push("SET GLOBAL super_read_only = ON");
    }
    world.execute(site, &statements).await?;
    let errant = world.gtid_executed(site).await?.difference(&before);
    let detail = format!("errant write of key {key} on {site}: {errant}");
    if let Some(name) = name {
        world.recorded.insert(name.to_owned(), errant);
    }
    Ok(detail)
}
