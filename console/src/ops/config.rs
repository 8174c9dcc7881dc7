//! The console's XDG config (`$XDG_CONFIG_HOME/bloodraven/config.yaml`, else
//! `~/.config/bloodraven/config.yaml`): contexts pinned read-only by glob.
//!
//! ```yaml
//! readOnlyContexts: ["prod-*", "*-dr"]
//! ```
//!
//! A pinned context never writes: `--write` is refused and the TUI's write switch stays off.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The config file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// Glob patterns (`*` any run, `?` one character) of contexts pinned read-only.
    #[serde(default)]
    pub read_only_contexts: Vec<String>,
}

/// Why the config cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Parse { path: PathBuf, source: serde_norway::Error },
}

impl Config {
    /// The default path, when a home is known.
    pub fn default_path() -> Option<PathBuf> {
        let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|dir| !dir.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => PathBuf::from(std::env::var_os("HOME")?).join(".config"),
        };
        Some(base.join("bloodraven").join("config.yaml"))
    }

    /// Reads `path`; a missing file is the empty config.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) if text.trim().is_empty() => Ok(Config::default()),
            Ok(text) => serde_norway::from_str(&text)
                .map_err(|source| ConfigError::Parse { path: path.to_owned(), source }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(source) => Err(ConfigError::Read { path: path.to_owned(), source }),
        }
    }

    /// The pattern that pins `context` read-only, if any.
    pub fn pinned_by(&self, context: &str) -> Option<&str> {
        self.read_only_contexts
            .iter()
            .find(|pattern| glob_match(pattern.as_bytes(), context.as_bytes()))
            .map(String::as_str)
    }
}

/// `*` matches any run (also empty), `?` one byte, anything else itself.
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    p = star_p + 1;
                    t = star_t + 1;
                    star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_pin_contexts() {
        let config: Config =
            serde_norway::from_str("readOnlyContexts: [\"prod-*\", \"*-dr\", \"lab?\"]").unwrap();
        for (context, pinned) in [
            ("prod-eu", Some("prod-*")),
            ("prod-", Some("prod-*")),
            ("eu-dr", Some("*-dr")),
            ("lab1", Some("lab?")),
            ("lab", None),
            ("staging", None),
            ("preprod-eu", None),
        ] {
            assert_eq!(config.pinned_by(context), pinned, "{context}");
        }
    }

    #[test]
    fn a_missing_file_is_empty_and_a_bad_one_names_itself() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Config::load(&dir.path().join("none.yaml")).unwrap(), Config::default());
        let bad = dir.path().join("config.yaml");
        std::fs::write(&bad, "readOnlyContext: [x]\n").unwrap();
        let error = Config::load(&bad).unwrap_err().to_string();
        assert!(error.contains("config.yaml") && error.contains("readOnlyContext"), "{error}");
    }
}
