//! The names of TVM's microTVM CRT graph executor, as aliases of the `TVMGraphExecutor*` calls,
//! so code written for the CRT links against this library.
//!
//! Each alias is one forwarding call inside its own boundary: the call it forwards to already
//! stores its errors, so an alias passes that call's status through (-1 keeps the stored
//! message), or returns the value the call wrote ([`value_or_minus_one`]).

use super::handle::TVMGraphExecutor;
use super::info::{TVMGraphExecutorGetInputIndex, TVMGraphExecutorGetNumInputs, TVMGraphExecutorGetNumOutputs};
use super::io::{TVMGraphExecutorGetOutput, TVMGraphExecutorLoadParams, TVMGraphExecutorRun, TVMGraphExecutorSetInput};
use super::lifecycle::{TVMGraphExecutorCreate, TVMGraphExecutorFree};
use crate::abi::{DLDevice, DLTensor};
use crate::runtime::base::error::{set_last_error, Error};
use std::ffi::{c_char, c_int, c_void};

/// CRT name of `TVMGraphExecutorCreate` (uses `devices[0]`).
///
/// # Safety
/// As `TVMGraphExecutorCreate` with one device: `devices` must point to at least one device.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_Create(
    sym_json: *const c_char,
    module_handle: *mut c_void,
    devices: *const DLDevice,
    executor: *mut *mut TVMGraphExecutor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutor_Create", {
        // SAFETY: the caller's arguments, forwarded (same contract).
        Ok(unsafe { TVMGraphExecutorCreate(sym_json, module_handle, devices, 1, executor) })
    })
}

/// CRT name: index of an input, or -1 (with the error set) when unknown.
///
/// # Safety
/// As `TVMGraphExecutorGetInputIndex`: `name` must be NULL (an error) or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_GetInputIndex(executor: *mut TVMGraphExecutor, name: *const c_char) -> c_int {
    ffi_boundary!("TVMGraphExecutor_GetInputIndex", {
        // SAFETY: the caller's arguments, forwarded; `i` is a valid out-pointer.
        Ok(value_or_minus_one(|i| unsafe { TVMGraphExecutorGetInputIndex(executor, name, i) }))
    })
}

/// CRT name: number of inputs, or -1 on error.
///
/// # Safety
/// None: `executor` is only looked up among live executors (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_GetNumInputs(executor: *mut TVMGraphExecutor) -> c_int {
    ffi_boundary!("TVMGraphExecutor_GetNumInputs", {
        // SAFETY: the caller's handle, forwarded; `n` is a valid out-pointer.
        Ok(value_or_minus_one(|n| unsafe { TVMGraphExecutorGetNumInputs(executor, n) }))
    })
}

/// CRT name: number of outputs, or -1 on error.
///
/// # Safety
/// None: `executor` is only looked up among live executors (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_GetNumOutputs(executor: *mut TVMGraphExecutor) -> c_int {
    ffi_boundary!("TVMGraphExecutor_GetNumOutputs", {
        // SAFETY: the caller's handle, forwarded; `n` is a valid out-pointer.
        Ok(value_or_minus_one(|n| unsafe { TVMGraphExecutorGetNumOutputs(executor, n) }))
    })
}

/// CRT name of `TVMGraphExecutorSetInput` (copies, with checks; errors go to the last error).
///
/// # Safety
/// As `TVMGraphExecutorSetInput`.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_SetInput(
    executor: *mut TVMGraphExecutor,
    name: *const c_char,
    data_in: *mut DLTensor,
) {
    ffi_boundary!("TVMGraphExecutor_SetInput", {
        // SAFETY: the caller's arguments, forwarded (same contract).
        unsafe { TVMGraphExecutorSetInput(executor, name, data_in) };
        Ok(())
    })
}

/// CRT name of `TVMGraphExecutorGetOutput`.
///
/// # Safety
/// As `TVMGraphExecutorGetOutput`.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_GetOutput(
    executor: *mut TVMGraphExecutor,
    index: i32,
    out: *mut DLTensor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutor_GetOutput", {
        // SAFETY: the caller's arguments, forwarded (same contract).
        Ok(unsafe { TVMGraphExecutorGetOutput(executor, index, out) })
    })
}

/// CRT name of `TVMGraphExecutorLoadParams`.
///
/// # Safety
/// As `TVMGraphExecutorLoadParams`: `param_blob` must be readable for `param_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_LoadParams(
    executor: *mut TVMGraphExecutor,
    param_blob: *const c_char,
    param_size: u32,
) -> c_int {
    ffi_boundary!("TVMGraphExecutor_LoadParams", {
        // SAFETY: the caller's arguments, forwarded (same contract).
        Ok(unsafe { TVMGraphExecutorLoadParams(executor, param_blob as *const c_void, param_size as usize) })
    })
}

/// CRT name of `TVMGraphExecutorRun` (errors go to the last error).
///
/// # Safety
/// None: `executor` is only looked up among live executors (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_Run(executor: *mut TVMGraphExecutor) {
    ffi_boundary!("TVMGraphExecutor_Run", {
        // SAFETY: the caller's handle, forwarded.
        unsafe { TVMGraphExecutorRun(executor) };
        Ok(())
    })
}

/// CRT name: frees `*executor` and sets it to NULL.
///
/// # Safety
/// `executor` must be NULL (an error) or valid for reads and writes of one handle; the handle it
/// holds is checked as in `TVMGraphExecutorFree`.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_Release(executor: *mut *mut TVMGraphExecutor) -> c_int {
    ffi_boundary!("TVMGraphExecutor_Release", {
        if executor.is_null() {
            set_last_error(&Error::value("argument `executor` is NULL"));
            return Ok(-1);
        }
        // SAFETY: checked non-NULL; `*executor` is the caller's handle.
        let rc = unsafe { TVMGraphExecutorFree(*executor) };
        if rc == 0 {
            // SAFETY: as above.
            unsafe { *executor = std::ptr::null_mut() };
        }
        Ok(rc)
    })
}

/// The value a call writes to its out-parameter, or -1 when the call fails (its error stored):
/// the CRT names return counts and indices directly.
fn value_or_minus_one(call: impl FnOnce(&mut c_int) -> c_int) -> c_int {
    let mut value = -1;
    if call(&mut value) == 0 {
        value
    } else {
        -1
    }
}
