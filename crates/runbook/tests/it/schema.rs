//! The checked-in schema is the one the types generate.

use std::path::Path;

#[test]
fn checked_in_schema_is_fresh() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/runbook.schema.json");
    let generated = bloodraven_runbook::schema::runbook_schema();
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == generated,
        "{} is stale: regenerate it with `UPDATE_EXPECT=1 cargo nextest run -p bloodraven-runbook \
         schema` and commit the result",
        path.display()
    );
}
