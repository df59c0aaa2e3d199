//! The backend API that compiled kernels call: parallel launch, barriers, workspaces.
//!
//! Parallel launches run on the calling thread's current [`pool::ThreadPool`]; unlike
//! TVM, a failing task makes the launch fail. CPU workspaces come from a per-thread pool;
//! other devices use their device API.

use crate::abi::{DLDataType, DLDevice, FTVMParallelLambda, TVMParallelGroupEnv};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::device::device_api;
use crate::runtime::{threads::pool, threads::workspace};
use std::ffi::{c_int, c_void};

/// Run a parallel lambda on this thread's current pool; a failing task fails the launch.
pub fn parallel_launch(f: FTVMParallelLambda, cdata: *mut c_void, num_task: i32) -> Result<()> {
    pool::current_pool().launch(f, cdata, num_task)
}

/// Barrier across the tasks of one launch.
///
/// # Safety
/// As for [`pool::barrier`]: `penv` must be NULL or the environment that a launch still
/// running passed to the calling task, and `task_id` must be that task's own id.
pub unsafe fn parallel_barrier(task_id: c_int, penv: *mut TVMParallelGroupEnv) -> Result<()> {
    // SAFETY: this function's contract is `barrier`'s.
    unsafe { pool::barrier(task_id, penv) }
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
    if device_type == crate::abi::device_type::CPU {
        return workspace::alloc_workspace(n);
    }
    let dev = device(device_type, device_id);
    let hint = DLDataType::new(dtype_code_hint as u8, dtype_bits_hint as u8, 1);
    device_api(device_type)?.alloc_workspace(dev, n, hint)
}

/// Free memory from [`alloc_workspace`].
///
/// # Safety
/// `ptr` must come from [`alloc_workspace`] with the same device type and id, on this thread,
/// and not be freed yet; nothing may use the memory afterwards. (For CPU the pointer is looked
/// up in the thread's pool, so a foreign pointer is reported as an error.)
pub unsafe fn free_workspace(device_type: c_int, device_id: c_int, ptr: *mut c_void) -> Result<()> {
    if device_type == crate::abi::device_type::CPU {
        return workspace::free_workspace(ptr);
    }
    // SAFETY: forwarded contract.
    unsafe { device_api(device_type)?.free_workspace(device(device_type, device_id), ptr) }
}
