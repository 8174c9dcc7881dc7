//! Who a request is: bearer tokens (configured users and minted ServiceAccount tokens) and
//! client certificates issued by the lab's CA (CN = user, O = groups), with the groups the
//! API server adds (`system:authenticated`, `system:serviceaccounts[:<ns>]`).

use std::collections::BTreeMap;

use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair, KeyUsagePurpose};
use serde_json::{Value, json};

use crate::error::Error;
use crate::registry::GroupResource;
use crate::store::State;

/// Every authenticated user is in this group.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group of requests without credentials.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user of requests without credentials.
pub const ANONYMOUS: &str = "system:anonymous";
/// Members are allowed everything, whatever the RBAC objects say.
pub const MASTERS: &str = "system:masters";
/// Every ServiceAccount is in this group (and in `system:serviceaccounts:<namespace>`).
pub const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";

const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The user a request is served as (the API server's `user.Info`; `SelfSubjectReview`'s
/// `status.userInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub username: String,
    /// Empty unless the identity has one (a ServiceAccount's is its object's uid).
    pub uid: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The user of requests without credentials.
    pub fn anonymous() -> Self {
        Self {
            username: ANONYMOUS.to_string(),
            uid: String::new(),
            groups: vec![UNAUTHENTICATED.to_string()],
        }
    }

    /// An authenticated user in `groups` (plus `system:authenticated`).
    pub fn authenticated(username: &str, groups: &[String]) -> Self {
        let mut all: Vec<String> = Vec::with_capacity(groups.len() + 1);
        for group in groups {
            if !all.contains(group) && group != AUTHENTICATED {
                all.push(group.clone());
            }
        }
        all.push(AUTHENTICATED.to_string());
        Self { username: username.to_string(), uid: String::new(), groups: all }
    }

    /// The user a ServiceAccount token authenticates as.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        Self {
            username: service_account_username(namespace, name),
            uid: uid.to_string(),
            groups: vec![
                SERVICE_ACCOUNTS.to_string(),
                format!("{SERVICE_ACCOUNTS}:{namespace}"),
                AUTHENTICATED.to_string(),
            ],
        }
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|candidate| candidate == group)
    }

    /// As `SelfSubjectReview` reports it.
    pub(crate) fn to_json(&self) -> Value {
        let mut info = json!({ "username": self.username, "groups": self.groups });
        if !self.uid.is_empty() {
            info["uid"] = json!(self.uid);
        }
        info
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// Identity and authorization settings beyond `Settings::tokens`: the groups of token users,
/// minted ServiceAccount tokens, and whether RBAC is enforced.
#[derive(Debug, Clone, Default)]
pub(crate) struct AccessControl {
    /// User name → groups (without `system:authenticated`, which every user gets).
    pub groups: BTreeMap<String, Vec<String>>,
    /// Token → ServiceAccount (namespace, name).
    pub service_account_tokens: BTreeMap<String, (String, String)>,
    /// Requests are authorized by the stored RBAC objects (`crate::rbac`).
    pub rbac: bool,
}

/// The user a client certificate verified against the lab's CA names, set on every request
/// of its TLS connection.
#[derive(Debug, Clone)]
pub(crate) struct CertificateUser(pub UserInfo);

/// The user of a verified client certificate: CN is the user name, each O a group.
pub(crate) fn certificate_user(der: &[u8]) -> Option<UserInfo> {
    let (_, certificate) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = certificate.subject();
    let username = subject.iter_common_name().next()?.as_str().ok()?.to_string();
    if username.is_empty() {
        return None;
    }
    let groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|attribute| attribute.as_str().ok().map(str::to_string))
        .collect();
    Some(UserInfo::authenticated(&username, &groups))
}

/// Resolves a bearer token: configured users first, then minted ServiceAccount tokens (valid
/// while their ServiceAccount exists, as bound tokens are).
pub(crate) fn token_user(
    tokens: &BTreeMap<String, String>,
    access: &AccessControl,
    state: &State,
    token: &str,
) -> Option<UserInfo> {
    if let Some(username) = tokens.get(token) {
        let groups = access.groups.get(username).cloned().unwrap_or_default();
        return Some(UserInfo::authenticated(username, &groups));
    }
    let (namespace, name) = access.service_account_tokens.get(token)?;
    let uid = service_account_uid(state, namespace, name)?;
    Some(UserInfo::service_account(namespace, name, &uid))
}

/// The uid of a stored ServiceAccount, or `None` when it does not exist.
pub(crate) fn service_account_uid(state: &State, namespace: &str, name: &str) -> Option<String> {
    let key = (namespace.to_string(), name.to_string());
    state
        .objects_of(&GroupResource::new("", "serviceaccounts"))
        .find(|(stored, _)| **stored == key)
        .map(|(_, object)| crate::store::meta_str(object, "uid").unwrap_or_default().to_string())
}

/// A client certificate (and its key) the lab's CA issued, for a kubeconfig's
/// `client-certificate-data` / `client-key-data`.
#[derive(Debug, Clone)]
pub struct ClientCertificate {
    pub user: String,
    pub groups: Vec<String>,
    pub certificate_pem: String,
    pub key_pem: String,
}

/// How many groups (O attributes) a lab client certificate can carry: the certificate
/// library writes one value per attribute type, and the second O goes in under its OID.
pub const MAX_CERTIFICATE_GROUPS: usize = 2;

/// Issues a client certificate for `user` in `groups`, signed by the lab's CA.
pub(crate) fn issue_client_certificate(
    issuer: &Issuer<'static, KeyPair>,
    user: &str,
    groups: &[String],
) -> Result<ClientCertificate, Error> {
    let tls =
        |error: rcgen::Error| Error::Tls(format!("issuing a certificate for {user}: {error}"));
    if user.is_empty() {
        return Err(Error::InvalidIdentity { message: "the user name is empty".to_string() });
    }
    if groups.len() > MAX_CERTIFICATE_GROUPS {
        return Err(Error::InvalidIdentity {
            message: format!(
                "a lab client certificate carries at most {MAX_CERTIFICATE_GROUPS} groups, {} \
                    were asked for {user}; give a token user more groups with \
                    LabConfig::with_user_in_groups",
                groups.len()
            ),
        });
    }
    let key = KeyPair::generate().map_err(tls)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(tls)?;
    params.distinguished_name.push(DnType::CommonName, user);
    if let Some(first) = groups.first() {
        params.distinguished_name.push(DnType::OrganizationName, first.as_str());
    }
    if let Some(second) = groups.get(1) {
        // id-at-organizationName (2.5.4.10) again: a second O attribute.
        params.distinguished_name.push(DnType::CustomDnType(vec![2, 5, 4, 10]), second.as_str());
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let certificate = params.signed_by(&key, issuer).map_err(tls)?;
    Ok(ClientCertificate {
        user: user.to_string(),
        groups: groups.to_vec(),
        certificate_pem: certificate.pem(),
        key_pem: key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_names_are_the_api_servers() {
        assert_eq!(service_account_username("ns1", "reader"), "system:serviceaccount:ns1:reader");
    }

    #[test]
    fn groups_are_those_the_api_server_adds() {
        let account = UserInfo::service_account("ns1", "reader", "u1");
        assert_eq!(
            account.groups,
            ["system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"]
        );
        let user = UserInfo::authenticated("alice", &["team".to_string(), AUTHENTICATED.into()]);
        assert_eq!(user.groups, ["team", "system:authenticated"]);
        assert_eq!(UserInfo::anonymous().groups, ["system:unauthenticated"]);
    }

    #[test]
    fn issued_certificates_name_the_user_and_groups() {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let issuer = Issuer::new(params, key);
        let groups = vec!["ops".to_string(), "console".to_string()];
        let issued = issue_client_certificate(&issuer, "bob", &groups).unwrap();
        let (_, pem) = x509_parser::pem::parse_x509_pem(issued.certificate_pem.as_bytes()).unwrap();
        let user = certificate_user(&pem.contents).unwrap();
        assert_eq!(user.username, "bob");
        assert_eq!(user.groups, ["ops", "console", "system:authenticated"]);
        let three = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        assert!(matches!(
            issue_client_certificate(&issuer, "bob", &three),
            Err(Error::InvalidIdentity { .. })
        ));
    }
}
