//! A group of real sites in a star, with a fault-proxy link on every connection.
//!
//! Links (named so drills and logs can refer to them):
//! - `repl:<follower>-><source>` for every ordered pair (followers replicate through it; one
//!   per pair exists from the start, so a promotion can repoint without new links);
//! - `app:<site>`, `operator:<site>`, `sidecar:<site>` for the clients of each site;
//! - `app:primary`, whose upstream follows whichever site is primary (the `-primary` Service).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::future::try_join_all;

use crate::accounts;
use crate::error::{Result, SitesError};
use crate::mysqld::{Instance, InstanceSpec, MysqlDist};
use crate::proxy::{Link, ProxyHub};
use crate::template::{Template, ensure_template_async};

/// How a group is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSpec {
    /// Site names, in declared order.
    pub sites: Vec<String>,
    /// The site that starts as primary.
    pub primary: String,
    /// `server-id` of the first site; the others count up.
    pub first_server_id: u32,
    /// Extra `[mysqld]` options for every site.
    pub extra_options: Vec<(String, String)>,
    /// Bound on each site's start and on replication coming up.
    pub ready_timeout: Duration,
}

impl GroupSpec {
    /// Sites `names`, the first one primary.
    pub fn new(names: &[&str]) -> Self {
        Self {
            sites: names.iter().map(|n| (*n).to_owned()).collect(),
            primary: names.first().map(|n| (*n).to_owned()).unwrap_or_default(),
            first_server_id: 101,
            extra_options: Vec::new(),
            ready_timeout: Duration::from_secs(120),
        }
    }
}

/// One site of a group: its server and the links its clients use.
#[derive(Debug)]
pub struct Site {
    /// The site name.
    pub name: String,
    /// The mysqld.
    pub instance: Instance,
    /// application → site.
    pub app: Link,
    /// operator → site.
    pub operator: Link,
    /// sidecar → site.
    pub sidecar: Link,
}

/// N sites in a star. Dropping it kills every mysqld, removes their folders and stops the links.
#[derive(Debug)]
pub struct Group {
    // Field order matters for drop: sites (mysqld) first, then the links.
    sites: Vec<Site>,
    replication: BTreeMap<(String, String), Link>,
    primary_link: Link,
    primary: String,
    ready_timeout: Duration,
    hub: ProxyHub,
}

/// The name of the replication link `follower -> source`.
pub fn replication_link_name(follower: &str, source: &str) -> String {
    format!("repl:{follower}->{source}")
}

impl Group {
    /// Starts every site from the template concurrently, the primary writable and the others
    /// `super_read_only` replicating from it through their links; waits until every receiver
    /// runs.
    pub async fn start(spec: GroupSpec) -> Result<Self> {
        let dist = MysqlDist::from_env()?;
        let template = ensure_template_async(&dist).await?;
        Self::start_with(&dist, &template, spec).await
    }

    /// [`Group::start`] with a given distribution and template.
    pub async fn start_with(
        dist: &MysqlDist,
        template: &Template,
        spec: GroupSpec,
    ) -> Result<Self> {
        if spec.sites.len() < 2 || !spec.sites.contains(&spec.primary) {
            return Err(SitesError::Invalid {
                what: "group spec",
                detail: format!(
                    "need at least two sites including the primary {:?}: {:?}",
                    spec.primary, spec.sites
                ),
            });
        }
        let hub = ProxyHub::current()
            .map_err(|e| SitesError::Invalid { what: "proxy hub", detail: e.to_string() })?;
        let mut instances =
            try_join_all(spec.sites.iter().zip(spec.first_server_id..).map(|(name, id)| {
                let mut s = InstanceSpec::new(name.clone(), id);
                s.extra_options = spec.extra_options.clone();
                Instance::create(dist, template, s)
            }))
            .await?;
        try_join_all(instances.iter_mut().map(|i| i.start_and_wait(spec.ready_timeout))).await?;

        let link = |name: String, addr| {
            hub.link(name.clone(), addr).map_err(|e| SitesError::Invalid {
                what: "proxy link",
                detail: format!("{name}: {e}"),
            })
        };
        let mut replication = BTreeMap::new();
        for f in &instances {
            for s in &instances {
                if f.name() != s.name() {
                    let l = link(replication_link_name(f.name(), s.name()), s.addr())?;
                    replication.insert((f.name().to_owned(), s.name().to_owned()), l);
                }
            }
        }
        let primary_addr =
            instances.iter().find(|i| i.name() == spec.primary).map(Instance::addr).ok_or_else(
                || SitesError::Invalid { what: "group spec", detail: "primary not found".into() },
            )?;
        let primary_link = link("app:primary".into(), primary_addr)?;
        let mut sites = Vec::new();
        for instance in instances {
            let name = instance.name().to_owned();
            sites.push(Site {
                app: link(format!("app:{name}"), instance.addr())?,
                operator: link(format!("operator:{name}"), instance.addr())?,
                sidecar: link(format!("sidecar:{name}"), instance.addr())?,
                name,
                instance,
            });
        }
        let group = Self {
            sites,
            replication,
            primary_link,
            primary: spec.primary.clone(),
            ready_timeout: spec.ready_timeout,
            hub,
        };
        try_join_all(group.sites.iter().filter(|s| s.name != group.primary).map(|s| async {
            s.instance.set_super_read_only(true).await?;
            let link = group.replication_link(&s.name, &group.primary)?;
            s.instance.replicate_from(link.addr(), &accounts::REPLICATION).await
        }))
        .await?;
        group.wait_receivers_running(group.ready_timeout).await?;
        Ok(group)
    }

    /// The sites, in declared order.
    pub fn sites(&self) -> &[Site] {
        &self.sites
    }

    /// A site by name.
    pub fn site(&self, name: &str) -> Result<&Site> {
        self.sites.iter().find(|s| s.name == name).ok_or_else(|| SitesError::Invalid {
            what: "site name",
            detail: format!(
                "{name:?} is not one of {:?}",
                self.sites.iter().map(|s| &s.name).collect::<Vec<_>>()
            ),
        })
    }

    /// A site by name, mutably (to stop, kill or restart its mysqld).
    pub fn site_mut(&mut self, name: &str) -> Result<&mut Site> {
        let names: Vec<String> = self.sites.iter().map(|s| s.name.clone()).collect();
        self.sites.iter_mut().find(|s| s.name == name).ok_or_else(|| SitesError::Invalid {
            what: "site name",
            detail: format!("{name:?} is not one of {names:?}"),
        })
    }

    /// The current primary's name.
    pub fn primary(&self) -> &str {
        &self.primary
    }

    /// The `app:primary` link (the `-primary` Service).
    pub fn primary_link(&self) -> &Link {
        &self.primary_link
    }

    /// The replication link `follower -> source`.
    pub fn replication_link(&self, follower: &str, source: &str) -> Result<&Link> {
        self.replication.get(&(follower.to_owned(), source.to_owned())).ok_or_else(|| {
            SitesError::Invalid {
                what: "replication link",
                detail: replication_link_name(follower, source),
            }
        })
    }

    /// The proxy hub (every link).
    pub fn hub(&self) -> &ProxyHub {
        &self.hub
    }

    /// Waits until every follower's receiver and applier run (`Yes`/`Yes`).
    pub async fn wait_receivers_running(&self, timeout: Duration) -> Result<()> {
        let started = Instant::now();
        loop {
            let mut waiting = Vec::new();
            for s in self.sites.iter().filter(|s| s.name != self.primary) {
                match s.instance.replica_status().await? {
                    Some(st) if st.io_running == "Yes" && st.sql_running == "Yes" => {}
                    Some(st) => waiting.push(format!(
                        "{}: io={} sql={} io_error={:?} sql_error={:?}",
                        s.name, st.io_running, st.sql_running, st.last_io_error, st.last_sql_error
                    )),
                    None => waiting.push(format!("{}: no replication configured", s.name)),
                }
            }
            if waiting.is_empty() {
                return Ok(());
            }
            if started.elapsed() >= timeout {
                return Err(SitesError::Timeout {
                    what: "replication to run on every follower".into(),
                    waited_ms: started.elapsed().as_millis(),
                    detail: format!(": {}", waiting.join("; ")),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until every follower named in `followers` has executed everything the primary has.
    pub async fn wait_caught_up(&self, followers: &[&str], timeout: Duration) -> Result<()> {
        let started = Instant::now();
        let primary = self.site(&self.primary)?;
        loop {
            let want = primary.instance.gtid_executed().await?;
            let mut behind = Vec::new();
            for name in followers {
                let have = self.site(name)?.instance.gtid_executed().await?;
                if !want.is_subset(&have) {
                    behind.push(format!("{name} lacks {}", want.difference(&have)));
                }
            }
            if behind.is_empty() {
                return Ok(());
            }
            if started.elapsed() >= timeout {
                return Err(SitesError::Timeout {
                    what: format!("followers {followers:?} to catch up with {}", self.primary),
                    waited_ms: started.elapsed().as_millis(),
                    detail: format!(": {}", behind.join("; ")),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Manual promotion (for tests, not the operator's procedure): fence the old primary when it
    /// answers (`super_read_only = ON`), stop and forget the target's replication, make it
    /// writable, point `app:primary` at it (resetting live connections), and repoint every
    /// other site to replicate from it through its link.
    pub async fn promote(&mut self, target: &str) -> Result<()> {
        let old = self.primary.clone();
        if old == target {
            return Ok(());
        }
        if let Ok(old_site) = self.site(&old)
            && let Err(e) = old_site.instance.set_super_read_only(true).await
        {
            tracing::warn!(site = %old, error = %e, "old primary not fenced (unreachable?)");
        }
        let t = self.site(target)?;
        t.instance.reset_replica_all().await?;
        t.instance.set_super_read_only(false).await?;
        self.primary_link.set_upstream(t.instance.addr());
        self.primary_link.reset();
        self.primary = target.to_owned();
        for s in self.sites.iter().filter(|s| s.name != target) {
            let link = self.replication_link(&s.name, target)?;
            if let Err(e) = async {
                s.instance.set_super_read_only(true).await?;
                s.instance.replicate_from(link.addr(), &accounts::REPLICATION).await
            }
            .await
            {
                tracing::warn!(site = %s.name, error = %e, "not repointed (unreachable?)");
            }
        }
        tracing::info!(from = %old, to = %target, "manual promotion done");
        Ok(())
    }

    /// The bound used for starts and replication waits.
    pub fn ready_timeout(&self) -> Duration {
        self.ready_timeout
    }
}
