//! Error state: `TVMGetLastError` and friends.

use crate::runtime::base::env_capi;
use crate::runtime::base::error::{last_error_ptr, python, set_last_error_bytes, set_last_error_text};
use std::ffi::{c_char, c_void, CStr};

/// Store `msg` as the calling thread's last error (used by callbacks and kernels before
/// returning -1). A NULL `msg` stores an empty message.
///
/// # Safety
/// `msg` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn TVMAPISetLastError(msg: *const c_char) {
    ffi_boundary!("TVMAPISetLastError", {
        let bytes: &[u8] = if msg.is_null() {
            &[]
        } else {
            // SAFETY: non-NULL `msg` is a NUL-terminated string (caller contract).
            unsafe { CStr::from_ptr(msg) }.to_bytes()
        };
        set_last_error_bytes(bytes);
        Ok(())
    })
}

/// The calling thread's last error message (`Kind: message`), or NULL if none was ever set.
/// Owned by the runtime; valid until the next error is stored on this thread (by a failing call
/// or `TVMAPISetLastError`); successful calls leave it in place.
#[no_mangle]
pub extern "C" fn TVMGetLastError() -> *const c_char {
    ffi_boundary!("TVMGetLastError", { Ok(last_error_ptr()) })
}

/// The backtrace of the last error. This runtime records none: always NULL.
#[no_mangle]
pub extern "C" fn TVMGetLastBacktrace() -> *const c_char {
    ffi_boundary!("TVMGetLastBacktrace", { Ok(std::ptr::null()) })
}

/// Store a frontend (Python) error object for this thread, taking a reference through the
/// registered `Py_IncRef`; it replaces (and releases) the previous one.
///
/// # Safety
/// `py_object` must be NULL or a live object of the frontend that registered `Py_IncRef`, and the
/// registered `Py_IncRef`/`Py_DecRef` hooks must be callable from this thread now (for Python: with
/// the GIL held).
#[no_mangle]
pub unsafe extern "C" fn TVMAPISetLastPythonError(py_object: *mut c_void) {
    ffi_boundary!("TVMAPISetLastPythonError", {
        set_last_error_text("PythonError: a Python exception was raised in a callback");
        // After the text (which clears the slot): the object is the current error.
        // SAFETY: `py_object` is the frontend's object (C contract).
        unsafe { env_capi::inc_ref(py_object) };
        python::replace(py_object);
        Ok(())
    })
}

/// The frontend error object stored on this thread, or NULL. Borrowed.
#[no_mangle]
pub extern "C" fn TVMGetLastPythonError() -> *mut c_void {
    ffi_boundary!("TVMGetLastPythonError", { Ok(python::get()) })
}

/// Forget (and release) the frontend error object stored on this thread; the last error
/// becomes an empty message, as in TVM.
#[no_mangle]
pub extern "C" fn TVMDropLastPythonError() {
    ffi_boundary!("TVMDropLastPythonError", {
        if !python::get().is_null() {
            set_last_error_bytes(b"");
        }
        Ok(())
    })
}

/// Does nothing and returns. In TVM this rethrows the last error as a C++ exception; a C function
/// of this runtime cannot throw one, so the error stays available through `TVMGetLastError`.
/// C++ code gets exceptions from the C++ headers (under `tvm/runtime/`), which throw
/// `tvm::runtime::Error` carrying that message when a call fails.
#[no_mangle]
pub extern "C" fn TVMThrowLastError() {
    ffi_boundary!("TVMThrowLastError", { Ok(()) })
}
