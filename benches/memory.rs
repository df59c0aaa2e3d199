//! Memory of executors sharing one model: RSS after creating 1 executor vs 4 executors of a
//! resnet-sized model (45 MiB of float32 weights) from ONE GraphExecutorFactory, each executor
//! made by calling the factory's `default` function with a device, as TVM's Python does. The
//! memory counted is the process's RSS above a baseline taken before anything was loaded.

#[path = "common/mod.rs"]
mod common;

use common::*;
use tvm_runtime::abi::{DLDataType, DLDevice};
use tvm_runtime::runtime::function::registry;
use tvm_runtime::runtime::{Module, NDArray, Value};

const N_WEIGHTS: usize = 5;
const WEIGHT_ELEMS: usize = 9 << 18; // 9 MiB of float32 each: 45 MiB in all

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize
}

fn mb(b: usize) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// x -> add_weight(., w0) -> ... -> add_weight(., w4); weights are graph inputs with their own
/// storage ids (so they can be shared), activations alternate between two slots.
fn model_json() -> String {
    let mut nodes = vec![r#"{"op": "null", "name": "x", "inputs": []}"#.to_string()];
    for i in 0..N_WEIGHTS {
        nodes.push(format!(r#"{{"op": "null", "name": "w{i}", "inputs": []}}"#));
    }
    let mut storage: Vec<usize> = (0..=N_WEIGHTS).collect();
    let mut shapes: Vec<String> =
        std::iter::once("[1]".to_string()).chain((0..N_WEIGHTS).map(|_| format!("[{WEIGHT_ELEMS}]"))).collect();
    let mut prev = 0;
    for i in 0..N_WEIGHTS {
        nodes.push(format!(
            r#"{{"op": "tvm_op", "name": "add_w{i}", "attrs": {{"func_name": "chain_add_weight", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}}, "inputs": [[{prev}, 0, 0], [{}, 0, 0]]}}"#,
            i + 1
        ));
        prev = nodes.len() - 1;
        storage.push(N_WEIGHTS + 1 + i % 2);
        shapes.push("[1]".into());
    }
    let n = nodes.len();
    format!(
        r#"{{"nodes": [{}], "arg_nodes": [{}], "heads": [[{}, 0, 0]], "node_row_ptr": [{}],
"attrs": {{"dltype": ["list_str", [{}]], "storage_id": ["list_int", [{}]], "shape": ["list_shape", [{}]]}}}}"#,
        nodes.join(",\n"),
        (0..=N_WEIGHTS).map(|i| i.to_string()).collect::<Vec<_>>().join(", "),
        n - 1,
        (0..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(", "),
        vec![r#""float32""#; n].join(", "),
        storage.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "),
        shapes.join(", "),
    )
}

fn f32_of(a: &NDArray) -> f32 {
    f32::from_le_bytes(a.to_vec_u8().unwrap()[..4].try_into().unwrap())
}

/// Set x, run, check the output: the executor really works over the shared weights.
fn run_once(exec: &Module, x: &NDArray, want: f32) {
    let f = |name: &str| exec.get_function(name, false).unwrap().unwrap_or_else(|| panic!("executor has no `{name}`"));
    f("set_input").call(&[Value::Str("x".into()), Value::NDArray(x.clone())]).unwrap();
    f("run").call(&[]).unwrap();
    let out = f("get_output").call(&[Value::Int(0)]).unwrap().into_ndarray().unwrap();
    assert_eq!(f32_of(&out), want, "executor output");
}

fn main() {
    tvm_runtime::init();
    // Build the kernels first (a child process: no effect on our RSS).
    let so = build_so(&scratch("memory").join("chain_kernels.so"), &[repo().join("benches/fixtures/chain_kernels.c")]);
    let rss0 = rss_bytes();

    let lib = Module::load_from_file(so.to_str().unwrap(), "").expect("loading the kernel library");
    let dev = DLDevice::cpu(0);
    let mut args = vec![Value::Str(model_json()), Value::Module(lib), Value::Str("default".into())];
    let mut want = 1.0f32;
    for i in 0..N_WEIGHTS {
        // Every page written, so the weights are resident like loaded ones.
        let w = NDArray::empty(&[WEIGHT_ELEMS as i64], DLDataType::FLOAT32, dev).unwrap();
        let v = (i + 1) as f32;
        // SAFETY: a fresh CPU array of WEIGHT_ELEMS float32 (no temporary buffer, which would
        // stay resident in the allocator and pad both measurements).
        unsafe { std::slice::from_raw_parts_mut(w.data_ptr() as *mut f32, WEIGHT_ELEMS) }.fill(v);
        want += v;
        args.push(Value::Str(format!("w{i}")));
        args.push(Value::NDArray(w));
    }
    let factory =
        registry::require("tvm.graph_executor_factory.create").unwrap().call(&args).unwrap().into_module().unwrap();
    drop(args);
    let rss_factory = rss_bytes();
    let default = factory.get_function("default", false).unwrap().expect("factory has `default`");
    let x = NDArray::from_bytes(&[1], DLDataType::FLOAT32, &1.0f32.to_le_bytes()).unwrap();

    let mut execs = Vec::new();
    let new_exec = || {
        let e = default.call(&[Value::Device(dev)]).unwrap().into_module().unwrap();
        run_once(&e, &x, want);
        e
    };
    execs.push(new_exec());
    let rss1 = rss_bytes();
    for _ in 0..3 {
        execs.push(new_exec());
    }
    let rss4 = rss_bytes();
    // Each executor still runs after all were created, over the same weight memory.
    let weight_ptr = |e: &Module| {
        let get_input = e.get_function("get_input", false).unwrap().unwrap();
        get_input.call(&[Value::Str("w0".into())]).unwrap().into_ndarray().unwrap().data_ptr() as usize
    };
    for e in &execs {
        run_once(e, &x, want);
        assert_eq!(weight_ptr(e), weight_ptr(&execs[0]), "executors share the weights");
    }

    let weights = N_WEIGHTS * WEIGHT_ELEMS * 4;
    println!(
        "memory: weights {:.1} MiB; RSS baseline (nothing loaded) {:.1} MiB, factory with weights {:.1} MiB, \
         1 executor {:.1} MiB, 4 executors {:.1} MiB",
        mb(weights),
        mb(rss0),
        mb(rss_factory),
        mb(rss1),
        mb(rss4)
    );
    report("memory", "4 executors", mb(rss4 - rss0), "1 executor", mb(rss1 - rss0), "MiB above baseline", Some(1.3));
    println!("memory: each extra executor adds {:.1} KiB", rss4.saturating_sub(rss1) as f64 / 1024.0 / 3.0);
    drop(execs);
    drop(factory);
}
