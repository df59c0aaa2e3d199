//! The request pipeline through the C API (`TVMPipeline*`), on the demo model: many requests
//! from several submitting threads over several core groups give the synchronous executor's
//! bits; callbacks report each request once; every misuse is a clear error; freeing with
//! requests in flight drains or cancels them; the Chrome trace shows the stages.
//! (A poisoned request among many is in tests/failure_safety.rs, which has failing kernels.)

#[path = "../examples/demo/model.rs"]
mod model;

mod common;
use common::*;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use tvm_runtime::abi::{DLDevice, DLTensor};
use tvm_runtime::ffi::graph_executor::pipeline::*;
use tvm_runtime::ffi::graph_executor::*;
use tvm_runtime::runtime::base::error::Result as RtResult;
use tvm_runtime::runtime::function::packed::{Module, ModuleNode, PackedFunc, Value};

fn demo_so() -> PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| model::build().unwrap_or_else(|e| panic!("building the demo model: {e}"))).clone()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// A pipeline handle, freed on drop.
struct P(*mut TVMPipeline);
// SAFETY: pipeline handles may be used from any thread.
unsafe impl Send for P {}
// SAFETY: as above.
unsafe impl Sync for P {}
impl Drop for P {
    fn drop(&mut self) {
        ok(unsafe { TVMPipelineFree(self.0) });
    }
}

fn pipeline(factory: &Mod, options: &str) -> Result<P, String> {
    let dev = DLDevice::cpu(0);
    let opts = CString::new(options).unwrap();
    let mut p = std::ptr::null_mut();
    if unsafe { TVMPipelineCreate(factory.0, &dev, 1, opts.as_ptr(), &mut p) } != 0 {
        return Err(last_error());
    }
    Ok(P(p))
}

/// A request's host tensors (kept alive until it is done).
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

    fn submit(&mut self, p: &P) -> Result<u64, String> {
        let ins = [self.input.t];
        let mut outs = [self.output.t];
        let mut id = 0;
        if unsafe { TVMPipelineSubmit(p.0, ins.as_ptr(), 1, outs.as_mut_ptr(), 1, &mut id) } != 0 {
            return Err(last_error());
        }
        Ok(id)
    }
}

fn wait(p: &P, id: u64) -> Result<(), String> {
    if unsafe { TVMPipelineWait(p.0, id) } != 0 {
        return Err(last_error());
    }
    Ok(())
}

/// The synchronous executor's output bits for each seed.
fn reference_bits(factory: &Mod, seeds: impl Iterator<Item = u64>) -> Vec<Vec<u32>> {
    let dev = DLDevice::cpu(0);
    let mut g = std::ptr::null_mut();
    ok(unsafe { TVMGraphExecutorCreateFromFactory(factory.0, &dev, 1, &mut g) });
    let out = seeds
        .map(|s| {
            let mut r = Request::new(s);
            ok(unsafe { TVMGraphExecutorSetInputByIndex(g, 0, r.input.ptr()) });
            ok(unsafe { TVMGraphExecutorRun(g) });
            ok(unsafe { TVMGraphExecutorGetOutput(g, 0, r.output.ptr()) });
            bits(&r.output.values())
        })
        .collect();
    ok(unsafe { TVMGraphExecutorFree(g) });
    out
}

#[test]
fn a_thousand_requests_from_four_threads_over_two_groups_match_the_executor_bits() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 250;
    const OUTSTANDING: usize = 6;
    let factory = load_module(&demo_so()).unwrap();
    let want = reference_bits(&factory, 0..THREADS * PER_THREAD);
    for options in ["core_groups=2,threads_per_group=1,in_flight=4", "core_groups=2,threads_per_group=2,in_flight=3"] {
        let p = pipeline(&factory, options).unwrap();
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (p, want) = (&p, &want);
                s.spawn(move || {
                    let mut pending: std::collections::VecDeque<(u64, u64, Request)> = Default::default();
                    let check = |(seed, id, r): (u64, u64, Request)| {
                        wait(p, id).unwrap();
                        assert_eq!(bits(&r.output.values()), want[seed as usize], "{options}: request for seed {seed}");
                    };
                    for k in 0..PER_THREAD {
                        let seed = t * PER_THREAD + k;
                        let mut r = Request::new(seed);
                        let id = r.submit(p).unwrap();
                        pending.push_back((seed, id, r));
                        if pending.len() > OUTSTANDING {
                            check(pending.pop_front().unwrap());
                        }
                    }
                    pending.into_iter().for_each(check);
                });
            }
        });
    }
}

struct Reports {
    /// (request, status, message) per callback.
    calls: Mutex<Vec<(u64, c_int, String)>>,
}

unsafe extern "C" fn record(request: u64, status: c_int, error: *const c_char, user: *mut c_void) {
    // SAFETY: the test passes a `Reports` that outlives the pipeline; `error` is a C string.
    let (reports, msg) = unsafe { (&*(user as *const Reports), CStr::from_ptr(error).to_string_lossy().into_owned()) };
    reports.calls.lock().unwrap().push((request, status, msg));
}

fn submit_with_callback(p: &P, r: &mut Request, reports: &Reports) -> Result<u64, String> {
    let ins = [r.input.t];
    let mut outs = [r.output.t];
    let mut id = 0;
    let user = reports as *const Reports as *mut c_void;
    if unsafe { TVMPipelineSubmitWithCallback(p.0, ins.as_ptr(), 1, outs.as_mut_ptr(), 1, Some(record), user, &mut id) }
        != 0
    {
        return Err(last_error());
    }
    Ok(id)
}

#[test]
fn callbacks_report_each_request_once_with_its_outputs_written() {
    const N: u64 = 300;
    let factory = load_module(&demo_so()).unwrap();
    let want = reference_bits(&factory, 0..N);
    let reports = Reports { calls: Mutex::new(Vec::new()) };
    let mut requests: Vec<Request> = (0..N).map(Request::new).collect();
    let p = pipeline(&factory, "core_groups=2,in_flight=4").unwrap();
    let ids: Vec<u64> = requests.iter_mut().map(|r| submit_with_callback(&p, r, &reports).unwrap()).collect();
    // A callback request cannot be waited for.
    let e = wait(&p, ids[0]).unwrap_err();
    assert!(e.contains("reports through its callback") || e.contains("is unknown"), "{e}");
    let t0 = std::time::Instant::now();
    while reports.calls.lock().unwrap().len() < N as usize {
        assert!(t0.elapsed().as_secs() < 60, "callbacks missing");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(p);
    let mut calls = reports.calls.lock().unwrap().clone();
    calls.sort();
    assert_eq!(calls.iter().map(|c| c.0).collect::<Vec<_>>(), ids);
    for ((_, status, msg), (r, seed)) in calls.iter().zip(requests.iter().zip(0..)) {
        assert_eq!((*status, msg.as_str()), (0, ""));
        assert_eq!(bits(&r.output.values()), want[seed], "seed {seed}");
    }
}

#[test]
fn freeing_with_requests_in_flight_finishes_or_cancels_each_once() {
    let factory = load_module(&demo_so()).unwrap();
    let want = reference_bits(&factory, 0..400);
    for round in 0..5 {
        let reports = Reports { calls: Mutex::new(Vec::new()) };
        let mut requests: Vec<Request> = (0..400).map(Request::new).collect();
        let p = pipeline(&factory, "core_groups=2,in_flight=2").unwrap();
        for r in requests.iter_mut() {
            submit_with_callback(&p, r, &reports).unwrap();
        }
        drop(p);
        let calls = reports.calls.lock().unwrap().clone();
        assert_eq!(calls.len(), 400, "round {round}: every request reported once");
        let mut ids: Vec<u64> = calls.iter().map(|c| c.0).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 400);
        for (id, status, msg) in &calls {
            let r = &requests[*id as usize - 1];
            match status {
                0 => assert_eq!(bits(&r.output.values()), want[*id as usize - 1]),
                _ => assert!(msg.contains(&format!("request {id} was cancelled")), "{msg}"),
            }
        }
    }
}

#[test]
fn misuse_is_an_error_naming_the_problem() {
    let factory = load_module(&demo_so()).unwrap();
    for (options, needle) in [
        ("core_groups=0", "option `core_groups`"),
        ("groups=2", "unknown option `groups`"),
        ("cpus=0-1;2-x", "option `cpus`"),
        ("in_flight=1,core_groups=2", "option `in_flight`"),
        ("trace=maybe", "option `trace`"),
    ] {
        let e = pipeline(&factory, options).err().unwrap_or_else(|| panic!("{options} accepted"));
        assert!(e.contains(needle), "{options}: {e}");
    }
    let p = pipeline(&factory, "core_groups=1,in_flight=2").unwrap();
    let r = Request::new(1);
    let (ins, mut outs) = ([r.input.t], [r.output.t]);
    let mut id = 0;
    let submit = |ins: &[DLTensor], outs: &mut [DLTensor], id: &mut u64| {
        let rc =
            unsafe { TVMPipelineSubmit(p.0, ins.as_ptr(), ins.len() as u32, outs.as_mut_ptr(), outs.len() as u32, id) };
        if rc == 0 {
            Ok(())
        } else {
            Err(last_error())
        }
    };
    let e = submit(&[], &mut outs, &mut id).unwrap_err();
    assert!(e.contains("0 input tensors given, the model takes 1 (data)"), "{e}");
    let e = submit(&ins, &mut [], &mut id).unwrap_err();
    assert!(e.contains("0 output tensors given, the model has 1"), "{e}");
    let wrong = HostTensor::new(&[1, 1, 8, 32], &model::input_image(1));
    let e = submit(&[wrong.t], &mut outs, &mut id).unwrap_err();
    assert!(e.contains("submit: input `data`") && e.contains("shape"), "{e}");
    let mut bad_dtype = r.input.t;
    bad_dtype.dtype.bits = 64;
    let e = submit(&[bad_dtype], &mut outs, &mut id).unwrap_err();
    assert!(e.contains("submit: input `data`") && e.contains("dtype"), "{e}");
    let e = unsafe { TVMPipelineSubmit(p.0, ins.as_ptr(), 1, outs.as_mut_ptr(), 1, std::ptr::null_mut()) };
    assert_eq!((e, last_error().contains("out_request")), (-1, true));
    let e = unsafe { TVMPipelineSubmit(p.0, std::ptr::null(), 1, outs.as_mut_ptr(), 1, &mut id) };
    assert_eq!((e, last_error().contains("inputs")), (-1, true), "{}", last_error());
    let mut cb_id = 0;
    let rc = unsafe {
        TVMPipelineSubmitWithCallback(
            p.0,
            ins.as_ptr(),
            1,
            outs.as_mut_ptr(),
            1,
            None,
            std::ptr::null_mut(),
            &mut cb_id,
        )
    };
    assert_eq!((rc, last_error().contains("`callback` is NULL")), (-1, true));

    submit(&ins, &mut outs, &mut id).unwrap();
    wait(&p, id).unwrap();
    let e = wait(&p, id).unwrap_err();
    assert!(e.contains(&format!("request {id} is unknown")), "{e}");
    let e = wait(&p, 999_999).unwrap_err();
    assert!(e.contains("request 999999 is unknown"), "{e}");
    let mut json: *const c_char = std::ptr::null();
    assert_eq!(unsafe { TVMPipelineGetTrace(p.0, &mut json) }, -1);
    assert!(last_error().contains("trace=1"), "{}", last_error());

    assert_eq!(unsafe { TVMPipelineWait(std::ptr::null_mut(), 1) }, -1);
    assert!(last_error().contains("pipeline handle `p` is NULL"));
    let raw = p.0;
    drop(p);
    assert_eq!(unsafe { TVMPipelineWait(raw, 1) }, -1);
    assert!(last_error().contains("is not live"), "{}", last_error());
    assert_eq!(unsafe { TVMPipelineFree(raw) }, -1);
    assert!(last_error().contains("freed twice"), "{}", last_error());
    assert_eq!(unsafe { TVMPipelineFree(std::ptr::null_mut()) }, 0);

    // A module that is not a factory.
    let dev = DLDevice::cpu(0);
    let mut out = std::ptr::null_mut();
    assert_eq!(unsafe { TVMPipelineCreate(std::ptr::null_mut(), &dev, 1, std::ptr::null(), &mut out) }, -1);
    assert!(last_error().contains("factory"), "{}", last_error());
    assert_eq!(unsafe { TVMPipelineCreate(factory.0, &dev, 0, std::ptr::null(), &mut out) }, -1);
    assert!(last_error().contains("num_devices"), "{}", last_error());
}

#[test]
fn the_trace_has_a_lane_per_stream_and_ordered_stages() {
    const N: u64 = 24;
    let factory = load_module(&demo_so()).unwrap();
    let p = pipeline(&factory, "core_groups=2,in_flight=4,trace=1").unwrap();
    let mut requests: Vec<Request> = (0..N).map(Request::new).collect();
    let ids: Vec<u64> = requests.iter_mut().map(|r| r.submit(&p).unwrap()).collect();
    ids.iter().for_each(|&id| wait(&p, id).unwrap());
    let mut json: *const c_char = std::ptr::null();
    ok(unsafe { TVMPipelineGetTrace(p.0, &mut json) });
    let text = unsafe { CStr::from_ptr(json) }.to_str().unwrap().to_string();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    assert_eq!(v["displayTimeUnit"], "ms");
    let lanes: Vec<&str> =
        events.iter().filter(|e| e["ph"] == "M").map(|e| e["args"]["name"].as_str().unwrap()).collect();
    for g in 0..2 {
        for s in ["h2d", "compute", "d2h"] {
            assert!(lanes.contains(&format!("group {g} {s}").as_str()), "{lanes:?}");
        }
    }
    let spans: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(spans.len() as u64, 3 * N);
    let find = |id: u64, stage: &str| {
        let s = spans.iter().find(|e| e["args"]["request"] == id && e["cat"] == stage).unwrap();
        (s["ts"].as_f64().unwrap(), s["dur"].as_f64().unwrap(), s["tid"].as_u64().unwrap())
    };
    for &id in &ids {
        let (h, c, d) = (find(id, "h2d"), find(id, "compute"), find(id, "d2h"));
        assert!(h.0 + h.1 <= c.0 && c.0 + c.1 <= d.0, "request {id}: {h:?} {c:?} {d:?}");
        assert!(c.1 > 0.0);
        assert_eq!((h.2 / 3, c.2 / 3), (d.2 / 3, d.2 / 3), "one group per request");
    }
    // Both groups served requests.
    let groups: std::collections::HashSet<u64> = ids.iter().map(|&id| find(id, "compute").2 / 3).collect();
    assert_eq!(groups.len(), 2);
}

/// The trace through `TVMPipelineGetTrace`, copied out of the runtime's text.
fn trace_by_pointer(p: &P) -> String {
    let mut json: *const c_char = std::ptr::null();
    ok(unsafe { TVMPipelineGetTrace(p.0, &mut json) });
    unsafe { CStr::from_ptr(json) }.to_str().unwrap().to_string()
}

/// The trace through `TVMPipelineGetTraceInto`: a size query, then buffers of the reported size
/// until one is large enough (the trace may grow in between).
fn trace_into(p: &P) -> String {
    let mut size = 0usize;
    ok(unsafe { TVMPipelineGetTraceInto(p.0, std::ptr::null_mut(), 0, &mut size) });
    loop {
        let mut buf = vec![0xffu8; size];
        ok(unsafe { TVMPipelineGetTraceInto(p.0, buf.as_mut_ptr().cast(), buf.len(), &mut size) });
        if size <= buf.len() {
            assert_eq!(buf[size - 1], 0, "the copied text ends with its NUL");
            buf.truncate(size - 1);
            return String::from_utf8(buf).unwrap();
        }
    }
}

/// The number of spans in a trace, which must be JSON.
fn spans_in(text: &str) -> usize {
    let v: serde_json::Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
    v["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").count()
}

fn run_one(p: &P, seed: u64) {
    let mut r = Request::new(seed);
    let id = r.submit(p).unwrap();
    wait(p, id).unwrap();
}

#[test]
fn a_threads_trace_text_survives_other_threads_calls() {
    let factory = load_module(&demo_so()).unwrap();
    let p = pipeline(&factory, "core_groups=1,in_flight=2,trace=1").unwrap();
    run_one(&p, 0);
    let turn = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        // This thread holds its text while the other one calls (with one more request done).
        s.spawn(|| {
            let p = &p;
            let mut json: *const c_char = std::ptr::null();
            ok(unsafe { TVMPipelineGetTrace(p.0, &mut json) });
            let before = unsafe { CStr::from_ptr(json) }.to_str().unwrap().to_string();
            turn.wait();
            turn.wait();
            let after = unsafe { CStr::from_ptr(json) }.to_str().unwrap();
            assert_eq!(after, before, "another thread's call changed this thread's text");
            assert_eq!(spans_in(after), 3);
        });
        s.spawn(|| {
            turn.wait();
            run_one(&p, 1);
            assert_eq!(spans_in(&trace_by_pointer(&p)), 6);
            turn.wait();
        });
    });
    // Two threads reading both ways while requests are done: every text is a whole trace, with
    // no fewer spans than the one before.
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut seen = 6;
                    for _ in 0..200 {
                        for n in [spans_in(&trace_by_pointer(&p)), spans_in(&trace_into(&p))] {
                            assert!(n >= seen, "{n} spans after {seen}");
                            seen = n;
                        }
                    }
                })
            })
            .collect();
        (2..22).for_each(|seed| run_one(&p, seed));
        readers.into_iter().for_each(|r| r.join().unwrap());
    });
    assert_eq!(spans_in(&trace_into(&p)), 3 * 22);
}

#[test]
fn trace_into_copies_the_whole_text_or_reports_the_size() {
    let factory = load_module(&demo_so()).unwrap();
    let p = pipeline(&factory, "core_groups=1,trace=1").unwrap();
    run_one(&p, 0);
    let text = trace_by_pointer(&p);
    let need = text.len() + 1;
    let mut size = 0usize;
    ok(unsafe { TVMPipelineGetTraceInto(p.0, std::ptr::null_mut(), 0, &mut size) });
    assert_eq!(size, need);
    // Too small: the first `capacity` bytes, nothing past them, no NUL; the size is reported.
    let mut buf = vec![0xffu8; need];
    size = 0;
    ok(unsafe { TVMPipelineGetTraceInto(p.0, buf.as_mut_ptr().cast(), 10, &mut size) });
    assert_eq!((size, &buf[..10], buf[10]), (need, &text.as_bytes()[..10], 0xff));
    // Exactly the size: the text and its NUL.
    ok(unsafe { TVMPipelineGetTraceInto(p.0, buf.as_mut_ptr().cast(), need, &mut size) });
    assert_eq!((size, CStr::from_bytes_with_nul(&buf).unwrap().to_str().unwrap()), (need, text.as_str()));
    assert_eq!(trace_into(&p), text);

    let fail = |p: *mut TVMPipeline, buf: *mut c_char, capacity: usize, out: *mut usize| {
        assert_eq!(unsafe { TVMPipelineGetTraceInto(p, buf, capacity, out) }, -1);
        last_error()
    };
    let e = fail(p.0, buf.as_mut_ptr().cast(), need, std::ptr::null_mut());
    assert!(e.contains("argument `out_size` is NULL"), "{e}");
    let e = fail(p.0, std::ptr::null_mut(), 8, &mut size);
    assert!(e.contains("argument `buf` is NULL but its length is 8"), "{e}");
    let e = fail(std::ptr::null_mut(), std::ptr::null_mut(), 0, &mut size);
    assert!(e.contains("pipeline handle `p` is NULL"), "{e}");
    let untraced = pipeline(&factory, "core_groups=1").unwrap();
    let e = fail(untraced.0, std::ptr::null_mut(), 0, &mut size);
    assert!(e.contains("trace=1"), "{e}");
}

/// A module whose one kernel, `rs_where`, writes [threads of the calling thread's pool, 1 if
/// the calling thread is a stream's worker] into its [1, 2] output.
struct WhereModule;

impl ModuleNode for WhereModule {
    fn type_key(&self) -> &str {
        "test_where"
    }
    fn get_function(&self, name: &str, _this: &Module) -> RtResult<Option<PackedFunc>> {
        Ok((name == "rs_where").then(|| {
            PackedFunc::from_typed(|args| {
                let out = args.dltensor(1)?;
                let threads = tvm_runtime::runtime::threads::pool::current_pool().num_threads() as f32;
                let on_stream =
                    std::thread::current().name().is_some_and(|n| n.starts_with("tvm-stream")) as i32 as f32;
                // SAFETY: the executor passes a float32 [1, 2] output.
                unsafe {
                    std::slice::from_raw_parts_mut((*out).data as *mut f32, 2).copy_from_slice(&[threads, on_stream])
                };
                Ok(Value::Null)
            })
        }))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[test]
fn kernels_launch_on_their_groups_pool() {
    let json = serde_json::json!({
        "nodes": [
            {"op": "null", "name": "x", "inputs": []},
            {"op": "tvm_op", "name": "where", "inputs": [[0, 0, 0]],
             "attrs": {"func_name": "rs_where", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}},
        ],
        "arg_nodes": [0], "heads": [[1, 0, 0]], "node_row_ptr": [0, 1, 2],
        "attrs": {"dltype": ["list_str", ["float32", "float32"]], "storage_id": ["list_int", [0, 1]],
                  "shape": ["list_shape", [[1, 2], [1, 2]]]},
    })
    .to_string();
    let lib = Mod(Module::from_node(WhereModule).into_legacy());
    let (f, _) =
        call(&global("tvm.graph_executor_factory.create"), &[Arg::Str(&json), Arg::Module(&lib), Arg::Str("default")])
            .unwrap();
    let factory = Mod(unsafe { f.v_handle });
    for threads in [1usize, 3] {
        let p = pipeline(&factory, &format!("core_groups=2,threads_per_group={threads},in_flight=4")).unwrap();
        for _ in 0..20 {
            let mut x = HostTensor::new(&[1, 2], &[0.0, 0.0]);
            let mut y = HostTensor::new(&[1, 2], &[-1.0, -1.0]);
            let mut id = 0;
            ok(unsafe { TVMPipelineSubmit(p.0, x.ptr(), 1, y.ptr(), 1, &mut id) });
            wait(&p, id).unwrap();
            assert_eq!(
                y.values(),
                vec![threads as f32, 1.0],
                "the kernel ran on a group's compute stream with its pool"
            );
        }
    }
}
