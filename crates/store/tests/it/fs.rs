//! Filesystem-store specifics: symbolic links never lead outside the root, temporary files
//! never show, the root must exist.

use std::os::unix::fs::symlink;
use std::path::Path;

use bloodraven_store::{ErrorKind, FsStore, ObjectStore, list_all};
use tempfile::TempDir;

use crate::bounded;

pub(crate) fn fresh_store() -> (TempDir, FsStore) {
    let root = tempfile::tempdir().unwrap();
    let store = FsStore::new(root.path()).unwrap();
    (root, store)
}

/// A root and, beside it (outside), a directory holding `secret/data`.
struct Escape {
    _base: TempDir,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
    store: FsStore,
}

impl Escape {
    fn new() -> Self {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("root");
        let outside = base.path().join("outside");
        std::fs::create_dir_all(root.join("binlogs")).unwrap();
        std::fs::create_dir_all(outside.join("secret")).unwrap();
        std::fs::write(outside.join("secret/data"), b"outside the root").unwrap();
        let store = FsStore::new(&root).unwrap();
        Escape { _base: base, root, outside, store }
    }

    fn outside_untouched(&self) {
        assert_eq!(std::fs::read(self.outside.join("secret/data")).unwrap(), b"outside the root");
        let names: Vec<_> = std::fs::read_dir(self.outside.join("secret"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["data"], "nothing was written outside the root");
    }
}

fn assert_refused<T: std::fmt::Debug>(result: bloodraven_store::Result<T>, what: &str) {
    let error = result.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::SymlinkRefused, "{what}: {error}");
    assert!(error.to_string().contains("is a symbolic link"), "{what}: {error}");
}

#[tokio::test]
async fn a_linked_directory_cannot_redirect_any_operation() {
    bounded(async {
        let escape = Escape::new();
        // An intermediate directory replaced by a link to the outside.
        symlink(&escape.outside, escape.root.join("binlogs/iad")).unwrap();
        let store = &escape.store;
        assert_refused(store.get("binlogs/iad/secret/data").await, "get");
        assert_refused(store.get_range("binlogs/iad/secret/data", 0..4).await, "get_range");
        assert_refused(store.head("binlogs/iad/secret/data").await, "head");
        assert_refused(store.put("binlogs/iad/secret/data", b"overwritten".to_vec()).await, "put");
        assert_refused(store.put("binlogs/iad/secret/new", b"new".to_vec()).await, "put new");
        assert_refused(store.create("binlogs/iad/secret/created", b"new".to_vec()).await, "create");
        assert_refused(store.delete("binlogs/iad/secret/data").await, "delete");
        assert_refused(store.list("binlogs/iad/", None, 10).await, "list inside the link");
        assert_refused(store.list("binlogs/", None, 10).await, "list across the link");
        assert_refused(store.list("", None, 10).await, "list from the root");
        escape.outside_untouched();
    })
    .await;
}

#[tokio::test]
async fn a_link_in_place_of_an_object_is_never_followed() {
    bounded(async {
        let escape = Escape::new();
        symlink(escape.outside.join("secret/data"), escape.root.join("binlogs/archive.json"))
            .unwrap();
        let store = &escape.store;
        assert_refused(store.get("binlogs/archive.json").await, "get");
        assert_refused(store.head("binlogs/archive.json").await, "head");
        assert_refused(store.delete("binlogs/archive.json").await, "delete");
        assert_refused(store.list("binlogs/", None, 10).await, "list");
        // create: the link occupies the key; link(2) does not follow it.
        let error = store.create("binlogs/archive.json", b"new".to_vec()).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::AlreadyExists, "{error}");
        escape.outside_untouched();
        // put replaces the link itself (rename(2) does not follow it), never the target.
        store.put("binlogs/archive.json", b"replaced".to_vec()).await.unwrap();
        assert!(!escape.root.join("binlogs/archive.json").is_symlink());
        assert_eq!(store.get("binlogs/archive.json").await.unwrap().bytes, b"replaced");
        escape.outside_untouched();
    })
    .await;
}

#[tokio::test]
async fn a_relative_link_up_and_out_is_refused() {
    bounded(async {
        let escape = Escape::new();
        symlink("../../outside", escape.root.join("binlogs/ord")).unwrap();
        assert_refused(escape.store.get("binlogs/ord/secret/data").await, "get");
        assert_refused(escape.store.delete("binlogs/ord/secret/data").await, "delete");
        assert_refused(escape.store.put("binlogs/ord/secret/x", vec![1]).await, "put");
        escape.outside_untouched();
    })
    .await;
}

#[tokio::test]
async fn the_root_itself_may_be_a_link() {
    bounded(async {
        let base = tempfile::tempdir().unwrap();
        std::fs::create_dir(base.path().join("real")).unwrap();
        symlink(base.path().join("real"), base.path().join("mount")).unwrap();
        let store = FsStore::new(base.path().join("mount")).unwrap();
        store.put("a/b", b"x".to_vec()).await.unwrap();
        assert_eq!(std::fs::read(base.path().join("real/a/b")).unwrap(), b"x");
        assert_eq!(store.root(), base.path().join("mount"));
        assert_eq!(store.describe(), format!("pvc:{}", base.path().join("mount").display()));
    })
    .await;
}

#[tokio::test]
async fn a_missing_root_is_a_configuration_error() {
    let base = tempfile::tempdir().unwrap();
    let error = FsStore::new(base.path().join("absent")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidConfig);
    assert!(error.to_string().contains("is not a directory"), "{error}");
    std::fs::write(base.path().join("file"), b"").unwrap();
    assert_eq!(
        FsStore::new(base.path().join("file")).unwrap_err().kind(),
        ErrorKind::InvalidConfig
    );
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn writes_leave_no_temporary_files_and_hide_stray_ones() {
    bounded(async {
        let (root, store) = fresh_store();
        store.put("binlogs/archive.json", b"a".to_vec()).await.unwrap();
        store.put("binlogs/archive.json", b"b".to_vec()).await.unwrap();
        store.create("binlogs/manifest-iad.json", b"m".to_vec()).await.unwrap();
        let refused = store.create("binlogs/manifest-iad.json", b"n".to_vec()).await;
        assert_eq!(refused.unwrap_err().kind(), ErrorKind::AlreadyExists);
        assert_eq!(entries(&root.path().join("binlogs")), ["archive.json", "manifest-iad.json"]);
        // A temporary file left by a crash is never listed.
        std::fs::write(root.path().join("binlogs/.bloodraven-tmp-0123456789abcdef"), b"junk")
            .unwrap();
        let listed = list_all(&store, "").await.unwrap();
        let keys: Vec<_> = listed.iter().map(|object| object.key.as_str()).collect();
        assert_eq!(keys, ["binlogs/archive.json", "binlogs/manifest-iad.json"]);
    })
    .await;
}

#[tokio::test]
async fn directories_and_special_files_are_not_objects() {
    bounded(async {
        let (root, store) = fresh_store();
        std::fs::create_dir_all(root.path().join("dir/sub")).unwrap();
        assert_eq!(store.get("dir/sub").await.unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(store.head("dir").await.unwrap_err().kind(), ErrorKind::NotFound);
        let error = store.put("dir/sub", b"x".to_vec()).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Permanent, "{error}");
        assert!(error.to_string().contains("names a directory"), "{error}");
        // A file where a directory is expected.
        store.put("file", b"x".to_vec()).await.unwrap();
        assert_eq!(store.get("file/below").await.unwrap_err().kind(), ErrorKind::NotFound);
        let error = store.put("file/below", b"x".to_vec()).await.unwrap_err();
        assert!(error.to_string().contains("\"file\" is not a directory"), "{error}");
        // A FIFO at a key does not hang a read, and is not listed.
        let status = std::process::Command::new("mkfifo")
            .arg(root.path().join("dir/fifo"))
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(store.get("dir/fifo").await.unwrap_err().kind(), ErrorKind::NotFound);
        let keys: Vec<_> =
            list_all(&store, "").await.unwrap().into_iter().map(|object| object.key).collect();
        assert_eq!(keys, ["file"]);
    })
    .await;
}

#[tokio::test]
async fn objects_written_are_plain_files_at_their_key() {
    bounded(async {
        let (root, store) = fresh_store();
        store.put("prod/binlogs/iad/mysql-bin.000042.ab", b"binlog".to_vec()).await.unwrap();
        store.create("prod/binlogs/archive.json", b"{}".to_vec()).await.unwrap();
        let path = root.path().join("prod/binlogs/iad/mysql-bin.000042.ab");
        assert_eq!(std::fs::read(path).unwrap(), b"binlog");
        let descriptor = root.path().join("prod/binlogs/archive.json");
        assert_eq!(std::fs::read(&descriptor).unwrap(), b"{}");
        // The link(2) create leaves one name for the inode.
        use std::os::unix::fs::MetadataExt as _;
        assert_eq!(std::fs::metadata(&descriptor).unwrap().nlink(), 1);
    })
    .await;
}

#[tokio::test]
async fn pages_follow_byte_order_across_directory_levels() {
    bounded(async {
        let (_root, store) = fresh_store();
        for key in ["a0", "a/x", "a.c", "a-b/y", "a/w/v", "b"] {
            store.put(key, key.as_bytes().to_vec()).await.unwrap();
        }
        let mut seen = Vec::new();
        let mut continuation: Option<String> = None;
        loop {
            let page = store.list("a", continuation.as_deref(), 1).await.unwrap();
            seen.extend(page.objects.into_iter().map(|object| object.key));
            match page.next {
                Some(next) => continuation = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, ["a-b/y", "a.c", "a/w/v", "a/x", "a0"]);
    })
    .await;
}
