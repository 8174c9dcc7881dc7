//! The group's MySQL accounts, from the Secret `spec.credentials.operatorSecretName` names
//! (upstream's keys: `username`, `password`, `MYSQL_REPLICATION_USER`,
//! `MYSQL_REPLICATION_PASSWORD`).

use std::time::{Duration, Instant};

use bloodraven_crd::MysqlFailoverGroup;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::Api;

use crate::manager::{PollError, kube_error};
use crate::observe::Account;

/// How long credentials read from the Secret are used before the Secret is read again. While
/// any site does not answer (a rotated password shows as refused logins), every poll reads it.
pub(crate) const REREAD_AFTER: Duration = Duration::from_secs(30);

/// The credentials last read, for which Secret, and when.
#[derive(Debug)]
pub(crate) struct CachedCredentials {
    secret: String,
    read_at: Instant,
    credentials: Credentials,
}

impl CachedCredentials {
    /// The cached credentials when they came from `secret` less than [`REREAD_AFTER`] before
    /// `now` and `fresh_enough` (no site failed to answer since).
    fn current(&self, secret: &str, now: Instant, fresh_enough: bool) -> Option<&Credentials> {
        (fresh_enough
            && self.secret == secret
            && now.saturating_duration_since(self.read_at) < REREAD_AFTER)
            .then_some(&self.credentials)
    }
}

/// The group's credentials: from `cache` while it is current (see [`CachedCredentials`]), else
/// read from the Secret (and cached). A failed read empties the cache.
pub(crate) async fn cached(
    client: &kube::Client,
    group: &MysqlFailoverGroup,
    cache: &mut Option<CachedCredentials>,
    all_answered: bool,
) -> Result<Credentials, PollError> {
    let now = Instant::now();
    let secret = group.spec.credentials.as_ref().map(|spec| spec.operator_secret_name.as_str());
    if let (Some(secret), Some(cached)) = (secret, cache.as_ref())
        && let Some(credentials) = cached.current(secret, now, all_answered)
    {
        return Ok(credentials.clone());
    }
    *cache = None;
    let credentials = credentials(client, group).await?;
    if let Some(secret) = secret {
        *cache = Some(CachedCredentials {
            secret: secret.to_owned(),
            read_at: now,
            credentials: credentials.clone(),
        });
    }
    Ok(credentials)
}

/// The operator's and the replication account.
#[derive(Clone, Debug)]
pub(crate) struct Credentials {
    /// The operator's account.
    pub(crate) operator: Account,
    /// The account followers replicate as.
    pub(crate) replication: Account,
}

fn secret_key(secret: &Secret, key: &str) -> Option<String> {
    if let Some(value) = secret.data.as_ref().and_then(|data| data.get(key)) {
        return String::from_utf8(value.0.clone()).ok();
    }
    secret.string_data.as_ref().and_then(|data| data.get(key)).cloned()
}

async fn credentials(
    client: &kube::Client,
    group: &MysqlFailoverGroup,
) -> Result<Credentials, PollError> {
    let namespace = group.namespace().unwrap_or_default();
    let Some(spec) = group.spec.credentials.as_ref() else {
        return Err(PollError::Credentials("spec.credentials is not set".to_owned()));
    };
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let secret = secrets
        .get_opt(&spec.operator_secret_name)
        .await
        .map_err(kube_error(format!("reading Secret {}", spec.operator_secret_name)))?
        .ok_or_else(|| {
            PollError::Credentials(format!(
                "Secret {namespace}/{} not found",
                spec.operator_secret_name
            ))
        })?;
    let key = |name: &str| {
        secret_key(&secret, name).ok_or_else(|| {
            PollError::Credentials(format!(
                "Secret {namespace}/{} has no key {name}",
                spec.operator_secret_name
            ))
        })
    };
    Ok(Credentials {
        operator: Account { user: key("username")?, password: key("password")? },
        replication: Account {
            user: key("MYSQL_REPLICATION_USER")?,
            password: key("MYSQL_REPLICATION_PASSWORD")?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_credentials_are_read_again_after_a_while_a_secret_change_or_a_silent_site() {
        let account = Account { user: "u".to_owned(), password: "p".to_owned() };
        let at = Instant::now();
        let cached = CachedCredentials {
            secret: "orders-credentials".to_owned(),
            read_at: at,
            credentials: Credentials { operator: account.clone(), replication: account },
        };
        assert!(cached.current("orders-credentials", at + Duration::from_secs(29), true).is_some());
        assert!(cached.current("orders-credentials", at + REREAD_AFTER, true).is_none());
        assert!(cached.current("other-secret", at, true).is_none());
        assert!(cached.current("orders-credentials", at, false).is_none());
    }
}
