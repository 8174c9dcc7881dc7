//! The view and the checker's description of it agree, and the view reads the CRD status.

use bloodraven_crd::fixtures::{GroupFixture, manual_recovery_hold};
use bloodraven_runbook::GroupView;
use bloodraven_runbook::types::{GROUP_TYPE, Ty};

/// Every key of the serialized view is described, with the same kind, and vice versa.
fn agree(path: &str, value: &serde_json::Value, ty: Ty, failures: &mut Vec<String>) {
    match (value, ty) {
        (serde_json::Value::Object(map), Ty::Object(fields)) => {
            for (key, v) in map {
                match fields.iter().find(|f| f.name == key) {
                    Some(field) => agree(&format!("{path}.{key}"), v, field.ty, failures),
                    None => failures.push(format!("{path}.{key} is not in types.rs")),
                }
            }
            for field in fields {
                if !map.contains_key(field.name) {
                    failures.push(format!("{path}.{} is in types.rs, not in the view", field.name));
                }
            }
        }
        (serde_json::Value::Array(items), Ty::List(elem)) => {
            for item in items {
                agree(&format!("{path}[]"), item, *elem, failures);
            }
        }
        (serde_json::Value::Bool(_), Ty::Bool)
        | (serde_json::Value::Number(_), Ty::Int)
        | (serde_json::Value::String(_), Ty::Str) => {}
        (v, t) => failures.push(format!("{path}: the view has {v}, types.rs says {t:?}")),
    }
}

#[test]
fn the_checker_describes_the_view() {
    let mut group = GroupFixture::three_sites().with_hold(manual_recovery_hold()).build();
    // Fill every list so element types are compared too.
    let status = group.status.as_mut().unwrap();
    status.restore_reclones = Some(bloodraven_crd::group::RestoreReclones {
        pending: vec!["pdx".to_owned()],
        ..Default::default()
    });
    status.backup_schedules.push(bloodraven_crd::group::BackupScheduleStatus {
        name: "nightly".to_owned(),
        ..Default::default()
    });
    let view = serde_json::to_value(GroupView::of(&group)).unwrap();
    let mut failures = Vec::new();
    agree("group", &view, GROUP_TYPE, &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_view_reads_the_hold_and_sites() {
    let group = GroupFixture::three_sites().with_hold(manual_recovery_hold()).build();
    let view = GroupView::of(&group);
    assert!(view.hold.present);
    assert_eq!(view.hold.run_id, bloodraven_crd::fixtures::EXAMPLE_RUN_ID);
    assert_eq!(view.active_site, "iad");
    let names: Vec<&str> = view.sites.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["iad", "pdx", "fra"]);
    assert_eq!(view.sites[2].role, "DisasterRecovery");
    assert!(
        view.conditions.iter().any(|c| c.type_ == "AutomaticFailoverHeld" && c.status == "True")
    );
}
