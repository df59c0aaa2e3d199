//! Frontend C API hooks accepted by `TVMBackendRegisterEnvCAPI` (the Python package registers
//! `Py_IncRef` / `Py_DecRef` and friends). A leaf: the error slot uses the refcount hooks.

use super::error::{Error, Result};
use std::ffi::c_void;
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
///
/// # Safety
/// `slot` must be NULL or hold a function of C type `void (*)(void*)` (as `register` expects;
/// `register` itself cannot check it), and `obj` must be NULL or an object of the frontend that
/// registered the hook, in a state where that function may be called on it from this thread (for
/// Python's `Py_IncRef` / `Py_DecRef`: with the GIL held).
pub unsafe fn call_ref_hook(slot: &AtomicPtr<c_void>, obj: *mut c_void) {
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() && !obj.is_null() {
        // SAFETY: the frontend registered a `void(void*)` function under this name.
        let f: unsafe extern "C" fn(*mut c_void) = unsafe { std::mem::transmute(p) };
        // SAFETY: `obj` is the frontend's object.
        unsafe { f(obj) };
    }
}
