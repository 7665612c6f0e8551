//! Every event file in `tests/events/` (what `sam local invoke -e` takes)
//! is run through a real binary under the Runtime Interface Emulator by
//! some `tests/*_binary.rs`: a new file without such a test fails here.

use std::path::Path;

#[test]
fn every_event_file_runs_through_a_real_binary() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let constants = std::fs::read_to_string(dir.join("support/events.rs")).unwrap();
    let binary_tests: String = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with("_binary.rs"))
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect();
    let mut files: Vec<String> = std::fs::read_dir(dir.join("events"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "{files:?}");
    for file in files {
        // `pub const NAME: &str = include_str!("../events/FILE");`
        let include = format!("include_str!(\"../events/{file}\")");
        let line = constants.lines().find(|line| line.contains(&include));
        let name = line
            .and_then(|line| line.trim().strip_prefix("pub const "))
            .and_then(|rest| rest.split(':').next())
            .unwrap_or_else(|| panic!("tests/support/events.rs has no constant for {file}"));
        assert!(binary_tests.contains(&format!("events::{name}")), "{file} ({name}) is run by no tests/*_binary.rs");
    }
}
