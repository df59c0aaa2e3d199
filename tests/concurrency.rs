//! Concurrency through the C API: many executors of one model on many threads, concurrent
//! module loads and frees, concurrent registry writes and reads, parallel launches from many
//! threads at once, and one executor misused by several threads (and freed under them).
//!
//! The tests of this file run one at a time (`serial()`), each with many threads of its own,
//! so that each controls the process-wide thread pool; those that could hang on a runtime
//! deadlock run under a watchdog that turns a hang into a failure.
//!
//! Bit-exactness across threads: the default thread pool serves one launch at a time; a launch
//! made while it is busy (another thread's kernel) runs inline as a single task. The demo
//! model's kernels (examples/demo/kernels.c) split only independent outputs across tasks (each
//! output element is computed by one task, in a fixed order), and so does mlp's dense kernel
//! (tests/fixtures/kernels.c), so their results do not depend on how many tasks a launch gets:
//! a reference computed on one thread (multi-task launches) must equal, bit for bit, what any
//! thread computes under contention (mostly single-task launches).

#[path = "../examples/demo/model.rs"]
mod model;

mod common;
use common::*;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};
use tvm_runtime::abi::{type_code as tc, DLDevice, TVMParallelGroupEnv, TVMValue};
use tvm_runtime::ffi::graph_executor::*;
use tvm_runtime::ffi::legacy::backend::{TVMBackendParallelBarrier, TVMBackendParallelLaunch};
use tvm_runtime::ffi::legacy::error::TVMAPISetLastError;
use tvm_runtime::ffi::legacy::func::*;
use tvm_runtime::ffi::legacy::module::{TVMModFree, TVMModLoadFromFile};

// ---------------------------------------------------------------------------------------------
// Helpers

/// Run `body` on its own thread and fail (instead of hanging) if it takes longer than `limit`:
/// a deadlock in the runtime shows up as a test failure.
fn watchdog<R: Send + 'static>(what: &str, limit: Duration, body: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
        let _ = tx.send(());
        r
    });
    match rx.recv_timeout(limit) {
        Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match h.join().unwrap() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        },
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: not finished after {limit:?} (deadlock or livelock in the runtime?)")
        }
    }
}

/// The tests of this file run one at a time: each one controls who uses the (process-wide)
/// default thread pool, e.g. the single-threaded references get the pool to themselves.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps the default pool busy (one launch whose tasks wait for `release`) until dropped, so
/// every launch from another thread meanwhile runs inline as a single task.
struct PoolOccupied {
    release: std::sync::Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

unsafe extern "C" fn wait_for_release(_task: c_int, _penv: *mut TVMParallelGroupEnv, cdata: *mut c_void) -> c_int {
    let flags = &*(cdata as *const (AtomicBool, AtomicBool));
    flags.0.store(true, Ordering::SeqCst); // started
    while !flags.1.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    0
}

impl PoolOccupied {
    fn new() -> PoolOccupied {
        let release = std::sync::Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let r = release.clone();
        let thread = std::thread::spawn(move || {
            let flags = (AtomicBool::new(false), AtomicBool::new(false));
            std::thread::scope(|s| {
                let f = &flags;
                let launcher = s.spawn(move || unsafe {
                    TVMBackendParallelLaunch(Some(wait_for_release), f as *const _ as *mut c_void, 0)
                });
                while !flags.0.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
                tx.send(()).unwrap();
                while !r.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                flags.1.store(true, Ordering::SeqCst);
                assert_eq!(launcher.join().unwrap(), 0);
            });
        });
        rx.recv().unwrap();
        PoolOccupied { release, thread: Some(thread) }
    }
}

impl Drop for PoolOccupied {
    fn drop(&mut self) {
        self.release.store(true, Ordering::SeqCst);
        let _ = self.thread.take().unwrap().join();
    }
}

fn demo_so() -> PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| model::build().unwrap_or_else(|e| panic!("building the demo model: {e}"))).clone()
}

fn mlp_so() -> PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        build_so(&scratch("concurrency").join("mlp.so"), &[kernels_c()], Some(&tvm_data("mlp", "mblob.bin")))
    })
    .clone()
}

/// Copies of the demo library under other names: separate images for the dynamic loader
/// (each with its own context pointers), same kernels and weights.
fn demo_copies() -> Vec<PathBuf> {
    static COPIES: OnceLock<Vec<PathBuf>> = OnceLock::new();
    COPIES
        .get_or_init(|| {
            (0..3)
                .map(|k| {
                    let p = scratch("concurrency").join(format!("demo_copy_{k}.so"));
                    let tmp = p.with_extension(format!("tmp{}", std::process::id()));
                    std::fs::copy(demo_so(), &tmp).unwrap();
                    std::fs::rename(&tmp, &p).unwrap();
                    p
                })
                .collect()
        })
        .clone()
}

/// An executor handle, freed on drop.
struct G(*mut TVMGraphExecutor);
// SAFETY: executor handles may move between threads (one user at a time).
unsafe impl Send for G {}
impl Drop for G {
    fn drop(&mut self) {
        ok(unsafe { TVMGraphExecutorFree(self.0) });
    }
}

fn executor(factory: *mut c_void) -> G {
    let dev = DLDevice::cpu(0);
    let mut g = std::ptr::null_mut();
    ok(unsafe { TVMGraphExecutorCreateFromFactory(factory, &dev, 1, &mut g) });
    G(g)
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// One inference: set `input` (named `name`, shape `shape`), run, copy output 0 (`out_shape`).
fn infer(g: &G, name: &CStr, input: &[f32], shape: &[i64], out_shape: &[i64]) -> Vec<f32> {
    let mut x = HostTensor::new(shape, input);
    ok(unsafe { TVMGraphExecutorSetInput(g.0, name.as_ptr(), x.ptr()) });
    ok(unsafe { TVMGraphExecutorRun(g.0) });
    let n: i64 = out_shape.iter().product();
    let mut out = HostTensor::new(out_shape, &vec![0.0; n as usize]);
    ok(unsafe { TVMGraphExecutorGetOutput(g.0, 0, out.ptr()) });
    out.values()
}

fn demo_infer(g: &G, image: &[f32]) -> Vec<f32> {
    infer(g, c"data", image, &model::INPUT_SHAPE, &model::OUTPUT_SHAPE)
}

/// The demo input of thread `t`, iteration `i`.
fn demo_input(t: usize, i: usize) -> Vec<f32> {
    model::input_image(((t as u64) << 20) | i as u64)
}

fn num_threads() -> i64 {
    let (v, _) = call(&global("runtime.NumThreads"), &[]).unwrap();
    unsafe { v.v_int64 }
}

// ---------------------------------------------------------------------------------------------
// 1. Many executors of one model

#[test]
fn eight_executors_of_one_model_match_the_single_threaded_bits() {
    const THREADS: usize = 8;
    const RUNS: usize = 1000;
    let _serial = serial();
    let factory = load_module(&demo_so()).unwrap();

    // References first, on this thread alone (the pool is ours: its launches use every pool
    // thread), with an executor of the same factory.
    let t0 = Instant::now();
    let inputs: Vec<Vec<Vec<f32>>> = (0..THREADS).map(|t| (0..RUNS).map(|i| demo_input(t, i)).collect()).collect();
    let reference: Vec<Vec<Vec<u32>>> = {
        let g = executor(factory.0);
        inputs.iter().map(|per| per.iter().map(|x| bits(&demo_infer(&g, x))).collect()).collect()
    };
    // The references are the model's answers (checked against the f64 reference on a sample).
    for (t, per) in inputs.iter().enumerate() {
        for i in (t * 13..RUNS).step_by(97) {
            let got: Vec<f32> = reference[t][i].iter().map(|b| f32::from_bits(*b)).collect();
            let diff = model::max_abs_diff(&got, &model::reference(&per[i]));
            assert!(diff < 1e-5, "thread {t} input {i}: reference off by {diff:e}");
        }
    }
    let single = t0.elapsed();
    // What makes bit-exactness under contention possible: with the pool busy, every launch of
    // the model runs as a single task, and gives the same bits as the multi-task references.
    {
        let g = executor(factory.0);
        let _busy = PoolOccupied::new();
        for (t, i) in (0..THREADS).flat_map(|t| [(t, 0), (t, RUNS - 1), (t, 500)]) {
            assert_eq!(bits(&demo_infer(&g, &inputs[t][i])), reference[t][i], "input ({t}, {i}) run as single tasks");
        }
    }

    let t1 = Instant::now();
    let start = Barrier::new(THREADS);
    let mismatches: Vec<Vec<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (start, inputs, reference, factory) = (&start, &inputs[t], &reference[t], factory.0 as usize);
                s.spawn(move || {
                    // Each thread creates its own executor, all at once.
                    start.wait();
                    let g = executor(factory as *mut c_void);
                    let mut bad = Vec::new();
                    for i in 0..RUNS {
                        let got = bits(&demo_infer(&g, &inputs[i]));
                        if got != reference[i] && bad.len() < 5 {
                            bad.push(format!(
                                "thread {t} run {i}: got {got:08x?}, single-threaded {:08x?}",
                                reference[i]
                            ));
                        }
                    }
                    bad
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    eprintln!(
        "{THREADS} threads x {RUNS} runs in {:?} (references: {:?}); runtime.NumThreads = {}",
        t1.elapsed(),
        single,
        num_threads()
    );
    let bad: Vec<String> = mismatches.into_iter().flatten().collect();
    assert!(bad.is_empty(), "outputs differ from the single-threaded run:\n{}", bad.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// 2. Concurrent module loads

#[test]
fn concurrent_loads_of_the_same_and_different_libraries() {
    let _serial = serial();
    const THREADS: usize = 8;
    const ROUNDS: usize = 30;
    let demo = demo_so();
    let copies = demo_copies();
    let mlp = mlp_so();
    let seeds: Vec<u64> = (0..6).collect();
    // References on this thread.
    let (demo_ref, mlp_ref) = {
        let f = load_module(&demo).unwrap();
        let g = executor(f.0);
        let d: Vec<Vec<u32>> = seeds.iter().map(|&s| bits(&demo_infer(&g, &model::input_image(s)))).collect();
        let f = load_module(&mlp).unwrap();
        let g = executor(f.0);
        let out = infer(&g, c"x", &f32s(&tvm_data("mlp", "input_x.bin")), &[2, 8], &[2, 4]);
        assert_close(&out, &f32s(&tvm_data("mlp", "output_0.bin")), 1e-5);
        (d, bits(&out))
    };
    let mlp_x = f32s(&tvm_data("mlp", "input_x.bin"));

    watchdog("concurrent loads", Duration::from_secs(300), move || {
        let barrier = Barrier::new(THREADS);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (barrier, demo, copies, mlp, demo_ref, mlp_ref, mlp_x) =
                    (&barrier, &demo, &copies, &mlp, &demo_ref, &mlp_ref, &mlp_x);
                s.spawn(move || {
                    for r in 0..ROUNDS {
                        // Even rounds: every thread loads the same file at the same moment.
                        // Odd rounds: threads spread over five different files.
                        let which = if r % 2 == 0 { 0 } else { (t + r) % 5 };
                        let path = match which {
                            0 => demo.clone(),
                            1..=3 => copies[which - 1].clone(),
                            _ => mlp.clone(),
                        };
                        barrier.wait();
                        if t == THREADS - 1 && r % 3 == 2 {
                            // A failing load among the others: an error naming the file.
                            let missing = scratch("concurrency").join("no_such_library.so");
                            let e = load_module(&missing).unwrap_err();
                            assert!(e.contains("no_such_library.so"), "{e}");
                        }
                        let p = CString::new(path.to_str().unwrap()).unwrap();
                        let mut m = std::ptr::null_mut();
                        let rc = unsafe { TVMModLoadFromFile(p.as_ptr(), c"".as_ptr(), &mut m) };
                        assert_eq!(rc, 0, "thread {t} round {r}: loading {}: {}", path.display(), last_error());
                        let g = executor(m);
                        // Sometimes free the module first: the executor keeps it alive.
                        let early_free = (t + r) % 3 == 0;
                        if early_free {
                            ok(unsafe { TVMModFree(m) });
                        }
                        if which == 4 {
                            let out = infer(&g, c"x", mlp_x, &[2, 8], &[2, 4]);
                            assert_eq!(bits(&out), *mlp_ref, "thread {t} round {r}: mlp output");
                        } else {
                            for k in [t % 6, (t + r) % 6] {
                                let out = bits(&demo_infer(&g, &model::input_image(k as u64)));
                                assert_eq!(out, demo_ref[k], "thread {t} round {r}: demo output ({})", path.display());
                            }
                        }
                        // Through TVM's module API too: factory `default` -> executor module.
                        if !early_free && r % 4 == 1 {
                            let fac = Mod(m);
                            let (e, code) =
                                call(&get_function(&fac, "default").unwrap(), &[Arg::Device(DLDevice::cpu(0))])
                                    .unwrap();
                            assert_eq!(code, tc::MODULE_HANDLE);
                            let e = Mod(unsafe { e.v_handle });
                            drop(fac);
                            call(&get_function(&e, "run").unwrap(), &[]).unwrap();
                        } else if !early_free {
                            ok(unsafe { TVMModFree(m) });
                        }
                        drop(g);
                    }
                });
            }
        });
    });
}

// ---------------------------------------------------------------------------------------------
// 3. Registry under concurrent writes and reads

static CREATED: AtomicUsize = AtomicUsize::new(0);
static FINALIZED: AtomicUsize = AtomicUsize::new(0);
/// Set when a finalizer could not reach the registry.
static FINALIZER_FAILED: AtomicBool = AtomicBool::new(false);

/// Returns its resource handle (an integer) as the result.
unsafe extern "C" fn return_resource(
    _args: *mut TVMValue,
    _codes: *mut c_int,
    _n: c_int,
    ret: *mut c_void,
    resource: *mut c_void,
) -> c_int {
    let mut v = TVMValue { v_int64: resource as i64 };
    let mut code = tc::INT;
    TVMCFuncSetReturn(ret, &mut v, &mut code, 1)
}

/// Counts finalizations, and reads the registry from inside the finalizer (which runs when the
/// registry drops its last reference: the registry must not hold its lock then).
unsafe extern "C" fn count_finalize(_resource: *mut c_void) {
    let mut f = std::ptr::null_mut();
    if TVMFuncGetGlobal(c"conc.test.stable".as_ptr(), &mut f) != 0 {
        FINALIZER_FAILED.store(true, Ordering::SeqCst);
    }
    if !f.is_null() {
        TVMFuncFree(f);
    }
    FINALIZED.fetch_add(1, Ordering::SeqCst);
}

/// A new C-callback function returning `value` (owned handle).
fn counted_func(value: i64) -> *mut c_void {
    let mut f = std::ptr::null_mut();
    ok(unsafe { TVMFuncCreateFromCFunc(Some(return_resource), value as *mut c_void, Some(count_finalize), &mut f) });
    CREATED.fetch_add(1, Ordering::SeqCst);
    f
}

fn call_int(f: *mut c_void) -> Result<i64, String> {
    let mut ret = TVMValue::null();
    let mut code = 0;
    let rc = unsafe { TVMFuncCall(f, std::ptr::null_mut(), std::ptr::null_mut(), 0, &mut ret, &mut code) };
    if rc != 0 {
        return Err(last_error());
    }
    assert_eq!(code, tc::INT);
    Ok(unsafe { ret.v_int64 })
}

const NAMES: usize = 6;
fn fname(k: usize) -> CString {
    CString::new(format!("conc.test.f{k}")).unwrap()
}

#[test]
fn registry_under_concurrent_register_override_list_get_remove_and_calls() {
    let _serial = serial();
    watchdog("registry storm", Duration::from_secs(300), || {
        let stable = counted_func(42);
        ok(unsafe { TVMFuncRegisterGlobal(c"conc.test.stable".as_ptr(), stable, 0) });
        ok(unsafe { TVMFuncFree(stable) });

        let stop = AtomicBool::new(false);
        let calls = AtomicU64::new(0);
        let lists = AtomicU64::new(0);
        let start = Barrier::new(8);
        std::thread::scope(|s| {
            // Writers: register (override or not), replace, remove; until the readers have
            // done enough work alongside.
            let writers: Vec<_> = (0..3)
                .map(|w| {
                    let (start, calls, lists) = (&start, &calls, &lists);
                    s.spawn(move || {
                        start.wait();
                        let mut i = 0usize;
                        while i < 1500 || calls.load(Ordering::Relaxed) < 3000 || lists.load(Ordering::Relaxed) < 200 {
                            assert!(i < 10_000_000, "readers made no progress");
                            i += 1;
                            let k = (i * 7 + w) % NAMES;
                            let name = fname(k);
                            let version = (w * 100_000 + i) as i64;
                            let f = counted_func(k as i64 * 1_000_000 + version);
                            let overriding = i % 3 != 0;
                            let rc = unsafe { TVMFuncRegisterGlobal(name.as_ptr(), f, overriding as c_int) };
                            if overriding {
                                assert_eq!(rc, 0, "override register: {}", last_error());
                            } else if rc != 0 {
                                let e = last_error();
                                assert!(e.contains("already registered"), "{e}");
                            }
                            ok(unsafe { TVMFuncFree(f) });
                            if i % 5 == 4 {
                                ok(unsafe { TVMFuncRemoveGlobal(name.as_ptr()) });
                            }
                        }
                    })
                })
                .collect();
            // Callers: look up and call; a function found is always one registered under
            // that name, and the stable one is always there.
            for _ in 0..3 {
                let (stop, calls, start) = (&stop, &calls, &start);
                s.spawn(move || {
                    start.wait();
                    let mut i = 0usize;
                    while !stop.load(Ordering::Relaxed) {
                        let k = i % NAMES;
                        i += 1;
                        let mut f = std::ptr::null_mut();
                        ok(unsafe { TVMFuncGetGlobal(fname(k).as_ptr(), &mut f) });
                        if !f.is_null() {
                            let v = call_int(f).unwrap();
                            assert_eq!(v / 1_000_000, k as i64, "conc.test.f{k} returned {v}");
                            ok(unsafe { TVMFuncFree(f) });
                            calls.fetch_add(1, Ordering::Relaxed);
                        }
                        let mut st = std::ptr::null_mut();
                        ok(unsafe { TVMFuncGetGlobal(c"conc.test.stable".as_ptr(), &mut st) });
                        assert!(!st.is_null(), "the stable global disappeared");
                        assert_eq!(call_int(st).unwrap(), 42);
                        ok(unsafe { TVMFuncFree(st) });
                    }
                });
            }
            // Listers: every listed name is a valid string, no duplicates, stable ones present.
            for _ in 0..2 {
                let (stop, lists, start) = (&stop, &lists, &start);
                s.spawn(move || {
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let mut n: c_int = 0;
                        let mut arr: *mut *const c_char = std::ptr::null_mut();
                        ok(unsafe { TVMFuncListGlobalNames(&mut n, &mut arr) });
                        let names: Vec<String> = (0..n as usize)
                            .map(|i| unsafe { CStr::from_ptr(*arr.add(i)) }.to_str().unwrap().to_string())
                            .collect();
                        let set: std::collections::HashSet<&String> = names.iter().collect();
                        assert_eq!(set.len(), names.len(), "duplicate names listed");
                        for want in ["conc.test.stable", "runtime.NumThreads", "tvm.graph_executor.create"] {
                            assert!(set.contains(&want.to_string()), "{want} not listed");
                        }
                        for name in names.iter().filter(|n| n.starts_with("conc.test.f")) {
                            let k: usize =
                                name["conc.test.f".len()..].parse().unwrap_or_else(|_| panic!("bad name {name}"));
                            assert!(k < NAMES, "{name}");
                        }
                        lists.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            for w in writers {
                w.join().unwrap();
            }
            stop.store(true, Ordering::Relaxed);
        });
        eprintln!(
            "registry storm: {} calls, {} listings",
            calls.load(Ordering::Relaxed),
            lists.load(Ordering::Relaxed)
        );

        // A handle taken before a removal keeps working after it; the name is gone.
        let f = counted_func(7);
        ok(unsafe { TVMFuncRegisterGlobal(c"conc.test.held".as_ptr(), f, 0) });
        ok(unsafe { TVMFuncFree(f) });
        let mut held = std::ptr::null_mut();
        ok(unsafe { TVMFuncGetGlobal(c"conc.test.held".as_ptr(), &mut held) });
        ok(unsafe { TVMFuncRemoveGlobal(c"conc.test.held".as_ptr()) });
        let mut gone = std::ptr::null_mut();
        ok(unsafe { TVMFuncGetGlobal(c"conc.test.held".as_ptr(), &mut gone) });
        assert!(gone.is_null());
        assert_eq!(call_int(held).unwrap(), 7);
        ok(unsafe { TVMFuncFree(held) });

        // Remove everything: every function created was finalized exactly once.
        for k in 0..NAMES {
            ok(unsafe { TVMFuncRemoveGlobal(fname(k).as_ptr()) });
        }
        ok(unsafe { TVMFuncRemoveGlobal(c"conc.test.stable".as_ptr()) });
        assert!(!FINALIZER_FAILED.load(Ordering::SeqCst), "a finalizer could not use the registry");
        assert_eq!(
            FINALIZED.load(Ordering::SeqCst),
            CREATED.load(Ordering::SeqCst),
            "functions leaked or finalized twice"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// 4. Parallel launches from many threads at once

const MAX_TASKS: usize = 64;

struct SumJob {
    data: Vec<u64>,
    partial: [AtomicU64; MAX_TASKS],
    total: [AtomicU64; MAX_TASKS],
    ran: [AtomicU32; MAX_TASKS],
    num_task: AtomicI32,
    disagreement: AtomicBool,
    barrier_failed: AtomicBool,
    /// Task 0 makes a nested launch over its own partition (which must run inline).
    nested: bool,
    nested_sum: AtomicU64,
}

impl SumJob {
    fn new(data: Vec<u64>, nested: bool) -> SumJob {
        SumJob {
            data,
            partial: std::array::from_fn(|_| AtomicU64::new(0)),
            total: std::array::from_fn(|_| AtomicU64::new(0)),
            ran: std::array::from_fn(|_| AtomicU32::new(0)),
            num_task: AtomicI32::new(-1),
            disagreement: AtomicBool::new(false),
            barrier_failed: AtomicBool::new(false),
            nested,
            nested_sum: AtomicU64::new(0),
        }
    }
}

fn chunk(n: usize, task: usize, tasks: usize) -> std::ops::Range<usize> {
    let c = n.div_ceil(tasks);
    (c * task).min(n)..(c * (task + 1)).min(n)
}

/// Sums a partition, meets the others at a barrier, adds up all partitions, meets again, and
/// checks that every task got the same total.
unsafe extern "C" fn sum_task(task: c_int, penv: *mut TVMParallelGroupEnv, cdata: *mut c_void) -> c_int {
    let job = &*(cdata as *const SumJob);
    let n = (*penv).num_task;
    let t = task as usize;
    // Every task of a launch sees the same num_task.
    if let Err(seen) = job.num_task.compare_exchange(-1, n, Ordering::SeqCst, Ordering::SeqCst) {
        if seen != n {
            job.disagreement.store(true, Ordering::SeqCst);
        }
    }
    job.ran[t].fetch_add(1, Ordering::SeqCst);
    let part = &job.data[chunk(job.data.len(), t, n as usize)];
    job.partial[t].store(part.iter().sum(), Ordering::SeqCst);
    if t == 0 && job.nested {
        // A launch from inside a task runs inline on this thread with one task.
        let inner = SumJob::new(part.to_vec(), false);
        if TVMBackendParallelLaunch(Some(sum_task), &inner as *const SumJob as *mut c_void, 0) != 0
            || inner.num_task.load(Ordering::SeqCst) != 1
        {
            job.disagreement.store(true, Ordering::SeqCst);
        }
        job.nested_sum.store(inner.total[0].load(Ordering::SeqCst), Ordering::SeqCst);
    }
    if TVMBackendParallelBarrier(task, penv) != 0 {
        job.barrier_failed.store(true, Ordering::SeqCst);
        return -1;
    }
    let total: u64 = job.partial[..n as usize].iter().map(|p| p.load(Ordering::SeqCst)).sum();
    job.total[t].store(total, Ordering::SeqCst);
    if TVMBackendParallelBarrier(task, penv) != 0 {
        job.barrier_failed.store(true, Ordering::SeqCst);
        return -1;
    }
    if job.total[..n as usize].iter().any(|x| x.load(Ordering::SeqCst) != total) {
        job.disagreement.store(true, Ordering::SeqCst);
    }
    0
}

/// The last task fails with a message naming the launching thread (`cdata` is its id).
unsafe extern "C" fn failing_task(task: c_int, penv: *mut TVMParallelGroupEnv, cdata: *mut c_void) -> c_int {
    if task == (*penv).num_task - 1 {
        let msg = CString::new(format!("launch of thread {} failed on purpose", cdata as usize)).unwrap();
        TVMAPISetLastError(msg.as_ptr());
        return -1;
    }
    0
}

#[test]
fn parallel_launches_from_many_threads_at_once() {
    let _serial = serial();
    const THREADS: usize = 12;
    const LAUNCHES: usize = 300;
    let pool = num_threads() as usize;
    let (multi, inline) = watchdog("parallel launches", Duration::from_secs(300), move || {
        let multi = AtomicU64::new(0);
        let inline = AtomicU64::new(0);
        let start = Barrier::new(THREADS);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (multi, inline, start) = (&multi, &inline, &start);
                s.spawn(move || {
                    start.wait();
                    for i in 0..LAUNCHES {
                        if t % 4 == 3 && i % 10 == 0 {
                            // A failing launch: fails here, with this thread's message.
                            let rc = unsafe { TVMBackendParallelLaunch(Some(failing_task), t as *mut c_void, 0) };
                            assert_eq!(rc, -1, "thread {t}: failing launch succeeded");
                            let e = last_error();
                            assert!(e.contains(&format!("launch of thread {t} failed on purpose")), "thread {t}: {e}");
                            continue;
                        }
                        let len = 1 + (t * 131 + i * 17) % 2000;
                        let data: Vec<u64> = (0..len as u64).map(|k| k * k + t as u64 * 7 + i as u64).collect();
                        let want: u64 = data.iter().sum();
                        let requested = [0, 1, 2, 3, 4, 7][i % 6];
                        let job = SumJob::new(data, i % 7 == 3);
                        let rc = unsafe {
                            TVMBackendParallelLaunch(Some(sum_task), &job as *const SumJob as *mut c_void, requested)
                        };
                        assert_eq!(rc, 0, "thread {t} launch {i}: {}", last_error());
                        let n = job.num_task.load(Ordering::SeqCst);
                        assert!(
                            n >= 1 && n as usize <= pool.max(1),
                            "thread {t} launch {i}: num_task {n} (pool {pool})"
                        );
                        if requested > 0 {
                            assert!(n <= requested, "thread {t} launch {i}: asked {requested} tasks, got {n}");
                        }
                        for (k, r) in job.ran.iter().enumerate() {
                            let want_runs = u32::from(k < n as usize);
                            assert_eq!(r.load(Ordering::SeqCst), want_runs, "thread {t} launch {i}: task {k} of {n}");
                        }
                        assert!(!job.barrier_failed.load(Ordering::SeqCst), "thread {t} launch {i}: barrier failed");
                        assert!(!job.disagreement.load(Ordering::SeqCst), "thread {t} launch {i}: tasks disagree");
                        for k in 0..n as usize {
                            assert_eq!(
                                job.total[k].load(Ordering::SeqCst),
                                want,
                                "thread {t} launch {i}: task {k}'s total"
                            );
                        }
                        if job.nested {
                            let part: u64 = job.data[chunk(job.data.len(), 0, n as usize)].iter().sum();
                            assert_eq!(
                                job.nested_sum.load(Ordering::SeqCst),
                                part,
                                "thread {t} launch {i}: nested launch"
                            );
                        }
                        if n > 1 { multi } else { inline }.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        (multi.load(Ordering::Relaxed), inline.load(Ordering::Relaxed))
    });
    eprintln!("parallel launches: {multi} ran on several tasks, {inline} ran as one task (pool of {pool})");
}

// ---------------------------------------------------------------------------------------------
// 5. Misuse: one executor used by several threads, and freed while others call it

/// An executor serves one thread at a time: calls from other threads meanwhile fail with an
/// error saying so (they do not race); each thread's successful runs are exact; freeing the
/// executor while other threads call it makes their later calls fail with "not live".
#[test]
fn one_executor_shared_by_threads_fails_cleanly_and_survives_a_concurrent_free() {
    let _serial = serial();
    let so = demo_so();
    watchdog("shared executor", Duration::from_secs(300), move || {
        let factory = load_module(&so).unwrap();
        let image = model::input_image(3);
        let want = bits(&demo_infer(&executor(factory.0), &image));
        let g = executor(factory.0);
        let raw = g.0 as usize;
        // `freeing` is set just before the free, `freed` just after it.
        let (freeing, freed) = (AtomicBool::new(false), AtomicBool::new(false));
        let (busy, done, not_live) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
        let mut x = HostTensor::new(&model::INPUT_SHAPE, &image);
        // Zero-copy output, set once: a run that succeeds wrote it, whatever thread ran it.
        let mut out = HostTensor::new(&model::OUTPUT_SHAPE, &[0.0; model::NUM_CLASSES]);
        ok(unsafe { TVMGraphExecutorSetInput(g.0, c"data".as_ptr(), x.ptr()) });
        ok(unsafe { TVMGraphExecutorSetOutputZeroCopy(g.0, 0, out.ptr()) });
        let out_addr = out.t.data as usize;
        let g = std::sync::Mutex::new(Some(g));
        let winners = AtomicU64::new(0); // bit t: thread t had a successful run
        std::thread::scope(|s| {
            for t in 0..4 {
                let (freeing, freed, busy, done, not_live, g, winners) =
                    (&freeing, &freed, &busy, &done, &not_live, &g, &winners);
                s.spawn(move || {
                    let h = raw as *mut TVMGraphExecutor;
                    let mut seen_not_live = 0;
                    for i in 0..1_000_000 {
                        if t == 0 && !freed.load(Ordering::SeqCst) && done.load(Ordering::SeqCst) >= 200 {
                            // Thread 0 frees the executor while the others keep calling it.
                            freeing.store(true, Ordering::SeqCst);
                            drop(g.lock().unwrap().take());
                            freed.store(true, Ordering::SeqCst);
                        }
                        let was_freed = freed.load(Ordering::SeqCst);
                        let rc = unsafe { TVMGraphExecutorRun(h) };
                        if rc == 0 {
                            assert!(!was_freed, "thread {t}: a run succeeded on a freed executor");
                            done.fetch_add(1, Ordering::SeqCst);
                            winners.fetch_or(1 << t, Ordering::Relaxed);
                            // Leave the executor idle a moment so other threads get it too.
                            std::thread::sleep(Duration::from_micros(200));
                            continue;
                        }
                        let e = last_error();
                        if e.contains("in use by another thread") {
                            busy.fetch_add(1, Ordering::Relaxed);
                            std::thread::yield_now();
                        } else if e.contains("is not live") {
                            assert!(freeing.load(Ordering::SeqCst), "thread {t}: `not live` before the free: {e}");
                            not_live.fetch_add(1, Ordering::Relaxed);
                            seen_not_live += 1;
                            if seen_not_live == 20 {
                                return;
                            }
                        } else {
                            panic!("thread {t} call {i}: unexpected error: {e}");
                        }
                    }
                    panic!("thread {t}: the executor was never freed");
                });
            }
        });
        let out = unsafe { std::slice::from_raw_parts(out_addr as *const f32, model::NUM_CLASSES) };
        assert_eq!(bits(out), want, "output written by the shared executor");
        let (busy, done, not_live) = (busy.into_inner(), done.into_inner(), not_live.into_inner());
        eprintln!(
            "shared executor: {done} runs (by threads {:04b}), {busy} refused as busy, {not_live} refused as freed",
            winners.into_inner()
        );
        assert!(done > 0 && not_live > 0, "{done} runs, {not_live} after the free");
        // A second free of the same handle is an error, not a crash.
        assert_eq!(unsafe { TVMGraphExecutorFree(raw as *mut TVMGraphExecutor) }, -1);
        assert!(last_error().contains("not live"), "{}", last_error());
        drop(x);
    });
}
