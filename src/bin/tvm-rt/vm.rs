//! Relax VM executables (`relax.build` / `tvm.compile` + `export_library`): what `inspect`,
//! `run`, `bench` and `profile` do with them. Through TVM's module functions, as any user of
//! the runtime calls them (`vm_load_executable`, `vm_initialization`, the function by name, the
//! executable's `describe`; `profile` alone builds a session of its own from the VM's public
//! `Session` and `Frame`, to time the kernels). Each command asks [`open`] first and runs what it
//! opened itself; a model that is not a VM executable goes on to the graph path unchanged.

use crate::fail::{Failure, FileContext};
use crate::inputs::{Fill, InputArgs};
use crate::model::{existing_file, load_module, ExecArgs, MemoryPlanArg, ModelArgs};
use crate::tensors::{describe, random_bytes, read_npy, SUPPORTED};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;
use tvm_runtime::abi::{DLDataType, DLDevice};
use tvm_runtime::runtime::function::packed::{Module, PackedFunc, Value};
use tvm_runtime::runtime::function::registry;
use tvm_runtime::runtime::tensor::ndarray::NDArray;

/// Type keys of VM executables: TVM 0.18's and the tvm-ffi releases'.
const EXECUTABLE_KEYS: [&str; 2] = ["relax.Executable", "relax.VMExecutable"];
/// `vm_initialization`'s allocator: TVM's pooled allocator, its default.
pub const POOLED_ALLOCATOR: i64 = 2;

/// What the commands that run a model take for a VM executable.
#[derive(clap::Args, Debug)]
pub struct VmArgs {
    /// Relax VM executables: the function to run [default: main]
    #[arg(long, value_name = "NAME")]
    pub function: Option<String>,
}

impl VmArgs {
    /// For a graph model: `--function` has no meaning there.
    pub fn graph_only(&self) -> Result<(), Failure> {
        match &self.function {
            Some(f) => Err(Failure::usage(format!(
                "--function {f}: only Relax VM executables have functions to choose; this is a graph model"
            ))),
            None => Ok(()),
        }
    }

    pub fn name(&self) -> &str {
        self.function.as_deref().unwrap_or("main")
    }
}

/// The executable's own account of itself (its `describe` function).
#[derive(Deserialize, Serialize)]
pub struct Description {
    format: String,
    version: String,
    functions: Vec<Function>,
    constants: usize,
}

#[derive(Deserialize, Serialize)]
pub struct Function {
    pub name: String,
    kind: String,
    params: Vec<Param>,
    registers: usize,
    instructions: usize,
}

#[derive(Deserialize, Serialize)]
struct Param {
    name: String,
    dtype: Option<String>,
    shape: Option<Vec<Dim>>,
}

/// A dimension: a number, or a symbol the caller's arrays decide (`n`, or `?` when unnamed).
#[derive(Deserialize, Serialize, Clone)]
#[serde(untagged)]
enum Dim {
    Fixed(i64),
    Symbolic(String),
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Symbolic(s) => f.write_str(s),
        }
    }
}

/// A loaded VM executable and the VM over it, initialized on the model's device.
pub struct VmModel {
    pub source: String,
    pub description: Description,
    pub exec: Module,
    vm: Module,
    /// Where the kernels run; the function's tensors are copied there.
    device: DLDevice,
}

/// The model as a VM executable, or None when it is anything else (left to the graph path,
/// which also reports a file it cannot load).
pub fn open(model: &ModelArgs) -> Result<Option<VmModel>, Failure> {
    let Some(path) = model.model.as_deref() else { return Ok(None) };
    let is_library = path.extension().map_or(true, |e| e != "json" && e != "buckets");
    if !is_library || existing_file(path).is_err() {
        return Ok(None);
    }
    let Ok(exec) = load_module(path) else { return Ok(None) };
    if !EXECUTABLE_KEYS.contains(&exec.type_key()) {
        return Ok(None);
    }
    let text = function(&exec, "describe", path)?.call(&[])?.into_string()?;
    let description = serde_json::from_str(&text).in_file(path)?;
    let vm = function(&exec, "vm_load_executable", path)?.call(&[])?.into_module()?;
    // The device runs the kernels; the host (last) holds the shape heap, as TVM's Python sets up.
    let triple = |d: DLDevice| [d.device_type as i64, d.device_id as i64, POOLED_ALLOCATOR].map(Value::Int);
    let mut init = triple(model.device).to_vec();
    if model.device != DLDevice::cpu(0) {
        init.extend(triple(DLDevice::cpu(0)));
    }
    function(&vm, "vm_initialization", path)?.call(&init)?;
    Ok(Some(VmModel { source: path.display().to_string(), description, exec, vm, device: model.device }))
}

fn function(module: &Module, name: &str, path: &Path) -> Result<PackedFunc, Failure> {
    module
        .get_function(name, false)?
        .ok_or_else(|| Failure::file(path, format!("the `{}` module has no function `{name}`", module.type_key())))
}

/// The graph executor's options do not apply to the VM: refuse any but the defaults.
pub fn no_executor_options(exec: &ExecArgs) -> Result<(), Failure> {
    let defaults = exec.inter_op_threads == 1 && exec.intra_op_threads.is_none();
    match defaults && exec.memory_plan == MemoryPlanArg::Tvm {
        true => Ok(()),
        false => Err(Failure::usage(
            "--inter-op-threads, --intra-op-threads and --memory-plan are graph executor options; \
             a Relax VM executable takes none of them",
        )),
    }
}

// --- inspect --------------------------------------------------------------------------------

/// `tvm-rt inspect` on a VM executable: its functions and their parameters.
pub fn inspect(model: &VmModel, json: bool) -> Result<(), Failure> {
    let d = &model.description;
    if json {
        let report = serde_json::json!({"model": model.source, "relax_vm": d});
        println!("{}", serde_json::to_string_pretty(&report).expect("a report serializes"));
        return Ok(());
    }
    println!("model: {}", model.source);
    println!(
        "Relax VM executable ({}, version {}): {} functions, {} constants",
        d.format,
        d.version,
        d.functions.len(),
        d.constants
    );
    for f in &d.functions {
        println!("\nfunction {} ({}; {} registers, {} instructions)", f.name, f.kind, f.registers, f.instructions);
        let rows: Vec<Vec<String>> = f
            .params
            .iter()
            .map(|p| vec![p.name.clone(), p.dtype.clone().unwrap_or("?".into()), shape_text(p)])
            .collect();
        match rows.is_empty() {
            true => println!("  no parameters"),
            false => print!("{}", crate::table::render(&["param", "dtype", "shape"], &rows)),
        }
    }
    Ok(())
}

fn shape_text(p: &Param) -> String {
    match &p.shape {
        Some(dims) => format!("[{}]", dims.iter().map(Dim::to_string).collect::<Vec<_>>().join(", ")),
        None => "?".to_string(),
    }
}

// --- inputs ---------------------------------------------------------------------------------

impl VmModel {
    pub fn function(&self, args: &VmArgs) -> Result<&Function, Failure> {
        let name = args.name();
        self.description.functions.iter().find(|f| f.name == name).ok_or_else(|| {
            let names: Vec<String> = self.description.functions.iter().map(|f| format!("`{}`", f.name)).collect();
            Failure::usage(format!("{}: no function `{name}` (functions: {})", self.source, names.join(", ")))
        })
    }

    /// One array per parameter of the chosen function: from `--input` files, else filled.
    pub fn arrays(
        &self,
        args: &VmArgs,
        inputs: &InputArgs,
        default_fill: Option<Fill>,
    ) -> Result<Vec<NDArray>, Failure> {
        let f = self.function(args)?;
        check_names(f, inputs)?;
        let mut rng = StdRng::seed_from_u64(inputs.seed);
        let fill = inputs.fill.or(default_fill);
        f.params
            .iter()
            .map(|p| match (inputs.inputs.iter().find(|(n, _)| *n == p.name), fill) {
                (Some((_, path)), _) => from_file(f, p, path),
                (None, Some(fill)) => filled(f, p, fill, &mut rng),
                (None, None) => Err(Failure::usage(format!(
                    "missing input `{}` of `{}` ({}): give --input {}=FILE.npy, or --fill random|zeros",
                    p.name,
                    f.name,
                    param_text(p),
                    p.name
                ))),
            })
            .collect()
    }

    /// A call of the chosen function on `arrays`, to repeat (bench).
    pub fn call(
        &self,
        args: &VmArgs,
        arrays: Vec<NDArray>,
    ) -> Result<impl Fn() -> Result<Value, Failure> + '_, Failure> {
        let f = self.function(args)?;
        let func = self.vm.get_function(&f.name, false)?.ok_or_else(|| {
            Failure::runtime(format!("the VM has no function `{}` although the executable lists it", f.name))
        })?;
        let on_device = |a: NDArray| crate::tensors::copy_to(a, self.device).map(Value::NDArray);
        let values: Vec<Value> = arrays.into_iter().map(on_device).collect::<Result<_, _>>()?;
        Ok(move || func.call(&values).map_err(Failure::from))
    }
}

fn param_text(p: &Param) -> String {
    format!("{} {}", p.dtype.as_deref().unwrap_or("?"), shape_text(p))
}

fn check_names(f: &Function, inputs: &InputArgs) -> Result<(), Failure> {
    for (k, (name, path)) in inputs.inputs.iter().enumerate() {
        if !f.params.iter().any(|p| p.name == *name) {
            let names: Vec<String> = f.params.iter().map(|p| format!("`{}`", p.name)).collect();
            return Err(Failure::usage(format!(
                "--input {name}={}: function `{}` has no parameter named `{name}` (parameters: {})",
                path.display(),
                f.name,
                names.join(", ")
            )));
        }
        if inputs.inputs[..k].iter().any(|(n, _)| n == name) {
            return Err(Failure::usage(format!("--input {name}: given twice")));
        }
    }
    Ok(())
}

fn dtype_of(p: &Param) -> Option<DLDataType> {
    p.dtype.as_deref().and_then(|d| DLDataType::parse(d).ok())
}

/// Whether `shape` fits the parameter's: same rank, equal fixed dimensions.
fn fits(p: &Param, shape: &[i64]) -> bool {
    let Some(dims) = &p.shape else { return true };
    dims.len() == shape.len() && dims.iter().zip(shape).all(|(d, &s)| !matches!(d, Dim::Fixed(n) if *n != s))
}

fn from_file(f: &Function, p: &Param, path: &Path) -> Result<NDArray, Failure> {
    let array = read_npy(path)?;
    let dtype_ok = dtype_of(p).map_or(true, |d| d == array.dtype());
    if !dtype_ok || !fits(p, array.shape()) {
        return Err(Failure::file(
            path,
            format!(
                "input `{}` of `{}` is {}, the file holds {}",
                p.name,
                f.name,
                param_text(p),
                describe(array.dtype(), array.shape())
            ),
        ));
    }
    Ok(array)
}

fn filled(f: &Function, p: &Param, fill: Fill, rng: &mut StdRng) -> Result<NDArray, Failure> {
    let fixed: Option<Vec<i64>> = p
        .shape
        .as_ref()
        .and_then(|dims| dims.iter().map(|d| if let Dim::Fixed(n) = d { Some(*n) } else { None }).collect());
    let (Some(shape), Some(dtype)) = (fixed, dtype_of(p)) else {
        return Err(Failure::usage(format!(
            "input `{}` of `{}` is {}, which has no fixed shape to fill: give --input {}=FILE.npy",
            p.name,
            f.name,
            param_text(p),
            p.name
        )));
    };
    let array = NDArray::empty(&shape, dtype, DLDevice::cpu(0))?;
    let n = shape.iter().product::<i64>().max(0) as usize;
    let bytes = match fill {
        Fill::Zeros => vec![0u8; array.nbytes()],
        Fill::Random => random_bytes(dtype, n, rng).ok_or_else(|| {
            Failure::usage(format!(
                "input `{}` is {dtype}, which --fill random cannot make (it makes {SUPPORTED}): give --input or --fill zeros",
                p.name
            ))
        })?,
    };
    array.copy_from_bytes(&bytes)?;
    Ok(array)
}

// --- results --------------------------------------------------------------------------------

/// A result as (index, array) pairs: one array is `0`; a tuple's items are `0`, `1`, ...;
/// nested tuples `1.0`, `1.1`, ...
pub fn flatten(result: Value) -> Result<Vec<(String, NDArray)>, Failure> {
    let mut out = Vec::new();
    collect(result, None, &mut out)?;
    Ok(out)
}

fn collect(value: Value, index: Option<String>, out: &mut Vec<(String, NDArray)>) -> Result<(), Failure> {
    match value {
        Value::NDArray(a) => out.push((index.unwrap_or_else(|| "0".into()), a)),
        Value::Object(o) => {
            let array = Value::Object(o);
            let size = registry::require("runtime.ArraySize")?.call(std::slice::from_ref(&array))?.as_int()?;
            let get = registry::require("runtime.ArrayGetItem")?;
            for k in 0..size {
                let item = get.call(&[array.clone(), Value::Int(k)])?;
                let at = index.as_ref().map_or(k.to_string(), |i| format!("{i}.{k}"));
                collect(item, Some(at), out)?;
            }
        }
        Value::Null => {}
        other => {
            return Err(Failure::runtime(format!("the function returned a {}, not arrays", other.type_name())));
        }
    }
    Ok(())
}
