//! Every runbook in `runbooks/` loads and checks clean, cites the spec, and is compiled in.

/// The runbooks issue #19 asks for.
const WANTED: [&str; 17] = [
    "archive-not-ready",
    "automation-hold",
    "diverged-follower",
    "failed-bootstrap-restore",
    "held-reclone-queue",
    "manual-recovery-required",
    "no-primary",
    "pitr-archive-gap",
    "pitr-backup-after-target",
    "pitr-divergent-history",
    "pitr-unsafe-history",
    "planned-failover-after",
    "planned-failover-before",
    "planned-failover-during",
    "promoted-unconfirmed",
    "release-offline-fence",
    "source-left-fenced",
];

#[test]
fn every_shipped_runbook_is_valid() {
    let runbooks = super::shipped();
    let ids: Vec<&str> = runbooks.iter().map(|r| r.id.as_str()).collect();
    for want in WANTED {
        assert!(ids.contains(&want), "runbook {want} missing from runbooks/: {ids:?}");
    }
    for runbook in &runbooks {
        assert!(!runbook.spec.is_empty(), "{} cites no spec section", runbook.id);
        assert!(!runbook.data_loss_sentence.is_empty(), "{} has no data-loss sentence", runbook.id);
    }
}

#[test]
fn file_names_match_ids() {
    for entry in std::fs::read_dir(super::runbooks_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let runbook = bloodraven_runbook::load(&path).unwrap_or_else(|e| panic!("{e}"));
            let stem = path.file_stem().unwrap().to_string_lossy();
            assert_eq!(stem, runbook.id, "{} must be named after its id", path.display());
        }
    }
}

/// The compiled-in list (`src/shipped.rs`) is the folder, file for file and byte for byte.
#[test]
fn the_compiled_in_runbooks_are_the_folder() {
    let mut on_disk: Vec<(String, String)> = std::fs::read_dir(super::runbooks_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    on_disk.sort();
    let compiled: Vec<(String, String)> = bloodraven_runbook::shipped::FILES
        .iter()
        .map(|(name, text)| ((*name).to_owned(), (*text).to_owned()))
        .collect();
    assert_eq!(
        compiled.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        on_disk.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "add the new runbook to crates/runbook/src/shipped.rs"
    );
    assert_eq!(compiled, on_disk);
    let checked = bloodraven_runbook::shipped().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(checked.len(), WANTED.len());
}
