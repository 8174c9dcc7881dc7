//! Labels, container names and ports.

use std::collections::BTreeMap;

use bloodraven_crd::group::SiteRole;

/// `app.kubernetes.io/name`: always [`APP_NAME`].
pub const NAME: &str = "app.kubernetes.io/name";
/// The value of [`NAME`].
pub const APP_NAME: &str = "mysql";
/// `app.kubernetes.io/instance`: the group's name.
pub const INSTANCE: &str = "app.kubernetes.io/instance";
/// `app.kubernetes.io/managed-by`: always [`MANAGER`].
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// The value of [`MANAGED_BY`].
pub const MANAGER: &str = "bloodraven";
/// The group's name, on every object of the group (`kubectl get all -l …`).
pub const GROUP: &str = "bloodraven.shipstream.io/failover-group";
/// The site's name, on every object of a site.
pub const SITE: &str = "bloodraven.shipstream.io/site";
/// The site's declared role (`PrimaryCandidate`, `DisasterRecovery`, `ReadOnly`).
pub const SITE_ROLE: &str = "bloodraven.shipstream.io/site-role";
/// The serving role of a pod, written by the operator only: [`ROLE_PRIMARY`] on the active
/// site's pod (the `-primary` Service selects it; stripping it sheds the pod), [`ROLE_REPLICA`]
/// on followers. Never in a pod template: a new pod starts without it.
pub const ROLE: &str = "bloodraven.shipstream.io/role";
/// The value of [`ROLE`] on the active site's pod.
pub const ROLE_PRIMARY: &str = "primary";
/// The value of [`ROLE`] on a follower's pod.
pub const ROLE_REPLICA: &str = "replica";
/// `true` on a pod the operator finds fit to serve clients (readers: against the stricter
/// `readOnlyMaxLagSeconds`). Client, `-primary` and `-replicas` Services select on it. Written
/// by the operator only.
pub const HEALTHY: &str = "bloodraven.shipstream.io/healthy";
/// The value of [`HEALTHY`] on a fit pod.
pub const HEALTHY_TRUE: &str = "true";

/// The pod template annotation holding the hash of the site's option file, so a changed
/// ConfigMap rolls the pod.
pub const CONFIG_HASH: &str = "bloodraven.shipstream.io/config-hash";

/// The pod template annotation holding the resolved PITR render (destination, archive ID,
/// storage, encryption, poll interval) when PITR is enabled, so a changed render rolls the pod.
pub const PITR_RENDER: &str = "bloodraven.shipstream.io/pitr-render";

/// Container names.
pub mod containers {
    /// The MySQL server.
    pub const MYSQL: &str = "mysql";
    /// The Bloodraven sidecar.
    pub const SIDECAR: &str = "sidecar";
}

/// Ports.
pub mod ports {
    /// MySQL's classic protocol, in the container and on every Service.
    pub const MYSQL: u16 = 3306;
    /// The port name of [`MYSQL`].
    pub const MYSQL_NAME: &str = "mysql";
    /// The sidecar's HTTP server (`/health`, `/peer/*`, `/archiver/status`; upstream :8080).
    pub const SIDECAR_HTTP: u16 = 8080;
    /// The port name of [`SIDECAR_HTTP`].
    pub const SIDECAR_HTTP_NAME: &str = "sidecar-http";
    /// The operator's HTTP server for sidecars and tools (upstream :8082, research §9).
    pub const OPERATOR_HTTP: u16 = 8082;
}

/// The label value of a site role.
pub fn site_role_value(role: &SiteRole) -> &str {
    role.as_str()
}

/// What every object of the group carries.
pub fn group_labels(group: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME.to_owned(), APP_NAME.to_owned()),
        (INSTANCE.to_owned(), group.to_owned()),
        (MANAGED_BY.to_owned(), MANAGER.to_owned()),
        (GROUP.to_owned(), group.to_owned()),
    ])
}

/// What every object of a site carries (its pods too).
pub fn site_labels(group: &str, site: &str, role: &SiteRole) -> BTreeMap<String, String> {
    let mut labels = group_labels(group);
    labels.insert(SITE.to_owned(), site.to_owned());
    labels.insert(SITE_ROLE.to_owned(), site_role_value(role).to_owned());
    labels
}

/// The Deployment's pod selector (immutable, so the fewest labels that name the site).
pub fn site_selector(group: &str, site: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(GROUP.to_owned(), group.to_owned()), (SITE.to_owned(), site.to_owned())])
}

/// `-l` text that finds every object of a group: `bloodraven.shipstream.io/failover-group=<g>`.
pub fn group_label_selector(group: &str) -> String {
    format!("{GROUP}={group}")
}

/// Whether `selector` (a Service's equality selector) matches `labels`; an empty selector
/// matches nothing (a Service without a selector has no automatic endpoints).
pub fn selector_matches(
    selector: &BTreeMap<String, String>,
    labels: &BTreeMap<String, String>,
) -> bool {
    !selector.is_empty() && selector.iter().all(|(key, value)| labels.get(key) == Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_selector_matches_nothing_and_a_missing_label_fails() {
        let labels = site_labels("orders", "iad", &SiteRole::PrimaryCandidate);
        assert!(!selector_matches(&BTreeMap::new(), &labels));
        assert!(selector_matches(&site_selector("orders", "iad"), &labels));
        assert!(!selector_matches(&site_selector("orders", "pdx"), &labels));
        let mut primary = site_selector("orders", "iad");
        primary.insert(ROLE.to_owned(), ROLE_PRIMARY.to_owned());
        assert!(!selector_matches(&primary, &labels));
    }
}
