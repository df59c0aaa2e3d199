//! `TVMBackendAllocWorkspace` + `TVMBackendFreeWorkspace` of 1 MiB on the CPU (the pair a
//! kernel runs around its scratch buffer) vs the physical limit: a bare thread-local
//! pointer-bump allocator doing the same alloc + free through non-inlined functions.
//! When the TVM peer (benches/setup_tvm_peer.sh) is installed, TVM's own pair is shown too.

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::time::Duration;

const NBYTES: u64 = 1 << 20;
const ARENA: usize = 8 << 20;

type AllocFn = unsafe extern "C" fn(c_int, c_int, u64, c_int, c_int) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(c_int, c_int, *mut c_void) -> c_int;

thread_local! {
    /// (arena base, bump offset)
    static BUMP: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Same signature as TVMBackendAllocWorkspace: 64-byte aligned bump from a thread-local arena.
#[inline(never)]
extern "C" fn bump_alloc(_dt: c_int, _di: c_int, nbytes: u64, _c: c_int, _b: c_int) -> *mut c_void {
    BUMP.with(|b| {
        let (mut base, off) = b.get();
        if base == 0 {
            base = Box::leak(vec![0u8; ARENA + 64].into_boxed_slice()).as_mut_ptr() as usize;
            base = (base + 63) & !63;
        }
        let size = (nbytes as usize + 63) & !63;
        if off + size > ARENA {
            return std::ptr::null_mut();
        }
        b.set((base, off + size));
        (base + off) as *mut c_void
    })
}

/// Same signature as TVMBackendFreeWorkspace: LIFO free, the bump pointer goes back.
#[inline(never)]
extern "C" fn bump_free(_dt: c_int, _di: c_int, ptr: *mut c_void) -> c_int {
    BUMP.with(|b| {
        let (base, _) = b.get();
        b.set((base, ptr as usize - base));
    });
    0
}

fn pair(alloc: AllocFn, free: FreeFn) -> impl FnMut() {
    move || unsafe {
        let (alloc, free) = (keep(alloc), keep(free));
        let p = alloc(1, 0, keep(NBYTES), 2, 32);
        debug_assert!(!p.is_null());
        keep(free(1, 0, keep(p)));
    }
}

fn check(name: &str, alloc: AllocFn, free: FreeFn) {
    unsafe {
        let p = alloc(1, 0, NBYTES, 2, 32);
        assert!(!p.is_null() && p as usize % 64 == 0, "{name}: bad workspace {p:p}");
        // Touch it all: a real 1 MiB block, not a fake pointer.
        std::ptr::write_bytes(p as *mut u8, 1, NBYTES as usize);
        assert_eq!(free(1, 0, p), 0, "{name}: free failed");
        let q = alloc(1, 0, NBYTES, 2, 32);
        assert_eq!(p, q, "{name}: the block is reused");
        assert_eq!(free(1, 0, q), 0);
    }
}

/// TVM's pair from the peer library, when installed.
fn peer() -> Result<(AllocFn, FreeFn), String> {
    let (l, lib) = load_peer_library()?;
    let get = |name: &str| {
        unsafe { l.get::<*mut c_void>(name.as_bytes()).map(|s| *s) }.map_err(|e| format!("{}: {e}", lib.display()))
    };
    let (a, f) = (get("TVMBackendAllocWorkspace")?, get("TVMBackendFreeWorkspace")?);
    std::mem::forget(l);
    // SAFETY: TVM's exports with these C signatures.
    unsafe { Ok((std::mem::transmute::<*mut c_void, AllocFn>(a), std::mem::transmute::<*mut c_void, FreeFn>(f))) }
}

fn main() {
    let ours: (AllocFn, FreeFn) = (
        tvm_runtime::ffi::legacy::backend::TVMBackendAllocWorkspace,
        tvm_runtime::ffi::legacy::backend::TVMBackendFreeWorkspace,
    );
    let bump: (AllocFn, FreeFn) = (bump_alloc, bump_free);
    check("ours", ours.0, ours.1);
    check("bump", bump.0, bump.1);
    let tvm = peer();
    if let Ok((a, f)) = tvm {
        check("tvm", a, f);
    }
    let mut a = pair(ours.0, ours.1);
    let mut b = pair(bump.0, bump.1);
    // Short samples, many of them, interleaved (the machine is shared).
    let sample = Duration::from_millis(2);
    match tvm {
        Ok((ta, tf)) => {
            let mut c = pair(ta, tf);
            let r = compare_stats(&mut [&mut a, &mut b, &mut c], sample, 40, 5);
            report("workspace_1mib", "ours", r[0].median, "bump", r[1].median, "ns", Some(2.0));
            report_best("workspace_1mib", "ours", r[0].min, "bump", r[1].min, "ns");
            report("workspace_1mib (peer)", "ours", r[0].median, "tvm", r[2].median, "ns", None);
        }
        Err(why) => {
            let r = compare_stats(&mut [&mut a, &mut b], sample, 40, 5);
            report("workspace_1mib", "ours", r[0].median, "bump", r[1].median, "ns", Some(2.0));
            report_best("workspace_1mib", "ours", r[0].min, "bump", r[1].min, "ns");
            println!("workspace_1mib (peer): skipped: {why}");
        }
    }
}
