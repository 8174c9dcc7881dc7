//! The `status` verb: reads the groups and prints the report (thin IO over `report`). Groups
//! are read as raw objects and decoded one by one ([`crate::decode`]): one that does not
//! decode is listed as unreadable, with the path and the error, after the others.

use std::io::Write;

use anyhow::Context as _;
use bloodraven_crd::MysqlFailoverGroup;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};

use crate::cli::{OutputFormat, StatusArgs};
use crate::decode;
use crate::report::{self, ListStyle};

/// Where to look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    Namespace(String),
    All,
}

/// Prints the report for `args` to `out`.
pub async fn run(
    client: Client,
    scope: &Scope,
    args: &StatusArgs,
    now: jiff::Timestamp,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    const KIND: &str = "MysqlFailoverGroup";
    let resource = ApiResource::erase::<MysqlFailoverGroup>(&());
    let raw: Api<DynamicObject> = match (scope, &args.group) {
        (Scope::Namespace(namespace), _) => Api::namespaced_with(client, namespace, &resource),
        (Scope::All, Some(_)) => {
            anyhow::bail!("a group name needs a namespace, not --all-namespaces")
        }
        (Scope::All, None) => Api::all_with(client, &resource),
    };
    let text = match (&args.group, args.output) {
        (Some(name), OutputFormat::Table | OutputFormat::Wide) => {
            let object = raw.get(name).await.with_context(|| format!("reading group {name}"))?;
            let group: MysqlFailoverGroup = decode::decode(KIND, object).map_err(|unreadable| {
                anyhow::anyhow!(
                    "{unreadable}; `-o json` shows the object as stored, fix or replace it"
                )
            })?;
            report::group(&group, now)
        }
        (Some(name), format) => {
            let object = raw.get(name).await.with_context(|| format!("reading group {name}"))?;
            dump(&serde_json::to_value(&object)?, format)?
        }
        (None, OutputFormat::Table | OutputFormat::Wide) => {
            let objects = raw.list(&ListParams::default()).await.context("listing groups")?;
            let (groups, unreadable) =
                decode::decode_all::<MysqlFailoverGroup>(KIND, objects.items);
            let style =
                if args.output == OutputFormat::Wide { ListStyle::Wide } else { ListStyle::Table };
            let list = if groups.is_empty() && !unreadable.is_empty() {
                String::new()
            } else {
                report::list(&groups, now, style, *scope == Scope::All)
            };
            format!("{list}{}", report::unreadable(&unreadable))
        }
        (None, format) => {
            let objects = raw.list(&ListParams::default()).await.context("listing groups")?;
            // The objects as stored (as `kubectl get -o json` prints them); the ones the
            // console cannot decode are also named, with the path and the error.
            let unreadable: Vec<serde_json::Value> = objects
                .items
                .iter()
                .filter_map(|object| {
                    decode::decode::<MysqlFailoverGroup>(KIND, object.clone()).err()
                })
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
            let mut list = serde_json::json!({
                "apiVersion": "v1",
                "kind": "List",
                "items": objects.items,
            });
            if !unreadable.is_empty() {
                list["unreadable"] = serde_json::Value::Array(unreadable);
            }
            dump(&list, format)?
        }
    };
    out.write_all(text.as_bytes())?;
    Ok(())
}

fn dump(value: &serde_json::Value, format: OutputFormat) -> anyhow::Result<String> {
    Ok(match format {
        OutputFormat::Yaml => serde_norway::to_string(value)?,
        _ => format!("{}\n", serde_json::to_string_pretty(value)?),
    })
}
