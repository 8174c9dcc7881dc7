//! The checked-in schema is the one the types generate.

use std::path::Path;

#[test]
fn checked_in_schema_is_fresh() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/drill.schema.json");
    let generated = bloodraven_drill::schema::drill_schema();
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == generated,
        "{} is stale: regenerate it with `UPDATE_EXPECT=1 cargo nextest run -p bloodraven-drill \
         schema` and commit the result",
        path.display()
    );
}

#[test]
fn every_shipped_drill_is_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("drills");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            bloodraven_drill::load(&path).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 4, "expected the shipped drills in {}, found {n}", dir.display());
}
