//! Modules and loading: import blobs, library modules and their kernels, both generations'
//! libraries, the ELF check before `dlopen`, C++ modules, constants, the lookups that reach
//! the registry, and the time evaluator over module functions.

pub mod blob;
pub mod const_loader;
pub mod cxx;
pub mod dso;
pub mod elf;
pub mod library;
pub mod lookup;
pub mod opencl;
pub mod static_library;
pub mod time_evaluator;
pub mod tvm_ffi_library;
