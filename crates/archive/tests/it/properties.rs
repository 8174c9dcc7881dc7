//! Property tests: parsers never panic, normalization ignores slash noise.

use bloodraven_archive::descriptor::ArchiveDescriptor;
use bloodraven_archive::manifest::Manifest;
use bloodraven_archive::{Destination, parse_probe_interval};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn descriptor_and_manifest_parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = ArchiveDescriptor::from_slice(&bytes);
        let _ = Manifest::from_slice("manifest-a.json", &bytes);
        let _ = Manifest::peek_version("manifest-a.json", &bytes);
    }

    #[test]
    fn durations_never_panic(text in "[0-9.a-zµ]{0,12}") {
        let _ = parse_probe_interval(&text);
    }

    #[test]
    fn huge_durations_are_refused(text in "[1-9][0-9]{28,40}\\.[0-9]{1,20}(h|m|s|ms|us|ns)") {
        // At least 10^28 units (over i64::MAX seconds), some near the i128 range, with a fraction
        // on top: refused, never an overflow.
        prop_assert!(parse_probe_interval(&text).is_err());
    }

    #[test]
    fn slash_noise_names_the_same_archive(
        segments in proptest::collection::vec("[a-z0-9]{1,6}", 0..4),
        lead in 0usize..3,
        trail in 0usize..3,
        repeat in 1usize..3,
    ) {
        let clean = segments.join("/");
        let noisy = format!("{}{}{}", "/".repeat(lead), segments.join(&"/".repeat(repeat)), "/".repeat(trail));
        let s3 = |prefix: &str| Destination::S3 { bucket: "b".into(), prefix: prefix.into(), endpoint: "HTTPS://S3.Example:443/".into() }.normalize().unwrap();
        prop_assert_eq!(s3(&clean), s3(&noisy));
        let pvc = |sub_path: &str| Destination::Pvc { namespace: "ns".into(), claim: "c".into(), sub_path: sub_path.into() }.normalize().unwrap();
        prop_assert_eq!(pvc(&clean), pvc(&noisy));
    }
}
