//! The library API for identities and RBAC: users with groups, an admin, ServiceAccount
//! tokens, client certificates, kubeconfigs for each, and switching RBAC on.

use std::path::Path;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::identity::{self, ClientCertificate, MASTERS};
use crate::server::lock;
use crate::{Lab, LabConfig};

impl LabConfig {
    /// Authorizes every request by the stored Roles, ClusterRoles and bindings (RBAC); the
    /// bootstrap policy (discovery, self reviews, `cluster-admin` for `system:masters`) is
    /// created at start.
    pub fn with_rbac(mut self) -> Self {
        self.rbac = true;
        self
    }

    /// Adds a bearer token for a user in `groups` (every user is also in
    /// `system:authenticated`).
    pub fn with_user_in_groups(mut self, user: &str, token: &str, groups: &[&str]) -> Self {
        self.tokens.insert(token.to_string(), user.to_string());
        self.groups
            .insert(user.to_string(), groups.iter().map(|group| group.to_string()).collect());
        self
    }

    /// Adds a bearer token for an administrator: a user in `system:masters`, allowed
    /// everything whatever the RBAC objects say.
    pub fn with_admin(self, user: &str, token: &str) -> Self {
        self.with_user_in_groups(user, token, &[MASTERS])
    }
}

impl Lab {
    /// Turns RBAC on or off while serving; turning it on creates the bootstrap policy objects
    /// that are missing.
    pub fn set_rbac(&self, enabled: bool) -> Result<()> {
        if enabled {
            self.ensure_bootstrap_policy()?;
        }
        lock(&self.shared.access).rbac = enabled;
        Ok(())
    }

    pub(crate) fn ensure_bootstrap_policy(&self) -> Result<()> {
        for object in crate::rbac::bootstrap_policy() {
            let api_version = object["apiVersion"].as_str().unwrap_or_default().to_string();
            let kind = object["kind"].as_str().unwrap_or_default().to_string();
            let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            if self.get(&api_version, &kind, None, name).is_none() {
                self.apply(object)?;
            }
        }
        Ok(())
    }

    /// Adds (or replaces) a bearer token for a user in `groups` while serving.
    pub fn add_user(&self, user: &str, token: &str, groups: &[&str]) {
        lock(&self.shared.settings).tokens.insert(token.to_string(), user.to_string());
        lock(&self.shared.access)
            .groups
            .insert(user.to_string(), groups.iter().map(|group| group.to_string()).collect());
    }

    /// Mints a bearer token for the ServiceAccount `namespace/name` (which must exist): it
    /// authenticates as `system:serviceaccount:<namespace>:<name>` in `system:serviceaccounts`
    /// and `system:serviceaccounts:<namespace>`, with the ServiceAccount's uid, for as long as
    /// the ServiceAccount exists (deleting it makes the token answer 401, as a bound token).
    pub fn service_account_token(&self, namespace: &str, name: &str) -> Result<String> {
        if identity::service_account_uid(&lock(&self.shared.state), namespace, name).is_none() {
            return Err(Error::UnknownServiceAccount {
                namespace: namespace.to_string(),
                name: name.to_string(),
            });
        }
        let token = format!("lab-sa-{}", uuid::Uuid::new_v4().simple());
        lock(&self.shared.access)
            .service_account_tokens
            .insert(token.clone(), (namespace.to_string(), name.to_string()));
        Ok(token)
    }

    /// Issues a client certificate from the lab's CA (needs `LabConfig::tls`): CN = `user`,
    /// O = each of `groups` (at most `MAX_CERTIFICATE_GROUPS`).
    pub fn client_certificate(&self, user: &str, groups: &[&str]) -> Result<ClientCertificate> {
        let issuer = self
            .issuer
            .as_ref()
            .ok_or(Error::TlsRequired { what: "client certificates are served only over TLS" })?;
        let groups: Vec<String> = groups.iter().map(|group| group.to_string()).collect();
        identity::issue_client_certificate(issuer, user, &groups)
    }

    /// A kubeconfig that authenticates with a fresh client certificate for `user` in `groups`.
    pub fn kubeconfig_with_certificate(&self, user: &str, groups: &[&str]) -> Result<String> {
        let certificate = self.client_certificate(user, groups)?;
        let encode = |pem: &str| data_encoding::BASE64.encode(pem.as_bytes());
        Ok(self.kubeconfig_for(
            user,
            json!({
                "client-certificate-data": encode(&certificate.certificate_pem),
                "client-key-data": encode(&certificate.key_pem),
            }),
        ))
    }

    /// Writes `kubeconfig_with_certificate(user, groups)` to a file.
    pub fn write_kubeconfig_with_certificate(
        &self,
        path: &Path,
        user: &str,
        groups: &[&str],
    ) -> Result<()> {
        write(path, &self.kubeconfig_with_certificate(user, groups)?)
    }

    /// A kubeconfig that sends `token` (a configured user's or a minted ServiceAccount
    /// token); `label` names the kubeconfig's user entry.
    pub fn kubeconfig_with_token(&self, label: &str, token: &str) -> String {
        self.kubeconfig_for(label, json!({ "token": token }))
    }

    /// Writes `kubeconfig_with_token(label, token)` to a file.
    pub fn write_kubeconfig_with_token(&self, path: &Path, label: &str, token: &str) -> Result<()> {
        write(path, &self.kubeconfig_with_token(label, token))
    }

    /// A kubeconfig for this server with one user entry.
    pub(crate) fn kubeconfig_for(&self, user_name: &str, user: Value) -> String {
        let mut cluster = json!({ "server": self.url() });
        if let Some(ca_pem) = &self.ca_pem {
            cluster["certificate-authority-data"] =
                json!(data_encoding::BASE64.encode(ca_pem.as_bytes()));
        }
        let config = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{ "name": "bloodraven-lab", "cluster": cluster }],
            "contexts": [{ "name": "bloodraven-lab", "context": { "cluster": "bloodraven-lab", "user": user_name, "namespace": "default" } }],
            "current-context": "bloodraven-lab",
            "preferences": {},
            "users": [{ "name": user_name, "user": user }],
        });
        serde_norway::to_string(&config).unwrap_or_default()
    }
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text)
        .map_err(|source| Error::KubeconfigWrite { path: path.display().to_string(), source })
}
