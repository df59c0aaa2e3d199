//! The tvm-ffi C functions that kernels built by apache-tvm 0.25 and later call back into, with
//! the signatures of apache-tvm-ffi 0.1.x's `tvm/ffi/c_api.h`. Their kernel libraries import
//! them without naming a library, so the loader makes this library's symbols global before
//! loading one (`runtime::dso`).
//!
//! A raised error is stored as the calling thread's last error, `Kind: message`, which the
//! kernel wrapper (`runtime::ffi_library`) turns into the error of the call.

use crate::runtime::error::set_last_error_text;
use std::ffi::{c_char, CStr};

/// The text of a C string argument (NULL reads as empty; invalid UTF-8 is replaced).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-NULL and NUL-terminated by this function's contract.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn raise(kind: String, message: String) {
    let kind = if kind.is_empty() { "RuntimeError".to_string() } else { kind };
    set_last_error_text(&format!("{kind}: {message}"));
}

/// Raise an error of `kind` with `message` on the calling thread.
///
/// # Safety
/// `kind` and `message` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIErrorSetRaisedFromCStr(kind: *const c_char, message: *const c_char) {
    ffi_boundary!("TVMFFIErrorSetRaisedFromCStr", {
        // SAFETY: the caller's contract.
        raise(unsafe { text(kind) }, unsafe { text(message) });
        Ok(())
    })
}

/// Raise an error of `kind` whose message is the `num_parts` strings of `message_parts` joined
/// (what compiled kernels call: their messages are made of constant pieces).
///
/// # Safety
/// `kind` is NULL or a NUL-terminated string; `message_parts` is NULL or points to `num_parts`
/// pointers, each NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIErrorSetRaisedFromCStrParts(
    kind: *const c_char,
    message_parts: *mut *const c_char,
    num_parts: i32,
) {
    ffi_boundary!("TVMFFIErrorSetRaisedFromCStrParts", {
        let n = if message_parts.is_null() { 0 } else { num_parts.max(0) as usize };
        // SAFETY: `message_parts` holds `num_parts` pointers (caller contract); n is 0 if NULL.
        let parts = unsafe {
            std::slice::from_raw_parts(
                if n == 0 { std::ptr::NonNull::dangling().as_ptr() } else { message_parts as *const *const c_char },
                n,
            )
        };
        // SAFETY: each part is NULL or a NUL-terminated string (caller contract).
        let message: String = parts.iter().map(|&p| unsafe { text(p) }).collect();
        // SAFETY: the caller's contract.
        raise(unsafe { text(kind) }, message);
        Ok(())
    })
}
