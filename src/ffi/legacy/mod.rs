//! TVM 0.18's C API (`c_runtime_api.h`, `c_backend_api.h`): arrays and DLPack, the backend
//! calls kernels make, devices and streams, the last error, packed functions and the registry,
//! modules, objects.

pub mod array;
pub mod backend;
pub mod device;
pub mod error;
pub mod func;
pub mod module;
pub mod object;
