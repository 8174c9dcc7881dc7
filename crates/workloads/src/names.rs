//! Resource names per group and site.
//!
//! Every name is a DNS-1035 label of at most 63 characters (a Service name is one). A name that
//! would be longer keeps its first 54 characters, then `-` and 8 hex characters of the SHA-256
//! of the full name: deterministic, so the operator, the lab kubelet and a human computing it
//! by hand all agree (the spec's rule for long CronJob names, applied to the label limit).

use sha2::{Digest, Sha256};

/// The longest name a Service (a DNS label) may have.
pub const MAX_NAME_LEN: usize = 63;

/// The ConfigMap key holding the site's option file.
pub const MY_CNF_KEY: &str = "my.cnf";

/// Where the MySQL container mounts the site's ConfigMap (the image reads `*.cnf` there).
pub const MY_CNF_MOUNT_PATH: &str = "/etc/mysql/conf.d";

/// Where the MySQL container mounts the site's data claim.
pub const DATA_MOUNT_PATH: &str = "/var/lib/mysql";

/// The pod volume holding the data claim.
pub const DATA_VOLUME: &str = "data";

/// The pod volume holding the ConfigMap.
pub const CONFIG_VOLUME: &str = "mysql-config";

/// `name` if it fits in 63 characters, else its first 54 characters (no trailing `-`), `-` and
/// 8 hex characters of its SHA-256.
pub fn bounded(name: String) -> String {
    if name.len() <= MAX_NAME_LEN {
        return name;
    }
    let digest = Sha256::digest(name.as_bytes());
    let hash = data_encoding::HEXLOWER.encode(&digest[..4]);
    // Names are built from DNS labels (ASCII), so a byte index is a char index.
    let keep = name.get(..54).unwrap_or(&name).trim_end_matches('-');
    format!("{keep}-{hash}")
}

/// The names of one site's objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteNames {
    /// The Deployment `mysql-<group>-<site>`; its pods are `<deployment>-<hash>`.
    pub deployment: String,
    /// The data claim `mysql-<group>-<site>-data`.
    pub pvc: String,
    /// The client MySQL Service `mysql-<group>-<site>` (gated on the healthy label).
    pub client_service: String,
    /// The internal administrative Service `mysql-<group>-<site>-internal` (site alone).
    pub internal_service: String,
    /// The MySQL ConfigMap `mysql-<group>-<site>-config`, key [`MY_CNF_KEY`].
    pub configmap: String,
}

impl SiteNames {
    /// The names for `site` of `group` (metadata names).
    pub fn new(group: &str, site: &str) -> Self {
        let base = format!("mysql-{group}-{site}");
        Self {
            deployment: bounded(base.clone()),
            pvc: bounded(format!("{base}-data")),
            client_service: bounded(base.clone()),
            internal_service: bounded(format!("{base}-internal")),
            configmap: bounded(format!("{base}-config")),
        }
    }
}

/// The group's `-primary` Service `mysql-<group>-primary`: application writes go here.
pub fn primary_service_name(group: &str) -> String {
    bounded(format!("mysql-{group}-primary"))
}

/// The group's `-replicas` Service `mysql-<group>-replicas`.
pub fn replicas_service_name(group: &str) -> String {
    bounded(format!("mysql-{group}-replicas"))
}

/// The in-cluster DNS name of a Service (what production resolves).
pub fn service_dns_name(service: &str, namespace: &str) -> String {
    format!("{service}.{namespace}.svc.cluster.local")
}

/// The namespace the operator runs in (`deploy/operator/`): its `bloodraven` Service, which
/// sidecars dial, lives there, not in the group's namespace.
pub const OPERATOR_NAMESPACE: &str = "bloodraven-system";

/// The operator's address for sidecars: the `bloodraven` Service in `namespace` (the
/// operator's, [`OPERATOR_NAMESPACE`]; `spec.sidecar` has no override today).
pub fn operator_address(namespace: &str) -> String {
    format!("{}:{}", service_dns_name("bloodraven", namespace), crate::ports::OPERATOR_HTTP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_upstream_pattern() {
        let names = SiteNames::new("orders", "iad");
        assert_eq!(names.deployment, "mysql-orders-iad");
        assert_eq!(names.pvc, "mysql-orders-iad-data");
        assert_eq!(names.client_service, "mysql-orders-iad");
        assert_eq!(names.internal_service, "mysql-orders-iad-internal");
        assert_eq!(names.configmap, "mysql-orders-iad-config");
        assert_eq!(primary_service_name("orders"), "mysql-orders-primary");
        assert_eq!(replicas_service_name("orders"), "mysql-orders-replicas");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash_and_stay_distinct() {
        let group = "a".repeat(60);
        let one = SiteNames::new(&group, "iad");
        let two = SiteNames::new(&group, "pdx");
        for name in [&one.deployment, &one.pvc, &one.internal_service, &two.deployment] {
            assert!(name.len() <= MAX_NAME_LEN, "{name} is {} long", name.len());
        }
        assert_ne!(one.deployment, two.deployment);
        assert_ne!(one.deployment, one.internal_service);
        assert_eq!(one, SiteNames::new(&group, "iad"));
        assert_eq!(&one.deployment[..54], &format!("mysql-{group}")[..54]);
    }

    #[test]
    fn a_cut_never_ends_the_kept_part_with_a_dash() {
        // Character 54 of this name is a dash.
        let name = format!("{}-{}", "b".repeat(53), "c".repeat(20));
        let cut = bounded(name);
        assert!(!cut.contains("--"), "{cut}");
        assert_eq!(cut.len(), 53 + 1 + 8);
    }
}
