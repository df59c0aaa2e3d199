//! The graph executor through both C APIs (TVM's module functions and `TVMGraphExecutor*`),
//! on TVM 0.18's mlp model with our kernels: numbers, errors, sharing, zero-copy, profiling.

mod common;
use common::*;
use std::ffi::{c_char, CStr, CString};
use tvm_runtime::abi::{type_code as tc, DLDataType, DLDevice};
use tvm_runtime::ffi::graph_executor::*;

/// Counts heap allocations made by Rust code, per thread (tests run in parallel).
struct Counting;
thread_local! {
    static ALLOCS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
fn count() {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        count();
        std::alloc::System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        std::alloc::System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        count();
        std::alloc::System.realloc(p, l, n)
    }
}
#[global_allocator]
static GLOBAL: Counting = Counting;

fn mlp_so() -> std::path::PathBuf {
    static ONCE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        build_so(&scratch("graph_executor").join("mlp.so"), &[kernels_c()], Some(&tvm_data("mlp", "mblob.bin")))
    })
    .clone()
}

fn kernels_so() -> std::path::PathBuf {
    static ONCE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| build_so(&scratch("graph_executor").join("kernels.so"), &[kernels_c()], None)).clone()
}

struct G(*mut TVMGraphExecutor);
impl Drop for G {
    fn drop(&mut self) {
        ok(unsafe { TVMGraphExecutorFree(self.0) });
    }
}

fn from_factory(factory: &Mod) -> G {
    let dev = DLDevice::cpu(0);
    let mut g = std::ptr::null_mut();
    ok(unsafe { TVMGraphExecutorCreateFromFactory(factory.0, &dev, 1, &mut g) });
    G(g)
}

fn x_input() -> Box<HostTensor> {
    HostTensor::new(&[2, 8], &f32s(&tvm_data("mlp", "input_x.bin")))
}

fn want() -> Vec<f32> {
    f32s(&tvm_data("mlp", "output_0.bin"))
}

fn run_and_check(g: &G) {
    let mut x = x_input();
    ok(unsafe { TVMGraphExecutorSetInput(g.0, c"x".as_ptr(), x.ptr()) });
    ok(unsafe { TVMGraphExecutorRun(g.0) });
    let mut out = HostTensor::new(&[2, 4], &[0.0; 8]);
    ok(unsafe { TVMGraphExecutorGetOutput(g.0, 0, out.ptr()) });
    assert_close(&out.values(), &want(), 1e-5);
}

fn err_of(rc: i32) -> String {
    assert_eq!(rc, -1, "expected a failure");
    last_error()
}

#[test]
fn factory_executor_runs_and_describes_itself() {
    let factory = load_module(&mlp_so()).unwrap();
    let g = from_factory(&factory);
    run_and_check(&g);
    let (mut n_in, mut n_out) = (0, 0);
    ok(unsafe { TVMGraphExecutorGetNumInputs(g.0, &mut n_in) });
    ok(unsafe { TVMGraphExecutorGetNumOutputs(g.0, &mut n_out) });
    assert_eq!((n_in, n_out), (4, 1));
    let mut idx = -1;
    ok(unsafe { TVMGraphExecutorGetInputIndex(g.0, c"p1".as_ptr(), &mut idx) });
    assert_eq!(idx, 2);
    let mut info: TVMTensorInfo = unsafe { std::mem::zeroed() };
    ok(unsafe { TVMGraphExecutorGetInputInfo(g.0, 0, &mut info) });
    assert_eq!(unsafe { CStr::from_ptr(info.name) }.to_str().unwrap(), "x");
    assert_eq!(unsafe { std::slice::from_raw_parts(info.shape, info.ndim as usize) }, &[2, 8]);
    assert_eq!((info.dtype, info.nbytes, info.is_param), (DLDataType::FLOAT32, 64, 0));
    ok(unsafe { TVMGraphExecutorGetInputInfo(g.0, 1, &mut info) });
    assert_eq!((info.nbytes, info.is_param), (2 * 8 * 8 * 4, 1));
    ok(unsafe { TVMGraphExecutorGetOutputInfo(g.0, 0, &mut info) });
    assert_eq!(unsafe { std::slice::from_raw_parts(info.shape, info.ndim as usize) }, &[2, 4]);
    let name = unsafe { CStr::from_ptr(info.name) }.to_owned();
    ok(unsafe { TVMGraphExecutorGetOutputIndex(g.0, name.as_ptr(), &mut idx) });
    assert_eq!(idx, 0);
}

#[test]
fn errors_say_expected_versus_got_and_the_executor_survives() {
    let factory = load_module(&mlp_so()).unwrap();
    let g = from_factory(&factory);
    let mut wrong_shape = HostTensor::new(&[8, 2], &[0.0; 16]);
    let e = err_of(unsafe { TVMGraphExecutorSetInput(g.0, c"x".as_ptr(), wrong_shape.ptr()) });
    assert!(e.contains("expected shape [2, 8], got [8, 2]"), "{e}");
    let mut wrong_dtype = HostTensor::new(&[2, 8], &[0.0; 16]);
    wrong_dtype.t.dtype = DLDataType::new(0, 32, 1);
    let e = err_of(unsafe { TVMGraphExecutorSetInput(g.0, c"x".as_ptr(), wrong_dtype.ptr()) });
    assert!(e.contains("expected dtype float32, got int32"), "{e}");
    let mut x = x_input();
    let e = err_of(unsafe { TVMGraphExecutorSetInput(g.0, c"y".as_ptr(), x.ptr()) });
    assert!(e.contains("no input named `y` (inputs: x, p0, p1, p2)"), "{e}");
    let e = err_of(unsafe { TVMGraphExecutorSetInputByIndex(g.0, 9, x.ptr()) });
    assert!(e.contains("input index 9 out of range"), "{e}");
    let mut wrong_dev = x_input();
    wrong_dev.t.device = DLDevice { device_type: 2, device_id: 0 };
    let e = err_of(unsafe { TVMGraphExecutorSetInputZeroCopy(g.0, 0, wrong_dev.ptr()) });
    assert!(e.contains("expected device cpu(0), got cuda(0)"), "{e}");
    let mut out = HostTensor::new(&[2, 5], &[0.0; 10]);
    let e = err_of(unsafe { TVMGraphExecutorGetOutput(g.0, 0, out.ptr()) });
    assert!(e.contains("expected shape [2, 4], got [2, 5]"), "{e}");
    let e = err_of(unsafe { TVMGraphExecutorRun(std::ptr::null_mut()) });
    assert!(e.contains("argument `g` (graph executor) is NULL"), "{e}");
    run_and_check(&g);
}

#[test]
fn freed_handles_are_detected() {
    let factory = load_module(&mlp_so()).unwrap();
    let g = from_factory(&factory);
    let raw = g.0;
    drop(g);
    let e = err_of(unsafe { TVMGraphExecutorRun(raw) });
    assert!(e.contains("is not live"), "{e}");
    let e = err_of(unsafe { TVMGraphExecutorFree(raw) });
    assert!(e.contains("freed twice"), "{e}");
}

#[test]
fn json_lib_params_trio_and_crt_names() {
    let lib = load_module(&kernels_so()).unwrap();
    let json = CString::new(tvm_data("mlp", "graph.json")).unwrap();
    let params = tvm_data("mlp", "params.bin");
    let dev = DLDevice::cpu(0);
    let mut g = std::ptr::null_mut();
    ok(unsafe { TVMGraphExecutorCreate(json.as_ptr(), lib.0, &dev, 1, &mut g) });
    let g = G(g);
    ok(unsafe { TVMGraphExecutorLoadParams(g.0, params.as_ptr() as *const _, params.len()) });
    run_and_check(&g);
    let e = err_of(unsafe { TVMGraphExecutorLoadParams(g.0, params.as_ptr() as *const _, params.len() - 3) });
    assert!(e.contains("truncated"), "{e}");
    run_and_check(&g);

    // The same through the CRT names.
    let mut c = std::ptr::null_mut();
    ok(unsafe { TVMGraphExecutor_Create(json.as_ptr(), lib.0, &dev, &mut c) });
    assert_eq!(unsafe { TVMGraphExecutor_GetNumInputs(c) }, 4);
    assert_eq!(unsafe { TVMGraphExecutor_GetNumOutputs(c) }, 1);
    assert_eq!(unsafe { TVMGraphExecutor_GetInputIndex(c, c"p2".as_ptr()) }, 3);
    ok(unsafe { TVMGraphExecutor_LoadParams(c, params.as_ptr() as *const c_char, params.len() as u32) });
    let mut x = x_input();
    unsafe { TVMGraphExecutor_SetInput(c, c"x".as_ptr(), x.ptr()) };
    unsafe { TVMGraphExecutor_Run(c) };
    let mut out = HostTensor::new(&[2, 4], &[0.0; 8]);
    ok(unsafe { TVMGraphExecutor_GetOutput(c, 0, out.ptr()) });
    assert_close(&out.values(), &want(), 1e-5);
    ok(unsafe { TVMGraphExecutor_Release(&mut c) });
    assert!(c.is_null());
}

#[test]
fn executors_of_one_factory_share_weights_until_written() {
    let factory = load_module(&mlp_so()).unwrap();
    let default = get_function(&factory, "default").unwrap();
    let make = || {
        let (v, code) = call(&default, &[Arg::Device(DLDevice::cpu(0))]).unwrap();
        assert_eq!(code, tc::MODULE_HANDLE);
        Mod(unsafe { v.v_handle })
    };
    let (a, b) = (make(), make());
    let p0_data = |m: &Mod| {
        let (v, code) = call(&get_function(m, "get_input").unwrap(), &[Arg::Str("p0")]).unwrap();
        assert_eq!(code, tc::NDARRAY_HANDLE);
        let t = unsafe { &*(v.v_handle as *const tvm_runtime::abi::DLTensor) };
        let data = t.data as usize;
        ok(unsafe { tvm_runtime::ffi::legacy::array::TVMArrayFree(v.v_handle as *mut _) });
        data
    };
    assert_eq!(p0_data(&a), p0_data(&b), "one copy of the weights");
    // Writing a weight in one executor gives it a private copy; the other is unaffected.
    let mut zeros = HostTensor::new(&[2, 8, 8], &[0.0; 128]);
    call(&get_function(&a, "set_input").unwrap(), &[Arg::Str("p0"), Arg::Tensor(zeros.ptr())]).unwrap();
    assert_ne!(p0_data(&a), p0_data(&b));
    let mut x = x_input();
    let mut out = HostTensor::new(&[2, 4], &[0.0; 8]);
    for (m, expect_original) in [(&a, false), (&b, true)] {
        call(&get_function(m, "set_input").unwrap(), &[Arg::Str("x"), Arg::Tensor(x.ptr())]).unwrap();
        call(&get_function(m, "run").unwrap(), &[]).unwrap();
        call(&get_function(m, "get_output").unwrap(), &[Arg::Int(0), Arg::Tensor(out.ptr())]).unwrap();
        if expect_original {
            assert_close(&out.values(), &want(), 1e-5);
        } else {
            assert_ne!(out.values(), want());
        }
    }
}

#[test]
fn zero_copy_input_and_output() {
    let factory = load_module(&mlp_so()).unwrap();
    let g = from_factory(&factory);
    let mut x = x_input();
    let mut out = HostTensor::new(&[2, 4], &[0.0; 8]);
    ok(unsafe { TVMGraphExecutorSetInputZeroCopy(g.0, 0, x.ptr()) });
    ok(unsafe { TVMGraphExecutorSetOutputZeroCopy(g.0, 0, out.ptr()) });
    ok(unsafe { TVMGraphExecutorRun(g.0) });
    assert_close(&out.values(), &want(), 1e-5);
    let mut misaligned = x_input();
    misaligned.t.byte_offset = 4;
    let mut shape = [2i64, 8];
    misaligned.t.shape = shape.as_mut_ptr();
    let e = err_of(unsafe { TVMGraphExecutorSetInputZeroCopy(g.0, 0, misaligned.ptr()) });
    assert!(e.contains("64-byte aligned"), "{e}");
}

#[test]
fn module_functions_of_the_executor() {
    let factory = load_module(&mlp_so()).unwrap();
    let (v, _) = call(&get_function(&factory, "default").unwrap(), &[Arg::Device(DLDevice::cpu(0))]).unwrap();
    let m = Mod(unsafe { v.v_handle });
    let f = |name: &str| get_function(&m, name).unwrap_or_else(|| panic!("{name}"));
    let (n, _) = call(&f("get_num_inputs"), &[]).unwrap();
    assert_eq!(unsafe { n.v_int64 }, 4);
    let (i, _) = call(&f("get_input_index"), &[Arg::Str("nope")]).unwrap();
    assert_eq!(unsafe { i.v_int64 }, -1);
    let mut x = x_input();
    // run_from_inputs returns the outputs as an array.
    let (arr, code) =
        call(&f("run_from_inputs"), &[Arg::Int(1), Arg::Int(0), Arg::Str("x"), Arg::Tensor(x.ptr())]).unwrap();
    assert_eq!(code, tc::OBJECT_HANDLE);
    let arr = unsafe { arr.v_handle };
    let (size, _) = call(&global("runtime.ArraySize"), &[Arg::Object(arr)]).unwrap();
    assert_eq!(unsafe { size.v_int64 }, 1);
    let (o, code) = call(&global("runtime.ArrayGetItem"), &[Arg::Object(arr), Arg::Int(0)]).unwrap();
    assert_eq!(code, tc::NDARRAY_HANDLE);
    let t = unsafe { &*(o.v_handle as *const tvm_runtime::abi::DLTensor) };
    let got = unsafe { std::slice::from_raw_parts(t.data as *const f32, 8) };
    assert_close(got, &want(), 1e-5);
    ok(unsafe { tvm_runtime::ffi::legacy::array::TVMArrayFree(o.v_handle as *mut _) });
    ok(unsafe { tvm_runtime::ffi::legacy::object::TVMObjectFree(arr) });
    // get_output(i) shares the executor's memory.
    let (o, code) = call(&f("get_output"), &[Arg::Int(0)]).unwrap();
    assert_eq!(code, tc::NDARRAY_HANDLE);
    let t = unsafe { &*(o.v_handle as *const tvm_runtime::abi::DLTensor) };
    assert_close(unsafe { std::slice::from_raw_parts(t.data as *const f32, 8) }, &want(), 1e-5);
    ok(unsafe { tvm_runtime::ffi::legacy::array::TVMArrayFree(o.v_handle as *mut _) });
    // get_input_info lists only the data input.
    let (info, _) = call(&f("get_input_info"), &[]).unwrap();
    let (shapes, _) =
        call(&global("runtime.MapGetItem"), &[Arg::Object(unsafe { info.v_handle }), Arg::Str("shape")]).unwrap();
    let (n, _) = call(&global("runtime.MapSize"), &[Arg::Object(unsafe { shapes.v_handle })]).unwrap();
    assert_eq!(unsafe { n.v_int64 }, 1);
    ok(unsafe { tvm_runtime::ffi::legacy::object::TVMObjectFree(shapes.v_handle) });
    ok(unsafe { tvm_runtime::ffi::legacy::object::TVMObjectFree(info.v_handle) });
    // Debug functions: per-node timings and intermediate outputs.
    let (bytes, code) = call(&f("run_individual"), &[Arg::Int(2), Arg::Int(3), Arg::Int(0)]).unwrap();
    assert_eq!(code, tc::BYTES);
    let b = unsafe { &*(bytes.v_handle as *const tvm_runtime::abi::TVMByteArray) };
    assert_eq!(b.size, 8 + 6 * 3 * 8);
    let (dbg, code) = call(&f("debug_get_output"), &[Arg::Int(3)]).unwrap();
    assert_eq!(code, tc::NDARRAY_HANDLE);
    let t = unsafe { &*(dbg.v_handle as *const tvm_runtime::abi::DLTensor) };
    assert_eq!(unsafe { std::slice::from_raw_parts(t.shape, 2) }, &[2, 16]);
    let hidden = unsafe { std::slice::from_raw_parts(t.data as *const f32, 32) };
    assert!(hidden.iter().all(|v| *v >= 0.0), "relu output is non-negative");
    ok(unsafe { tvm_runtime::ffi::legacy::array::TVMArrayFree(dbg.v_handle as *mut _) });
}

/// What TVM 0.18's Python debug executor (`GraphModuleDebug`) and `GraphModule` call beyond the
/// executor's basics: per-node timing, stepping node by node, the profile report as JSON, the
/// containers' type keys its Python recognizes, and the relay name of the params writer.
#[test]
fn debug_executor_functions_tvm_python_calls() {
    let factory = load_module(&mlp_so()).unwrap();
    let debug_create = get_function(&factory, "debug_create").unwrap();
    let (v, _) = call(&debug_create, &[Arg::Str("default"), Arg::Device(DLDevice::cpu(0))]).unwrap();
    let m = Mod(unsafe { v.v_handle });
    let f = |name: &str| get_function(&m, name).unwrap_or_else(|| panic!("{name}"));
    let mut x = x_input();
    call(&f("set_input"), &[Arg::Str("x"), Arg::Tensor(x.ptr())]).unwrap();
    let bytes_of = |v: tvm_runtime::abi::TVMValue| {
        let b = unsafe { &*(v.v_handle as *const tvm_runtime::abi::TVMByteArray) };
        unsafe { std::slice::from_raw_parts(b.data as *const u8, b.size) }.to_vec()
    };
    // run_individual_node(node, number, repeat, min_repeat_ms, limit_zero, cooldown, repeats_to_cooldown)
    let (r, code) = call(&f("run_individual_node"), &[3, 2, 4, 0, 100, 0, 1].map(Arg::Int)).unwrap();
    assert_eq!(code, tc::BYTES);
    let secs: Vec<f64> = bytes_of(r).chunks_exact(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect();
    assert_eq!(secs.len(), 4);
    assert!(secs.iter().all(|&s| s > 0.0 && s < 0.1), "node 3 is the fused dense: {secs:?}");
    let (r, _) = call(&f("run_individual_node"), &[1, 2, 3, 0, 100, 0, 1].map(Arg::Int)).unwrap();
    assert_eq!(bytes_of(r), vec![0u8; 24], "an input node runs nothing");
    let e = call(&f("run_individual_node"), &[3, 0, 3, 0, 100, 0, 1].map(Arg::Int)).unwrap_err();
    assert!(e.contains("number is 0"), "{e}");
    // Step to the last node; its output is the graph's.
    let last = 5;
    let e = call(&f("get_node_output"), &[Arg::Int(last), Arg::Int(0)]).unwrap_err();
    assert!(e.contains("not the last one execute_node ran"), "{e}");
    call(&f("execute_node"), &[Arg::Int(3)]).unwrap();
    call(&f("execute_node"), &[Arg::Int(last)]).unwrap();
    let (out, code) = call(&f("get_node_output"), &[Arg::Int(last), Arg::Int(0)]).unwrap();
    assert_eq!(code, tc::NDARRAY_HANDLE);
    let t = unsafe { &*(out.v_handle as *const tvm_runtime::abi::DLTensor) };
    assert_close(unsafe { std::slice::from_raw_parts(t.data as *const f32, 8) }, &want(), 1e-5);
    ok(unsafe { tvm_runtime::ffi::legacy::array::TVMArrayFree(out.v_handle as *mut _) });
    assert!(call(&f("get_node_output"), &[Arg::Int(last), Arg::Int(1)]).unwrap_err().contains("has 1 output,"));
    // profile_rpc: TVM's report JSON.
    let (json, code) = call(&f("profile_rpc"), &[]).unwrap();
    assert_eq!(code, tc::STR);
    let report: serde_json::Value =
        serde_json::from_str(unsafe { CStr::from_ptr(json.v_str) }.to_str().unwrap()).unwrap();
    assert_eq!(report["calls"].as_array().unwrap().len(), 2);
    assert!(report["calls"][0]["Duration (us)"]["microseconds"].as_f64().unwrap() > 0.0);
    assert_eq!(report["configuration"]["Executor"]["string"], "Graph");
    // TVM's Python finds its container classes by these type keys.
    let (info, _) = call(&f("get_input_info"), &[]).unwrap();
    let mut index = 0u32;
    ok(unsafe { tvm_runtime::ffi::legacy::object::TVMObjectGetTypeIndex(info.v_handle, &mut index) });
    let ffi_index = tvm_runtime::runtime::object::header::legacy::ffi_index(index);
    assert_eq!(tvm_runtime::runtime::object::type_table::type_index_to_key(ffi_index).unwrap(), "Map");
    ok(unsafe { tvm_runtime::ffi::legacy::object::TVMObjectFree(info.v_handle) });
    assert!(get_function(&m, "profile").is_some() && get_function(&m, "run_individual").is_some());
    let _ = global("tvm.relay._save_param_dict");
}

#[test]
fn profile_as_table_and_chrome_trace() {
    let factory = load_module(&mlp_so()).unwrap();
    let g = from_factory(&factory);
    let mut text: *const c_char = std::ptr::null();
    ok(unsafe { TVMGraphExecutorProfile(g.0, 0, &mut text) });
    let table = unsafe { CStr::from_ptr(text) }.to_str().unwrap().to_string();
    assert!(
        table.contains("tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu") && table.contains("over 2 ops"),
        "{table}"
    );
    ok(unsafe { TVMGraphExecutorProfile(g.0, 1, &mut text) });
    let trace: serde_json::Value = serde_json::from_str(unsafe { CStr::from_ptr(text) }.to_str().unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["ph"], "X");
    assert!(events[1]["ts"].as_f64().unwrap() >= events[0]["ts"].as_f64().unwrap());
    assert_eq!(trace["displayTimeUnit"], "ms");
}

#[test]
fn the_profiler_and_the_pipeline_write_one_trace_format() {
    use tvm_runtime::graph::{pipeline, profile};
    let op = |lane, start_ns| tvm_runtime::graph::runner::OpTiming {
        node_id: 3,
        name: "fused \"add\"".into(),
        func_name: "add".into(),
        start_ns,
        duration_ns: 1500,
        lane,
    };
    let ops = profile::chrome_trace(&[op(0, 0), op(1, 2000)]);
    let span = pipeline::Span { request: 7, group: 1, stage: 2, start_ns: 2500, duration_ns: 1000 };
    let stages = pipeline::chrome_trace(&[span], 2);
    let (ops, stages): (serde_json::Value, serde_json::Value) =
        (serde_json::from_str(&ops).unwrap(), serde_json::from_str(&stages).unwrap());
    for trace in [&ops, &stages] {
        assert_eq!(trace["displayTimeUnit"], "ms", "{trace}");
        let lanes = trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "M");
        assert!(lanes.into_iter().all(|e| e["name"] == "thread_name" && e["args"]["name"].is_string()), "{trace}");
    }
    let op_events = ops["traceEvents"].as_array().unwrap();
    assert_eq!((op_events.len(), &op_events[1]["args"]["name"]), (4, &serde_json::json!("inter-op worker 1")));
    assert_eq!(op_events[3]["name"], "fused \"add\"");
    assert_eq!(
        (op_events[3]["tid"].as_u64(), op_events[3]["ts"].as_f64(), op_events[3]["dur"].as_f64()),
        (Some(2), Some(2.0), Some(1.5))
    );
    let stage_events = stages["traceEvents"].as_array().unwrap();
    assert_eq!(stage_events.len(), 6 + 1);
    let d2h = &stage_events[6];
    assert_eq!(
        (d2h["name"].as_str(), d2h["cat"].as_str(), d2h["tid"].as_u64()),
        (Some("request 7 d2h"), Some("d2h"), Some(5))
    );
    assert_eq!(
        (d2h["ts"].as_f64(), d2h["args"]["request"].as_u64(), d2h["args"]["group"].as_u64()),
        (Some(2.5), Some(7), Some(1))
    );
}

/// The plan of TVM's `model` over the test kernels on the CPU.
fn kernels_plan(model: &str) -> tvm_runtime::graph::Plan {
    use tvm_runtime::graph::{Graph, Plan};
    let lib = load_module(&kernels_so()).unwrap();
    let module = unsafe {
        tvm_runtime::runtime::object::header::ObjPtr::<tvm_runtime::runtime::function::packed::ModuleObj>::from_borrowed(
            tvm_runtime::runtime::object::header::legacy::header(lib.0),
        )
    };
    let graph = Graph::parse(std::str::from_utf8(&tvm_data(model, "graph.json")).unwrap()).unwrap();
    Plan::new(graph, module, &[DLDevice::cpu(0)]).unwrap()
}

#[test]
fn run_allocates_nothing() {
    let plan = kernels_plan("chain500");
    let mut e = tvm_runtime::graph::Executor::new(std::sync::Arc::new(plan)).unwrap();
    e.load_params(&tvm_data("chain500", "params.bin")).unwrap();
    e.run().unwrap(); // warm up (thread pool, workspaces)
    let before = ALLOCS.with(|c| c.get());
    for _ in 0..10 {
        e.run().unwrap();
    }
    let after = ALLOCS.with(|c| c.get());
    assert_eq!(after - before, 0, "run() allocated {} times", after - before);
}

#[test]
fn a_plan_entrys_tensor_has_its_shape_dtype_and_device() {
    let plan = kernels_plan("mlp");
    let mut data = [0u8; 8];
    for eid in 0..plan.graph.num_entries() {
        let t = plan.entry_tensor(eid, data.as_mut_ptr().cast());
        let shape = unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) };
        assert_eq!((shape, t.dtype, t.device), (plan.entry_shape(eid), plan.entry_dtype(eid), DLDevice::cpu(0)));
        assert_eq!((t.data, t.strides, t.byte_offset), (data.as_mut_ptr().cast(), std::ptr::null_mut(), 0));
    }
}

/// A library's packed blob is released from memory after its modules are built (its pages
/// come back from the file when read again): loading the same library a second time, while
/// the first load's modules live, and again after they are gone, gives the same factory.
#[test]
fn a_blob_read_again_after_its_pages_were_released_is_unchanged() {
    use tvm_runtime::graph::factory::GraphExecutorFactory;
    use tvm_runtime::runtime::Module;
    tvm_runtime::init();
    // 250 KB of blob: dozens of whole pages to release.
    let blob = tvm_data("chain500", "mblob.bin");
    let so = build_so(&scratch("reload").join("chain500.so"), &[kernels_c()], Some(&blob));
    let contents = |m: &Module| -> (String, Vec<Vec<u8>>) {
        let f = m.node().as_any().downcast_ref::<GraphExecutorFactory>().expect("factory");
        (f.graph_json.clone(), f.params.iter().map(|(_, a)| a.to_vec_u8().unwrap()).collect())
    };
    let first = Module::load_from_file(so.to_str().unwrap(), "").unwrap();
    let want = contents(&first);
    assert!(want.0.len() > 100_000, "the graph JSON is most of the blob");
    let second = Module::load_from_file(so.to_str().unwrap(), "").unwrap();
    assert_eq!(contents(&second), want);
    drop((first, second));
    let third = Module::load_from_file(so.to_str().unwrap(), "").unwrap();
    assert_eq!(contents(&third), want);
}
