//! Inter-op parallelism (`TVMGraphExecutorCreateWithOptions`), each comparison in one run with
//! interleaved samples:
//! 1. a branchy graph (4 independent branches of two ~0.5 ms multiply-add kernels each,
//!    benches/fixtures/branch_kernels.c, joined by a sum): the sequential executor
//!    (`TVMGraphExecutorCreate`) vs `inter_op_threads=2,intra_op_threads=1`;
//! 2. the same graph with TVM-style storage sharing between branches (which orders the branches
//!    through the shared buffers) under `memory_plan=tvm` vs `memory_plan=parallel`, 2 workers
//!    each: time and storage bytes;
//! 3. graph_run's 500-op chain of trivial kernels: 2 workers vs sequential (the scheduler's
//!    overhead per op when there is nothing to overlap).

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::ffi::CString;
use std::hint::black_box;
use std::time::Duration;
use tvm_runtime::abi::{DLDataType, DLDevice};
use tvm_runtime::ffi::graph_executor::{
    TVMGraphExecutor, TVMGraphExecutorCreate, TVMGraphExecutorCreateWithOptions, TVMGraphExecutorFree,
    TVMGraphExecutorGetOutput, TVMGraphExecutorRun, TVMGraphExecutorScheduleDot, TVMGraphExecutorSetInputByIndex,
};
use tvm_runtime::graph::memory_plan::parallel_plan;
use tvm_runtime::graph::{Graph, Plan};
use tvm_runtime::runtime::{Module, NDArray};

/// Elements of every array of the branchy graph (256 KiB of float32).
const LEN: usize = 64 * 1024;
const BRANCHES: usize = 4;
const CHAIN_OPS: usize = 500;

/// x -> BRANCHES x (branch_fma_a -> branch_fma_b) -> branch_join4. Node order is branch by
/// branch, as a compiler emits it. `shared`: storage ids as TVM's planner assigns them in that
/// order (each branch's intermediate reuses the previous branch's freed one, the join output
/// reuses it last); otherwise every entry has its own storage.
fn branchy_json(shared: bool) -> String {
    let op = |name: String, func: &str, inputs: &[usize]| {
        let ins: Vec<String> = inputs.iter().map(|i| format!("[{i}, 0, 0]")).collect();
        format!(
            r#"{{"op": "tvm_op", "name": "{name}", "attrs": {{"func_name": "{func}", "num_inputs": "{}", "num_outputs": "1", "flatten_data": "0"}}, "inputs": [{}]}}"#,
            inputs.len(),
            ins.join(", ")
        )
    };
    let mut nodes = vec![r#"{"op": "null", "name": "x", "inputs": []}"#.to_string()];
    let mut storage = vec![0usize];
    let mut branch_outs = Vec::new();
    for b in 0..BRANCHES {
        nodes.push(op(format!("b{b}_a"), "branch_fma_a", &[0]));
        storage.push(if shared { 1 } else { 1 + 2 * b });
        nodes.push(op(format!("b{b}_b"), "branch_fma_b", &[nodes.len() - 1]));
        storage.push(if shared { 2 + b } else { 2 + 2 * b });
        branch_outs.push(nodes.len() - 1);
    }
    nodes.push(op("join".into(), "branch_join4", &branch_outs));
    storage.push(if shared { 1 } else { 1 + 2 * BRANCHES });
    let n = nodes.len();
    let list = |item: &str| vec![item; n].join(", ");
    let shape = format!("[{LEN}]");
    format!(
        r#"{{"nodes": [{}], "arg_nodes": [0], "heads": [[{}, 0, 0]], "node_row_ptr": [{}],
"attrs": {{"dltype": ["list_str", [{}]], "storage_id": ["list_int", [{}]], "shape": ["list_shape", [{}]], "device_index": ["list_int", [{}]]}}}}"#,
        nodes.join(",\n"),
        n - 1,
        (0..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(", "),
        list(r#""float32""#),
        storage.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "),
        list(&shape),
        list("1"),
    )
}

/// An executor through the C API: `TVMGraphExecutorCreate` when `options` is None.
struct Exec(*mut TVMGraphExecutor);

impl Exec {
    fn new(json: &str, module: &Module, options: Option<&str>) -> Exec {
        let json = CString::new(json).unwrap();
        let dev = DLDevice::cpu(0);
        let m = module.legacy_handle();
        let mut g = std::ptr::null_mut();
        let rc = match options {
            None => unsafe { TVMGraphExecutorCreate(json.as_ptr(), m, &dev, 1, &mut g) },
            Some(o) => {
                let o = CString::new(o).unwrap();
                unsafe { TVMGraphExecutorCreateWithOptions(json.as_ptr(), m, &dev, 1, o.as_ptr(), &mut g) }
            }
        };
        assert_eq!(rc, 0, "creating an executor with options {options:?}");
        Exec(g)
    }
    fn set_input(&self, x: &NDArray) {
        assert_eq!(unsafe { TVMGraphExecutorSetInputByIndex(self.0, 0, &x.dl_tensor) }, 0);
    }
    fn run(&self) {
        assert_eq!(unsafe { TVMGraphExecutorRun(black_box(self.0)) }, 0);
    }
    fn output(&self, shape: &[i64]) -> Vec<u8> {
        let out = NDArray::empty(shape, DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
        assert_eq!(unsafe { TVMGraphExecutorGetOutput(self.0, 0, out.as_dltensor_ptr()) }, 0);
        out.to_vec_u8().unwrap()
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        unsafe { TVMGraphExecutorFree(self.0) };
    }
}

/// CPU time of the whole process (all threads), in ns.
fn process_cpu_ns() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec to write.
    assert_eq!(unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) }, 0);
    t.tv_sec as f64 * 1e9 + t.tv_nsec as f64
}

/// Cores kept busy on average by `runs` calls of `f`: process CPU time over wall time (about 1
/// when the work runs one op at a time, up to 2 when two workers overlap).
fn cores_used(f: &dyn Fn(), runs: usize) -> f64 {
    let (cpu, wall) = (process_cpu_ns(), std::time::Instant::now());
    (0..runs).for_each(|_| f());
    (process_cpu_ns() - cpu) / wall.elapsed().as_nanos() as f64
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

fn verdict(ratio: f64, target: f64) -> String {
    format!("target <= {target}: {}", if ratio <= target { "met" } else { "MISSED" })
}

fn main() {
    tvm_runtime::init();
    println!("inter_op: {}", load_note());
    let dir = scratch("inter_op");
    let branch_so = build_so(&dir.join("branch_kernels.so"), &[repo().join("benches/fixtures/branch_kernels.c")]);
    let chain_so = build_so(&dir.join("chain_kernels.so"), &[repo().join("benches/fixtures/chain_kernels.c")]);
    let branch_mod = Module::load_from_file(branch_so.to_str().unwrap(), "").expect("loading the branch kernels");
    let chain_mod = Module::load_from_file(chain_so.to_str().unwrap(), "").expect("loading the chain kernels");

    // Deterministic input in [0, 1).
    let xs: Vec<u8> = (0..LEN).flat_map(|i| ((i * 7919 % 1000) as f32 / 1000.0).to_le_bytes()).collect();
    let x = NDArray::from_bytes(&[LEN as i64], DLDataType::FLOAT32, &xs).unwrap();
    let shape = [LEN as i64];

    // 1. Independent branches: sequential vs 2 workers.
    let json = branchy_json(false);
    let seq = Exec::new(&json, &branch_mod, None);
    let par = Exec::new(&json, &branch_mod, Some("inter_op_threads=2,intra_op_threads=1"));
    for e in [&seq, &par] {
        e.set_input(&x);
        e.run();
    }
    let want = seq.output(&shape);
    if std::env::var_os("BENCH_VERBOSE").is_some() {
        let mut dot = std::ptr::null();
        assert_eq!(unsafe { TVMGraphExecutorScheduleDot(par.0, &mut dot) }, 0);
        println!("{}", unsafe { std::ffi::CStr::from_ptr(dot) }.to_string_lossy());
    }
    assert_eq!(par.output(&shape), want, "2 workers compute bit-identical outputs");
    let s = compare_stats(&mut [&mut || seq.run(), &mut || par.run()], Duration::from_millis(10), 15, 3);
    let ratio = s[1].median / s[0].median;
    println!(
        "inter_op ({BRANCHES} branches): sequential {:.2} ms, 2 workers {:.2} ms, ratio {ratio:.2} ({})",
        ms(s[0].median),
        ms(s[1].median),
        verdict(ratio, 0.6)
    );
    println!(
        "inter_op ({BRANCHES} branches, fastest samples): sequential {:.2} ms, 2 workers {:.2} ms, ratio {:.2}",
        ms(s[0].min),
        ms(s[1].min),
        s[1].min / s[0].min
    );
    println!(
        "inter_op ({BRANCHES} branches): cores busy during runs (CPU time / wall time): sequential {:.2}, 2 workers {:.2}",
        cores_used(&|| seq.run(), 20),
        cores_used(&|| par.run(), 20)
    );
    drop((seq, par));

    // 2. TVM's storage sharing between branches: memory_plan=tvm vs parallel, 2 workers each.
    let json = branchy_json(true);
    let tvm = Exec::new(&json, &branch_mod, Some("inter_op_threads=2,intra_op_threads=1,memory_plan=tvm"));
    let pp = Exec::new(&json, &branch_mod, Some("inter_op_threads=2,intra_op_threads=1,memory_plan=parallel"));
    for e in [&tvm, &pp] {
        e.set_input(&x);
        e.run();
        assert_eq!(e.output(&shape), want, "shared storage computes the same outputs");
    }
    let dev = DLDevice::cpu(0);
    let plan = Plan::new(Graph::parse(&json).unwrap(), branch_mod.clone(), &[dev]).unwrap();
    let (tvm_bytes, pp_bytes) = (plan.storage_bytes(), parallel_plan(&plan).unwrap().storage_bytes());
    let s = compare_stats(&mut [&mut || tvm.run(), &mut || pp.run()], Duration::from_millis(10), 15, 3);
    println!(
        "inter_op (shared storage, 2 workers): memory_plan=tvm {:.2} ms {} KiB, memory_plan=parallel {:.2} ms {} KiB, \
         time ratio parallel/tvm {:.2}, bytes ratio parallel/tvm {:.2}",
        ms(s[0].median),
        tvm_bytes / 1024,
        ms(s[1].median),
        pp_bytes / 1024,
        s[1].median / s[0].median,
        pp_bytes as f64 / tvm_bytes as f64
    );
    drop((tvm, pp));

    // 3. A 500-op chain: nothing to overlap, so the ratio is the scheduler's overhead.
    let json = chain_json(CHAIN_OPS);
    let x1 = NDArray::from_bytes(&[1], DLDataType::FLOAT32, &2.0f32.to_le_bytes()).unwrap();
    let seq = Exec::new(&json, &chain_mod, None);
    let par = Exec::new(&json, &chain_mod, Some("inter_op_threads=2"));
    let want = (2.0 + CHAIN_OPS as f32).to_le_bytes().to_vec();
    for e in [&seq, &par] {
        e.set_input(&x1);
        e.run();
        assert_eq!(e.output(&[1]), want, "the chain computes x + {CHAIN_OPS}");
    }
    let s = compare_stats(&mut [&mut || seq.run(), &mut || par.run()], Duration::from_millis(2), 40, 5);
    let ratio = s[1].median / s[0].median;
    println!(
        "inter_op ({CHAIN_OPS}-op chain): sequential {} ns, 2 workers {} ns, ratio {ratio:.2} ({}), \
         scheduler overhead {} ns/op",
        fmt(s[0].median),
        fmt(s[1].median),
        verdict(ratio, 1.05),
        fmt((s[1].median - s[0].median) / CHAIN_OPS as f64)
    );
    println!(
        "inter_op ({CHAIN_OPS}-op chain, fastest samples): sequential {} ns, 2 workers {} ns, ratio {:.2}",
        fmt(s[0].min),
        fmt(s[1].min),
        s[1].min / s[0].min
    );
}
