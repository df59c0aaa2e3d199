//! A small sequence model built by the repository like the demo (`model.rs`): one causal
//! transformer-like block over already-embedded tokens, float32, packed into an
//! export_library-style `.so` (`<target>/demo/<name>_model.so`) with kernels from
//! `examples/demo/seq_kernels.c`.
//!
//! Input `tokens` [B,S,H] (B sequences, each computed as it is alone; B is 1 unless
//! `SeqSpec::with_batch` says otherwise); q, k, v projections (dense per token + bias); causal single-head
//! attention (softmax over j <= i of q_i.k_j / sqrt(H)); output projection + residual; a
//! per-token MLP (H -> F + relu -> H) + residual. Two outputs (graph heads): `out` [B,S,H], the
//! block's result, and `attn` [B,S,S], the attention probabilities (0 where j > i).
//!
//! Built for a fixed length S (`SeqSpec::with_seq_len`), every version has the same weights,
//! and row i of its results depends on tokens 0..=i only, computed with the same float
//! operations whatever S: the first s rows of a longer version equal, bit for bit, those of
//! the version for s tokens (what a bucketed executor padding a sequence needs).
//!
//! Needs `model.rs` as a sibling module:
//! `#[path = ".../model.rs"] mod model; #[path = ".../seq_model.rs"] mod seq_model;`.
#![allow(dead_code)]

use super::model::{build_library, fused_names, graph_json_of, kernel_wrapper, KernelSource, Node, Param, XorShift};
use std::path::PathBuf;

/// Name of the graph input.
pub const SEQ_INPUT_NAME: &str = "tokens";
/// Output indices: the block's result and the attention probabilities.
pub const OUT_INDEX: i32 = 0;
pub const ATTN_INDEX: i32 = 1;

/// A sequence model: `seq_len` tokens of `hidden` values, an MLP of width `ffn`.
#[derive(Clone, Debug, PartialEq)]
pub struct SeqSpec {
    /// Stem of the files `build_seq` writes: `<target>/demo/<name>_model.so`, ...
    pub name: String,
    /// Sequences per run: the first dimension of every tensor.
    pub batch: usize,
    pub seq_len: usize,
    pub hidden: usize,
    pub ffn: usize,
    /// Seed of the pseudo-random weights.
    pub weight_seed: u64,
}

impl SeqSpec {
    /// 16 tokens of 32 values, MLP width 64.
    pub fn small() -> SeqSpec {
        SeqSpec { name: "seq".into(), batch: 1, seq_len: 16, hidden: 32, ffn: 64, weight_seed: 4242 }
    }

    /// The same block and weights built for `n` tokens, named `<name>_s<n>` (a name already
    /// ending in `_s<seq_len>` has that suffix replaced).
    pub fn with_seq_len(&self, n: usize) -> SeqSpec {
        assert!(n >= 1, "{}: sequence length {n}", self.name);
        let suffix = format!("_s{}", self.seq_len);
        let base = self.name.strip_suffix(&suffix).unwrap_or(&self.name);
        SeqSpec { name: format!("{base}_s{n}"), seq_len: n, ..self.clone() }
    }

    /// The same block and weights built for `n` sequences per run, named `<base>_b<n>_s<S>`
    /// (`<base>_s<S>` for one), where `<base>` is the name without its batch and length suffixes.
    pub fn with_batch(&self, n: usize) -> SeqSpec {
        assert!(n >= 1, "{}: batch {n}", self.name);
        let base = self.name.strip_suffix(&format!("_s{}", self.seq_len)).unwrap_or(&self.name);
        let base = base.strip_suffix(&format!("_b{}", self.batch)).unwrap_or(base);
        let batch = if n == 1 { String::new() } else { format!("_b{n}") };
        SeqSpec { name: format!("{base}{batch}_s{}", self.seq_len), batch: n, ..self.clone() }
    }

    /// `[batch, seq_len, hidden]`, also the shape of `out`.
    pub fn input_shape(&self) -> [i64; 3] {
        [self.batch as i64, self.seq_len as i64, self.hidden as i64]
    }

    /// `batch * seq_len * hidden`.
    pub fn input_len(&self) -> usize {
        self.batch * self.seq_len * self.hidden
    }

    /// Shape of output 0 (`out`): `[batch, seq_len, hidden]`.
    pub fn out_shape(&self) -> [i64; 3] {
        self.input_shape()
    }

    /// Shape of output 1 (`attn`): `[batch, seq_len, seq_len]`.
    pub fn attn_shape(&self) -> [i64; 3] {
        [self.batch as i64, self.seq_len as i64, self.seq_len as i64]
    }

    /// The ops in graph order with their data inputs (a dense's residual second).
    fn ops(&self) -> Vec<(SeqOp, Vec<Src>)> {
        use Src::{Op, Tokens};
        let (h, f) = (self.hidden, self.ffn);
        let proj = SeqOp::Dense { k: h, n: h, act: Act::None };
        vec![
            (proj, vec![Tokens]),                                                   // 0: q
            (proj, vec![Tokens]),                                                   // 1: k
            (proj, vec![Tokens]),                                                   // 2: v
            (SeqOp::Attention, vec![Op(0), Op(1)]),                                 // 3: attn
            (SeqOp::Context, vec![Op(3), Op(2)]),                                   // 4: ctx
            (SeqOp::Dense { k: h, n: h, act: Act::Residual }, vec![Op(4), Tokens]), // 5: h
            (SeqOp::Dense { k: h, n: f, act: Act::Relu }, vec![Op(5)]),             // 6: relu(h W1)
            (SeqOp::Dense { k: f, n: h, act: Act::Residual }, vec![Op(6), Op(5)]),  // 7: out
        ]
    }
}

/// The ops whose results are the graph outputs `out` and `attn` (indices into `SeqSpec::ops`).
const OUT_OP: usize = 7;
const ATTN_OP: usize = 3;

/// Where an op's data input comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Src {
    Tokens,
    /// The result of op i.
    Op(usize),
}

/// What follows a dense's bias.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Act {
    None,
    Relu,
    /// `+ residual`, a fourth input.
    Residual,
}

/// One fused op of the block.
#[derive(Clone, Copy, Debug, PartialEq)]
enum SeqOp {
    /// Per token: [B,S,k] -> [B,S,n].
    Dense { k: usize, n: usize, act: Act },
    /// q, k -> attention probabilities [B,S,S].
    Attention,
    /// attn, v -> [B,S,H].
    Context,
}

impl SeqOp {
    /// TVM's fused-function name without the `tvmgen_default_fused_` prefix and `_N` suffix.
    fn op_name(self) -> &'static str {
        match self {
            SeqOp::Dense { act: Act::None, .. } => "nn_dense_add",
            SeqOp::Dense { act: Act::Relu, .. } => "nn_dense_add_nn_relu",
            SeqOp::Dense { act: Act::Residual, .. } => "nn_dense_add_add",
            SeqOp::Attention => "nn_batch_matmul_divide_where_nn_softmax",
            SeqOp::Context => "nn_batch_matmul",
        }
    }

    /// The static C kernel of seq_kernels.c and its size arguments after B and S.
    fn kernel(self, hidden: usize) -> (&'static str, Vec<usize>) {
        match self {
            SeqOp::Dense { k, n, act: Act::None } => ("dense_add", vec![k, n]),
            SeqOp::Dense { k, n, act: Act::Relu } => ("dense_add_relu", vec![k, n]),
            SeqOp::Dense { k, n, act: Act::Residual } => ("dense_add_add", vec![k, n]),
            SeqOp::Attention => ("causal_attention_softmax", vec![hidden]),
            SeqOp::Context => ("causal_batch_matmul", vec![hidden]),
        }
    }

    /// Weight shapes with the bound of their uniform init: sqrt(6 / fan_in) before a relu,
    /// sqrt(3 / fan_in) otherwise, 0.1 for biases.
    fn weights(self) -> Vec<(Vec<i64>, f32)> {
        match self {
            SeqOp::Dense { k, n, act } => {
                let gain = if act == Act::Relu { 6.0 } else { 3.0 };
                vec![(vec![n as i64, k as i64], (gain / k as f32).sqrt()), (vec![n as i64], 0.1)]
            }
            _ => vec![],
        }
    }

    fn out_shape(self, spec: &SeqSpec) -> Vec<i64> {
        let (b, s) = (spec.batch as i64, spec.seq_len as i64);
        match self {
            SeqOp::Dense { n, .. } => vec![b, s, n as i64],
            SeqOp::Attention => vec![b, s, s],
            SeqOp::Context => vec![b, s, spec.hidden as i64],
        }
    }
}

/// The ops with their kernel names (`fused_names`).
fn named_ops(spec: &SeqSpec) -> Vec<(SeqOp, String)> {
    let ops: Vec<SeqOp> = spec.ops().into_iter().map(|(op, _)| op).collect();
    let names = fused_names(ops.iter().map(|op| op.op_name()));
    ops.into_iter().zip(names).collect()
}

// ---------------------------------------------------------------------------------------------
// Weights and inputs

/// The weights in graph order (`p0` .. `p11`: Wq, bq, Wk, bk, Wv, bv, Wo, bo, W1, b1, W2, b2),
/// drawn from one stream seeded by `spec.weight_seed`: the same for every `seq_len`.
pub fn seq_params(spec: &SeqSpec) -> Vec<Param> {
    let mut rng = XorShift::new(spec.weight_seed);
    let weights = spec.ops().into_iter().flat_map(|(op, _)| op.weights());
    weights
        .enumerate()
        .map(|(i, (shape, scale))| {
            let n: i64 = shape.iter().product();
            let data = (0..n).map(|_| rng.sym(scale)).collect();
            Param { name: format!("p{i}"), shape, data }
        })
        .collect()
}

/// Deterministic tokens of one sequence of `spec` ([1,S,H] row-major, values in [-1, 1)): token t drawn from
/// `seed` and t alone, so a shorter sequence with the same seed is a prefix of a longer one.
pub fn tokens_for(spec: &SeqSpec, seed: u64) -> Vec<f32> {
    (0..spec.seq_len as u64).flat_map(|t| token(seed, t, spec.hidden)).collect()
}

fn token(seed: u64, t: u64, hidden: usize) -> Vec<f32> {
    let mut rng = XorShift::new(seed.wrapping_mul(0x0000_0100_0000_01b3).wrapping_add(t.wrapping_mul(7919) + 1));
    (0..hidden).map(|_| rng.sym(1.0)).collect()
}

// ---------------------------------------------------------------------------------------------
// Graph and library

/// The graph: `tokens`, then per op its weights (`p<i>`) and its `tvm_op`, whose inputs are its
/// first data input, its weights, then its other data inputs; heads `[out, attn]`.
fn seq_nodes(spec: &SeqSpec) -> (Vec<Node>, Vec<usize>) {
    let mut v = vec![Node::input(SEQ_INPUT_NAME, spec.input_shape().to_vec())];
    let mut params = 0;
    let mut op_ids: Vec<usize> = Vec::new(); // node id of each op's result
    for ((op, srcs), (_, func)) in spec.ops().into_iter().zip(named_ops(spec)) {
        let node_of = |src: &Src| match *src {
            Src::Tokens => 0,
            Src::Op(i) => op_ids[i],
        };
        let mut inputs = vec![node_of(&srcs[0])];
        for (shape, _) in op.weights() {
            v.push(Node::input(&format!("p{params}"), shape));
            params += 1;
            inputs.push(v.len() - 1);
        }
        inputs.extend(srcs[1..].iter().map(node_of));
        v.push(Node::op(func, inputs, vec![], op.out_shape(spec)));
        op_ids.push(v.len() - 1);
    }
    let heads = vec![op_ids[OUT_OP], op_ids[ATTN_OP]];
    (v, heads)
}

/// The graph JSON of `spec` in TVM's format; heads `[out, attn]`.
pub fn seq_graph_json(spec: &SeqSpec) -> String {
    let (nodes, heads) = seq_nodes(spec);
    graph_json_of(&nodes, &heads)
}

/// Names of the compiled kernels in node order.
pub fn seq_kernel_names(spec: &SeqSpec) -> Vec<String> {
    named_ops(spec).into_iter().map(|(_, f)| f).collect()
}

/// C source exporting the kernels of `spec`: seq_kernels.c plus one wrapper per op with the
/// static shapes (B and S first).
pub fn seq_kernels_c_source(spec: &SeqSpec) -> String {
    let mut s = format!("/* Generated by examples/demo/seq_model.rs: the kernels of the {} model. */\n", spec.name);
    s += "#include \"seq_kernels.c\"\n";
    for (op, func) in named_ops(spec) {
        let (kernel, sizes) = op.kernel(spec.hidden);
        let args: Vec<String> = [spec.batch, spec.seq_len].into_iter().chain(sizes).map(|d| d.to_string()).collect();
        s += &kernel_wrapper(&func, kernel, &args.join(", "));
    }
    s
}

/// Build `<target>/demo/<name>_model.so` (plus `<name>_graph.json`, `<name>_params.bin`).
pub fn build_seq(spec: &SeqSpec) -> Result<PathBuf, String> {
    let kernels = KernelSource::Generated(seq_kernels_c_source(spec));
    build_library(&spec.name, &seq_graph_json(spec), &seq_params(spec), kernels)
}

// ---------------------------------------------------------------------------------------------
// Reference implementation (pure Rust, f64, independent of the kernels)

/// Rows of `x` ([rows, k]) times `w` ([n, k]) transposed plus `b`.
fn ref_dense(x: &[f64], k: usize, w: &[f32], b: &[f32]) -> Vec<f64> {
    x.chunks(k)
        .flat_map(|row| b.iter().enumerate().map(move |(j, &bj)| ref_dot(row, &w[j * k..(j + 1) * k]) + bj as f64))
        .collect()
}

fn ref_dot(x: &[f64], w: &[f32]) -> f64 {
    x.iter().zip(w).map(|(a, &b)| a * b as f64).sum()
}

/// Causal attention probabilities [s, s] of q and k ([s, d]).
fn ref_attention(q: &[f64], k: &[f64], s: usize, d: usize) -> Vec<f64> {
    let mut p = vec![0f64; s * s];
    for i in 0..s {
        let qi = &q[i * d..(i + 1) * d];
        let scores: Vec<f64> = (0..=i)
            .map(|j| qi.iter().zip(&k[j * d..(j + 1) * d]).map(|(a, b)| a * b).sum::<f64>() / (d as f64).sqrt())
            .collect();
        let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = scores.iter().map(|x| (x - m).exp()).sum();
        for (j, x) in scores.iter().enumerate() {
            p[i * s + j] = (x - m).exp() / z;
        }
    }
    p
}

/// `p` ([s, s]) times `v` ([s, d]).
fn ref_context(p: &[f64], v: &[f64], s: usize, d: usize) -> Vec<f64> {
    (0..s).flat_map(|i| (0..d).map(move |c| (0..s).map(|j| p[i * s + j] * v[j * d + c]).sum::<f64>())).collect()
}

fn add(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// The block's `(out, attn)` for `tokens` (`spec.input_len()` values), computed in f64, one
/// sequence after the other.
pub fn reference_seq(spec: &SeqSpec, tokens: &[f32]) -> (Vec<f32>, Vec<f32>) {
    assert_eq!(tokens.len(), spec.input_len());
    let one = SeqSpec { batch: 1, ..spec.clone() };
    let (mut out, mut attn) = (Vec::new(), Vec::new());
    for sequence in tokens.chunks(one.input_len()) {
        let (o, a) = reference_one(&one, sequence);
        out.extend(o);
        attn.extend(a);
    }
    (out, attn)
}

/// `reference_seq` for one sequence.
fn reference_one(spec: &SeqSpec, tokens: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let (s, h) = (spec.seq_len, spec.hidden);
    let p = seq_params(spec);
    let w = |i: usize| p[i].data.as_slice();
    let x: Vec<f64> = tokens.iter().map(|&v| v as f64).collect();
    let (q, k, v) = (ref_dense(&x, h, w(0), w(1)), ref_dense(&x, h, w(2), w(3)), ref_dense(&x, h, w(4), w(5)));
    let attn = ref_attention(&q, &k, s, h);
    let ctx = ref_context(&attn, &v, s, h);
    let h1 = add(&ref_dense(&ctx, h, w(6), w(7)), &x);
    let f: Vec<f64> = ref_dense(&h1, h, w(8), w(9)).into_iter().map(|y| y.max(0.0)).collect();
    let out = add(&ref_dense(&f, spec.ffn, w(10), w(11)), &h1);
    let to_f32 = |v: Vec<f64>| v.into_iter().map(|x| x as f32).collect();
    (to_f32(out), to_f32(attn))
}
