//! The C ABI and nothing else: pointers become Rust types at the door, then the core does the
//! work. Every export runs inside `ffi_boundary!`, which catches panics and turns errors into
//! the return type's error value with the message stored for `TVMGetLastError`.

#[macro_use]
mod boundary;
pub mod context;
pub mod graph_executor;
pub mod legacy;
mod ptr;
pub mod rpc;
pub mod tvm_ffi;

pub(crate) use boundary::*;
