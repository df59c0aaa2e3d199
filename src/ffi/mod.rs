//! The C ABI and nothing else: pointers become Rust types at the door, then the core does the
//! work. Every export runs inside `ffi_boundary!`, which catches panics and turns errors into
//! the return type's error value with the message stored for `TVMGetLastError`.

#[macro_use]
mod boundary;
pub mod array;
pub mod backend;
pub mod buckets;
pub mod device;
pub mod error;
pub mod func;
pub mod graph_executor;
pub mod graph_phases;
pub mod module;
pub mod object;
pub mod pipeline;
mod ptr;
pub mod rpc;
pub mod tvm_ffi;
pub mod tvm_ffi_env;
pub mod tvm_ffi_tensor;
pub mod tvm_ffi_types;

pub(crate) use boundary::*;
