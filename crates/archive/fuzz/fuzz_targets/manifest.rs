//! Manifest bytes: parsing never panics, and an accepted manifest round-trips and yields a
//! coverage and a window without panicking.
#![no_main]

use bloodraven_archive::coverage::{BackupPoint, Coverage};
use bloodraven_archive::manifest::Manifest;
use bloodraven_gtid::GtidSet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(manifest) = Manifest::from_slice("manifest-a.json", data) else { return };
    let again = Manifest::from_slice("manifest-a.json", &manifest.to_vec());
    assert!(again.is_ok(), "a written manifest must read back: {again:?}");
    let coverage = Coverage::from_manifests([&manifest]);
    let backup =
        BackupPoint { gtid_executed: GtidSet::new(), dump_end: jiff::Timestamp::UNIX_EPOCH };
    let _ = coverage.window(&backup, &GtidSet::new());
    for file in &manifest.files {
        let _ = coverage.window(
            &BackupPoint {
                gtid_executed: file.previous_gtids.clone(),
                dump_end: jiff::Timestamp::UNIX_EPOCH,
            },
            &file.gtids,
        );
    }
});
