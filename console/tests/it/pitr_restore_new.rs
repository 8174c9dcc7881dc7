//! `bloodraven pitr restore-new` (issue 17), the real binary against the `pitr-divergent` lab:
//! the plan refuses the lost tail D (nothing sent); with `--exclude-gtids D` it plans, and
//! `--yes --confirm <new name>` sends exactly one POST of the new group, whose manifest is also
//! saved for review under the journal folder and named by the journal's records.

use std::process::{Command, Output};

use bloodraven_archive::fixtures::{UUID_A, UUID_B, range};
use bloodraven_console::lab::{RunningLab, group_archive};
use bloodraven_crd::MysqlFailoverGroup;

const BINARY: &str = env!("CARGO_BIN_EXE_bloodraven");

async fn run(arguments: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || Command::new(BINARY).args(arguments).output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_new_sends_one_post_from_a_plan_that_holds_and_nothing_from_a_refused_one() {
    crate::install_crypto();
    let now: jiff::Timestamp = "2026-11-29T20:00:00Z".parse().unwrap();
    let running = RunningLab::start("pitr-divergent", now).await.unwrap();
    let (client, _) =
        bloodraven_console::client::connect(Some(&running.kubeconfig()), None).await.unwrap();
    let groups: kube::Api<MysqlFailoverGroup> = kube::Api::namespaced(client, "orders");
    let group = groups.get("orders").await.unwrap();
    let fixture = group_archive("pitr-divergent", &group, now).unwrap().fixture;
    let target = fixture.commit_time(UUID_B, 10).unwrap().to_string();
    let lost = range(UUID_A, 96, 100).to_compact_string();
    let journal = tempfile::tempdir().unwrap();
    let arguments = |exclude: &str| -> Vec<String> {
        [
            "--kubeconfig",
            &running.kubeconfig().display().to_string(),
            "--archive-root",
            &running.directory().display().to_string(),
            "-n",
            "orders",
            "pitr",
            "restore-new",
            "orders",
            "--backup",
            "orders-nightly-20260419",
            "--target",
            &target,
            "--exclude-gtids",
            exclude,
            "--new-name",
            "orders-restored",
            "--yes",
            "--confirm",
            "orders-restored",
            "--journal-dir",
            &journal.path().display().to_string(),
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    };
    let posts = |running: &RunningLab| -> Vec<String> {
        running
            .lab
            .requests()
            .iter()
            // The reviews and the ConsoleOperation Event are not writes of state.
            .filter(|r| {
                r.method == "POST"
                    && !r.path.contains("selfsubject")
                    && !r.path.ends_with("/events")
            })
            .map(|r| format!("{} {} {}", r.method, r.path, r.status))
            .collect()
    };

    // The plan refuses the lost tail: nothing is proposed, nothing sent.
    running.lab.clear_requests();
    let refused = run(arguments("")).await;
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(!refused.status.success(), "a refused plan must fail: {stderr}");
    assert!(stderr.contains("PITRArchiveDivergentHistory"), "{stderr}");
    assert_eq!(posts(&running), Vec::<String>::new(), "{stderr}");

    // Excluding D, the plan holds: one POST of the new group.
    running.lab.clear_requests();
    let sent = run(arguments(&lost)).await;
    let stderr = String::from_utf8_lossy(&sent.stderr).into_owned();
    assert!(sent.status.success(), "{stderr}");
    assert_eq!(
        posts(&running),
        ["POST /apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups 201"],
        "{stderr}"
    );
    let created = groups.get("orders-restored").await.unwrap();
    let pit = created.spec.init_from_backup.unwrap().point_in_time.unwrap();
    assert_eq!(pit.stop_time, target);
    assert_eq!(pit.exclude_gtids.as_deref(), Some(lost.as_str()));

    // The manifest saved for review is the object sent; the journal's records name it.
    let manifest = journal.path().join("restores").join("orders-restored.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(stderr.contains(&manifest.display().to_string()), "{stderr}");
    let saved: serde_json::Value = serde_norway::from_str(&text).unwrap();
    assert_eq!(saved["metadata"]["name"], "orders-restored");
    assert_eq!(saved["spec"]["initFromBackup"]["pointInTime"]["excludeGtids"], lost.as_str());
    let records: Vec<serde_json::Value> = std::fs::read_dir(journal.path())
        .unwrap()
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            path.is_file().then(|| std::fs::read_to_string(path).ok()).flatten()
        })
        .flat_map(|text| {
            text.lines().map(|line| serde_json::from_str(line).unwrap()).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(records.len(), 2, "one record pair: {records:?}");
    for record in &records {
        assert_eq!(record["manifest"], manifest.display().to_string(), "{record}");
    }
    running.stop().await.unwrap();
}
