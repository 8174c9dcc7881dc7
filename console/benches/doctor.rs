//! `doctor -A` over `fleet-1000` once the list arrived (issue #19: goal <= 100 ms): decode the
//! 1,000 listed objects, judge each group, evaluate the runbooks for the groups with findings
//! and render the table (and the JSON). Also: all shipped runbooks for one group, and loading
//! the shipped runbooks (done before the list is requested).

use bloodraven_console::cli::DoctorFormat;
use bloodraven_console::doctor;
use bloodraven_console::scenarios;
use bloodraven_crd::MysqlFailoverGroup;
use bloodraven_runbook::{GroupView, applicable};
use criterion::{Criterion, criterion_group, criterion_main};
use kube::api::DynamicObject;

fn now() -> jiff::Timestamp {
    scenarios::SCENARIO_EPOCH.parse().unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

fn listed() -> Vec<DynamicObject> {
    scenarios::objects("fleet-1000", now())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|object| serde_json::from_value(object).ok())
        .collect()
}

fn bench(c: &mut Criterion) {
    let runbooks = bloodraven_runbook::shipped().unwrap_or_default();
    let objects = listed();
    assert_eq!(objects.len(), scenarios::FLEET_SIZE, "fleet-1000 did not load");
    let mut group = c.benchmark_group("doctor");
    group.sample_size(20);
    for (name, format) in [("table", DoctorFormat::Table), ("json", DoctorFormat::Json)] {
        group.bench_function(format!("fleet-1000/after-list/{name}"), |b| {
            b.iter_batched(
                || objects.clone(),
                |objects| {
                    doctor::report(objects, &[], &[], &runbooks, format, true, now())
                        .map(|(text, _)| text.len())
                        .unwrap_or_default()
                },
                criterion::BatchSize::LargeInput,
            );
        });
    }
    let hold: Option<MysqlFailoverGroup> = scenarios::objects("hold-standing", now())
        .unwrap_or_default()
        .into_iter()
        .find(|object| object["kind"] == "MysqlFailoverGroup")
        .and_then(|object| serde_json::from_value(object).ok());
    if let Some(hold) = hold {
        group.bench_function("all-runbooks-one-group", |b| {
            b.iter(|| applicable(&runbooks, &GroupView::of(&hold)).runbooks.len());
        });
    }
    group.bench_function("load-shipped-runbooks", |b| {
        b.iter(|| bloodraven_runbook::shipped().map(|r| r.len()).unwrap_or_default());
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
