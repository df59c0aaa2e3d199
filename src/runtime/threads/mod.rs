//! Thread pools (`TVMBackendParallelLaunch`), the pacer of the default pool, per-thread
//! workspaces, and the backend API kernels call over them.

pub mod backend;
pub mod pacer;
pub mod pool;
pub mod workspace;
