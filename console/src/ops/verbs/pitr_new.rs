//! `pitr restore-new <group> --backup B (--target T | --latest) [--exclude-gtids SET]
//! --new-name N`: the PITR workbench's "restore into a new group" from the command line. The
//! plan is the one `pitr plan` prints (the same planner over the same archive); a refused plan
//! proposes nothing. A plan that holds becomes the same [`WriteOp::RestorePitrToNewGroup`] the
//! workbench proposes, with the same preflight, preview, confirmation (the new group's name),
//! journal and manifest saved for review.

use clap::Args;

use super::WriteArgs;
use crate::ops::{GroupRef, WriteOp};

/// `pitr restore-new` arguments.
#[derive(Clone, Debug, Args)]
pub struct PitrRestoreNewArgs {
    /// The group whose backup and archive are restored (it is not changed).
    pub group: String,
    /// The MysqlBackup the new group loads.
    #[arg(long)]
    pub backup: String,
    /// The target: RFC 3339, whole seconds (`2026-04-20T13:04:00Z`).
    #[arg(long, required_unless_present = "latest", conflicts_with = "latest")]
    pub target: Option<String>,
    /// The newest archived state: the plan's newest replayed commit, rounded up to the whole
    /// second (pointInTime has no latest mode: stopTime is required).
    #[arg(long)]
    pub latest: bool,
    /// excludeGtids: a GTID set the replay skips.
    #[arg(long, value_name = "SET", default_value = "")]
    pub exclude_gtids: String,
    /// The new group's name (a DNS label; the confirmation asks for it).
    #[arg(long, value_name = "NAME")]
    pub new_name: String,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// Why no restore is proposed.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreNewError {
    #[error("the plan is refused, so no restore is proposed: {0}")]
    Refused(String),
    #[error(
        "group {0} names no PITR archive profile (spec.backup.pitr.profileName, or its own \
         initFromBackup.pointInTime.archiveProfileName): nothing to restore from"
    )]
    NoArchiveProfile(String),
    #[error(
        "--latest: the plan replays nothing after the backup, so there is no newest commit to \
         stop at; give --target"
    )]
    NothingReplayed,
}

/// What the planner said, as the verb needs it: the newest replayed commit of a plan, or the
/// refusal's `<token>: <message>`.
pub type Planned = Result<Option<jiff::Timestamp>, String>;

/// The operation for `args` on `group` (as read) given the plan: pure, so the table tests
/// cover every branch.
pub fn operation(
    namespace: &str,
    args: &PitrRestoreNewArgs,
    group: &bloodraven_crd::MysqlFailoverGroup,
    planned: &Planned,
) -> Result<WriteOp, RestoreNewError> {
    let newest = planned.clone().map_err(RestoreNewError::Refused)?;
    let group_ref = GroupRef::new(namespace, &args.group);
    let archive_profile = crate::tui::update::workbench::group_archive_profile(group)
        .ok_or_else(|| RestoreNewError::NoArchiveProfile(group_ref.to_string()))?;
    let stop_time = match (&args.target, args.latest) {
        (Some(target), false) => target.clone(),
        _ => whole_second_up(newest.ok_or(RestoreNewError::NothingReplayed)?),
    };
    Ok(WriteOp::RestorePitrToNewGroup {
        group: group_ref,
        name: args.new_name.clone(),
        backup: args.backup.clone(),
        archive_profile,
        stop_time,
        exclude_gtids: args.exclude_gtids.clone(),
        allow_partial: false,
    })
}

/// `at` rounded up to the whole second, in RFC 3339 with `Z` (stopTime's form).
fn whole_second_up(at: jiff::Timestamp) -> String {
    let seconds = at.as_second() + i64::from(at.subsec_nanosecond() > 0);
    jiff::Timestamp::from_second(seconds).unwrap_or(at).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use bloodraven_crd::fixtures::GroupFixture;
    use pretty_assertions::assert_eq;

    use super::*;

    fn args(target: Option<&str>, latest: bool, exclude: &str) -> PitrRestoreNewArgs {
        PitrRestoreNewArgs {
            group: "orders".to_owned(),
            backup: "orders-full-1".to_owned(),
            target: target.map(str::to_owned),
            latest,
            exclude_gtids: exclude.to_owned(),
            new_name: "orders-restored".to_owned(),
            write: WriteArgs::default(),
        }
    }

    fn archived() -> bloodraven_crd::MysqlFailoverGroup {
        let mut group = GroupFixture::three_sites().with_s3_profile("offsite").build();
        let backup = group.spec.backup.as_mut().unwrap();
        backup.pitr = Some(
            serde_json::from_value(serde_json::json!({"enabled": true, "profileName": "offsite"}))
                .unwrap(),
        );
        group
    }

    fn restore(stop: &str, exclude: &str) -> WriteOp {
        WriteOp::RestorePitrToNewGroup {
            group: GroupRef::new("orders", "orders"),
            name: "orders-restored".to_owned(),
            backup: "orders-full-1".to_owned(),
            archive_profile: "offsite".to_owned(),
            stop_time: stop.to_owned(),
            exclude_gtids: exclude.to_owned(),
            allow_partial: false,
        }
    }

    #[test]
    fn the_plan_decides_what_is_proposed() {
        let newest: jiff::Timestamp = "2026-04-20T13:04:05.250Z".parse().unwrap();
        let d = "3e11fa47-71ca-11e1-9e33-c80aa9429562:7-9";
        let refused = "PITRArchiveDivergentHistory: the target history diverges".to_owned();
        let table: Vec<(&str, PitrRestoreNewArgs, Planned, Result<WriteOp, RestoreNewError>)> = vec![
            (
                "a target that plans, excluding D",
                args(Some("2026-04-20T13:04:00Z"), false, d),
                Ok(Some(newest)),
                Ok(restore("2026-04-20T13:04:00Z", d)),
            ),
            (
                "latest: the newest replayed commit, rounded up",
                args(None, true, ""),
                Ok(Some(newest)),
                Ok(restore("2026-04-20T13:04:06Z", "")),
            ),
            (
                "latest on a whole second stays on it",
                args(None, true, ""),
                Ok(Some("2026-04-20T13:04:05Z".parse().unwrap())),
                Ok(restore("2026-04-20T13:04:05Z", "")),
            ),
            (
                "latest with nothing replayed",
                args(None, true, ""),
                Ok(None),
                Err(RestoreNewError::NothingReplayed),
            ),
            (
                "a refused plan proposes nothing",
                args(Some("2026-04-20T13:04:00Z"), false, ""),
                Err(refused.clone()),
                Err(RestoreNewError::Refused(refused)),
            ),
        ];
        for (what, args, planned, expected) in table {
            assert_eq!(operation("orders", &args, &archived(), &planned), expected, "{what}");
        }
    }

    #[test]
    fn a_group_without_an_archive_profile_is_refused_by_name() {
        let group = GroupFixture::three_sites().build();
        let planned = Ok(Some("2026-04-20T13:04:05Z".parse().unwrap()));
        assert_eq!(
            operation("orders", &args(None, true, ""), &group, &planned),
            Err(RestoreNewError::NoArchiveProfile("orders/orders".to_owned()))
        );
    }
}
