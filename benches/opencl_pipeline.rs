//! Seed 001's request pipeline on OpenCL queues (h2d, compute and d2h of a request on three
//! queues ordered by events, so one request's copies overlap another's kernels) against the same
//! requests run synchronously by one executor (set_input, run, get_output, one after another),
//! in the same run, on this machine's OpenCL platform (PoCL: CPU code, so the copies and kernels
//! share the CPU's cores; a GPU overlaps them across the bus).
//!
//! The model is written here as graph JSON over apache-tvm 0.27's OpenCL kernel `scale_dyn`
//! (tests/data/opencl-0.27, `B = 2A + 0.5`): a chain of K of them over a float32 vector, so the
//! copies in and out (2 passes over the data) are a share of the time the K kernel passes set
//! (K = 2: about half; K = 8: about a fifth). Requests are submitted all at once, then waited
//! for; both sides' outputs are checked equal first.
//!
//! `BENCH_ROUNDS` sets the rounds (default 5).

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::sync::Arc;
use std::time::Duration;
use tvm_runtime::abi::{device_type, DLDevice};
use tvm_runtime::graph::memory_plan::build_plan;
use tvm_runtime::graph::options::{MemoryPlan, PipelineOptions};
use tvm_runtime::graph::pipeline::Pipeline;
use tvm_runtime::graph::{Executor, Graph, Plan};
use tvm_runtime::runtime::dlpack::tensor_ref::TensorRef;
use tvm_runtime::runtime::Module;

const REQUESTS: usize = 16;

/// Graph JSON: `x` of `len` floats through `ops` `scale_dyn` nodes, storage alternating.
fn chain(ops: usize, len: usize) -> String {
    let mut nodes = vec![serde_json::json!({"op": "null", "name": "x", "inputs": []})];
    for k in 0..ops {
        nodes.push(serde_json::json!({
            "op": "tvm_op", "name": format!("scale_{k}"), "inputs": [[k, 0, 0]],
            "attrs": {"num_outputs": "1", "num_inputs": "1", "flatten_data": "0", "func_name": "scale_dyn"},
        }));
    }
    let n = ops + 1;
    serde_json::json!({
        "nodes": nodes, "arg_nodes": [0], "heads": [[ops, 0, 0]],
        "attrs": {
            "dltype": ["list_str", vec!["float32"; n]],
            "device_index": ["list_int", vec![device_type::OPENCL; n]],
            "storage_id": ["list_int", (0..n).map(|e| if e == 0 { 0 } else { 1 + (e - 1) % 2 }).collect::<Vec<_>>()],
            "shape": ["list_shape", vec![[len]; n]],
        },
        "node_row_ptr": (0..=n).collect::<Vec<_>>(),
    })
    .to_string()
}

/// The requests' host tensors: inputs (each different) and outputs.
struct Requests {
    inputs: Vec<Buffer>,
    outputs: Vec<Buffer>,
}

impl Requests {
    fn new(len: usize) -> Requests {
        let input = |r: usize| Buffer::new(&[len as i64], &(0..len).map(|i| ((i + r) % 97) as f32).collect::<Vec<_>>());
        Requests {
            inputs: (0..REQUESTS).map(input).collect(),
            outputs: (0..REQUESTS).map(|_| Buffer::filled(&[len as i64], 0.0)).collect(),
        }
    }

    /// Every request through `exec`: set_input, run, get_output.
    fn synchronous(&mut self, exec: &mut Executor) {
        for (x, y) in self.inputs.iter_mut().zip(&mut self.outputs) {
            let (x, y) = (x.tensor(), y.tensor());
            // SAFETY: host tensors over live buffers, for the calls.
            let (x, y) = unsafe { (TensorRef::new(&x), TensorRef::new(&y)) };
            exec.set_input(0, x).unwrap();
            exec.run().unwrap();
            exec.get_output_into(0, y).unwrap();
        }
    }

    /// Every request submitted to `p`, then each waited for.
    fn pipelined(&mut self, p: &Pipeline) {
        let tensors: Vec<_> =
            self.inputs.iter_mut().zip(&mut self.outputs).map(|(x, y)| (x.tensor(), y.tensor())).collect();
        let ids: Vec<u64> = tensors
            .iter()
            .map(|(x, y)| {
                // SAFETY: host tensors over buffers that outlive the waits below.
                unsafe { p.submit(&[TensorRef::new(x)], &[TensorRef::new(y)], None) }.unwrap()
            })
            .collect();
        for id in ids {
            p.wait(id).unwrap();
        }
    }

    fn outputs(&self) -> Vec<Vec<f32>> {
        self.outputs.iter().map(|b| b.values().to_vec()).collect()
    }
}

fn measure(lib: &Module, dev: DLDevice, ops: usize, len: usize, rounds: usize) {
    let plan: Arc<Plan> =
        Arc::new(build_plan(Graph::parse(&chain(ops, len)).unwrap(), lib.clone(), &[dev], MemoryPlan::Tvm).unwrap());
    let mut exec = Executor::new(plan.clone()).unwrap();
    let text =
        std::env::var("BENCH_PIPELINE").unwrap_or_else(|_| "core_groups=1,threads_per_group=1,in_flight=3".into());
    let options = PipelineOptions::parse(Some(&text)).unwrap();
    let pipeline = Pipeline::new(plan, &options).unwrap();
    let (mut sync, mut piped) = (Requests::new(len), Requests::new(len));
    sync.synchronous(&mut exec);
    piped.pipelined(&pipeline);
    assert_eq!(sync.outputs(), piped.outputs(), "the pipeline's outputs are the synchronous executor's");
    let ns = compare(
        &mut [&mut || sync.synchronous(&mut exec), &mut || piped.pipelined(&pipeline)],
        Duration::from_millis(400),
        rounds,
        1,
    );
    let per = |t: f64| REQUESTS as f64 / (t * 1e-9);
    println!(
        "opencl pipeline, {ops} x scale_dyn over {} MiB: synchronous {:.0} requests/s, pipeline {:.0} requests/s, throughput ratio {:.2} (target >= 1.2)",
        len * 4 >> 20,
        per(ns[0]),
        per(ns[1]),
        ns[0] / ns[1]
    );
}

fn main() {
    tvm_runtime::init();
    if let Err(e) = tvm_runtime::runtime::device::opencl::driver() {
        println!("opencl pipeline: skipped ({e})");
        return;
    }
    let rounds = std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let lib = Module::load_from_file(repo().join("tests/data/opencl-0.27/scale_dyn.so").to_str().unwrap(), "").unwrap();
    let dev = DLDevice { device_type: device_type::OPENCL, device_id: 0 };
    for ops in [2, 8] {
        measure(&lib, dev, ops, 1 << 20, rounds);
    }
}
