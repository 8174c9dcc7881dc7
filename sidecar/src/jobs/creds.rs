//! Credentials for Job steps. MySQL usernames and passwords are read from mounted files
//! (`BLOODRAVEN_MYSQL_CREDS_DIR/{MYSQL_USER,MYSQL_PASSWORD}`) as UTF-8, exactly (no trimming: a
//! trailing newline is part of the password); a readable file wins, also an empty one; only a
//! missing or unreadable file falls back to the environment. An empty username fails. AWS keys
//! are read the same way from `BLOODRAVEN_AWS_CREDS_DIR`, with whitespace trimmed.

use std::path::Path;

use anyhow::{Context as _, bail};

/// A MySQL account.
#[derive(Clone, PartialEq, Eq)]
pub struct MysqlCreds {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for MysqlCreds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MysqlCreds").field("user", &self.user).finish_non_exhaustive()
    }
}

fn read_file(dir: Option<&Path>, name: &str) -> Option<String> {
    let path = dir?.join(name);
    let bytes = std::fs::read(&path).ok()?;
    String::from_utf8(bytes).ok()
}

/// Reads the account from `dir` (files `MYSQL_USER`, `MYSQL_PASSWORD`), else from `env`.
pub fn mysql(
    dir: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<MysqlCreds> {
    let user = read_file(dir, "MYSQL_USER").or_else(|| env("MYSQL_USER")).unwrap_or_default();
    let password =
        read_file(dir, "MYSQL_PASSWORD").or_else(|| env("MYSQL_PASSWORD")).unwrap_or_default();
    if user.is_empty() {
        bail!(
            "no MySQL username: neither {}/MYSQL_USER nor MYSQL_USER is set; mount the credentials Secret",
            dir.map_or_else(
                || "BLOODRAVEN_MYSQL_CREDS_DIR".to_owned(),
                |d| d.display().to_string()
            )
        );
    }
    Ok(MysqlCreds { user, password })
}

/// AWS keys.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCreds {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for AwsCreds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCreds")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// Reads AWS keys from `dir`, else from `env`; `None` when neither names an access key (the
/// SDK's default chain then applies).
pub fn aws(
    dir: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<Option<AwsCreds>> {
    let get = |name: &str| {
        read_file(dir, name)
            .or_else(|| env(name))
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    };
    let Some(access_key_id) = get("AWS_ACCESS_KEY_ID") else {
        return Ok(None);
    };
    let secret_access_key = get("AWS_SECRET_ACCESS_KEY")
        .context("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not; the S3 credentials Secret needs both")?;
    Ok(Some(AwsCreds { access_key_id, secret_access_key, session_token: get("AWS_SESSION_TOKEN") }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_win_exactly_and_env_is_the_fallback() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("MYSQL_USER"), "backup").unwrap();
        std::fs::write(dir.path().join("MYSQL_PASSWORD"), "pw \n").unwrap();
        let env = |name: &str| Some(format!("env-{name}"));
        let creds = mysql(Some(dir.path()), env).unwrap();
        assert_eq!(creds, MysqlCreds { user: "backup".into(), password: "pw \n".into() });
        std::fs::write(dir.path().join("MYSQL_PASSWORD"), "").unwrap();
        assert_eq!(mysql(Some(dir.path()), env).unwrap().password, "");
        std::fs::remove_file(dir.path().join("MYSQL_PASSWORD")).unwrap();
        assert_eq!(mysql(Some(dir.path()), env).unwrap().password, "env-MYSQL_PASSWORD");
        assert!(mysql(None, |_| None).is_err());
    }

    #[test]
    fn aws_keys_are_trimmed_and_need_both_halves() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AWS_ACCESS_KEY_ID"), "AK\n").unwrap();
        assert!(aws(Some(dir.path()), |_| None).is_err());
        std::fs::write(dir.path().join("AWS_SECRET_ACCESS_KEY"), " SK ").unwrap();
        let creds = aws(Some(dir.path()), |_| None).unwrap().unwrap();
        assert_eq!((creds.access_key_id.as_str(), creds.secret_access_key.as_str()), ("AK", "SK"));
        assert_eq!(aws(None, |_| None).unwrap(), None);
    }
}
