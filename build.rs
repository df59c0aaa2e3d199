//! Generates the C header `tvm_runtime.h` from the exported functions with cbindgen.
//!
//! The build writes the header to `$OUT_DIR/tvm_runtime.h` only; it never touches the source
//! tree. The checked-in copy `include/tvm_runtime.h` is updated on purpose with
//! `bash scripts/update_header.sh`, and the test `header_is_up_to_date` fails while the two
//! differ, so a stale checked-in header fails `cargo test` everywhere, not only in CI.

use std::path::{Path, PathBuf};

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    // Programs that link the runtime statically (the CLI, tests, examples, benches) export its
    // C functions dynamically: kernel libraries of the tvm-ffi releases import
    // `TVMFFIErrorSetRaisedFromCStrParts` from the global scope (see runtime/module/dso.rs).
    for kind in ["bins", "tests", "examples", "benches"] {
        println!("cargo:rustc-link-arg-{kind}=-rdynamic");
    }
    // A ThreadSanitizer build (scripts/tsan.sh) does not grow stacks (runtime/base/nesting.rs).
    println!("cargo:rustc-check-cfg=cfg(tvm_runtime_tsan)");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    if std::env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|f| f.contains("sanitizer=thread")) {
        println!("cargo:rustc-cfg=tvm_runtime_tsan");
    }

    cxx_api(&crate_dir);

    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml is valid");
    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header");
    bindings.write_to_file(out_dir.join("tvm_runtime.h"));
}

/// tvm-ffi's C++ functions (`cxx/ffi_cxx_api.cc`, over the C ABI) and what the shared library
/// says about itself: its SONAME and, beside the C functions rustc exports, the C++ symbols of
/// `cxx/exports.map`. Plain `rustc-link-arg` reaches this package's own cdylib (and its
/// executables) only: the cdylib-only form is passed on to every dependent's cdylib too.
fn cxx_api(crate_dir: &Path) {
    println!("cargo:rerun-if-changed=cxx");
    println!("cargo:rerun-if-changed=third_party/tvm_ffi/include");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .flag("-isystem")
        .flag(crate_dir.join("third_party/tvm_ffi/include").to_str().expect("a UTF-8 path"))
        .file(crate_dir.join("cxx/ffi_cxx_api.cc"))
        .warnings(true)
        .compile("tvmrt_cxx");
    println!("cargo:rustc-link-arg=-Wl,-soname,libtvm_runtime.so");
    println!("cargo:rustc-link-arg=-Wl,--version-script={}", crate_dir.join("cxx/exports.map").display());
    // Test programs that do not link the library lack those symbols (tests/exports.rs checks
    // that the library has every one).
    println!("cargo:rustc-link-arg=-Wl,--undefined-version");
}
