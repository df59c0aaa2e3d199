//! tvm-ffi's environment functions (`tvm/ffi/extra/c_env_api.h`): the current stream per device
//! and thread, the DLPack tensor allocator and tensor allocation, the frontend's signal check,
//! lookups from a library's imports, context and system-library symbols; and tvm-ffi's opaque
//! objects and custom allocator slot.

use crate::abi::{DLManagedTensorVersioned, DLTensor};
use crate::ffi::ptr::out_param;
use crate::runtime::base::error::Error;
use crate::runtime::function::packed::{ForeignHandle, Module, CXX_VPTR_BYTES};
use crate::runtime::module::library::{register_context_symbol, register_system_symbol};
use crate::runtime::object::header::{ObjPtr, ObjectHeader, ObjectRef, ObjectType};
use crate::runtime::object::live;
use crate::runtime::tensor::ndarray::NDArray;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

thread_local! {
    /// The calling thread's current stream per `(device_type, device_id)`.
    static STREAMS: RefCell<HashMap<(i32, i32), usize>> = RefCell::new(HashMap::new());
    /// The calling thread's DLPack allocator.
    static TLS_ALLOCATOR: RefCell<Option<DLPackManagedTensorAllocator>> = const { RefCell::new(None) };
}

/// Make `stream` current for a device on this thread; the previous one (NULL if none) is
/// written to `opt_out_original_stream` when that is not NULL.
///
/// # Safety
/// `opt_out_original_stream` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIEnvSetStream(
    device_type: i32,
    device_id: i32,
    stream: *mut c_void,
    opt_out_original_stream: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMFFIEnvSetStream", {
        let old = STREAMS.with(|s| s.borrow_mut().insert((device_type, device_id), stream as usize));
        if !opt_out_original_stream.is_null() {
            // SAFETY: writable when non-NULL (caller contract).
            unsafe { *opt_out_original_stream = old.unwrap_or(0) as *mut c_void };
        }
        Ok(0)
    })
}

/// The calling thread's current stream for a device (NULL: the default stream).
#[no_mangle]
pub extern "C" fn TVMFFIEnvGetStream(device_type: i32, device_id: i32) -> *mut c_void {
    ffi_boundary!("TVMFFIEnvGetStream", {
        Ok(STREAMS.with(|s| s.borrow().get(&(device_type, device_id)).copied().unwrap_or(0)) as *mut c_void)
    })
}

/// DLPack's tensor allocator: fills `out` for the prototype's shape, dtype and device, or reports
/// an error through `set_error(error_ctx, kind, message)` and returns non-zero.
pub type DLPackManagedTensorAllocator = unsafe extern "C" fn(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char),
) -> c_int;

/// The process-wide allocator (0: none), consulted before the thread's.
static GLOBAL_ALLOCATOR: AtomicUsize = AtomicUsize::new(0);

/// Make `allocator` this thread's DLPack allocator (and the process's, when
/// `write_to_global_context` is non-zero); the thread's previous one goes to
/// `opt_out_original_allocator` when that is not NULL.
///
/// # Safety
/// `allocator` must be NULL or follow DLPack's allocator convention; the out-pointer NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIEnvSetDLPackManagedTensorAllocator(
    allocator: Option<DLPackManagedTensorAllocator>,
    write_to_global_context: c_int,
    opt_out_original_allocator: *mut Option<DLPackManagedTensorAllocator>,
) -> c_int {
    ffi_boundary!("TVMFFIEnvSetDLPackManagedTensorAllocator", {
        let old = TLS_ALLOCATOR.with(|a| std::mem::replace(&mut *a.borrow_mut(), allocator));
        if write_to_global_context != 0 {
            GLOBAL_ALLOCATOR.store(allocator.map_or(0, |f| f as usize), Ordering::Release);
        }
        if !opt_out_original_allocator.is_null() {
            // SAFETY: writable when non-NULL (caller contract).
            unsafe { *opt_out_original_allocator = old };
        }
        Ok(0)
    })
}

/// The DLPack allocator in force: the process's, else the calling thread's (NULL: none).
#[no_mangle]
pub extern "C" fn TVMFFIEnvGetDLPackManagedTensorAllocator() -> Option<DLPackManagedTensorAllocator> {
    ffi_boundary!("TVMFFIEnvGetDLPackManagedTensorAllocator", { Ok(current_allocator()) })
}

fn current_allocator() -> Option<DLPackManagedTensorAllocator> {
    match GLOBAL_ALLOCATOR.load(Ordering::Acquire) {
        0 => TLS_ALLOCATOR.with(|a| *a.borrow()),
        // SAFETY: stored from a function of this type.
        f => Some(unsafe { std::mem::transmute::<usize, DLPackManagedTensorAllocator>(f) }),
    }
}

/// What an allocator reported through `set_error`.
struct AllocError(Option<String>);

unsafe extern "C" fn record_alloc_error(ctx: *mut c_void, kind: *const c_char, message: *const c_char) {
    let text = |p: *const c_char| {
        // SAFETY: NUL-terminated strings or NULL (DLPack's allocator convention).
        if p.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    // SAFETY: `ctx` is the `AllocError` `TVMFFIEnvTensorAlloc` passed for this call.
    unsafe { (*(ctx as *mut AllocError)).0 = Some(format!("{}: {}", text(kind), text(message))) };
}

/// A tensor of the prototype's shape, dtype and device, from the DLPack allocator in force
/// (none set: the error says so).
///
/// # Safety
/// `prototype` must be NULL (an error) or a valid tensor description; `out` NULL (an error) or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIEnvTensorAlloc(prototype: *mut DLTensor, out: *mut *mut c_void) -> c_int {
    ffi_boundary!("TVMFFIEnvTensorAlloc", {
        check_not_null!(prototype);
        // SAFETY: the caller's contract.
        let out = unsafe { out_param(out, "out")? };
        let alloc = current_allocator()
            .ok_or_else(|| Error::runtime("TVMFFIEnvTensorAlloc: no DLPack tensor allocator is set"))?;
        let mut err = AllocError(None);
        let mut m = std::ptr::null_mut();
        // SAFETY: the allocator's convention; `err` outlives the call.
        let rc = unsafe { alloc(prototype, &mut m, &mut err as *mut AllocError as *mut c_void, record_alloc_error) };
        if rc != 0 || m.is_null() {
            return Err(Error::raw(
                err.0.unwrap_or_else(|| format!("RuntimeError: the DLPack allocator returned {rc}")),
            ));
        }
        // SAFETY: a managed tensor the allocator just made and hands over.
        let arr = unsafe { NDArray::from_dlpack_versioned(m, 0, false) }.inspect_err(|_| {
            // SAFETY: refused: it is still ours to release, once.
            unsafe { (*m).deleter.inspect(|d| d(m)) };
        })?;
        *out = arr.into_raw() as *mut c_void;
        Ok(0)
    })
}

/// The frontend's `PyErr_CheckSignals` and GIL functions, as `TVMFFIEnvRegisterCAPI` gives them.
static CHECK_SIGNALS: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static GIL_ENSURE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static GIL_RELEASE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Register a frontend function: `PyErr_CheckSignals`, `PyGILState_Ensure` or
/// `PyGILState_Release` (any other name is an error).
///
/// # Safety
/// `name` must be NULL (an error) or a NUL-terminated string; `symbol` the named function.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIEnvRegisterCAPI(name: *const c_char, symbol: *mut c_void) -> c_int {
    ffi_boundary!("TVMFFIEnvRegisterCAPI", {
        // SAFETY: C string argument.
        let slot = match unsafe { c_str!(name)? } {
            "PyErr_CheckSignals" => &CHECK_SIGNALS,
            "PyGILState_Ensure" => &GIL_ENSURE,
            "PyGILState_Release" => &GIL_RELEASE,
            other => return Err(Error::value(format!("Unknown env API {other}"))),
        };
        slot.store(symbol, Ordering::Release);
        Ok(0)
    })
}

/// Run the frontend's signal check (holding its GIL), if one is registered: non-zero when it
/// raised (a KeyboardInterrupt, say), which it has then set itself.
#[no_mangle]
pub extern "C" fn TVMFFIEnvCheckSignals() -> c_int {
    ffi_boundary!("TVMFFIEnvCheckSignals", {
        let check = CHECK_SIGNALS.load(Ordering::Acquire);
        if check.is_null() {
            return Ok(0);
        }
        let (ensure, release) = (GIL_ENSURE.load(Ordering::Acquire), GIL_RELEASE.load(Ordering::Acquire));
        if ensure.is_null() || release.is_null() {
            return Err(Error::runtime("PyErr_CheckSignals is registered without PyGILState_Ensure/Release"));
        }
        // SAFETY: the frontend registered these functions with these prototypes.
        let rc = unsafe {
            let ensure: unsafe extern "C" fn() -> *mut c_void = std::mem::transmute(ensure);
            let release: unsafe extern "C" fn(*mut c_void) = std::mem::transmute(release);
            let check: unsafe extern "C" fn() -> c_int = std::mem::transmute(check);
            let state = ensure();
            let rc = check();
            release(state);
            rc
        };
        Ok(if rc != 0 { -1 } else { 0 })
    })
}

/// Look a function up from a library's imports, then the globals (what compiled kernels call
/// through `__TVMFFIEnvModLookupFromImports`): `*out` is borrowed, cached by the module.
///
/// `library_ctx` is what tvm-ffi's library passes: a C++ `ModuleObj*`, whose object header
/// follows its vtable pointer, 8 bytes in. Modules C++ code made (apache-tvm's LLVM JIT module)
/// pass themselves so; the runtime's own library modules are given out the same way
/// (`init_library_context`), so one rule reads both.
///
/// # Safety
/// `library_ctx` must be NULL (an error) or a module as a C++ `ModuleObj*` (the value of
/// `__tvm_ffi__library_ctx`); `func_name` NULL (an error) or a NUL-terminated string; `out` NULL
/// (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIEnvModLookupFromImports(
    library_ctx: *mut c_void,
    func_name: *const c_char,
    out: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMFFIEnvModLookupFromImports", {
        check_not_null!(library_ctx);
        // SAFETY: the caller's contract.
        let (name, out) = unsafe { (c_str!(func_name)?, out_param(out, "out")?) };
        let header = (library_ctx as *mut u8).wrapping_add(CXX_VPTR_BYTES);
        live::check(header, "Module").map_err(|e| e.context("argument `library_ctx`"))?;
        // SAFETY: a live object behind the C++ pointer (caller contract; verified in the checked
        // mode); a new reference, its type checked by the lookup.
        let module = unsafe { ObjectRef::from_borrowed(header as *mut ObjectHeader) };
        *out =
            Module::lookup_from_imports(&module, name).map_err(|e| e.context("argument `library_ctx`"))? as *mut c_void;
        Ok(0)
    })
}

/// Register a value for libraries' `name` pointer, written when a library that has one loads.
///
/// # Safety
/// `name` must be NULL (an error) or a NUL-terminated string; `symbol` what such libraries expect.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIEnvModRegisterContextSymbol(name: *const c_char, symbol: *mut c_void) -> c_int {
    ffi_boundary!("TVMFFIEnvModRegisterContextSymbol", {
        // SAFETY: C string argument.
        register_context_symbol(unsafe { c_str!(name)? }, symbol);
        Ok(0)
    })
}

/// Register a symbol of a statically linked library (the system library), as
/// `TVMBackendRegisterSystemLibSymbol` does.
///
/// # Safety
/// As `TVMBackendRegisterSystemLibSymbol`.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIEnvModRegisterSystemLibSymbol(name: *const c_char, symbol: *mut c_void) -> c_int {
    ffi_boundary!("TVMFFIEnvModRegisterSystemLibSymbol", {
        // SAFETY: C string argument.
        register_system_symbol(unsafe { c_str!(name)? }, symbol);
        Ok(0)
    })
}

/// Payload of an opaque object: tvm-ffi's `TVMFFIOpaqueObjectCell` (the handle), released with
/// the object.
#[repr(transparent)]
struct OpaqueObj(ForeignHandle);

// SAFETY: tvm-ffi's contract for opaque objects: the handle may be released from any thread.
unsafe impl Send for OpaqueObj {}
// SAFETY: as above; the handle is never used here.
unsafe impl Sync for OpaqueObj {}

impl ObjectType for OpaqueObj {
    const TYPE_INDEX: u32 = crate::runtime::object::type_table::type_index::OPAQUE_PY_OBJECT;
}

/// An object of type `type_index` (an opaque type, such as `ffi.OpaquePyObject`) holding a
/// foreign handle, which `deleter` releases when the object dies.
///
/// # Safety
/// `deleter` must be NULL or safe to call once on `handle`; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIObjectCreateOpaque(
    handle: *mut c_void,
    type_index: i32,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    out: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMFFIObjectCreateOpaque", {
        // SAFETY: the caller's contract.
        let out = unsafe { out_param(out, "out")? };
        let index =
            u32::try_from(type_index).map_err(|_| Error::index(format!("type index {type_index} is negative")))?;
        crate::runtime::object::type_table::type_index_to_key(index)?;
        let obj = ObjPtr::new_as(OpaqueObj(ForeignHandle { handle, deleter }), index);
        *out = obj.into_raw() as *mut c_void;
        Ok(0)
    })
}

/// tvm-ffi's `TVMFFICustomAllocator`.
#[repr(C)]
pub struct TVMFFICustomAllocator {
    pub allocate: Option<unsafe extern "C" fn(usize, usize, i32, *mut c_void) -> *mut c_void>,
    pub context: *mut c_void,
}

/// The frontend's allocator, recorded for [`TVMFFIGetCustomAllocator`] (NULL: none).
static CUSTOM_ALLOCATOR: AtomicPtr<TVMFFICustomAllocator> = AtomicPtr::new(std::ptr::null_mut());

/// Record a frontend's object allocator (NULL: none). Objects this runtime makes keep its own
/// allocation (a NULL `delete_space` in their allocation header), so none of them depends on a
/// frontend's state; tvm-ffi 0.1.15's Python core, which installs one, does not rely on it yet.
///
/// # Safety
/// `allocator` must be NULL or valid for the rest of the process.
#[no_mangle]
pub unsafe extern "C" fn TVMFFISetCustomAllocator(allocator: *mut TVMFFICustomAllocator) -> c_int {
    ffi_boundary!("TVMFFISetCustomAllocator", {
        CUSTOM_ALLOCATOR.store(allocator, Ordering::Release);
        Ok(0)
    })
}

/// The allocator last recorded by [`TVMFFISetCustomAllocator`] (NULL: none).
#[no_mangle]
pub extern "C" fn TVMFFIGetCustomAllocator() -> *mut TVMFFICustomAllocator {
    ffi_boundary!("TVMFFIGetCustomAllocator", { Ok(CUSTOM_ALLOCATOR.load(Ordering::Acquire)) })
}
