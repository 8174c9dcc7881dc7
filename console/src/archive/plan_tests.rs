//! `pitr plan` over the `pitr-divergent` lab: the group, its backup and its archive as the lab
//! API server and the laid fixture archive hold them, planned as the restore would plan.

use bloodraven_archive::fixtures::{UUID_A, UUID_B, range};
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_pitr::{Outcome, Token};

use super::{PlanQuery, plan, print};
use crate::archive::ArchiveAccess;
use crate::lab::{RunningLab, group_archive};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pitr_plan_refuses_the_lost_tail_and_covers_the_target_with_it_excluded() {
    // A whole-second "now": the fixture's commit times stay whole seconds, so a commit time is
    // a valid target.
    let now: jiff::Timestamp = "2026-11-29T20:00:00Z".parse().unwrap();
    let running = RunningLab::start("pitr-divergent", now).await.unwrap();
    let (client, _) = crate::client::connect(Some(&running.kubeconfig()), None).await.unwrap();
    let groups: kube::Api<MysqlFailoverGroup> = kube::Api::namespaced(client.clone(), "orders");
    let group = groups.get("orders").await.unwrap();
    let fixture = group_archive("pitr-divergent", &group, now).unwrap().fixture;
    // After the lossy failover, once b wrote: the backup (taken on a before it) holds A:1-50,
    // a's tail A:96-100 was lost at the promotion.
    let target = fixture.commit_time(UUID_B, 10).unwrap();
    let access = ArchiveAccess {
        archive_root: Some(running.directory().to_owned()),
        secret_client: None,
        passphrase_file: None,
    };
    let mut query = PlanQuery {
        namespace: "orders".into(),
        group: "orders".into(),
        backup: "orders-nightly-20260419".into(),
        target: Some(target.to_string()),
        exclude_gtids: String::new(),
        json: false,
    };
    let answer = plan(client.clone(), &access, &query).await.unwrap();
    let lost = range(UUID_A, 96, 100);
    let Err(refusal) = &answer.result else { panic!("planned: {:?}", answer.result) };
    assert_eq!(refusal.token, Token::ArchiveDivergentHistory, "{refusal}");
    assert_eq!(refusal.full_set.as_deref(), Some(lost.to_compact_string().as_str()));
    let mut text = Vec::new();
    print(&answer, false, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.starts_with("refused: PITRArchiveDivergentHistory: 5 archived"), "{text}");
    let mut json = Vec::new();
    print(&answer, true, &mut json).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json["version"], 2, "{json}");

    // excludeGtids: D → b's history at the target.
    query.exclude_gtids = lost.to_compact_string();
    let answer = plan(client, &access, &query).await.unwrap();
    let planned = answer.result.unwrap();
    assert_eq!(planned.outcome, Outcome::TargetCovered);
    assert_eq!(planned.certified, range(UUID_A, 1, 95).union(&range(UUID_B, 1, 9)));
    assert_eq!(planned.excluded_divergent, lost);
    running.stop().await.unwrap();
}

#[test]
fn the_pitr_plan_verb_takes_a_target_or_latest_but_not_both() {
    use clap::Parser as _;

    use crate::cli::{Cli, Command, PitrCommand, PitrFormat};
    let parse = |argv: &[&str]| Cli::try_parse_from(argv);
    let cli = parse(&[
        "bloodraven",
        "pitr",
        "plan",
        "orders",
        "--backup",
        "orders-nightly",
        "--target",
        "2026-04-20T13:04:00Z",
        "--exclude-gtids",
        "3e11fa47-71ca-11e1-9e33-c80aa9429562:96-100",
        "-o",
        "json",
    ])
    .unwrap();
    let Some(Command::Pitr(PitrCommand::Plan(args))) = cli.command else { panic!("not pitr plan") };
    assert_eq!(args.group, "orders");
    assert_eq!(args.target.as_deref(), Some("2026-04-20T13:04:00Z"));
    assert!(!args.latest);
    assert_eq!(args.output, PitrFormat::Json);
    let latest = parse(&["bloodraven", "pitr", "plan", "orders", "--backup", "b", "--latest"]);
    assert!(latest.is_ok());
    for bad in [
        &["bloodraven", "pitr", "plan", "orders", "--backup", "b"][..],
        &["bloodraven", "pitr", "plan", "orders", "--backup", "b", "--latest", "--target", "x"],
        &["bloodraven", "pitr", "plan", "orders", "--latest"],
    ] {
        assert!(parse(bad).is_err(), "{bad:?} parsed");
    }
}

/// `pitr plan` over the sealed encrypted fixture (`Fixture::build_sealed`), laid at a PVC
/// layout: with its passphrase it plans as over a plaintext archive; without one, or with a
/// passphrase that does not verify, the command fails with the console's key problem (the
/// flag to set, or the key file named), never a plan.
#[cfg(test)]
mod sealed {
    use std::path::Path;

    use bloodraven_archive::fixtures::{Fixture, FixtureOptions, PASSPHRASE, UUID_A, range};
    use bloodraven_pitr::{Outcome, Request};

    use super::super::plan_in;
    use crate::archive::{ArchiveLocation, ArchiveStore, open_store, tests::keyed_access};

    fn pvc() -> ArchiveLocation {
        ArchiveLocation::Pvc {
            namespace: "orders".to_owned(),
            claim: "orders-backups".to_owned(),
            sub_path: String::new(),
        }
    }

    async fn laid() -> (tempfile::TempDir, Fixture) {
        let directory = tempfile::tempdir().unwrap();
        let (store_root, root) = crate::archive::pvc_store(directory.path(), &pvc()).unwrap();
        std::fs::create_dir_all(&store_root).unwrap();
        let store = bloodraven_store::FsStore::new(&store_root).unwrap();
        let fixture = Fixture::build_sealed(&FixtureOptions::default());
        bloodraven_store::archive::write_fixture(&store, &root, &fixture).await.unwrap();
        (directory, fixture)
    }

    /// Plans to the commit time of A:20 (the last archived) from the fixture's `a-early`
    /// backup, with the passphrase in `file`.
    async fn plan_with(
        directory: &Path,
        fixture: &Fixture,
        file: Option<&Path>,
    ) -> anyhow::Result<super::super::PlanAnswer> {
        let access = keyed_access(directory, file);
        let ArchiveStore::Fs(store, root) = open_store(&access, &pvc()).await.unwrap() else {
            panic!("a PVC archive")
        };
        let backup = &fixture.backups["a-early"];
        let request = Request {
            target: Some(fixture.commit_time(UUID_A, 20).unwrap().to_string()),
            exclude_gtids: String::new(),
            allow_partial: false,
        };
        plan_in(
            &store,
            &root,
            &access,
            &pvc(),
            (backup.gtid_executed.clone(), backup.dump_end),
            request,
        )
        .await
    }

    #[tokio::test]
    async fn with_the_passphrase_the_target_is_covered() {
        let (directory, fixture) = laid().await;
        let keys = tempfile::tempdir().unwrap();
        let file = keys.path().join("passphrase");
        std::fs::write(&file, PASSPHRASE).unwrap();
        let answer = plan_with(directory.path(), &fixture, Some(&file)).await.unwrap();
        assert_eq!(answer.archive_id, fixture.descriptor.as_ref().unwrap().archive_id.to_string());
        let planned = answer.result.unwrap_or_else(|refusal| panic!("{refusal}"));
        assert_eq!(planned.outcome, Outcome::TargetCovered);
        // The target is A:20's commit time: what committed before it (A:20 is not before it).
        assert_eq!(planned.certified, range(UUID_A, 1, 19));
        assert_eq!(planned.segments.len(), 1, "A:11-19 from the second file");
    }

    #[tokio::test]
    async fn without_a_passphrase_it_says_what_to_set() {
        let (directory, fixture) = laid().await;
        let error = plan_with(directory.path(), &fixture, None).await.unwrap_err();
        let text = format!("{error:#}");
        for needle in [
            "is encrypted",
            "pvc://orders/orders-backups/binlogs",
            "--pitr-passphrase-file",
            "BLOODRAVEN_PITR_PASSPHRASE_FILE",
        ] {
            assert!(text.contains(needle), "{needle:?} not in {text}");
        }
    }

    #[tokio::test]
    async fn a_wrong_passphrase_names_the_key_file_and_plans_nothing() {
        let (directory, fixture) = laid().await;
        let keys = tempfile::tempdir().unwrap();
        let file = keys.path().join("passphrase");
        std::fs::write(&file, b"tr0ub4dor&3").unwrap();
        let error = plan_with(directory.path(), &fixture, Some(&file)).await.unwrap_err();
        let text = format!("{error:#}");
        assert!(text.starts_with("authentication failed: the passphrase in "), "{text}");
        assert!(text.contains(&file.display().to_string()), "{text}");
        assert!(!text.contains("tr0ub4dor"), "the passphrase is never shown: {text}");
        // An unreadable key file: the command fails naming it.
        let missing = keys.path().join("missing");
        let error = plan_with(directory.path(), &fixture, Some(&missing)).await.unwrap_err();
        let text = format!("{error:#}");
        assert!(text.contains(&missing.display().to_string()), "{text}");
    }
}
