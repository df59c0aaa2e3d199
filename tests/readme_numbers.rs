//! Numbers the README states that the repository can check: they must not drift from what they
//! describe. (Timings and sizes of builds depend on the machine; the Python tests check the
//! package's size.)

mod common;

use common::{repo, rust_files};

/// The tests `cargo test` runs: the `#[test]` functions of the workspace's crates (the library,
/// the integration tests, the Triton backend, the tvm-ffi library), ignored ones included.
fn test_functions() -> usize {
    let files = ["src", "tests", "triton/src", "tvm-ffi-lib/src"].into_iter().flat_map(|d| rust_files(&repo().join(d)));
    files.map(|f| std::fs::read_to_string(f).unwrap().matches("#[test]").count()).sum()
}

/// The number after `about ` in the README's line that names `what`.
fn stated(what: &str) -> usize {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let line =
        readme.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("README.md has no line with {what:?}"));
    let after = line.split("about ").nth(1).unwrap_or_else(|| panic!("no `about N` in README line {line:?}"));
    after.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

#[test]
fn the_readme_states_how_many_tests_cargo_test_runs() {
    // This file's own test counts too: it is one of them.
    let (said, counted) = (stated("`cargo test` (about"), test_functions());
    let off = said.abs_diff(counted) as f64 / counted as f64;
    assert!(
        off <= 0.1,
        "README.md says `cargo test` runs about {said} tests, the sources have {counted} (off by {:.0} %): update the README",
        off * 100.0
    );
}
