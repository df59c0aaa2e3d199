//! NDArrays and DLPack exchange.

use crate::abi::{DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor};
use crate::ffi::ptr::{out_param, slice, slice_mut};
use crate::runtime::base::error::Error;
use crate::runtime::dlpack::tensor_ref::TensorRef;
use crate::runtime::object::header::{release, ObjectHeader};
use crate::runtime::tensor::ndarray::{self, NDArray};
use std::ffi::{c_int, c_void};

/// Allocate an array (64-byte aligned data, uninitialised). `*out` is an owned handle that
/// points at the array's `DLTensor`.
///
/// # Safety
/// `shape` must point to `ndim` readable `int64_t`s (NULL allowed when `ndim` is 0); `out` must be
/// NULL (an error) or valid for writing one handle.
#[no_mangle]
pub unsafe extern "C" fn TVMArrayAlloc(
    shape: *const i64,
    ndim: c_int,
    dtype_code: c_int,
    dtype_bits: c_int,
    dtype_lanes: c_int,
    device_type: c_int,
    device_id: c_int,
    out: *mut *mut DLTensor,
) -> c_int {
    ffi_boundary!("TVMArrayAlloc", {
        // SAFETY: out-pointer, and `shape` holds `ndim` values (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let n = usize::try_from(ndim).map_err(|_| Error::value(format!("negative ndim {ndim}")))?;
        let shape = unsafe { slice(shape, n, "shape")? };
        let code = u8::try_from(dtype_code).map_err(|_| Error::value(format!("invalid dtype code {dtype_code}")))?;
        let bits = u8::try_from(dtype_bits).map_err(|_| Error::value(format!("invalid dtype bits {dtype_bits}")))?;
        let lanes =
            u16::try_from(dtype_lanes).map_err(|_| Error::value(format!("invalid dtype lanes {dtype_lanes}")))?;
        let dtype = DLDataType::new(code, bits, lanes);
        let arr = NDArray::empty(shape, dtype, DLDevice { device_type, device_id })?;
        *out = arr.as_dltensor_ptr();
        let _ = arr.into_raw(); // the caller owns this reference now
        Ok(0)
    })
}

/// Release an array handle (NULL is a no-op); memory is freed with the last reference.
///
/// # Safety
/// `handle` must be NULL or an array handle of this runtime (the `DLTensor` inside a live
/// container, not a bare `DLTensor`) holding one reference that the caller owns and gives up.
#[no_mangle]
pub unsafe extern "C" fn TVMArrayFree(handle: *mut DLTensor) -> c_int {
    ffi_boundary!("TVMArrayFree", {
        if handle.is_null() {
            return Ok(0);
        }
        // SAFETY: an array handle points into a live container whose reference the caller owns.
        unsafe { release(NDArray::header_of_handle(handle)?) };
        Ok(0)
    })
}

/// Copy `nbytes` host bytes into the array (must equal its byte size), then synchronize.
///
/// # Safety
/// `handle` must be NULL (an error) or a valid `DLTensor` (shape holding `ndim` values, data valid
/// for the bytes it describes); `data` must be readable for `nbytes` bytes (NULL allowed when
/// `nbytes` is 0).
#[no_mangle]
pub unsafe extern "C" fn TVMArrayCopyFromBytes(handle: *mut DLTensor, data: *mut c_void, nbytes: usize) -> c_int {
    ffi_boundary!("TVMArrayCopyFromBytes", {
        // SAFETY: caller contract: valid tensor and `nbytes` readable bytes.
        let (t, bytes) = unsafe { (TensorRef::from_ptr(handle, "handle")?, slice(data as *const u8, nbytes, "data")?) };
        ndarray::copy_from_bytes(t, bytes)?;
        Ok(0)
    })
}

/// Copy the array into `nbytes` host bytes (must equal its byte size), then synchronize.
///
/// # Safety
/// `handle` must be NULL (an error) or a valid `DLTensor` (shape holding `ndim` values, data valid
/// for the bytes it describes); `data` must be writable for `nbytes` bytes not overlapping the
/// tensor's memory (NULL allowed when `nbytes` is 0).
#[no_mangle]
pub unsafe extern "C" fn TVMArrayCopyToBytes(handle: *mut DLTensor, data: *mut c_void, nbytes: usize) -> c_int {
    ffi_boundary!("TVMArrayCopyToBytes", {
        // SAFETY: caller contract: valid tensor and `nbytes` writable bytes.
        let (t, bytes) =
            unsafe { (TensorRef::from_ptr(handle, "handle")?, slice_mut(data as *mut u8, nbytes, "data")?) };
        ndarray::copy_to_bytes(t, bytes)?;
        Ok(0)
    })
}

/// Copy between arrays of equal byte size on compatible devices, ordered on `stream`.
///
/// # Safety
/// `from` and `to` must each be NULL (an error) or a valid `DLTensor` (shape holding `ndim` values,
/// data valid for the bytes it describes on its device) that stays valid until the copy is done;
/// `stream` as for the device's stream calls.
#[no_mangle]
pub unsafe extern "C" fn TVMArrayCopyFromTo(from: *mut DLTensor, to: *mut DLTensor, stream: *mut c_void) -> c_int {
    ffi_boundary!("TVMArrayCopyFromTo", {
        // SAFETY: valid tensors (caller contract).
        let (from, to) = unsafe { (TensorRef::from_ptr(from, "from")?, TensorRef::from_ptr(to, "to")?) };
        // SAFETY: the tensors stay valid until the copy queued on `stream` is done (C contract).
        unsafe { ndarray::copy_from_to_on(from, to, stream)? };
        Ok(0)
    })
}

/// Adopt a DLPack tensor (compact, 64-byte aligned data). On success the array owns `from`
/// and calls its deleter when released; on failure the caller still owns it.
///
/// # Safety
/// `from` must be NULL (an error) or a valid `DLManagedTensor` (shape and strides holding `ndim`
/// values, data valid for the bytes it describes) that stays valid until its deleter runs; after a
/// success the caller must not use or delete it. `out` must be NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMArrayFromDLPack(from: *mut DLManagedTensor, out: *mut *mut DLTensor) -> c_int {
    ffi_boundary!("TVMArrayFromDLPack", {
        check_not_null!(from);
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out = unsafe { out_param(out, "out")? };
        // SAFETY: valid managed tensor handed over by the caller.
        let arr = unsafe { NDArray::from_dlpack(from)? };
        let handle = arr.as_dltensor_ptr();
        let _ = arr.into_raw();
        *out = handle;
        Ok(0)
    })
}

unsafe extern "C" fn dlpack_deleter(m: *mut DLManagedTensor) {
    // SAFETY: `m` was made by `TVMArrayToDLPack`: a boxed tensor whose manager_ctx holds one
    // reference to the source container.
    unsafe {
        let m = Box::from_raw(m);
        release(m.manager_ctx as *mut ObjectHeader);
    }
}

/// A new `DLManagedTensor` over `arr`'s memory, holding `arr`'s reference until its deleter runs.
pub(crate) fn to_dlpack(arr: NDArray) -> *mut DLManagedTensor {
    let m = Box::new(DLManagedTensor {
        dl_tensor: arr.dl_tensor,
        manager_ctx: arr.as_header() as *mut c_void,
        deleter: Some(dlpack_deleter),
    });
    let _ = arr.into_raw(); // the reference now belongs to the managed tensor
    Box::into_raw(m)
}

unsafe extern "C" fn dlpack_versioned_deleter(m: *mut DLManagedTensorVersioned) {
    // SAFETY: `m` was made by `to_dlpack_versioned`: a boxed tensor whose manager_ctx holds one
    // reference to the source container.
    unsafe {
        let m = Box::from_raw(m);
        release(m.manager_ctx as *mut ObjectHeader);
    }
}

/// [`to_dlpack`] as DLPack 1.x's versioned tensor (version 1.1, no flags).
pub(crate) fn to_dlpack_versioned(arr: NDArray) -> *mut DLManagedTensorVersioned {
    let m = Box::new(DLManagedTensorVersioned {
        version: DLPackVersion { major: 1, minor: 1 },
        manager_ctx: arr.as_header() as *mut c_void,
        deleter: Some(dlpack_versioned_deleter),
        flags: 0,
        dl_tensor: arr.dl_tensor,
    });
    let _ = arr.into_raw(); // the reference now belongs to the managed tensor
    Box::into_raw(m)
}

/// Export an array as a new `DLManagedTensor` sharing its memory; the array stays alive until
/// the tensor's deleter runs.
///
/// # Safety
/// `from` must be NULL (an error) or an array handle of this runtime (the `DLTensor` inside a live
/// container); `out` must be NULL (an error) or writable. The caller must run the result's deleter
/// exactly once (e.g. with `TVMDLManagedTensorCallDeleter`).
#[no_mangle]
pub unsafe extern "C" fn TVMArrayToDLPack(from: *mut DLTensor, out: *mut *mut DLManagedTensor) -> c_int {
    ffi_boundary!("TVMArrayToDLPack", {
        check_not_null!(from);
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out = unsafe { out_param(out, "out")? };
        // SAFETY: an array handle of a live container (caller contract).
        let arr = unsafe { NDArray::from_handle_borrowed(from)? };
        *out = to_dlpack(arr);
        Ok(0)
    })
}

/// Call a managed tensor's deleter (NULL or a NULL deleter is a no-op).
///
/// # Safety
/// `dltensor` must be NULL or a valid `DLManagedTensor` whose deleter has not run yet; it must not
/// be used after this call.
#[no_mangle]
pub unsafe extern "C" fn TVMDLManagedTensorCallDeleter(dltensor: *mut DLManagedTensor) {
    ffi_boundary!("TVMDLManagedTensorCallDeleter", {
        if !dltensor.is_null() {
            // SAFETY: a valid managed tensor (caller contract).
            unsafe {
                if let Some(d) = (*dltensor).deleter {
                    d(dltensor);
                }
            }
        }
        Ok(())
    })
}
