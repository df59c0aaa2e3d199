//! Weights, inputs, the run and outputs: copies in and out with checks, and the zero-copy
//! calls that use the caller's memory.

use super::handle::{handle, TVMGraphExecutor};
use crate::abi::DLTensor;
use crate::ffi::ptr::slice;
use crate::graph::{Executor, Key};
use crate::runtime::dlpack::tensor_ref::TensorRef;
use std::ffi::{c_char, c_int, c_void};

/// Copy weights from a params blob (TVM's format) into the matching inputs.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `data` must be readable
/// for `size` bytes (NULL allowed when `size` is 0) during the call.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorLoadParams(
    g: *mut TVMGraphExecutor,
    data: *const c_void,
    size: usize,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorLoadParams", {
        let g = handle(g)?;
        // SAFETY: `data` holds `size` bytes (caller contract).
        let blob = unsafe { slice(data as *const u8, size, "data")? };
        g.front.lock()?.load_params(blob)?;
        Ok(0)
    })
}

/// Copy `data` into the input named `name` (dtype and shape must match).
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `name` must be NULL (an
/// error) or a NUL-terminated string; `data` NULL (an error) or a valid `DLTensor` during the call.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorSetInput(
    g: *mut TVMGraphExecutor,
    name: *const c_char,
    data: *const DLTensor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorSetInput", {
        // SAFETY: the tensor is valid for the call (caller contract).
        let data = unsafe { TensorRef::from_ptr(data, "data")? };
        let g = handle(g)?;
        // SAFETY: C string valid for the call (caller contract).
        let name = unsafe { c_str!(name)? };
        let mut e = g.front.lock()?;
        let i = e.input(Key::Name(name))?;
        e.set_input(i, data)?;
        Ok(0)
    })
}

/// Copy `data` into input `index` (dtype and shape must match).
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `data` must be NULL (an
/// error) or a valid `DLTensor` during the call.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorSetInputByIndex(
    g: *mut TVMGraphExecutor,
    index: i32,
    data: *const DLTensor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorSetInputByIndex", {
        // SAFETY: the tensor is valid for the call (caller contract).
        let data = unsafe { TensorRef::from_ptr(data, "data")? };
        let g = handle(g)?;
        let mut e = g.front.lock()?;
        let i = e.input(Key::Index(index.into()))?;
        e.set_input(i, data)?;
        Ok(0)
    })
}

/// Use the caller's memory for input `index` (64-byte aligned; kept alive by the caller).
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `data` must be NULL (an
/// error) or a valid `DLTensor` whose memory stays valid for reads and writes, and is written by no
/// one else, until the input is set again or the executor is freed.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorSetInputZeroCopy(
    g: *mut TVMGraphExecutor,
    index: i32,
    data: *const DLTensor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorSetInputZeroCopy", {
        // SAFETY: the tensor is valid for the call (caller contract).
        let data = unsafe { TensorRef::from_ptr(data, "data")? };
        let g = handle(g)?;
        let mut e = g.front.plain("TVMGraphExecutorSetInputZeroCopy")?.lock_as::<Executor>()?;
        let i = e.input(Key::Index(index.into()))?;
        // SAFETY: the caller keeps the memory alive while the executor uses it (C contract).
        unsafe { e.set_input_zero_copy(i, data)? };
        Ok(0)
    })
}

/// Write output `index` straight into the caller's memory on every run.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `data` must be NULL (an
/// error) or a valid `DLTensor` whose memory stays valid for reads and writes until the output is
/// set again or the executor is freed; no one else may read or write it during a run.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorSetOutputZeroCopy(
    g: *mut TVMGraphExecutor,
    index: i32,
    data: *const DLTensor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorSetOutputZeroCopy", {
        // SAFETY: the tensor is valid for the call (caller contract).
        let data = unsafe { TensorRef::from_ptr(data, "data")? };
        let g = handle(g)?;
        let mut e = g.front.plain("TVMGraphExecutorSetOutputZeroCopy")?.lock_as::<Executor>()?;
        let i = e.output(Key::Index(index.into()))?;
        // SAFETY: the caller keeps the memory alive while the executor uses it (C contract).
        unsafe { e.set_output_zero_copy(i, data)? };
        Ok(0)
    })
}

/// Run the whole graph once on the calling thread.
///
/// # Safety
/// None: `g` is only looked up among live executors (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorRun(g: *mut TVMGraphExecutor) -> c_int {
    ffi_boundary!("TVMGraphExecutorRun", {
        handle(g)?.front.run()?;
        Ok(0)
    })
}

/// Copy output `index` into `out` (dtype and shape must match).
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or a valid `DLTensor` during the call.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetOutput(g: *mut TVMGraphExecutor, index: i32, out: *mut DLTensor) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetOutput", {
        // SAFETY: the tensor is valid for the call (caller contract).
        let out = unsafe { TensorRef::from_ptr(out, "out")? };
        let g = handle(g)?;
        let e = g.front.lock()?;
        let i = e.output(Key::Index(index.into()))?;
        e.get_output_into(i, out)?;
        Ok(0)
    })
}
