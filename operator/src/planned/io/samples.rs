//! The decision's metric samples, recorded in the operator's registry (`crate::metrics`) when
//! its Events are published: after the status write committed, or with no write at all.

use crate::manager::GroupKey;
use crate::metrics::{Metrics, ReasonLabels, ResultLabels, TargetSiteLabels};
use crate::planned::Metric;

/// Records each sample under the group's namespace and name.
pub(super) fn record(metrics: &Metrics, key: &GroupKey, samples: &[Metric]) {
    let target = |target_site: &str| TargetSiteLabels {
        namespace: key.namespace.clone(),
        group: key.name.clone(),
        target_site: target_site.to_owned(),
    };
    for sample in samples {
        match sample {
            Metric::Finished { target_site, result } => {
                let labels = ResultLabels {
                    namespace: key.namespace.clone(),
                    group: key.name.clone(),
                    target_site: target_site.clone(),
                    result: result.clone(),
                };
                metrics.planned_failovers.get_or_create(&labels).inc();
            }
            Metric::Duration { target_site, seconds } => {
                metrics.planned_duration.get_or_create(&target(target_site)).observe(*seconds);
            }
            Metric::LagWait { target_site, seconds } => {
                metrics.planned_lag_wait.get_or_create(&target(target_site)).observe(*seconds);
            }
            Metric::Deferred { reason } => {
                let labels = ReasonLabels {
                    namespace: key.namespace.clone(),
                    group: key.name.clone(),
                    reason: (*reason).to_owned(),
                };
                metrics.planned_deferred.get_or_create(&labels).inc();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_appear_under_the_catalog_names_with_the_group() {
        let metrics = Metrics::default();
        let key = GroupKey { namespace: "orders".to_owned(), name: "shop".to_owned() };
        record(
            &metrics,
            &key,
            &[
                Metric::Finished {
                    target_site: "pdx".to_owned(),
                    result: "rolled-back".to_owned(),
                },
                Metric::Finished {
                    target_site: "pdx".to_owned(),
                    result: "rolled-back".to_owned(),
                },
                Metric::Duration { target_site: "pdx".to_owned(), seconds: 2.5 },
                Metric::LagWait { target_site: "pdx".to_owned(), seconds: 0.3 },
                Metric::Deferred { reason: "CooldownActive" },
            ],
        );
        let text = metrics.render();
        for line in [
            r#"bloodraven_planned_failovers_total{namespace="orders",group="shop",target_site="pdx",result="rolled-back"} 2"#,
            r#"bloodraven_planned_failover_duration_seconds_count{namespace="orders",group="shop",target_site="pdx"} 1"#,
            r#"bloodraven_planned_failover_lag_wait_seconds_sum{namespace="orders",group="shop",target_site="pdx"} 0.3"#,
            r#"bloodraven_planned_failovers_deferred_total{namespace="orders",group="shop",reason="CooldownActive"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line} in:\n{text}");
        }
    }
}
