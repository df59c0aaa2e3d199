//! Objects: refcounts and the type table.

use crate::abi::DLTensor;
use crate::ffi::ptr::out_param;
use crate::runtime::base::error::Error;
use crate::runtime::object::header::{self, legacy};
use crate::runtime::tensor::ndarray::NDArray;
use std::ffi::{c_char, c_int, c_uint, c_void};

/// The type index of an object (read from its header).
///
/// # Safety
/// `obj` must be NULL (an error) or a live object handle of this runtime; `out_tindex` must be NULL
/// (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMObjectGetTypeIndex(obj: *mut c_void, out_tindex: *mut c_uint) -> c_int {
    ffi_boundary!("TVMObjectGetTypeIndex", {
        check_not_null!(obj);
        let header = legacy::checked_header(obj, "object")?;
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out_tindex = unsafe { out_param(out_tindex, "out_tindex")? };
        // SAFETY: a live object's header lies before its 0.18 handle (caller contract).
        *out_tindex = legacy::index_of(unsafe { (*header).type_index });
        Ok(0)
    })
}

/// Index of a registered type key.
///
/// # Safety
/// `type_key` must be NULL (an error) or a NUL-terminated string; `out_tindex` must be NULL (an
/// error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMObjectTypeKey2Index(type_key: *const c_char, out_tindex: *mut c_uint) -> c_int {
    ffi_boundary!("TVMObjectTypeKey2Index", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out_tindex = unsafe { out_param(out_tindex, "out_tindex")? };
        // SAFETY: C string argument (caller contract).
        let key = unsafe { c_str!(type_key)? };
        *out_tindex = legacy::index_of(crate::runtime::object::type_table::type_key_to_index(key)?);
        Ok(0)
    })
}

/// Key of a type index, as a `malloc`ed string the caller must `free`.
///
/// # Safety
/// `out_type_key` must be NULL (an error) or valid for writing one pointer; the caller frees the
/// string with `free`.
#[no_mangle]
pub unsafe extern "C" fn TVMObjectTypeIndex2Key(tindex: c_uint, out_type_key: *mut *mut c_char) -> c_int {
    ffi_boundary!("TVMObjectTypeIndex2Key", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out_type_key = unsafe { out_param(out_type_key, "out_type_key")? };
        let key = crate::runtime::object::type_table::legacy_type_key(legacy::ffi_index(tindex))?;
        // SAFETY: malloc of len+1 bytes, then a copy of the key and a terminating NUL.
        unsafe {
            let p = libc::malloc(key.len() + 1) as *mut c_char;
            if p.is_null() {
                return Err(Error::internal("out of memory"));
            }
            std::ptr::copy_nonoverlapping(key.as_ptr() as *const c_char, p, key.len());
            *p.add(key.len()) = 0;
            *out_type_key = p;
        }
        Ok(0)
    })
}

/// Add a reference. NULL is tolerated.
///
/// # Safety
/// `obj` must be NULL or a live object handle of this runtime.
#[no_mangle]
pub unsafe extern "C" fn TVMObjectRetain(obj: *mut c_void) -> c_int {
    ffi_boundary!("TVMObjectRetain", {
        if !obj.is_null() {
            let header = legacy::checked_header(obj, "object")?;
            // SAFETY: live object (caller contract; verified in the checked mode).
            unsafe { header::retain(header) };
        }
        Ok(0)
    })
}

/// Drop a reference; the object is destroyed with the last one. NULL is tolerated.
///
/// # Safety
/// `obj` must be NULL or a live object handle of this runtime holding one reference that the caller
/// owns and gives up.
#[no_mangle]
pub unsafe extern "C" fn TVMObjectFree(obj: *mut c_void) -> c_int {
    ffi_boundary!("TVMObjectFree", {
        if !obj.is_null() {
            let header = legacy::checked_header(obj, "object")?;
            // SAFETY: the caller owns one reference to a live object (verified to be live in the
            // checked mode).
            unsafe { header::release(header) };
        }
        Ok(0)
    })
}

/// Whether type `child_type_index` is `parent_type_index` or derives from it.
///
/// # Safety
/// `is_derived` must be NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMObjectDerivedFrom(
    child_type_index: u32,
    parent_type_index: u32,
    is_derived: *mut c_int,
) -> c_int {
    ffi_boundary!("TVMObjectDerivedFrom", {
        // SAFETY: out-parameter valid for writes when non-NULL (C contract).
        let is_derived = unsafe { out_param(is_derived, "is_derived")? };
        let (child, parent) = (legacy::ffi_index(child_type_index), legacy::ffi_index(parent_type_index));
        *is_derived = crate::runtime::object::type_table::derived_from(child, parent)? as c_int;
        Ok(0)
    })
}

/// The type index of the container behind an array handle.
///
/// # Safety
/// `handle` must be NULL (an error) or an array handle of this runtime (the `DLTensor` inside a
/// live container, not a bare `DLTensor`); `out_tindex` must be NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMArrayGetTypeIndex(handle: *mut DLTensor, out_tindex: *mut c_uint) -> c_int {
    ffi_boundary!("TVMArrayGetTypeIndex", {
        check_not_null!(handle);
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out_tindex = unsafe { out_param(out_tindex, "out_tindex")? };
        // SAFETY: an array handle points into a live container (TVM's ABI).
        let header = unsafe { NDArray::header_of_handle(handle)? };
        // SAFETY: the header of the live container behind `handle`.
        *out_tindex = legacy::index_of(unsafe { (*header).type_index });
        Ok(0)
    })
}
