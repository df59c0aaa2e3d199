//! The demo model: a small image classifier that this repository builds by itself, with no TVM
//! and no download, into a shared library laid out exactly like the one TVM's
//! `relay.build(...).export_library("model.so")` writes:
//!
//! * kernels (`examples/demo/kernels.c`) with TVM's compiled-kernel ABI,
//! * graph JSON in TVM's format (fused `tvm_op` nodes, storage ids planned like TVM's
//!   `GraphPlanMemory`, a `reshape_nop` sharing its input's storage),
//! * deterministic pseudo-random weights, serialized as TVM's params blob and inside a
//!   `GraphExecutorFactory` module,
//! * the module blob (`GraphExecutorFactory` + `_lib` + `_import_tree`) embedded as
//!   `__tvm_dev_mblob`, compiled together with the kernels by `cc` into
//!   `target/demo/demo_model.so`.
//!
//! It also holds a pure-Rust reference implementation of the same network (f64 math, written
//! independently of the kernels) to check what the runtime computes.
//!
//! The network is described by a [`Spec`] (input size, conv3x3+relu(+maxpool) stages, classes):
//! `Spec::demo()` is the demo above, whose kernels are hand-written in kernels.c;
//! `Spec::large()` is a larger CNN (`target/demo/cnn_model.so`, tens of milliseconds per
//! inference on one core) whose exported kernels are generated as wrappers over the same C
//! kernels. The functions without a spec (`build`, `reference`, ...) are the demo's.
//! `spec.with_batch(n)` is the same network with the same weights on `n` images at a time
//! (`demo_b4`, generated kernels): row i of its output is bit for bit what batch 1 gives for
//! image i, as the bucketed executor's tests need. The reference stays per image.
//!
//! The packing helpers (`graph_json_of`, `build_library`, ...) also build the sequence model of
//! `seq_model.rs`.
//!
//! Shared by `examples/demo.rs` and `tests/demo.rs` through `#[path = "..."] mod model;`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use tvm_runtime::abi::DLDataType;
use tvm_runtime::graph::factory::GraphExecutorFactory;
use tvm_runtime::runtime::module::blob::{write_import_tree, BlobEntry};
use tvm_runtime::runtime::tensor::ndarray::NDArray;
use tvm_runtime::runtime::tensor::params::save_params;

/// Name of the graph input.
pub const INPUT_NAME: &str = "data";
/// The demo's input image: NCHW, one 16x16 grey-level channel.
pub const INPUT_SHAPE: [i64; 4] = [1, 1, 16, 16];
pub const INPUT_LEN: usize = 16 * 16;
pub const NUM_CLASSES: usize = 10;
pub const OUTPUT_SHAPE: [i64; 2] = [1, NUM_CLASSES as i64];

// ---------------------------------------------------------------------------------------------
// Network description

/// A conv2d 3x3 (stride 1, zero padding 1) + bias + relu with `channels` outputs, optionally
/// followed by a 2x2 max pool of stride 2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    pub channels: usize,
    pub pool: bool,
}

/// A classifier of the demo's family: NCHW float32 input, conv stages, then batch_flatten,
/// dense + bias and softmax.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// Stem of the files `build_spec` writes: `<target>/demo/<name>_model.so`, ...
    pub name: String,
    /// Images per run: the first dimension of the input and output (1 for the demo).
    pub batch: usize,
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    pub stages: Vec<Stage>,
    pub num_classes: usize,
    /// Seed of the pseudo-random weights.
    pub weight_seed: u64,
}

impl Spec {
    /// The demo: 1x16x16 -> conv(8)+pool -> conv(16)+pool -> dense(10) -> softmax.
    pub fn demo() -> Spec {
        let stage = |channels| Stage { channels, pool: true };
        Spec {
            name: "demo".into(),
            batch: 1,
            channels: 1,
            height: 16,
            width: 16,
            stages: vec![stage(8), stage(16)],
            num_classes: NUM_CLASSES,
            weight_seed: 2024,
        }
    }

    /// A model whose 8 MiB of weights dwarf its activations, for memory figures: 3x64x64 ->
    /// conv(16)+pool -> dense(16384 x 128) -> softmax. (Its own name: the serving fixtures'
    /// `wide` model, a dense layer on 1x64x64, shares the output folder.)
    pub fn wide_conv() -> Spec {
        Spec {
            name: "wide_conv".into(),
            batch: 1,
            channels: 3,
            height: 64,
            width: 64,
            stages: vec![Stage { channels: 16, pool: true }],
            num_classes: 128,
            weight_seed: 7,
        }
    }

    /// A VGG-like CNN, 3x64x64 -> three convs per resolution (16, 32, 64, 64 channels, a pool
    /// after each three) -> dense(10) -> softmax: about 75 M multiply-adds, sized for 20-40 ms
    /// per inference on one core with these plain C kernels.
    pub fn large() -> Spec {
        let triple = |channels| {
            let conv = Stage { channels, pool: false };
            [conv, conv, Stage { channels, pool: true }]
        };
        Spec {
            name: "cnn".into(),
            batch: 1,
            channels: 3,
            height: 64,
            width: 64,
            stages: [triple(16), triple(32), triple(64), triple(64)].concat(),
            num_classes: 10,
            // A deep random network often gives every input the same class; with this seed
            // the test images get several.
            weight_seed: 2038,
        }
    }

    /// The same network and weights (same `weight_seed`: the params are byte-identical) run on
    /// `n` images at a time, named `<name>_b<n>` (`demo_b4`); batch 1 keeps the plain name, so
    /// `Spec::demo().with_batch(1) == Spec::demo()`.
    pub fn with_batch(&self, n: usize) -> Spec {
        assert!(n >= 1, "{}: batch {n}", self.name);
        let suffix = format!("_b{}", self.batch);
        let base = if self.batch == 1 { &self.name } else { self.name.strip_suffix(&suffix).unwrap_or(&self.name) };
        let name = if n == 1 { base.to_string() } else { format!("{base}_b{n}") };
        Spec { name, batch: n, ..self.clone() }
    }

    /// `[batch, channels, height, width]`.
    pub fn input_shape(&self) -> [i64; 4] {
        [self.batch as i64, self.channels as i64, self.height as i64, self.width as i64]
    }

    /// Values of one image.
    pub fn input_len(&self) -> usize {
        self.channels * self.height * self.width
    }

    /// Values of the whole input (`batch` images).
    pub fn batch_input_len(&self) -> usize {
        self.batch * self.input_len()
    }

    /// `[batch, num_classes]`.
    pub fn output_shape(&self) -> [i64; 2] {
        [self.batch as i64, self.num_classes as i64]
    }

    /// The fused ops of the network, in graph order.
    fn layers(&self) -> Vec<Layer> {
        let (mut c, mut h, mut w) = (self.channels, self.height, self.width);
        let mut v = Vec::new();
        for st in &self.stages {
            v.push(Layer::Conv { c, h, w, o: st.channels });
            c = st.channels;
            if st.pool {
                assert!(h % 2 == 0 && w % 2 == 0, "{}: 2x2 pool of an odd size {h}x{w}", self.name);
                v.push(Layer::Pool { c, h, w });
                (h, w) = (h / 2, w / 2);
            }
        }
        let k = c * h * w;
        let n = self.num_classes;
        v.extend([Layer::Flatten { k }, Layer::Dense { k, n }, Layer::Softmax { n }]);
        v
    }
}

/// One fused op; shapes are those of one image of its input (the batch is the spec's).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layer {
    /// conv2d 3x3 pad 1 + bias + relu, [batch,c,h,w] -> [batch,o,h,w].
    Conv { c: usize, h: usize, w: usize, o: usize },
    /// max_pool2d 2x2 stride 2, [batch,c,h,w] -> [batch,c,h/2,w/2].
    Pool { c: usize, h: usize, w: usize },
    /// batch_flatten to [batch,k]: a reshape, so TVM emits `__nop`.
    Flatten { k: usize },
    /// dense + bias, [batch,k] -> [batch,n].
    Dense { k: usize, n: usize },
    /// softmax of each row of [batch,n].
    Softmax { n: usize },
}

impl Layer {
    fn out_shape(self, batch: usize) -> Vec<i64> {
        let dims: Vec<usize> = match self {
            Layer::Conv { h, w, o, .. } => vec![batch, o, h, w],
            Layer::Pool { c, h, w } => vec![batch, c, h / 2, w / 2],
            Layer::Flatten { k } | Layer::Dense { n: k, .. } | Layer::Softmax { n: k } => vec![batch, k],
        };
        dims.into_iter().map(|d| d as i64).collect()
    }

    /// Shapes of its weights with the bound of their uniform init: He-uniform sqrt(6 / fan_in)
    /// for conv weights, sqrt(3 / fan_in) for the dense one (no relu after it), 0.1 for biases.
    /// Conv biases have shape [O,1,1] (what bias_add folds to).
    fn weights(self) -> Vec<(Vec<i64>, f32)> {
        let i = |d: usize| d as i64;
        match self {
            Layer::Conv { c, o, .. } => {
                vec![(vec![i(o), i(c), 3, 3], (6.0f32 / (9.0 * c as f32)).sqrt()), (vec![i(o), 1, 1], 0.1)]
            }
            Layer::Dense { k, n } => vec![(vec![i(n), i(k)], (3.0f32 / k as f32).sqrt()), (vec![i(n)], 0.1)],
            _ => vec![],
        }
    }

    /// TVM's fused-function name without the `tvmgen_default_fused_` prefix and `_N` suffix.
    fn op_name(self) -> &'static str {
        match self {
            Layer::Conv { .. } => "nn_conv2d_add_nn_relu",
            Layer::Pool { .. } => "nn_max_pool2d",
            Layer::Flatten { .. } => "__nop",
            Layer::Dense { .. } => "nn_dense_add",
            Layer::Softmax { .. } => "nn_softmax",
        }
    }

    fn attrs(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Layer::Conv { .. } => vec![("out_layout", ""), ("data_layout", "NCHW"), ("kernel_layout", "OIHW")],
            Layer::Pool { .. } => vec![("out_layout", ""), ("layout", "NCHW")],
            _ => vec![],
        }
    }
}

/// Kernel names of fused ops as TVM's codegen makes them unique: `tvmgen_default_fused_<op>`,
/// the n-th function of one kind with the suffix `_n` (none for the first); a reshape (`__nop`)
/// keeps its name.
pub fn fused_names<'a>(ops: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut seen: Vec<&str> = Vec::new();
    let mut name = |op: &'a str| {
        if op == "__nop" {
            return op.to_string();
        }
        let n = seen.iter().filter(|&&s| s == op).count();
        seen.push(op);
        let suffix = if n == 0 { String::new() } else { format!("_{n}") };
        format!("tvmgen_default_fused_{op}{suffix}")
    };
    ops.into_iter().map(&mut name).collect()
}

/// The layers with their kernel names (`fused_names`).
fn named_layers(spec: &Spec) -> Vec<(Layer, String)> {
    let layers = spec.layers();
    let names = fused_names(layers.iter().map(|l| l.op_name()));
    layers.into_iter().zip(names).collect()
}

// ---------------------------------------------------------------------------------------------
// Deterministic pseudo-random numbers (xorshift64*)

pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        // Mix the seed so that small seeds give unrelated streams; never zero.
        XorShift((seed ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(0xBF58_476D_1CE4_E5B9) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Uniform in [-a, a).
    pub fn sym(&mut self, a: f32) -> f32 {
        (self.unit() * 2.0 - 1.0) * a
    }
}

// ---------------------------------------------------------------------------------------------
// Weights

/// A named weight tensor (`p0`, `p1`, ... as TVM names bound constants).
pub struct Param {
    pub name: String,
    pub shape: Vec<i64>,
    pub data: Vec<f32>,
}

/// The demo's six weights, in the order TVM's graph codegen meets them: conv1 weight/bias,
/// conv2 weight/bias, dense weight/bias.
pub fn params() -> Vec<Param> {
    params_spec(&Spec::demo())
}

/// The weights of `spec` in graph order (each conv's and the dense's weight, then bias), drawn
/// from one pseudo-random stream seeded by `spec.weight_seed`.
pub fn params_spec(spec: &Spec) -> Vec<Param> {
    let mut rng = XorShift::new(spec.weight_seed);
    let weights = spec.layers().into_iter().flat_map(Layer::weights);
    weights
        .enumerate()
        .map(|(i, (shape, scale))| {
            let n: i64 = shape.iter().product();
            let data = (0..n).map(|_| rng.sym(scale)).collect();
            Param { name: format!("p{i}"), shape, data }
        })
        .collect()
}

fn ndarray(p: &Param) -> NDArray {
    let bytes: Vec<u8> = p.data.iter().flat_map(|x| x.to_le_bytes()).collect();
    NDArray::from_bytes(&p.shape, DLDataType::FLOAT32, &bytes).expect("weight NDArray")
}

/// The demo's weights as TVM's params blob (`relay.save_param_dict` format).
pub fn params_blob() -> Vec<u8> {
    params_blob_spec(&Spec::demo())
}

pub fn params_blob_spec(spec: &Spec) -> Vec<u8> {
    params_blob_of(&params_spec(spec))
}

/// `params` as TVM's params blob.
pub fn params_blob_of(params: &[Param]) -> Vec<u8> {
    let arrays: Vec<(String, NDArray)> = params.iter().map(|p| (p.name.clone(), ndarray(p))).collect();
    save_params(arrays.iter().map(|(n, a)| (n.as_str(), a.tensor()))).expect("params blob")
}

// ---------------------------------------------------------------------------------------------
// Input images

/// A deterministic 16x16 test image for the demo (see `input_for`).
pub fn input_image(seed: u64) -> Vec<f32> {
    input_for(&Spec::demo(), seed)
}

/// A deterministic image for `spec` (one image, CHW: `spec.input_len()` values), values in
/// [0, 1]: each channel a bright ring and a bar whose position and size depend on `seed` and the
/// channel, over faint noise.
pub fn input_for(spec: &Spec, seed: u64) -> Vec<f32> {
    (0..spec.channels as u64)
        .flat_map(|c| input_channel(seed.wrapping_add(77 + 7919 * c), spec.height, spec.width))
        .collect()
}

/// The images of `seeds` one after the other (`input_for` each): an NCHW input of batch
/// `seeds.len()`.
pub fn input_batch(spec: &Spec, seeds: &[u64]) -> Vec<f32> {
    seeds.iter().flat_map(|&seed| input_for(spec, seed)).collect()
}

/// One channel, row-major. Positions are drawn for a 16x16 image and scaled to `h` x `w`, so
/// the demo's images are unchanged.
fn input_channel(seed: u64, h: usize, w: usize) -> Vec<f32> {
    let mut rng = XorShift::new(seed);
    let (sx, sy) = (w as f32 / 16.0, h as f32 / 16.0);
    let cx = (4.0 + 8.0 * rng.unit()) * sx;
    let cy = (4.0 + 8.0 * rng.unit()) * sy;
    let r = (2.5 + 3.0 * rng.unit()) * sx.min(sy);
    let bar = (rng.next_u64() % 16) as f32;
    let vertical = rng.next_u64() % 2 == 0;
    let bar = bar * if vertical { sx } else { sy };
    let mut img = vec![0f32; h * w];
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f32, y as f32);
            let d = ((fx - cx).powi(2) + (fy - cy).powi(2)).sqrt();
            let ring = (1.0 - (d - r).abs()).max(0.0);
            let line = if (if vertical { fx } else { fy } - bar).abs() < 0.75 { 0.8 } else { 0.0 };
            img[y * w + x] = (ring.max(line) + 0.1 * rng.unit()).min(1.0);
        }
    }
    img
}

// ---------------------------------------------------------------------------------------------
// Graph JSON (TVM's format) with TVM's storage planning

/// A graph node with one float32 output.
pub struct Node {
    /// "null" (an input or weight) or "tvm_op".
    pub op: &'static str,
    pub name: String,
    /// The kernel a `tvm_op` calls (`__nop` for a reshape); empty for inputs.
    pub func_name: String,
    /// Node ids read (every node here has one output).
    pub inputs: Vec<usize>,
    /// Attributes of a `tvm_op` besides those `graph_json_of` writes itself.
    pub attrs: Vec<(&'static str, &'static str)>,
    pub shape: Vec<i64>,
}

fn fnv_hash(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

impl Node {
    /// A graph input or weight.
    pub fn input(name: &str, shape: Vec<i64>) -> Node {
        Node { op: "null", name: name.into(), func_name: String::new(), inputs: vec![], attrs: vec![], shape }
    }

    /// A `tvm_op` named after its kernel (`reshape_nop` for `__nop`).
    pub fn op(func: String, inputs: Vec<usize>, attrs: Vec<(&'static str, &'static str)>, shape: Vec<i64>) -> Node {
        let name = if func == "__nop" { "reshape_nop".to_string() } else { func.clone() };
        Node { op: "tvm_op", name, func_name: func, inputs, attrs, shape }
    }
}

/// The graph: the input, then per layer its weights (as inputs `p<i>`) and its `tvm_op`.
fn nodes(spec: &Spec) -> Vec<Node> {
    let mut v = vec![Node::input(INPUT_NAME, spec.input_shape().to_vec())];
    let mut params = 0;
    for (layer, func) in named_layers(spec) {
        let mut inputs = vec![v.len() - 1];
        for (shape, _) in layer.weights() {
            v.push(Node::input(&format!("p{params}"), shape));
            params += 1;
            inputs.push(v.len() - 1);
        }
        v.push(Node::op(func, inputs, layer.attrs(), layer.out_shape(spec.batch)));
    }
    v
}

/// Names of the demo's compiled kernels (every `tvm_op` but `__nop`), in node order.
pub fn kernel_names() -> Vec<String> {
    kernel_names_spec(&Spec::demo())
}

pub fn kernel_names_spec(spec: &Spec) -> Vec<String> {
    named_layers(spec).into_iter().map(|(_, f)| f).filter(|f| f != "__nop").collect()
}

/// Storage ids as TVM's `GraphPlanMemory` assigns them for one device: inputs and weights get
/// their own slot; an op's output takes a free slot whose size is within a factor of 16 of its
/// own (larger ones first, then the largest smaller one) or a new one; a slot is freed after
/// its last reader (never for graph outputs); a reshape-only node (`__nop`) shares its input's
/// slot. `heads` are the graph outputs (node ids).
pub fn plan_storage(nodes: &[Node], heads: &[usize]) -> Vec<i64> {
    const MATCH_RANGE: usize = 16;
    let bytes = |n: &Node| 4 * n.shape.iter().product::<i64>() as usize;
    // token of each node; tokens: (sid, max_bytes, remaining readers)
    let mut token_of = vec![usize::MAX; nodes.len()];
    let mut tokens: Vec<(i64, usize, usize)> = Vec::new();
    let mut free: Vec<(usize, usize)> = Vec::new(); // (max_bytes, token), kept sorted
    let mut next_sid = 0i64;
    // readers per node, +1 for outputs so they are never freed
    let mut readers = vec![0usize; nodes.len()];
    for n in nodes {
        for &i in &n.inputs {
            readers[i] += 1;
        }
    }
    for &h in heads {
        readers[h] += 1;
    }
    for (nid, n) in nodes.iter().enumerate() {
        if n.func_name == "__nop" {
            let t = token_of[n.inputs[0]];
            tokens[t].2 += readers[nid];
            token_of[nid] = t;
        } else if n.op == "null" {
            tokens.push((next_sid, bytes(n), usize::MAX));
            next_sid += 1;
            token_of[nid] = tokens.len() - 1;
        } else {
            let size = bytes(n);
            let larger = free.iter().position(|&(b, _)| b >= size && b <= size * MATCH_RANGE);
            let smaller = free.iter().rposition(|&(b, _)| b < size && b >= size / MATCH_RANGE);
            let t = match larger.or(smaller) {
                Some(k) => {
                    let (_, t) = free.remove(k);
                    tokens[t].1 = tokens[t].1.max(size);
                    tokens[t].2 = readers[nid];
                    t
                }
                None => {
                    tokens.push((next_sid, size, readers[nid]));
                    next_sid += 1;
                    tokens.len() - 1
                }
            };
            token_of[nid] = t;
        }
        // Release what this node read.
        for &i in &n.inputs {
            let t = token_of[i];
            if tokens[t].2 == usize::MAX {
                continue; // input or weight
            }
            tokens[t].2 -= 1;
            if tokens[t].2 == 0 {
                free.push((tokens[t].1, t));
                free.sort();
            }
        }
    }
    token_of.iter().map(|&t| tokens[t].0).collect()
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn join<T: std::fmt::Display>(v: impl IntoIterator<Item = T>) -> String {
    v.into_iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
}

/// The demo's graph JSON.
pub fn graph_json() -> String {
    graph_json_spec(&Spec::demo())
}

/// The graph JSON of `spec`, as TVM's graph codegen writes it (one output per node).
pub fn graph_json_spec(spec: &Spec) -> String {
    let nodes = nodes(spec);
    graph_json_of(&nodes, &[nodes.len() - 1])
}

/// Graph JSON in TVM's format for `nodes` (float32, one output each, device 1) with the graph
/// outputs `heads` (node ids, in output order), storage planned by `plan_storage`.
pub fn graph_json_of(nodes: &[Node], heads: &[usize]) -> String {
    let sids = plan_storage(nodes, heads);
    let mut s = String::from("{\n  \"nodes\": [\n");
    for (i, n) in nodes.iter().enumerate() {
        s += "    {\n";
        s += &format!("      \"op\": {},\n      \"name\": {},\n", json_str(n.op), json_str(&n.name));
        if n.op == "tvm_op" {
            let mut attrs: Vec<(String, String)> = vec![
                ("num_outputs".into(), "1".into()),
                ("num_inputs".into(), n.inputs.len().to_string()),
                ("flatten_data".into(), "0".into()),
                ("func_name".into(), n.func_name.clone()),
            ];
            attrs.extend(n.attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            if n.func_name != "__nop" {
                attrs.push(("hash".into(), fnv_hash(&n.func_name)));
            }
            s += "      \"attrs\": {\n";
            let lines: Vec<String> =
                attrs.iter().map(|(k, v)| format!("        {}: {}", json_str(k), json_str(v))).collect();
            s += &lines.join(",\n");
            s += "\n      },\n";
        }
        let inputs: Vec<String> = n.inputs.iter().map(|i| format!("[{i}, 0, 0]")).collect();
        s += &format!("      \"inputs\": [{}]\n", inputs.join(", "));
        s += if i + 1 < nodes.len() { "    },\n" } else { "    }\n" };
    }
    s += "  ],\n";
    let arg_nodes: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i].op == "null").collect();
    s += &format!("  \"arg_nodes\": [{}],\n", join(arg_nodes));
    s += &format!("  \"heads\": [{}],\n", join(heads.iter().map(|h| format!("[{h}, 0, 0]"))));
    s += "  \"attrs\": {\n";
    s += &format!("    \"dltype\": [\"list_str\", [{}]],\n", join(nodes.iter().map(|_| "\"float32\"")));
    s += &format!("    \"device_index\": [\"list_int\", [{}]],\n", join(nodes.iter().map(|_| 1)));
    s += &format!("    \"storage_id\": [\"list_int\", [{}]],\n", join(sids));
    s += &format!(
        "    \"shape\": [\"list_shape\", [{}]]\n",
        join(nodes.iter().map(|n| format!("[{}]", join(&n.shape))))
    );
    s += "  },\n";
    s += &format!("  \"node_row_ptr\": [{}]\n", join(0..=nodes.len()));
    s += "}\n";
    s
}

// ---------------------------------------------------------------------------------------------
// Packing: the module blob and the shared library

/// `__tvm_dev_mblob` as export_library writes it for a graph-executor build: module 0 the
/// `GraphExecutorFactory` (graph JSON, weights, module name "default"), module 1 the library
/// itself (`_lib`), the factory importing the library.
pub fn module_blob() -> Vec<u8> {
    module_blob_spec(&Spec::demo())
}

pub fn module_blob_spec(spec: &Spec) -> Vec<u8> {
    module_blob_of(graph_json_spec(spec), &params_spec(spec))
}

/// `__tvm_dev_mblob` (as `module_blob`) for any graph and weights.
pub fn module_blob_of(graph_json: String, params: &[Param]) -> Vec<u8> {
    let params: Vec<(String, NDArray)> = params.iter().map(|p| (p.name.clone(), ndarray(p))).collect();
    let payload = GraphExecutorFactory::new(graph_json, params, "default".into())
        .save_binary()
        .expect("serialize GraphExecutorFactory");
    write_import_tree(
        &[BlobEntry::Module { type_key: "GraphExecutorFactory".into(), payload }, BlobEntry::Lib],
        &[0, 1, 1],
        &[1],
    )
}

/// C source defining `__tvm_dev_mblob` (as `PackImportsToC` emits it), for the demo.
pub fn blob_c_source(blob: &[u8]) -> String {
    blob_c_source_named(blob, &Spec::demo().name)
}

/// C source defining `__tvm_dev_mblob` for the model called `model`.
pub fn blob_c_source_named(blob: &[u8], model: &str) -> String {
    let mut s = String::with_capacity(blob.len() * 4 + 200);
    s += &format!("/* Generated by examples/demo/model.rs: the module blob of the {model} model. */\n");
    s += &format!("__attribute__((visibility(\"default\"))) const unsigned char __tvm_dev_mblob[{}] = {{", blob.len());
    for (i, b) in blob.iter().enumerate() {
        if i % 24 == 0 {
            s += "\n";
        }
        s += &format!("{b},");
    }
    s += "\n};\n";
    s
}

pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Cargo's target directory: `CARGO_TARGET_DIR`, else the ancestor of this executable that
/// cargo marked with `CACHEDIR.TAG`, else `<repo>/target`.
pub fn target_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CARGO_TARGET_DIR") {
        let d = PathBuf::from(d);
        return if d.is_absolute() { d } else { repo_dir().join(d) };
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(d) = exe.ancestors().skip(1).find(|d| d.join("CACHEDIR.TAG").is_file()) {
            return d.to_path_buf();
        }
    }
    repo_dir().join("target")
}

/// Write `bytes` to `path` through a temporary file and a rename, so that concurrent builders
/// (the example and the tests) never see a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// C source exporting the kernels of `spec`: one `TVMBackendPackedCFunc` per layer calling the
/// generic kernel of kernels.c with that layer's static shape (TVM emits one specialised
/// function per fused op). kernels.c leaves out its demo exports when included this way.
pub fn kernels_c_source(spec: &Spec) -> String {
    let mut s = format!("/* Generated by examples/demo/model.rs: the kernels of the {} model. */\n", spec.name);
    s += "#define DEMO_GENERATED_LAYERS\n#include \"kernels.c\"\n";
    for (layer, func) in named_layers(spec) {
        let (kernel, shape) = match layer {
            Layer::Conv { c, h, w, o } => ("conv2d_add_relu", vec![c, h, w, o]),
            Layer::Pool { c, h, w } => ("max_pool2d", vec![c, h, w]),
            Layer::Dense { k, n } => ("dense_add", vec![k, n]),
            Layer::Softmax { n } => ("softmax", vec![n]),
            Layer::Flatten { .. } => continue,
        };
        let args = std::iter::once(spec.batch).chain(shape);
        s += &kernel_wrapper(&func, kernel, &join(args));
    }
    s
}

/// C source of the exported kernel `func`: a `TVMBackendPackedCFunc` calling the static
/// `kernel(args, codes, num_args, "<func>", <shape_args>)`.
pub fn kernel_wrapper(func: &str, kernel: &str, shape_args: &str) -> String {
    format!(
        "\nEXPORT int {func}(TVMValue* args, int* codes, int num_args, TVMValue* rv, int* rc, void* rh) {{\n  \
         (void)rv; (void)rc; (void)rh;\n  return {kernel}(args, codes, num_args, \"{func}\", {shape_args});\n}}\n"
    )
}

/// Build the demo: `<target>/demo/demo_model.so` plus `demo_graph.json` and `demo_params.bin`.
pub fn build() -> Result<PathBuf, String> {
    build_spec(&Spec::demo())
}

/// Build `<target>/demo/<name>_model.so` (plus `<name>_graph.json` and `<name>_params.bin`, the
/// files TVM's older export flow writes next to the library). Returns the library's path.
pub fn build_spec(spec: &Spec) -> Result<PathBuf, String> {
    // The demo's exported kernels are hand-written in kernels.c; other specs get theirs generated.
    let kernels = if *spec == Spec::demo() {
        KernelSource::File(repo_dir().join("examples/demo/kernels.c"))
    } else {
        KernelSource::Generated(kernels_c_source(spec))
    };
    build_library(&spec.name, &graph_json_spec(spec), &params_spec(spec), kernels)
}

/// The kernels of a library: a C file of the repository, or generated C source (compiled with
/// `examples/demo` on the include path).
pub enum KernelSource {
    File(PathBuf),
    Generated(String),
}

/// Build `<target>/demo/<name>_model.so` as export_library lays it out (the module blob of
/// `graph_json` and `params` plus the kernels), and write `<name>_graph.json` and
/// `<name>_params.bin` next to it. Returns the library's path.
pub fn build_library(name: &str, graph_json: &str, params: &[Param], kernels: KernelSource) -> Result<PathBuf, String> {
    let dir = target_dir().join("demo");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pid = std::process::id();
    // Per-process names for the generated sources: concurrent builders must not share them.
    let blob_c = dir.join(format!("{name}_model_blob.{pid}.c"));
    let mut generated = vec![blob_c.clone()];
    let blob = module_blob_of(graph_json.to_string(), params);
    std::fs::write(&blob_c, blob_c_source_named(&blob, name)).map_err(|e| format!("{}: {e}", blob_c.display()))?;
    let kernels_c = match kernels {
        KernelSource::File(path) => path,
        KernelSource::Generated(source) => {
            let path = dir.join(format!("{name}_kernels.{pid}.c"));
            generated.push(path.clone());
            std::fs::write(&path, source).map_err(|e| format!("{}: {e}", path.display()))?;
            path
        }
    };
    write_atomic(&dir.join(format!("{name}_graph.json")), graph_json.as_bytes()).map_err(|e| e.to_string())?;
    write_atomic(&dir.join(format!("{name}_params.bin")), &params_blob_of(params)).map_err(|e| e.to_string())?;

    let so = dir.join(format!("{name}_model.so"));
    let built = compile(&so, &[&blob_c, &kernels_c]);
    for path in &generated {
        let _ = std::fs::remove_file(path);
    }
    built.map(|()| so)
}

/// Compile `sources` with `cc` into the shared library `so` (through a temporary file and a
/// rename, like `write_atomic`). No floating-point contraction (`-ffp-contract=off`): every
/// value is computed with the operations the source spells, whatever the compiler inlines.
pub fn compile(so: &Path, sources: &[&Path]) -> Result<(), String> {
    let tmp_so = so.with_extension(format!("{}.so", std::process::id()));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-O2", "-shared", "-fPIC", "-std=c11", "-Wall", "-Wextra", "-ffp-contract=off", "-fvisibility=hidden"])
        .arg("-I")
        .arg(repo_dir().join("include"))
        .arg("-I")
        .arg(repo_dir().join("examples/demo"))
        .args(sources)
        .arg("-lm")
        .arg("-o")
        .arg(&tmp_so)
        .output()
        .map_err(|e| format!("running the C compiler `{cc}`: {e} (a C compiler is needed to build the demo)"))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp_so);
        return Err(format!("`{cc}` failed to build {}:\n{}", so.display(), String::from_utf8_lossy(&out.stderr)));
    }
    if !out.stderr.is_empty() {
        eprintln!("`{cc}` warnings building {}:\n{}", so.display(), String::from_utf8_lossy(&out.stderr));
    }
    std::fs::rename(&tmp_so, so).map_err(|e| format!("{}: {e}", so.display()))
}

// ---------------------------------------------------------------------------------------------
// Reference implementation (pure Rust, f64, independent of the kernels)

/// conv2d 3x3, stride 1, zero padding 1, NCHW/OIHW, + bias + relu.
fn ref_conv_relu(x: &[f64], c: usize, h: usize, w: usize, wt: &[f32], b: &[f32], o: usize) -> Vec<f64> {
    let mut out = vec![0f64; o * h * w];
    for oc in 0..o {
        for y in 0..h {
            for xx in 0..w {
                let mut acc = b[oc] as f64;
                for ic in 0..c {
                    for ky in 0..3 {
                        for kx in 0..3 {
                            let (iy, ix) = (y as isize + ky as isize - 1, xx as isize + kx as isize - 1);
                            if iy < 0 || ix < 0 || iy >= h as isize || ix >= w as isize {
                                continue;
                            }
                            acc += x[(ic * h + iy as usize) * w + ix as usize]
                                * wt[((oc * c + ic) * 3 + ky) * 3 + kx] as f64;
                        }
                    }
                }
                out[(oc * h + y) * w + xx] = acc.max(0.0);
            }
        }
    }
    out
}

fn ref_max_pool(x: &[f64], c: usize, h: usize, w: usize) -> Vec<f64> {
    let (oh, ow) = (h / 2, w / 2);
    let mut out = vec![f64::NEG_INFINITY; c * oh * ow];
    for ch in 0..c {
        for y in 0..h {
            for xx in 0..w {
                let o = &mut out[(ch * oh + y / 2) * ow + xx / 2];
                *o = o.max(x[(ch * h + y) * w + xx]);
            }
        }
    }
    out
}

fn ref_dense(x: &[f64], wt: &[f32], b: &[f32]) -> Vec<f64> {
    let k = x.len();
    b.iter().enumerate().map(|(j, &bj)| bj as f64 + (0..k).map(|i| x[i] * wt[j * k + i] as f64).sum::<f64>()).collect()
}

fn ref_softmax(x: &[f64]) -> Vec<f64> {
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = x.iter().map(|l| (l - m).exp()).collect();
    let z: f64 = e.iter().sum();
    e.iter().map(|v| v / z).collect()
}

/// The demo's class probabilities for one 16x16 image, computed in f64.
pub fn reference(image: &[f32]) -> Vec<f32> {
    reference_spec(&Spec::demo(), image)
}

/// The class probabilities of `spec` for one input, computed in f64.
pub fn reference_spec(spec: &Spec, image: &[f32]) -> Vec<f32> {
    assert_eq!(image.len(), spec.input_len());
    let params = params_spec(spec);
    let mut weights = params.iter().map(|p| p.data.as_slice());
    let mut next = || weights.next().expect("a weight per conv and dense input");
    let mut x: Vec<f64> = image.iter().map(|&v| v as f64).collect();
    for layer in spec.layers() {
        x = match layer {
            Layer::Conv { c, h, w, o } => ref_conv_relu(&x, c, h, w, next(), next(), o),
            Layer::Pool { c, h, w } => ref_max_pool(&x, c, h, w),
            Layer::Flatten { .. } => x,
            Layer::Dense { .. } => ref_dense(&x, next(), next()),
            Layer::Softmax { .. } => ref_softmax(&x),
        };
    }
    x.iter().map(|&v| v as f32).collect()
}

pub fn argmax(v: &[f32]) -> usize {
    (0..v.len()).fold(0, |best, i| if v[i] > v[best] { i } else { best })
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}
