//! Property test of inter-op parallelism: random DAGs of elementwise kernels (tests/fixtures/
//! dag_kernels.c) with random storage sharing run sequentially, in parallel on TVM's storage plan,
//! and in parallel on the parallel storage plan; every output must be bit-identical.
//!
//! Half the graphs share storage only between entries whose lifetimes do not overlap (as TVM's
//! planner does); there all three runs must give the pure dataflow result. The other half share
//! storage arbitrarily, so a later op may overwrite a value that is still to be read: the
//! sequential order then defines the result, and the parallel runner on TVM's plan must order
//! every such hazard to reproduce it. (The parallel plan assigns storage from the data flow
//! alone, so on those graphs it must give the dataflow result instead.)
//!
//! Both results are also recomputed in Rust. A failure prints the graph's seed; set
//! `INTER_OP_RANDOM_SEED=<seed>` to run only that graph.

mod common;
use common::*;
use serde_json::{json, Value};
use std::ffi::CString;
use tvm_runtime::abi::DLDevice;
use tvm_runtime::ffi::graph_executor::*;

const LEN: usize = 16;
const GRAPHS: u64 = 2000;
const BASE_SEED: u64 = 0x5eed_0000;

/// xorshift64*: small, seeded, good enough for test cases.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    /// A float in [-2, 2) with few significant bits, so sums and products stay tame.
    fn value(&mut self) -> f32 {
        (self.next() % 64) as f32 / 16.0 - 2.0
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Add2,
    Mul2,
    Affine1,
}

impl Kind {
    fn arity(self) -> usize {
        match self {
            Kind::Add2 | Kind::Mul2 => 2,
            Kind::Affine1 => 1,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Kind::Add2 => "dag_add2",
            Kind::Mul2 => "dag_mul2",
            Kind::Affine1 => "dag_affine1",
        }
    }
    /// What the C kernel computes, in the same float32 steps.
    fn apply(self, a: &[f32], b: Option<&[f32]>) -> Vec<f32> {
        (0..LEN)
            .map(|i| match self {
                Kind::Add2 => a[i] + b.unwrap()[i],
                Kind::Mul2 => a[i] * b.unwrap()[i],
                Kind::Affine1 => a[i] * 1.5 + 0.25,
            })
            .collect()
    }
}

#[derive(Debug)]
struct Op {
    kind: Kind,
    slow: bool,
    /// Node ids read (each node has exactly one output entry, so node id = entry id).
    inputs: Vec<usize>,
}

#[derive(Debug)]
struct Graph {
    num_inputs: usize,
    /// Node `num_inputs + j` is `ops[j]`.
    ops: Vec<Op>,
    heads: Vec<usize>,
    storage: Vec<usize>,
    /// Whether storage is shared only between entries with disjoint lifetimes.
    valid_sharing: bool,
}

fn random_graph(rng: &mut Rng) -> Graph {
    let num_inputs = rng.range(2, 4);
    let num_ops = rng.range(3, 30);
    let mut ops = Vec::new();
    for j in 0..num_ops {
        let kind = [Kind::Add2, Kind::Mul2, Kind::Affine1][rng.range(0, 2)];
        let node = num_inputs + j;
        let inputs = (0..kind.arity()).map(|_| rng.range(0, node - 1)).collect();
        ops.push(Op { kind, slow: rng.chance(50), inputs });
    }
    let num_nodes = num_inputs + num_ops;
    let mut heads = Vec::new();
    let num_heads = rng.range(1, 3.min(num_ops));
    while heads.len() < num_heads {
        let h = rng.range(num_inputs, num_nodes - 1);
        if !heads.contains(&h) {
            heads.push(h);
        }
    }
    // The last op reading each node (0 if none).
    let mut last_reader = vec![0; num_nodes];
    for (j, op) in ops.iter().enumerate() {
        for &i in &op.inputs {
            last_reader[i] = num_inputs + j;
        }
    }
    let valid_sharing = rng.chance(50);
    let mut storage: Vec<usize> = (0..num_inputs).collect();
    // Shareable storage ids (op outputs that are not heads) and the node last placed in each.
    let mut pool: Vec<(usize, usize)> = Vec::new();
    let mut next_sid = num_inputs;
    for (j, op) in ops.iter().enumerate() {
        let node = num_inputs + j;
        let read: Vec<usize> = op.inputs.iter().map(|&i| storage[i]).collect();
        let candidates: Vec<usize> = (0..pool.len())
            .filter(|&p| !read.contains(&pool[p].0) && (!valid_sharing || last_reader[pool[p].1] < node))
            .collect();
        let sid = if !heads.contains(&node) && !candidates.is_empty() && rng.chance(60) {
            let p = candidates[rng.range(0, candidates.len() - 1)];
            pool[p].1 = node;
            pool[p].0
        } else {
            let sid = next_sid;
            next_sid += 1;
            if !heads.contains(&node) {
                pool.push((sid, node));
            }
            sid
        };
        storage.push(sid);
    }
    Graph { num_inputs, ops, heads, storage, valid_sharing }
}

impl Graph {
    fn json(&self) -> String {
        let mut nodes: Vec<Value> =
            (0..self.num_inputs).map(|i| json!({"op": "null", "name": format!("in{i}"), "inputs": []})).collect();
        for (j, op) in self.ops.iter().enumerate() {
            let func = format!("{}{}", op.kind.name(), if op.slow { "_slow" } else { "" });
            nodes.push(json!({
                "op": "tvm_op",
                "name": format!("op{j}_{func}"),
                "attrs": {
                    "func_name": func,
                    "num_inputs": op.inputs.len().to_string(),
                    "num_outputs": "1",
                    "flatten_data": "0",
                },
                "inputs": op.inputs.iter().map(|&i| json!([i, 0, 0])).collect::<Vec<_>>(),
            }));
        }
        let n = nodes.len();
        json!({
            "nodes": nodes,
            "arg_nodes": (0..self.num_inputs).collect::<Vec<_>>(),
            "node_row_ptr": (0..=n).collect::<Vec<_>>(),
            "heads": self.heads.iter().map(|&h| json!([h, 0, 0])).collect::<Vec<_>>(),
            "attrs": {
                "dltype": ["list_str", vec!["float32"; n]],
                "shape": ["list_shape", vec![vec![LEN]; n]],
                "storage_id": ["list_int", self.storage],
            },
        })
        .to_string()
    }

    /// The heads after running the ops in node order on buffers named by `storage`.
    fn reference(&self, storage: &[usize], inputs: &[Vec<f32>]) -> Vec<Vec<f32>> {
        let mut buffers = vec![vec![0.0f32; LEN]; storage.iter().max().unwrap() + 1];
        for (i, x) in inputs.iter().enumerate() {
            buffers[storage[i]] = x.clone();
        }
        for (j, op) in self.ops.iter().enumerate() {
            let a = &buffers[storage[op.inputs[0]]];
            let b = op.inputs.get(1).map(|&i| buffers[storage[i]].as_slice());
            buffers[storage[self.num_inputs + j]] = op.kind.apply(a, b);
        }
        self.heads.iter().map(|&h| buffers[storage[h]].clone()).collect()
    }
}

/// An executor freed on drop.
struct Executor(*mut TVMGraphExecutor);

impl Drop for Executor {
    fn drop(&mut self) {
        // SAFETY: a live executor, freed once.
        ok(unsafe { TVMGraphExecutorFree(self.0) });
    }
}

impl Executor {
    fn new(json: &str, lib: &Mod, options: Option<&str>) -> Executor {
        let json = CString::new(json).unwrap();
        let dev = DLDevice::cpu(0);
        let mut g = std::ptr::null_mut();
        let rc = match options {
            // SAFETY: a C string, a live module, one device and an out-pointer.
            None => unsafe { TVMGraphExecutorCreate(json.as_ptr(), lib.0, &dev, 1, &mut g) },
            Some(o) => {
                let o = CString::new(o).unwrap();
                // SAFETY: as above, plus the options C string.
                unsafe { TVMGraphExecutorCreateWithOptions(json.as_ptr(), lib.0, &dev, 1, o.as_ptr(), &mut g) }
            }
        };
        ok(rc);
        Executor(g)
    }

    /// Set `inputs`, run, and return the bytes of every output.
    fn run(&self, inputs: &[Vec<f32>], num_outputs: usize) -> Vec<Vec<u8>> {
        for (i, x) in inputs.iter().enumerate() {
            let mut t = HostTensor::new(&[LEN as i64], x);
            let name = CString::new(format!("in{i}")).unwrap();
            // SAFETY: a live executor, a C string and a valid tensor (copied in).
            ok(unsafe { TVMGraphExecutorSetInput(self.0, name.as_ptr(), t.ptr()) });
        }
        // SAFETY: a live executor.
        ok(unsafe { TVMGraphExecutorRun(self.0) });
        (0..num_outputs)
            .map(|k| {
                let mut t = HostTensor::new(&[LEN as i64], &[f32::NAN; LEN]);
                // SAFETY: a live executor and a valid output tensor of the right shape.
                ok(unsafe { TVMGraphExecutorGetOutput(self.0, k as i32, t.ptr()) });
                bytes_of(&t.values())
            })
            .collect()
    }
}

fn bytes(outputs: &[Vec<f32>]) -> Vec<Vec<u8>> {
    outputs.iter().map(|o| bytes_of(o)).collect()
}

fn check_graph(seed: u64, lib: &Mod) {
    let mut rng = Rng::new(seed);
    let graph = random_graph(&mut rng);
    let json = graph.json();
    let context = |what: &str| format!("seed {seed}: {what}\ngraph: {graph:?}\njson: {json}");
    let sequential = Executor::new(&json, lib, None);
    let tvm_plan = Executor::new(&json, lib, Some("inter_op_threads=2,intra_op_threads=1"));
    let parallel_plan = Executor::new(&json, lib, Some("inter_op_threads=2,intra_op_threads=1,memory_plan=parallel"));
    let unique: Vec<usize> = (0..graph.storage.len()).collect();
    for round in 0..2 {
        let inputs: Vec<Vec<f32>> = (0..graph.num_inputs).map(|_| (0..LEN).map(|_| rng.value()).collect()).collect();
        let n = graph.heads.len();
        let want = sequential.run(&inputs, n);
        assert!(want == bytes(&graph.reference(&graph.storage, &inputs)), "{}", context("sequential != reference"));
        let dataflow = bytes(&graph.reference(&unique, &inputs));
        if graph.valid_sharing {
            assert!(want == dataflow, "{}", context("a valid plan changed the result"));
        }
        let got = tvm_plan.run(&inputs, n);
        assert!(got == want, "{}", context(&format!("round {round}: parallel (TVM plan) != sequential")));
        let got = parallel_plan.run(&inputs, n);
        assert!(got == dataflow, "{}", context(&format!("round {round}: parallel (parallel plan) != dataflow")));
    }
}

#[test]
fn random_dags_run_in_parallel_give_the_sequential_result() {
    let so = scratch("inter_op_random").join("dag_kernels.so");
    let lib = load_module(&build_so(&so, &[repo().join("tests/fixtures/dag_kernels.c")], None)).unwrap();
    let seeds: Vec<u64> = match std::env::var("INTER_OP_RANDOM_SEED") {
        Ok(s) => vec![s.parse().expect("INTER_OP_RANDOM_SEED is a u64")],
        Err(_) => (BASE_SEED..BASE_SEED + GRAPHS).collect(),
    };
    let start = std::time::Instant::now();
    let mut valid = 0;
    for &seed in &seeds {
        valid += random_graph(&mut Rng::new(seed)).valid_sharing as usize;
        check_graph(seed, &lib);
    }
    eprintln!("{} random graphs ({valid} with lifetime-respecting sharing) in {:.1?}", seeds.len(), start.elapsed());
}
