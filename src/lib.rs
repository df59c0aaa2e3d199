//! A Rust implementation of the Apache TVM runtime, shipped as a C-ABI library
//! (`libtvm_runtime.so` / `.a`) that is a drop-in replacement for TVM's own.
//!
//! Layers: [`abi`] holds the `#[repr(C)]` types shared with C; [`runtime`] is the core (objects,
//! NDArray, packed functions, registry, devices, modules, backend API); `ffi` is the thin C
//! boundary that converts pointers and catches panics.

#![allow(clippy::missing_safety_doc)]

pub mod abi;
#[macro_use]
pub mod runtime;
pub mod ffi;
