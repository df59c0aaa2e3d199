//! A Rust implementation of the Apache TVM runtime, shipped as a C-ABI library
//! (`libtvm_runtime.so` / `.a`) that is a drop-in replacement for TVM's own.
//!
//! Layers: [`abi`] holds the `#[repr(C)]` types shared with C; [`runtime`] is the core (objects,
//! NDArray, packed functions, registry, devices, modules, backend API); `ffi` is the thin C
//! boundary that converts pointers and catches panics.

#![allow(clippy::missing_safety_doc)]

pub mod abi;
#[macro_use]
pub mod runtime;
pub mod ffi;
pub mod graph;

#[cfg(test)]
mod header_tests {
    /// The checked-in header must equal what cbindgen generates from the current sources.
    /// The build writes only `$OUT_DIR`; `bash scripts/update_header.sh` copies it to include/.
    #[test]
    fn header_is_up_to_date() {
        let generated = include_str!(concat!(env!("OUT_DIR"), "/tvm_runtime.h"));
        let checked_in = include_str!("../include/tvm_runtime.h");
        assert!(
            generated == checked_in,
            "include/tvm_runtime.h is stale: run `bash scripts/update_header.sh` and commit the regenerated header"
        );
    }
}
