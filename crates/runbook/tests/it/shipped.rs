//! Every runbook in `runbooks/` loads and checks clean, and cites the spec.

#[test]
fn every_shipped_runbook_is_valid() {
    let runbooks = super::shipped();
    let ids: Vec<&str> = runbooks.iter().map(|r| r.id.as_str()).collect();
    for want in [
        "automation-hold",
        "held-reclone-queue",
        "no-primary",
        "diverged-follower",
        "archive-not-ready",
    ] {
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
