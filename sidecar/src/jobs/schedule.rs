//! `scheduled-backup`: what a backup schedule's CronJob runs. The operator creates the
//! MysqlBackup of each run itself, named after the run's Job (so a re-run pod or a restarted
//! operator converges on one backup per run), from the Job's labels; this step only reports
//! the run on its log. Keeping the MysqlBackup's creation in the operator means the CronJob's
//! pods need no Kubernetes credentials (operator README, "spec says / we chose").

/// The line a run prints.
pub const FIRED: &str = "BLOODRAVEN_SCHEDULE_FIRED";

/// The run's settings.
#[derive(Debug, Clone, clap::Args)]
pub struct ScheduleArgs {
    /// The failover group.
    #[arg(long = "group", env = "BLOODRAVEN_GROUP")]
    pub group: String,
    /// The schedule (`spec.backup.schedules[].name`).
    #[arg(long = "schedule", env = "BLOODRAVEN_SCHEDULE")]
    pub schedule: String,
    /// Its profile.
    #[arg(long = "profile", env = "BLOODRAVEN_PROFILE", default_value = "")]
    pub profile: String,
}

/// The run's log line.
pub fn line(args: &ScheduleArgs) -> String {
    format!("{FIRED} group={} schedule={} profile={}", args.group, args.schedule, args.profile)
}
