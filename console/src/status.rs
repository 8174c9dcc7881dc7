//! The `status` verb: reads the groups and prints the report (thin IO over `report`), as a
//! kubectl plugin behaves. Groups are read as raw objects and decoded one by one
//! ([`crate::decode`]): one that does not decode is listed as unreadable, with the path and the
//! error, after the others. Every decodable group gets its verdict
//! ([`crate::verdict`]): a `VERDICT` column, the findings in the single-group report, and the
//! key [`crate::verdict::VERDICT_KEY`] in `-o json|yaml`.
//!
//! Exit codes (decided by the caller from [`Outcome`]): 0 done, 1 error, 2 when `--fail-on`
//! is given and a listed group has a finding at or above it.

use std::io::Write;

use bloodraven_crd::{MysqlBackup, MysqlBackupVerification, MysqlFailoverGroup};
use bloodraven_facts::verdict::{Severity, Verdict};
use futures::StreamExt as _;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;

use crate::cli::{OutputFormat, StatusArgs};
use crate::decode;
use crate::report::{self, ListStyle};

const KIND: &str = "MysqlFailoverGroup";
/// The resource name kubectl uses in its messages.
const RESOURCE: &str = "mysqlfailovergroups";

/// Where to look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    Namespace(String),
    All,
}

impl Scope {
    fn describe(&self) -> String {
        match self {
            Scope::Namespace(namespace) => format!("in namespace {namespace}"),
            Scope::All => "in any namespace".to_owned(),
        }
    }
}

/// An error printed as kubectl prints it (`Error from server (NotFound): ...`), without the
/// `error:` prefix other errors get.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KubectlError(pub String);

/// What `status` found, for the exit code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The worst finding over the listed groups.
    pub worst: Option<Severity>,
}

impl Outcome {
    /// Whether `--fail-on` asks for exit code 2.
    pub fn fails(&self, fail_on: Option<Severity>) -> bool {
        matches!((self.worst, fail_on), (Some(worst), Some(threshold)) if worst >= threshold)
    }
}

/// Turns a client error into kubectl's wording, naming the group when there is one.
pub fn kubectl_error(error: kube::Error, name: Option<&str>) -> anyhow::Error {
    let text = match &error {
        kube::Error::Api(response) if response.code == 404 && name.is_some() => format!(
            "Error from server (NotFound): {RESOURCE} \"{}\" not found",
            name.unwrap_or_default()
        ),
        kube::Error::Api(response) => {
            let reason = if response.reason.is_empty() { "Unknown" } else { &response.reason };
            format!("Error from server ({reason}): {}", response.message)
        }
        other => format!("Unable to connect to the server: {other}"),
    };
    KubectlError(text).into()
}

/// Prints the report for `args` to `out` (notes such as "no groups" to `err`).
pub async fn run(
    client: Client,
    scope: &Scope,
    args: &StatusArgs,
    now: jiff::Timestamp,
    out: &mut impl Write,
    err: &mut impl Write,
) -> anyhow::Result<Outcome> {
    let resource = ApiResource::erase::<MysqlFailoverGroup>(&());
    let api = |resource: &ApiResource| -> Api<DynamicObject> {
        match scope {
            Scope::Namespace(namespace) => {
                Api::namespaced_with(client.clone(), namespace, resource)
            }
            Scope::All => Api::all_with(client.clone(), resource),
        }
    };
    let raw = api(&resource);
    if let (Scope::All, Some(_)) = (scope, &args.group) {
        return Err(KubectlError(
            "error: a resource cannot be retrieved by name across all namespaces".to_owned(),
        )
        .into());
    }
    if let (Some(_), Some(_)) = (&args.group, &args.selector) {
        return Err(KubectlError(
            "error: when retrieving a group by name, a selector (-l) is not allowed".to_owned(),
        )
        .into());
    }
    let mut params = ListParams::default();
    if let Some(selector) = &args.selector {
        params = params.labels(selector);
    }
    let objects = match &args.group {
        Some(name) => vec![raw.get(name).await.map_err(|error| kubectl_error(error, Some(name)))?],
        None => raw.list(&params).await.map_err(|error| kubectl_error(error, None))?.items,
    };
    let (backups, verifications) = related(&api).await;
    let lease = operator_lease_renewed(&client).await;
    let (groups, unreadable) = decode::decode_all::<MysqlFailoverGroup>(KIND, objects.clone());
    let verdicts: Vec<Verdict> = groups
        .iter()
        .map(|group| crate::verdict::of_with_lease(group, &backups, &verifications, lease, now))
        .collect();
    let outcome = Outcome { worst: verdicts.iter().filter_map(Verdict::worst).max() };

    // What the list showed, by resource version: the watch prints changes after it only.
    let listed: std::collections::HashMap<_, _> = objects
        .iter()
        .map(|object| {
            let key = (object.metadata.namespace.clone(), object.metadata.name.clone());
            (key, object.metadata.resource_version.clone())
        })
        .collect();
    let text = match (&args.group, args.output) {
        // kubectl's wording on stderr; with -w the watch still follows (kubectl get -w).
        _ if objects.is_empty() => {
            writeln!(err, "no groups {}", scope.describe())?;
            String::new()
        }
        (Some(_), OutputFormat::Table | OutputFormat::Wide) => {
            let (Some(group), Some(verdict)) = (groups.first(), verdicts.first()) else {
                let unreadable = unreadable.first().map(ToString::to_string).unwrap_or_default();
                anyhow::bail!(
                    "{unreadable}; `-o json` shows the object as stored, fix or replace it"
                );
            };
            let full = report::group(group, now);
            let (head, rest) = full.split_once('\n').unwrap_or((&full, ""));
            format!("{head}\n{}{rest}", report::findings(verdict))
        }
        (_, OutputFormat::Name) => objects
            .iter()
            .map(|object| {
                format!(
                    "mysqlfailovergroup.shipstream.io/{}\n",
                    object.metadata.name.as_deref().unwrap_or("-")
                )
            })
            .collect(),
        (None, OutputFormat::Table | OutputFormat::Wide) => {
            let style =
                if args.output == OutputFormat::Wide { ListStyle::Wide } else { ListStyle::Table };
            let judged: Vec<(&MysqlFailoverGroup, Option<&Verdict>)> =
                groups.iter().zip(verdicts.iter().map(Some)).collect();
            let list = if groups.is_empty() {
                String::new()
            } else {
                report::list_judged(&judged, now, style, *scope == Scope::All, !args.no_headers)
            };
            format!("{list}{}", report::unreadable(&unreadable))
        }
        (Some(_), format) => {
            let mut value = serde_json::to_value(&objects[0])?;
            judge_item(&mut value, &groups, &verdicts);
            dump(&value, format)?
        }
        (None, format) => {
            // The objects as stored (as `kubectl get -o json` prints them, without
            // managedFields), each with its verdict; the ones the console cannot decode are
            // also named, with the path and the error.
            let unreadable: Vec<Value> = unreadable
                .iter()
                .map(|unreadable| {
                    serde_json::json!({
                        "kind": unreadable.kind,
                        "namespace": unreadable.namespace,
                        "name": unreadable.name,
                        "path": unreadable.path,
                        "error": unreadable.error,
                    })
                })
                .collect();
            let mut items = Vec::new();
            for object in &objects {
                let mut value = serde_json::to_value(object)?;
                judge_item(&mut value, &groups, &verdicts);
                items.push(value);
            }
            let mut list =
                serde_json::json!({ "apiVersion": "v1", "kind": "List", "items": items });
            if !unreadable.is_empty() {
                list["unreadable"] = Value::Array(unreadable);
            }
            dump(&list, format)?
        }
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    if args.watch {
        watch(&raw, &params, args, scope, listed, (&backups, &verifications, lease), out).await?;
    }
    Ok(outcome)
}

/// The `MysqlBackup`s and `MysqlBackupVerification`s in scope. A list that fails (RBAC, an
/// older CRD) leaves the verdict without them: it is logged, not fatal.
async fn related(
    api: &impl Fn(&ApiResource) -> Api<DynamicObject>,
) -> (Vec<MysqlBackup>, Vec<MysqlBackupVerification>) {
    async fn list<K: serde::de::DeserializeOwned>(api: Api<DynamicObject>, kind: &str) -> Vec<K> {
        match api.list(&ListParams::default()).await {
            Ok(objects) => decode::decode_all::<K>(kind, objects.items).0,
            Err(error) => {
                tracing::warn!(kind, %error, "listing for the verdict failed; judging without them");
                Vec::new()
            }
        }
    }
    let backups = list(api(&ApiResource::erase::<MysqlBackup>(&())), "MysqlBackup").await;
    let verifications =
        list(api(&ApiResource::erase::<MysqlBackupVerification>(&())), "MysqlBackupVerification")
            .await;
    (backups, verifications)
}

/// When the operator's leader Lease (the TUI's, `tui::sources::operator_lease_name`) was last
/// renewed: one GET. A Lease that is absent or cannot be read (RBAC) gives `None`: the verdict
/// then does not judge the operator's liveness by its Lease (logged, not fatal).
async fn operator_lease_renewed(client: &Client) -> Option<jiff::Timestamp> {
    use k8s_openapi::api::coordination::v1::Lease;
    let configured = std::env::var("BLOODRAVEN_OPERATOR_LEASE").ok();
    let (namespace, name) = crate::tui::sources::operator_lease_name(configured.as_deref());
    match Api::<Lease>::namespaced(client.clone(), &namespace).get_opt(&name).await {
        Ok(lease) => {
            let spec = lease?.spec?;
            spec.renew_time.or(spec.acquire_time).map(|time| time.0)
        }
        Err(error) => {
            tracing::warn!(%namespace, %name, %error, "reading the operator's Lease failed; judging without it");
            None
        }
    }
}

/// Removes `metadata.managedFields` and adds the verdict of the matching group.
fn judge_item(value: &mut Value, groups: &[MysqlFailoverGroup], verdicts: &[Verdict]) {
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    let key = (
        value["metadata"]["namespace"].as_str().map(str::to_owned),
        value["metadata"]["name"].as_str().map(str::to_owned),
    );
    if let Some(verdict) = groups
        .iter()
        .position(|group| (group.metadata.namespace.clone(), group.metadata.name.clone()) == key)
        .and_then(|index| verdicts.get(index))
    {
        value[crate::verdict::VERDICT_KEY] = crate::verdict::to_json(verdict);
    }
}

/// `-w`: one row (or one object) per change, until the watch ends or the process is stopped.
async fn watch(
    raw: &Api<DynamicObject>,
    params: &ListParams,
    args: &StatusArgs,
    scope: &Scope,
    mut seen: std::collections::HashMap<(Option<String>, Option<String>), Option<String>>,
    (backups, verifications, lease): (
        &[MysqlBackup],
        &[MysqlBackupVerification],
        Option<jiff::Timestamp>,
    ),
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut config = kube::runtime::watcher::Config::default();
    if let Some(selector) = &params.label_selector {
        config = config.labels(selector);
    }
    if let Some(name) = &args.group {
        config = config.fields(&format!("metadata.name={name}"));
    }
    use kube::runtime::WatchStreamExt as _;
    let stream = kube::runtime::watcher(raw.clone(), config).default_backoff().applied_objects();
    let mut stream = std::pin::pin!(stream);
    // The watcher's first events repeat the list: an object at the version the list printed
    // is skipped, as kubectl's watch resumes after its list.
    while let Some(object) = stream
        .next()
        .await
        .transpose()
        .map_err(|error| KubectlError(format!("error: watching {RESOURCE}: {error}")))?
    {
        let key = (object.metadata.namespace.clone(), object.metadata.name.clone());
        let version = object.metadata.resource_version.clone();
        if seen.insert(key, version.clone()) == Some(version) {
            continue;
        }
        let now = jiff::Timestamp::now();
        let text = match args.output {
            OutputFormat::Name => format!(
                "mysqlfailovergroup.shipstream.io/{}\n",
                object.metadata.name.as_deref().unwrap_or("-")
            ),
            OutputFormat::Json | OutputFormat::Yaml => {
                let (groups, _) =
                    decode::decode_all::<MysqlFailoverGroup>(KIND, vec![object.clone()]);
                let verdicts: Vec<Verdict> = groups
                    .iter()
                    .map(|group| {
                        crate::verdict::of_with_lease(group, backups, verifications, lease, now)
                    })
                    .collect();
                let mut value = serde_json::to_value(&object)?;
                judge_item(&mut value, &groups, &verdicts);
                dump(&value, args.output)?
            }
            OutputFormat::Table | OutputFormat::Wide => {
                match decode::decode::<MysqlFailoverGroup>(KIND, object) {
                    Ok(group) => {
                        let verdict = crate::verdict::of_with_lease(
                            &group,
                            backups,
                            verifications,
                            lease,
                            now,
                        );
                        let style = if args.output == OutputFormat::Wide {
                            ListStyle::Wide
                        } else {
                            ListStyle::Table
                        };
                        report::list_judged(
                            &[(&group, Some(&verdict))],
                            now,
                            style,
                            *scope == Scope::All,
                            false,
                        )
                    }
                    Err(unreadable) => report::unreadable(&[unreadable]),
                }
            }
        };
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
    Ok(())
}

fn dump(value: &Value, format: OutputFormat) -> anyhow::Result<String> {
    Ok(match format {
        OutputFormat::Yaml => serde_norway::to_string(value)?,
        _ => format!("{}\n", serde_json::to_string_pretty(value)?),
    })
}

/// Whether an error is a closed stdout (`| head`): the command ends quietly.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
