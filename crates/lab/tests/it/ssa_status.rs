//! Server-side apply on the status subresource, with the semantics the operator's status
//! writers rely on in a real cluster: each field manager owns what it applied (its own
//! `managedFields` entry, `subresource: status`), a field a manager stops applying is removed
//! unless another manager owns it, `x-kubernetes-list-type: map` lists merge item by item on
//! their `x-kubernetes-list-map-keys`, lists without a list type are atomic (replaced whole,
//! owned whole), and a change to a field another manager owns is a 409 conflict unless forced.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::support::{api_status, bounded, client, lab};

/// A kind whose status looks like the operator's: a run block with nested objects, an atomic
/// list of sites, and conditions as a map list keyed by `type`.
const GADGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.lab.bloodraven.test
spec:
  group: lab.bloodraven.test
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer}
            status:
              type: object
              properties:
                activeSite: {type: string}
                sites:
                  type: array
                  items: {type: string}
                run:
                  type: object
                  properties:
                    runID: {type: string}
                    phase: {type: string}
                    fence:
                      type: object
                      properties:
                        state: {type: string}
                        gtidSet: {type: string}
                    drain:
                      type: object
                      properties:
                        startTime: {type: string}
                conditions:
                  type: array
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys: [type]
                  items:
                    type: object
                    required: [type]
                    properties:
                      type: {type: string}
                      status: {type: string}
                      reason: {type: string}
"#;

fn gadgets(client: kube::Client) -> Api<DynamicObject> {
    let resource =
        ApiResource::from_gvk(&GroupVersionKind::gvk("lab.bloodraven.test", "v1", "Gadget"));
    Api::namespaced_with(client, "default", &resource)
}

fn body(status: Value) -> Value {
    json!({"apiVersion": "lab.bloodraven.test/v1", "kind": "Gadget", "metadata": {"name": "g"},
           "status": status})
}

async fn apply_status(
    api: &Api<DynamicObject>,
    manager: &str,
    force: bool,
    status: Value,
) -> Result<Value, kube::Error> {
    let mut params = PatchParams::apply(manager);
    params.force = force;
    let object = api.patch_status("g", &params, &Patch::Apply(body(status))).await?;
    Ok(serde_json::to_value(object).unwrap())
}

/// The `fieldsV1` of `manager`'s Apply entry on the status subresource.
fn owned(object: &Value, manager: &str) -> Option<Value> {
    object["metadata"]["managedFields"].as_array()?.iter().find_map(|entry| {
        (entry["manager"] == manager
            && entry["operation"] == "Apply"
            && entry["subresource"] == "status")
            .then(|| entry["fieldsV1"].clone())
    })
}

fn condition_types(object: &Value) -> Vec<String> {
    object["status"]["conditions"]
        .as_array()
        .map(|items| items.iter().filter_map(|c| c["type"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

async fn started() -> (bloodraven_lab::Lab, Api<DynamicObject>) {
    let lab = lab().await;
    lab.load_crds(GADGET_CRD).unwrap();
    let api = gadgets(client(&lab).await);
    let created = json!({"apiVersion": "lab.bloodraven.test/v1", "kind": "Gadget",
                         "metadata": {"name": "g"}, "spec": {"size": 1}});
    api.patch("g", &PatchParams::apply("creator"), &Patch::Apply(created)).await.unwrap();
    (lab, api)
}

#[tokio::test]
async fn status_apply_keeps_each_managers_fields_and_prunes_what_a_manager_stops_applying() {
    let (lab, api) = started().await;
    bounded(async {
        let topology = json!({"activeSite": "iad", "sites": ["iad", "pdx"],
                              "conditions": [{"type": "Ready", "status": "True"}]});
        apply_status(&api, "topology", true, topology.clone()).await.unwrap();
        let first = json!({"run": {"runID": "r1", "phase": "Fencing",
                                   "fence": {"state": "Intended"}},
                           "conditions": [{"type": "Held", "status": "True"}]});
        let object = apply_status(&api, "planned", true, first).await.unwrap();
        assert_eq!(condition_types(&object), ["Ready", "Held"], "map lists merge by key");
        assert_eq!(object["status"]["activeSite"], "iad", "the other manager's fields stay");
        assert_eq!(object["spec"]["size"], 1, "a status apply leaves the spec alone");
        assert_eq!(
            owned(&object, "planned").unwrap(),
            json!({"f:status": {
                "f:conditions": {"k:{\"type\":\"Held\"}": {".": {}, "f:status": {}, "f:type": {}}},
                "f:run": {"f:fence": {"f:state": {}}, "f:phase": {}, "f:runID": {}}}}),
            "each manager owns what it applied"
        );
        assert_eq!(
            owned(&object, "topology").unwrap()["f:status"]["f:conditions"],
            json!({"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}, "f:type": {}}})
        );

        // The next record drops the fence and the condition: both go; the other manager's
        // condition and fields stay.
        let second = json!({"run": {"runID": "r1", "phase": "Draining",
                                    "drain": {"startTime": "2026-12-01T00:00:00Z"}}});
        let object = apply_status(&api, "planned", true, second).await.unwrap();
        assert_eq!(object["status"]["run"]["phase"], "Draining");
        assert_eq!(object["status"]["run"]["drain"]["startTime"], "2026-12-01T00:00:00Z");
        assert!(
            object["status"]["run"]["fence"].is_null(),
            "the fence and the object it emptied are gone, as the API server prunes it: {object}"
        );
        assert_eq!(condition_types(&object), ["Ready"], "{object}");
        assert_eq!(object["status"]["sites"], json!(["iad", "pdx"]));

        // The topology manager re-applying its own fields does not touch the run block.
        let object = apply_status(&api, "topology", true, topology).await.unwrap();
        assert_eq!(object["status"]["run"]["phase"], "Draining");
        // A field both managers applied with the same value stays while either applies it.
        apply_status(&api, "planned", false, json!({"activeSite": "iad"})).await.unwrap();
        let object =
            apply_status(&api, "topology", true, json!({"sites": ["iad", "pdx"]})).await.unwrap();
        assert_eq!(object["status"]["activeSite"], "iad", "still owned by planned");
        assert!(object["status"]["run"].is_null(), "planned stopped applying the run: {object}");
    })
    .await;
    lab.stop().await.unwrap();
}

#[tokio::test]
async fn status_apply_conflicts_on_another_managers_fields_unless_forced() {
    let (lab, api) = started().await;
    bounded(async {
        let topology = json!({"activeSite": "iad", "sites": ["iad", "pdx"],
                              "conditions": [{"type": "Ready", "status": "True"}]});
        apply_status(&api, "topology", true, topology).await.unwrap();

        let refused = api_status(
            apply_status(&api, "planned", false, json!({"activeSite": "pdx"})).await.unwrap_err(),
        );
        assert_eq!(refused.code, 409);
        assert_eq!(
            refused.message,
            "Apply failed with 1 conflict: conflict with \"topology\" with subresource \"status\": .status.activeSite"
        );
        // An atomic list is owned whole: changing any item conflicts.
        let refused = api_status(
            apply_status(&api, "planned", false, json!({"sites": ["iad"]})).await.unwrap_err(),
        );
        assert_eq!(refused.code, 409, "{}", refused.message);
        assert!(refused.message.contains(".status.sites"), "{}", refused.message);
        // A map-list item of another key is not a conflict; the same item with a new value is.
        apply_status(&api, "planned", false, json!({"conditions": [{"type": "Held", "status": "True"}]}))
            .await
            .unwrap();
        let refused = api_status(
            apply_status(&api, "planned", false, json!({"conditions": [{"type": "Ready", "status": "False"}]}))
                .await
                .unwrap_err(),
        );
        assert!(
            refused.message.contains(".status.conditions[type=\"Ready\"].status"),
            "{}",
            refused.message
        );

        // Forced: the atomic list is replaced whole and changes owner.
        let object =
            apply_status(&api, "planned", true, json!({"sites": ["pdx"], "activeSite": "pdx"}))
                .await
                .unwrap();
        assert_eq!(object["status"]["sites"], json!(["pdx"]));
        assert_eq!(object["status"]["activeSite"], "pdx");
        let topology_fields = owned(&object, "topology").unwrap();
        assert!(topology_fields["f:status"]["f:sites"].is_null(), "{topology_fields}");
        assert!(topology_fields["f:status"]["f:activeSite"].is_null(), "{topology_fields}");
        assert!(owned(&object, "planned").unwrap()["f:status"]["f:sites"].is_object());
        // The planned manager's own Held condition was dropped by its last apply (it stopped
        // applying it); topology's Ready stays.
        assert_eq!(condition_types(&object), ["Ready"], "{object}");
    })
    .await;
    lab.stop().await.unwrap();
}
