//! The model configuration (Triton's `config.pbtxt`, handed to the backend as JSON): the
//! parameters this backend reads, auto-completion of what it leaves out (inputs, outputs,
//! `max_batch_size`) from the model, and the check of what it states against the model.

use crate::dtype::config_name;
use crate::error::{Failure, Result};
use crate::model::{Signature, TensorSpec};
use serde_json::{json, Value};
use tvm_runtime::graph::options::ExecutorOptions;

/// Parameter `key`'s `string_value`, if set.
pub fn parameter(config: &Value, key: &str) -> Option<String> {
    config["parameters"][key]["string_value"].as_str().map(str::to_string)
}

/// Parameters this backend knows; any other is refused (a typo would otherwise do nothing).
const PARAMETERS: [&str; 6] =
    ["intra_op_threads", "inter_op_threads", "core_groups", "threads_per_group", "pin", "function"];

/// The executor options the parameters give (`intra_op_threads`, `inter_op_threads`).
pub fn executor_options(config: &Value) -> Result<ExecutorOptions> {
    if let Some(map) = config["parameters"].as_object() {
        if let Some(k) = map.keys().find(|k| !PARAMETERS.contains(&k.as_str())) {
            return Err(Failure::invalid(format!("unknown parameter `{k}` (known: {})", PARAMETERS.join(", "))));
        }
    }
    let pairs: Vec<String> = ["intra_op_threads", "inter_op_threads"]
        .iter()
        .filter_map(|k| parameter(config, k).map(|v| format!("{k}={v}")))
        .collect();
    ExecutorOptions::parse(Some(&pairs.join(","))).map_err(|e| Failure::invalid(format!("parameters: {e}")))
}

pub fn max_batch_size(config: &Value) -> i64 {
    config["max_batch_size"].as_i64().unwrap_or(0)
}

/// A list of dimensions (protobuf's JSON writes 64-bit numbers as strings).
fn dims(v: &Value) -> Vec<i64> {
    let one = |d: &Value| d.as_i64().or_else(|| d.as_str().and_then(|s| s.parse().ok())).unwrap_or(0);
    v.as_array().map(|a| a.iter().map(one).collect()).unwrap_or_default()
}

fn tensors(config: &Value, key: &str) -> Vec<Value> {
    config[key].as_array().cloned().unwrap_or_default()
}

/// Fill in what the configuration leaves out from the model; whether anything changed. When
/// neither inputs nor outputs are given and the model batches on axis 0 (a bucket set over batch
/// sizes), `max_batch_size` 0 becomes the largest batch, with dynamic batching.
pub fn autocomplete(config: &mut Value, sig: &Signature) -> bool {
    let no_inputs = tensors(config, "input").is_empty();
    let no_outputs = tensors(config, "output").is_empty();
    let mut changed = false;
    if no_inputs && no_outputs && max_batch_size(config) == 0 && sig.max_rows > 1 {
        config["max_batch_size"] = json!(sig.max_rows);
        if config.get("dynamic_batching").is_none() && config.get("sequence_batching").is_none() {
            config["dynamic_batching"] = json!({});
        }
        changed = true;
    }
    let batching = max_batch_size(config) > 0;
    if no_inputs {
        config["input"] = Value::Array(sig.inputs.iter().filter_map(|t| entry(t, batching)).collect());
        changed = true;
    }
    if no_outputs && !sig.outputs.is_empty() {
        config["output"] = Value::Array(sig.outputs.iter().filter_map(|t| entry(t, batching)).collect());
        changed = true;
    }
    changed
}

/// A tensor as the configuration states it (without the batch axis when batching).
fn entry(t: &TensorSpec, batching: bool) -> Option<Value> {
    let dims = if batching { &t.shape[1..] } else { &t.shape[..] };
    Some(json!({"name": t.name, "data_type": config_name(t.dtype)?, "dims": dims}))
}

/// What the server checks requests against, from a configuration that agrees with the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub max_batch_size: usize,
    /// The model's inputs, in its order, with the configuration's shapes (batch axis included).
    pub inputs: Vec<TensorSpec>,
    /// The outputs the configuration lists: the model's output index and the tensor.
    pub outputs: Vec<(usize, TensorSpec)>,
}

/// Check the configuration against the model: every error names the tensor.
pub fn check(config: &Value, sig: &Signature) -> Result<Layout> {
    let mbs = check_batch(config, sig)?;
    check_no_batch_tensors(config)?;
    let stated = tensors(config, "input");
    let mut inputs = Vec::new();
    for t in &sig.inputs {
        let c = stated.iter().find(|c| c["name"] == t.name.as_str()).ok_or_else(|| {
            Failure::invalid(format!("the model's input '{}' is missing from the configuration's inputs", t.name))
        })?;
        inputs.push(agree("input", c, t, mbs)?);
    }
    if let Some(c) = stated.iter().find(|c| !sig.inputs.iter().any(|t| c["name"] == t.name.as_str())) {
        return Err(unknown("input", c, &sig.inputs));
    }
    let outputs = check_outputs(config, sig, mbs)?;
    Ok(Layout { max_batch_size: mbs, inputs, outputs })
}

fn check_batch(config: &Value, sig: &Signature) -> Result<usize> {
    let mbs = max_batch_size(config);
    let mbs = usize::try_from(mbs).map_err(|_| Failure::invalid(format!("max_batch_size {mbs} is negative")))?;
    if mbs > 0 && sig.max_rows == 0 {
        return Err(Failure::invalid(format!(
            "max_batch_size {mbs}: this model does not batch (its tensors do not all have a batch on axis 0; \
             a bucket manifest over batch sizes does); use max_batch_size 0"
        )));
    }
    if mbs > sig.max_rows {
        return Err(Failure::invalid(format!(
            "max_batch_size {mbs} is more than the largest batch the model runs ({})",
            sig.max_rows
        )));
    }
    Ok(mbs)
}

/// `batch_input` / `batch_output` (tensors of Triton's ragged batching that the backend would make
/// from the batch) are refused, naming the first: requests of different shapes run as separate
/// batches, one per shape, so a model needs no tensor describing where each request lies.
fn check_no_batch_tensors(config: &Value) -> Result<()> {
    for key in ["batch_input", "batch_output"] {
        if let Some(first) = tensors(config, key).first() {
            let names = |v: &Value| match v {
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("', '"),
                other => other.as_str().unwrap_or("").to_string(),
            };
            return Err(Failure::invalid(format!(
                "{key} '{}' ({}): this backend makes no batch tensors; an input with allow_ragged_batch \
                 runs the requests of each shape as a batch of their own, whole",
                names(&first["target_name"]),
                first["kind"].as_str().unwrap_or("?")
            )));
        }
    }
    Ok(())
}

/// The configured outputs; a VM function with free dimensions has outputs known only by name.
fn check_outputs(config: &Value, sig: &Signature, mbs: usize) -> Result<Vec<(usize, TensorSpec)>> {
    let stated = tensors(config, "output");
    if sig.outputs.is_empty() {
        return stated.iter().map(|c| Ok((vm_output_index(c)?, as_stated(c, mbs)?))).collect();
    }
    let mut outputs = Vec::new();
    for c in &stated {
        let i = sig
            .outputs
            .iter()
            .position(|t| c["name"] == t.name.as_str())
            .ok_or_else(|| unknown("output", c, &sig.outputs))?;
        outputs.push((i, agree("output", c, &sig.outputs[i], mbs)?));
    }
    Ok(outputs)
}

/// `output_K` of a VM function.
fn vm_output_index(c: &Value) -> Result<usize> {
    let name = c["name"].as_str().unwrap_or("");
    name.strip_prefix("output_").and_then(|k| k.parse().ok()).ok_or_else(|| {
        Failure::invalid(format!("output '{name}': a Relax VM function's outputs are named output_0, output_1, ..."))
    })
}

fn unknown(kind: &str, c: &Value, model: &[TensorSpec]) -> Failure {
    let names: Vec<String> = model.iter().map(|t| format!("'{}'", t.name)).collect();
    Failure::invalid(format!(
        "the configuration's {kind} {} is not an {kind} of the model (its {kind}s: {})",
        c["name"],
        names.join(", ")
    ))
}

/// The configuration's tensor (its shape with the batch axis, -1, when batching).
fn as_stated(c: &Value, mbs: usize) -> Result<TensorSpec> {
    let name = c["name"].as_str().unwrap_or("").to_string();
    let type_name = c["data_type"].as_str().unwrap_or("");
    let dtype = crate::dtype::from_config_name(type_name)
        .ok_or_else(|| Failure::unsupported(format!("'{name}': data_type {type_name} is not supported")))?;
    let mut shape = if mbs > 0 { vec![-1] } else { vec![] };
    shape.extend(dims(&c["dims"]));
    Ok(TensorSpec { name, dtype, shape })
}

/// The configuration's tensor `c`, which must agree with the model's `t`: same dtype, and the
/// same dimensions, where the model's free ones (-1) may be -1 or fixed.
fn agree(kind: &str, c: &Value, t: &TensorSpec, mbs: usize) -> Result<TensorSpec> {
    let stated = as_stated(c, mbs)?;
    if stated.dtype != t.dtype {
        return Err(Failure::invalid(format!(
            "{kind} '{}': data_type {} in the configuration, the model's is {}",
            t.name,
            c["data_type"].as_str().unwrap_or("?"),
            config_name(t.dtype).unwrap_or_else(|| t.dtype.to_string())
        )));
    }
    let fits = |(a, (&s, &m)): (usize, (&i64, &i64))| (mbs > 0 && a == 0) || s == m || m == -1;
    if stated.shape.len() != t.shape.len() || !stated.shape.iter().zip(&t.shape).enumerate().all(fits) {
        let batch = if mbs > 0 { format!(" (with the batch axis of max_batch_size {mbs})") } else { String::new() };
        return Err(Failure::invalid(format!(
            "{kind} '{}': shape {:?} in the configuration{batch}, the model's is {:?}",
            t.name, stated.shape, t.shape
        )));
    }
    Ok(stated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tvm_runtime::abi::DLDataType;

    fn f32() -> DLDataType {
        DLDataType::parse("float32").unwrap()
    }

    fn buckets() -> Signature {
        Signature {
            inputs: vec![TensorSpec { name: "data".into(), dtype: f32(), shape: vec![-1, 1, 16, 16] }],
            outputs: vec![TensorSpec { name: "out".into(), dtype: f32(), shape: vec![-1, 10] }],
            max_rows: 8,
        }
    }

    #[test]
    fn autocomplete_fills_a_bucket_set_as_batching() {
        let mut c = json!({"name": "m", "backend": "tvmrt", "max_batch_size": 0});
        assert!(autocomplete(&mut c, &buckets()));
        assert_eq!(c["max_batch_size"], 8);
        assert_eq!(c["dynamic_batching"], json!({}));
        assert_eq!(c["input"], json!([{"name": "data", "data_type": "TYPE_FP32", "dims": [1, 16, 16]}]));
        assert_eq!(c["output"], json!([{"name": "out", "data_type": "TYPE_FP32", "dims": [10]}]));
        let layout = check(&c, &buckets()).unwrap();
        assert_eq!(layout.max_batch_size, 8);
        assert_eq!(layout.inputs[0].shape, vec![-1, 1, 16, 16]);
    }

    #[test]
    fn a_stated_config_is_kept() {
        let mut c = json!({"max_batch_size": 4, "input": [{"name": "data", "data_type": "TYPE_FP32", "dims": ["1", "16", "16"]}],
                           "output": [{"name": "out", "data_type": "TYPE_FP32", "dims": ["10"]}]});
        assert!(!autocomplete(&mut c, &buckets()));
        assert_eq!(check(&c, &buckets()).unwrap().max_batch_size, 4);
    }

    #[test]
    fn mismatches_name_the_tensor() {
        let base = json!({"max_batch_size": 8, "input": [{"name": "data", "data_type": "TYPE_FP32", "dims": [1, 16, 16]}],
                          "output": [{"name": "out", "data_type": "TYPE_FP32", "dims": [10]}]});
        let with = |path: &str, v: Value| {
            let mut c = base.clone();
            *c.pointer_mut(path).unwrap() = v;
            check(&c, &buckets()).unwrap_err().message
        };
        assert_eq!(
            with("/input/0/data_type", json!("TYPE_INT64")),
            "input 'data': data_type TYPE_INT64 in the configuration, the model's is TYPE_FP32"
        );
        assert!(with("/input/0/dims", json!([1, 8, 32])).starts_with("input 'data': shape [-1, 1, 8, 32]"));
        assert!(with("/output/0/name", json!("prob")).contains("output \"prob\" is not an output of the model"));
        assert!(with("/input/0/name", json!("x")).contains("input 'data' is missing"));
        assert!(with("/max_batch_size", json!(16)).contains("more than the largest batch the model runs (8)"));
    }

    #[test]
    fn batch_inputs_and_outputs_are_refused_by_name() {
        let mut c = json!({"max_batch_size": 8, "input": [{"name": "data", "data_type": "TYPE_FP32", "dims": [1, 16, 16],
                           "allow_ragged_batch": true}]});
        assert!(check(&c, &buckets()).is_ok());
        c["batch_input"] = json!([{"kind": "BATCH_ELEMENT_COUNT", "target_name": ["count"], "data_type": "TYPE_INT32",
                                   "source_input": ["data"]}]);
        let e = check(&c, &buckets()).unwrap_err().message;
        assert!(e.starts_with("batch_input 'count' (BATCH_ELEMENT_COUNT): this backend makes no batch tensors"), "{e}");
        c["batch_input"] = json!([]);
        c["batch_output"] = json!([{"kind": "BATCH_SCATTER_WITH_INPUT_SHAPE", "target_name": ["out"]}]);
        assert!(check(&c, &buckets()).unwrap_err().message.starts_with("batch_output 'out' (BATCH_SCATTER"));
    }

    #[test]
    fn unknown_parameters_are_refused() {
        let c = json!({"parameters": {"intra_op_thread": {"string_value": "2"}}});
        assert!(executor_options(&c).unwrap_err().message.starts_with("unknown parameter `intra_op_thread`"));
        let c = json!({"parameters": {"intra_op_threads": {"string_value": "2"}}});
        assert_eq!(executor_options(&c).unwrap().intra_op_threads, 2);
    }
}
