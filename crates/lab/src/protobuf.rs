//! Just enough of Kubernetes' protobuf encoding to read a `SelfSubjectAccessReview` spec:
//! recent kubectl (1.36; not 1.20) sends built-in kinds as protobuf (and accepts JSON
//! answers). The envelope is `k8s\0` + `runtime.Unknown { typeMeta = 1, raw = 2, ... }`;
//! field numbers are those of k8s.io/api/authorization/v1/generated.proto.

use serde_json::{Map, Value, json};

/// The prefix of every protobuf-encoded Kubernetes object.
pub(crate) const MAGIC: &[u8] = b"k8s\0";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum DecodeError {
    #[error("truncated at byte {0}")]
    Truncated(usize),
    #[error("unsupported wire type {wire} of field {field}")]
    WireType { field: u64, wire: u64 },
    #[error("field {0} is not UTF-8")]
    NotUtf8(u64),
}

enum Wire<'a> {
    Varint,
    Bytes(&'a [u8]),
}

fn varint(bytes: &[u8], at: &mut usize) -> Result<u64, DecodeError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at).ok_or(DecodeError::Truncated(*at))?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DecodeError::Truncated(*at))
}

/// The fields of one message, in order.
fn fields(bytes: &[u8]) -> Result<Vec<(u64, Wire<'_>)>, DecodeError> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < bytes.len() {
        let key = varint(bytes, &mut at)?;
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                varint(bytes, &mut at)?;
                out.push((field, Wire::Varint));
            }
            1 | 5 => {
                at += if wire == 1 { 8 } else { 4 };
                if at > bytes.len() {
                    return Err(DecodeError::Truncated(bytes.len()));
                }
            }
            2 => {
                let length = usize::try_from(varint(bytes, &mut at)?)
                    .map_err(|_| DecodeError::Truncated(at))?;
                let end = at.checked_add(length).ok_or(DecodeError::Truncated(at))?;
                let value = bytes.get(at..end).ok_or(DecodeError::Truncated(bytes.len()))?;
                at = end;
                out.push((field, Wire::Bytes(value)));
            }
            _ => return Err(DecodeError::WireType { field, wire }),
        }
    }
    Ok(out)
}

fn message(bytes: &[u8], wanted: u64) -> Result<Option<&[u8]>, DecodeError> {
    Ok(fields(bytes)?.into_iter().rev().find_map(|(field, wire)| match wire {
        Wire::Bytes(value) if field == wanted => Some(value),
        _ => None,
    }))
}

/// The string fields of a message as a JSON object, named by field number.
fn strings(bytes: &[u8], names: &[(u64, &str)]) -> Result<Value, DecodeError> {
    let mut object = Map::new();
    for (field, wire) in fields(bytes)? {
        if let (Wire::Bytes(value), Some((_, name))) =
            (wire, names.iter().find(|(number, _)| *number == field))
        {
            let text = std::str::from_utf8(value).map_err(|_| DecodeError::NotUtf8(field))?;
            object.insert((*name).to_string(), json!(text));
        }
    }
    Ok(Value::Object(object))
}

/// The spec of a protobuf `SelfSubjectAccessReview` (after the magic), as its JSON form.
pub(crate) fn access_review(envelope: &[u8]) -> Result<Value, DecodeError> {
    let raw = message(envelope, 2)?.unwrap_or_default();
    let spec = message(raw, 2)?.unwrap_or_default();
    let mut out = Map::new();
    if let Some(resource) = message(spec, 1)? {
        let names = [
            (1, "namespace"),
            (2, "verb"),
            (3, "group"),
            (4, "version"),
            (5, "resource"),
            (6, "subresource"),
            (7, "name"),
        ];
        out.insert("resourceAttributes".to_string(), strings(resource, &names)?);
    }
    if let Some(non_resource) = message(spec, 2)? {
        out.insert(
            "nonResourceAttributes".to_string(),
            strings(non_resource, &[(1, "path"), (2, "verb")])?,
        );
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(number: u8, value: &[u8]) -> Vec<u8> {
        let mut out = vec![(number << 3) | 2, u8::try_from(value.len()).unwrap()];
        out.extend_from_slice(value);
        out
    }

    #[test]
    fn a_protobuf_access_review_reads_as_its_json() {
        let attributes =
            [field(1, b"ns1"), field(2, b"patch"), field(3, b"x.io"), field(5, b"ws")].concat();
        let spec = field(1, &attributes);
        let review = [field(1, b""), field(2, &spec)].concat();
        let envelope =
            [field(1, &field(1, b"authorization.k8s.io/v1")), field(2, &review)].concat();
        assert_eq!(
            access_review(&envelope).unwrap(),
            json!({ "resourceAttributes": { "namespace": "ns1", "verb": "patch", "group": "x.io", "resource": "ws" } })
        );
        let non_resource = field(2, &[field(1, b"/apis"), field(2, b"get")].concat());
        let envelope = field(2, &field(2, &non_resource));
        assert_eq!(
            access_review(&envelope).unwrap(),
            json!({ "nonResourceAttributes": { "path": "/apis", "verb": "get" } })
        );
        assert_eq!(access_review(&[0x12, 0x05, 0x01]).unwrap_err(), DecodeError::Truncated(3));
    }
}
