//! Open + coverage of a 10,000-file, 5-site archive from the filesystem store.
//!
//! `cargo bench -p bloodraven-store --bench archive_open`
//!
//! The archive is built once in a temporary directory in the PVC layout: `archive.json`, five
//! `manifest-site-<n>.json` from `bloodraven_archive::fixtures::synthetic_manifests` (10,000
//! rows, a planned failover every 200 files) and one object file per row under
//! `site-<n>/mysql-bin.<nnnnnn>.<id>`, as a real archive holds them (the open lists only the
//! manifests and the descriptor, but they share the directory). The bodies are placeholders (the open reads only the descriptor and the manifests),
//! written with `std::fs` because 10,000 fsynced store puts would only slow the setup.
//!
//! Measured: `open_archive` (list every page, read and verify the descriptor and every
//! manifest) followed by `Coverage::of`, and each part alone.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;

use bloodraven_archive::coverage::Coverage;
use bloodraven_archive::descriptor::{ArchiveDescriptor, Encryption, SourceRef};
use bloodraven_archive::fixtures::{GROUP_UID, synthetic_manifests};
use bloodraven_archive::ident::{DESCRIPTOR_NAME, manifest_name};
use bloodraven_archive::reader::{ReaderKey, ReaderOptions};
use bloodraven_store::archive::{ArchiveRoot, open_archive, write_objects};
use bloodraven_store::{FsStore, ObjectStore};
use criterion::{Criterion, criterion_group, criterion_main};

const FILES: usize = 10_000;
const SITES: usize = 5;
const FILES_PER_EPISODE: usize = 200;

/// Writes the archive under `<root>/prod/binlogs` and returns the store and the archive root.
fn build(runtime: &tokio::runtime::Runtime, dir: &Path) -> (FsStore, ArchiveRoot) {
    let manifests = synthetic_manifests(FILES, SITES, FILES_PER_EPISODE);
    let archive_id = manifests[0].archive_id.clone();
    let created_at = manifests[0].files[0].first_event_time.expect("synthetic rows have times");
    let descriptor = ArchiveDescriptor::new(
        archive_id,
        SourceRef { namespace: "prod".into(), name: "lion".into(), uid: GROUP_UID.into() },
        Encryption::none(),
        created_at,
        "site-0",
    );
    let root = ArchiveRoot::under_profile("prod").expect("a valid archive root");
    let archive_dir = dir.join(root.as_str());
    let mut objects = BTreeMap::new();
    objects.insert(DESCRIPTOR_NAME.to_owned(), descriptor.to_vec());
    for manifest in &manifests {
        let name = manifest_name(&manifest.site).expect("synthetic site names are valid");
        objects.insert(name, manifest.to_vec());
        std::fs::create_dir_all(archive_dir.join(&manifest.site)).expect("creating a site dir");
        for row in &manifest.files {
            std::fs::write(archive_dir.join(&row.key), row.name.as_bytes())
                .expect("writing a placeholder binlog object");
        }
    }
    let store = FsStore::new(dir).expect("the temporary directory is a store root");
    runtime
        .block_on(write_objects(&store, &root, &objects))
        .expect("writing the descriptor and manifests");
    (store, root)
}

async fn open_and_cover(store: &impl ObjectStore, root: &ArchiveRoot) -> Coverage {
    let archive = open_archive(store, root, ReaderOptions::new(ReaderKey::None))
        .await
        .expect("the synthetic archive opens");
    Coverage::of(&archive)
}

fn archive_open(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (store, root) = build(&runtime, dir.path());

    // The archive is what the benchmark claims to measure.
    let coverage = runtime.block_on(open_and_cover(&store, &root));
    assert_eq!(coverage.files.len(), FILES);
    assert_eq!(coverage.sites.len(), SITES);
    assert!(coverage.gaps.is_empty() && coverage.forks.is_empty());

    let mut group = c.benchmark_group("archive_open");
    group.sample_size(10);
    group.bench_function("open+coverage/fs/10000 files/5 sites", |b| {
        b.iter(|| runtime.block_on(open_and_cover(black_box(&store), &root)))
    });
    group.bench_function("open/fs/10000 files/5 sites", |b| {
        b.iter(|| {
            runtime.block_on(open_archive(
                black_box(&store),
                &root,
                ReaderOptions::new(ReaderKey::None),
            ))
        })
    });
    let archive = runtime
        .block_on(open_archive(&store, &root, ReaderOptions::new(ReaderKey::None)))
        .expect("the synthetic archive opens");
    group.bench_function("coverage/10000 files/5 sites", |b| {
        b.iter(|| Coverage::of(black_box(&archive)))
    });
    group.finish();
}

criterion_group!(benches, archive_open);
criterion_main!(benches);
