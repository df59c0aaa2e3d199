//! The runtime core in safe Rust where possible: objects, NDArray, packed functions and the
//! registry, devices, modules, the backend API for kernels.

pub mod backend;
pub mod blob;
pub(crate) mod builtins;
pub mod byteio;
pub mod const_loader;
pub mod container;
pub(crate) mod container_globals;
pub mod cptr;
pub mod cxx_module;
pub mod device;
pub mod dso;
pub mod dtype;
pub mod elf;
pub mod env_capi;
pub mod error;
pub mod ffi_dtype;
pub mod ffi_error;
pub mod ffi_globals;
pub mod ffi_library;
pub mod handles;
pub mod library;
pub mod live;
pub mod module;
pub mod ndarray;
pub mod object;
pub mod pacer;
pub mod packed;
pub mod params;
pub mod reflection;
pub mod registry;
pub mod tensor;
pub mod threading;
pub mod time_evaluator;
pub mod workers;
pub mod workspace;

pub use error::{Error, Result};
pub use ndarray::NDArray;
pub use packed::{Args, Module, ModuleNode, PackedFunc, Value};
