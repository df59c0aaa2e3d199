//! The executor's asynchronous phases through the C API: `TVMGraphExecutorSetInputAsync` (h2d),
//! `...RunAsync` (compute), `...GetOutputAsync` (d2h) on CPU streams, and
//! `TVMGraphExecutorSynchronize`.
//!
//! No test orders the stages with events of its own: the executor must order them on its
//! buffers. Events appear only where the host reuses a host tensor (it waits for the copy that
//! used it), and a host task *holding* a stream makes a run deterministically pending, so a copy
//! that failed to wait for it would show.

#[path = "../examples/demo/model.rs"]
mod model;

mod common;
use common::*;
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;
use tvm_runtime::abi::{DLDataType, DLDevice};
use tvm_runtime::ffi::graph_executor::phases::*;
use tvm_runtime::ffi::graph_executor::*;
use tvm_runtime::ffi::legacy::device::{
    TVMEventCreate, TVMEventFree, TVMEventRecord, TVMEventSynchronize, TVMStreamCreate, TVMStreamFree,
};
use tvm_runtime::runtime::device::device_api;

const CPU: i32 = 1;

// ---------------------------------------------------------------------------------------------
// Handles

struct Stream(*mut c_void);

impl Stream {
    fn new() -> Stream {
        let mut s = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        ok(unsafe { TVMStreamCreate(CPU, 0, &mut s) });
        Stream(s)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: a stream of this test, freed once.
        ok(unsafe { TVMStreamFree(CPU, 0, self.0) });
    }
}

struct Event(*mut c_void);

impl Event {
    fn new() -> Event {
        let mut e = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        ok(unsafe { TVMEventCreate(CPU, 0, &mut e) });
        Event(e)
    }
    fn record(&self, stream: &Stream) {
        // SAFETY: live handles.
        ok(unsafe { TVMEventRecord(CPU, 0, self.0, stream.0) });
    }
    fn sync(&self) {
        // SAFETY: a live handle.
        ok(unsafe { TVMEventSynchronize(CPU, 0, self.0) });
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: an event of this test, freed once.
        ok(unsafe { TVMEventFree(CPU, 0, self.0) });
    }
}

struct G(*mut TVMGraphExecutor);
// SAFETY: an executor handle may move between threads (used by one at a time).
unsafe impl Send for G {}

impl Drop for G {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: a live executor of this test.
            ok(unsafe { TVMGraphExecutorFree(self.0) });
        }
    }
}

/// A host task at the head of a stream that holds everything queued behind it until
/// [`Hold::release`] (or the drop): a run queued there stays pending for as long as a test needs.
struct Hold(Arc<(Mutex<bool>, Condvar)>);

impl Hold {
    fn new(stream: &Stream) -> Hold {
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let g = gate.clone();
        let wait = Box::new(move || {
            let open = g.0.lock().unwrap();
            drop(g.1.wait_while(open, |open| !*open).unwrap());
        });
        device_api(CPU).unwrap().launch_host_task(DLDevice::cpu(0), stream.0, wait).unwrap();
        Hold(gate)
    }
    fn release(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.release();
    }
}

// ---------------------------------------------------------------------------------------------
// Calls

fn set_input_async(g: &G, index: i32, t: &mut HostTensor, stream: *mut c_void) -> i32 {
    // SAFETY: a live executor; each test keeps `t` alive and untouched until the stream ran the
    // copy (it synchronizes first).
    unsafe { TVMGraphExecutorSetInputAsync(g.0, index, t.ptr(), stream) }
}

fn run_async(g: &G, stream: *mut c_void) -> i32 {
    // SAFETY: a live executor.
    unsafe { TVMGraphExecutorRunAsync(g.0, stream) }
}

fn get_output_async(g: &G, index: i32, t: &mut HostTensor, stream: *mut c_void) -> i32 {
    // SAFETY: as for `set_input_async`.
    unsafe { TVMGraphExecutorGetOutputAsync(g.0, index, t.ptr(), stream) }
}

fn synchronize(g: &G) -> i32 {
    // SAFETY: a live executor.
    unsafe { TVMGraphExecutorSynchronize(g.0) }
}

/// `rc` must be -1 with `want` in the message.
fn fails(rc: i32, want: &str) {
    assert_eq!(rc, -1, "expected an error containing `{want}`");
    let msg = last_error();
    assert!(msg.contains(want), "error `{msg}` does not contain `{want}`");
}

// ---------------------------------------------------------------------------------------------
// The demo model

fn demo_factory() -> Mod {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    let so = SO.get_or_init(|| model::build().unwrap_or_else(|e| panic!("building the demo model: {e}")));
    load_module(so).unwrap()
}

fn demo_executor(factory: &Mod, options: &str) -> G {
    let (dev, opts) = (DLDevice::cpu(0), CString::new(options).unwrap());
    let mut g = std::ptr::null_mut();
    // SAFETY: a live factory, one device, a C string and an out-pointer.
    ok(unsafe { TVMGraphExecutorCreateFromFactoryWithOptions(factory.0, &dev, 1, opts.as_ptr(), &mut g) });
    G(g)
}

fn input_index(g: &G, name: &str) -> i32 {
    let (name, mut i) = (CString::new(name).unwrap(), -1);
    // SAFETY: a live executor, a C string and an out-pointer.
    ok(unsafe { TVMGraphExecutorGetInputIndex(g.0, name.as_ptr(), &mut i) });
    i
}

fn image(request: usize) -> Vec<f32> {
    model::input_image(request as u64 * 7 + 1)
}

fn zeros() -> Box<HostTensor> {
    HostTensor::new(&model::OUTPUT_SHAPE, &[0.0; model::NUM_CLASSES])
}

/// What the synchronous executor computes for `images`, as bytes.
fn synchronous(factory: &Mod, images: impl Iterator<Item = Vec<f32>>) -> Vec<Vec<u8>> {
    let g = demo_executor(factory, "");
    let data = input_index(&g, model::INPUT_NAME);
    images
        .map(|img| {
            let (mut x, mut out) = (HostTensor::new(&model::INPUT_SHAPE, &img), zeros());
            // SAFETY: a live executor and tensors valid for the calls.
            unsafe {
                ok(TVMGraphExecutorSetInputByIndex(g.0, data, x.ptr()));
                ok(TVMGraphExecutorRun(g.0));
                ok(TVMGraphExecutorGetOutput(g.0, 0, out.ptr()));
            }
            bytes_of(&out.values())
        })
        .collect()
}

/// `n` requests through the three phases on `streams` (h2d, compute, d2h; possibly one stream
/// thrice) with two host input and output tensors used in turn; every output is compared with
/// the synchronous executor's bit for bit.
fn pipeline(options: &str, streams: [&Stream; 3], n: usize) {
    let factory = demo_factory();
    let want = synchronous(&factory, (0..n).map(image));
    let g = demo_executor(&factory, options);
    let data = input_index(&g, model::INPUT_NAME);
    let [h2d, compute, d2h] = streams;
    let mut inputs = [0, 1].map(|_| HostTensor::new(&model::INPUT_SHAPE, &[0.0; model::INPUT_LEN]));
    let mut outputs = [0, 1].map(|_| zeros());
    let done = [Event::new(), Event::new()];
    for r in 0..n + 2 {
        let slot = r % 2;
        if r >= 2 {
            // The host tensors of request r - 2 are free once its output copy is done.
            done[slot].sync();
            assert_eq!(bytes_of(&outputs[slot].values()), want[r - 2], "request {} ({options})", r - 2);
        }
        if r < n {
            inputs[slot].set_values(&image(r));
            ok(set_input_async(&g, data, &mut inputs[slot], h2d.0));
            ok(run_async(&g, compute.0));
            ok(get_output_async(&g, 0, &mut outputs[slot], d2h.0));
            done[slot].record(d2h);
        }
    }
    ok(synchronize(&g));
}

#[test]
fn three_streams_give_the_synchronous_results_bit_for_bit() {
    let (h2d, compute, d2h) = (Stream::new(), Stream::new(), Stream::new());
    pipeline("", [&h2d, &compute, &d2h], 300);
    pipeline("inter_op_threads=2,intra_op_threads=1", [&h2d, &compute, &d2h], 300);
}

#[test]
fn one_stream_for_every_phase_gives_them_too() {
    let s = Stream::new();
    pipeline("", [&s, &s, &s], 300);
}

#[test]
fn the_null_stream_runs_each_phase_at_once() {
    let factory = demo_factory();
    let want = synchronous(&factory, (0..3).map(image));
    let g = demo_executor(&factory, "");
    for (r, want) in want.iter().enumerate() {
        let (mut x, mut out) = (HostTensor::new(&model::INPUT_SHAPE, &image(r)), zeros());
        ok(set_input_async(&g, 0, &mut x, std::ptr::null_mut()));
        ok(run_async(&g, std::ptr::null_mut()));
        ok(get_output_async(&g, 0, &mut out, std::ptr::null_mut()));
        // Done on return: no synchronize before reading.
        assert_eq!(&bytes_of(&out.values()), want);
    }
}

// ---------------------------------------------------------------------------------------------
// Hazards: a copy into an input while a run reading it is pending

/// The next request's input is queued (on its own stream) while the run of the current one is
/// held pending: the copy must wait for that run on the device side, and the host must not
/// wait at all (it could not: the run is held until the host releases it).
#[test]
fn a_copy_into_an_input_waits_for_the_pending_run_that_reads_it() {
    let factory = demo_factory();
    let want = synchronous(&factory, (0..2).map(image));
    let g = demo_executor(&factory, "");
    let (h2d, compute, d2h) = (Stream::new(), Stream::new(), Stream::new());
    let mut x = [0, 1].map(|r| HostTensor::new(&model::INPUT_SHAPE, &image(r)));
    let mut out = [zeros(), zeros()];
    let hold = Hold::new(&compute);
    for r in 0..2 {
        ok(set_input_async(&g, 0, &mut x[r], h2d.0));
        ok(run_async(&g, compute.0));
        ok(get_output_async(&g, 0, &mut out[r], d2h.0));
    }
    // Every call returned with the first run still held: the host was never blocked.
    hold.release();
    ok(synchronize(&g));
    for r in 0..2 {
        assert_eq!(bytes_of(&out[r].values()), want[r], "request {r}");
    }
}

/// A chain of slow kernels (tests/fixtures/dag_kernels.c) as graph JSON: `x` then `len`
/// `dag_affine1_slow` nodes (out = x * 1.5 + 0.25, after a busy spin), each in its own storage.
fn slow_chain_json(len: usize) -> String {
    let mut nodes = vec![serde_json::json!({"op": "null", "name": "x", "inputs": []})];
    for k in 0..len {
        nodes.push(serde_json::json!({
            "op": "tvm_op", "name": format!("affine_{k}"), "inputs": [[k, 0, 0]],
            "attrs": {"num_outputs": "1", "num_inputs": "1", "flatten_data": "0", "func_name": "dag_affine1_slow"},
        }));
    }
    let n = len + 1;
    serde_json::json!({
        "nodes": nodes, "arg_nodes": [0], "heads": [[len, 0, 0]],
        "attrs": {
            "dltype": ["list_str", vec!["float32"; n]],
            "device_index": ["list_int", vec![1; n]],
            "storage_id": ["list_int", (0..n).collect::<Vec<_>>()],
            "shape": ["list_shape", vec![[1, 16]; n]],
        },
        "node_row_ptr": (0..=n).collect::<Vec<_>>(),
    })
    .to_string()
}

fn executor_from_json(json: &str, lib: &Mod) -> G {
    let (json, dev) = (CString::new(json).unwrap(), DLDevice::cpu(0));
    let mut g = std::ptr::null_mut();
    // SAFETY: a C string, a live module, one device and an out-pointer.
    ok(unsafe { TVMGraphExecutorCreate(json.as_ptr(), lib.0, &dev, 1, &mut g) });
    G(g)
}

/// Runs of 48 slow ops with the next request's input queued on another stream while each run is
/// pending, and the outputs copied on a third: every output is that of its own input.
#[test]
fn slow_runs_with_the_next_input_queued_meanwhile() {
    const OPS: usize = 48;
    let so =
        build_so(&scratch("async_phases").join("dag_kernels.so"), &[repo().join("tests/fixtures/dag_kernels.c")], None);
    let lib = load_module(&so).unwrap();
    let g = executor_from_json(&slow_chain_json(OPS), &lib);
    let (h2d, compute, d2h) = (Stream::new(), Stream::new(), Stream::new());
    let input = |r: usize| (0..16).map(|i| (r * 16 + i) as f32 * 0.125).collect::<Vec<f32>>();
    let expect = |x: Vec<f32>| x.into_iter().map(|v| (0..OPS).fold(v, |a, _| a * 1.5 + 0.25)).collect::<Vec<f32>>();
    for round in 0..20 {
        let mut x = [0, 1].map(|k| HostTensor::new(&[1, 16], &input(round * 2 + k)));
        let mut out = [0, 1].map(|_| HostTensor::new(&[1, 16], &[0.0; 16]));
        for (x, out) in x.iter_mut().zip(&mut out) {
            ok(set_input_async(&g, 0, x, h2d.0));
            ok(run_async(&g, compute.0));
            ok(get_output_async(&g, 0, out, d2h.0));
        }
        ok(synchronize(&g));
        for (k, out) in out.iter().enumerate() {
            let r = round * 2 + k;
            assert_eq!(bytes_of(&out.values()), bytes_of(&expect(input(r))), "request {r}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Failures of queued runs

/// tests/fixtures/failure_kernels.c behind graph JSON: x -> `double_node` (fs_double_checked,
/// fails with a message naming the index of a negative value) -> `add_one_node`.
fn failure_executor() -> (Mod, G) {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    let so = SO.get_or_init(|| {
        let src = repo().join("tests/fixtures/failure_kernels.c");
        build_so(&scratch("async_phases").join("failure_kernels.so"), &[src], None)
    });
    let lib = load_module(so).unwrap();
    let node = |name: &str, func: &str, input: usize| {
        serde_json::json!({"op": "tvm_op", "name": name, "inputs": [[input, 0, 0]],
            "attrs": {"num_outputs": "1", "num_inputs": "1", "flatten_data": "0", "func_name": func}})
    };
    let json = serde_json::json!({
        "nodes": [
            {"op": "null", "name": "x", "inputs": []},
            node("double_node", "fs_double_checked", 0),
            node("add_one_node", "fs_add_one_silent", 1),
        ],
        "arg_nodes": [0], "heads": [[2, 0, 0]],
        "attrs": {
            "dltype": ["list_str", ["float32", "float32", "float32"]],
            "device_index": ["list_int", [1, 1, 1]],
            "storage_id": ["list_int", [0, 1, 2]],
            "shape": ["list_shape", [[1, 16], [1, 16], [1, 16]]],
        },
        "node_row_ptr": [0, 1, 2, 3],
    });
    let g = executor_from_json(&json.to_string(), &lib);
    (lib, g)
}

fn good(seed: usize) -> Vec<f32> {
    (0..16).map(|i| (seed * 16 + i) as f32 * 0.5).collect()
}

/// `good(seed)` with a negative value at `index`: `double_node` fails naming that index.
fn bad(seed: usize, index: usize) -> Vec<f32> {
    let mut x = good(seed);
    x[index] = -1.0;
    x
}

fn doubled_plus_one(x: &[f32]) -> Vec<u8> {
    bytes_of(&x.iter().map(|v| 2.0 * v + 1.0).collect::<Vec<f32>>())
}

/// One request through the three phases on `stream`; returns the synchronize status.
fn request(g: &G, x: &[f32], out: &mut HostTensor, stream: &Stream) -> i32 {
    let mut t = HostTensor::new(&[1, 16], x);
    ok(set_input_async(g, 0, &mut t, stream.0));
    ok(run_async(g, stream.0));
    ok(get_output_async(g, 0, out, stream.0));
    synchronize(g)
}

#[test]
fn a_failing_queued_run_is_reported_by_synchronize_naming_the_node() {
    let (_lib, g) = failure_executor();
    let (s, d2h) = (Stream::new(), Stream::new());
    let mut out = HostTensor::new(&[1, 16], &[0.0; 16]);
    // Two failing runs queued: the first failure is the one reported, once.
    let (mut x1, mut x2) = (HostTensor::new(&[1, 16], &bad(0, 3)), HostTensor::new(&[1, 16], &bad(1, 9)));
    ok(set_input_async(&g, 0, &mut x1, s.0));
    ok(run_async(&g, s.0));
    ok(set_input_async(&g, 0, &mut x2, s.0));
    ok(run_async(&g, s.0));
    ok(get_output_async(&g, 0, &mut out, d2h.0));
    fails(synchronize(&g), "node `double_node`");
    assert!(last_error().contains("negative input -1 at index 3"), "{}", last_error());
    ok(synchronize(&g));
    // The executor works afterwards, asynchronously and synchronously.
    for seed in 0..5 {
        ok(request(&g, &good(seed), &mut out, &s));
        assert_eq!(bytes_of(&out.values()), doubled_plus_one(&good(seed)));
    }
    let mut x = HostTensor::new(&[1, 16], &good(7));
    // SAFETY: a live executor and tensors valid for the calls.
    unsafe {
        ok(TVMGraphExecutorSetInputByIndex(g.0, 0, x.ptr()));
        ok(TVMGraphExecutorRun(g.0));
        ok(TVMGraphExecutorGetOutput(g.0, 0, out.ptr()));
    }
    assert_eq!(bytes_of(&out.values()), doubled_plus_one(&good(7)));
}

#[test]
fn the_next_synchronous_call_reports_a_queued_failure_once() {
    let (_lib, g) = failure_executor();
    let s = Stream::new();
    let mut x = HostTensor::new(&[1, 16], &bad(0, 5));
    ok(set_input_async(&g, 0, &mut x, s.0));
    ok(run_async(&g, s.0));
    // The synchronous call waits for the queued run, and reports its failure instead of running.
    // SAFETY: a live executor.
    fails(unsafe { TVMGraphExecutorRun(g.0) }, "node `double_node`");
    assert!(last_error().contains("at index 5"), "{}", last_error());
    ok(synchronize(&g));
    // SAFETY: a live executor (the input is still the bad one: its run fails synchronously).
    fails(unsafe { TVMGraphExecutorRun(g.0) }, "node `double_node`");
    ok(synchronize(&g));
}

#[test]
fn a_run_on_the_null_stream_returns_its_own_error() {
    let (_lib, g) = failure_executor();
    let mut x = HostTensor::new(&[1, 16], &bad(0, 2));
    ok(set_input_async(&g, 0, &mut x, std::ptr::null_mut()));
    fails(run_async(&g, std::ptr::null_mut()), "node `double_node`");
    // Reported by the call, so not kept for synchronize.
    ok(synchronize(&g));
}

#[test]
fn free_drops_a_queued_failure() {
    let (_lib, mut g) = failure_executor();
    let s = Stream::new();
    let mut x = HostTensor::new(&[1, 16], &bad(0, 1));
    ok(set_input_async(&g, 0, &mut x, s.0));
    ok(run_async(&g, s.0));
    // SAFETY: a live executor, freed once.
    ok(unsafe { TVMGraphExecutorFree(g.0) });
    g.0 = std::ptr::null_mut();
}

// ---------------------------------------------------------------------------------------------
// Synchronous calls and free with stages in flight

#[test]
fn synchronous_calls_wait_for_queued_stages() {
    let factory = demo_factory();
    let want = synchronous(&factory, (0..1).map(image));
    let g = demo_executor(&factory, "");
    let s = Stream::new();
    let (mut x, mut out) = (HostTensor::new(&model::INPUT_SHAPE, &image(0)), zeros());
    let hold = Hold::new(&s);
    ok(set_input_async(&g, 0, &mut x, s.0));
    ok(run_async(&g, s.0));
    let released = Arc::new(AtomicBool::new(false));
    let r = released.clone();
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        r.store(true, Ordering::SeqCst);
        hold.release();
    });
    // SAFETY: a live executor and a tensor valid for the call.
    ok(unsafe { TVMGraphExecutorGetOutput(g.0, 0, out.ptr()) });
    assert!(released.load(Ordering::SeqCst), "the synchronous call did not wait for the queued run");
    assert_eq!(bytes_of(&out.values()), want[0]);
    opener.join().unwrap();
}

#[test]
fn free_waits_for_stages_in_flight() {
    let factory = demo_factory();
    let want = synchronous(&factory, (0..1).map(image));
    let mut g = demo_executor(&factory, "");
    let (h2d, compute, d2h) = (Stream::new(), Stream::new(), Stream::new());
    let (mut x, mut out) = (HostTensor::new(&model::INPUT_SHAPE, &image(0)), zeros());
    let hold = Hold::new(&compute);
    ok(set_input_async(&g, 0, &mut x, h2d.0));
    ok(run_async(&g, compute.0));
    ok(get_output_async(&g, 0, &mut out, d2h.0));
    let released = Arc::new(AtomicBool::new(false));
    let r = released.clone();
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        r.store(true, Ordering::SeqCst);
        hold.release();
    });
    // SAFETY: a live executor, freed once.
    ok(unsafe { TVMGraphExecutorFree(g.0) });
    g.0 = std::ptr::null_mut();
    assert!(released.load(Ordering::SeqCst), "free returned before the queued run could start");
    // The output copy ran before free returned: `out` may be read (and freed) now.
    assert_eq!(bytes_of(&out.values()), want[0]);
    opener.join().unwrap();
}

/// The first queued write into a weight makes it this executor's own: other executors of the
/// factory keep the shared weights, and this one computes with the new values exactly as a
/// synchronous `set_input` of them would.
#[test]
fn a_queued_write_into_a_shared_weight_stays_private() {
    let factory = demo_factory();
    let (a, b, reference) = (demo_executor(&factory, ""), demo_executor(&factory, ""), demo_executor(&factory, ""));
    let p5 = input_index(&a, "p5");
    let before = synchronous(&factory, (0..1).map(image));
    let mut bias = HostTensor::new(&[model::NUM_CLASSES as i64], &[0.5; model::NUM_CLASSES]);
    let s = Stream::new();
    ok(set_input_async(&a, p5, &mut bias, s.0));
    let outputs = [&a, &b, &reference].map(|g| {
        let (mut x, mut out) = (HostTensor::new(&model::INPUT_SHAPE, &image(0)), zeros());
        if std::ptr::eq(g, &reference) {
            // SAFETY: a live executor and a tensor valid for the call.
            ok(unsafe { TVMGraphExecutorSetInputByIndex(g.0, p5, bias.ptr()) });
        }
        ok(request_on(g, &mut x, &mut out, &s));
        bytes_of(&out.values())
    });
    assert_ne!(outputs[0], before[0], "the new bias was not used");
    assert_eq!(outputs[0], outputs[2], "a queued weight write differs from a synchronous one");
    assert_eq!(outputs[1], before[0], "another executor of the factory saw the write");
}

fn request_on(g: &G, x: &mut HostTensor, out: &mut HostTensor, s: &Stream) -> i32 {
    ok(set_input_async(g, 0, x, s.0));
    ok(run_async(g, s.0));
    ok(get_output_async(g, 0, out, s.0));
    synchronize(g)
}

// ---------------------------------------------------------------------------------------------
// Misuse

#[test]
fn misuse_is_an_error_naming_what_is_wrong() {
    let factory = demo_factory();
    let g = demo_executor(&factory, "");
    let s = Stream::new();
    let mut x = HostTensor::new(&model::INPUT_SHAPE, &image(0));
    let mut out = zeros();

    // Streams: not one, and one freed already.
    let bogus = 0x1234usize as *mut c_void;
    fails(set_input_async(&g, 0, &mut x, bogus), "is not a live cpu stream");
    fails(run_async(&g, bogus), "is not a live cpu stream");
    fails(get_output_async(&g, 0, &mut out, bogus), "is not a live cpu stream");
    let freed = Stream::new();
    let dangling = freed.0;
    drop(freed);
    fails(run_async(&g, dangling), "is not a live cpu stream");

    // NULL tensors and executors, and a freed executor.
    // SAFETY: NULL pointers are errors, not dereferenced.
    unsafe {
        fails(TVMGraphExecutorSetInputAsync(g.0, 0, std::ptr::null(), s.0), "argument `data` is NULL");
        fails(TVMGraphExecutorGetOutputAsync(g.0, 0, std::ptr::null_mut(), s.0), "argument `out` is NULL");
        fails(TVMGraphExecutorRunAsync(std::ptr::null_mut(), s.0), "argument `g` (graph executor) is NULL");
        fails(TVMGraphExecutorSynchronize(std::ptr::null_mut()), "argument `g` (graph executor) is NULL");
    }
    let gone = demo_executor(&factory, "");
    let dangling = gone.0;
    drop(gone);
    // SAFETY: executor handles are looked up, never followed.
    fails(unsafe { TVMGraphExecutorRunAsync(dangling, s.0) }, "is not live");

    // Indices.
    fails(set_input_async(&g, 99, &mut x, s.0), "input index 99 out of range");
    fails(set_input_async(&g, -1, &mut x, s.0), "input index -1 is negative");
    fails(get_output_async(&g, 1, &mut out, s.0), "output index 1 out of range");

    // Shapes, dtypes and data, checked when queued.
    let mut short = HostTensor::new(&[1, 1, 16, 15], &[0.0; 240]);
    fails(set_input_async(&g, 0, &mut short, s.0), "expected shape [1, 1, 16, 16], got [1, 1, 16, 15]");
    let mut wide = HostTensor::new(&[1, 5], &[0.0; 5]);
    fails(get_output_async(&g, 0, &mut wide, s.0), "get_output_async `tvmgen_default_fused_nn_softmax`");
    let mut ints = HostTensor::new(&model::INPUT_SHAPE, &image(0));
    ints.t.dtype = DLDataType::new(0, 32, 1);
    fails(set_input_async(&g, 0, &mut ints, s.0), "expected dtype float32");
    let mut no_data = HostTensor::new(&model::INPUT_SHAPE, &image(0));
    no_data.t.data = std::ptr::null_mut();
    fails(set_input_async(&g, 0, &mut no_data, s.0), "data pointer is NULL");

    // Nothing was queued by the failed calls; the executor serves requests as before.
    ok(synchronize(&g));
    let want = synchronous(&factory, (0..1).map(image));
    ok(request_on(&g, &mut x, &mut out, &s));
    assert_eq!(bytes_of(&out.values()), want[0]);
}
