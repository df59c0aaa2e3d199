//! `#[repr(C)]` types shared with C: DLPack structs, `TVMValue`, type codes.
//!
//! Layouts follow DLPack (ABI 1, as bundled with TVM 0.18) and TVM's
//! `c_runtime_api.h` / `c_backend_api.h`, and tvm-ffi's `TVMFFIAny` for the kernels of its releases; `layout_tests` pins sizes and offsets.

mod dlpack;
mod ffi_any;
mod value;

pub use dlpack::*;
pub use ffi_any::*;
pub use value::*;

#[cfg(test)]
mod layout_tests;
