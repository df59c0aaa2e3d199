//! Our graph-executor C API (`TVMGraphExecutor*`) and aliases with the names of TVM's microTVM
//! CRT graph executor, so code written for either links against this library. By concept:
//! the handle ([`handle`]), creating and freeing ([`lifecycle`]), weights, inputs, the run and
//! outputs ([`io`]), what the graph takes and gives ([`info`]), profiling and the schedule
//! ([`debug`]) and the CRT names ([`crt`]).
//!
//! Ownership and threading: an executor is created by `TVMGraphExecutorCreate*` and owned by
//! the caller until `TVMGraphExecutorFree`; it keeps its module and weights alive. One executor
//! serves one thread at a time: a call while another thread is inside a call on the same
//! executor fails (it does not block). Create one executor per thread; executors created from
//! one factory share kernels and weights. Tensors passed in are borrowed for the call only,
//! except with the zero-copy calls, where the caller keeps the memory alive while the executor
//! uses it. Names and shapes returned by the info calls live as long as the executor. The
//! asynchronous phases (`...Async`, `TVMGraphExecutorSynchronize`) are in [`phases`]; bucketed
//! executors ([`buckets`]) and request pipelines ([`pipeline`]) are the same handles' other kinds.

// In the order a user meets them, which is also the order of the generated header.
mod handle;

mod lifecycle;

mod io;

mod info;

mod debug;

mod crt;

pub mod phases;

pub mod buckets;

pub mod pipeline;

pub use crt::*;
pub use debug::*;
pub use handle::*;
pub use info::*;
pub use io::*;
pub use lifecycle::*;
