//! Runs the C test-suite (`c_tests/`, built with CMake and run with ctest) against the shared and
//! static libraries of this very `cargo test` build.
//!
//! Where the libraries are: when the library target is built as a dependency of an integration
//! test, cargo compiles it once with all its crate types (cdylib, staticlib, rlib) into
//! `target/<profile>/deps/`, next to this test binary, but does not copy ("uplift") the .so/.a
//! into `target/<profile>/`; only `cargo build` does that, so the copies there may be stale or
//! absent. The `deps/` files have no hash in their names (cargo leaves it off for a path
//! package's cdylib), so this test takes them from there; no nested cargo run is needed.
//! CMake is configured with `TVM_RUNTIME_PREBUILT_DIR` pointing there, so it does not run cargo
//! either. CMake is required: without it this test fails rather than skips.

use std::fs::File;
use std::os::unix::io::AsRawFd;
mod common;
use common::library_dir;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>/` (or `target/<triple>/<profile>/`), the parent of the test binary's `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("path of the test binary");
    exe.parent().and_then(Path::parent).expect("test binary lives in <target>/<profile>/deps").to_path_buf()
}

/// Runs a command, prints what it wrote, and fails the test if it did not succeed.
fn run(step: &str, cmd: &mut Command) {
    println!("==> {step}: {cmd:?}");
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "{step}: `{}` was not found on PATH. The C API tests need CMake >= 3.16 with ctest \
             (e.g. `apt-get install cmake`); they are not skipped without it.",
            cmd.get_program().to_string_lossy()
        ),
        Err(e) => panic!("{step}: could not start {cmd:?}: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    if !stderr.is_empty() {
        println!("--- stderr ---\n{stderr}");
    }
    assert!(out.status.success(), "{step} failed ({}); its output is printed above", out.status);
}

/// Serializes concurrent `cargo test` runs that share the build directory.
fn lock_build_dir(build_dir: &Path) -> File {
    std::fs::create_dir_all(build_dir).expect("create the CMake build directory");
    let lock = File::create(build_dir.with_extension("lock")).expect("create the lock file");
    // SAFETY: flock on a descriptor we own; released when the file is closed.
    let rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(rc, 0, "flock: {}", std::io::Error::last_os_error());
    lock
}

/// Drops a build directory that was configured for another source tree (e.g. a moved checkout).
fn discard_foreign_cache(build_dir: &Path, repo: &Path) {
    let Ok(cache) = std::fs::read_to_string(build_dir.join("CMakeCache.txt")) else {
        return;
    };
    let home = cache.lines().find_map(|l| l.strip_prefix("CMAKE_HOME_DIRECTORY:INTERNAL="));
    if home.map(Path::new) != Some(repo) {
        std::fs::remove_dir_all(build_dir).expect("remove a stale CMake build directory");
        std::fs::create_dir_all(build_dir).expect("recreate the CMake build directory");
    }
}

#[test]
fn c_tests_pass_under_ctest() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib_dir = library_dir();
    let build_dir = profile_dir().join("c_tests_build");
    let _lock = lock_build_dir(&build_dir);
    discard_foreign_cache(&build_dir, repo);

    run(
        "configure",
        Command::new("cmake")
            .arg("-S")
            .arg(repo)
            .arg("-B")
            .arg(&build_dir)
            .arg(format!("-DTVM_RUNTIME_PREBUILT_DIR={}", lib_dir.display()))
            .arg("-DTVM_RUNTIME_BUILD_TESTS=ON"),
    );
    run("build", Command::new("cmake").arg("--build").arg(&build_dir).args(["-j", "2"]));
    // Run from the build directory rather than `--test-dir`, which needs CMake 3.20.
    // cargo puts target/<profile> on LD_LIBRARY_PATH, which beats the tests' RUNPATH: a stale
    // uplifted libtvm_runtime.so there would be tested instead of this build's. Put ours first.
    let ld_path = match std::env::var_os("LD_LIBRARY_PATH") {
        Some(old) => {
            let mut paths = vec![lib_dir.clone()];
            paths.extend(std::env::split_paths(&old));
            std::env::join_paths(paths).expect("library paths join")
        }
        None => lib_dir.clone().into_os_string(),
    };
    run(
        "ctest",
        Command::new("ctest").arg("--output-on-failure").env("LD_LIBRARY_PATH", ld_path).current_dir(&build_dir),
    );
}
