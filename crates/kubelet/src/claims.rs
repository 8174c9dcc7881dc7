//! PersistentVolumeClaim → data folder.
//!
//! A claim's folder is `<root>/<12 hex of SHA-256("<namespace>/<name>/<uid>")>`: the same claim
//! (same uid) always maps to the same folder, so data survives process restarts and Deployment
//! re-creation while the claim exists; a claim deleted and created again under the same name
//! has a new uid and starts from a fresh copy of the template. Short on purpose: the mysqld
//! socket lives in the folder and a socket path has at most 107 bytes.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The data folder of claim `name` (uid `uid`) in `namespace`.
pub fn claim_folder(root: &Path, namespace: &str, name: &str, uid: &str) -> PathBuf {
    let digest = Sha256::digest(format!("{namespace}/{name}/{uid}").as_bytes());
    root.join(data_encoding::HEXLOWER.encode(&digest[..6]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_is_stable_per_claim_and_new_per_uid() {
        let root = Path::new("/r");
        let one = claim_folder(root, "orders", "mysql-orders-iad-data", "u1");
        assert_eq!(one, claim_folder(root, "orders", "mysql-orders-iad-data", "u1"));
        assert_ne!(one, claim_folder(root, "orders", "mysql-orders-iad-data", "u2"));
        assert_ne!(one, claim_folder(root, "orders", "mysql-orders-pdx-data", "u1"));
        assert_eq!(one.file_name().unwrap().len(), 12);
    }
}
