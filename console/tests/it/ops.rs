//! Guided operations against the lab API server: each operation writes exactly its request
//! with its precondition (the request log), a concurrent change makes it ask again (no blind
//! retry), read-only mode and a pinned context send no write, RBAC decides (the deploy/console
//! roles), and the audit journal holds one record pair per operation and no secret.

use std::path::Path;
use std::sync::Arc;

use bloodraven_console::client::{WriteSwitch, connect_guarded};
use bloodraven_console::journal::Journal;
use bloodraven_console::lab::RunningLab;
use bloodraven_console::ops::confirm::Origin;
use bloodraven_console::ops::send::{self, SendError, Session};
use bloodraven_console::ops::verbs::{self, PromoteArgs, Verb, Where, WriteArgs};
use bloodraven_console::ops::{GroupRef, Verdict, WriteOp};
use bloodraven_lab::RequestRecord;
use serde_json::{Value, json};

pub(crate) const SECRET_VALUE: &str = "lab-s3cret-password-do-not-log";

fn orders() -> GroupRef {
    GroupRef::new("orders", "orders")
}

/// The writes the lab saw (the two reviews are not writes of state).
fn writes(requests: &[RequestRecord]) -> Vec<(String, String, u16)> {
    requests
        .iter()
        .filter(|request| request.is_write() && !request.path.contains("selfsubject"))
        .map(|request| (request.method.clone(), request.path.clone(), request.status))
        .collect()
}

async fn session(running: &RunningLab, kubeconfig: &Path, journal: &Path) -> Session {
    let switch = WriteSwitch::read_only();
    switch.set(true);
    let (client, connection) =
        connect_guarded(Some(kubeconfig), None, switch.clone()).await.unwrap();
    let _ = running;
    Session {
        client,
        context: connection.context,
        switch,
        journal: Arc::new(Journal::open(journal).unwrap()),
    }
}

pub(crate) fn plant_secret(running: &RunningLab) {
    running
        .lab
        .apply(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": { "name": "mysql-operator-creds", "namespace": "orders" },
            "stringData": { "password": SECRET_VALUE },
            "data": { "password": "bGFiLXMzY3JldC1wYXNzd29yZC1kby1ub3QtbG9n" },
        }))
        .unwrap();
}

/// What the on-call engineer does by hand before acknowledging: fence all writers but one
/// (the scenario leaves iad and pdx writable; pdx is fenced).
pub(crate) fn resolve_split_brain(running: &RunningLab) {
    let mut changed = group(running);
    for site in changed["status"]["sites"].as_array_mut().unwrap() {
        if site["name"] == "pdx" {
            site["state"] = json!("read-only");
        }
    }
    running.lab.apply(changed).unwrap();
}

pub(crate) fn group(running: &RunningLab) -> Value {
    running
        .lab
        .get("shipstream.io/v1alpha1", "MysqlFailoverGroup", Some("orders"), "orders")
        .unwrap()
}

/// Sends `op` on `scenario` and returns the writes the lab saw and the group after.
async fn send_one(
    scenario: &str,
    op: WriteOp,
    journal: &Path,
) -> (Vec<(String, String, u16)>, Value, RunningLab) {
    let running = RunningLab::start(scenario, jiff::Timestamp::now()).await.unwrap();
    plant_secret(&running);
    if scenario == "hold-standing" {
        resolve_split_brain(&running);
    }
    let session = session(&running, &running.kubeconfig(), journal).await;
    let prepared = send::prepare(&session.client, op, jiff::Timestamp::now()).await.unwrap();
    assert!(prepared.confirmable(), "{scenario}: {}", prepared.preflight.render());
    let patch = prepared.patch.clone().unwrap();
    running.lab.clear_requests();
    let user = send::identity(&session.client).await.ok();
    let sent =
        send::send(&session, &prepared, user.as_deref(), &Origin::Cli, jiff::Timestamp::now())
            .await
            .unwrap();
    assert!(sent.resource_version.is_some(), "{sent:?}");
    let writes = writes(&running.lab.requests());
    assert_eq!(
        writes.first().map(|(method, path, _)| (method.as_str(), path.as_str())),
        Some((patch.verb.method(), patch.path.as_str())),
        "{scenario}: the first write is the preview's request: {writes:?}"
    );
    // The request body the lab saw is the preview's body: checked through its effect below.
    let after = group(&running);
    (writes, after, running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_operation_writes_exactly_its_request_and_journals_a_pair() {
    crate::install_crypto();
    let journal = tempfile::tempdir().unwrap();

    // Planned failover: exactly one PATCH of the group, then the Event.
    let op = WriteOp::RequestPlannedFailover {
        group: orders(),
        target: "pdx".to_owned(),
        max_lag_wait: Some("30s".to_owned()),
    };
    let (writes, after, running) = send_one("healthy", op, journal.path()).await;
    assert_eq!(
        writes,
        [
            (
                "PATCH".to_owned(),
                "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups/orders"
                    .to_owned(),
                200
            ),
            ("POST".to_owned(), "/api/v1/namespaces/orders/events".to_owned(), 201),
        ]
    );
    assert_eq!(
        after["metadata"]["annotations"]["bloodraven.shipstream.io/planned-failover"],
        "pdx:maxLagWait=30s"
    );
    let events = running.lab.list("v1", "Event");
    assert!(
        events.iter().any(|event| event["reason"] == "ConsoleOperation"
            && event["involvedObject"]["name"] == "orders"),
        "{events:#?}"
    );
    running.stop().await.unwrap();

    // Hold acknowledgement.
    let hold = {
        let running = RunningLab::start("hold-standing", jiff::Timestamp::now()).await.unwrap();
        let run =
            group(&running)["status"]["plannedFailoverHold"]["runID"].as_str().unwrap().to_owned();
        running.stop().await.unwrap();
        run
    };
    let op = WriteOp::AcknowledgeHold { group: orders(), run_id: hold.clone() };
    let (writes, after, running) = send_one("hold-standing", op, journal.path()).await;
    assert_eq!(writes[0].0, "PATCH");
    assert!(writes[0].1.ends_with("/mysqlfailovergroups/orders"));
    assert_eq!(
        after["metadata"]["annotations"]["bloodraven.shipstream.io/acknowledge-planned-failover-hold"],
        hold.as_str()
    );
    running.stop().await.unwrap();

    // Held queue: drain on the status subresource.
    let (writes, after, running) =
        send_one("reclone-held", WriteOp::RecloneQueueDrain { group: orders() }, journal.path())
            .await;
    assert!(writes[0].1.ends_with("/mysqlfailovergroups/orders/status"), "{writes:?}");
    assert_eq!(after["status"]["restoreReclones"]["phase"], "Draining");
    running.stop().await.unwrap();

    // Held queue: release removes the block.
    let (writes, after, running) =
        send_one("reclone-held", WriteOp::RecloneQueueRelease { group: orders() }, journal.path())
            .await;
    assert!(writes[0].1.ends_with("/status"), "{writes:?}");
    assert!(after["status"].get("restoreReclones").is_none(), "{}", after["status"]);
    running.stop().await.unwrap();

    // A backup from a held site.
    let name = WriteOp::backup_name("orders", "nightly", jiff::Timestamp::now());
    let op = WriteOp::BackupFromSite {
        group: orders(),
        name: name.clone(),
        profile: "nightly".to_owned(),
        site: "pdx".to_owned(),
    };
    let (writes, _, running) = send_one("reclone-held", op, journal.path()).await;
    assert_eq!(writes[0].0, "POST");
    assert!(writes[0].1.ends_with("/namespaces/orders/mysqlbackups"), "{writes:?}");
    let backup =
        running.lab.get("shipstream.io/v1alpha1", "MysqlBackup", Some("orders"), &name).unwrap();
    assert_eq!(
        backup["spec"],
        json!({ "failoverGroupRef": { "name": "orders" }, "profileName": "nightly", "sourceSite": "pdx" })
    );
    running.stop().await.unwrap();

    // A verification of a Succeeded backup.
    let op = WriteOp::CreateVerification {
        group: orders(),
        name: "orders-nightly-20260420-verify-x".to_owned(),
        profile: "nightly".to_owned(),
        backup: "orders-nightly-20260420".to_owned(),
    };
    let (writes, _, running) = send_one("healthy", op, journal.path()).await;
    assert!(writes[0].1.ends_with("/namespaces/orders/mysqlbackupverifications"), "{writes:?}");
    assert!(
        running
            .lab
            .get(
                "shipstream.io/v1alpha1",
                "MysqlBackupVerification",
                Some("orders"),
                "orders-nightly-20260420-verify-x"
            )
            .is_some()
    );
    running.stop().await.unwrap();

    // One before/after pair per operation, and no secret anywhere in the journal.
    let records = Journal::read_all(journal.path()).unwrap();
    assert_eq!(records.len(), 12, "{records:#?}");
    for pair in records.chunks(2) {
        assert_eq!(pair[0]["phase"], "before");
        assert_eq!(pair[1]["phase"], "after");
        assert_eq!(pair[0]["id"], pair[1]["id"]);
        assert_eq!(pair[1]["result"], "sent", "{:#}", pair[1]);
        assert!(pair[0]["request"]["precondition"].is_object(), "{:#}", pair[0]);
        assert!(pair[0]["preflight"]["checks"].is_array());
    }
    let text: String = std::fs::read_dir(journal.path())
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    assert!(
        !text.contains(SECRET_VALUE) && !text.contains("bGFiLXMzY3JldC1wYXNzd29yZC1kby1ub3QtbG9n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_change_makes_it_ask_again_without_a_retry() {
    crate::install_crypto();
    let journal = tempfile::tempdir().unwrap();
    let running = RunningLab::start("hold-standing", jiff::Timestamp::now()).await.unwrap();
    resolve_split_brain(&running);
    let session = session(&running, &running.kubeconfig(), journal.path()).await;
    let run =
        group(&running)["status"]["plannedFailoverHold"]["runID"].as_str().unwrap().to_owned();
    let op = WriteOp::AcknowledgeHold { group: orders(), run_id: run.clone() };
    let prepared =
        send::prepare(&session.client, op.clone(), jiff::Timestamp::now()).await.unwrap();
    assert!(prepared.confirmable(), "{}", prepared.preflight.render());

    // Meanwhile the operator replaced the hold with another run's.
    let mut changed = group(&running);
    changed["status"]["plannedFailoverHold"]["runID"] =
        json!("11111111-2222-4333-8444-555555555555");
    running.lab.apply(changed).unwrap();
    running.lab.clear_requests();

    let error = send::send(&session, &prepared, None, &Origin::Cli, jiff::Timestamp::now())
        .await
        .unwrap_err();
    assert!(matches!(error, SendError::Conflict { .. }), "{error}");
    assert!(error.to_string().contains("re-read"), "{error}");
    let writes = writes(&running.lab.requests());
    assert_eq!(writes.len(), 1, "exactly one attempt, no retry: {writes:?}");
    assert_eq!(writes[0].2, 422, "the test failed: {writes:?}");
    assert!(
        group(&running)["metadata"]["annotations"]
            .get("bloodraven.shipstream.io/acknowledge-planned-failover-hold")
            .is_none()
    );

    // Asking again: the fresh preflight now refuses the stale run ID.
    let again = send::prepare(&session.client, op, jiff::Timestamp::now()).await.unwrap();
    assert_eq!(
        again.preflight.rule("RunMatches"),
        Some(Verdict::Refuse),
        "{}",
        again.preflight.render()
    );
    let records = Journal::read_all(journal.path()).unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(records[1]["result"], "conflict");
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_mode_and_a_pinned_context_send_no_write() {
    crate::install_crypto();
    let journal = tempfile::tempdir().unwrap();
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    let mut session = session(&running, &running.kubeconfig(), journal.path()).await;
    let op = WriteOp::RequestPlannedFailover {
        group: orders(),
        target: "pdx".to_owned(),
        max_lag_wait: None,
    };
    let prepared = send::prepare(&session.client, op, jiff::Timestamp::now()).await.unwrap();
    running.lab.clear_requests();
    session.switch.set(false);
    let error = send::send(&session, &prepared, None, &Origin::Cli, jiff::Timestamp::now())
        .await
        .unwrap_err();
    assert!(matches!(error, SendError::ReadOnly(_)), "{error}");
    // Even a request built by hand is refused by the client in read-only mode.
    let patch = prepared.patch.clone().unwrap();
    let request = hyper::Request::patch(&patch.path)
        .header("content-type", patch.content_type)
        .body(serde_json::to_vec(&patch.body).unwrap())
        .unwrap();
    let error = session.client.request_text(request).await.unwrap_err();
    assert!(error.to_string().contains("the console is read-only"), "{error}");
    session.switch = WriteSwitch::read_only();

    // A context pinned read-only by the config: the CLI verb sends nothing.
    let config = journal.path().join("config.yaml");
    std::fs::write(&config, "readOnlyContexts: [\"*\"]\n").unwrap();
    let verb = Verb::Promote(PromoteArgs {
        group: "orders".to_owned(),
        site: "pdx".to_owned(),
        max_lag_wait: None,
        write: WriteArgs {
            yes: true,
            confirm: Some("pdx".to_owned()),
            journal_dir: Some(journal.path().join("journal")),
            ..WriteArgs::default()
        },
    });
    let at = Where {
        kubeconfig: Some(running.kubeconfig()),
        context: None,
        namespace: Some("orders".to_owned()),
        config: Some(config),
    };
    let error = verbs::run(&verb, &at).await.unwrap_err();
    assert!(error.to_string().contains("pinned read-only"), "{error}");
    assert_eq!(writes(&running.lab.requests()), [], "no write reached the lab");
    crate::readonly::assert_only_reads_and_reviews(&running.lab.requests());
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_verb_needs_the_confirmation_name_and_then_sends() {
    crate::install_crypto();
    let dir = tempfile::tempdir().unwrap();
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    let config = dir.path().join("config.yaml");
    let at = Where {
        kubeconfig: Some(running.kubeconfig()),
        context: None,
        namespace: Some("orders".to_owned()),
        config: Some(config),
    };
    let verb = |confirm: &str| {
        Verb::Promote(PromoteArgs {
            group: "orders".to_owned(),
            site: "pdx".to_owned(),
            max_lag_wait: None,
            write: WriteArgs {
                yes: true,
                confirm: Some(confirm.to_owned()),
                journal_dir: Some(dir.path().join("journal")),
                ..WriteArgs::default()
            },
        })
    };
    running.lab.clear_requests();
    let error = verbs::run(&verb("orders"), &at).await.unwrap_err();
    assert!(error.to_string().contains("not confirmed"), "{error}");
    assert_eq!(writes(&running.lab.requests()), []);
    verbs::run(&verb("pdx"), &at).await.unwrap();
    assert_eq!(
        group(&running)["metadata"]["annotations"]["bloodraven.shipstream.io/planned-failover"],
        "pdx"
    );
    // A second request is refused by the preflight (RequestPending): nothing more is written.
    let before = writes(&running.lab.requests()).len();
    let error = verbs::run(&verb("pdx"), &at).await.unwrap_err();
    assert!(error.to_string().contains("preflight refuses"), "{error}");
    assert_eq!(writes(&running.lab.requests()).len(), before);
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_the_read_only_role_is_not_allowed_and_the_operator_console_role_is() {
    crate::install_crypto();
    let dir = tempfile::tempdir().unwrap();
    let running = RunningLab::start("healthy", jiff::Timestamp::now()).await.unwrap();
    running.lab.apply_yaml(include_str!("../../../deploy/console/readonly.yaml")).unwrap();
    running.lab.apply_yaml(include_str!("../../../deploy/console/operator-console.yaml")).unwrap();
    running.lab.set_rbac(true).unwrap();
    let op = WriteOp::RequestPlannedFailover {
        group: orders(),
        target: "pdx".to_owned(),
        max_lag_wait: None,
    };
    for (account, allowed) in [("bloodraven-console", false), ("bloodraven-console-operator", true)]
    {
        let token = running.lab.service_account_token("bloodraven-system", account).unwrap();
        let kubeconfig = dir.path().join(account);
        running.lab.write_kubeconfig_with_token(&kubeconfig, account, &token).unwrap();
        let session = session(&running, &kubeconfig, &dir.path().join("journal")).await;
        let prepared =
            send::prepare(&session.client, op.clone(), jiff::Timestamp::now()).await.unwrap();
        let access = send::access(&session.client, &prepared).await;
        assert_eq!(
            access.user.as_deref(),
            Some(format!("system:serviceaccount:bloodraven-system:{account}").as_str())
        );
        assert_eq!(access.allowed, Some(allowed), "{account}: {access:?}");
        if !allowed {
            assert!(access.describe().starts_with("not allowed"), "{}", access.describe());
        } else {
            assert_eq!(access.describe(), "allowed");
            let sent = send::send(
                &session,
                &prepared,
                access.user.as_deref(),
                &Origin::Cli,
                jiff::Timestamp::now(),
            )
            .await
            .unwrap();
            assert!(sent.event, "the operator-console role may create the ConsoleOperation Event");
        }
    }
    running.stop().await.unwrap();
}
