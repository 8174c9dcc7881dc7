//! Binlog files a site wrote, laid out as archive objects: `archive.json`, `manifest-<site>.json`
//! and `<site>/<name>.<id>`, with each row's content ID and `gtidCoverage` from scanning its
//! bytes, as the sidecar archiver writes them. Pure: bytes in, objects out.

use std::collections::BTreeMap;

use bloodraven_archive::ident::{DESCRIPTOR_NAME, manifest_name, object_key};
use bloodraven_archive::manifest::GtidCoverage;
use bloodraven_archive::{
    ArchiveDescriptor, ArchiveId, ContentIdKey, Encryption, FileRow, Manifest,
    NormalizedDestination, PromotionRecord, SourceRef,
};
use jiff::Timestamp;

use crate::ReplayError;

/// One sealed binlog of a site.
#[derive(Debug, Clone)]
pub struct SealedFile {
    /// `binlog.000001`.
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// A plaintext archive of one group's sites.
#[derive(Debug, Clone)]
pub struct LocalArchive {
    /// The archive ID (derived from the group UID and the destination).
    pub archive_id: ArchiveId,
    /// Key (relative to the archive root) to bytes.
    pub objects: BTreeMap<String, Vec<u8>>,
    manifests: BTreeMap<String, Manifest>,
    descriptor: ArchiveDescriptor,
}

impl LocalArchive {
    /// An empty archive of `source` at `destination`, created at `now` by `site`.
    pub fn new(
        source: SourceRef,
        destination: &NormalizedDestination,
        now: Timestamp,
        site: &str,
    ) -> LocalArchive {
        let archive_id = ArchiveId::derive(&source.uid, destination);
        let descriptor =
            ArchiveDescriptor::new(archive_id.clone(), source, Encryption::none(), now, site);
        LocalArchive {
            archive_id,
            objects: BTreeMap::new(),
            manifests: BTreeMap::new(),
            descriptor,
        }
    }

    /// Archives `files` of `site` (sealed, in order) at `now`.
    pub fn add(
        &mut self,
        site: &str,
        files: &[SealedFile],
        now: Timestamp,
    ) -> Result<(), ReplayError> {
        let key = ContentIdKey::Plain;
        let manifest = self
            .manifests
            .entry(site.to_owned())
            .or_insert_with(|| Manifest::new(self.archive_id.clone(), site));
        for file in files {
            let summary = bloodraven_binlog_scan(&file.bytes);
            let id = key.content_id(&file.bytes);
            let object = object_key(site, &file.name, &id)
                .map_err(|error| ReplayError::Archive(error.to_string()))?;
            let times: Vec<Timestamp> = summary.commits.clone();
            let row = FileRow {
                name: file.name.clone(),
                id: Some(id),
                key: object.clone(),
                size: file.bytes.len() as u64,
                previous_gtids: summary.previous.clone(),
                gtids: summary.gtids.clone(),
                first_event_time: times.first().copied().or(Some(now)),
                last_event_time: times.last().copied().or(Some(now)),
                archived_at: Some(now),
                gtid_coverage: Some(GtidCoverage {
                    complete: summary.complete,
                    gtids: summary.gtids.clone(),
                    content_id: Some(id),
                    extra: Default::default(),
                }),
                divergent: false,
                quarantined: false,
                base_gtids: None,
                extra: Default::default(),
            };
            manifest.upsert_file(row).map_err(|error| ReplayError::Archive(error.to_string()))?;
            self.objects.insert(object, file.bytes.clone());
        }
        Ok(())
    }

    /// Records a promotion (or reset) record in `site`'s manifest.
    pub fn record(&mut self, site: &str, record: PromotionRecord) {
        self.manifests
            .entry(site.to_owned())
            .or_insert_with(|| Manifest::new(self.archive_id.clone(), site))
            .push_record(record);
    }

    /// Every object, the descriptor and manifests included.
    pub fn into_objects(mut self) -> Result<BTreeMap<String, Vec<u8>>, ReplayError> {
        self.objects.insert(DESCRIPTOR_NAME.to_owned(), self.descriptor.to_vec());
        for (site, manifest) in &self.manifests {
            let name =
                manifest_name(site).map_err(|error| ReplayError::Archive(error.to_string()))?;
            self.objects.insert(name, manifest.to_vec());
        }
        Ok(self.objects)
    }
}

struct Scanned {
    previous: bloodraven_gtid::GtidSet,
    gtids: bloodraven_gtid::GtidSet,
    complete: bool,
    commits: Vec<Timestamp>,
}

fn bloodraven_binlog_scan(bytes: &[u8]) -> Scanned {
    let what = "binlog";
    let commits = match bloodraven_pitr::index_bytes(what, bytes) {
        bloodraven_pitr::RowBytes::Read(txns) => txns.iter().filter_map(|t| t.commit).collect(),
        _ => Vec::new(),
    };
    let summary = bloodraven_binlog::scan(bytes);
    Scanned {
        previous: summary.previous_gtids.clone().unwrap_or_default(),
        gtids: summary.coverage.gtids.clone(),
        complete: summary.coverage.is_complete(),
        commits,
    }
}
