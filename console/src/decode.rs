//! Decoding objects one at a time: one object the console cannot read (written by a newer or
//! older operator, or edited by hand) is listed as unreadable, never blinds the rest.
//!
//! The sources and `status` read `MysqlFailoverGroup`s as raw objects and decode each here.
//! Logs name the object's kind, namespace and name and the decode error, never the body (an
//! object can carry Secret data).

use kube::api::DynamicObject;
use serde::de::DeserializeOwned;

/// An object that did not decode: who it is, where in it decoding stopped, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The JSON path of the field that did not decode (`spec.sites`, `.` for the whole object).
    pub path: String,
    /// The decode error (serde's message: the expected type and what was found).
    pub error: String,
}

impl Unreadable {
    /// `namespace/name`.
    pub fn key(&self) -> (String, String) {
        (self.namespace.clone(), self.name.clone())
    }
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}/{} is unreadable at {}: {}",
            self.kind, self.namespace, self.name, self.path, self.error
        )
    }
}

/// Decodes `object` as `K` (`kind` names it in the error), logging a failure with the object's
/// kind, namespace, name, path and error only.
pub fn decode<K: DeserializeOwned>(kind: &str, object: DynamicObject) -> Result<K, Unreadable> {
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let name = object.metadata.name.clone().unwrap_or_default();
    let unreadable = |path: String, error: String| Unreadable {
        kind: kind.to_owned(),
        namespace: namespace.clone(),
        name: name.clone(),
        path,
        error,
    };
    let result = match serde_json::to_value(object) {
        Ok(value) => serde_path_to_error::deserialize::<_, K>(value)
            .map_err(|error| unreadable(error.path().to_string(), error.inner().to_string())),
        Err(error) => Err(unreadable(".".to_owned(), error.to_string())),
    };
    if let Err(unreadable) = &result {
        tracing::warn!(
            kind = %unreadable.kind,
            namespace = %unreadable.namespace,
            name = %unreadable.name,
            path = %unreadable.path,
            error = %unreadable.error,
            "object does not decode; listed as unreadable"
        );
    }
    result
}

/// Splits `objects` into the decoded and the unreadable.
pub fn decode_all<K: DeserializeOwned>(
    kind: &str,
    objects: impl IntoIterator<Item = DynamicObject>,
) -> (Vec<K>, Vec<Unreadable>) {
    let mut decoded = Vec::new();
    let mut unreadable = Vec::new();
    for object in objects {
        match decode(kind, object) {
            Ok(object) => decoded.push(object),
            Err(error) => unreadable.push(error),
        }
    }
    (decoded, unreadable)
}

#[cfg(all(test, feature = "lab"))]
mod tests {
    use bloodraven_crd::MysqlFailoverGroup;

    use super::*;

    #[expect(clippy::unwrap_used, reason = "a test helper: the literal object decodes")]
    fn group(namespace: &str, name: &str, sites: serde_json::Value) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "shipstream.io/v1alpha1",
            "kind": "MysqlFailoverGroup",
            "metadata": { "namespace": namespace, "name": name },
            "spec": { "sites": sites },
        }))
        .unwrap()
    }

    #[test]
    fn a_bad_object_is_unreadable_with_its_path_and_the_rest_decode() {
        let good = crate::scenarios::raw_objects("healthy")
            .unwrap()
            .into_iter()
            .filter(|object| object["kind"] == "MysqlFailoverGroup")
            .map(|object| serde_json::from_value::<DynamicObject>(object).unwrap())
            .collect::<Vec<_>>();
        assert!(!good.is_empty());
        let mut objects = good.clone();
        objects.insert(1, group("orders", "bad", serde_json::json!("not a list")));
        let (groups, unreadable) = decode_all::<MysqlFailoverGroup>("MysqlFailoverGroup", objects);
        assert_eq!(groups.len(), good.len());
        let [bad] = unreadable.as_slice() else { panic!("{unreadable:?}") };
        assert_eq!((bad.namespace.as_str(), bad.name.as_str()), ("orders", "bad"));
        assert_eq!(bad.path, "spec.sites");
        assert!(bad.error.contains("expected a sequence"), "{bad:?}");
        assert_eq!(
            bad.to_string(),
            format!("MysqlFailoverGroup orders/bad is unreadable at spec.sites: {}", bad.error)
        );
    }
}
