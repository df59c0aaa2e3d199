//! Addresses handed to C for arrays that may be empty. An empty Rust slice's pointer is a
//! dangling, non-NULL address (its alignment: 0x4, 0x8), which C code following TVM's
//! conventions may read through or treat as real (Go's cgo checks pointers it is given): every
//! array that reaches C goes through one of these, so C sees either a valid address or NULL.

use std::ffi::c_char;
use std::sync::atomic::{AtomicI64, AtomicU8};

/// What the shape (and strides) of a 0-d tensor point to: one zero, in writable memory, so
/// code that reads `shape[0]` without checking `ndim`, or a copy loop over zero elements, stays
/// inside an object.
static NO_DIMS: AtomicI64 = AtomicI64::new(0);

/// What an empty byte array's data points to: a NUL byte, as `std::string::data()` in TVM.
static NO_BYTES: AtomicU8 = AtomicU8::new(0);

/// The address C gets for a dimension array: `dims` itself, or a valid address for no dims.
pub fn dims_ptr(dims: &[i64]) -> *mut i64 {
    if dims.is_empty() {
        NO_DIMS.as_ptr()
    } else {
        dims.as_ptr() as *mut i64
    }
}

/// Whether `p` is the shared address [`dims_ptr`] gives for no dims (never freed).
pub fn is_no_dims(p: *const i64) -> bool {
    std::ptr::eq(p, NO_DIMS.as_ptr())
}

/// The address C gets for a byte array's data: `bytes` itself, or a valid (NUL) byte when empty.
pub fn bytes_ptr(bytes: &[u8]) -> *const c_char {
    if bytes.is_empty() {
        NO_BYTES.as_ptr() as *const c_char
    } else {
        bytes.as_ptr() as *const c_char
    }
}

/// The address C gets for an argument or result array: NULL when empty (TVM's callers pass NULL
/// for no arguments, and C code never reads an empty array).
pub fn array_ptr_or_null<T>(s: &[T]) -> *mut T {
    if s.is_empty() {
        std::ptr::null_mut()
    } else {
        s.as_ptr() as *mut T
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_arrays_never_get_a_dangling_address() {
        let (no_dims, no_bytes, no_vals): (&[i64], &[u8], &[u32]) = (&[], &[], &[]);
        let d = dims_ptr(no_dims);
        assert!(is_no_dims(d));
        // SAFETY: a valid address of one i64.
        assert_eq!(unsafe { *d }, 0);
        // SAFETY: a valid address of one byte.
        assert_eq!(unsafe { *bytes_ptr(no_bytes) }, 0);
        assert!(array_ptr_or_null(no_vals).is_null());
        let dims = [2i64, 3];
        assert_eq!(dims_ptr(&dims), dims.as_ptr() as *mut i64);
        assert!(!is_no_dims(dims.as_ptr()));
    }
}
