//! `libtvm_ffi.so`: the whole runtime (every `TVM*` / `TVMFFI*` C function and tvm-ffi's C++
//! symbols, all defined in the `tvm-runtime` crate) linked into a library that carries tvm-ffi's
//! name and SONAME. A cdylib exports the `#[no_mangle]` functions of the crates it links.

pub use tvm_runtime::init;
