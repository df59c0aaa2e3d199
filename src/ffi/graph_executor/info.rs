//! What the graph takes and gives: counts, indices by name, and each input's and output's
//! name, shape, dtype and size.

use super::handle::{handle, TVMGraphExecutor};
use crate::abi::DLDataType;
use crate::ffi::ptr::out_param;
use crate::graph::{Key, TensorInfo};
use std::ffi::{c_char, c_int, CString};

/// Description of an input or output tensor. Pointers live as long as the executor. For a
/// bucketed executor the shape is the current request's (the last `SetInput` of that input, the
/// last `Run` for an output; the largest bucket's before any): the values behind `shape` follow
/// it, the pointer stays valid.
#[repr(C)]
pub struct TVMTensorInfo {
    /// Input node name, or output name (`node` or `node:k` for output k > 0 of a node).
    pub name: *const c_char,
    pub ndim: i32,
    pub shape: *const i64,
    pub dtype: DLDataType,
    /// Bytes of the tensor's data.
    pub nbytes: usize,
    /// Non-zero for inputs that are weights (params) rather than data.
    pub is_param: i32,
}

/// Number of graph inputs, weights included (indices for the by-index calls).
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetNumInputs(g: *const TVMGraphExecutor, out: *mut i32) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetNumInputs", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        *out = handle(g)?.front.lock()?.num_inputs() as i32;
        Ok(0)
    })
}

/// Number of graph outputs.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetNumOutputs(g: *const TVMGraphExecutor, out: *mut i32) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetNumOutputs", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        *out = handle(g)?.front.lock()?.num_outputs() as i32;
        Ok(0)
    })
}

/// Index of the input named `name`; an unknown name is an error listing the inputs.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `name` must be NULL (an
/// error) or a NUL-terminated string; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetInputIndex(
    g: *const TVMGraphExecutor,
    name: *const c_char,
    out: *mut i32,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetInputIndex", {
        // SAFETY: out-pointer and C string valid for the call (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        let name = unsafe { c_str!(name)? };
        *out = g.front.lock()?.input(Key::Name(name))? as i32;
        Ok(0)
    })
}

/// Index of the output named `name` (`node` or `node:k`); unknown names are an error.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `name` must be NULL (an
/// error) or a NUL-terminated string; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetOutputIndex(
    g: *const TVMGraphExecutor,
    name: *const c_char,
    out: *mut i32,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetOutputIndex", {
        // SAFETY: out-pointer and C string valid for the call (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        let name = unsafe { c_str!(name)? };
        *out = g.front.lock()?.output(Key::Name(name))? as i32;
        Ok(0)
    })
}

/// Name, shape, dtype and size of input `index`, and whether it is a weight.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or writable; its pointers must not be used after the executor is freed.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetInputInfo(
    g: *const TVMGraphExecutor,
    index: i32,
    out: *mut TVMTensorInfo,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetInputInfo", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        let e = g.front.lock()?;
        let i = e.input(Key::Index(index.into()))?;
        *out = c_info(&e.input_info(i)?, &g.input_names[i]);
        Ok(0)
    })
}

/// Name, shape, dtype and size of output `index`.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or writable; its pointers must not be used after the executor is freed.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetOutputInfo(
    g: *const TVMGraphExecutor,
    index: i32,
    out: *mut TVMTensorInfo,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetOutputInfo", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        let e = g.front.lock()?;
        let i = e.output(Key::Index(index.into()))?;
        *out = c_info(&e.output_info(i)?, &g.output_names[i]);
        Ok(0)
    })
}

/// The C view of `info`, with `name` (owned by the executor) as its name. The shape points into
/// the plan, which the executor keeps alive.
fn c_info(info: &TensorInfo<'_>, name: &CString) -> TVMTensorInfo {
    TVMTensorInfo {
        name: name.as_ptr(),
        ndim: info.shape.len() as i32,
        shape: crate::runtime::base::cptr::dims_ptr(info.shape),
        dtype: info.dtype,
        nbytes: info.nbytes,
        is_param: info.is_param as i32,
    }
}
