//! Feeds arbitrary bytes to the lint as one file's contents. UTF-8 text goes
//! through `lint_sources`, the in-memory entry point; anything else is
//! written to a file and linted with `lint_paths`, so it takes the same
//! read-and-decode path as the binary. Either way the run must return a
//! report (a finding or an `errors` entry), never panic, hang or abort.

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use devcheck_lint::{lint_paths, lint_sources, Config};
use libfuzzer_sys::fuzz_target;

/// A scratch file per fuzzing process, for inputs that are not UTF-8.
fn scratch_file() -> &'static PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("devcheck-lint-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the scratch directory");
        dir.join("input.rs")
    })
}

fuzz_target!(|data: &[u8]| {
    let config = Config::default();
    let report = match std::str::from_utf8(data) {
        Ok(text) => lint_sources(&[(PathBuf::from("input.rs"), text.to_owned())], &config),
        Err(_) => {
            let file = scratch_file();
            std::fs::write(file, data).expect("write the scratch file");
            let report = lint_paths(std::slice::from_ref(file), &config);
            // Invalid UTF-8 is never linted, only reported.
            assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
            report
        }
    };
    // Every error names the file it is about.
    assert!(report.errors.iter().all(|e| e.file.ends_with("input.rs")));
});
