//! Failure safety of a run, through the C API: a kernel that fails (with or without a message),
//! a parallel task that fails, and a panic inside the runtime during a run must each make
//! `TVMGraphExecutorRun` (and TVM's module function `run`) return -1 with a message naming what
//! failed, on the calling thread only, and leave the executor (and the process, and the thread
//! pool) fit for the next run.
//!
//! Kernels: tests/fixtures/failure_kernels.c (correct elementwise kernels that fail on purpose
//! when their input holds a sentinel). Graph: x -> `double_node` (fs_double_checked, fails with
//! a message on a negative value) -> `add_one_node` (fs_add_one_silent, fails with no message on
//! NaN) -> `add_bias_node` (fs_add_bias_tasks with weight p0, parallel; the task that meets +inf
//! fails with a message, the one that meets 777 fails silently) -> output.

mod common;
use common::*;
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::sync::{Arc, Barrier, OnceLock};
use tvm_runtime::abi::{type_code as tc, DLDataType, DLDevice};
use tvm_runtime::ffi::graph_executor::*;
use tvm_runtime::ffi::legacy::error::TVMAPISetLastError;
use tvm_runtime::graph::factory::GraphExecutorFactory;
use tvm_runtime::runtime::base::error::{Error, Result as RtResult};
use tvm_runtime::runtime::function::packed::{Module, ModuleNode, PackedFunc, Value};
use tvm_runtime::runtime::module::blob::{write_import_tree, BlobEntry};
use tvm_runtime::runtime::tensor::ndarray::NDArray;

/// Elements of every tensor of the test graphs (shape [1, N]).
const N: usize = 16;
const SHAPE: [i64; 2] = [1, N as i64];

// ---------------------------------------------------------------------------------------------
// Graphs and libraries

/// One graph node: name, kernel (None for an input), inputs (node ids).
type NodeSpec<'a> = (&'a str, Option<&'a str>, Vec<usize>);

/// Graph JSON in TVM's format for nodes of one float32 [1, N] output each, every entry in its
/// own storage; the last node is the output.
fn graph_json(nodes: &[NodeSpec<'_>]) -> String {
    let mut out = Vec::new();
    for (name, func, inputs) in nodes {
        let ins: Vec<serde_json::Value> = inputs.iter().map(|&i| serde_json::json!([i, 0, 0])).collect();
        out.push(match func {
            None => serde_json::json!({"op": "null", "name": name, "inputs": []}),
            Some(f) => serde_json::json!({
                "op": "tvm_op", "name": name, "inputs": ins,
                "attrs": {"num_outputs": "1", "num_inputs": inputs.len().to_string(), "flatten_data": "0", "func_name": f},
            }),
        });
    }
    let n = nodes.len();
    let arg_nodes: Vec<usize> = (0..n).filter(|&i| nodes[i].1.is_none()).collect();
    serde_json::json!({
        "nodes": out,
        "arg_nodes": arg_nodes,
        "heads": [[n - 1, 0, 0]],
        "attrs": {
            "dltype": ["list_str", vec!["float32"; n]],
            "device_index": ["list_int", vec![1; n]],
            "storage_id": ["list_int", (0..n).collect::<Vec<_>>()],
            "shape": ["list_shape", vec![SHAPE.to_vec(); n]],
        },
        "node_row_ptr": (0..=n).collect::<Vec<_>>(),
    })
    .to_string()
}

/// The graph over the C failure kernels.
fn failure_graph() -> String {
    graph_json(&[
        ("x", None, vec![]),
        ("double_node", Some("fs_double_checked"), vec![0]),
        ("add_one_node", Some("fs_add_one_silent"), vec![1]),
        ("p0", None, vec![]),
        ("add_bias_node", Some("fs_add_bias_tasks"), vec![2, 3]),
    ])
}

/// The weight p0 of the failure graph.
fn bias() -> Vec<f32> {
    (0..N).map(|i| i as f32 * 0.25 - 1.0).collect()
}

/// What the failure graph computes, in the kernels' order of f32 operations.
fn expected(x: &[f32]) -> Vec<f32> {
    x.iter().zip(bias()).map(|(v, b)| (2.0 * v + 1.0) + b).collect()
}

/// A valid input, different per `seed`.
fn good_input(seed: usize) -> Vec<f32> {
    (0..N).map(|i| ((seed * 31 + i * 7) % 97) as f32 * 0.5).collect()
}

/// `good_input(seed)` with `value` at `index`.
fn input_with(seed: usize, index: usize, value: f32) -> Vec<f32> {
    let mut x = good_input(seed);
    x[index] = value;
    x
}

/// failure_kernels.c with an export_library-style blob: GraphExecutorFactory (failure graph,
/// weight p0, module name "default") importing the library.
fn failure_so() -> PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        let p0 = NDArray::from_bytes(&SHAPE, DLDataType::FLOAT32, &bytes_of(&bias())).unwrap();
        let payload = GraphExecutorFactory::new(failure_graph(), vec![("p0".into(), p0)], "default".into())
            .save_binary()
            .unwrap();
        let blob = write_import_tree(
            &[BlobEntry::Module { type_key: "GraphExecutorFactory".into(), payload }, BlobEntry::Lib],
            &[0, 1, 1],
            &[1],
        );
        let src = repo().join("tests/fixtures/failure_kernels.c");
        build_so(&scratch("failure_safety").join("failure_kernels.so"), &[src], Some(&blob))
    })
    .clone()
}

fn factory() -> Mod {
    load_module(&failure_so()).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Executors through the C API

struct G(*mut TVMGraphExecutor);
// SAFETY: an executor handle may move between threads (used by one at a time).
unsafe impl Send for G {}
impl Drop for G {
    fn drop(&mut self) {
        ok(unsafe { TVMGraphExecutorFree(self.0) });
    }
}

fn from_factory(f: &Mod) -> G {
    let dev = DLDevice::cpu(0);
    let mut g = std::ptr::null_mut();
    ok(unsafe { TVMGraphExecutorCreateFromFactory(f.0, &dev, 1, &mut g) });
    G(g)
}

fn from_json(json: &str, module: *mut c_void) -> G {
    let json = CString::new(json).unwrap();
    let dev = DLDevice::cpu(0);
    let mut g = std::ptr::null_mut();
    ok(unsafe { TVMGraphExecutorCreate(json.as_ptr(), module, &dev, 1, &mut g) });
    G(g)
}

/// set_input "x", run, get_output 0: the output, or the run's error message (set_input and
/// get_output must succeed).
fn run(g: &G, x: &[f32]) -> Result<Vec<f32>, String> {
    let mut t = HostTensor::new(&SHAPE, x);
    ok(unsafe { TVMGraphExecutorSetInput(g.0, c"x".as_ptr(), t.ptr()) });
    let rc = unsafe { TVMGraphExecutorRun(g.0) };
    if rc != 0 {
        assert_eq!(rc, -1, "a failed run returns -1");
        return Err(last_error());
    }
    let mut out = HostTensor::new(&SHAPE, &[0.0; N]);
    ok(unsafe { TVMGraphExecutorGetOutput(g.0, 0, out.ptr()) });
    Ok(out.values())
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// A good run gives exactly the expected values.
fn check_good(g: &G, seed: usize, what: &str) {
    let x = good_input(seed);
    let got = run(g, &x).unwrap_or_else(|e| panic!("{what}: a valid run failed: {e}"));
    assert_eq!(bits(&got), bits(&expected(&x)), "{what}: output of a valid run");
}

fn expect_failure(r: Result<Vec<f32>, String>, what: &str) -> String {
    match r {
        Ok(v) => panic!("{what}: the run succeeded with {v:?}"),
        Err(e) => e,
    }
}

fn assert_contains(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message lacks `{p}`:\n{msg}");
    }
}

/// A thread that stores its own last error, waits while `body` runs on the calling thread, then
/// checks that its last error is still its own.
fn with_bystander<R>(body: impl FnOnce() -> R) -> R {
    let gate = Arc::new(Barrier::new(2));
    let g2 = gate.clone();
    let bystander = std::thread::spawn(move || {
        let mine = CString::new("ValueError: the bystander's own error").unwrap();
        unsafe { TVMAPISetLastError(mine.as_ptr()) };
        g2.wait(); // stored
        g2.wait(); // the other thread's failures are done
        assert_eq!(last_error(), "ValueError: the bystander's own error", "another thread's last error changed");
    });
    gate.wait();
    let r = body();
    gate.wait();
    bystander.join().expect("bystander thread");
    r
}

// ---------------------------------------------------------------------------------------------
// Kernel failures

#[test]
fn kernel_failures_fail_the_run_on_the_calling_thread_and_the_executor_recovers() {
    let f = factory();
    let g = from_factory(&f);
    check_good(&g, 0, "first run");
    with_bystander(|| {
        // A kernel that fails with a message.
        let e = expect_failure(run(&g, &input_with(1, 3, -2.0)), "negative input");
        assert_contains(&e, &["node `double_node`", "negative input -2 at index 3"]);
        assert_eq!(last_error(), e, "the message stays until the next error on this thread");
        check_good(&g, 2, "after the failing kernel");
        assert_eq!(last_error(), e, "a successful run leaves the last error alone");

        // A kernel that fails with no message: the error says so and names the node, and is not
        // the previous (stale) message of this thread.
        let e = expect_failure(run(&g, &input_with(3, 5, f32::NAN)), "NaN input");
        assert_contains(&e, &["node `add_one_node`", "without setting an error message"]);
        assert!(!e.contains("negative"), "stale message reported: {e}");
        check_good(&g, 4, "after the silent kernel");

        // Twice in a row, then both kinds alternating with good runs.
        for i in 0..50 {
            let e = expect_failure(run(&g, &input_with(i, i % N, -1.0 - i as f32)), "negative input");
            assert_contains(&e, &["node `double_node`", &format!("at index {}", i % N)]);
            let e = expect_failure(run(&g, &input_with(i, (i + 1) % N, f32::NAN)), "NaN input");
            assert_contains(&e, &["node `add_one_node`", "without setting an error message"]);
            check_good(&g, 100 + i, "alternating");
        }
    });
    // A second executor of the same factory was never disturbed.
    let other = from_factory(&f);
    check_good(&other, 7, "another executor");
    check_good(&g, 8, "the first executor");
}

/// The kernel's own message reaches the caller intact, with the node as context and an error
/// kind in front. TVM's generated kernels start their messages with the function name
/// (`tvmgen_default_fused_add: num_args should be 3`), so a `name: detail` message must not be
/// mistaken for `Kind: detail` and split by the context.
#[test]
fn kernel_message_is_reported_verbatim_with_the_node() {
    let f = factory();
    let g = from_factory(&f);
    let e = expect_failure(run(&g, &input_with(1, 3, -2.0)), "negative input");
    assert_contains(&e, &["node `double_node`", "fs_double_checked: negative input -2 at index 3"]);
    assert!(e.starts_with("TVMError: "), "no error kind in front: {e}");
    let e = expect_failure(run(&g, &input_with(1, 4, f32::INFINITY)), "+inf input");
    assert_contains(&e, &["node `add_bias_node`", "fs_add_bias_tasks: task "]);
    assert!(e.starts_with("TVMError: "), "no error kind in front: {e}");
}

#[test]
fn failing_parallel_tasks_fail_the_run_and_the_pool_and_executor_recover() {
    let f = factory();
    let g = from_factory(&f);
    check_good(&g, 0, "first run");
    with_bystander(|| {
        for i in 0..100 {
            let at = (i * 5) % N;
            // A task that fails with a message.
            let e = expect_failure(run(&g, &input_with(i, at, f32::INFINITY)), "+inf input");
            assert_contains(&e, &["node `add_bias_node`", "Task ", &format!("saw +inf at index {at}")]);
            check_good(&g, 1000 + i, "after a failed task");
            // A task that fails with no message (2 * 388 + 1 == 777).
            let e = expect_failure(run(&g, &input_with(i, (at + 3) % N, 388.0)), "777 sentinel");
            assert_contains(&e, &["node `add_bias_node`", "Task ", "without a message"]);
            assert!(!e.contains("+inf"), "stale message reported: {e}");
            check_good(&g, 2000 + i, "after a silent task");
        }
    });
}

/// Executors on several threads, some failing on purpose: each thread sees its own errors
/// (naming its own index) and the others' good runs are exact.
#[test]
fn failures_on_some_threads_leave_other_threads_alone() {
    let f = factory();
    let threads = 4;
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        for t in 0..threads {
            let g = from_factory(&f);
            let start = &start;
            s.spawn(move || {
                start.wait();
                let (mut failures, mut goods) = (0, 0);
                for i in 0..300 {
                    match (i + t) % 4 {
                        0 => {
                            let e = expect_failure(run(&g, &input_with(i, t, -(t as f32) - 1.0)), "negative");
                            assert_contains(
                                &e,
                                &["node `double_node`", &format!("negative input {} at index {t}", -(t as f32) - 1.0)],
                            );
                            failures += 1;
                        }
                        1 => {
                            let e = expect_failure(run(&g, &input_with(i, N - 1 - t, f32::INFINITY)), "+inf");
                            assert_contains(&e, &["node `add_bias_node`", &format!("saw +inf at index {}", N - 1 - t)]);
                            failures += 1;
                        }
                        _ => {
                            check_good(&g, t * 1000 + i, &format!("thread {t} iteration {i}"));
                            goods += 1;
                        }
                    }
                }
                assert!(failures > 0 && goods > 0);
            });
        }
    });
}

/// The same failures through TVM's module API: factory `default` -> executor module, its
/// `set_input` / `run` / `get_output` called with TVMFuncCall.
#[test]
fn module_api_run_fails_and_recovers() {
    let f = factory();
    let (m, code) = call(&get_function(&f, "default").unwrap(), &[Arg::Device(DLDevice::cpu(0))]).unwrap();
    assert_eq!(code, tc::MODULE_HANDLE);
    let m = Mod(unsafe { m.v_handle });
    let (set_input, run_f, get_output) = (
        get_function(&m, "set_input").unwrap(),
        get_function(&m, "run").unwrap(),
        get_function(&m, "get_output").unwrap(),
    );
    let go = |x: &[f32]| -> Result<Vec<f32>, String> {
        let mut t = HostTensor::new(&SHAPE, x);
        call(&set_input, &[Arg::Str("x"), Arg::Tensor(t.ptr())]).unwrap();
        call(&run_f, &[])?;
        let mut out = HostTensor::new(&SHAPE, &[0.0; N]);
        call(&get_output, &[Arg::Int(0), Arg::Tensor(out.ptr())]).unwrap();
        Ok(out.values())
    };
    let good = |seed: usize| {
        let x = good_input(seed);
        assert_eq!(bits(&go(&x).unwrap()), bits(&expected(&x)), "seed {seed}");
    };
    good(0);
    with_bystander(|| {
        let e = expect_failure(go(&input_with(1, 2, -5.0)), "negative");
        assert_contains(&e, &["node `double_node`", "negative input -5 at index 2"]);
        good(1);
        let e = expect_failure(go(&input_with(2, 9, f32::NAN)), "NaN");
        assert_contains(&e, &["node `add_one_node`", "without setting an error message"]);
        good(2);
        let e = expect_failure(go(&input_with(3, 11, f32::INFINITY)), "+inf");
        assert_contains(&e, &["node `add_bias_node`", "saw +inf at index 11"]);
        good(3);
        let e = expect_failure(go(&input_with(4, 0, 388.0)), "777");
        assert_contains(&e, &["node `add_bias_node`", "without a message"]);
        good(4);
    });
}

// ---------------------------------------------------------------------------------------------
// Panics inside the runtime during a run

/// Keep the test output readable: the panics injected on purpose are not printed (the hook is
/// process-wide; any other panic is printed as usual).
fn quiet_injected_panics() {
    static HOOK: OnceLock<()> = OnceLock::new();
    HOOK.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if !msg.starts_with("injected panic") {
                default(info);
            }
        }));
    });
}

/// A module implemented in Rust: `rs_double` (out = 2 * x) panics when x[0] is 13 and returns an
/// error when x[0] is -7.
struct PanickingModule;

fn rs_double() -> PackedFunc {
    PackedFunc::from_typed(|args| {
        args.expect_len(2, "rs_double")?;
        let (x, out) = (args.dltensor(0)?, args.dltensor(1)?);
        // SAFETY: the executor passes two float32 [1, N] tensors.
        let (x, out) = unsafe {
            (
                std::slice::from_raw_parts((*x).data as *const f32, N),
                std::slice::from_raw_parts_mut((*out).data as *mut f32, N),
            )
        };
        if x[0] == 13.0 {
            panic!("injected panic in rs_double");
        }
        if x[0] == -7.0 {
            return Err(Error::value("rs_double refuses -7"));
        }
        for (o, v) in out.iter_mut().zip(x) {
            *o = 2.0 * v;
        }
        Ok(Value::Null)
    })
}

impl ModuleNode for PanickingModule {
    fn type_key(&self) -> &str {
        "test_panicking"
    }
    fn get_function(&self, name: &str, _this: &Module) -> RtResult<Option<PackedFunc>> {
        Ok((name == "rs_double").then(rs_double))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn panic_graph() -> String {
    graph_json(&[("x", None, vec![]), ("rust_node", Some("rs_double"), vec![0])])
}

/// The Rust module as a C module handle (owned).
fn panicking_module() -> Mod {
    Mod(Module::from_node(PanickingModule).into_legacy())
}

fn check_double(r: Result<Vec<f32>, String>, x: &[f32], what: &str) {
    let got = r.unwrap_or_else(|e| panic!("{what}: {e}"));
    let want: Vec<f32> = x.iter().map(|v| 2.0 * v).collect();
    assert_eq!(bits(&got), bits(&want), "{what}");
}

/// One inference of the test graph: the output or the run's error message.
type Infer<'a> = &'a dyn Fn(&[f32]) -> Result<Vec<f32>, String>;

fn panic_checks(go: Infer<'_>) {
    let x = good_input(0);
    check_double(go(&x), &x, "before any panic");
    with_bystander(|| {
        for i in 0..20 {
            let e = expect_failure(go(&input_with(i, 0, 13.0)), "panic sentinel");
            assert_contains(&e, &["panic", "injected panic in rs_double"]);
            let x = good_input(i + 1);
            check_double(go(&x), &x, "after a panic");
            // An ordinary error of the same function, after a panic: reported with its node.
            let e = expect_failure(go(&input_with(i, 0, -7.0)), "error sentinel");
            assert_contains(&e, &["node `rust_node`", "rs_double refuses -7"]);
            assert!(!e.contains("panic"), "stale panic message: {e}");
        }
    });
    let x = good_input(99);
    check_double(go(&x), &x, "at the end");
}

#[test]
fn panic_in_a_rust_kernel_through_graph_executor_create() {
    quiet_injected_panics();
    let m = panicking_module();
    let g = from_json(&panic_graph(), m.0);
    drop(m); // the executor keeps its module alive
    panic_checks(&|x| run(&g, x));
}

#[test]
fn panic_in_a_rust_kernel_through_a_factory_and_the_module_api() {
    quiet_injected_panics();
    // A GraphExecutorFactory over the Rust module, made by TVM's global and used through
    // TVMGraphExecutorCreateFromFactory and through TVM's module functions.
    let m = panicking_module();
    let (fac, code) = call(
        &global("tvm.graph_executor_factory.create"),
        &[Arg::Str(&panic_graph()), Arg::Module(&m), Arg::Str("default")],
    )
    .unwrap();
    assert_eq!(code, tc::MODULE_HANDLE);
    let fac = Mod(unsafe { fac.v_handle });
    drop(m);

    let g = from_factory(&fac);
    panic_checks(&|x| run(&g, x));

    let (e, _) = call(&get_function(&fac, "default").unwrap(), &[Arg::Device(DLDevice::cpu(0))]).unwrap();
    let e = Mod(unsafe { e.v_handle });
    let (set_input, run_f, get_output) = (
        get_function(&e, "set_input").unwrap(),
        get_function(&e, "run").unwrap(),
        get_function(&e, "get_output").unwrap(),
    );
    panic_checks(&|x| {
        let mut t = HostTensor::new(&SHAPE, x);
        call(&set_input, &[Arg::Str("x"), Arg::Tensor(t.ptr())]).unwrap();
        call(&run_f, &[])?;
        let mut out = HostTensor::new(&SHAPE, &[0.0; N]);
        call(&get_output, &[Arg::Int(0), Arg::Tensor(out.ptr())]).unwrap();
        Ok(out.values())
    });

    // And the JSON + module flow of TVM's `tvm.graph_executor.create`.
    let m = panicking_module();
    let (e, _) = call(
        &global("tvm.graph_executor.create"),
        &[Arg::Str(&panic_graph()), Arg::Module(&m), Arg::Int(1), Arg::Int(0)],
    )
    .unwrap();
    let e = Mod(unsafe { e.v_handle });
    let (set_input, run_f, get_output) = (
        get_function(&e, "set_input").unwrap(),
        get_function(&e, "run").unwrap(),
        get_function(&e, "get_output").unwrap(),
    );
    panic_checks(&|x| {
        let mut t = HostTensor::new(&SHAPE, x);
        call(&set_input, &[Arg::Str("x"), Arg::Tensor(t.ptr())]).unwrap();
        call(&run_f, &[])?;
        let mut out = HostTensor::new(&SHAPE, &[0.0; N]);
        call(&get_output, &[Arg::Int(0), Arg::Tensor(out.ptr())]).unwrap();
        Ok(out.values())
    });
}

/// A panic deeper down: a C kernel's parallel tasks (on pool workers and the calling thread)
/// call a Rust global through TVMBackendGetFuncFromEnv + TVMFuncCall, and the global panics on
/// a sentinel. The panic stops at TVMFuncCall's boundary, the task and the run fail with the
/// panic's message, and the pool and the executor keep working.
#[test]
fn panic_in_a_global_called_from_parallel_tasks() {
    quiet_injected_panics();
    static HOOK: OnceLock<()> = OnceLock::new();
    HOOK.get_or_init(|| {
        let hook = PackedFunc::from_typed(|args| {
            let v = args.float(0)?;
            if v == 4242.0 {
                panic!("injected panic in fs.test.hook");
            }
            if v == 4343.0 {
                return Err(Error::value("fs.test.hook refuses 4343"));
            }
            Ok(Value::Null)
        });
        let h = hook.into_legacy();
        ok(unsafe { tvm_runtime::ffi::legacy::func::TVMFuncRegisterGlobal(c"fs.test.hook".as_ptr(), h, 0) });
        ok(unsafe { tvm_runtime::ffi::legacy::func::TVMFuncFree(h) });
    });
    let f = factory();
    // TVMGraphExecutorCreate over the factory module: kernels are found through its imports.
    let g = from_json(&graph_json(&[("x", None, vec![]), ("hook_node", Some("fs_hook_tasks"), vec![0])]), f.0);
    let identity = |r: Result<Vec<f32>, String>, x: &[f32], what: &str| {
        assert_eq!(bits(&r.unwrap_or_else(|e| panic!("{what}: {e}"))), bits(x), "{what}");
    };
    let x = good_input(0);
    identity(run(&g, &x), &x, "first run");
    with_bystander(|| {
        for i in 0..100 {
            let at = (i * 3) % N;
            let e = expect_failure(run(&g, &input_with(i, at, 4242.0)), "panic sentinel");
            assert_contains(&e, &["node `hook_node`", "Task ", "panic", "injected panic in fs.test.hook"]);
            let x = good_input(i + 1);
            identity(run(&g, &x), &x, "after a panic");
            let e = expect_failure(run(&g, &input_with(i, at, 4343.0)), "error sentinel");
            assert_contains(&e, &["node `hook_node`", "Task ", "fs.test.hook refuses 4343"]);
            assert!(!e.contains("panic"), "stale panic message: {e}");
        }
    });
    // The C failure graph still runs on the same pool.
    check_good(&from_factory(&f), 5, "another model after the panics");
}

#[test]
fn the_executor_handle_survives_a_panic_for_every_call() {
    quiet_injected_panics();
    // After a panicking run, every other executor call still works on the same handle.
    let m = panicking_module();
    let g = from_json(&panic_graph(), m.0);
    let e = expect_failure(run(&g, &input_with(0, 0, 13.0)), "panic");
    assert!(e.contains("panic"), "{e}");
    let (mut n_in, mut n_out) = (0, 0);
    ok(unsafe { TVMGraphExecutorGetNumInputs(g.0, &mut n_in) });
    ok(unsafe { TVMGraphExecutorGetNumOutputs(g.0, &mut n_out) });
    assert_eq!((n_in, n_out), (1, 1));
    let mut info: TVMTensorInfo = unsafe { std::mem::zeroed() };
    ok(unsafe { TVMGraphExecutorGetOutputInfo(g.0, 0, &mut info) });
    let mut text: *const std::ffi::c_char = std::ptr::null();
    let x = good_input(2);
    let mut t = HostTensor::new(&SHAPE, &x);
    ok(unsafe { TVMGraphExecutorSetInput(g.0, c"x".as_ptr(), t.ptr()) });
    ok(unsafe { TVMGraphExecutorProfile(g.0, 0, &mut text) });
    // Zero-copy output after a panic, then a run writing into it.
    let mut out = HostTensor::new(&SHAPE, &[0.0; N]);
    ok(unsafe { TVMGraphExecutorSetOutputZeroCopy(g.0, 0, out.ptr()) });
    let x = good_input(3);
    let mut t = HostTensor::new(&SHAPE, &x);
    ok(unsafe { TVMGraphExecutorSetInput(g.0, c"x".as_ptr(), t.ptr()) });
    ok(unsafe { TVMGraphExecutorRun(g.0) });
    assert_eq!(bits(&out.values()), bits(&x.iter().map(|v| 2.0 * v).collect::<Vec<_>>()));
    // A panic during profiling is caught too.
    let mut bad = HostTensor::new(&SHAPE, &input_with(0, 0, 13.0));
    ok(unsafe { TVMGraphExecutorSetInput(g.0, c"x".as_ptr(), bad.ptr()) });
    assert_eq!(unsafe { TVMGraphExecutorProfile(g.0, 0, &mut text) }, -1);
    assert!(last_error().contains("panic"), "{}", last_error());
    ok(unsafe { TVMGraphExecutorSetInput(g.0, c"x".as_ptr(), t.ptr()) });
    ok(unsafe { TVMGraphExecutorRun(g.0) });
    drop(g);
    drop(m);
}

// ---------------------------------------------------------------------------------------------
// A poisoned request in the request pipeline

#[test]
fn a_poisoned_request_fails_alone_in_the_pipeline() {
    use tvm_runtime::ffi::graph_executor::pipeline::*;
    let f = factory();
    let dev = DLDevice::cpu(0);
    let opts = CString::new("core_groups=2,threads_per_group=2,in_flight=4").unwrap();
    let mut p = std::ptr::null_mut();
    ok(unsafe { TVMPipelineCreate(f.0, &dev, 1, opts.as_ptr(), &mut p) });
    // Every 37th request holds a negative value (fails with a message), every 53rd a NaN
    // (fails without one); all others must give their own right answer.
    let input = |k: usize| match k {
        _ if k % 37 == 5 => input_with(k, k % N, -2.0),
        _ if k % 53 == 7 => input_with(k, k % N, f32::NAN),
        _ => good_input(k),
    };
    let mut tensors: Vec<(Box<HostTensor>, Box<HostTensor>)> =
        (0..400).map(|k| (HostTensor::new(&SHAPE, &input(k)), HostTensor::new(&SHAPE, &[0.0; N]))).collect();
    let ids: Vec<u64> = tensors
        .iter_mut()
        .map(|(x, y)| {
            let mut id = 0;
            ok(unsafe { TVMPipelineSubmit(p, &x.t, 1, &mut y.t, 1, &mut id) });
            id
        })
        .collect();
    for (k, (&id, (_, y))) in ids.iter().zip(&tensors).enumerate() {
        let rc = unsafe { TVMPipelineWait(p, id) };
        if k % 37 == 5 {
            assert_eq!(rc, -1, "request {k}");
            assert_contains(&last_error(), &["node `double_node`", &format!("negative input -2 at index {}", k % N)]);
        } else if k % 53 == 7 {
            assert_eq!(rc, -1, "request {k}");
            assert_contains(&last_error(), &["node `add_one_node`", "without setting an error message"]);
        } else {
            assert_eq!(rc, 0, "request {k}: {}", last_error());
            assert_eq!(bits(&y.values()), bits(&expected(&good_input(k))), "request {k}");
        }
    }
    ok(unsafe { TVMPipelineFree(p) });
}
