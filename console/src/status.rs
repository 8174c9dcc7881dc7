//! The `status` verb: reads the groups and prints the report (thin IO over `report`).

use std::io::Write;

use anyhow::Context as _;
use bloodraven_crd::MysqlFailoverGroup;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};

use crate::cli::{OutputFormat, StatusArgs};
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
    let resource = ApiResource::erase::<MysqlFailoverGroup>(&());
    let (typed, raw): (Api<MysqlFailoverGroup>, Api<DynamicObject>) = match (scope, &args.group) {
        (Scope::Namespace(namespace), _) => (
            Api::namespaced(client.clone(), namespace),
            Api::namespaced_with(client, namespace, &resource),
        ),
        (Scope::All, Some(_)) => {
            anyhow::bail!("a group name needs a namespace, not --all-namespaces")
        }
        (Scope::All, None) => (Api::all(client.clone()), Api::all_with(client, &resource)),
    };
    let text = match (&args.group, args.output) {
        (Some(name), OutputFormat::Table | OutputFormat::Wide) => {
            let group = typed.get(name).await.with_context(|| format!("reading group {name}"))?;
            report::group(&group, now)
        }
        (Some(name), format) => {
            let object = raw.get(name).await.with_context(|| format!("reading group {name}"))?;
            dump(&serde_json::to_value(&object)?, format)?
        }
        (None, OutputFormat::Table | OutputFormat::Wide) => {
            let groups = typed.list(&ListParams::default()).await.context("listing groups")?;
            let style =
                if args.output == OutputFormat::Wide { ListStyle::Wide } else { ListStyle::Table };
            report::list(&groups.items, now, style, *scope == Scope::All)
        }
        (None, format) => {
            let groups = raw.list(&ListParams::default()).await.context("listing groups")?;
            let list = serde_json::json!({
                "apiVersion": "v1",
                "kind": "List",
                "items": groups.items,
            });
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
