//! Relax VM executables (`relax.build` / `tvm.compile` + `export_library`): what `inspect`,
//! `run`, `bench` and `profile` do with them. Through TVM's module functions, as any user of
//! the runtime calls them (`vm_load_executable`, `vm_initialization`, the function by name, the
//! executable's `describe`); `profile` alone builds a session of its own from the VM's public
//! `Session` and `Frame`, to time the kernels. Each command asks [`open`] first; a model that
//! is not a VM executable goes on to the graph path unchanged.

use crate::fail::{Failure, FileContext};
use crate::inputs::{Fill, InputArgs};
use crate::model::{existing_file, load_module, ExecArgs, MemoryPlanArg, ModelArgs};
use crate::tensors::{describe, random_bytes, read_npy, SUPPORTED};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use tvm_runtime::abi::{DLDataType, DLDevice};
use tvm_runtime::graph::runner::OpTiming;
use tvm_runtime::runtime::ndarray::NDArray;
use tvm_runtime::runtime::packed::{Module, PackedFunc, Value};
use tvm_runtime::runtime::registry;
use tvm_runtime::vm::profiler::{timed_session, KernelCall};
use tvm_runtime::vm::session::AllocatorKind;
use tvm_runtime::vm::{ExecutableModule, Frame};

/// Type keys of VM executables: TVM 0.18's and the tvm-ffi releases'.
const EXECUTABLE_KEYS: [&str; 2] = ["relax.Executable", "relax.VMExecutable"];
/// `vm_initialization`'s allocator: TVM's pooled allocator, its default.
const POOLED_ALLOCATOR: i64 = 2;

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

    fn name(&self) -> &str {
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
struct Function {
    name: String,
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

/// A loaded VM executable and the VM over it, initialized on the CPU.
pub struct VmModel {
    pub source: String,
    pub description: Description,
    exec: Module,
    vm: Module,
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
    let cpu = DLDevice::cpu(0);
    let init = [Value::Int(cpu.device_type as i64), Value::Int(cpu.device_id as i64), Value::Int(POOLED_ALLOCATOR)];
    function(&vm, "vm_initialization", path)?.call(&init)?;
    Ok(Some(VmModel { source: path.display().to_string(), description, exec, vm }))
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
    fn function(&self, args: &VmArgs) -> Result<&Function, Failure> {
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
        let values: Vec<Value> = arrays.into_iter().map(Value::NDArray).collect();
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

// --- run ------------------------------------------------------------------------------------

/// `tvm-rt run` on a VM executable: call the function once; print, write and compare every
/// array of its result (named by index: `0`, or a tuple's `0`, `1`, ...).
pub fn run(args: &crate::run::Args, model: &VmModel) -> Result<(), Failure> {
    no_executor_options(&args.exec)?;
    let arrays = model.arrays(&args.vm, &args.inputs, None)?;
    let expected: Vec<NDArray> = args.compares.iter().map(|(_, path)| read_npy(path)).collect::<Result<_, _>>()?;
    let outputs = flatten(model.call(&args.vm, arrays)?()?)?;
    let function = args.vm.name();
    println!("ran {} (function {function})", model.source);
    for (name, out) in &outputs {
        println!("output {name}: {}", crate::run::summary(out)?);
    }
    let named = |name: &str| -> Result<&NDArray, Failure> {
        outputs.iter().find(|(n, _)| n == name).map(|(_, a)| a).ok_or_else(|| {
            let names: Vec<String> = outputs.iter().map(|(n, _)| format!("`{n}`")).collect();
            Failure::usage(format!("`{function}` has no output `{name}` (outputs: {})", names.join(", ")))
        })
    };
    let writes: Vec<(&NDArray, &Path)> =
        args.outputs.iter().map(|(n, p)| Ok((named(n)?, p.as_path()))).collect::<Result<_, Failure>>()?;
    if let Some(dir) = &args.output_dir {
        std::fs::create_dir_all(dir).in_file(dir)?;
        for (name, out) in &outputs {
            let path = dir.join(crate::run::file_name(&format!("{function}_{}", name.replace('.', "_"))));
            crate::tensors::write_npy(&path, out)?;
            println!("wrote output {name} to {}", path.display());
        }
    }
    for (out, path) in writes {
        crate::tensors::write_npy(path, out)?;
        println!("wrote output to {}", path.display());
    }
    let mut failed = Vec::new();
    for ((name, path), want) in args.compares.iter().zip(&expected) {
        if !crate::run::compare(name, named(name)?, want, path, (args.rtol, args.atol))? {
            failed.push(format!("`{name}`"));
        }
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(Failure::mismatch(format!("output {} differs from the expected array", failed.join(", ")))),
    }
}

// --- bench ----------------------------------------------------------------------------------

/// `tvm-rt bench` on a VM executable: whole calls of the function, on the same arrays.
pub fn bench(args: &crate::bench::Args, model: &VmModel) -> Result<(), Failure> {
    no_executor_options(&args.exec)?;
    args.no_pipeline()?;
    let arrays = model.arrays(&args.vm, &args.inputs, Some(Fill::Random))?;
    let call = model.call(&args.vm, arrays)?;
    let (stop, show) = args.stop();
    let (latencies, wall) = crate::bench::measure_executor(args.warmup, stop, show, || call().map(drop))?;
    let executor = format!("cpu; Relax VM, function {}, pooled allocator", args.vm.name());
    crate::bench::report(args, model.source.clone(), executor, latencies, wall)
}

// --- profile ------------------------------------------------------------------------------

/// `tvm-rt profile` on a VM executable: every kernel call of the function timed, over a
/// session of its own whose kernels are wrapped in timers (the builtins and the interpreter's
/// own work are not in the tables); the graph path's tables and trace, a call being an op.
pub fn profile(args: &crate::profile::Args, model: &VmModel) -> Result<(), Failure> {
    no_executor_options(&args.exec)?;
    let name = model.function(&args.vm)?.name.clone();
    let values: Vec<Value> =
        model.arrays(&args.vm, &args.inputs, Some(Fill::Random))?.into_iter().map(Value::NDArray).collect();
    let exec = ExecutableModule::of(&model.exec)?.exec.clone();
    let allocator = AllocatorKind::from_code(POOLED_ALLOCATOR)?;
    let (session, recording) = timed_session(&exec, &model.exec, &[DLDevice::cpu(0)], allocator)?;
    let mut frame = Frame::new(Arc::new(session));
    for _ in 0..args.warmup {
        frame.call(&name, &values)?;
    }
    let mut runs = Vec::with_capacity(args.runs as usize);
    for _ in 0..args.runs {
        recording.lock().restart();
        frame.call(&name, &values)?;
        runs.push(recording.lock().calls.iter().enumerate().map(|(i, c)| op_timing(i, c)).collect());
    }
    let executor = format!("cpu; Relax VM, function {name}, pooled allocator; kernel calls only");
    crate::profile::report(args, model.source.clone(), executor, &runs)
}

/// A kernel call as one op of the graph path's tables (its position in the run as the node id).
fn op_timing(i: usize, c: &KernelCall) -> OpTiming {
    OpTiming {
        node_id: i as u32,
        name: c.name.clone(),
        func_name: c.name.clone(),
        start_ns: c.start_ns,
        duration_ns: c.duration_ns,
        lane: 0,
    }
}
