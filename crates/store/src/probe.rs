//! The spec's store-capability probe, written once over [`ObjectStore`].
//!
//! A writer proves that the store enforces atomic create before it creates the archive
//! descriptor: it creates `.bloodraven-cas-probe-<16 hex>` under the prefix twice, and only a
//! precondition failure ([`ErrorKind::AlreadyExists`]) on the second create certifies the
//! store. A store that accepts both creates, or rejects the conditional header, is
//! unsupported (the archive reports `PITRArchiveStoreUnsupported`). Transient, permission and
//! not-found failures are returned as errors: they say nothing about the store's semantics.

use std::fmt;

use crate::error::{Error, ErrorKind, Result};
use crate::key::validate_prefix;
use crate::random::{hex16, random_hex16};
use crate::{ObjectStore, Operation};

/// Every probe object's name starts with this; the archive ignores such keys when it
/// classifies a prefix (a probe whose cleanup failed may leave one behind).
pub const CAS_PROBE_PREFIX: &str = ".bloodraven-cas-probe-";

const FIRST_BODY: &[u8] = b"bloodraven atomic-create probe: first create\n";
const SECOND_BODY: &[u8] = b"bloodraven atomic-create probe: second create\n";

/// The outcome of a completed probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeVerdict {
    /// The second create failed with a precondition failure and the first body survived.
    Certified,
    /// The store does not enforce atomic create: `PITRArchiveStoreUnsupported`.
    Unsupported(UnsupportedReason),
}

/// Why a store failed the probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnsupportedReason {
    /// The second create on the same key succeeded.
    SecondCreateAccepted,
    /// The store rejected the conditional create itself (for example S3 501 NotImplemented,
    /// or a 400 naming the header).
    HeaderRejected { detail: String },
    /// The first create of a fresh random key reported that the key exists.
    FirstCreateRefused,
    /// The second create was refused, but the object no longer holds the first body.
    SecondCreateReplacedBody,
}

impl fmt::Display for UnsupportedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnsupportedReason::SecondCreateAccepted => {
                f.write_str("the store accepted a second atomic create of the same key")
            }
            UnsupportedReason::HeaderRejected { detail } => {
                write!(f, "the store rejected the atomic create: {detail}")
            }
            UnsupportedReason::FirstCreateRefused => f.write_str(
                "the store refused the atomic create of a fresh key as already existing",
            ),
            UnsupportedReason::SecondCreateReplacedBody => {
                f.write_str("the store refused the second create but replaced the object's body")
            }
        }
    }
}

/// The probe key under `prefix` for `nonce`: `<prefix>/.bloodraven-cas-probe-<16 hex>`.
pub fn probe_key(prefix: &str, nonce: u64) -> Result<String> {
    validate_prefix(prefix)?;
    let name = format!("{CAS_PROBE_PREFIX}{}", hex16(nonce));
    let prefix = prefix.trim_end_matches('/');
    Ok(if prefix.is_empty() { name } else { format!("{prefix}/{name}") })
}

/// Runs the probe under `prefix` (for example `prod/binlogs`) with a random key, then deletes
/// the probe object. A failed cleanup is returned as an error even when the verdict is known,
/// so nothing is left behind silently.
pub async fn probe_atomic_create<S: ObjectStore + ?Sized>(
    store: &S,
    prefix: &str,
) -> Result<ProbeVerdict> {
    let nonce = random_hex16().ok().and_then(|hex| u64::from_str_radix(&hex, 16).ok()).ok_or_else(
        || Error::Permanent {
            store: store.describe().to_owned(),
            operation: Operation::Create,
            key: prefix.to_owned(),
            detail: "cannot read random bytes for the probe key".to_owned(),
        },
    )?;
    probe_atomic_create_with_nonce(store, prefix, nonce).await
}

/// [`probe_atomic_create`] with a caller-chosen nonce (tests, reproducible runs).
pub async fn probe_atomic_create_with_nonce<S: ObjectStore + ?Sized>(
    store: &S,
    prefix: &str,
    nonce: u64,
) -> Result<ProbeVerdict> {
    let key = probe_key(prefix, nonce)?;
    let verdict = probe_key_twice(store, &key).await;
    // Clean up whatever the probe may have written, whatever the verdict.
    let cleanup = store.delete(&key).await;
    let verdict = verdict?;
    cleanup?;
    if let ProbeVerdict::Unsupported(reason) = &verdict {
        tracing::warn!(store = store.describe(), %reason, "store does not enforce atomic create");
    }
    Ok(verdict)
}

async fn probe_key_twice<S: ObjectStore + ?Sized>(store: &S, key: &str) -> Result<ProbeVerdict> {
    match store.create(key, FIRST_BODY.to_vec()).await {
        Ok(()) => {}
        Err(error) if error.kind() == ErrorKind::AlreadyExists => {
            return Ok(ProbeVerdict::Unsupported(UnsupportedReason::FirstCreateRefused));
        }
        Err(error) => return header_rejected_or(error),
    }
    match store.create(key, SECOND_BODY.to_vec()).await {
        Ok(()) => return Ok(ProbeVerdict::Unsupported(UnsupportedReason::SecondCreateAccepted)),
        Err(error) if error.kind() == ErrorKind::AlreadyExists => {}
        Err(error) => return header_rejected_or(error),
    }
    let stored = store.get(key).await?;
    if stored.bytes != FIRST_BODY {
        return Ok(ProbeVerdict::Unsupported(UnsupportedReason::SecondCreateReplacedBody));
    }
    Ok(ProbeVerdict::Certified)
}

/// A create refused as unsupported or permanently invalid means the store rejects the
/// conditional create; anything else (transient, permission, missing bucket) is an error.
fn header_rejected_or(error: Error) -> Result<ProbeVerdict> {
    match error.kind() {
        ErrorKind::Unsupported | ErrorKind::Permanent => {
            Ok(ProbeVerdict::Unsupported(UnsupportedReason::HeaderRejected {
                detail: error.to_string(),
            }))
        }
        _ => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::Range;
    use std::sync::Mutex;

    use super::*;
    use crate::{ListPage, Object, ObjectMeta};

    /// How the in-memory double answers a create of an existing key.
    #[derive(Clone, Copy)]
    enum Behaviour {
        Atomic,
        Overwrites,
        RejectsHeader,
        RefusesButReplaces,
        Transient,
        AlwaysExists,
    }

    struct Memory {
        behaviour: Behaviour,
        objects: Mutex<BTreeMap<String, Vec<u8>>>,
    }

    impl Memory {
        fn new(behaviour: Behaviour) -> Self {
            Memory { behaviour, objects: Mutex::new(BTreeMap::new()) }
        }

        fn error(&self, kind: ErrorKind, key: &str) -> Error {
            let store = "memory".to_owned();
            let (operation, key) = (Operation::Create, key.to_owned());
            match kind {
                ErrorKind::AlreadyExists => Error::AlreadyExists { store, operation, key },
                ErrorKind::Unsupported => Error::Unsupported {
                    store,
                    operation,
                    key,
                    detail: "S3 501 NotImplemented".into(),
                },
                _ => Error::Transient { store, operation, key, detail: "S3 503 SlowDown".into() },
            }
        }
    }

    impl ObjectStore for Memory {
        fn describe(&self) -> &str {
            "memory"
        }

        async fn list(&self, _: &str, _: Option<&str>, _: u32) -> Result<ListPage> {
            Ok(ListPage::default())
        }

        async fn head(&self, key: &str) -> Result<ObjectMeta> {
            let object = self.get(key).await?;
            Ok(ObjectMeta { key: key.to_owned(), size: object.total_size })
        }

        async fn get(&self, key: &str) -> Result<Object> {
            let objects = self.objects.lock().unwrap();
            let bytes = objects.get(key).cloned().ok_or_else(|| Error::NotFound {
                store: "memory".into(),
                operation: Operation::Get,
                key: key.to_owned(),
            })?;
            Ok(Object { total_size: bytes.len() as u64, bytes })
        }

        async fn get_range(&self, key: &str, _: Range<u64>) -> Result<Object> {
            self.get(key).await
        }

        async fn put(&self, key: &str, body: Vec<u8>) -> Result<()> {
            self.objects.lock().unwrap().insert(key.to_owned(), body);
            Ok(())
        }

        async fn create(&self, key: &str, body: Vec<u8>) -> Result<()> {
            let mut objects = self.objects.lock().unwrap();
            let exists = objects.contains_key(key);
            match self.behaviour {
                Behaviour::Atomic if exists => Err(self.error(ErrorKind::AlreadyExists, key)),
                Behaviour::RefusesButReplaces if exists => {
                    objects.insert(key.to_owned(), body);
                    Err(self.error(ErrorKind::AlreadyExists, key))
                }
                Behaviour::RejectsHeader => Err(self.error(ErrorKind::Unsupported, key)),
                Behaviour::Transient => Err(self.error(ErrorKind::Transient, key)),
                Behaviour::AlwaysExists => Err(self.error(ErrorKind::AlreadyExists, key)),
                _ => {
                    objects.insert(key.to_owned(), body);
                    Ok(())
                }
            }
        }

        async fn delete(&self, key: &str) -> Result<()> {
            self.objects.lock().unwrap().remove(key);
            Ok(())
        }
    }

    async fn probe(behaviour: Behaviour) -> (Result<ProbeVerdict>, usize) {
        let store = Memory::new(behaviour);
        let verdict = probe_atomic_create_with_nonce(&store, "prod/binlogs", 0x1234).await;
        let left = store.objects.lock().unwrap().len();
        (verdict, left)
    }

    #[test]
    fn probe_key_is_under_the_prefix() {
        assert_eq!(
            probe_key("prod/binlogs", 0xab).unwrap(),
            "prod/binlogs/.bloodraven-cas-probe-00000000000000ab"
        );
        assert_eq!(
            probe_key("prod/binlogs/", 1).unwrap(),
            "prod/binlogs/.bloodraven-cas-probe-0000000000000001"
        );
        assert_eq!(probe_key("", 1).unwrap(), ".bloodraven-cas-probe-0000000000000001");
        assert_eq!(probe_key("/x", 1).unwrap_err().kind(), ErrorKind::InvalidKey);
    }

    #[tokio::test]
    async fn atomic_store_is_certified_and_cleaned_up() {
        assert_eq!(probe(Behaviour::Atomic).await.0.unwrap(), ProbeVerdict::Certified);
        assert_eq!(probe(Behaviour::Atomic).await.1, 0);
    }

    #[tokio::test]
    async fn stores_that_do_not_enforce_create_are_unsupported() {
        let unsupported = |reason| ProbeVerdict::Unsupported(reason);
        let (verdict, left) = probe(Behaviour::Overwrites).await;
        assert_eq!(verdict.unwrap(), unsupported(UnsupportedReason::SecondCreateAccepted));
        assert_eq!(left, 0);
        let (verdict, _) = probe(Behaviour::RejectsHeader).await;
        assert_eq!(
            verdict.unwrap(),
            unsupported(UnsupportedReason::HeaderRejected {
                detail:
                    "create \"prod/binlogs/.bloodraven-cas-probe-0000000000001234\" in memory: \
                         not supported by the store: S3 501 NotImplemented"
                        .into()
            })
        );
        let (verdict, left) = probe(Behaviour::RefusesButReplaces).await;
        assert_eq!(verdict.unwrap(), unsupported(UnsupportedReason::SecondCreateReplacedBody));
        assert_eq!(left, 0);
        let (verdict, _) = probe(Behaviour::AlwaysExists).await;
        assert_eq!(verdict.unwrap(), unsupported(UnsupportedReason::FirstCreateRefused));
    }

    #[tokio::test]
    async fn transient_failures_are_errors_not_verdicts() {
        let (verdict, _) = probe(Behaviour::Transient).await;
        assert_eq!(verdict.unwrap_err().kind(), ErrorKind::Transient);
    }
}
