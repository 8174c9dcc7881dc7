//! The archive key from a passphrase file: the one place a reader of an encrypted archive
//! (pitr-download, the console's archive panel and `bloodraven pitr plan`) turns the file that
//! holds the passphrase (a mounted Secret key, or a file the operator of the console points at)
//! into the [`ReaderKey`] the archive reader, the envelope and the content ids use.
//!
//! The bytes are taken exactly, trailing newline included, as the archiver reads its key file
//! (`kubectl create secret --from-file` keeps the newline; a Secret written with `--from-literal`
//! has none, and the two are different passphrases).

use std::path::{Path, PathBuf};

use bloodraven_archive::reader::ReaderKey;

/// A passphrase file that cannot give a key. The messages name the file, never its bytes.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// The file could not be read.
    #[error(
        "cannot read the archive passphrase file {path}: {source}; point at the file holding the passphrase (the key of the profile's passphraseSecretKeyRef)"
    )]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is empty (no archive is sealed under an empty passphrase).
    #[error(
        "the archive passphrase file {path} is empty; point at the file holding the passphrase (the key of the profile's passphraseSecretKeyRef)"
    )]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// The key of a passphrase archive whose passphrase is the content of `path`.
///
/// # Errors
/// [`KeyFileError`]: the file is unreadable or empty.
pub fn read_passphrase_file(path: &Path) -> Result<ReaderKey, KeyFileError> {
    let passphrase = std::fs::read(path)
        .map_err(|source| KeyFileError::Unreadable { path: path.to_owned(), source })?;
    if passphrase.is_empty() {
        return Err(KeyFileError::Empty { path: path.to_owned() });
    }
    Ok(ReaderKey::passphrase(passphrase))
}

/// The reader's key: a plaintext archive without a file, else [`read_passphrase_file`].
///
/// # Errors
/// As [`read_passphrase_file`].
pub fn reader_key(passphrase_file: Option<&Path>) -> Result<ReaderKey, KeyFileError> {
    passphrase_file.map_or(Ok(ReaderKey::None), read_passphrase_file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_the_passphrase_exactly_and_a_bad_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("passphrase");
        std::fs::write(&file, b"pass phrase\n").unwrap();
        assert_eq!(
            reader_key(Some(&file)).unwrap(),
            ReaderKey::passphrase(b"pass phrase\n".to_vec())
        );
        assert_eq!(reader_key(None).unwrap(), ReaderKey::None);

        let missing = dir.path().join("missing");
        let error = read_passphrase_file(&missing).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!(
                "cannot read the archive passphrase file {}",
                missing.display()
            )),
            "{error}"
        );
        std::fs::write(&file, b"").unwrap();
        let error = read_passphrase_file(&file).unwrap_err().to_string();
        assert!(error.contains("is empty"), "{error}");
    }
}
