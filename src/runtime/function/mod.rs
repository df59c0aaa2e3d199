//! Values and functions: `Value` (and tvm-ffi's `Any`), `Args`, `PackedFunc`, `Module`, the
//! registry of globals and tvm-ffi's error objects.

pub mod error_object;
pub mod packed;
pub mod registry;
