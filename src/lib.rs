//! A Rust implementation of the Apache TVM runtime, shipped as a C-ABI library
//! (`libtvm_runtime.so` / `.a`) that is a drop-in replacement for TVM's own.
//!
//! Layers point one way: [`abi`] (the `#[repr(C)]` types shared with C) ← [`runtime`] (objects,
//! NDArray, packed functions, registry, devices, modules, backend API) ← [`graph`] (the graph
//! executor), [`vm`] (the Relax VM), [`lm`] (what language models call by name) ← [`ffi`] (the
//! C boundary that converts pointers and catches panics). A lower layer
//! never names a higher one: what the runtime must reach above it (the factory's blob loader,
//! the executor's globals, the exported functions kernels call back into) is installed by
//! [`init`], the one place that knows every layer.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;
pub mod ffi;
pub mod graph;
pub mod lm;
pub mod rpc;
pub mod runtime;
pub mod vm;

/// Install the runtime's built-in globals, then the layers above the runtime into it: the graph
/// executor's blob loaders and globals, and the C-API functions kernel libraries call back into.
/// Idempotent and cheap after the first call. Every exported C function calls it; Rust programs
/// using the crate directly call it once before using the global registry or loading modules.
pub fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        runtime::builtins::install();
        runtime::module::cxx::install();
        runtime::module::library::install_context_functions(ffi::context::context_functions());
        graph::install();
        vm::install();
        lm::install();
        ffi::rpc::install();
    });
}

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
