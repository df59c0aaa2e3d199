//! The SONAME `libtvm_ffi.so` and the C++ symbols of `cxx/exports.map` for this cdylib. Nothing
//! depends on this package, so the cdylib-only link arguments reach this library alone.

fn main() {
    let map = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cxx/exports.map");
    println!("cargo:rerun-if-changed={}", map.display());
    println!("cargo:rustc-link-arg-cdylib=-Wl,-soname,libtvm_ffi.so");
    println!("cargo:rustc-link-arg-cdylib=-Wl,--version-script={}", map.display());
}
