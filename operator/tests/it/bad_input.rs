//! The operator never panics on what it reads, and says what is wrong: every console lab
//! scenario (`console/scenarios/*.yaml`, read as data), proptest-generated specs, and
//! hand-broken groups and statuses planted with `Lab::insert_unvalidated` (what an older or
//! newer CRD, or a hand edit, can leave), fed to validation, status rendering, DNS and the
//! running controller.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bloodraven_crd::group::{SiteRole, SiteSpec, SplitBrainPolicy};
use bloodraven_crd::{ConditionType, MysqlFailoverGroup, MysqlFailoverGroupSpec};
use bloodraven_lab::{Lab, LabConfig};
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::manager::Tuning;
use bloodraven_operator::{dns, status, validate};
use bloodraven_workloads::{Resolver, ServiceAddress};
use jiff::Timestamp;
use kube::api::Api;
use proptest::prelude::*;
use serde_json::{Value, json};

const BOUND: Duration = Duration::from_secs(120);

/// Panics anywhere in this process (spawned tasks included), counted by a hook.
static PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

struct Nowhere;

impl Resolver for Nowhere {
    fn resolve(&self, _namespace: &str, _service: &str, _port: u16) -> Option<ServiceAddress> {
        None
    }
}

fn root() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/..")
}

/// Every scenario file's objects, by file name.
fn scenarios() -> Vec<(String, Vec<Value>)> {
    let folder = format!("{}/console/scenarios", root());
    let mut files: Vec<_> = std::fs::read_dir(&folder)
        .expect("console/scenarios")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no scenario in {folder}");
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let objects = serde_norway::Deserializer::from_str(&text)
                .map(|document| Value::deserialize(document).unwrap())
                .filter(|value| !value.is_null())
                .collect();
            (path.file_name().unwrap().to_string_lossy().into_owned(), objects)
        })
        .collect()
}

use serde::Deserialize as _;

/// What the operator's pure layers do with a group: validation, the refused status, DNS.
fn exercise(group: &MysqlFailoverGroup) -> Vec<validate::Problem> {
    let problems = validate::check(&group.spec);
    let previous = group.status.clone().unwrap_or_default();
    let body = status::render_refused(
        &previous,
        &validate::message(&problems),
        group.metadata.generation,
        Timestamp::UNIX_EPOCH,
    );
    assert_eq!(body["status"]["conditions"][0]["reason"], validate::REASON);
    let active = previous.active_site.as_deref();
    let _ = dns::desired(group, "orders", active, &[]);
    problems
}

#[test]
fn every_scenario_group_is_read_validated_and_rendered() {
    count_panics();
    let mut groups = 0;
    for (file, objects) in scenarios() {
        for object in objects.iter().filter(|o| o["kind"] == "MysqlFailoverGroup") {
            let group: MysqlFailoverGroup = serde_json::from_value(object.clone())
                .unwrap_or_else(|error| panic!("{file}: the group does not read: {error}"));
            let problems = exercise(&group);
            assert_eq!(problems, [], "{file}: the scenario's group is valid");
            groups += 1;
        }
    }
    assert!(groups >= 7, "every scenario has a group ({groups})");
    assert_eq!(PANICS.load(Ordering::SeqCst), 0);
}

fn site(name: String, server_id: u32, role: Option<SiteRole>) -> SiteSpec {
    SiteSpec {
        name,
        server_id,
        role,
        zone: None,
        taint_node_selector: None,
        load_balancer_ip: None,
        storage: None,
        mysql_conf: None,
        service_template: None,
    }
}

fn role() -> impl Strategy<Value = Option<SiteRole>> {
    prop_oneof![
        Just(None),
        Just(Some(SiteRole::PrimaryCandidate)),
        Just(Some(SiteRole::DisasterRecovery)),
        Just(Some(SiteRole::ReadOnly)),
        "[A-Z][a-z]{0,8}".prop_map(|text| Some(SiteRole::parse(&text))),
    ]
}

fn spec() -> impl Strategy<Value = MysqlFailoverGroupSpec> {
    let sites = prop::collection::vec(("[a-c]{1,2}", 1u32..5, role()), 0..20);
    let priorities = prop::option::of(prop::collection::vec("[a-d]{1,2}", 0..5));
    let duration = prop::option::of(prop_oneof![
        Just("2s".to_owned()),
        Just("0s".to_owned()),
        Just("1h".to_owned()),
        "[0-9a-z. -]{0,6}",
    ]);
    let threshold = prop::option::of(prop_oneof![0u32..25, Just(u32::MAX)]);
    (sites, priorities, duration.clone(), duration, threshold.clone(), threshold).prop_map(
        |(sites, priorities, poll, cooldown, failure, recovery)| {
            let mut spec = bloodraven_crd::fixtures::GroupFixture::three_sites().build().spec;
            spec.sites = sites.into_iter().map(|(n, id, r)| site(n, id, r)).collect();
            spec.split_brain_policy =
                priorities.map(|site_priorities| SplitBrainPolicy { site_priorities });
            spec.poll_interval = poll.map(bloodraven_crd::Duration::new);
            spec.failover_cooldown = cooldown.map(bloodraven_crd::Duration::new);
            spec.failure_threshold = failure;
            spec.recovery_threshold = recovery;
            spec
        },
    )
}

/// A naive model: the spec is accepted exactly when it has ≥ 2 and ≤ 16 sites' worth of
/// candidates, unique names and ids, known roles, priorities naming distinct candidates, and
/// settings in range.
fn acceptable(spec: &MysqlFailoverGroupSpec) -> bool {
    let names: std::collections::BTreeSet<&str> =
        spec.sites.iter().map(|s| s.name.as_str()).collect();
    let ids: std::collections::BTreeSet<u32> = spec.sites.iter().map(|s| s.server_id).collect();
    let candidate = |name: &str| {
        spec.sites
            .iter()
            .any(|s| s.name == name && s.effective_role() == SiteRole::PrimaryCandidate)
    };
    let priorities =
        spec.split_brain_policy.as_ref().map(|p| p.site_priorities.clone()).unwrap_or_default();
    let distinct: std::collections::BTreeSet<&String> = priorities.iter().collect();
    let in_range = |value: Option<u32>| value.is_none_or(|v| (1..=20).contains(&v));
    spec.sites.len() <= 16
        && names.len() == spec.sites.len()
        && ids.len() == spec.sites.len()
        && spec.sites.iter().all(|s| !matches!(s.role, Some(SiteRole::Unrecognized(_))))
        && spec.sites.iter().filter(|s| s.effective_role() == SiteRole::PrimaryCandidate).count()
            >= 2
        && distinct.len() == priorities.len()
        && priorities.iter().all(|p| candidate(p))
        && spec.effective_poll_interval().is_ok()
        && spec.effective_failover_cooldown().is_ok()
        && in_range(spec.failure_threshold)
        && in_range(spec.recovery_threshold)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Generated specs: never a panic; refused exactly when the model says so; every problem's
    /// text names a `spec.` field.
    #[test]
    fn generated_specs_are_judged_like_the_model(spec in spec()) {
        let mut group = bloodraven_crd::fixtures::GroupFixture::three_sites().build();
        group.spec = spec;
        let problems = exercise(&group);
        prop_assert_eq!(problems.is_empty(), acceptable(&group.spec), "{:?}", problems);
        for problem in &problems {
            prop_assert!(problem.to_string().starts_with("spec."), "{}", problem);
        }
    }

    /// Arbitrary JSON where a spec goes: it reads or it is a serde error, never a panic.
    #[test]
    fn arbitrary_json_specs_never_panic(value in json_value()) {
        if let Ok(spec) = serde_json::from_value::<MysqlFailoverGroupSpec>(value) {
            let mut group = bloodraven_crd::fixtures::GroupFixture::three_sites().build();
            group.spec = spec;
            exercise(&group);
        }
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-zA-Z0-9:.-]{0,8}".prop_map(Value::from),
    ];
    let keys = prop_oneof![
        Just("sites".to_owned()),
        Just("name".to_owned()),
        Just("serverID".to_owned()),
        Just("role".to_owned()),
        Just("dns".to_owned()),
        Just("hostname".to_owned()),
        Just("splitBrainPolicy".to_owned()),
        Just("sitePriorities".to_owned()),
        Just("pollInterval".to_owned()),
        Just("failureThreshold".to_owned()),
        "[a-z]{1,4}",
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(keys.clone(), inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

async fn start_lab() -> (Lab, kube::Client) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
    for crd in [
        "mysqlfailovergroups.shipstream.io.yaml",
        "mysqlbackups.shipstream.io.yaml",
        "mysqlbackupverifications.shipstream.io.yaml",
        "external/dnsendpoints.externaldns.k8s.io.yaml",
    ] {
        let text = std::fs::read_to_string(format!("{}/deploy/crds/{crd}", root())).expect(crd);
        lab.load_crds(&text).expect(crd);
    }
    let url = lab.url().parse().expect("the lab's URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("a client of the lab");
    (lab, client)
}

async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(start.elapsed() < BOUND, "gave up after {BOUND:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A planted group: its name (and namespace), the edit of the example, words the condition
/// must carry.
type Planted = (&'static str, fn(&mut Value), &'static str);

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// A group in its own namespace, from the example's spec with `edit` applied to its JSON.
fn planted(name: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut group = json!({
        "apiVersion": "shipstream.io/v1alpha1",
        "kind": "MysqlFailoverGroup",
        "metadata": {"name": name, "namespace": name, "generation": 1},
        "spec": {
            "sites": [
                {"name": "iad", "serverID": 101, "role": "PrimaryCandidate"},
                {"name": "pdx", "serverID": 102, "role": "PrimaryCandidate"},
                {"name": "fra", "serverID": 103, "role": "DisasterRecovery"},
            ],
            "credentials": {"operatorSecretName": "creds"},
            "dns": {"hostname": "db.example.internal"},
            "pollInterval": "1s",
        },
    });
    edit(&mut group);
    group
}

/// The running controller (lab API server, no MySQL) meets every scenario's group, groups
/// whose spec the CRD would have refused, and groups with hand-broken statuses: no panic;
/// a refused spec gets `Ready=False`/`InvalidSpec` naming the field; a broken status is
/// replaced by a fresh one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_survives_scenarios_and_hand_broken_objects() {
    count_panics();
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let (lab, client) = start_lab().await;
    // Every scenario in its own namespace (they all name orders/orders).
    let mut names = Vec::new();
    for (index, (file, objects)) in scenarios().into_iter().enumerate() {
        let ns = format!("scenario-{index}");
        lab.apply(namespace(&ns)).unwrap();
        for mut object in objects {
            if object["kind"] != "MysqlFailoverGroup" {
                continue;
            }
            object["metadata"]["namespace"] = Value::from(ns.as_str());
            lab.insert_unvalidated(object).unwrap_or_else(|e| panic!("{file}: {e}"));
            names.push((ns.clone(), "orders".to_owned()));
        }
    }
    // Specs the CRD cannot catch, or that an older CRD let through.
    let refused: &[Planted] = &[
        (
            "one-candidate",
            |g| g["spec"]["sites"][1]["role"] = json!("DisasterRecovery"),
            "spec.sites has 1 PrimaryCandidate",
        ),
        (
            "unknown-priority",
            |g| g["spec"]["splitBrainPolicy"] = json!({"sitePriorities": ["ord"]}),
            "sitePriorities[0] is \"ord\"",
        ),
        (
            "same-server-id",
            |g| g["spec"]["sites"][2]["serverID"] = json!(101),
            "both have serverID 101",
        ),
        ("poll-nonsense", |g| g["spec"]["pollInterval"] = json!("soon"), "spec.pollInterval"),
        (
            "zero-threshold",
            |g| g["spec"]["failureThreshold"] = json!(0),
            "spec.failureThreshold is 0",
        ),
        (
            "unknown-role",
            |g| g["spec"]["sites"][0]["role"] = json!("Witness"),
            "spec.sites[0].role is \"Witness\"",
        ),
    ];
    for (name, edit, _) in refused {
        lab.apply(namespace(name)).unwrap();
        lab.insert_unvalidated(planted(name, edit)).unwrap();
    }
    // Hand-broken statuses of a valid spec: unknown enum values and unknown fields read (and
    // survive); wrong types and missing required fields do not read at all.
    let broken: &[(&str, Value)] = &[
        (
            "status-unknown-values",
            json!({"activeSite": "nowhere", "sites": [
                {"name": "iad", "state": "exploded", "sourceConvergenceState": "Sideways",
                 "sourceConvergenceReason": "Gremlins"}],
                "conditions": [{"type": "Ready", "status": "Maybe", "reason": "Who"}],
                "lastFailover": {"target": "mars"}}),
        ),
        ("status-unrelated", json!({"futureField": {"deep": [1, 2, 3]}, "sites": []})),
    ];
    for (name, status) in broken {
        lab.apply(namespace(name)).unwrap();
        let status = status.clone();
        lab.insert_unvalidated(planted(name, move |g| g["status"] = status)).unwrap();
        names.push(((*name).to_owned(), (*name).to_owned()));
    }
    let unreadable: &[Planted] = &[
        (
            "status-missing-fields",
            |g| {
                g["status"] =
                    json!({"sites": [{"state": "writable"}], "conditions": [{"status": "True"}]})
            },
            "does not read at status.",
        ),
        (
            "status-wrong-types",
            |g| g["status"] = json!({"sites": "iad", "activeSite": 5}),
            "does not read at status.",
        ),
        (
            "spec-wrong-types",
            |g| g["spec"]["sites"] = json!("iad,pdx"),
            "does not read at spec.sites",
        ),
    ];
    for (name, edit, _) in unreadable {
        lab.apply(namespace(name)).unwrap();
        lab.insert_unvalidated(planted(name, edit)).unwrap();
    }

    let context = Arc::new(Context::new(client.clone(), Arc::new(Nowhere), Tuning::default(), "t"));
    let controller = tokio::spawn(controller::run(context.clone(), None));

    for (name, _, words) in refused {
        let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), name);
        let message = wait_for(&format!("{name}: Ready=False/InvalidSpec"), || async {
            let got = groups.get(name).await;
            let ready = got.ok()?.status?.condition(&ConditionType::Ready)?.clone();
            (ready.reason.as_ref().map(|r| r.as_str()) == Some(validate::REASON)
                && !ready.is_true())
            .then(|| ready.message.unwrap_or_default())
        })
        .await;
        assert!(message.contains(words), "{name}: {words:?} not in {message:?}");
        // Refused: no workload was applied for it.
        let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(client.clone(), name);
        assert!(deployments.list(&Default::default()).await.unwrap().items.is_empty(), "{name}");
    }
    for (ns, name) in &names {
        let groups: Api<MysqlFailoverGroup> = Api::namespaced(client.clone(), ns);
        wait_for(
            &format!("{ns}/{name}: a status the manager wrote (three sites, a Ready condition)"),
            || async {
                let status = groups.get(name).await.ok()?.status?;
                let ready = status.condition(&ConditionType::Ready)?;
                (status.sites.iter().all(|site| site.state.is_some())
                    && ready.last_transition_time.is_some())
                .then_some(())
            },
        )
        .await;
    }
    // Unreadable groups: reported with the path that does not read, nothing else done; they
    // did not stop the watch of the groups above.
    let resource = kube::api::ApiResource::erase::<MysqlFailoverGroup>(&());
    for (name, _, words) in unreadable {
        let api: Api<kube::api::DynamicObject> =
            Api::namespaced_with(client.clone(), name, &resource);
        let message = wait_for(&format!("{name}: Ready=False/GroupUnreadable"), || async {
            let object = api.get(name).await.ok()?;
            let conditions = object.data["status"]["conditions"].as_array()?.clone();
            conditions
                .iter()
                .find(|c| c["type"] == "Ready" && c["reason"] == controller::UNREADABLE)
                .and_then(|c| c["message"].as_str().map(str::to_owned))
        })
        .await;
        assert!(message.contains(words), "{name}: {words:?} not in {message:?}");
        let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(client.clone(), name);
        assert!(deployments.list(&Default::default()).await.unwrap().items.is_empty(), "{name}");
    }
    let events = lab.list("events.k8s.io/v1", "Event");
    assert!(
        events.iter().any(|e| e["reason"] == controller::UNREADABLE),
        "a GroupUnreadable Event"
    );
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a panic was reported above");
    assert!(!controller.is_finished(), "the controller is still running");
    controller.abort();
    drop(context);
    lab.stop().await.expect("the lab stops");
}
