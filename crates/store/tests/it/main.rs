//! Integration tests: one behavioural suite (suite.rs) run against the filesystem store and
//! a real SeaweedFS, plus tests specific to each store (fs.rs, s3.rs) and the archive IO
//! adapter over both (archive.rs).
//!
//! The SeaweedFS tests start their own `weed mini` (bloodraven_store::testing) and fail,
//! never skip, when `weed` is missing: run scripts/test.sh.

// This binary is test code only; clippy's allow-unwrap-in-tests covers `#[test]` functions
// but not the shared helpers and suite bodies they call.
#![allow(clippy::unwrap_used)]

mod archive;
mod fs;
mod s3;
mod suite;

use std::future::Future;
use std::time::Duration;

/// Every test body is bounded in time.
pub(crate) const TEST_TIMEOUT: Duration = Duration::from_secs(120);

pub(crate) async fn bounded<F: Future>(body: F) -> F::Output {
    tokio::time::timeout(TEST_TIMEOUT, body).await.expect("test body timed out")
}

/// Generates `fs_suite::<name>` and `s3_suite::<name>` for each suite function.
macro_rules! both_stores {
    ($($name:ident),* $(,)?) => {
        mod fs_suite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let (_root, store) = crate::fs::fresh_store();
                    crate::bounded(crate::suite::$name(&store)).await;
                }
            )*
        }
        mod s3_suite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let server = crate::s3::server();
                    let store = crate::s3::store(&server, "suite", "archives/root").await;
                    crate::bounded(crate::suite::$name(&store)).await;
                }
            )*
        }
    };
}

both_stores!(
    put_get_head,
    ranged_get,
    atomic_create,
    delete_is_idempotent,
    list_pages,
    invalid_keys_are_refused,
    probe_certifies,
);

mod race {
    use std::sync::Arc;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn fs_atomic_create_race() {
        let (_root, store) = crate::fs::fresh_store();
        crate::bounded(crate::suite::atomic_create_race(Arc::new(store))).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn fs_put_is_atomic_for_readers() {
        let (_root, store) = crate::fs::fresh_store();
        crate::bounded(crate::suite::put_is_atomic_for_readers(Arc::new(store))).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn s3_put_is_atomic_for_readers() {
        let server = crate::s3::server();
        let store = crate::s3::store(&server, "atomic", "").await;
        crate::bounded(crate::suite::put_is_atomic_for_readers(Arc::new(store))).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn s3_atomic_create_race() {
        let server = crate::s3::server();
        let store = crate::s3::store(&server, "race", "").await;
        crate::bounded(crate::suite::atomic_create_race(Arc::new(store))).await;
    }
}
