//! Thread bounds of the one worker system: executors, bucketed executors and pipelines borrow
//! the process's shared pools and stream workers instead of starting threads of their own, and
//! a `dlopen` / run / `dlclose` loop of the library neither hangs nor leaks threads.
//!
//! One test function: the thread counts are of the whole process, so nothing may run beside it.

#[path = "../examples/demo/model.rs"]
mod model;

mod common;
use common::*;
use model::Spec;
use std::ffi::{c_char, c_void, CString};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tvm_runtime::abi::DLDevice;
use tvm_runtime::ffi::graph_executor::buckets::TVMGraphExecutorCreateBucketed;
use tvm_runtime::ffi::graph_executor::pipeline::*;
use tvm_runtime::ffi::graph_executor::*;

/// Threads of this process now.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).expect("reading /proc/self/task")
}

/// The names of this process's threads, for failure messages.
fn thread_names() -> Vec<String> {
    let tasks = std::fs::read_dir("/proc/self/task").expect("reading /proc/self/task");
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect()
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Wait (up to `limit`) for the process to be down to `at_most` threads; the count then.
fn settle(at_most: usize, limit: Duration) -> usize {
    let start = Instant::now();
    while threads() > at_most && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(50));
    }
    threads()
}

struct Request {
    input: Box<HostTensor>,
    output: Box<HostTensor>,
}

impl Request {
    fn new(seed: u64) -> Request {
        Request {
            input: HostTensor::new(&model::INPUT_SHAPE, &model::input_image(seed)),
            output: HostTensor::new(&model::OUTPUT_SHAPE, &[f32::NAN; model::NUM_CLASSES]),
        }
    }
}

fn executor_with(factory: &Mod, options: &str) -> *mut TVMGraphExecutor {
    let (dev, opts) = (DLDevice::cpu(0), CString::new(options).unwrap());
    let mut g = std::ptr::null_mut();
    ok(unsafe { TVMGraphExecutorCreateFromFactoryWithOptions(factory.0, &dev, 1, opts.as_ptr(), &mut g) });
    g
}

/// Run `g` on `r`'s input; `r`'s output then holds the result.
fn run(g: *mut TVMGraphExecutor, r: &mut Request) {
    ok(unsafe { TVMGraphExecutorSetInputByIndex(g, 0, r.input.ptr()) });
    ok(unsafe { TVMGraphExecutorRun(g) });
    ok(unsafe { TVMGraphExecutorGetOutput(g, 0, r.output.ptr()) });
}

/// 64 executors with `inter_op_threads=2` (on a model with branches) and 4 pipelines with
/// `core_groups=2`, all alive and used at once: at most cores + 4 threads beyond the process's
/// own. (Before the shared workers, each such executor started an inter-op worker of its own.)
fn executors_and_pipelines(demo: &Mod, own: usize) {
    let branchy = load_module(&seed004_so("workers")).unwrap();
    let want = f32s(&tvm_data("seed004", "output_0.bin"));
    let executors: Vec<_> =
        (0..64).map(|_| executor_with(&branchy, "inter_op_threads=2,memory_plan=parallel")).collect();
    let opts = CString::new("core_groups=2").unwrap();
    let dev = DLDevice::cpu(0);
    let pipelines: Vec<_> = (0..4)
        .map(|_| {
            let mut p = std::ptr::null_mut();
            ok(unsafe { TVMPipelineCreate(demo.0, &dev, 1, opts.as_ptr(), &mut p) });
            p
        })
        .collect();
    let mut peak = threads();
    for &g in &executors {
        assert_eq!(run_seed004(g), want, "inter-op executor result");
        peak = peak.max(threads());
    }
    let mut reference = Request::new(7);
    let plain = executor_with(demo, "inter_op_threads=1");
    run(plain, &mut reference);
    ok(unsafe { TVMGraphExecutorFree(plain) });
    let mut requests: Vec<Request> = (0..32).map(|_| Request::new(7)).collect();
    let ids: Vec<(usize, u64)> = (requests.iter_mut().enumerate())
        .map(|(k, r)| {
            let (ins, mut outs, mut id) = ([r.input.t], [r.output.t], 0);
            ok(unsafe { TVMPipelineSubmit(pipelines[k % 4], ins.as_ptr(), 1, outs.as_mut_ptr(), 1, &mut id) });
            peak = peak.max(threads());
            (k % 4, id)
        })
        .collect();
    for (p, id) in ids {
        ok(unsafe { TVMPipelineWait(pipelines[p], id) });
    }
    peak = peak.max(threads());
    for r in &requests {
        assert_eq!(r.output.values(), reference.output.values(), "pipeline result");
    }
    assert!(
        peak <= own + cores() + 4,
        "64 inter-op executors and 4 pipelines peaked at {peak} threads ({own} before, {} cores); now: {:?}",
        cores(),
        thread_names()
    );
    pipelines.into_iter().for_each(|p| ok(unsafe { TVMPipelineFree(p) }));
    executors.into_iter().for_each(|g| ok(unsafe { TVMGraphExecutorFree(g) }));
}

/// 16 bucketed executors over a model compiled at 4 batch sizes, run from 4 threads at once.
fn bucketed_executors(own: usize) {
    let versions: Vec<PathBuf> = [1usize, 2, 4, 8]
        .iter()
        .map(|&b| model::build_spec(&Spec::demo().with_batch(b)).expect("building the demo"))
        .collect();
    let factories: Vec<Mod> = versions.iter().map(|p| load_module(p).unwrap()).collect();
    let handles: Vec<_> = factories.iter().map(|f| f.0).collect();
    let dev = DLDevice::cpu(0);
    let executors: Vec<usize> = (0..16)
        .map(|_| {
            let mut g = std::ptr::null_mut();
            let rc = unsafe { TVMGraphExecutorCreateBucketed(handles.as_ptr(), 4, &dev, 1, std::ptr::null(), &mut g) };
            ok(rc);
            g as usize
        })
        .collect();
    let peak = std::sync::atomic::AtomicUsize::new(threads());
    std::thread::scope(|s| {
        for chunk in executors.chunks(4) {
            let peak = &peak;
            s.spawn(move || {
                for &g in chunk {
                    let mut r = Request::new(3);
                    run(g as *mut TVMGraphExecutor, &mut r);
                    assert!(r.output.values().iter().all(|v| v.is_finite()));
                    peak.fetch_max(threads(), std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    // The 4 submitting threads are this test's own.
    let peak = peak.into_inner();
    assert!(peak <= own + 4 + cores() + 4, "16 bucketed executors peaked at {peak} threads ({own} before)");
    executors.into_iter().for_each(|g| ok(unsafe { TVMGraphExecutorFree(g as *mut TVMGraphExecutor) }));
}

unsafe extern "C" fn noop_task(_: i32, _: *mut tvm_runtime::abi::TVMParallelGroupEnv, _: *mut c_void) -> i32 {
    0
}

/// Load the library with dlopen, load the demo and make a parallel launch through it (which
/// starts its default pool's workers), close it: ten times. The thread count after each.
fn dlopen_loop(demo: &std::path::Path) -> Vec<usize> {
    type Load = unsafe extern "C" fn(*const c_char, *const c_char, *mut *mut c_void) -> i32;
    type Free = unsafe extern "C" fn(*mut c_void) -> i32;
    type Task = unsafe extern "C" fn(i32, *mut tvm_runtime::abi::TVMParallelGroupEnv, *mut c_void) -> i32;
    type Launch = unsafe extern "C" fn(Task, *mut c_void, i32) -> i32;
    let lib_path = library_dir().join("libtvm_runtime.so");
    let (so, dll) = (CString::new(demo.to_str().unwrap()).unwrap(), CString::new("so").unwrap());
    (0..10)
        .map(|_| {
            // SAFETY: loading our own library; its initializers only register functions.
            let lib = unsafe { libloading::Library::new(&lib_path) }.expect("dlopen libtvm_runtime.so");
            // SAFETY: the symbols have these C signatures (include/tvm_runtime.h); the module
            // handle is freed before the library is closed.
            unsafe {
                let load: libloading::Symbol<Load> = lib.get(b"TVMModLoadFromFile").unwrap();
                let free: libloading::Symbol<Free> = lib.get(b"TVMModFree").unwrap();
                let launch: libloading::Symbol<Launch> = lib.get(b"TVMBackendParallelLaunch").unwrap();
                let mut m = std::ptr::null_mut();
                assert_eq!(load(so.as_ptr(), dll.as_ptr(), &mut m), 0, "TVMModLoadFromFile through dlopen");
                assert_eq!(launch(noop_task, std::ptr::null_mut(), 0), 0, "TVMBackendParallelLaunch");
                assert_eq!(free(m), 0);
            }
            drop(lib);
            threads()
        })
        .collect()
}

#[test]
fn shared_workers_bound_the_threads_of_a_server_like_process() {
    tvm_runtime::init();
    let demo = model::build().expect("building the demo model");
    let factory = load_module(&demo).unwrap();
    let own = threads();
    executors_and_pipelines(&factory, own);
    bucketed_executors(own);
    // Idle stream workers leave after 2 s; the pools stay (cores - 1 workers at most each).
    let after = settle(own + cores() + 4, Duration::from_secs(10));
    assert!(after <= own + cores() + 4, "{after} threads left after the load ({own} before)");
    let counts = dlopen_loop(&demo);
    let first = counts[0];
    assert!(counts.iter().all(|&n| n <= first), "threads grew over a dlopen/dlclose loop: {counts:?}");
}
