//! The backend API that compiled kernels call: parallel launch, barriers, workspaces.
//!
//! Parallel launch currently runs on the calling thread with `num_task = 1` (TVM's own
//! single-thread path, which kernels partition for correctly), but unlike TVM a failing task
//! makes the launch fail. Workspaces come straight from the device API (64-byte aligned).

use super::device::device_api;
use super::error::{error_from_callee, last_error_generation, Error, Result};
use crate::abi::{DLDataType, DLDevice, FTVMParallelLambda, TVMParallelGroupEnv};
use std::ffi::{c_int, c_void};

/// Run a parallel lambda; returns an error carrying the failing task's message.
pub fn parallel_launch(f: FTVMParallelLambda, cdata: *mut c_void, num_task: i32) -> Result<()> {
    let f = f.ok_or_else(|| Error::value("TVMBackendParallelLaunch: `flambda` is NULL"))?;
    if num_task < 0 {
        return Err(Error::value(format!("TVMBackendParallelLaunch: negative num_task {num_task}")));
    }
    let mut env = TVMParallelGroupEnv { sync_handle: std::ptr::null_mut(), num_task: 1 };
    let generation = last_error_generation();
    // SAFETY: `f` follows the FTVMParallelLambda contract; `env` outlives the call.
    let rc = unsafe { f(0, &mut env, cdata) };
    if rc != 0 {
        let e = error_from_callee(generation, || Error::runtime("task returned an error without a message"));
        return Err(Error::raw(format!("Task 0 error: {e}")));
    }
    Ok(())
}

/// Barrier across the tasks of one launch.
pub fn parallel_barrier(task_id: c_int, penv: *mut TVMParallelGroupEnv) -> Result<()> {
    if penv.is_null() {
        return Err(Error::value("TVMBackendParallelBarrier: `penv` is NULL"));
    }
    // SAFETY: non-NULL `penv` is the environment of a running launch (kernel contract).
    let n = unsafe { (*penv).num_task };
    if task_id < 0 || task_id >= n {
        return Err(Error::index(format!("TVMBackendParallelBarrier: task {task_id} of {n}")));
    }
    // A single-task group has nobody to wait for.
    if n == 1 {
        return Ok(());
    }
    Err(Error::internal(format!("TVMBackendParallelBarrier: group of {n} tasks not launched by this runtime")))
}

fn device(device_type: c_int, device_id: c_int) -> DLDevice {
    DLDevice { device_type, device_id }
}

/// Temporary memory for a kernel.
pub fn alloc_workspace(
    device_type: c_int,
    device_id: c_int,
    nbytes: u64,
    dtype_code_hint: c_int,
    dtype_bits_hint: c_int,
) -> Result<*mut c_void> {
    let n = usize::try_from(nbytes).map_err(|_| Error::value(format!("workspace of {nbytes} bytes is too large")))?;
    let dev = device(device_type, device_id);
    let hint = DLDataType::new(dtype_code_hint as u8, dtype_bits_hint as u8, 1);
    device_api(device_type)?.alloc_workspace(dev, n, hint)
}

/// Free memory from [`alloc_workspace`].
pub fn free_workspace(device_type: c_int, device_id: c_int, ptr: *mut c_void) -> Result<()> {
    device_api(device_type)?.free_workspace(device(device_type, device_id), ptr)
}

/// Frontend hooks accepted by `TVMBackendRegisterEnvCAPI`.
pub mod env_capi {
    use super::*;
    use std::sync::atomic::{AtomicPtr, Ordering};

    pub static PY_ERR_CHECK_SIGNALS: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
    pub static PY_INC_REF: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
    pub static PY_DEC_REF: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
    pub static PY_GIL_STATE_ENSURE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
    pub static PY_GIL_STATE_RELEASE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

    pub fn register(name: &str, ptr: *mut c_void) -> Result<()> {
        let slot = match name {
            "PyErr_CheckSignals" => &PY_ERR_CHECK_SIGNALS,
            "Py_IncRef" => &PY_INC_REF,
            "Py_DecRef" => &PY_DEC_REF,
            "PyGILState_Ensure" => &PY_GIL_STATE_ENSURE,
            "PyGILState_Release" => &PY_GIL_STATE_RELEASE,
            _ => return Err(Error::value(format!("TVMBackendRegisterEnvCAPI: unknown C API `{name}`"))),
        };
        slot.store(ptr, Ordering::Release);
        Ok(())
    }

    /// Call a registered `void (*)(void*)` refcount hook on `obj`, if registered.
    pub fn call_ref_hook(slot: &AtomicPtr<c_void>, obj: *mut c_void) {
        let p = slot.load(Ordering::Acquire);
        if !p.is_null() && !obj.is_null() {
            // SAFETY: the frontend registered a `void(void*)` function under this name.
            let f: unsafe extern "C" fn(*mut c_void) = unsafe { std::mem::transmute(p) };
            // SAFETY: `obj` is the frontend's object.
            unsafe { f(obj) };
        }
    }
}
