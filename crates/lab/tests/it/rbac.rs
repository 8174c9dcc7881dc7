//! RBAC and identity through real clients: kube-rs with a ServiceAccount token, token users
//! and a client certificate; Roles, ClusterRoles and their bindings; `SelfSubjectReview` and
//! `SelfSubjectAccessReview`.

use bloodraven_lab::{Lab, LabConfig};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SelfSubjectAccessReview,
    SelfSubjectAccessReviewSpec, SubjectAccessReviewStatus,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

use crate::support::{Widget, api_status, bounded, start_lab, widget};

/// Widgets `w1`, `w2` in `default` and `w1` in `ns2`; a ServiceAccount `default/reader` bound
/// to a read-only ClusterRole; `alice` may patch only `w1` and the status of any widget, only
/// in `default`.
const POLICY: &str = r#"
apiVersion: v1
kind: Namespace
metadata: { name: ns2 }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: reader, namespace: default }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: widget-reader }
rules:
- apiGroups: ["lab.bloodraven.test"]
  resources: ["widgets"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: widget-readers }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-reader }
subjects:
- { kind: ServiceAccount, name: reader, namespace: default }
- { apiGroup: rbac.authorization.k8s.io, kind: Group, name: readers }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: widget-operator, namespace: default }
rules:
- apiGroups: ["lab.bloodraven.test"]
  resources: ["widgets"]
  resourceNames: ["w1"]
  verbs: ["get", "list", "patch"]
- apiGroups: ["lab.bloodraven.test"]
  resources: ["widgets/status"]
  verbs: ["patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: widget-operators, namespace: default }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: widget-operator }
subjects:
- { apiGroup: rbac.authorization.k8s.io, kind: User, name: alice }
"#;

async fn rbac_lab(config: LabConfig) -> Lab {
    let lab = start_lab(config.with_rbac().with_user("alice", "alice-token")).await;
    lab.apply_yaml(POLICY).unwrap();
    for (namespace, name) in [("default", "w1"), ("default", "w2"), ("ns2", "w1")] {
        let mut object = serde_json::to_value(widget(name, "red")).unwrap();
        object["metadata"]["namespace"] = json!(namespace);
        lab.apply(object).unwrap();
    }
    lab
}

async fn client_from(kubeconfig: &str) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

async fn may_i(client: &kube::Client, attributes: ResourceAttributes) -> SubjectAccessReviewStatus {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(attributes),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    api.create(&PostParams::default(), &review).await.unwrap().status.unwrap()
}

fn widgets(verb: &str, namespace: &str, name: Option<&str>) -> ResourceAttributes {
    ResourceAttributes {
        verb: Some(verb.to_string()),
        group: Some("lab.bloodraven.test".to_string()),
        resource: Some("widgets".to_string()),
        namespace: Some(namespace.to_string()),
        name: name.map(str::to_string),
        ..ResourceAttributes::default()
    }
}

fn color_patch(color: &str) -> Patch<serde_json::Value> {
    Patch::Merge(json!({ "spec": { "color": color } }))
}

#[tokio::test]
async fn a_service_account_bound_to_a_read_only_role_may_list_but_not_patch() {
    bounded(async {
        let lab = rbac_lab(LabConfig::default()).await;
        let token = lab.service_account_token("default", "reader").unwrap();
        let client = client_from(&lab.kubeconfig_with_token("reader", &token)).await;
        let api: Api<Widget> = Api::namespaced(client.clone(), "default");

        let listed = api.list(&ListParams::default()).await.unwrap();
        assert_eq!(listed.items.len(), 2);
        let allowed = may_i(&client, widgets("list", "default", None)).await;
        assert!(allowed.allowed, "{allowed:?}");
        assert_eq!(
            allowed.reason.as_deref(),
            Some(
                "RBAC: allowed by ClusterRoleBinding \"widget-readers\" of ClusterRole \
                    \"widget-reader\" to ServiceAccount \"reader/default\""
            )
        );

        let refused =
            api.patch("w1", &PatchParams::default(), &color_patch("blue")).await.unwrap_err();
        let status = api_status(refused);
        assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            status.message,
            "widgets.lab.bloodraven.test \"w1\" is forbidden: User \
                \"system:serviceaccount:default:reader\" cannot patch resource \"widgets\" in \
                API group \"lab.bloodraven.test\" in the namespace \"default\""
        );
        let details = status.details.unwrap();
        assert_eq!(
            (details.name.as_str(), details.group.as_str(), details.kind.as_str()),
            ("w1", "lab.bloodraven.test", "widgets")
        );
        let denied = may_i(&client, widgets("patch", "default", Some("w1"))).await;
        assert!(!denied.allowed, "{denied:?}");
        assert_eq!(denied.denied, None);
        let color = lab.get("lab.bloodraven.test/v1", "Widget", Some("default"), "w1").unwrap();
        assert_eq!(color["spec"]["color"], "red", "a refused patch changes nothing");

        // Who am I: the ServiceAccount's user, groups and uid.
        let api: Api<SelfSubjectReview> = Api::all(client.clone());
        let me = api.create(&PostParams::default(), &SelfSubjectReview::default()).await.unwrap();
        let info = me.status.unwrap().user_info.unwrap();
        assert_eq!(info.username.as_deref(), Some("system:serviceaccount:default:reader"));
        assert_eq!(
            info.groups.unwrap(),
            ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]
        );
        let account = lab.get("v1", "ServiceAccount", Some("default"), "reader").unwrap();
        assert_eq!(info.uid.as_deref(), account["metadata"]["uid"].as_str());

        // The log: the reviews are the creates they are, the patch a 403.
        let requests = lab.requests();
        let reviews: Vec<_> = requests
            .iter()
            .filter(|request| {
                request.resource.as_deref().is_some_and(|resource| resource.starts_with("self"))
            })
            .collect();
        assert_eq!(reviews.len(), 3, "{reviews:#?}");
        for review in &reviews {
            assert_eq!(
                (review.verb.as_str(), review.method.as_str(), review.status),
                ("create", "POST", 201)
            );
            assert_eq!(review.user, "system:serviceaccount:default:reader");
        }
        assert!(
            reviews
                .iter()
                .any(|review| review.path
                    == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
        );
        assert!(
            reviews
                .iter()
                .any(|review| review.path == "/apis/authentication.k8s.io/v1/selfsubjectreviews")
        );
        assert!(requests.iter().any(|request| request.verb == "patch" && request.status == 403));

        // Deleting the ServiceAccount invalidates its token.
        lab.delete("v1", "ServiceAccount", Some("default"), "reader").unwrap();
        let status = api_status(
            api.create(&PostParams::default(), &SelfSubjectReview::default()).await.unwrap_err(),
        );
        assert_eq!(status.code, 401);
        lab.stop().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_role_binding_grants_only_its_namespace_its_resource_names_and_subresources() {
    bounded(async {
        let lab = rbac_lab(LabConfig::default()).await;
        let client = client_from(&lab.kubeconfig(Some("alice"))).await;
        let default: Api<Widget> = Api::namespaced(client.clone(), "default");
        let ns2: Api<Widget> = Api::namespaced(client.clone(), "ns2");

        // resourceNames: w1 only.
        default.patch("w1", &PatchParams::default(), &color_patch("blue")).await.unwrap();
        let status = api_status(
            default.patch("w2", &PatchParams::default(), &color_patch("blue")).await.unwrap_err(),
        );
        assert_eq!(status.code, 403, "{status:?}");
        assert!(!may_i(&client, widgets("patch", "default", Some("w2"))).await.allowed);
        assert!(may_i(&client, widgets("patch", "default", Some("w1"))).await.allowed);
        // A list is allowed by resourceNames only when it names the object.
        assert_eq!(api_status(default.list(&ListParams::default()).await.unwrap_err()).code, 403);
        let one = default.list(&ListParams::default().fields("metadata.name=w1")).await.unwrap();
        assert_eq!(one.items.len(), 1);

        // Only in the RoleBinding's namespace.
        let status = api_status(
            ns2.patch("w1", &PatchParams::default(), &color_patch("blue")).await.unwrap_err(),
        );
        assert_eq!(
            status.message,
            "widgets.lab.bloodraven.test \"w1\" is forbidden: User \"alice\" cannot patch \
                resource \"widgets\" in API group \"lab.bloodraven.test\" in the namespace \
                \"ns2\""
        );
        assert!(!may_i(&client, widgets("patch", "ns2", Some("w1"))).await.allowed);

        // The status subresource: any widget's, not the main resource.
        let status_patch = Patch::Merge(json!({ "status": { "phase": "Ready" } }));
        default.patch_status("w2", &PatchParams::default(), &status_patch).await.unwrap();
        let attributes = ResourceAttributes {
            subresource: Some("status".to_string()),
            ..widgets("patch", "default", Some("w2"))
        };
        assert!(may_i(&client, attributes).await.allowed);
        let status = api_status(
            ns2.patch_status("w1", &PatchParams::default(), &status_patch).await.unwrap_err(),
        );
        assert!(status.message.contains("cannot patch resource \"widgets/status\""), "{status:?}");

        // Nothing else: core resources, and non-resource paths beyond discovery.
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        assert_eq!(
            api_status(configmaps.list(&ListParams::default()).await.unwrap_err()).code,
            403
        );
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some("/apis".to_string()),
                    verb: Some("get".to_string()),
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
        let answer = reviews.create(&PostParams::default(), &review).await.unwrap().status.unwrap();
        assert!(answer.allowed, "discovery is open to authenticated users");
        client.apiserver_version().await.unwrap();
        lab.stop().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn admins_anonymous_users_and_labs_without_rbac() {
    bounded(async {
        let lab = rbac_lab(LabConfig::default().with_admin("root", "root-token")).await;
        let root = client_from(&lab.kubeconfig(Some("root"))).await;
        let api: Api<Widget> = Api::namespaced(root.clone(), "ns2");
        api.patch("w1", &PatchParams::default(), &color_patch("green")).await.unwrap();
        assert!(may_i(&root, widgets("delete", "ns2", Some("w1"))).await.allowed);

        // Anonymous requests may read health and version only.
        let anonymous = client_from(&lab.kubeconfig(None)).await;
        let status = api_status(
            Api::<Widget>::namespaced(anonymous.clone(), "default")
                .list(&ListParams::default())
                .await
                .unwrap_err(),
        );
        assert_eq!(status.code, 403);
        assert!(status.message.contains("User \"system:anonymous\" cannot list"), "{status:?}");
        anonymous.apiserver_version().await.unwrap();
        lab.stop().await.unwrap();

        // Without RBAC every authenticated request is allowed, and the review says so.
        let open = start_lab(LabConfig::default().with_user("alice", "alice-token")).await;
        let client = client_from(&open.kubeconfig(Some("alice"))).await;
        assert!(may_i(&client, widgets("delete", "ns9", None)).await.allowed);
        open.stop().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_client_certificate_names_the_user_and_groups() {
    bounded(async {
        let lab = rbac_lab(LabConfig { tls: true, ..LabConfig::default() }).await;
        let kubeconfig = lab.kubeconfig_with_certificate("bob", &["readers"]).unwrap();
        let client = client_from(&kubeconfig).await;
        let api: Api<SelfSubjectReview> = Api::all(client.clone());
        let me = api.create(&PostParams::default(), &SelfSubjectReview::default()).await.unwrap();
        let info = me.status.unwrap().user_info.unwrap();
        assert_eq!(info.username.as_deref(), Some("bob"));
        assert_eq!(info.groups.unwrap(), ["readers", "system:authenticated"]);
        let widgets_api: Api<Widget> = Api::namespaced(client.clone(), "ns2");
        widgets_api.get("w1").await.unwrap();
        let status = api_status(
            widgets_api
                .patch("w1", &PatchParams::default(), &color_patch("blue"))
                .await
                .unwrap_err(),
        );
        assert!(status.message.contains("User \"bob\" cannot patch"), "{status:?}");
        assert!(lab.requests().iter().all(|request| request.user == "bob"));
        assert!(matches!(
            Lab::start(LabConfig::default()).await.unwrap().client_certificate("bob", &[]),
            Err(bloodraven_lab::Error::TlsRequired { .. })
        ));
        lab.stop().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_not_an_identity() {
    bounded(async {
        let lab = rbac_lab(LabConfig { tls: true, ..LabConfig::default() }).await;
        let other = start_lab(LabConfig { tls: true, ..LabConfig::default() }).await;
        // Claims system:masters, signed by the other lab's CA.
        let forged = other.client_certificate("mallory", &["system:masters"]).unwrap();
        let mut kubeconfig: serde_json::Value =
            serde_norway::from_str(&lab.kubeconfig(None)).unwrap();
        let encode = |pem: &str| data_encoding::BASE64.encode(pem.as_bytes());
        kubeconfig["users"][0]["user"] = json!({
            "client-certificate-data": encode(&forged.certificate_pem),
            "client-key-data": encode(&forged.key_pem),
        });
        let client = client_from(&serde_norway::to_string(&kubeconfig).unwrap()).await;
        let api: Api<Widget> = Api::namespaced(client, "default");
        let error = api.delete("w1", &Default::default()).await.unwrap_err();
        assert!(!matches!(error, kube::Error::Api(_)), "the TLS handshake refuses it: {error:?}");
        assert!(lab.get("lab.bloodraven.test/v1", "Widget", Some("default"), "w1").is_some());
        assert!(lab.requests().is_empty(), "{:#?}", lab.requests());
        other.stop().await.unwrap();
        lab.stop().await.unwrap();
    })
    .await;
}

/// A kubeconfig of `lab` for `user` that impersonates `as_user`.
fn impersonating(lab: &Lab, user: &str, as_user: &str) -> String {
    let mut kubeconfig: serde_json::Value =
        serde_norway::from_str(&lab.kubeconfig(Some(user))).unwrap();
    kubeconfig["users"][0]["user"]["as"] = json!(as_user);
    serde_norway::to_string(&kubeconfig).unwrap()
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb_and_serves_as_the_impersonated_user() {
    bounded(async {
        let lab = rbac_lab(LabConfig::default().with_admin("root", "root-token")).await;
        let reader = "system:serviceaccount:default:reader";

        let alice = client_from(&impersonating(&lab, "alice", "bob")).await;
        let api: Api<Widget> = Api::namespaced(alice, "default");
        let status = api_status(api.get("w1").await.unwrap_err());
        assert_eq!(status.code, 403);
        assert_eq!(
            status.message,
            "users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" \
                in API group \"\" at the cluster scope"
        );

        let root = client_from(&impersonating(&lab, "root", reader)).await;
        let me = Api::<SelfSubjectReview>::all(root.clone())
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
            .unwrap();
        let info = me.status.unwrap().user_info.unwrap();
        assert_eq!(info.username.as_deref(), Some(reader));
        assert_eq!(
            info.groups.unwrap(),
            ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]
        );
        let api: Api<Widget> = Api::namespaced(root, "default");
        assert_eq!(api.list(&ListParams::default()).await.unwrap().items.len(), 2);
        let status = api_status(
            api.patch("w1", &PatchParams::default(), &color_patch("blue")).await.unwrap_err(),
        );
        assert!(status.message.contains(&format!("User \"{reader}\" cannot patch")), "{status:?}");
        assert!(
            lab.requests().iter().any(|request| request.user == reader && request.status == 403)
        );
        lab.stop().await.unwrap();
    })
    .await;
}
