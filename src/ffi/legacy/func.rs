//! Packed functions and the global registry.

use crate::abi::{type_code as tc, TVMByteArray, TVMPackedCFunc, TVMPackedCFuncFinalizer, TVMValue};
use crate::ffi::ptr::{borrow_handle, check_type, handle_for_call, out_param, NonNullFn};
use crate::runtime::base::cptr::{array_ptr_or_null, bytes_ptr};
use crate::runtime::base::error::{error_from_callee, last_error_generation, Error, Result};
use crate::runtime::function::packed::{Args, FuncObj, PackedFunc, Value};
use crate::runtime::function::registry;
use crate::runtime::object::header::legacy;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CString};

/// Per-thread storage behind string and byte results of `TVMFuncCall`.
struct ReturnBuffers {
    string: CString,
    bytes: Vec<u8>,
    byte_array: Box<TVMByteArray>,
    names: Vec<CString>,
    name_ptrs: Vec<*const c_char>,
}

thread_local! {
    static RETURN_BUFFERS: RefCell<ReturnBuffers> = RefCell::new(ReturnBuffers {
        string: CString::default(),
        bytes: Vec::new(),
        byte_array: Box::new(TVMByteArray { data: std::ptr::null(), size: 0 }),
        names: Vec::new(),
        name_ptrs: Vec::new(),
    });
}

/// Whether `arr` is this thread's byte-result buffer (which must not be freed).
pub(crate) fn is_return_byte_array(arr: *const TVMByteArray) -> bool {
    RETURN_BUFFERS.with(|b| std::ptr::eq(&*b.borrow().byte_array, arr))
}

/// Move a result into the C representation: objects leave with one owned reference,
/// strings and bytes go through this thread's buffers.
pub(crate) fn value_to_c(v: Value) -> Result<(TVMValue, c_int)> {
    Ok(match v {
        Value::Null => (TVMValue::null(), tc::NULLPTR),
        Value::Int(i) => (TVMValue { v_int64: i }, tc::INT),
        Value::Bool(b) => (TVMValue { v_int64: b as i64 }, tc::BOOL),
        Value::Float(f) => (TVMValue { v_float64: f }, tc::FLOAT),
        Value::Handle(h) => (TVMValue { v_handle: h }, tc::OPAQUE_HANDLE),
        Value::Device(d) => (TVMValue { v_device: d }, tc::DEVICE),
        Value::DLTensor(t) => (TVMValue { v_handle: t.as_ptr() as *mut c_void }, tc::DLTENSOR_HANDLE),
        Value::DataType(t) => return value_to_c(Value::Str(t.to_string())),
        Value::Str(_) | Value::RawStr(_) => {
            let c = match v {
                Value::Str(s) => CString::new(s).map_err(|_| Error::value("returned string contains a NUL byte"))?,
                Value::RawStr(c) => c,
                _ => unreachable!(),
            };
            let p = RETURN_BUFFERS.with(|b| {
                let mut b = b.borrow_mut();
                b.string = c;
                b.string.as_ptr()
            });
            (TVMValue { v_str: p }, tc::STR)
        }
        Value::Bytes(bytes) => {
            let p = RETURN_BUFFERS.with(|b| {
                let mut b = b.borrow_mut();
                b.bytes = bytes;
                let arr = TVMByteArray { data: bytes_ptr(&b.bytes), size: b.bytes.len() };
                *b.byte_array = arr;
                &*b.byte_array as *const TVMByteArray as *mut c_void
            });
            (TVMValue { v_handle: p }, tc::BYTES)
        }
        Value::NDArray(a) => {
            let h = a.as_dltensor_ptr() as *mut c_void;
            let _ = a.into_raw();
            (TVMValue { v_handle: h }, tc::NDARRAY_HANDLE)
        }
        Value::Module(m) => (TVMValue { v_handle: m.into_legacy() }, tc::MODULE_HANDLE),
        Value::Func(f) => (TVMValue { v_handle: f.into_legacy() }, tc::PACKED_FUNC_HANDLE),
        Value::Object(o) => (TVMValue { v_handle: o.into_legacy() }, tc::OBJECT_HANDLE),
    })
}

/// Call a packed function. Arguments are borrowed; object results come with one owned
/// reference; string/bytes results live in thread-local buffers until the next such call.
///
/// # Safety
/// `func` must be NULL (an error) or a live object handle of this runtime (its type is checked);
/// `arg_values` and `type_codes` must each point to `num_args` elements (NULL allowed when
/// `num_args` is 0), every value valid for its type code during the call; `ret_val` and
/// `ret_type_code` must be NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMFuncCall(
    func: *mut c_void,
    arg_values: *mut TVMValue,
    type_codes: *mut c_int,
    num_args: c_int,
    ret_val: *mut TVMValue,
    ret_type_code: *mut c_int,
) -> c_int {
    ffi_boundary!("TVMFuncCall", {
        check_not_null!(func, ret_val, ret_type_code);
        // SAFETY: `func` is a live handle the caller keeps for the call (caller contract); its
        // type is checked.
        let f = unsafe { handle_for_call::<FuncObj>(func, "PackedFunc")? };
        let n = usize::try_from(num_args).map_err(|_| Error::value(format!("negative num_args {num_args}")))?;
        // SAFETY: the caller passes `num_args` values and codes.
        let args = unsafe { Args::from_raw(arg_values, type_codes, n)? };
        let result = f.call_args(args)?;
        let (v, code) = value_to_c(result)?;
        // SAFETY: both out-pointers were checked for NULL.
        unsafe {
            *ret_val = v;
            *ret_type_code = code;
        }
        Ok(0)
    })
}

/// A C callback with its resource handle; the finalizer runs when the function dies.
struct CCallback {
    func: NonNullFn<TVMPackedCFunc>,
    resource: *mut c_void,
    fin: TVMPackedCFuncFinalizer,
}

// SAFETY: TVM's contract for C callbacks: they may be called from any thread, and the
// resource handle is owned by the function object.
unsafe impl Send for CCallback {}
// SAFETY: as above.
unsafe impl Sync for CCallback {}

impl Drop for CCallback {
    fn drop(&mut self) {
        if let Some(fin) = self.fin {
            // SAFETY: the finalizer was given with this resource handle and runs exactly once.
            unsafe { fin(self.resource) };
        }
    }
}

/// Wrap a C callback as a packed function (owned handle out). `fin(resource_handle)` runs when
/// the last reference is released.
///
/// # Safety
/// `func` must be NULL (an error) or a callback callable from any thread with `resource_handle`
/// while the function lives; `fin`, if not NULL, is called once with `resource_handle`; `out` must
/// be NULL (an error) or valid for writing one handle.
#[no_mangle]
pub unsafe extern "C" fn TVMFuncCreateFromCFunc(
    func: TVMPackedCFunc,
    resource_handle: *mut c_void,
    fin: TVMPackedCFuncFinalizer,
    out: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMFuncCreateFromCFunc", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out = unsafe { out_param(out, "out")? };
        let func = func.ok_or_else(|| Error::value("argument `func` is NULL"))?;
        let cb = CCallback { func, resource: resource_handle, fin };
        let f = PackedFunc::from_fn(move |args: Args<'_>, ret: &mut Value| {
            let cb = &cb;
            let generation = last_error_generation();
            // SAFETY: the callback receives the caller's arrays unchanged and our return slot,
            // which it may only touch through TVMCFuncSetReturn during this call.
            let rc = unsafe {
                (cb.func)(
                    args.values_ptr(),
                    args.codes_ptr(),
                    args.len() as c_int,
                    ret as *mut Value as *mut c_void,
                    cb.resource,
                )
            };
            if rc != 0 {
                return Err(error_from_callee(generation, || {
                    Error::runtime(format!("callback returned {rc} without setting an error message"))
                }));
            }
            Ok(())
        });
        *out = f.into_legacy();
        Ok(0)
    })
}

/// Set a C callback's return value. Strings and bytes are copied; objects get a new reference
/// (the callback keeps its own). `num_ret` must be 1.
///
/// # Safety
/// `ret` must be NULL (an error) or exactly the return slot the runtime passed to the callback that
/// is running on this thread; `value` and `type_code` must be NULL (an error) or point to one value
/// valid for its type code.
#[no_mangle]
pub unsafe extern "C" fn TVMCFuncSetReturn(
    ret: *mut c_void,
    value: *mut TVMValue,
    type_code: *mut c_int,
    num_ret: c_int,
) -> c_int {
    ffi_boundary!("TVMCFuncSetReturn", {
        check_not_null!(ret, value, type_code);
        if num_ret != 1 {
            return Err(Error::value(format!("TVMCFuncSetReturn supports exactly 1 return value, got {num_ret}")));
        }
        // SAFETY: one value and code (checked non-NULL).
        let args = unsafe { Args::from_raw(value, type_code, 1)? };
        let v = args.to_value(0)?;
        // SAFETY: `ret` is the return slot the runtime passed to the running callback.
        unsafe { *(ret as *mut Value) = v };
        Ok(0)
    })
}

/// Turn a callback argument into a value the callback may return as its own: object-like
/// values gain a reference (rvalue references are moved out). Strings and bytes cannot.
///
/// # Safety
/// `value` and `code` must be NULL (an error) or valid for reads and writes of one value and its
/// type code, the value valid for that code (for an rvalue reference, `v_handle` points to a slot
/// holding NULL or an owned object handle, which is moved out).
#[no_mangle]
pub unsafe extern "C" fn TVMCbArgToReturn(value: *mut TVMValue, code: *mut c_int) -> c_int {
    ffi_boundary!("TVMCbArgToReturn", {
        check_not_null!(value, code);
        // SAFETY: both pointers checked; `value` holds a value of type `*code`.
        unsafe {
            match *code {
                tc::STR | tc::BYTES => {
                    return Err(Error::type_error("TVMCbArgToReturn cannot convert str or bytes arguments"))
                }
                tc::OBJECT_HANDLE | tc::MODULE_HANDLE | tc::PACKED_FUNC_HANDLE | tc::NDARRAY_HANDLE => {
                    let args = Args::from_raw(value, code, 1)?;
                    std::mem::forget(args.object(0)?);
                }
                tc::OBJECT_RVALUE_REF_ARG => {
                    let slot = (*value).v_handle as *mut *mut c_void;
                    check_not_null!(slot);
                    if !(*slot).is_null() {
                        legacy::checked_header(*slot, "object")?;
                    }
                    let handle = std::ptr::replace(slot, std::ptr::null_mut());
                    if handle.is_null() {
                        *value = TVMValue::null();
                        *code = tc::NULLPTR;
                    } else {
                        let obj = crate::runtime::object::header::ObjectRef::from_raw(legacy::header(handle));
                        let (v, c) = value_to_c(Value::from_object(obj))?;
                        *value = v;
                        *code = c;
                    }
                }
                _ => {}
            }
        }
        Ok(0)
    })
}

/// Release a function handle (NULL is a no-op, as in TVM).
///
/// # Safety
/// `func` must be NULL or a live object handle of this runtime (its type is checked) holding one
/// reference that the caller owns and gives up.
#[no_mangle]
pub unsafe extern "C" fn TVMFuncFree(func: *mut c_void) -> c_int {
    ffi_boundary!("TVMFuncFree", {
        if func.is_null() {
            return Ok(0);
        }
        // SAFETY: live handle (caller contract); its type is checked before the caller's
        // reference is released.
        unsafe {
            let header = check_type::<FuncObj>(func, "PackedFunc")?;
            crate::runtime::object::header::release(header);
        }
        Ok(0)
    })
}

/// Register `f` as a global named `name` (the registry takes its own reference).
/// An existing name is an error unless `override` is non-zero.
///
/// # Safety
/// `name` must be NULL (an error) or a NUL-terminated string; `f` must be NULL (an error) or a live
/// object handle of this runtime (its type is checked).
#[no_mangle]
pub unsafe extern "C" fn TVMFuncRegisterGlobal(name: *const c_char, f: *mut c_void, override_: c_int) -> c_int {
    ffi_boundary!("TVMFuncRegisterGlobal", {
        check_not_null!(f);
        // SAFETY: C string argument (caller contract).
        let name = unsafe { c_str!(name)? };
        // SAFETY: live handle (caller contract); type checked.
        let func = unsafe { borrow_handle::<FuncObj>(f, "PackedFunc")? };
        registry::register(name, func, override_ != 0)?;
        Ok(0)
    })
}

/// Look up a global function: `*out` is an owned handle, or NULL when the name is unknown.
///
/// # Safety
/// `name` must be NULL (an error) or a NUL-terminated string; `out` must be NULL (an error) or
/// valid for writing one handle.
#[no_mangle]
pub unsafe extern "C" fn TVMFuncGetGlobal(name: *const c_char, out: *mut *mut c_void) -> c_int {
    ffi_boundary!("TVMFuncGetGlobal", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out = unsafe { out_param(out, "out")? };
        // SAFETY: C string argument (caller contract).
        let name = unsafe { c_str!(name)? };
        let handle = registry::get(name).map_or(std::ptr::null_mut(), |f| f.into_legacy());
        *out = handle;
        Ok(0)
    })
}

/// List global names. The array and strings live in thread-local storage until the next call
/// on this thread.
///
/// # Safety
/// `out_size` and `out_array` must be NULL (an error) or writable. The returned array and strings
/// must not be used after the next call on this thread or the thread's exit.
#[no_mangle]
pub unsafe extern "C" fn TVMFuncListGlobalNames(out_size: *mut c_int, out_array: *mut *mut *const c_char) -> c_int {
    ffi_boundary!("TVMFuncListGlobalNames", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out_size = unsafe { out_param(out_size, "out_size")? };
        let out_array = unsafe { out_param(out_array, "out_array")? };
        let names = registry::list_names();
        let (ptr, n) = RETURN_BUFFERS.with(|b| {
            let mut b = b.borrow_mut();
            b.names = names.into_iter().filter_map(|s| CString::new(s).ok()).collect();
            let ptrs: Vec<*const c_char> = b.names.iter().map(|s| s.as_ptr()).collect();
            b.name_ptrs = ptrs;
            (array_ptr_or_null(&b.name_ptrs), b.name_ptrs.len())
        });
        let n = c_int::try_from(n).map_err(|_| Error::internal("too many global functions"))?;
        *out_size = n;
        *out_array = ptr;
        Ok(0)
    })
}

/// Remove a global function (no error if it does not exist).
///
/// # Safety
/// `name` must be NULL (an error) or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn TVMFuncRemoveGlobal(name: *const c_char) -> c_int {
    ffi_boundary!("TVMFuncRemoveGlobal", {
        // SAFETY: C string argument (caller contract).
        let name = unsafe { c_str!(name)? };
        registry::remove(name);
        Ok(0)
    })
}

/// Release a byte array. The thread-local result buffer of `TVMFuncCall` is not freed (no-op);
/// this runtime hands out no other byte arrays, so anything else is an error.
///
/// # Safety
/// None: `arr` is only compared with this thread's result buffer, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn TVMByteArrayFree(arr: *mut TVMByteArray) -> c_int {
    ffi_boundary!("TVMByteArrayFree", {
        if arr.is_null() || is_return_byte_array(arr) {
            return Ok(0);
        }
        Err(Error::value(format!("byte array {arr:p} was not allocated by this runtime")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// 1 when the last call saw NULL arrays and no arguments, 2 otherwise.
    static SEEN: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn record(
        values: *mut TVMValue,
        codes: *mut c_int,
        n: c_int,
        _ret: *mut c_void,
        _resource: *mut c_void,
    ) -> c_int {
        let null_arrays = values.is_null() && codes.is_null() && n == 0;
        SEEN.store(if null_arrays { 1 } else { 2 }, Ordering::SeqCst);
        0
    }

    #[test]
    fn a_callback_without_arguments_gets_null_arrays_not_dangling_pointers() {
        let mut h: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid callback and out-pointer.
        assert_eq!(unsafe { TVMFuncCreateFromCFunc(Some(record), std::ptr::null_mut(), None, &mut h) }, 0);
        // SAFETY: `h` is the live function just created.
        let f = unsafe { borrow_handle::<FuncObj>(h, "PackedFunc") }.unwrap();
        f.call(&[]).unwrap();
        assert_eq!(SEEN.load(Ordering::SeqCst), 1, "an empty Rust slice's pointer reached C");
        f.call(&[Value::Int(1)]).unwrap();
        assert_eq!(SEEN.load(Ordering::SeqCst), 2);
        drop(f);
        // SAFETY: we own the handle.
        assert_eq!(unsafe { TVMFuncFree(h) }, 0);
    }
}
