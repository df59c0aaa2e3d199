//! Raw device memory, copies and streams.

use crate::abi::{DLDataType, DLDevice, DLTensor};
use crate::ffi::ptr::{out_param, slice};
use crate::runtime::base::error::Error;
use crate::runtime::device::{device_api, ALLOC_ALIGNMENT};
use crate::runtime::dlpack::dtype::data_size;
use crate::runtime::dlpack::tensor_ref::TensorRef;
use std::ffi::{c_char, c_int, c_void};

fn dev(device_type: c_int, device_id: c_int) -> DLDevice {
    DLDevice { device_type, device_id }
}

/// Allocate `nbytes` on `dev` aligned to `alignment` (a power of two). Free with
/// `TVMDeviceFreeDataSpace`.
///
/// # Safety
/// `out_data` must be NULL (an error) or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn TVMDeviceAllocDataSpace(
    dev: DLDevice,
    nbytes: usize,
    alignment: usize,
    type_hint: DLDataType,
    out_data: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMDeviceAllocDataSpace", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out_data = unsafe { out_param(out_data, "out_data")? };
        let p = device_api(dev.device_type)?.alloc_data_space(dev, nbytes, alignment, type_hint)?;
        *out_data = p;
        Ok(0)
    })
}

/// Allocate room for a tensor of `shape`/`dtype`. `mem_scope` NULL, "" or "global" is flat
/// memory; other scopes are not supported on these devices.
///
/// # Safety
/// `shape` must point to `ndim` readable `int64_t`s (NULL allowed when `ndim` is 0); `mem_scope`
/// must be NULL or a NUL-terminated string; `out_data` must be NULL (an error) or valid for writing
/// one pointer.
#[no_mangle]
pub unsafe extern "C" fn TVMDeviceAllocDataSpaceWithScope(
    dev: DLDevice,
    ndim: c_int,
    shape: *const i64,
    dtype: DLDataType,
    mem_scope: *const c_char,
    out_data: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMDeviceAllocDataSpaceWithScope", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out_data = unsafe { out_param(out_data, "out_data")? };
        let scope = if mem_scope.is_null() { "" } else { unsafe { c_str!(mem_scope)? } };
        if !matches!(scope, "" | "global") {
            return Err(Error::unsupported(format!("memory scope `{scope}` is not supported on {dev}")));
        }
        let n = usize::try_from(ndim).map_err(|_| Error::value(format!("negative ndim {ndim}")))?;
        // SAFETY: `shape` holds `ndim` values (caller contract).
        let shape = unsafe { slice(shape, n, "shape")? };
        let nbytes = data_size(shape, dtype)?;
        let align = ALLOC_ALIGNMENT.max(dtype.element_bytes());
        let p = device_api(dev.device_type)?.alloc_data_space(dev, nbytes, align, dtype)?;
        *out_data = p;
        Ok(0)
    })
}

/// Free memory from `TVMDeviceAllocDataSpace*`.
///
/// # Safety
/// `ptr` must be NULL or memory from `TVMDeviceAllocDataSpace` or
/// `TVMDeviceAllocDataSpaceWithScope` for the same `dev`, not freed yet; no one may use it
/// afterwards (queued device work on it must be complete or ordered before the free).
#[no_mangle]
pub unsafe extern "C" fn TVMDeviceFreeDataSpace(dev: DLDevice, ptr: *mut c_void) -> c_int {
    ffi_boundary!("TVMDeviceFreeDataSpace", {
        // SAFETY: the caller frees memory it got from TVMDeviceAllocDataSpace* (C contract).
        unsafe { device_api(dev.device_type)?.free_data_space(dev, ptr)? };
        Ok(0)
    })
}

/// Copy between compact tensors of equal byte size (honouring both byte offsets), ordered on
/// `stream`, without synchronizing. The non-CPU side's device API does the copy.
///
/// # Safety
/// `from` and `to` must each be NULL (an error) or a valid `DLTensor` (shape holding `ndim` values,
/// data valid for the bytes it describes on its device), and stay valid until the copy queued on
/// `stream` is done.
#[no_mangle]
pub unsafe extern "C" fn TVMDeviceCopyDataFromTo(from: *mut DLTensor, to: *mut DLTensor, stream: *mut c_void) -> c_int {
    ffi_boundary!("TVMDeviceCopyDataFromTo", {
        // SAFETY: valid tensors (caller contract).
        let (from, to) = unsafe { (TensorRef::from_ptr(from, "from")?, TensorRef::from_ptr(to, "to")?) };
        let d = if from.device().device_type != crate::abi::device_type::CPU { from.device() } else { to.device() };
        // SAFETY: the tensors stay valid until the copy queued on `stream` is done (C contract).
        unsafe { device_api(d.device_type)?.copy_data_from_to(from, to, stream)? };
        Ok(0)
    })
}

/// Create a stream on a device (owned handle; free with `TVMStreamFree`).
///
/// # Safety
/// `out` must be NULL (an error) or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn TVMStreamCreate(device_type: c_int, device_id: c_int, out: *mut *mut c_void) -> c_int {
    ffi_boundary!("TVMStreamCreate", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out = unsafe { out_param(out, "out")? };
        let d = dev(device_type, device_id);
        let s = device_api(device_type)?.create_stream(d)?;
        *out = s;
        Ok(0)
    })
}

/// Free a stream from `TVMStreamCreate`.
///
/// # Safety
/// None: stream handles are passed to the device API, which checks them (NULL is the default
/// stream; unknown handles are errors).
#[no_mangle]
pub unsafe extern "C" fn TVMStreamFree(device_type: c_int, device_id: c_int, stream: *mut c_void) -> c_int {
    ffi_boundary!("TVMStreamFree", {
        device_api(device_type)?.free_stream(dev(device_type, device_id), stream)?;
        Ok(0)
    })
}

/// Make `handle` the calling thread's current stream for the device.
///
/// # Safety
/// None: stream handles are passed to the device API, which checks them (NULL is the default
/// stream; unknown handles are errors).
#[no_mangle]
pub unsafe extern "C" fn TVMSetStream(device_type: c_int, device_id: c_int, handle: *mut c_void) -> c_int {
    ffi_boundary!("TVMSetStream", {
        device_api(device_type)?.set_stream(dev(device_type, device_id), handle)?;
        Ok(0)
    })
}

/// Wait until the work queued on `stream` (NULL: the default stream) is done.
///
/// # Safety
/// None: stream handles are passed to the device API, which checks them (NULL is the default
/// stream; unknown handles are errors).
#[no_mangle]
pub unsafe extern "C" fn TVMSynchronize(device_type: c_int, device_id: c_int, stream: *mut c_void) -> c_int {
    ffi_boundary!("TVMSynchronize", {
        device_api(device_type)?.stream_sync(dev(device_type, device_id), stream)?;
        Ok(0)
    })
}

/// Make `dst` wait for the work queued on `src` so far.
///
/// # Safety
/// None: stream handles are passed to the device API, which checks them (NULL is the default
/// stream; unknown handles are errors).
#[no_mangle]
pub unsafe extern "C" fn TVMStreamStreamSynchronize(
    device_type: c_int,
    device_id: c_int,
    src: *mut c_void,
    dst: *mut c_void,
) -> c_int {
    ffi_boundary!("TVMStreamStreamSynchronize", {
        device_api(device_type)?.sync_stream_from_to(dev(device_type, device_id), src, dst)?;
        Ok(0)
    })
}

/// Whether all work queued on `stream` (NULL: the default stream, always) is done: 1 or 0 in
/// `out_done`.
///
/// # Safety
/// `out_done` must be NULL (an error) or valid for writing one `int`. Stream handles are checked
/// by the device API.
#[no_mangle]
pub unsafe extern "C" fn TVMStreamQuery(
    device_type: c_int,
    device_id: c_int,
    stream: *mut c_void,
    out_done: *mut c_int,
) -> c_int {
    ffi_boundary!("TVMStreamQuery", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out_done = unsafe { out_param(out_done, "out_done")? };
        *out_done = device_api(device_type)?.stream_query(dev(device_type, device_id), stream)? as c_int;
        Ok(0)
    })
}

/// Create an event on a device: a mark in a stream that other streams and the host can wait
/// for (owned handle; free with `TVMEventFree`). An event never recorded counts as reached.
///
/// # Safety
/// `out` must be NULL (an error) or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn TVMEventCreate(device_type: c_int, device_id: c_int, out: *mut *mut c_void) -> c_int {
    ffi_boundary!("TVMEventCreate", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out = unsafe { out_param(out, "out")? };
        let e = device_api(device_type)?.create_event(dev(device_type, device_id))?;
        *out = e;
        Ok(0)
    })
}

/// Free an event from `TVMEventCreate` (NULL is a no-op). Streams already waiting on it still
/// wait for its mark.
///
/// # Safety
/// None: event handles are checked by the device API.
#[no_mangle]
pub unsafe extern "C" fn TVMEventFree(device_type: c_int, device_id: c_int, event: *mut c_void) -> c_int {
    ffi_boundary!("TVMEventFree", {
        device_api(device_type)?.free_event(dev(device_type, device_id), event)?;
        Ok(0)
    })
}

/// Mark the current end of `stream`'s queue with `event` (NULL stream: the default stream,
/// whose work is done, so the mark is reached at once). Replaces any earlier mark.
///
/// # Safety
/// None: handles are checked by the device API.
#[no_mangle]
pub unsafe extern "C" fn TVMEventRecord(
    device_type: c_int,
    device_id: c_int,
    event: *mut c_void,
    stream: *mut c_void,
) -> c_int {
    ffi_boundary!("TVMEventRecord", {
        device_api(device_type)?.record_event(dev(device_type, device_id), event, stream)?;
        Ok(0)
    })
}

/// Make work queued on `stream` after this call wait until `event`'s latest mark is reached,
/// without blocking the caller (NULL stream: the caller waits).
///
/// # Safety
/// None: handles are checked by the device API.
#[no_mangle]
pub unsafe extern "C" fn TVMStreamWaitEvent(
    device_type: c_int,
    device_id: c_int,
    stream: *mut c_void,
    event: *mut c_void,
) -> c_int {
    ffi_boundary!("TVMStreamWaitEvent", {
        device_api(device_type)?.stream_wait_event(dev(device_type, device_id), stream, event)?;
        Ok(0)
    })
}

/// Block until `event`'s latest mark is reached.
///
/// # Safety
/// None: event handles are checked by the device API.
#[no_mangle]
pub unsafe extern "C" fn TVMEventSynchronize(device_type: c_int, device_id: c_int, event: *mut c_void) -> c_int {
    ffi_boundary!("TVMEventSynchronize", {
        device_api(device_type)?.event_sync(dev(device_type, device_id), event)?;
        Ok(0)
    })
}

/// Whether `event`'s latest mark is reached: 1 or 0 in `out_done`.
///
/// # Safety
/// `out_done` must be NULL (an error) or valid for writing one `int`. Event handles are checked
/// by the device API.
#[no_mangle]
pub unsafe extern "C" fn TVMEventQuery(
    device_type: c_int,
    device_id: c_int,
    event: *mut c_void,
    out_done: *mut c_int,
) -> c_int {
    ffi_boundary!("TVMEventQuery", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out_done = unsafe { out_param(out_done, "out_done")? };
        *out_done = device_api(device_type)?.event_query(dev(device_type, device_id), event)? as c_int;
        Ok(0)
    })
}
