//! Generates the C header `include/tvm_runtime.h` from the exported functions with cbindgen.
//!
//! The header is always written to `$OUT_DIR/tvm_runtime.h`; outside CI (env `CI` unset) it is
//! also copied into `include/` when it changed, so a developer's build keeps the checked-in
//! header current. The test `header_is_up_to_date` fails when the two differ, so CI catches a
//! header that was not regenerated and committed.

use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=CI");

    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml is valid");
    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header");
    let generated = out_dir.join("tvm_runtime.h");
    bindings.write_to_file(&generated);

    if std::env::var_os("CI").is_none() {
        let checked_in = crate_dir.join("include").join("tvm_runtime.h");
        let new = std::fs::read(&generated).expect("generated header is readable");
        if std::fs::read(&checked_in).ok().as_deref() != Some(new.as_slice()) {
            std::fs::write(&checked_in, new).expect("include/tvm_runtime.h is writable");
        }
    }
}
