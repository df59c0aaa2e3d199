//! Frontend C API hooks accepted by `TVMBackendRegisterEnvCAPI` (the Python package registers
//! `Py_IncRef` / `Py_DecRef` and friends). A leaf: the error slot uses the refcount hooks.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

// Private: only `register` (whose caller vouches for the function) may store into them.
static PY_ERR_CHECK_SIGNALS: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static PY_INC_REF: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static PY_DEC_REF: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static PY_GIL_STATE_ENSURE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static PY_GIL_STATE_RELEASE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Store the frontend's function `ptr` under its C API name; false (nothing stored) when `name`
/// is not one of the hooks above.
///
/// # Safety
/// `ptr` must be NULL or a function with the C prototype of the API it is named after
/// (`void Py_IncRef(void*)`, `void Py_DecRef(void*)`, `int PyErr_CheckSignals(void)`, ...),
/// callable for the rest of the process.
pub unsafe fn register(name: &str, ptr: *mut c_void) -> bool {
    let slot = match name {
        "PyErr_CheckSignals" => &PY_ERR_CHECK_SIGNALS,
        "Py_IncRef" => &PY_INC_REF,
        "Py_DecRef" => &PY_DEC_REF,
        "PyGILState_Ensure" => &PY_GIL_STATE_ENSURE,
        "PyGILState_Release" => &PY_GIL_STATE_RELEASE,
        _ => return false,
    };
    slot.store(ptr, Ordering::Release);
    true
}

/// Take a reference to a frontend object through the registered `Py_IncRef`, if any.
///
/// # Safety
/// `obj` must be NULL or a live object of the frontend that registered the hook, and the hook
/// must be callable on it from this thread now (for Python: with the GIL held).
pub unsafe fn inc_ref(obj: *mut c_void) {
    // SAFETY: forwarded contract; the slot holds NULL or a `void(void*)` (`register`'s contract).
    unsafe { call_ref_hook(&PY_INC_REF, obj) }
}

/// Release a frontend object through the registered `Py_DecRef`, if any.
///
/// # Safety
/// As for [`inc_ref`]; the caller gives up the reference it held.
pub unsafe fn dec_ref(obj: *mut c_void) {
    // SAFETY: as in `inc_ref`.
    unsafe { call_ref_hook(&PY_DEC_REF, obj) }
}

/// # Safety
/// `slot` holds NULL or a `void (*)(void*)`; `obj` as for [`inc_ref`].
unsafe fn call_ref_hook(slot: &AtomicPtr<c_void>, obj: *mut c_void) {
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() && !obj.is_null() {
        // SAFETY: `register`'s caller stored a `void(void*)` function under this name.
        let f: unsafe extern "C" fn(*mut c_void) = unsafe { std::mem::transmute(p) };
        // SAFETY: `obj` is the frontend's object, usable from this thread (contract).
        unsafe { f(obj) };
    }
}
