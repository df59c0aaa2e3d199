//! The runtime core in safe Rust where possible: objects, NDArray, packed functions and the
//! registry, devices, modules, the backend API for kernels.
//!
//! A room per concern, listed bottom-up as in the map that opens docs/ARCHITECTURE.md: a room
//! names only rooms above it (`tests/layers.rs` checks the code against the map).

pub mod base;

pub mod object;

pub mod dlpack;

pub mod device;

pub mod threads;

pub mod container;

pub mod tensor;

pub mod function;

pub mod reflection;

pub mod collections;

pub mod module;

pub mod extra;

pub(crate) mod builtins;

pub use base::error::{Error, Result};
pub use function::packed::{Args, Module, ModuleNode, PackedFunc, Value};
pub use tensor::ndarray::NDArray;
