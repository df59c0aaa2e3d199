//! The tvm-ffi C functions that kernels built by apache-tvm 0.25 and later call back into, with
//! the signatures of apache-tvm-ffi 0.1.x's `tvm/ffi/c_api.h`. Their kernel libraries import
//! them without naming a library, so the loader makes this library's symbols global before
//! loading one (`runtime::module::dso`).
//!
//! A raised error is stored as the calling thread's last error, `Kind: message`, which the
//! kernel wrapper (`runtime::module::tvm_ffi_library`) turns into the error of the call.

use crate::abi::{ffi_type_index as ti, DLDataType, TVMFFIAny, TVMFFIByteArray, TVMFFISafeCallType};
use crate::ffi::ptr::{borrow_handle, ffi_header, out_param, text_arg};
use crate::runtime::base::error::{last_error_message, set_last_error_text, Error, Result};
use crate::runtime::container::{big_int, normalized_words, BigIntObj};
use crate::runtime::function::error_object::{keep_raised, take_raised, ErrorObj};
use crate::runtime::function::packed::{
    byte_array, string_any, ForeignCallable, ForeignHandle, FuncObj, PackedFunc, Value,
};
use crate::runtime::function::registry;
use crate::runtime::object::live;
use crate::runtime::object::{
    header::{self, legacy, ObjPtr, ObjectHeader, ObjectRef},
    type_table::type_index,
};
use crate::runtime::reflection::type_info::owned_any;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// A `TVMFFIByteArray*` argument's bytes (NULL reads as empty).
///
/// # Safety
/// `a` must be NULL or a valid byte array.
unsafe fn optional_bytes<'a>(a: *const TVMFFIByteArray) -> &'a [u8] {
    // SAFETY: the caller's contract.
    if a.is_null() {
        &[]
    } else {
        unsafe { byte_array(&*a) }
    }
}

/// A new reference to an optional object argument (NULL: none).
///
/// # Safety
/// `h` must be NULL or a live object.
unsafe fn object_arg(h: *mut c_void, what: &str) -> Result<Option<ObjectRef>> {
    if h.is_null() {
        return Ok(None);
    }
    live::check(h, what)?;
    // SAFETY: a live object (caller contract; verified in the checked mode).
    Ok(Some(unsafe { ObjectRef::from_borrowed(h as *mut ObjectHeader) }))
}

/// A new `ffi.Error` into `*out`: kind, message and backtrace (NULL arrays read as empty), a
/// cause and extra context (NULL handles: none).
///
/// # Safety
/// Each array NULL or valid; `cause`, `extra` NULL or live objects; `out` NULL (an error) or
/// writable.
unsafe fn create_error(
    arrays: [*const TVMFFIByteArray; 3],
    cause: *mut c_void,
    extra: *mut c_void,
    out: *mut *mut c_void,
) -> Result<c_int> {
    // SAFETY: the caller's contract.
    let [k, m, b] = arrays.map(|a| unsafe { optional_bytes(a) });
    // SAFETY: the caller's contract.
    let (cause, extra, out) =
        unsafe { (object_arg(cause, "cause_chain")?, object_arg(extra, "extra_context")?, out_param(out, "out")?) };
    *out = ObjPtr::new(ErrorObj::new(k, m, b, cause, extra)).into_raw() as *mut c_void;
    Ok(0)
}

/// Make an `ffi.Error` (kind, message, backtrace; no cause).
///
/// # Safety
/// Each array must be NULL (empty) or valid; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIErrorCreate(
    kind: *const TVMFFIByteArray,
    message: *const TVMFFIByteArray,
    backtrace: *const TVMFFIByteArray,
    out: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMFFIErrorCreate", {
        // SAFETY: the caller's contract.
        unsafe { create_error([kind, message, backtrace], std::ptr::null_mut(), std::ptr::null_mut(), out) }
    })
}

/// Make an `ffi.Error` with a cause (another error, or NULL) and extra context (any object, or
/// NULL); the new error holds references to both.
///
/// # Safety
/// As [`TVMFFIErrorCreate`]; `cause_chain` and `extra_context` NULL or live objects.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIErrorCreateWithCauseAndExtraContext(
    kind: *const TVMFFIByteArray,
    message: *const TVMFFIByteArray,
    backtrace: *const TVMFFIByteArray,
    cause_chain: *mut c_void,
    extra_context: *mut c_void,
    out: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMFFIErrorCreateWithCauseAndExtraContext", {
        // SAFETY: the caller's contract.
        unsafe { create_error([kind, message, backtrace], cause_chain, extra_context, out) }
    })
}

/// Raise an `ffi.Error` on the calling thread (it takes its own reference): the next
/// [`TVMFFIErrorMoveFromRaised`] hands back this object, and `TVMGetLastError` shows
/// `Kind: message`.
///
/// # Safety
/// `error` must be NULL (nothing happens) or a live `ffi.Error`.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIErrorSetRaised(error: *mut c_void) {
    ffi_boundary!("TVMFFIErrorSetRaised", {
        // SAFETY: the caller's contract.
        let Some(obj) = (unsafe { object_arg(error, "error")? }) else { return Ok(()) };
        let e =
            obj.downcast::<ErrorObj>().ok_or_else(|| Error::type_error("TVMFFIErrorSetRaised takes an ffi.Error"))?;
        set_last_error_text(&e.text());
        keep_raised(e);
        Ok(())
    })
}

/// Move the calling thread's raised error out as an owned `ffi.Error` (NULL when none): the
/// object raised, or one made from the last error the runtime set.
///
/// # Safety
/// `result` must be NULL (nothing happens) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIErrorMoveFromRaised(result: *mut *mut c_void) {
    ffi_boundary!("TVMFFIErrorMoveFromRaised", {
        if !result.is_null() {
            let e = take_raised();
            // SAFETY: writable (caller contract).
            unsafe { *result = e.map_or(std::ptr::null_mut(), |e| e.into_raw() as *mut c_void) };
        }
        Ok(())
    })
}

thread_local! {
    /// The text [`TVMFFIBacktrace`] last returned on this thread, and its array.
    static BACKTRACE: std::cell::RefCell<(std::ffi::CString, TVMFFIByteArray)> =
        std::cell::RefCell::new((std::ffi::CString::default(), TVMFFIByteArray { data: std::ptr::null(), size: 0 }));
}

/// The calling thread's backtrace in tvm-ffi's format (`  File "<file>", line N, in <func>`
/// per frame, most recent first): the calling site when `filename` and `func` name one, then the
/// native frames below it, up to the FFI boundary unless `cross_ffi_boundary` is non-zero
/// (`runtime::base::backtrace`). Valid until the next call on this thread.
///
/// # Safety
/// `filename` and `func` must be NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIBacktrace(
    filename: *const c_char,
    lineno: c_int,
    func: *const c_char,
    cross_ffi_boundary: c_int,
) -> *const TVMFFIByteArray {
    ffi_boundary!("TVMFFIBacktrace", {
        let named = !filename.is_null() && !func.is_null();
        // SAFETY: the caller's contract.
        let (file, func) = unsafe { (text(filename), text(func)) };
        let site = named.then_some((file.as_str(), lineno, func.as_str()));
        let trace = crate::runtime::base::backtrace::backtrace(site, cross_ffi_boundary != 0);
        let c = std::ffi::CString::new(trace.replace('\0', "")).expect("NULs were removed");
        Ok(BACKTRACE.with(|b| {
            let mut b = b.borrow_mut();
            let size = c.as_bytes().len();
            b.0 = c;
            b.1 = TVMFFIByteArray { data: b.0.as_ptr(), size };
            &b.1 as *const TVMFFIByteArray
        }))
    })
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

// ---- tvm-ffi's C ABI over the one object model (docs/ARCHITECTURE.md) ------------------------
//
// Handles here are tvm-ffi handles: the object header's address (TVM 0.18's handles of the same
// objects are 8 bytes further in). Status-returning functions give 0 or -1 with the error raised
// on the calling thread, as tvm-ffi's do.

/// The tvm-ffi version whose ABI this library provides.
pub const FFI_VERSION: TVMFFIVersion = TVMFFIVersion { major: 0, minor: 1, patch: 16 };

/// `TVMFFIVersion`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TVMFFIVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

/// The tvm-ffi ABI version this library provides.
///
/// # Safety
/// `out_version` must be NULL (nothing is written) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIGetVersion(out_version: *mut TVMFFIVersion) {
    ffi_boundary!("TVMFFIGetVersion", {
        if !out_version.is_null() {
            // SAFETY: writable when non-NULL (caller contract).
            unsafe { *out_version = FFI_VERSION };
        }
        Ok(())
    })
}

/// Add a strong reference (NULL is a no-op).
///
/// # Safety
/// `obj` must be NULL or a live object.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIObjectIncRef(obj: *mut c_void) -> c_int {
    if fast(obj) {
        // SAFETY: a live object (caller contract). Nothing here can panic.
        unsafe { header::retain(obj as *mut ObjectHeader) };
        return 0;
    }
    ffi_boundary!("TVMFFIObjectIncRef", {
        if !obj.is_null() {
            live::check(obj, "object")?;
            note_mode();
            // SAFETY: a live object (caller contract; verified in the checked mode).
            unsafe { header::retain(obj as *mut ObjectHeader) };
        }
        Ok(0)
    })
}

/// Drop a strong reference (NULL is a no-op); the object goes with its last one.
///
/// # Safety
/// `obj` must be NULL or a live object whose reference the caller owns and gives up.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIObjectDecRef(obj: *mut c_void) -> c_int {
    if fast(obj) {
        // SAFETY: the caller's reference to a live object. A deleter is a C function (a Rust one
        // aborts rather than unwind), so no panic could reach the boundary from here.
        unsafe { header::release(obj as *mut ObjectHeader) };
        return 0;
    }
    ffi_boundary!("TVMFFIObjectDecRef", {
        if !obj.is_null() {
            live::check(obj, "object")?;
            note_mode();
            // SAFETY: the caller's reference to a live object (verified in the checked mode).
            unsafe { header::release(obj as *mut ObjectHeader) };
        }
        Ok(0)
    })
}

/// Make a function object over a C callable in tvm-ffi's convention (`safe_call(self, args,
/// num_args, result)`); `deleter(self)` runs when the object dies.
///
/// # Safety
/// `safe_call` must follow tvm-ffi's convention; `deleter` must be NULL or safe to call once on
/// `self`; `out` must be NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIFunctionCreate(
    self_: *mut c_void,
    safe_call: Option<TVMFFISafeCallType>,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    out: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMFFIFunctionCreate", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out = unsafe { out_param(out, "out")? };
        let call = safe_call.ok_or_else(|| Error::value("argument `safe_call` is NULL"))?;
        let f = PackedFunc::from_foreign(ForeignCallable { call, context: ForeignHandle { handle: self_, deleter } });
        *out = f.into_raw() as *mut c_void;
        Ok(0)
    })
}

/// The `safe_call` in the cell of a function object.
///
/// # Safety
/// `func` must be a live function object.
unsafe fn cell_call(func: *mut c_void) -> TVMFFISafeCallType {
    // SAFETY: a function object's payload starts with tvm-ffi's cell (caller contract).
    unsafe { *((func as *const u8).add(size_of::<ObjectHeader>()) as *const TVMFFISafeCallType) }
}

/// Call a function object through its cell, as tvm-ffi's inline code does. A live function with
/// a result slot goes straight to its cell (its `safe_call` catches its own panics); anything
/// else is checked first and gets an error naming what was wrong.
///
/// # Safety
/// `func` must be NULL (an error) or a live function object; `args` must point to `num_args`
/// valid values; `result` must be NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIFunctionCall(
    func: *mut c_void,
    args: *mut TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    // Hot path: a live function object (not checked in the default mode, as in tvm-ffi).
    if fast(func) && !result.is_null() {
        // SAFETY: a live object (caller contract): its header is readable.
        if unsafe { (*(func as *mut ObjectHeader)).type_index } == type_index::PACKED_FUNC {
            // SAFETY: a function object, called by its own convention with the caller's arguments.
            return unsafe { cell_call(func)(func, args, num_args, result) };
        }
    }
    ffi_boundary!("TVMFFIFunctionCall", {
        check_not_null!(result);
        // SAFETY: the caller's contract.
        unsafe { ffi_header(func, "func", type_index::PACKED_FUNC, "ffi.Function")? };
        note_mode();
        // SAFETY: as in the hot path. Non-zero: the callee raised its error on this thread; it
        // stays as raised.
        Ok(unsafe { cell_call(func)(func, args, num_args, result) })
    })
}

/// The hot paths (`TVMFFIFunctionCall`, `TVMFFIObjectIncRef`/`DecRef`) skip the handle checks
/// and the panic boundary for a handle above this address: 0 once the handle mode is known to be
/// unchecked (so any handle but NULL), `usize::MAX` before and in the checked mode (none). One
/// load and one comparison test both NULL and the mode; a copy of the mode private to this file
/// (the mode itself is reachable from other crates, which costs a second load through the GOT).
static FAST_ABOVE: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Whether a hot path may take `handle` as it is (see [`FAST_ABOVE`]).
#[inline(always)]
fn fast(handle: *mut c_void) -> bool {
    handle as usize > FAST_ABOVE.load(Ordering::Relaxed)
}

/// Record the handle mode for the hot paths, once a checked path has made it known.
fn note_mode() {
    FAST_ABOVE.store(if live::known_unchecked() { 0 } else { usize::MAX }, Ordering::Relaxed);
}

/// Look up a global function: `*out` is an owned handle, or NULL when the name is unknown.
///
/// # Safety
/// `name` must be NULL (an error) or a valid byte array; `out` must be NULL (an error) or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIFunctionGetGlobal(name: *const TVMFFIByteArray, out: *mut *mut c_void) -> c_int {
    ffi_boundary!("TVMFFIFunctionGetGlobal", {
        // SAFETY: the caller's contract.
        let (name, out) = unsafe { (text_arg(name, "name")?, out_param(out, "out")?) };
        *out = registry::get(&name).map_or(std::ptr::null_mut(), |f| f.into_raw() as *mut c_void);
        Ok(0)
    })
}

/// Register a function object as a global (the registry takes its own reference); an existing
/// name is an error unless `allow_override` is non-zero.
///
/// # Safety
/// `name` must be NULL (an error) or a valid byte array; `f` NULL (an error) or a live function.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIFunctionSetGlobal(
    name: *const TVMFFIByteArray,
    f: *mut c_void,
    allow_override: c_int,
) -> c_int {
    ffi_boundary!("TVMFFIFunctionSetGlobal", {
        check_not_null!(f);
        // SAFETY: the caller's contract.
        let name = unsafe { text_arg(name, "name")? };
        // SAFETY: a live handle (caller contract), its type checked.
        let func = unsafe { borrow_handle::<FuncObj>(legacy::handle(f as *mut ObjectHeader), "ffi.Function")? };
        registry::register_over_built_in(&name, func, allow_override != 0)?;
        Ok(0)
    })
}

/// An owned copy of a value view: a raw string or byte array becomes an object, an object gets
/// a new reference, anything else is copied.
///
/// # Safety
/// `any_view` must be NULL (an error) or a valid view; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIAnyViewToOwnedAny(any_view: *const TVMFFIAny, out: *mut TVMFFIAny) -> c_int {
    ffi_boundary!("TVMFFIAnyViewToOwnedAny", {
        check_not_null!(any_view);
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out = unsafe { out_param(out, "out")? };
        // SAFETY: a valid view (caller contract).
        let view = unsafe { &*any_view };
        // SAFETY: a valid view (caller contract).
        *out = unsafe { owned_any(view)? };
        Ok(0)
    })
}

/// A string value from bytes: held inline up to 7 bytes, else an `ffi.String`.
///
/// # Safety
/// `input` must be NULL (an error) or a valid byte array; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIStringFromByteArray(input: *const TVMFFIByteArray, out: *mut TVMFFIAny) -> c_int {
    ffi_boundary!("TVMFFIStringFromByteArray", {
        check_not_null!(input);
        // SAFETY: the caller's contract.
        let (bytes, out) = unsafe { (byte_array(&*input), out_param(out, "out")?) };
        *out = string_any(bytes);
        Ok(0)
    })
}

/// A bytes value: held inline up to 7 bytes, else an `ffi.Bytes`.
///
/// # Safety
/// `input` must be NULL (an error) or a valid byte array; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIBytesFromByteArray(input: *const TVMFFIByteArray, out: *mut TVMFFIAny) -> c_int {
    ffi_boundary!("TVMFFIBytesFromByteArray", {
        check_not_null!(input);
        // SAFETY: the caller's contract.
        let (bytes, out) = unsafe { (byte_array(&*input), out_param(out, "out")?) };
        *out = Value::Bytes(bytes.to_vec()).into_any();
        Ok(0)
    })
}

/// The type index of a registered type key (tvm-ffi's keys; TVM 0.18's name the same types).
///
/// # Safety
/// `type_key` must be NULL (an error) or a valid byte array; `out_tindex` NULL (an error) or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFITypeKeyToIndex(type_key: *const TVMFFIByteArray, out_tindex: *mut i32) -> c_int {
    ffi_boundary!("TVMFFITypeKeyToIndex", {
        // SAFETY: the caller's contract.
        let (key, out) = unsafe { (text_arg(type_key, "type_key")?, out_param(out_tindex, "out_tindex")?) };
        *out = crate::runtime::object::type_table::type_key_to_index(&key)? as i32;
        Ok(0)
    })
}

/// Parse a data type string (`float32`, `int8x4`, `bool`, ...).
///
/// # Safety
/// `str` must be NULL (an error) or a valid byte array; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIDataTypeFromString(str: *const TVMFFIByteArray, out: *mut DLDataType) -> c_int {
    ffi_boundary!("TVMFFIDataTypeFromString", {
        // SAFETY: the caller's contract.
        let (text, out) = unsafe { (text_arg(str, "str")?, out_param(out, "out")?) };
        *out = crate::runtime::dlpack::dtype_tvm_ffi::parse(&text)?;
        Ok(0)
    })
}

/// A data type's string, as a string value.
///
/// # Safety
/// `dtype` must be NULL (an error) or readable; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIDataTypeToString(dtype: *const DLDataType, out: *mut TVMFFIAny) -> c_int {
    ffi_boundary!("TVMFFIDataTypeToString", {
        check_not_null!(dtype);
        // SAFETY: the caller's contract.
        let (dtype, out) = unsafe { (*dtype, out_param(out, "out")?) };
        *out = string_any(crate::runtime::dlpack::dtype_tvm_ffi::to_string(dtype)?.as_bytes());
        Ok(0)
    })
}

/// Serializes the init-once and deinit-once calls (a handle is set once, by one caller).
static INIT_ONCE: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// Set `*handle_addr` by `init_func` if it is still NULL, once across threads.
///
/// # Safety
/// `handle_addr` must be NULL (an error) or a pointer slot only these functions write;
/// `init_func` NULL (an error) or a function that writes its argument and returns 0 or -1.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIHandleInitOnce(
    handle_addr: *mut *mut c_void,
    init_func: Option<unsafe extern "C" fn(*mut *mut c_void) -> c_int>,
) -> c_int {
    ffi_boundary!("TVMFFIHandleInitOnce", {
        check_not_null!(handle_addr);
        let init = init_func.ok_or_else(|| Error::value("argument `init_func` is NULL"))?;
        let _once = INIT_ONCE.lock();
        // SAFETY: a slot these functions own (caller contract), read and written under the lock.
        unsafe {
            if (*handle_addr).is_null() {
                let mut made = std::ptr::null_mut();
                if init(&mut made) != 0 {
                    return Err(Error::raw(last_error_message().unwrap_or_default()));
                }
                *handle_addr = made;
            }
        }
        Ok(0)
    })
}

/// Undo [`TVMFFIHandleInitOnce`]: `deinit_func(*handle_addr)` if it is set, then NULL.
///
/// # Safety
/// As [`TVMFFIHandleInitOnce`], with `deinit_func` taking the handle.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIHandleDeinitOnce(
    handle_addr: *mut *mut c_void,
    deinit_func: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
) -> c_int {
    ffi_boundary!("TVMFFIHandleDeinitOnce", {
        check_not_null!(handle_addr);
        let deinit = deinit_func.ok_or_else(|| Error::value("argument `deinit_func` is NULL"))?;
        let _once = INIT_ONCE.lock();
        // SAFETY: as in `TVMFFIHandleInitOnce`.
        unsafe {
            let h = *handle_addr;
            if !h.is_null() {
                if deinit(h) != 0 {
                    return Err(Error::raw(last_error_message().unwrap_or_default()));
                }
                *handle_addr = std::ptr::null_mut();
            }
        }
        Ok(0)
    })
}

/// A big integer from its 64-bit words (two's complement, least significant first): a plain int
/// when it fits one word, else an `ffi.BigInt`.
///
/// # Safety
/// `input` must be NULL (an error) or a valid byte array; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIBigIntFromByteArray(input: *const TVMFFIByteArray, out: *mut TVMFFIAny) -> c_int {
    ffi_boundary!("TVMFFIBigIntFromByteArray", {
        check_not_null!(input);
        // SAFETY: the caller's contract.
        let (bytes, out) = unsafe { (byte_array(&*input), out_param(out, "out")?) };
        if bytes.len() % 8 != 0 {
            return Err(Error::value("BigInt content must contain whole 64-bit words"));
        }
        let words: Vec<i64> =
            bytes.chunks_exact(8).map(|w| i64::from_ne_bytes(w.try_into().expect("8 bytes"))).collect();
        let words = normalized_words(&words);
        *out = match words {
            [] => TVMFFIAny::int(ti::INT, 0),
            [w] => TVMFFIAny::int(ti::INT, *w),
            _ => Value::Object(big_int(words.to_vec()).to_object_ref()).into_any(),
        };
        Ok(0)
    })
}

/// The 64-bit words of a big integer value (a plain int: its one word), borrowed from the value.
///
/// # Safety
/// `value` must be an int or a live `ffi.BigInt` value, which outlives the returned array.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIBigIntGetContentByteArray(value: *const TVMFFIAny) -> TVMFFIByteArray {
    ffi_boundary!("TVMFFIBigIntGetContentByteArray", {
        check_not_null!(value);
        // SAFETY: a valid value (caller contract).
        let v = unsafe { &*value };
        if v.type_index == ti::INT {
            return Ok(TVMFFIByteArray { data: &v.value as *const u64 as *const c_char, size: 8 });
        }
        if v.type_index != type_index::BIG_INT as i32 || v.as_ptr().is_null() {
            return Err(Error::type_error(format!("a value of type index {} is not a big integer", v.type_index)));
        }
        // SAFETY: a live `ffi.BigInt` (checked above; the caller keeps it alive).
        let obj =
            std::mem::ManuallyDrop::new(unsafe { ObjPtr::<BigIntObj>::from_raw(v.as_ptr() as *mut ObjectHeader) });
        let words = obj.tail();
        Ok(TVMFFIByteArray { data: words.as_ptr() as *const c_char, size: words.len() * 8 })
    })
}
