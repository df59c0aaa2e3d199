//! Checked handles (`TVM_RUNTIME_CHECK_HANDLES`, switched on for this process by
//! `common::check_handles`): stale and made-up module, function, NDArray and object handles are
//! errors naming the handle, the objects made since are untouched, and the process keeps
//! working, also with threads making, freeing and misusing handles at once.

mod common;

use common::*;
use std::ffi::c_void;
use tvm_runtime::abi::{type_code as tc, DLTensor, TVMValue};
use tvm_runtime::ffi::legacy::array::{TVMArrayAlloc, TVMArrayFree};
use tvm_runtime::ffi::legacy::func::{TVMFuncCall, TVMFuncCreateFromCFunc, TVMFuncFree};
use tvm_runtime::ffi::legacy::module::{TVMModFree, TVMModGetFunction};
use tvm_runtime::ffi::legacy::object::{TVMObjectFree, TVMObjectGetTypeIndex, TVMObjectRetain};
use tvm_runtime::runtime::object::live;

const NOT_LIVE: &str = "is not live (freed already, or not created by this runtime)";

fn checked() {
    assert!(check_handles(), "the checked mode must be on in this test process");
}

/// A kernel library of this test's own (a library loaded twice is one module while any
/// reference to it lives, and tests run in parallel).
fn kernels(test: &str) -> std::path::PathBuf {
    build_so(&scratch("handles").join(format!("kernels_{test}.so")), &[kernels_c()], None)
}

/// Return the int `v` from a callback through its return slot `ret`.
///
/// # Safety
/// `ret` must be the slot the runtime passed to the callback.
unsafe fn return_int(ret: *mut c_void, v: i64) -> i32 {
    let (mut v, mut c) = (TVMValue { v_int64: v }, tc::INT);
    // SAFETY: `ret` is the callback's return slot (this function's contract).
    unsafe { tvm_runtime::ffi::legacy::func::TVMCFuncSetReturn(ret, &mut v, &mut c, 1) }
}

unsafe extern "C" fn answer(
    _values: *mut TVMValue,
    _codes: *mut i32,
    _n: i32,
    ret: *mut c_void,
    resource: *mut c_void,
) -> i32 {
    // SAFETY: `ret` is the slot the runtime passed to this callback.
    unsafe { return_int(ret, resource as i64) }
}

fn make_func(n: i64) -> *mut c_void {
    let mut h = std::ptr::null_mut();
    // SAFETY: a valid callback and out-pointer.
    ok(unsafe { TVMFuncCreateFromCFunc(Some(answer), n as *mut c_void, None, &mut h) });
    h
}

fn call_int(f: *mut c_void) -> Result<i64, String> {
    let (mut rv, mut rc) = (TVMValue::null(), 0);
    // SAFETY: `f` may be anything: the checked mode validates it; out-pointers are valid.
    if unsafe { TVMFuncCall(f, std::ptr::null_mut(), std::ptr::null_mut(), 0, &mut rv, &mut rc) } != 0 {
        return Err(last_error());
    }
    // SAFETY: an int result.
    Ok(unsafe { rv.v_int64 })
}

/// A callback freeing its own function handle (the slot `resource` points to), then answering 7.
unsafe extern "C" fn free_self(
    _values: *mut TVMValue,
    _codes: *mut i32,
    _n: i32,
    ret: *mut c_void,
    resource: *mut c_void,
) -> i32 {
    // SAFETY: `resource` is the test's slot holding this function's handle.
    let handle = unsafe { *(resource as *mut *mut c_void) };
    // SAFETY: a handle of this runtime; the call under way holds its own reference (checked mode).
    if unsafe { TVMFuncFree(handle) } != 0 {
        return -1;
    }
    // SAFETY: `ret` is the slot the runtime passed to this callback.
    unsafe { return_int(ret, 7) }
}

/// With handles checked, a call holds a reference to its function: a function freeing its own
/// handle finishes its call, and the handle is dead after it.
#[test]
fn a_function_freeing_its_own_handle_finishes_its_call() {
    checked();
    let mut slot: Box<*mut c_void> = Box::new(std::ptr::null_mut());
    let mut h = std::ptr::null_mut();
    // SAFETY: a valid callback, a resource slot that outlives the function, an out-pointer.
    ok(unsafe { TVMFuncCreateFromCFunc(Some(free_self), &mut *slot as *mut *mut c_void as *mut c_void, None, &mut h) });
    *slot = h;
    assert_eq!(call_int(h), Ok(7));
    assert!(call_int(h).unwrap_err().contains(NOT_LIVE));
}

fn fails(rc: i32, want: &str) {
    assert_eq!(rc, -1, "the call should fail with {want:?}");
    let e = last_error();
    assert!(e.contains(want), "error {e:?} should contain {want:?}");
}

#[test]
fn modules_freed_twice_or_made_up_are_errors() {
    checked();
    let so = kernels("modules");
    let a = load_module(&so).unwrap();
    let stale = a.0;
    drop(a);
    let b = load_module(&so).unwrap();
    assert_ne!(b.0, stale, "a freed module's address is held back in the checked mode");
    // SAFETY (all calls below): handles may be anything in the checked mode; out-pointers valid.
    unsafe {
        fails(TVMModFree(stale), &format!("module handle {stale:p} {NOT_LIVE}"));
        let mut f = std::ptr::null_mut();
        fails(TVMModGetFunction(stale, c"tvmgen_default_fused_add".as_ptr(), 0, &mut f), NOT_LIVE);
        fails(
            TVMModGetFunction(0x10 as *mut c_void, c"tvmgen_default_fused_add".as_ptr(), 0, &mut f),
            &format!("module handle 0x10 {NOT_LIVE}"),
        );
        fails(TVMModFree(0x10 as *mut c_void), NOT_LIVE);
    }
    assert!(get_function(&b, "tvmgen_default_fused_add").is_some(), "the new module works");
}

#[test]
fn functions_freed_twice_or_made_up_are_errors() {
    checked();
    let f1 = make_func(1);
    assert_eq!(call_int(f1).unwrap(), 1);
    // SAFETY: we own `f1`.
    ok(unsafe { TVMFuncFree(f1) });
    let f2 = make_func(2);
    // SAFETY: stale and made-up handles are validated in the checked mode.
    unsafe {
        fails(TVMFuncFree(f1), &format!("function handle {f1:p} {NOT_LIVE}"));
        fails(TVMFuncFree(0x10 as *mut c_void), &format!("function handle 0x10 {NOT_LIVE}"));
    }
    assert!(call_int(f1).unwrap_err().contains(NOT_LIVE));
    assert!(call_int(0x10 as *mut c_void).unwrap_err().contains("function handle 0x10"));
    assert_eq!(call_int(f2).unwrap(), 2, "the new function works");
    // SAFETY: we own `f2`.
    ok(unsafe { TVMFuncFree(f2) });
}

#[test]
fn arrays_and_objects_freed_twice_or_made_up_are_errors() {
    checked();
    let alloc = || {
        let mut h: *mut DLTensor = std::ptr::null_mut();
        // SAFETY: a valid shape and out-pointer.
        ok(unsafe { TVMArrayAlloc([4i64].as_ptr(), 1, 2, 32, 1, 1, 0, &mut h) });
        h
    };
    let a1 = alloc();
    // SAFETY: we own `a1`.
    ok(unsafe { TVMArrayFree(a1) });
    let a2 = alloc();
    // SAFETY: stale and made-up handles are validated in the checked mode.
    unsafe {
        fails(TVMArrayFree(a1), &format!("NDArray handle {a1:p} {NOT_LIVE}"));
        fails(TVMArrayFree(0x10 as *mut DLTensor), NOT_LIVE);
        // the same objects through the generic object calls (an NDArray object is 16 bytes
        // before its handle)
        let o1 = (a1 as *mut u8).wrapping_sub(16) as *mut c_void;
        let o2 = (a2 as *mut u8).wrapping_sub(16) as *mut c_void;
        fails(TVMObjectFree(o1), &format!("object handle {o1:p} {NOT_LIVE}"));
        fails(TVMObjectRetain(o1), NOT_LIVE);
        let mut ti = 0u32;
        fails(TVMObjectGetTypeIndex(0x10 as *mut c_void, &mut ti), &format!("object handle 0x10 {NOT_LIVE}"));
        ok(TVMObjectGetTypeIndex(o2, &mut ti));
        assert_eq!(ti, 2, "the new array is untouched");
        ok(TVMObjectRetain(o2));
        ok(TVMObjectFree(o2));
        ok(TVMArrayFree(a2));
        fails(TVMArrayFree(a2), NOT_LIVE);
    }
}

#[test]
fn stale_handles_as_arguments_are_errors() {
    checked();
    let type_key = global("runtime.ModuleGetTypeKey");
    let m = load_module(&kernels("arguments")).unwrap();
    let stale = m.0;
    drop(m);
    let e = call(&type_key, &[Arg::Object(stale)]).unwrap_err();
    assert!(e.contains(&format!("argument 0: object handle {stale:p} {NOT_LIVE}")), "{e}");
    let e = call(&type_key, &[Arg::Object(0x20 as *mut c_void)]).unwrap_err();
    assert!(e.contains(NOT_LIVE), "{e}");
}

#[test]
fn threads_making_freeing_and_misusing_handles() {
    checked();
    let workers: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..500 {
                    let n = t * 1000 + i;
                    let f = make_func(n);
                    assert_eq!(call_int(f).unwrap(), n);
                    // SAFETY: we own `f`; the second free is validated.
                    unsafe {
                        ok(TVMFuncFree(f));
                        fails(TVMFuncFree(f), NOT_LIVE);
                    }
                    assert!(call_int(f).is_err());
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}

#[test]
fn memory_held_back_is_returned_after_the_quarantine() {
    checked();
    // More deaths than the quarantine holds: the oldest blocks go back to the allocator (and
    // their handles stay dead: nothing registers them again unless a new object gets the address).
    let first = make_func(7);
    // SAFETY: we own `first`.
    ok(unsafe { TVMFuncFree(first) });
    for i in 0..live::QUARANTINE + 100 {
        let f = make_func(i as i64);
        // SAFETY: we own `f`.
        ok(unsafe { TVMFuncFree(f) });
    }
    let f = make_func(3);
    assert_eq!(call_int(f).unwrap(), 3);
    // SAFETY: we own `f`.
    ok(unsafe { TVMFuncFree(f) });
}

static FOREIGN_DELETES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

unsafe extern "C" fn foreign_delete(_obj: *mut c_void, _flags: i32) {
    FOREIGN_DELETES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

#[test]
fn objects_made_by_foreign_tvm_ffi_code_pass_the_check_and_made_up_ones_do_not() {
    use tvm_runtime::ffi::tvm_ffi::c_api::{TVMFFIObjectDecRef, TVMFFIObjectIncRef};
    checked();
    // A tvm-ffi object header as C++ code compiled against tvm-ffi's headers lays it out (strong
    // and weak count 1, `ffi.Object`, padding 0, its own deleter), which this runtime never saw.
    #[repr(C)]
    struct Header {
        count: u64,
        type_index: u32,
        padding: u32,
        deleter: unsafe extern "C" fn(*mut c_void, i32),
    }
    let mut foreign = Box::new(Header { count: 1 | 1 << 32, type_index: 64, padding: 0, deleter: foreign_delete });
    let h = &mut *foreign as *mut Header as *mut c_void;
    // SAFETY: a readable object header; its deleter only counts.
    unsafe {
        ok(TVMFFIObjectIncRef(h));
        assert_eq!(foreign.count & 0xffff_ffff, 2);
        ok(TVMFFIObjectDecRef(h));
        ok(TVMFFIObjectDecRef(h));
    }
    assert_eq!(FOREIGN_DELETES.load(std::sync::atomic::Ordering::SeqCst), 1, "released by its own deleter");
    // Not objects: zeroed memory (no count), an unmapped address, this runtime's own mark on a
    // header it never made.
    let mut zeroed = [0u64; 4];
    let marked =
        Box::new(Header { count: 1 | 1 << 32, type_index: 64, padding: live::MADE_HERE, deleter: foreign_delete });
    // SAFETY: made-up handles are validated in the checked mode.
    unsafe {
        fails(TVMFFIObjectIncRef(zeroed.as_mut_ptr().cast()), NOT_LIVE);
        fails(TVMFFIObjectIncRef(0x10 as *mut c_void), NOT_LIVE);
        fails(TVMFFIObjectIncRef(&*marked as *const Header as *mut c_void), NOT_LIVE);
    }
}
