//! A model's files loaded into one session every instance shares (one copy of the weights),
//! and the tensors it takes and gives ([`Signature`]):
//!
//! - an `export_library` graph `.so`: one [`Plan`];
//! - graph JSON + kernel library + params (the legacy trio): one [`Plan`];
//! - a bucket manifest (`.buckets`, one `.so` per line): one [`BucketSet`]; a dimension that
//!   differs between buckets is `-1`;
//! - a Relax VM library (`relax.build` / `tvm.compile`): the VM module, its function `main` or
//!   the one a parameter names.

use crate::error::{Failure, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tvm_runtime::abi::{DLDataType, DLDevice};
use tvm_runtime::graph::buckets::manifest::load_manifest;
use tvm_runtime::graph::buckets::BucketSet;
use tvm_runtime::graph::factory::GraphExecutorFactory;
use tvm_runtime::graph::options::{BucketOptions, ExecutorOptions};
use tvm_runtime::graph::{Graph, Plan};
use tvm_runtime::runtime::container::ArrayObj;
use tvm_runtime::runtime::function::packed::{Module, Value};
use tvm_runtime::runtime::object::header::LegacyRef;
use tvm_runtime::runtime::tensor::ndarray::NDArray;
use tvm_runtime::runtime::tensor::params::load_params_file;
use tvm_runtime::vm::session::AllocatorKind;
use tvm_runtime::vm::VmModule;

/// A tensor as the model sees it; `-1` for a dimension the model leaves free.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    pub dtype: DLDataType,
    pub shape: Vec<i64>,
}

/// What the model takes and gives. `max_rows`: the largest batch one run takes when every input
/// and output has its batch on axis 0 (0 when the model does not batch).
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub inputs: Vec<TensorSpec>,
    /// Empty for a VM function with free dimensions (its outputs are known after a run).
    pub outputs: Vec<TensorSpec>,
    pub max_rows: usize,
}

/// What every instance of a model shares.
pub enum Session {
    Graph(Arc<Plan>),
    Buckets(Arc<BucketSet>),
    Vm { vm: Module, function: String },
}

/// Where the model's files are and how to run it (from the configuration).
pub struct Source {
    /// The version directory.
    pub dir: PathBuf,
    /// `default_model_filename`, else `model.so` (or `model.buckets` when only that exists).
    pub file: Option<String>,
    /// Parameter `function` (VM models).
    pub function: Option<String>,
    pub executor: ExecutorOptions,
}

pub const VM_KEYS: [&str; 2] = ["relax.Executable", "relax.VMExecutable"];
/// TVM's pooled allocator (`vm_initialization`'s default).
const POOLED: AllocatorKind = AllocatorKind::Pooled;
const TRIO_GRAPH: &str = "graph.json";
const TRIO_PARAMS: &str = "params.bin";

pub fn cpu() -> DLDevice {
    DLDevice::cpu(0)
}

/// Load the model `source` describes.
pub fn load(source: &Source) -> Result<(Session, Signature)> {
    tvm_runtime::init();
    let file = model_file(source)?;
    let shown = file.display().to_string();
    let loaded = if file.extension().is_some_and(|e| e == "buckets") {
        load_buckets(&file, source.executor)
    } else if source.dir.join(TRIO_GRAPH).is_file() {
        load_trio(&source.dir, &file)
    } else {
        load_library(&file, source)
    };
    loaded.map_err(|e| e.context(shown))
}

/// The model's file: the one named, else `model.so`, else `model.buckets`.
fn model_file(source: &Source) -> Result<PathBuf> {
    let candidates: Vec<String> = match &source.file {
        Some(f) => vec![f.clone()],
        None => vec!["model.so".into(), "model.buckets".into()],
    };
    for name in &candidates {
        let path = source.dir.join(name);
        if path.is_file() {
            return Ok(path);
        }
    }
    Err(Failure::not_found(format!(
        "no model file: {} has no {} (default_model_filename names another)",
        source.dir.display(),
        candidates.join(" or ")
    )))
}

fn load_module(path: &Path) -> Result<Module> {
    let text = path.to_str().ok_or_else(|| Failure::invalid("the path is not valid UTF-8"))?;
    Ok(Module::load_from_file(text, "so")?)
}

/// An `export_library` `.so`: a graph executor factory or a Relax VM executable.
fn load_library(path: &Path, source: &Source) -> Result<(Session, Signature)> {
    let module = load_module(path)?;
    if VM_KEYS.contains(&module.type_key()) {
        return load_vm(module, source.function.as_deref().unwrap_or("main"));
    }
    if let Some(f) = &source.function {
        return Err(Failure::invalid(format!(
            "parameter function={f}: only Relax VM libraries have functions to choose; this is a graph model"
        )));
    }
    let factory = GraphExecutorFactory::of(&module).map_err(|_| {
        Failure::invalid(format!(
            "holds a `{}` module, neither a graph executor factory (export_library) nor a Relax VM executable; \
             a kernel library goes with {TRIO_GRAPH} (and {TRIO_PARAMS}) beside it",
            module.type_key()
        ))
    })?;
    let plan = factory.plan_with(&module, &[cpu()], source.executor.memory_plan)?;
    let signature = plan_signature(&plan);
    Ok((Session::Graph(plan), signature))
}

/// Graph JSON + kernel library + params (when `params.bin` is there).
fn load_trio(dir: &Path, lib: &Path) -> Result<(Session, Signature)> {
    let graph_path = dir.join(TRIO_GRAPH);
    let text = std::fs::read_to_string(&graph_path).map_err(|e| Failure::not_found(format!("{TRIO_GRAPH}: {e}")))?;
    let graph = Graph::parse(&text).map_err(|e| Failure::invalid(format!("{TRIO_GRAPH}: {e}")))?;
    let module = load_module(lib)?;
    let mut plan = Plan::new(graph, module, &[cpu()])?;
    let params = dir.join(TRIO_PARAMS);
    if params.is_file() {
        let weights = load_params_file(&params).map_err(|e| Failure::invalid(format!("{TRIO_PARAMS}: {e}")))?;
        plan.set_params(&weights).map_err(|e| Failure::invalid(format!("{TRIO_PARAMS}: {e}")))?;
    }
    let plan = Arc::new(plan);
    let signature = plan_signature(&plan);
    Ok((Session::Graph(plan), signature))
}

fn load_buckets(manifest: &Path, executor: ExecutorOptions) -> Result<(Session, Signature)> {
    let versions = load_manifest(manifest)?;
    let mut options = BucketOptions::parse(None)?;
    options.executor = executor;
    let set = BucketSet::from_factories(&versions, &[cpu()], options)?;
    let signature = bucket_signature(&set);
    Ok((Session::Buckets(set), signature))
}

/// A plain graph's tensors (its weights are not inputs). It batches only at its fixed batch of
/// one: a request of one row is the model's input as it is.
fn plan_signature(plan: &Plan) -> Signature {
    let inputs: Vec<TensorSpec> = (0..plan.num_inputs())
        .filter(|&i| !plan.is_param_input(i))
        .map(|i| spec(plan.input_name(i).to_string(), plan, plan.input_entry(i)))
        .collect();
    let outputs: Vec<TensorSpec> =
        (0..plan.num_outputs()).map(|o| spec(plan.output_name(o), plan, plan.output_entry(o))).collect();
    let batch_of_one = inputs.iter().chain(&outputs).all(|t| t.shape.first() == Some(&1));
    Signature { inputs, outputs, max_rows: usize::from(batch_of_one) }
}

fn spec(name: String, plan: &Plan, eid: usize) -> TensorSpec {
    TensorSpec { name, dtype: plan.entry_dtype(eid), shape: plan.entry_shape(eid).to_vec() }
}

/// The largest bucket's tensors with `-1` where the buckets differ; batching when axis 0 differs
/// in every tensor (a bucket set over batch sizes, or over batch sizes and other extents such as
/// a sequence's length).
fn bucket_signature(set: &BucketSet) -> Signature {
    let plans: Vec<&Plan> = set.buckets().iter().map(|b| &*b.plan).collect();
    let largest = &set.largest().plan;
    let free = |eid_of: &dyn Fn(&Plan) -> usize, base: TensorSpec| -> TensorSpec {
        let mut t = base;
        for (axis, d) in t.shape.iter_mut().enumerate() {
            if plans.iter().any(|p| p.entry_shape(eid_of(p))[axis] != *d) {
                *d = -1;
            }
        }
        t
    };
    let inputs: Vec<TensorSpec> = (0..largest.num_inputs())
        .filter(|&i| !largest.is_param_input(i))
        .map(|i| free(&|p| p.input_entry(i), spec(largest.input_name(i).to_string(), largest, largest.input_entry(i))))
        .collect();
    let outputs: Vec<TensorSpec> = (0..largest.num_outputs())
        .map(|o| free(&|p| p.output_entry(o), spec(largest.output_name(o), largest, largest.output_entry(o))))
        .collect();
    let batches = inputs.iter().chain(&outputs).all(|t| free_axes(&t.shape).first() == Some(&0));
    let max_rows = if batches { largest.entry_shape(largest.input_entry(input_index(largest)))[0] as usize } else { 0 };
    Signature { inputs, outputs, max_rows }
}

/// The first data input of a plan.
fn input_index(plan: &Plan) -> usize {
    (0..plan.num_inputs()).find(|&i| !plan.is_param_input(i)).unwrap_or(0)
}

fn free_axes(shape: &[i64]) -> Vec<usize> {
    shape.iter().enumerate().filter(|(_, &d)| d < 0).map(|(a, _)| a).collect()
}

/// A Relax VM library: the VM over it on the CPU, and `function`'s parameters; its outputs
/// from one run on zeros when every parameter's shape is fixed.
fn load_vm(exec: Module, function: &str) -> Result<(Session, Signature)> {
    let describe = call(&exec, "describe", &[])?.into_string()?;
    let inputs = vm_params(&describe, function)?;
    let vm = call(&exec, "vm_load_executable", &[])?.into_module()?;
    VmModule::of(&vm)?.initialize(&[cpu()], POOLED)?;
    let session = Session::Vm { vm, function: function.to_string() };
    let outputs = match inputs.iter().all(|t| free_axes(&t.shape).is_empty()) {
        true => vm_outputs(&session, &inputs)?,
        false => Vec::new(),
    };
    Ok((session, Signature { inputs, outputs, max_rows: 0 }))
}

fn call(module: &Module, name: &str, args: &[Value]) -> Result<Value> {
    let f = module
        .get_function(name, false)?
        .ok_or_else(|| Failure::invalid(format!("the `{}` module has no function `{name}`", module.type_key())))?;
    Ok(f.call(args)?)
}

/// `function`'s parameters from the executable's description (JSON).
fn vm_params(describe: &str, function: &str) -> Result<Vec<TensorSpec>> {
    let d: serde_json::Value =
        serde_json::from_str(describe).map_err(|e| Failure::internal(format!("the executable's description: {e}")))?;
    let functions = d["functions"].as_array().cloned().unwrap_or_default();
    let Some(f) = functions.iter().find(|f| f["name"] == function) else {
        let names: Vec<String> = functions.iter().map(|f| f["name"].to_string()).collect();
        return Err(Failure::invalid(format!("no function `{function}` (functions: {})", names.join(", "))));
    };
    let params = f["params"].as_array().cloned().unwrap_or_default();
    params.iter().map(|p| vm_param(p, function)).collect()
}

fn vm_param(p: &serde_json::Value, function: &str) -> Result<TensorSpec> {
    let name = p["name"].as_str().unwrap_or("").to_string();
    let unknown = || Failure::unsupported(format!("parameter `{name}` of `{function}` is not a tensor of known dtype"));
    let dtype = p["dtype"].as_str().and_then(|s| DLDataType::parse(s).ok()).ok_or_else(unknown)?;
    let dims = p["shape"].as_array().ok_or_else(unknown)?;
    let shape = dims.iter().map(|d| d.as_i64().unwrap_or(-1)).collect();
    Ok(TensorSpec { name, dtype, shape })
}

/// The outputs of one run on zeros, named `output_0`, `output_1`, ...
fn vm_outputs(session: &Session, inputs: &[TensorSpec]) -> Result<Vec<TensorSpec>> {
    let Session::Vm { vm, function } = session else { unreachable!("a VM session") };
    let zeros = inputs
        .iter()
        .map(|t| tvm_runtime::runtime::tensor::ndarray::NDArray::empty(&t.shape, t.dtype, cpu()).map(Value::NDArray))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let out = vm_results(VmModule::of(vm)?.call(function, &zeros)?)?;
    Ok(out
        .iter()
        .enumerate()
        .map(|(i, a)| TensorSpec { name: format!("output_{i}"), dtype: a.dtype(), shape: a.shape().to_vec() })
        .collect())
}

/// A VM function's result as arrays: one array, or a tuple of them.
pub fn vm_results(v: Value) -> Result<Vec<NDArray>> {
    match v {
        Value::NDArray(a) => Ok(vec![a]),
        Value::Object(o) => {
            let items = o.downcast::<ArrayObj>().ok_or_else(|| not_arrays("an object that is not a tuple"))?;
            let array = |item: &Option<LegacyRef>| match item {
                Some(obj) => {
                    Value::from_object(obj.get()).into_ndarray().map_err(|_| not_arrays("a tuple of other values"))
                }
                None => Err(not_arrays("a tuple with a NULL item")),
            };
            items.tail().iter().map(array).collect()
        }
        other => Err(not_arrays(other.type_name())),
    }
}

fn not_arrays(what: &str) -> Failure {
    Failure::unsupported(format!("the function returned {what}; the backend serves functions returning tensors"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_axes_are_the_negative_ones() {
        assert_eq!(free_axes(&[-1, 3, -1]), vec![0, 2]);
        assert!(free_axes(&[1, 2]).is_empty());
    }

    #[test]
    fn vm_params_read_the_description() {
        let d =
            r#"{"functions": [{"name": "main", "params": [{"name": "x", "dtype": "float32", "shape": [4, "n"]}]}]}"#;
        let p = vm_params(d, "main").unwrap();
        assert_eq!(
            p,
            vec![TensorSpec { name: "x".into(), dtype: DLDataType::parse("float32").unwrap(), shape: vec![4, -1] }]
        );
        let e = vm_params(d, "other").unwrap_err();
        assert!(e.message.contains("no function `other` (functions: \"main\")"), "{e}");
    }
}
