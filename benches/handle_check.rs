//! The cost of the checked-handle mode (`TVM_RUNTIME_CHECK_HANDLES=1`) on the calls it adds
//! work to: `TVMFuncCall` (the function handle is looked up in the live set; an object argument
//! a function reads is looked up too) and making and freeing an object (it registers, leaves the
//! set, and its memory waits in the quarantine).
//!
//! The mode is decided once per process, so this binary re-executes itself: each round runs one
//! child with the mode off and one with it on, alternately, each measuring every case; the
//! parent reports the median over rounds of each child's medians, side by side.

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::ffi::c_void;
use std::time::Duration;
use tvm_runtime::abi::{type_code as tc, TVMValue};
use tvm_runtime::ffi::legacy::func::{TVMFuncCall, TVMFuncCreateFromCFunc, TVMFuncFree, TVMFuncGetGlobal};

const CHILD: &str = "BENCH_HANDLE_CHECK_CHILD";
const CASES: [&str; 4] = [
    "TVMFuncCall, C callback, no arguments",
    "TVMFuncCall, C callback, int + object arguments",
    "TVMFuncCall, runtime.ModuleImportsSize(module)",
    "TVMFuncCreateFromCFunc + TVMFuncFree",
];

unsafe extern "C" fn nothing(_: *mut TVMValue, _: *mut i32, _: i32, _: *mut c_void, _: *mut c_void) -> i32 {
    0
}

fn make_callback() -> *mut c_void {
    let mut h = std::ptr::null_mut();
    // SAFETY: a valid callback and out-pointer.
    check(unsafe { TVMFuncCreateFromCFunc(Some(nothing), std::ptr::null_mut(), None, &mut h) }, "create");
    h
}

fn global(name: &std::ffi::CStr) -> *mut c_void {
    let mut h = std::ptr::null_mut();
    // SAFETY: a NUL-terminated name and a valid out-pointer.
    check(unsafe { TVMFuncGetGlobal(name.as_ptr(), &mut h) }, "global");
    assert!(!h.is_null());
    h
}

/// Calls `f` with the given arguments; the result must be an int or nothing (no ownership).
fn call(f: *mut c_void, values: &mut [TVMValue], codes: &mut [i32]) {
    let (mut rv, mut rc) = (TVMValue::null(), 0);
    // SAFETY: a live function; `values`/`codes` of equal length; valid out-pointers.
    let status =
        unsafe { TVMFuncCall(f, values.as_mut_ptr(), codes.as_mut_ptr(), values.len() as i32, &mut rv, &mut rc) };
    check(status, "TVMFuncCall");
    keep(rv);
}

/// The child: measure every case in this process's mode; print `index median min` lines.
fn child() {
    let cb = make_callback();
    let syslib = {
        let f = global(c"runtime.SystemLib");
        let (mut rv, mut rc) = (TVMValue::null(), 0);
        // SAFETY: a live function, no arguments, valid out-pointers.
        check(unsafe { TVMFuncCall(f, std::ptr::null_mut(), std::ptr::null_mut(), 0, &mut rv, &mut rc) }, "SystemLib");
        assert_eq!(rc, tc::MODULE_HANDLE);
        // SAFETY: a module result.
        unsafe { rv.v_handle }
    };
    let imports_size = global(c"runtime.ModuleImportsSize");
    let mut no_args = || call(cb, &mut [], &mut []);
    let mut two_args =
        || call(cb, &mut [TVMValue { v_int64: 7 }, TVMValue { v_handle: syslib }], &mut [tc::INT, tc::MODULE_HANDLE]);
    let mut module_arg = || call(imports_size, &mut [TVMValue { v_handle: syslib }], &mut [tc::MODULE_HANDLE]);
    let mut make_free = || {
        let f = make_callback();
        // SAFETY: we own `f`.
        check(unsafe { TVMFuncFree(f) }, "free");
    };
    let stats = compare_stats(
        &mut [&mut no_args, &mut two_args, &mut module_arg, &mut make_free],
        Duration::from_millis(10),
        3,
        5,
    );
    for (i, s) in stats.iter().enumerate() {
        println!("{i} {} {}", s.median, s.min);
    }
}

/// One child run in the given mode: (median, min) ns per case.
fn run_child(checked: bool) -> Vec<(f64, f64)> {
    run_self(&[(CHILD, "1"), ("TVM_RUNTIME_CHECK_HANDLES", if checked { "1" } else { "0" })])
        .lines()
        .map(|l| {
            let f: Vec<f64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            (f[1], f[2])
        })
        .collect()
}

fn main() {
    tvm_runtime::init();
    if std::env::var_os(CHILD).is_some() {
        assert_eq!(
            tvm_runtime::runtime::object::live::checking(),
            std::env::var("TVM_RUNTIME_CHECK_HANDLES").as_deref() == Ok("1"),
            "the child runs in the mode it was given"
        );
        child();
        return;
    }
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(4);
    let mut off: Vec<Vec<(f64, f64)>> = vec![Vec::new(); CASES.len()];
    let mut on = off.clone();
    for _ in 0..rounds {
        for (i, r) in run_child(false).into_iter().enumerate() {
            off[i].push(r);
        }
        for (i, r) in run_child(true).into_iter().enumerate() {
            on[i].push(r);
        }
    }
    println!("handle_check: {rounds} rounds of one unchecked and one checked process; {}", load_note());
    for (i, case) in CASES.iter().enumerate() {
        let med = |v: &[(f64, f64)]| median(&mut v.iter().map(|r| r.0).collect::<Vec<_>>());
        let best = |v: &[(f64, f64)]| v.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
        // TVMFuncCall: a live-set lookup (a lock and a hash probe) per handle, ~5-8 ns.
        let target = if i < 3 { Some(1.3) } else { None };
        let name = format!("handle_check ({case})");
        report(&name, "checked", med(&on[i]), "unchecked", med(&off[i]), "ns", target);
        report_best(&name, "checked", best(&on[i]), "unchecked", best(&off[i]), "ns");
    }
}
