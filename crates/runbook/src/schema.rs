//! The runbook file's JSON Schema, generated from [`crate::model`]. The checked-in copy is
//! `schema/runbook.schema.json` (a test keeps it fresh; regenerate with
//! `UPDATE_EXPECT=1 cargo nextest run -p bloodraven-runbook schema`).

use crate::model::RunbookFile;

/// The schema as pretty JSON with a trailing newline.
pub fn runbook_schema() -> String {
    let schema = schemars::schema_for!(RunbookFile);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
