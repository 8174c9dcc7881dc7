//! The group's MySQL accounts, from the Secret `spec.credentials.operatorSecretName` names
//! (upstream's keys: `username`, `password`, `MYSQL_REPLICATION_USER`,
//! `MYSQL_REPLICATION_PASSWORD`).

use bloodraven_crd::MysqlFailoverGroup;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::Api;

use crate::manager::{PollError, kube_error};
use crate::observe::Account;

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

pub(crate) async fn credentials(
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
