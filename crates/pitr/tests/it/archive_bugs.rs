//! Findings in `bloodraven-archive`, kept as regression tests once fixed.

use bloodraven_archive::fixtures::{Fixture, Scenario};

use crate::helpers::open;

/// Issue 17: "a `manifest-<site>.json` whose site does not match `^[a-z0-9-]+$` is
/// `PITRArchiveObjectInvalid`, never silently dropped". The reader's listing counts such a key
/// as an "other object" (`ident::manifest_site` returns `None`), so the archive opens without it
/// and the planner never sees that site's rows.
#[test]
fn a_manifest_with_an_invalid_site_name_is_refused_not_dropped() {
    let mut fixture = Fixture::build(Scenario::HealthyPlannedFailover);
    let bytes = fixture.objects["manifest-b.json"].clone();
    fixture.objects.insert("manifest-Bad_Site.json".into(), bytes);
    match open(&fixture) {
        Ok(archive) => panic!(
            "the archive opened with sites {:?}: manifest-Bad_Site.json was silently dropped",
            archive.manifests.keys().collect::<Vec<_>>()
        ),
        Err(refusal) => assert_eq!(refusal.token.as_str(), "PITRArchiveObjectInvalid"),
    }
}
