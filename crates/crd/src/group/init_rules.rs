//! The CEL text of "spec.initFromBackup is fixed at creation" (backup and restore): a transition
//! rule per part of the block that compares it by value, not by bytes.
//!
//! The spec: "The comparison is by value: the operator's own writes, which re-encode a stopTime
//! offset in UTC or drop an explicit allowPartial: false, are not changes." So every field is
//! read with the value an absent field stands for:
//!
//! - `pointInTime.stopTime` is compared as an instant (`timestamp()`), after a plain string
//!   comparison, so an unchanged value is never re-parsed;
//! - booleans and numbers take their default (`allowPartial` false, `loadOptions` threads 4 and
//!   the three flags true, `passphraseSecretKeyRef.optional` false), so `loadOptions: {}` and no
//!   `loadOptions` at all are the same value;
//! - an optional string reads as `''` when absent, and an optional list as `[]`;
//! - `includeSchemas` and `excludeSchemas` are sets (`x-kubernetes-list-type: set`): order does
//!   not count;
//! - which source kind is set, and whether `pointInTime` and `decryption` are set, must not change.
//!
//! Every field is reached through `has()` on each step, which is also false for a field that
//! is null, so no rule evaluates a missing field (the API server refuses an update whose rule
//! fails to evaluate). The rules only run when both the old and the new object have the block;
//! adding and removing it are refused by the rule on `spec`.

/// The message of every rule: the spec's.
pub(super) const FIXED_AT_CREATION: &str = "spec.initFromBackup is fixed at creation: it cannot be added, changed or removed. To retry a bootstrap restore that never succeeded, delete the group and create it again with the corrected block (see Backup and restore > A failed bootstrap restore)";

/// The rule for `source`: the same kind, with the same fields.
pub(super) fn source() -> String {
    let kinds = ["backupRef", "s3", "pvc"].map(|kind| present_in_both(&format!("source.{kind}")));
    let strings = [
        "source.backupRef.name",
        "source.s3.bucket",
        "source.s3.prefix",
        "source.s3.region",
        "source.s3.endpointURL",
        "source.s3.credentialsSecretName",
        "source.s3.storageClass",
        "source.pvc.claimName",
        "source.pvc.subPath",
    ]
    .map(|path| same(path, "''"));
    all(kinds.into_iter().chain(strings))
}

/// The rule for `loadOptions`, whose absence means its defaults.
pub(super) fn load_options() -> String {
    let scalars = [
        ("loadOptions.threads", "4"),
        ("loadOptions.resetProgress", "true"),
        ("loadOptions.skipBinlog", "true"),
        ("loadOptions.loadIndexes", "true"),
    ]
    .map(|(path, default)| same(path, default));
    let sets = ["loadOptions.includeSchemas", "loadOptions.excludeSchemas"].map(same_set);
    all(scalars.into_iter().chain(sets))
}

/// The rule for `pointInTime`: set on both or neither, the same instant, the same archive, the
/// same `allowPartial` and `excludeGtids`.
pub(super) fn point_in_time() -> String {
    let stop_time = "(self.pointInTime.stopTime == oldSelf.pointInTime.stopTime || \
                     timestamp(self.pointInTime.stopTime) == timestamp(oldSelf.pointInTime.stopTime))";
    let fields = [
        same("pointInTime.archiveProfileName", "''"),
        same("pointInTime.allowPartial", "false"),
        same("pointInTime.excludeGtids", "''"),
    ];
    format!(
        "{} && (!has(self.pointInTime) || ({}))",
        present_in_both("pointInTime"),
        all(std::iter::once(stop_time.to_owned()).chain(fields))
    )
}

/// The rule for `decryption`: set on both or neither, naming the same Secret key.
pub(super) fn decryption() -> String {
    let fields = [
        present_in_both("decryption"),
        same("decryption.passphraseSecretKeyRef.name", "''"),
        same("decryption.passphraseSecretKeyRef.key", "''"),
        same("decryption.passphraseSecretKeyRef.optional", "false"),
    ];
    all(fields)
}

/// Whether every step of `root.path` is set.
fn present(root: &str, path: &str) -> String {
    let mut prefix = String::from(root);
    let mut steps = Vec::new();
    for step in path.split('.') {
        prefix.push('.');
        prefix.push_str(step);
        steps.push(format!("has({prefix})"));
    }
    steps.join(" && ")
}

/// `root.path`, or `default` when any step of it is absent.
fn value(root: &str, path: &str, default: &str) -> String {
    format!("({} ? {root}.{path} : {default})", present(root, path))
}

/// `path` has the same value in `self` and `oldSelf`, `default` standing for an absent one.
fn same(path: &str, default: &str) -> String {
    format!("{} == {}", value("self", path, default), value("oldSelf", path, default))
}

/// The set at `path` has the same members in `self` and `oldSelf`, absent standing for empty.
fn same_set(path: &str) -> String {
    let new = value("self", path, "[]");
    let old = value("oldSelf", path, "[]");
    format!("{new}.all(x, x in {old}) && {old}.all(x, x in {new})")
}

/// `path` is set in both or in neither.
fn present_in_both(path: &str) -> String {
    format!("({}) == ({})", present("self", path), present("oldSelf", path))
}

/// The conjunction of `parts`.
fn all(parts: impl IntoIterator<Item = String>) -> String {
    parts.into_iter().collect::<Vec<_>>().join(" && ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_check_every_step() {
        assert_eq!(
            value("self", "loadOptions.threads", "4"),
            "(has(self.loadOptions) && has(self.loadOptions.threads) ? self.loadOptions.threads : 4)"
        );
        assert_eq!(
            present_in_both("pointInTime"),
            "(has(self.pointInTime)) == (has(oldSelf.pointInTime))"
        );
    }
}
