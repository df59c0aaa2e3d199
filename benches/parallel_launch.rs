//! Empty `TVMBackendParallelLaunch` (a lambda that returns 0, `num_task = 0` = every thread of
//! the pool): our runtime vs Apache TVM's own thread pool (`libtvm_runtime.so` of the PyPI
//! package `apache-tvm`, loaded side by side with RTLD_LOCAL). Both pools get the same thread
//! count through TVM_NUM_THREADS (2 unless already set), set before either pool starts.
//!
//! TVM's library is found as `common::load_peer_library` says. Without it, the comparison is
//! skipped (saying why) and ours is still measured.

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::ffi::{c_int, c_void};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tvm_runtime::abi::{FTVMParallelLambda, TVMParallelGroupEnv};

type LaunchFn = unsafe extern "C" fn(FTVMParallelLambda, *mut c_void, c_int) -> c_int;

unsafe extern "C" fn empty(_task: c_int, _env: *mut TVMParallelGroupEnv, _cdata: *mut c_void) -> c_int {
    0
}

/// Counts the tasks that ran and remembers `num_task` (to check both pools use all threads).
unsafe extern "C" fn counting(_task: c_int, env: *mut TVMParallelGroupEnv, cdata: *mut c_void) -> c_int {
    let c = &*(cdata as *const [AtomicUsize; 2]);
    c[0].fetch_add(1, Ordering::SeqCst);
    c[1].store((*env).num_task as usize, Ordering::SeqCst);
    0
}

fn check_pool(name: &str, launch: LaunchFn) -> usize {
    let c = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let rc = unsafe { launch(Some(counting), &c as *const _ as *mut c_void, 0) };
    assert_eq!(rc, 0, "{name}: TVMBackendParallelLaunch failed");
    let (ran, n) = (c[0].load(Ordering::SeqCst), c[1].load(Ordering::SeqCst));
    assert_eq!(ran, n, "{name}: {ran} tasks ran for num_task {n}");
    n
}

struct Peer {
    launch: LaunchFn,
    lib: PathBuf,
}

fn load_peer() -> Result<Peer, String> {
    let (l, lib) = load_peer_library()?;
    let launch = unsafe { l.get::<LaunchFn>(b"TVMBackendParallelLaunch") }
        .map_err(|e| format!("{}: no TVMBackendParallelLaunch: {e}", lib.display()))?;
    let launch = *launch;
    // Never unloaded: its pool's threads live until the process exits.
    std::mem::forget(l);
    Ok(Peer { launch, lib })
}

/// Wait (up to 3 s) until no other thread of this process is runnable, so one pool's spinning
/// workers do not steal the 2 cores while the other pool is measured.
fn wait_quiet() {
    let me = unsafe { libc::syscall(libc::SYS_gettid) }.to_string();
    let start = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let busy = std::fs::read_dir("/proc/self/task")
            .map(|d| {
                d.flatten().any(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name != me
                        && std::fs::read_to_string(e.path().join("stat"))
                            .ok()
                            .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().starts_with('R')))
                            .unwrap_or(false)
                })
            })
            .unwrap_or(false);
        if !busy || start.elapsed() > Duration::from_secs(3) {
            return;
        }
    }
}

/// Like `time_block`, but a sample stops early after `max` (so a pathological mode, e.g. a
/// launch waiting a whole scheduler tick for a descheduled worker, cannot stall the run).
fn time_block_bounded(f: &mut dyn FnMut(), iters: u64, samples: usize, max: Duration) -> Vec<f64> {
    (0..samples)
        .map(|_| {
            let t = Instant::now();
            let mut n = 0;
            while n < iters {
                for _ in 0..16 {
                    f();
                }
                n += 16;
                if t.elapsed() > max {
                    break;
                }
            }
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .collect()
}

/// Each task does about five microseconds of dependent arithmetic: a launch then costs that plus
/// the pool's overhead only if the tasks really run in parallel.
unsafe extern "C" fn busy(task: c_int, _env: *mut TVMParallelGroupEnv, _cdata: *mut c_void) -> c_int {
    let mut x = task as u64 + 1;
    for _ in 0..5000 {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
    }
    keep(x);
    0
}

type Lambda = unsafe extern "C" fn(c_int, *mut TVMParallelGroupEnv, *mut c_void) -> c_int;

fn launcher(launch: LaunchFn) -> impl FnMut() {
    launcher_of(launch, empty)
}

fn launcher_of(launch: LaunchFn, f: Lambda) -> impl FnMut() {
    move || {
        let rc = unsafe { launch(keep(Some(f)), std::ptr::null_mut(), 0) };
        debug_assert_eq!(rc, 0);
        keep(rc);
    }
}

fn main() {
    let threads = std::env::var("TVM_NUM_THREADS").unwrap_or_else(|_| "2".into());
    // Before either pool exists: ours reads it when the default pool is first used, TVM's when
    // its pool is created.
    std::env::set_var("TVM_NUM_THREADS", &threads);
    let ours: LaunchFn = tvm_runtime::ffi::legacy::backend::TVMBackendParallelLaunch;
    let n_ours = check_pool("ours", ours);
    let peer = load_peer();
    let n_peer = match &peer {
        Ok(p) => Some(check_pool("tvm", p.launch)),
        Err(_) => None,
    };
    println!(
        "parallel_launch: TVM_NUM_THREADS={threads}; ours runs {n_ours} tasks per launch{}",
        n_peer.map(|n| format!(", tvm {n}")).unwrap_or_default()
    );

    let verbose = std::env::var_os("BENCH_VERBOSE").is_some();
    println!("parallel_launch: {}", load_note());
    // Fixed sample size (calibrating on a loaded machine gives arbitrary counts).
    let iters = 2000;
    let rounds = 10;
    let samples = 8;
    let max = Duration::from_millis(50);
    let mut f_ours = launcher(ours);
    let mut all_ours = Vec::new();
    let mut blocks_ours = Vec::new();
    match &peer {
        Ok(p) => {
            println!("parallel_launch: peer {}", p.lib.display());
            let mut f_tvm = launcher(p.launch);
            let mut all_tvm = Vec::new();
            let mut blocks_tvm = Vec::new();
            // Blocks alternate; before each, the other pool's workers are let go to sleep.
            for _ in 0..rounds {
                wait_quiet();
                time_block_bounded(&mut f_ours, iters, 1, max); // warm-up: wake our workers
                let mut o = time_block_bounded(&mut f_ours, iters, samples, max);
                all_ours.extend(&o);
                blocks_ours.push(median(&mut o));
                wait_quiet();
                time_block_bounded(&mut f_tvm, iters, 1, max);
                let mut t = time_block_bounded(&mut f_tvm, iters, samples, max);
                all_tvm.extend(&t);
                blocks_tvm.push(median(&mut t));
                if verbose {
                    println!(
                        "parallel_launch: block medians: ours {} ns, tvm {} ns",
                        fmt(blocks_ours[blocks_ours.len() - 1]),
                        fmt(blocks_tvm[blocks_tvm.len() - 1])
                    );
                }
            }
            let (a, b) = (median(&mut all_ours), median(&mut all_tvm));
            report("parallel_launch", "ours", a, "tvm", b, "ns", Some(1.0));
            let best = |v: &[f64]| v.iter().cloned().fold(f64::INFINITY, f64::min);
            report(
                "parallel_launch (best block)",
                "ours",
                best(&blocks_ours),
                "tvm",
                best(&blocks_tvm),
                "ns",
                Some(1.0),
            );

            // With about 5 us of work per task: both pools must really run tasks in parallel
            // (a pool that ran them one after the other would take twice the work).
            let mut w_ours = launcher_of(ours, busy);
            let mut w_tvm = launcher_of(p.launch, busy);
            let serial = {
                let t = Instant::now();
                for _ in 0..2000 {
                    unsafe { busy(0, std::ptr::null_mut(), std::ptr::null_mut()) };
                }
                t.elapsed().as_nanos() as f64 / 2000.0
            };
            let (mut wo, mut wt) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                wait_quiet();
                time_block_bounded(&mut w_ours, iters, 1, max);
                wo.extend(time_block_bounded(&mut w_ours, iters, samples, max));
                wait_quiet();
                time_block_bounded(&mut w_tvm, iters, 1, max);
                wt.extend(time_block_bounded(&mut w_tvm, iters, samples, max));
            }
            println!("parallel_launch (1 task of work alone: {} ns)", fmt(serial));
            report("parallel_launch (with work)", "ours", median(&mut wo), "tvm", median(&mut wt), "ns", Some(1.0));
        }
        Err(why) => {
            for _ in 0..rounds {
                all_ours.extend(time_block_bounded(&mut f_ours, iters, samples, max));
            }
            println!("parallel_launch: ours {} ns; comparison with TVM skipped: {why}", fmt(median(&mut all_ours)));
        }
    }
}
