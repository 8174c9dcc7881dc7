//! The drill file's JSON Schema, generated from the types in [`crate::model`]. The checked-in
//! copy is `schema/drill.schema.json` (a test keeps it fresh; regenerate with
//! `UPDATE_EXPECT=1 cargo nextest run -p bloodraven-drill schema`).

use crate::model::Drill;

/// The schema as pretty JSON with a trailing newline.
pub fn drill_schema() -> String {
    let schema = schemars::schema_for!(Drill);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
