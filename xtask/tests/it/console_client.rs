//! The console is read-only because its one `kube::Client` is built in `console/src/client.rs`,
//! wrapped in the read-only allow-list. A client built anywhere else in the console's
//! non-test sources would skip that layer: this rule scans the source text for one.

use std::path::{Path, PathBuf};

/// The one file allowed to build a client.
const CLIENT_FILE: &str = "console/src/client.rs";

/// What building a `kube::Client` looks like in source text.
const BUILDS: [&str; 3] = ["Client::try_from", "Client::new", "ClientBuilder"];

/// Every `.rs` file under `directory`, sorted.
fn rust_files(directory: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).expect("console/src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Whether a file holds only tests (`tests.rs`, `testing.rs`, or under a `tests` folder).
fn test_only(relative: &Path) -> bool {
    relative.components().any(|component| component.as_os_str() == "tests")
        || relative.file_stem().is_some_and(|stem| stem == "tests" || stem == "testing")
}

/// The lines of `text` outside `#[cfg(test)]` modules (`#[cfg(all(test, …))]` too), with
/// their 1-based numbers.
fn non_test_lines(text: &str) -> Vec<(usize, &str)> {
    let mut kept = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") || trimmed.starts_with("#[cfg(all(test") {
            // Skip the attribute's item: up to the end of its braces (or its `;`).
            let mut depth = 0_usize;
            let mut opened = false;
            for (_, item) in lines.by_ref() {
                depth =
                    (depth + item.matches('{').count()).saturating_sub(item.matches('}').count());
                opened |= item.contains('{');
                if (opened && depth == 0) || (!opened && item.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        kept.push((index + 1, line));
    }
    kept
}

/// Where `text` builds a client outside tests.
fn client_builds(text: &str) -> Vec<(usize, String)> {
    non_test_lines(text)
        .into_iter()
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .filter(|(_, line)| BUILDS.iter().any(|build| line.contains(build)))
        .map(|(number, line)| (number, line.trim().to_owned()))
        .collect()
}

#[test]
fn the_console_builds_its_kube_client_only_in_client_rs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask sits in the root");
    let mut found = Vec::new();
    let files = rust_files(&root.join("console/src"));
    assert!(files.len() > 10, "console/src has the console's sources: {files:?}");
    for path in files {
        let relative = path.strip_prefix(root).expect("under the root");
        if relative == Path::new(CLIENT_FILE) || test_only(relative) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        for (line, code) in client_builds(&text) {
            found.push(format!("{}:{line}: {code}", relative.display()));
        }
    }
    assert!(
        found.is_empty(),
        "a kube::Client is built outside {CLIENT_FILE}, skipping the read-only layer; build \
         it with client::connect instead:\n{}",
        found.join("\n")
    );
    // The one place that builds it is still where this rule looks.
    let client = std::fs::read_to_string(root.join(CLIENT_FILE)).expect("client.rs is readable");
    assert!(!client_builds(&client).is_empty(), "{CLIENT_FILE} no longer builds the client");
}

#[test]
fn the_scan_sees_a_client_outside_tests_and_ignores_test_modules() {
    let source = "use kube::Client;\n\
                  fn writer(config: kube::Config) -> kube::Client {\n\
                  \x20   kube::Client::try_from(config).unwrap()\n\
                  }\n\
                  // Client::new in a comment\n\
                  #[cfg(test)]\n\
                  mod tests {\n\
                  \x20   fn fake() { let _ = kube::Client::new(service, \"default\"); }\n\
                  }\n\
                  fn other() { let _ = kube::client::ClientBuilder::try_from(config); }\n";
    let found: Vec<usize> = client_builds(source).into_iter().map(|(line, _)| line).collect();
    assert_eq!(found, [3, 10]);
    assert!(test_only(Path::new("console/src/tui/update/tests.rs")));
    assert!(test_only(Path::new("console/src/tui/testing.rs")));
    assert!(!test_only(Path::new("console/src/tui/app.rs")));
}
