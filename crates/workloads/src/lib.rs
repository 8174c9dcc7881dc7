//! `bloodraven-workloads`: the workload contract. What the operator creates per site and per
//! group — names, labels, container names, ports, the MySQL option file — and the builders that
//! make the Kubernetes objects from a `MysqlFailoverGroup`. The operator applies them, the lab
//! kubelet runs them, tests assert on them: a name or shape lives here once.
//!
//! Pure: no IO, no clock. The README has the contract table.

mod build;
mod error;
pub mod labels;
pub mod mycnf;
pub mod names;
pub mod pitr;
pub mod resolve;
pub mod sidecar_env;

pub use build::{
    DEFAULT_MYSQL_IMAGE, DEFAULT_SIDECAR_IMAGE, DEFAULT_STORAGE_SIZE, FS_GROUP_CHANGE_POLICY,
    PASSPHRASE_FILE_MODE, POD_FS_GROUP, ROOT_PASSWORD_KEY, SiteObjects, SiteServices,
    TERMINATION_GRACE_SECONDS, ZONE_NODE_LABEL, check_group, config_hash, peer_addresses,
    primary_selector, primary_service, replicas_service, site_configmap, site_deployment,
    site_objects, site_pvc, site_services,
};
pub use error::WorkloadError;
pub use labels::{containers, ports};
pub use names::{MY_CNF_KEY, SiteNames, primary_service_name, replicas_service_name};
pub use resolve::{ClusterDns, Resolver, ServiceAddress, address_key};
