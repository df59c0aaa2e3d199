//! Panic boundary and argument checks shared by every exported function.

use crate::runtime::base::error::{panic_message, set_last_error, Error, Result};
use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The value an export returns when it fails: `-1` for status codes, NULL for pointers.
pub trait ErrorValue {
    fn error_value() -> Self;
}

impl ErrorValue for c_int {
    fn error_value() -> Self {
        -1
    }
}
impl<T> ErrorValue for *mut T {
    fn error_value() -> Self {
        std::ptr::null_mut()
    }
}
impl<T> ErrorValue for *const T {
    fn error_value() -> Self {
        std::ptr::null()
    }
}
impl ErrorValue for () {
    fn error_value() -> Self {}
}
/// A byte array returned by value: empty (NULL data).
impl ErrorValue for crate::abi::TVMFFIByteArray {
    fn error_value() -> Self {
        crate::abi::TVMFFIByteArray { data: std::ptr::null(), size: 0 }
    }
}
/// Optional function pointers (a C function returning one): NULL.
impl<T> ErrorValue for Option<T> {
    fn error_value() -> Self {
        None
    }
}

/// Run `body`; on `Err` or panic store the message and return `R::error_value()`.
/// Every export passes here, so it also makes sure the layers are installed ([`crate::init`]).
pub fn guard<R: ErrorValue>(function: &'static str, body: impl FnOnce() -> Result<R>) -> R {
    crate::init();
    guard_before_init(function, body)
}

/// [`guard`] without installing the layers, for exports that touch only the type table.
/// C++ code built against tvm-ffi's headers allocates type indices from static initializers,
/// at load time (before `main`): installing the layers there would make objects and so fix
/// the checked-handle mode (`runtime::object::live`) before the program could choose it.
pub fn guard_before_init<R: ErrorValue>(function: &'static str, body: impl FnOnce() -> Result<R>) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            set_last_error(&e);
            R::error_value()
        }
        Err(payload) => {
            let msg = panic_message(&*payload);
            // Setting the error must not panic again across the boundary.
            let _ = catch_unwind(|| set_last_error(&Error::internal(format!("panic in {function}: {msg}"))));
            R::error_value()
        }
    }
}

/// Wrap the body of an exported function: `ffi_boundary!("Name", { ...; Ok(value) })`, or
/// `ffi_boundary!("Name", before_init, { ... })` for [`guard_before_init`].
macro_rules! ffi_boundary {
    ($name:literal, $body:block) => {
        $crate::ffi::guard($name, move || -> $crate::runtime::base::error::Result<_> { $body })
    };
    ($name:literal, before_init, $body:block) => {
        $crate::ffi::guard_before_init($name, move || -> $crate::runtime::base::error::Result<_> { $body })
    };
}

/// Return an error naming the argument when a pointer argument is NULL.
macro_rules! check_not_null {
    ($($arg:ident),+ $(,)?) => {
        $(
            if $arg.is_null() {
                return Err($crate::runtime::base::error::Error::value(
                    concat!("argument `", stringify!($arg), "` is NULL"),
                ));
            }
        )+
    };
}

/// A `&str` from a C string argument; NULL and invalid UTF-8 are errors naming the argument.
///
/// # Safety
/// A non-NULL `p` must point to a NUL-terminated string that outlives `'a`.
pub unsafe fn c_str_arg<'a>(p: *const c_char, name: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::value(format!("argument `{name}` is NULL")));
    }
    // SAFETY: non-NULL, and NUL-terminated and live for `'a` by this function's contract.
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|_| Error::value(format!("argument `{name}` is not valid UTF-8")))
}

/// The text of an `options` argument (executor, pipeline, bucket and policy options): NULL means
/// none; invalid UTF-8 is an error naming the argument.
///
/// # Safety
/// A non-NULL `p` must point to a NUL-terminated string that outlives `'a`.
pub unsafe fn options_arg<'a>(p: *const c_char) -> Result<Option<&'a str>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL here; the rest is this function's contract.
    unsafe { c_str_arg(p, "options") }.map(Some)
}

/// `c_str_arg` with the argument's own name.
macro_rules! c_str {
    ($arg:ident) => {
        $crate::ffi::c_str_arg($arg, stringify!($arg))
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::base::error::last_error_message;

    #[test]
    fn panics_and_errors_become_error_values() {
        let r: c_int = guard("TestFn", || panic!("kaboom"));
        assert_eq!(r, -1);
        assert_eq!(last_error_message().unwrap(), "InternalError: panic in TestFn: kaboom");
        let p: *mut u8 = guard("TestFn", || Err(Error::value("no")));
        assert!(p.is_null());
        assert_eq!(last_error_message().unwrap(), "ValueError: no");
        let ok: c_int = guard("TestFn", || Ok(0));
        assert_eq!(ok, 0);
        assert_eq!(last_error_message().unwrap(), "ValueError: no", "success leaves the last error alone");
    }

    #[test]
    fn a_panicking_packed_function_fails_the_call() {
        use crate::abi::TVMValue;
        use crate::runtime::function::packed::PackedFunc;
        let f = PackedFunc::from_typed(|_| panic!("inside a packed function"));
        let h = f.into_legacy();
        let mut ret = TVMValue::null();
        let mut code = 0;
        // SAFETY: a live function handle and valid out-pointers.
        let rc = unsafe {
            crate::ffi::legacy::func::TVMFuncCall(h, std::ptr::null_mut(), std::ptr::null_mut(), 0, &mut ret, &mut code)
        };
        assert_eq!(rc, -1);
        assert!(last_error_message().unwrap().contains("panic in TVMFuncCall: inside a packed function"));
        // SAFETY: we own the handle.
        assert_eq!(unsafe { crate::ffi::legacy::func::TVMFuncFree(h) }, 0);
    }
}
