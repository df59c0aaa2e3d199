//! A larger CNN for benchmarks (about 145 MFLOP and 3.6 MB of weights: 20-30 ms per inference
//! on one core of the development machine),
//! built by the repository like the demo model: the demo's kernels (`examples/demo/kernels.c`,
//! TVM's compiled-kernel ABI, parallel loops through `TVMBackendParallelLaunch`) with exported
//! entry points for this network's shapes, graph JSON in TVM's format, pseudo-random weights,
//! all packed as `export_library` does into `<target>/demo/cnn_model.so`.
//!
//! Network: 1x3x64x64 -> conv3x3(32)+relu -> pool -> conv3x3(48)+relu -> conv3x3(48)+relu ->
//! pool -> conv3x3(96)+relu -> pool -> conv3x3(256)+relu -> pool -> conv3x3(256)+relu -> 1x256x4x4.
//! Needs `mod model` (examples/demo/model.rs) beside it in the including crate.

use crate::model::{blob_c_source, repo_dir, target_dir, XorShift};
use std::path::PathBuf;
use std::process::Command;
use tvm_runtime::abi::DLDataType;
use tvm_runtime::graph::factory::GraphExecutorFactory;
use tvm_runtime::runtime::blob::{write_import_tree, BlobEntry};
use tvm_runtime::runtime::ndarray::NDArray;

pub const INPUT_SHAPE: [i64; 4] = [1, 3, 64, 64];
pub const OUTPUT_SHAPE: [i64; 4] = [1, 256, 4, 4];

enum Layer {
    /// conv3x3 + relu to `out` channels.
    Conv(i64),
    Pool,
}

const LAYERS: [Layer; 10] = [
    Layer::Conv(32),
    Layer::Pool,
    Layer::Conv(48),
    Layer::Conv(48),
    Layer::Pool,
    Layer::Conv(96),
    Layer::Pool,
    Layer::Conv(256),
    Layer::Pool,
    Layer::Conv(256),
];

/// One graph node: name, kernel or None for an input, input node ids, output shape.
struct Node {
    name: String,
    func: Option<String>,
    inputs: Vec<usize>,
    shape: Vec<i64>,
}

/// A weight: name, shape, values.
type Weight = (String, Vec<i64>, Vec<f32>);

/// Nodes, exported C wrappers, and weights.
fn network() -> (Vec<Node>, String, Vec<Weight>) {
    let mut rng = XorShift::new(4242);
    let mut nodes = vec![Node { name: "data".into(), func: None, inputs: vec![], shape: INPUT_SHAPE.to_vec() }];
    let mut wrappers = String::new();
    let mut weights = Vec::new();
    let (mut c, mut h, mut w) = (INPUT_SHAPE[1], INPUT_SHAPE[2], INPUT_SHAPE[3]);
    let mut prev = 0;
    for (i, layer) in LAYERS.iter().enumerate() {
        let func = format!("cnn_layer{i}");
        let (call, inputs, shape) = match *layer {
            Layer::Conv(o) => {
                let bound = (6.0 / (9 * c) as f32).sqrt();
                for (suffix, shape) in [("w", vec![o, c, 3, 3]), ("b", vec![o, 1, 1])] {
                    let n: i64 = shape.iter().product();
                    let scale = if suffix == "w" { bound } else { 0.1 };
                    let values = (0..n).map(|_| rng.sym(scale)).collect();
                    weights.push((format!("p{}", weights.len()), shape.clone(), values));
                    nodes.push(Node { name: weights.last().unwrap().0.clone(), func: None, inputs: vec![], shape });
                }
                let n = nodes.len();
                let call = format!("conv2d_add_relu(args, codes, n, \"{func}\", {c}, {h}, {w}, {o})");
                c = o;
                (call, vec![prev, n - 2, n - 1], vec![1, o, h, w])
            }
            Layer::Pool => {
                let call = format!("max_pool2d(args, codes, n, \"{func}\", {c}, {h}, {w})");
                (h, w) = (h / 2, w / 2);
                (call, vec![prev], vec![1, c, h, w])
            }
        };
        wrappers += &format!(
            "EXPORT int {func}(TVMValue* args, int* codes, int n, TVMValue* rv, int* rc, void* rh) {{\n  (void)rv; (void)rc; (void)rh;\n  return {call};\n}}\n"
        );
        nodes.push(Node { name: format!("layer{i}"), func: Some(func), inputs, shape });
        prev = nodes.len() - 1;
    }
    (nodes, wrappers, weights)
}

fn graph_json(nodes: &[Node]) -> String {
    let json_nodes: Vec<serde_json::Value> = nodes
        .iter()
        .map(|n| match &n.func {
            None => serde_json::json!({"op": "null", "name": n.name, "inputs": []}),
            Some(f) => serde_json::json!({
                "op": "tvm_op", "name": n.name,
                "inputs": n.inputs.iter().map(|&i| serde_json::json!([i, 0, 0])).collect::<Vec<_>>(),
                "attrs": {"func_name": f, "num_inputs": n.inputs.len().to_string(), "num_outputs": "1", "flatten_data": "0"},
            }),
        })
        .collect();
    let count = nodes.len();
    serde_json::json!({
        "nodes": json_nodes,
        "arg_nodes": (0..count).filter(|&i| nodes[i].func.is_none()).collect::<Vec<_>>(),
        "heads": [[count - 1, 0, 0]],
        "node_row_ptr": (0..=count).collect::<Vec<_>>(),
        "attrs": {
            "dltype": ["list_str", vec!["float32"; count]],
            "storage_id": ["list_int", (0..count).collect::<Vec<_>>()],
            "shape": ["list_shape", nodes.iter().map(|n| n.shape.clone()).collect::<Vec<_>>()],
        },
    })
    .to_string()
}

fn module_blob(nodes: &[Node], weights: &[Weight]) -> Vec<u8> {
    let params: Vec<(String, NDArray)> = weights
        .iter()
        .map(|(name, shape, values)| {
            let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
            (name.clone(), NDArray::from_bytes(shape, DLDataType::FLOAT32, &bytes).expect("weight"))
        })
        .collect();
    let payload =
        GraphExecutorFactory::new(graph_json(nodes), params, "default".into()).save_binary().expect("factory");
    write_import_tree(
        &[BlobEntry::Module { type_key: "GraphExecutorFactory".into(), payload }, BlobEntry::Lib],
        &[0, 1, 1],
        &[1],
    )
}

/// Build `<target>/demo/cnn_model.so`; returns its path.
pub fn build() -> Result<PathBuf, String> {
    let dir = target_dir().join("demo");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (nodes, wrappers, weights) = network();
    let pid = std::process::id();
    let kernels = repo_dir().join("examples/demo/kernels.c");
    let src = dir.join(format!("cnn_model.{pid}.c"));
    let text =
        format!("#include \"{}\"\n\n{wrappers}\n{}", kernels.display(), blob_c_source(&module_blob(&nodes, &weights)));
    std::fs::write(&src, text).map_err(|e| format!("{}: {e}", src.display()))?;
    let so = dir.join("cnn_model.so");
    let tmp = dir.join(format!("cnn_model.{pid}.so"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-O2", "-shared", "-fPIC", "-std=c11", "-fvisibility=hidden", "-I"])
        .arg(repo_dir().join("include"))
        .arg(&src)
        .args(["-lm", "-o"])
        .arg(&tmp)
        .output()
        .map_err(|e| format!("running `{cc}`: {e}"))?;
    let _ = std::fs::remove_file(&src);
    if !out.status.success() {
        return Err(format!("`{cc}` failed to build the CNN:\n{}", String::from_utf8_lossy(&out.stderr)));
    }
    std::fs::rename(&tmp, &so).map_err(|e| format!("{}: {e}", so.display()))?;
    Ok(so)
}
