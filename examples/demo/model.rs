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
//! Shared by `examples/demo.rs` and `tests/demo.rs` through `#[path = "..."] mod model;`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use tvm_runtime::abi::DLDataType;
use tvm_runtime::graph::factory::GraphExecutorFactory;
use tvm_runtime::runtime::blob::{write_import_tree, BlobEntry};
use tvm_runtime::runtime::ndarray::NDArray;
use tvm_runtime::runtime::params::save_params;

/// Name of the graph input.
pub const INPUT_NAME: &str = "data";
/// Input image: NCHW, one 16x16 grey-level channel.
pub const INPUT_SHAPE: [i64; 4] = [1, 1, 16, 16];
pub const INPUT_LEN: usize = 16 * 16;
pub const NUM_CLASSES: usize = 10;
pub const OUTPUT_SHAPE: [i64; 2] = [1, NUM_CLASSES as i64];

const C1: usize = 8; // channels of the first conv
const C2: usize = 16; // channels of the second conv
const FLAT: usize = C2 * 4 * 4; // after two 2x2 pools of a 16x16 image

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
    pub name: &'static str,
    pub shape: Vec<i64>,
    pub data: Vec<f32>,
}

/// The six weights, in the order TVM's graph codegen meets them: conv1 weight/bias, conv2
/// weight/bias, dense weight/bias. Conv biases have shape [C,1,1] (what bias_add folds to).
pub fn params() -> Vec<Param> {
    let mut rng = XorShift::new(2024);
    let mut gen = |name, shape: Vec<i64>, scale: f32| {
        let n: i64 = shape.iter().product();
        let data = (0..n).map(|_| rng.sym(scale)).collect();
        Param { name, shape, data }
    };
    // He-uniform bounds: sqrt(6 / fan_in).
    vec![
        gen("p0", vec![C1 as i64, 1, 3, 3], (6.0f32 / 9.0).sqrt()),
        gen("p1", vec![C1 as i64, 1, 1], 0.1),
        gen("p2", vec![C2 as i64, C1 as i64, 3, 3], (6.0f32 / (9.0 * C1 as f32)).sqrt()),
        gen("p3", vec![C2 as i64, 1, 1], 0.1),
        gen("p4", vec![NUM_CLASSES as i64, FLAT as i64], (3.0f32 / FLAT as f32).sqrt()),
        gen("p5", vec![NUM_CLASSES as i64], 0.1),
    ]
}

fn ndarray(p: &Param) -> NDArray {
    let bytes: Vec<u8> = p.data.iter().flat_map(|x| x.to_le_bytes()).collect();
    NDArray::from_bytes(&p.shape, DLDataType::FLOAT32, &bytes).expect("weight NDArray")
}

/// The weights as TVM's params blob (`relay.save_param_dict` format).
pub fn params_blob() -> Vec<u8> {
    let arrays: Vec<(&str, NDArray)> = params().iter().map(|p| (p.name, ndarray(p))).collect();
    save_params(arrays.iter().map(|(n, a)| (*n, a.tensor()))).expect("params blob")
}

// ---------------------------------------------------------------------------------------------
// Input images

/// A deterministic 16x16 test image in [0, 1]: a bright ring and a bar whose position and
/// size depend on `seed`, over faint noise. Row-major, NCHW with N = C = 1.
pub fn input_image(seed: u64) -> Vec<f32> {
    let mut rng = XorShift::new(seed.wrapping_add(77));
    let cx = 4.0 + 8.0 * rng.unit();
    let cy = 4.0 + 8.0 * rng.unit();
    let r = 2.5 + 3.0 * rng.unit();
    let bar = (rng.next_u64() % 16) as f32;
    let vertical = rng.next_u64() % 2 == 0;
    let mut img = vec![0f32; INPUT_LEN];
    for y in 0..16 {
        for x in 0..16 {
            let (fx, fy) = (x as f32, y as f32);
            let d = ((fx - cx).powi(2) + (fy - cy).powi(2)).sqrt();
            let ring = (1.0 - (d - r).abs()).max(0.0);
            let line = if (if vertical { fx } else { fy } - bar).abs() < 0.75 { 0.8 } else { 0.0 };
            img[y * 16 + x] = (ring.max(line) + 0.1 * rng.unit()).min(1.0);
        }
    }
    img
}

// ---------------------------------------------------------------------------------------------
// Graph JSON (TVM's format) with TVM's storage planning

struct Node {
    op: &'static str, // "null" or "tvm_op"
    name: String,
    func_name: String,
    inputs: Vec<usize>, // node ids (every node here has one output)
    attrs: Vec<(&'static str, &'static str)>,
    shape: Vec<i64>,
}

fn fnv_hash(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn nodes() -> Vec<Node> {
    let mut v: Vec<Node> = Vec::new();
    let input = |v: &mut Vec<Node>, name: &str, shape: Vec<i64>| {
        v.push(Node { op: "null", name: name.into(), func_name: String::new(), inputs: vec![], attrs: vec![], shape });
        v.len() - 1
    };
    let op = |v: &mut Vec<Node>,
              func: &str,
              inputs: Vec<usize>,
              attrs: Vec<(&'static str, &'static str)>,
              shape: Vec<i64>| {
        let name = if func == "__nop" { "reshape_nop".to_string() } else { func.to_string() };
        v.push(Node { op: "tvm_op", name, func_name: func.into(), inputs, attrs, shape });
        v.len() - 1
    };
    let conv_attrs = vec![("out_layout", ""), ("data_layout", "NCHW"), ("kernel_layout", "OIHW")];
    let pool_attrs = vec![("out_layout", ""), ("layout", "NCHW")];
    let ps = params();
    let data = input(&mut v, INPUT_NAME, INPUT_SHAPE.to_vec());
    let p0 = input(&mut v, "p0", ps[0].shape.clone());
    let p1 = input(&mut v, "p1", ps[1].shape.clone());
    let c1 = op(
        &mut v,
        "tvmgen_default_fused_nn_conv2d_add_nn_relu",
        vec![data, p0, p1],
        conv_attrs.clone(),
        vec![1, C1 as i64, 16, 16],
    );
    let m1 = op(&mut v, "tvmgen_default_fused_nn_max_pool2d", vec![c1], pool_attrs.clone(), vec![1, C1 as i64, 8, 8]);
    let p2 = input(&mut v, "p2", ps[2].shape.clone());
    let p3 = input(&mut v, "p3", ps[3].shape.clone());
    let c2 = op(
        &mut v,
        "tvmgen_default_fused_nn_conv2d_add_nn_relu_1",
        vec![m1, p2, p3],
        conv_attrs,
        vec![1, C2 as i64, 8, 8],
    );
    let m2 = op(&mut v, "tvmgen_default_fused_nn_max_pool2d_1", vec![c2], pool_attrs, vec![1, C2 as i64, 4, 4]);
    let flat = op(&mut v, "__nop", vec![m2], vec![], vec![1, FLAT as i64]);
    let p4 = input(&mut v, "p4", ps[4].shape.clone());
    let p5 = input(&mut v, "p5", ps[5].shape.clone());
    let d = op(&mut v, "tvmgen_default_fused_nn_dense_add", vec![flat, p4, p5], vec![], vec![1, NUM_CLASSES as i64]);
    op(&mut v, "tvmgen_default_fused_nn_softmax", vec![d], vec![], OUTPUT_SHAPE.to_vec());
    v
}

/// Names of the compiled kernels the graph calls (every `tvm_op` but `__nop`), in node order.
pub fn kernel_names() -> Vec<String> {
    nodes().into_iter().filter(|n| n.op == "tvm_op" && n.func_name != "__nop").map(|n| n.func_name).collect()
}

/// Storage ids as TVM's `GraphPlanMemory` assigns them for one device: inputs and weights get
/// their own slot; an op's output takes a free slot whose size is within a factor of 16 of its
/// own (larger ones first, then the largest smaller one) or a new one; a slot is freed after
/// its last reader (never for graph outputs); a reshape-only node (`__nop`) shares its input's
/// slot.
fn plan_storage(nodes: &[Node], heads: &[usize]) -> Vec<i64> {
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

/// The graph JSON, as TVM's graph codegen writes it (one output per node).
pub fn graph_json() -> String {
    let nodes = nodes();
    let heads = vec![nodes.len() - 1];
    let sids = plan_storage(&nodes, &heads);
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
    let params: Vec<(String, NDArray)> = params().iter().map(|p| (p.name.to_string(), ndarray(p))).collect();
    let payload = GraphExecutorFactory::new(graph_json(), params, "default".into())
        .save_binary()
        .expect("serialize GraphExecutorFactory");
    write_import_tree(
        &[BlobEntry::Module { type_key: "GraphExecutorFactory".into(), payload }, BlobEntry::Lib],
        &[0, 1, 1],
        &[1],
    )
}

/// C source defining `__tvm_dev_mblob` (as `PackImportsToC` emits it).
pub fn blob_c_source(blob: &[u8]) -> String {
    let mut s = String::with_capacity(blob.len() * 4 + 200);
    s += "/* Generated by examples/demo/model.rs: the module blob of the demo model. */\n";
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
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Build `<target>/demo/demo_model.so` (plus `demo_graph.json` and `demo_params.bin`, the files
/// TVM's older export flow writes next to the library). Returns the library's path.
pub fn build() -> Result<PathBuf, String> {
    let dir = target_dir().join("demo");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pid = std::process::id();
    let blob_c = dir.join(format!("demo_model_blob.{pid}.c"));
    std::fs::write(&blob_c, blob_c_source(&module_blob())).map_err(|e| format!("{}: {e}", blob_c.display()))?;
    write_atomic(&dir.join("demo_graph.json"), graph_json().as_bytes()).map_err(|e| e.to_string())?;
    write_atomic(&dir.join("demo_params.bin"), &params_blob()).map_err(|e| e.to_string())?;

    let so = dir.join("demo_model.so");
    let tmp_so = dir.join(format!("demo_model.{pid}.so"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-O2", "-shared", "-fPIC", "-std=c11", "-Wall", "-Wextra", "-fvisibility=hidden"])
        .arg("-I")
        .arg(repo_dir().join("include"))
        .arg(repo_dir().join("examples/demo/kernels.c"))
        .arg(&blob_c)
        .arg("-lm")
        .arg("-o")
        .arg(&tmp_so)
        .output()
        .map_err(|e| format!("running the C compiler `{cc}`: {e} (a C compiler is needed to build the demo)"))?;
    let _ = std::fs::remove_file(&blob_c);
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp_so);
        return Err(format!("`{cc}` failed to build {}:\n{}", so.display(), String::from_utf8_lossy(&out.stderr)));
    }
    std::fs::rename(&tmp_so, &so).map_err(|e| format!("{}: {e}", so.display()))?;
    Ok(so)
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

/// Class probabilities for one 16x16 image, computed in f64.
pub fn reference(image: &[f32]) -> Vec<f32> {
    assert_eq!(image.len(), INPUT_LEN);
    let p = params();
    let x: Vec<f64> = image.iter().map(|&v| v as f64).collect();
    let x = ref_conv_relu(&x, 1, 16, 16, &p[0].data, &p[1].data, C1);
    let x = ref_max_pool(&x, C1, 16, 16);
    let x = ref_conv_relu(&x, C1, 8, 8, &p[2].data, &p[3].data, C2);
    let x = ref_max_pool(&x, C2, 8, 8);
    let logits: Vec<f64> = (0..NUM_CLASSES)
        .map(|j| p[5].data[j] as f64 + (0..FLAT).map(|k| x[k] * p[4].data[j * FLAT + k] as f64).sum::<f64>())
        .collect();
    let m = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = logits.iter().map(|l| (l - m).exp()).collect();
    let z: f64 = e.iter().sum();
    e.iter().map(|v| (v / z) as f32).collect()
}

pub fn argmax(v: &[f32]) -> usize {
    (0..v.len()).fold(0, |best, i| if v[i] > v[best] { i } else { best })
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}
