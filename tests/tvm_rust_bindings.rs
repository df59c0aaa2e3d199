//! TVM's own Rust bindings (`tvm-rt` and `tvm-sys` from crates.io) run their unit tests against
//! this runtime's library: `scripts/tvm_rust_bindings.sh` (which says what it adapts and why).
//!
//! Opt-in, since it fetches and builds the crates (minutes):
//! `cargo test --test tvm_rust_bindings -- --ignored`. Without registry access or libclang the
//! script skips, and so does this test, saying why.

mod common;
use common::{library_dir, repo};
use std::process::Command;

#[test]
#[ignore = "fetches and builds TVM's Rust bindings from crates.io (minutes); run with --ignored"]
fn tvm_rust_bindings_pass_their_tests() {
    let out = Command::new("bash")
        .arg(repo().join("scripts/tvm_rust_bindings.sh"))
        .env("TVM_RUNTIME_LIB_DIR", library_dir())
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(line) = stdout.lines().find(|l| l.starts_with("tvm-rust-bindings: skipped:")) {
        eprintln!("{line}");
        return;
    }
    assert!(out.status.success(), "the bindings' tests failed ({}):\n{stdout}\n{stderr}", out.status);
    let result = stdout.lines().find(|l| l.starts_with("test result:")).unwrap_or_default();
    assert!(result.starts_with("test result: ok. 21 passed; 0 failed"), "unexpected result `{result}`:\n{stdout}");
}
