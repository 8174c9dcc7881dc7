//! The behavioural contract of [`ObjectStore`], written once and run against both stores
//! (see `both_stores!` in main.rs).

use std::collections::BTreeSet;
use std::sync::Arc;

use bloodraven_store::{
    CAS_PROBE_PREFIX, ErrorKind, MAX_PAGE_SIZE, Object, ObjectMeta, ObjectStore, ProbeVerdict,
    list_all, probe_atomic_create,
};

fn keys(objects: &[ObjectMeta]) -> Vec<&str> {
    objects.iter().map(|object| object.key.as_str()).collect()
}

pub(crate) async fn put_get_head<S: ObjectStore>(store: &S) {
    store.put("site-a/mysql-bin.000001.abc", b"first body".to_vec()).await.unwrap();
    let object = store.get("site-a/mysql-bin.000001.abc").await.unwrap();
    assert_eq!(object, Object { bytes: b"first body".to_vec(), total_size: 10 });
    let meta = store.head("site-a/mysql-bin.000001.abc").await.unwrap();
    assert_eq!(meta, ObjectMeta { key: "site-a/mysql-bin.000001.abc".into(), size: 10 });

    // put overwrites.
    store.put("site-a/mysql-bin.000001.abc", b"second".to_vec()).await.unwrap();
    assert_eq!(store.get("site-a/mysql-bin.000001.abc").await.unwrap().bytes, b"second");

    // Empty objects and top-level keys.
    store.put("empty", Vec::new()).await.unwrap();
    assert_eq!(store.get("empty").await.unwrap(), Object { bytes: vec![], total_size: 0 });
    assert_eq!(store.head("empty").await.unwrap().size, 0);

    // Missing objects.
    for missing in ["nope", "site-a/nope", "nope/deeper/still"] {
        assert_eq!(store.get(missing).await.unwrap_err().kind(), ErrorKind::NotFound, "{missing}");
        assert_eq!(store.head(missing).await.unwrap_err().kind(), ErrorKind::NotFound, "{missing}");
    }
    // A key that is a "directory" of other keys is not an object.
    assert_eq!(store.get("site-a").await.unwrap_err().kind(), ErrorKind::NotFound);
}

pub(crate) async fn ranged_get<S: ObjectStore>(store: &S) {
    let body: Vec<u8> = (0u8..100).collect();
    store.put("ranged", body.clone()).await.unwrap();
    let middle = store.get_range("ranged", 10..20).await.unwrap();
    assert_eq!(middle, Object { bytes: body[10..20].to_vec(), total_size: 100 });
    let first = store.get_range("ranged", 0..1).await.unwrap();
    assert_eq!(first, Object { bytes: vec![0], total_size: 100 });
    // Clipped to the object's end.
    let tail = store.get_range("ranged", 95..1_000).await.unwrap();
    assert_eq!(tail, Object { bytes: body[95..].to_vec(), total_size: 100 });
    // Starting at or past the end: empty, with the size.
    let past = store.get_range("ranged", 100..200).await.unwrap();
    assert_eq!(past, Object { bytes: vec![], total_size: 100 });
    let far = store.get_range("ranged", 5_000..6_000).await.unwrap();
    assert_eq!(far, Object { bytes: vec![], total_size: 100 });
    // An empty range is refused before any request.
    assert_eq!(store.get_range("ranged", 5..5).await.unwrap_err().kind(), ErrorKind::InvalidRange);
    assert_eq!(store.get_range("missing", 0..5).await.unwrap_err().kind(), ErrorKind::NotFound);
}

pub(crate) async fn atomic_create<S: ObjectStore>(store: &S) {
    store.create("binlogs/archive.json", b"winner".to_vec()).await.unwrap();
    let error = store.create("binlogs/archive.json", b"loser".to_vec()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::AlreadyExists, "{error}");
    assert_eq!(store.get("binlogs/archive.json").await.unwrap().bytes, b"winner");
    // create on a key written by put is refused too.
    store.put("binlogs/manifest-iad.json", b"put".to_vec()).await.unwrap();
    let error = store.create("binlogs/manifest-iad.json", b"create".to_vec()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::AlreadyExists);
    assert_eq!(store.get("binlogs/manifest-iad.json").await.unwrap().bytes, b"put");
    // After a delete the key is free again.
    store.delete("binlogs/archive.json").await.unwrap();
    store.create("binlogs/archive.json", b"again".to_vec()).await.unwrap();
    assert_eq!(store.get("binlogs/archive.json").await.unwrap().bytes, b"again");
}

/// Several concurrent creators of one key: exactly one wins, the others get AlreadyExists,
/// and the stored body is the winner's. Repeated over fresh keys.
pub(crate) async fn atomic_create_race<S: ObjectStore + 'static>(store: Arc<S>) {
    const KEYS: usize = 12;
    const CREATORS: usize = 6;
    for round in 0..KEYS {
        let key = format!("race/key-{round}");
        let mut tasks = Vec::new();
        for creator in 0..CREATORS {
            let store = Arc::clone(&store);
            let key = key.clone();
            tasks.push(tokio::spawn(async move {
                let body = format!("creator {creator} of {key}").into_bytes();
                (creator, store.create(&key, body).await)
            }));
        }
        let mut winners = Vec::new();
        for task in tasks {
            let (creator, result) = task.await.unwrap();
            match result {
                Ok(()) => winners.push(creator),
                Err(error) => assert_eq!(error.kind(), ErrorKind::AlreadyExists, "{error}"),
            }
        }
        assert_eq!(winners.len(), 1, "{key}: winners {winners:?}");
        let stored = store.get(&key).await.unwrap().bytes;
        assert_eq!(stored, format!("creator {} of {key}", winners[0]).into_bytes());
    }
}

pub(crate) async fn delete_is_idempotent<S: ObjectStore>(store: &S) {
    store.put("d/one", b"1".to_vec()).await.unwrap();
    store.put("d/two", b"2".to_vec()).await.unwrap();
    store.delete("d/one").await.unwrap();
    assert_eq!(store.get("d/one").await.unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(store.head("d/one").await.unwrap_err().kind(), ErrorKind::NotFound);
    store.delete("d/one").await.unwrap();
    store.delete("never/existed/at-all").await.unwrap();
    assert_eq!(keys(&list_all(store, "d/").await.unwrap()), ["d/two"]);
    // Deleting a "directory" of keys deletes nothing.
    store.delete("d").await.unwrap();
    assert_eq!(store.get("d/two").await.unwrap().bytes, b"2");
}

pub(crate) async fn list_pages<S: ObjectStore>(store: &S) {
    let wanted = [
        "binlogs/.bloodraven-cas-probe-0000000000000001",
        "binlogs/archive.json",
        "binlogs/iad/mysql-bin.000001.aa",
        "binlogs/iad/mysql-bin.000002.bb",
        "binlogs/manifest-iad.json",
        "binlogs/manifest-ord.json",
        "binlogs/ord/mysql-bin.000001.cc",
    ];
    for key in wanted.iter().rev() {
        store.put(key, key.as_bytes().to_vec()).await.unwrap();
    }
    store.put("binlogs-other/x", b"x".to_vec()).await.unwrap();
    store.put("other/y", b"y".to_vec()).await.unwrap();
    store.delete("binlogs/.bloodraven-cas-probe-0000000000000001").await.unwrap();
    let wanted = &wanted[1..];

    // Pages of two, in order, continued by the token.
    let mut pages = Vec::new();
    let mut continuation: Option<String> = None;
    loop {
        let page = store.list("binlogs/", continuation.as_deref(), 2).await.unwrap();
        assert!(page.objects.len() <= 2);
        pages.push(keys(&page.objects).into_iter().map(str::to_owned).collect::<Vec<_>>());
        match page.next {
            Some(next) => continuation = Some(next),
            None => break,
        }
        assert!(pages.len() <= wanted.len(), "listing does not end");
    }
    // Every key exactly once. (Within one directory level both stores list in byte order;
    // across levels SeaweedFS walks its tree, see the trait's contract.)
    let flattened: Vec<_> = pages.concat();
    assert_eq!(flattened, wanted);
    let unique: BTreeSet<_> = flattened.iter().collect();
    assert_eq!(unique.len(), flattened.len());
    assert!(pages.iter().all(|page| !page.is_empty()));
    assert_eq!(pages[0], ["binlogs/archive.json", "binlogs/iad/mysql-bin.000001.aa"]);

    // Sizes are reported.
    let all = list_all(store, "binlogs/").await.unwrap();
    assert!(all.iter().all(|object| object.size == object.key.len() as u64));

    // A prefix is a string prefix: "binlogs" also matches "binlogs-other/x". list_all sorts.
    let broad = list_all(store, "binlogs").await.unwrap();
    assert_eq!(broad.len(), wanted.len() + 1);
    assert_eq!(broad.last().unwrap().key, "binlogs/ord/mysql-bin.000001.cc");
    assert_eq!(broad[0].key, "binlogs-other/x");
    assert_eq!(
        keys(&list_all(store, "binlogs/manifest-").await.unwrap()),
        ["binlogs/manifest-iad.json", "binlogs/manifest-ord.json"]
    );
    assert_eq!(
        keys(&list_all(store, "binlogs/iad/mysql-bin.000002").await.unwrap()),
        ["binlogs/iad/mysql-bin.000002.bb"]
    );
    let everything = list_all(store, "").await.unwrap();
    assert_eq!(everything.len(), wanted.len() + 2);
    let sorted: BTreeSet<_> = keys(&everything).into_iter().collect();
    assert_eq!(keys(&everything), sorted.into_iter().collect::<Vec<_>>());

    // Nothing there: an empty last page.
    for empty in ["nothing/", "binlogs/zzz", "binlogs/iad/x/"] {
        let page = store.list(empty, None, 10).await.unwrap();
        assert!(page.objects.is_empty() && page.next.is_none(), "{empty}");
    }
    // Page sizes are clamped to 1..=1000.
    let page = store.list("binlogs/", None, 0).await.unwrap();
    assert_eq!(page.objects.len(), 1);
    let page = store.list("binlogs/", None, MAX_PAGE_SIZE * 10).await.unwrap();
    assert_eq!(page.objects.len(), wanted.len());
    assert!(page.next.is_none());
}

pub(crate) async fn invalid_keys_are_refused<S: ObjectStore>(store: &S) {
    for key in ["", "/abs", "a//b", "a/../b", "..", "a/./b", "trailing/", "nul\0byte"] {
        let kind = |result: Result<(), bloodraven_store::Error>| result.unwrap_err().kind();
        assert_eq!(kind(store.put(key, vec![1]).await), ErrorKind::InvalidKey, "put {key:?}");
        assert_eq!(kind(store.create(key, vec![1]).await), ErrorKind::InvalidKey, "create {key:?}");
        assert_eq!(kind(store.delete(key).await), ErrorKind::InvalidKey, "delete {key:?}");
        assert_eq!(store.get(key).await.unwrap_err().kind(), ErrorKind::InvalidKey, "get {key:?}");
        assert_eq!(
            store.head(key).await.unwrap_err().kind(),
            ErrorKind::InvalidKey,
            "head {key:?}"
        );
    }
    for prefix in ["/abs", "a//", "../x", "nul\0"] {
        let error = store.list(prefix, None, 10).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidKey, "list {prefix:?}");
    }
    assert!(list_all(store, "").await.unwrap().is_empty(), "nothing was written");
}

pub(crate) async fn probe_certifies<S: ObjectStore>(store: &S) {
    assert_eq!(probe_atomic_create(store, "prod/binlogs").await.unwrap(), ProbeVerdict::Certified);
    assert_eq!(probe_atomic_create(store, "").await.unwrap(), ProbeVerdict::Certified);
    // The probe objects are gone.
    let left = list_all(store, "").await.unwrap();
    assert!(!left.iter().any(|object| object.key.contains(CAS_PROBE_PREFIX)), "{left:?}");
}

/// `put` replaces atomically: a reader racing a writer sees one whole body or the other.
pub(crate) async fn put_is_atomic_for_readers<S: ObjectStore + 'static>(store: Arc<S>) {
    const SIZE: usize = 256 * 1024;
    const ROUNDS: usize = 20;
    store.put("manifest-iad.json", vec![b'a'; SIZE]).await.unwrap();
    let writer = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            for round in 0..ROUNDS {
                let byte = if round % 2 == 0 { b'b' } else { b'a' };
                store.put("manifest-iad.json", vec![byte; SIZE]).await.unwrap();
            }
        })
    };
    let mut reads = 0;
    while !writer.is_finished() || reads < 5 {
        let object = store.get("manifest-iad.json").await.unwrap();
        assert_eq!(object.bytes.len(), SIZE);
        let first = object.bytes[0];
        assert!(object.bytes.iter().all(|&byte| byte == first), "a read saw a mix of two bodies");
        reads += 1;
    }
    writer.await.unwrap();
}
