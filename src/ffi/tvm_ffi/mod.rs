//! tvm-ffi's C API (`tvm/ffi/c_api.h`, `tvm/ffi/extra/c_env_api.h`) over the same objects:
//! objects, functions, errors and strings; the environment (streams, allocators); tensors and
//! DLPack; the type registry and reflection.

pub mod c_api;
pub mod env;
pub mod tensor;
pub mod types;
