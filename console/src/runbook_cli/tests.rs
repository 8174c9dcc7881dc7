#![allow(clippy::unwrap_used, reason = "test code")]

use super::*;
use crate::scenarios;

fn epoch() -> Timestamp {
    scenarios::SCENARIO_EPOCH.parse().unwrap()
}

fn first_group(scenario: &str) -> MysqlFailoverGroup {
    scenarios::objects(scenario, epoch())
        .unwrap()
        .into_iter()
        .find(|object| object["kind"] == "MysqlFailoverGroup")
        .map(|object| serde_json::from_value(object).unwrap())
        .unwrap()
}

#[test]
fn list_and_show() {
    let runbooks = bloodraven_runbook::shipped().unwrap();
    let listed = list(&runbooks);
    assert_eq!(listed.lines().count(), runbooks.len() + 1, "{listed}");
    assert!(listed.lines().nth(1).unwrap().contains("critical"), "most severe first\n{listed}");
    let shown = show(find(&runbooks, "automation-hold").unwrap());
    assert!(shown.contains("action: acknowledgeHold(runId=group.hold.runId)"), "{shown}");
    assert!(
        shown.contains("next:   done (check fails: orphan-condition)")
            || shown.contains("orphan-condition"),
        "{shown}"
    );
    let error = find(&runbooks, "nope").unwrap_err().to_string();
    assert!(error.contains("runbook list"), "{error}");
}

/// `runbook run` walks read-only: checks with the values they read, and the guided operation a
/// step would propose, never sent.
#[test]
fn run_walks_read_only_over_the_scenarios() {
    let runbooks = bloodraven_runbook::shipped().unwrap();
    let mut out = String::new();
    for (scenario, id) in [
        ("hold-standing", "automation-hold"),
        ("reclone-held", "held-reclone-queue"),
        ("pitr-divergent", "pitr-divergent-history"),
        ("healthy", "automation-hold"),
    ] {
        let runbook = find(&runbooks, id).unwrap();
        out.push_str(&format!(
            "==== {scenario}\n{}",
            run_text(runbook, &first_group(scenario), epoch())
        ));
    }
    assert!(out.contains("would propose"), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn offers_map_to_the_console_s_guided_operations() {
    let group = GroupRef::new("orders", "orders");
    let offer = |action, params: &[(&str, &str)]| Offer {
        action,
        params: params.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
    };
    assert_eq!(
        write_op(&offer(Action::AcknowledgeHold, &[("runId", "r1")]), &group),
        Some(WriteOp::AcknowledgeHold { group: group.clone(), run_id: "r1".to_owned() })
    );
    assert_eq!(
        write_op(&offer(Action::RecloneQueueKeepPrimary, &[("runId", "r1")]), &group),
        Some(WriteOp::RecloneQueueDrain { group: group.clone() })
    );
    assert_eq!(write_op(&offer(Action::ReleaseOfflineFence, &[("site", "iad")]), &group), None);
}

/// `runbook run --write` parses; `--yes` needs `--confirm` and `--write`; read-only by default.
#[test]
fn run_with_actions_parses_and_is_opt_in() {
    use clap::FromArgMatches as _;

    use crate::cli::{Cli, Command, command_for};
    let parse = |argv: &[&str]| {
        command_for(None).try_get_matches_from(argv).and_then(|m| Cli::from_arg_matches(&m))
    };
    let act = |argv: &[&str]| match parse(argv).unwrap().command {
        Some(Command::Runbook(args)) => match args.command {
            RunbookCommand::Run { act, .. } => act,
            other => panic!("not run: {other:?}"),
        },
        other => panic!("not runbook: {other:?}"),
    };
    let base = ["bloodraven", "runbook", "run", "automation-hold", "orders"];
    let read_only = act(&base);
    assert!(!read_only.write && !read_only.yes && read_only.confirm.is_none());
    let acting =
        act(&[&base[..], &["--write", "--yes", "--confirm", "orders", "--settle", "5"]].concat());
    assert!(acting.write && acting.yes);
    assert_eq!((acting.confirm.as_deref(), acting.settle), (Some("orders"), 5));
    assert!(parse(&[&base[..], &["--write", "--yes"]].concat()).is_err(), "--yes needs --confirm");
    assert!(
        parse(&[&base[..], &["--yes", "--confirm", "orders"]].concat()).is_err(),
        "--yes needs --write"
    );
    assert!(
        parse(&[&base[..], &["--confirm", "orders"]].concat()).is_err(),
        "--confirm needs --write"
    );
}
