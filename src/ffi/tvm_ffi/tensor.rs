//! tvm-ffi's tensor functions: DLPack in and out (plain and versioned) and unsafe views. A
//! tensor handle is the tvm-ffi handle of an NDArray (an `ffi.Tensor`, its `DLTensor` 24 bytes in).

use crate::abi::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use crate::ffi::legacy::array::{to_dlpack, to_dlpack_versioned};
use crate::ffi::ptr::{ffi_header, out_param};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::dlpack::tensor_ref::TensorRef;
use crate::runtime::object::{header::ObjectRef, type_table::type_index};
use crate::runtime::tensor::ndarray::{NDArray, NDArrayData};
use std::ffi::{c_int, c_void};

/// A new reference to the tensor behind a tvm-ffi handle (a view of it, if foreign code made it).
///
/// # Safety
/// `h` must be NULL (an error) or a live object.
unsafe fn tensor_arg(h: *mut c_void, what: &str) -> Result<NDArray> {
    // SAFETY: the caller's contract.
    let header = unsafe { ffi_header(h, what, type_index::NDARRAY, "ffi.Tensor")? };
    // SAFETY: a live object (checked above); the reference taken is the array's or the view's.
    let obj = unsafe { ObjectRef::from_borrowed(header) };
    // One of ours (the reference taken is the result), or a view of a tensor made by foreign
    // tvm-ffi code.
    obj.into_typed::<NDArrayData>().or_else(|obj| {
        NDArray::from_object(&obj)
            .ok_or_else(|| Error::value(format!("argument `{what}`: a foreign tensor with an invalid shape")))
    })
}

/// An alignment argument (0: any).
fn alignment(require_alignment: i32) -> Result<usize> {
    usize::try_from(require_alignment)
        .map_err(|_| Error::value(format!("require_alignment {require_alignment} is negative")))
}

/// A tensor over a DLPack tensor, which it takes over (its deleter runs when the tensor dies);
/// on error the caller keeps it.
///
/// # Safety
/// `from` must be NULL (an error) or a valid managed tensor; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFITensorFromDLPack(
    from: *mut DLManagedTensor,
    require_alignment: i32,
    require_contiguous: i32,
    out: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMFFITensorFromDLPack", {
        check_not_null!(from);
        // SAFETY: the caller's contract.
        let out = unsafe { out_param(out, "out")? };
        // SAFETY: a valid managed tensor handed over (caller contract).
        let arr =
            unsafe { NDArray::from_dlpack_checked(from, alignment(require_alignment)?, require_contiguous != 0)? };
        *out = arr.into_raw() as *mut c_void;
        Ok(0)
    })
}

/// [`TVMFFITensorFromDLPack`] for DLPack 1.x's versioned tensor.
///
/// # Safety
/// As [`TVMFFITensorFromDLPack`].
#[no_mangle]
pub unsafe extern "C" fn TVMFFITensorFromDLPackVersioned(
    from: *mut DLManagedTensorVersioned,
    require_alignment: i32,
    require_contiguous: i32,
    out: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMFFITensorFromDLPackVersioned", {
        check_not_null!(from);
        // SAFETY: the caller's contract.
        let out = unsafe { out_param(out, "out")? };
        // SAFETY: a valid managed tensor handed over (caller contract).
        let arr =
            unsafe { NDArray::from_dlpack_versioned(from, alignment(require_alignment)?, require_contiguous != 0)? };
        *out = arr.into_raw() as *mut c_void;
        Ok(0)
    })
}

/// A DLPack tensor sharing a tensor's memory; the tensor stays alive until its deleter runs.
///
/// # Safety
/// `from` must be NULL (an error) or a live tensor; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFITensorToDLPack(from: *mut c_void, out: *mut *mut DLManagedTensor) -> c_int {
    ffi_boundary!("TVMFFITensorToDLPack", {
        // SAFETY: the caller's contract.
        let (arr, out) = unsafe { (tensor_arg(from, "from")?, out_param(out, "out")?) };
        *out = to_dlpack(arr);
        Ok(0)
    })
}

/// [`TVMFFITensorToDLPack`] as DLPack 1.x's versioned tensor.
///
/// # Safety
/// As [`TVMFFITensorToDLPack`].
#[no_mangle]
pub unsafe extern "C" fn TVMFFITensorToDLPackVersioned(
    from: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
) -> c_int {
    ffi_boundary!("TVMFFITensorToDLPackVersioned", {
        // SAFETY: the caller's contract.
        let (arr, out) = unsafe { (tensor_arg(from, "from")?, out_param(out, "out")?) };
        *out = to_dlpack_versioned(arr);
        Ok(0)
    })
}

/// A tensor described by `prototype` over `source`'s memory, keeping `source` alive (the
/// prototype's data must lie in `source`'s memory: the caller's word, as in tvm-ffi).
///
/// # Safety
/// `source` must be NULL (an error) or a live tensor; `prototype` NULL (an error) or a valid
/// tensor description; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFITensorCreateUnsafeView(
    source: *mut c_void,
    prototype: *const DLTensor,
    out: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMFFITensorCreateUnsafeView", {
        check_not_null!(prototype);
        // SAFETY: the caller's contract.
        let (src, out) = unsafe { (tensor_arg(source, "source")?, out_param(out, "out")?) };
        // SAFETY: a valid description (caller contract).
        let view = NDArray::unsafe_view(&src, unsafe { TensorRef::new(&*prototype) })?;
        *out = view.into_raw() as *mut c_void;
        Ok(0)
    })
}
