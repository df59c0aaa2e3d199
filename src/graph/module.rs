//! The graph executor as a TVM module (`type_key` "GraphExecutor"): `set_input`, `run`,
//! `get_output` and the rest of TVM's functions, plus the debug executor's profiling functions,
//! and the globals `tvm.graph_executor.create` / `tvm.graph_executor_debug.create` /
//! `tvm.graph_executor_factory.create`.

use super::executor::Executor;
use super::front::Front;
use super::json::Graph;
use super::plan::Plan;
use super::plan::{Key, TensorInfo};
use super::profile::{chrome_trace, profile_table, report_json, run_individual};
use crate::abi::{type_code as tc, DLDevice};
use crate::runtime::base::error::{count, Error, Result};
use crate::runtime::container::{array_object, map_object, shape_object, string_object};
use crate::runtime::function::packed::{Args, Module, ModuleNode, PackedFunc, Value};
use crate::runtime::module::time_evaluator::{measure, TimingPlan};
use crate::runtime::tensor::ndarray::{copy_from_to, NDArray};
use parking_lot::Mutex;
use std::any::Any;
use std::sync::Arc;

/// Module node owning one executor.
pub struct GraphExecutorModule {
    front: Front<Executor>,
    /// The last node `execute_node` ran up to (TVM's debug executor keeps its place).
    last_executed: Mutex<Option<usize>>,
}

impl GraphExecutorModule {
    /// The executor's front door (exclusive use, checked access).
    pub fn front(&self) -> &Front<Executor> {
        &self.front
    }
}

/// A new executor module over `plan`.
pub fn executor_module(plan: Arc<Plan>) -> Result<Module> {
    let front = Front::new(Executor::new(plan)?);
    Ok(Module::from_node(GraphExecutorModule { front, last_executed: Mutex::new(None) }))
}

fn module_of(m: &Module) -> &GraphExecutorModule {
    m.node().as_any().downcast_ref::<GraphExecutorModule>().expect("graph executor module")
}

fn front_of(m: &Module) -> &Front<Executor> {
    &module_of(m).front
}

/// Argument `i` (a name or an index) resolved by `resolve`: `Executor::input`, `output` or
/// `node`.
fn resolve(e: &Executor, args: &Args<'_>, i: usize, resolve: fn(&Executor, Key<'_>) -> Result<usize>) -> Result<usize> {
    if args.is_string(i) {
        resolve(e, Key::Name(&args.string(i)?))
    } else {
        resolve(e, Key::Index(args.int(i)?))
    }
}

fn info_map(infos: Vec<TensorInfo<'_>>) -> Value {
    let shapes = infos.iter().map(|t| (t.name.clone(), shape_object(t.shape))).collect();
    let dtypes = infos.iter().map(|t| (t.name.clone(), string_object(&t.dtype.to_string()))).collect();
    Value::Object(map_object(vec![("shape".into(), map_object(shapes)), ("dtype".into(), map_object(dtypes))]))
}

/// A copy of `arr` on `dev`, owned by the caller.
fn copy_to_new(arr: &NDArray, dev: DLDevice) -> Result<NDArray> {
    let copy = NDArray::empty(arr.shape(), arr.dtype(), dev)?;
    copy_from_to(arr.tensor(), copy.tensor())?;
    Ok(copy)
}

type Method = fn(&Module, Args<'_>) -> Result<Value>;

/// TVM's graph-executor functions, by name.
const METHODS: &[(&str, Method)] = &[
    ("set_input", set_input),
    ("set_input_zero_copy", set_input_zero_copy),
    ("set_output_zero_copy", set_output_zero_copy),
    ("get_output", get_output),
    ("get_input", get_input),
    ("get_num_outputs", |m, _| Ok(Value::Int(front_of(m).lock()?.plan().num_outputs() as i64))),
    ("get_num_inputs", |m, _| Ok(Value::Int(front_of(m).lock()?.plan().num_inputs() as i64))),
    ("run", |m, _| front_of(m).run().map(|_| Value::Null)),
    ("run_from_inputs", run_from_inputs),
    ("load_params", |m, args| front_of(m).lock()?.load_params(args.bytes(0)?).map(|_| Value::Null)),
    ("share_params", share_params),
    ("get_input_index", |m, args| {
        Ok(Value::Int(front_of(m).lock()?.plan().input_index(&args.string(0)?).map_or(-1, |i| i as i64)))
    }),
    ("get_output_index", |m, args| {
        Ok(Value::Int(front_of(m).lock()?.plan().output_index(&args.string(0)?).map_or(-1, |i| i as i64)))
    }),
    ("get_input_info", |m, _| Ok(info_map(front_of(m).lock()?.data_input_infos()))),
    ("get_output_info", |m, _| Ok(info_map(front_of(m).lock()?.output_infos()))),
    ("run_individual", |m, args| {
        let number = args.int(0)?.max(1) as usize;
        let repeat = args.int(1)?.max(1) as usize;
        let min_ms = if args.len() > 2 { args.int(2)? as f64 } else { 0.0 };
        Ok(Value::Bytes(run_individual(&mut *front_of(m).lock()?, number, repeat, min_ms)?))
    }),
    ("profile", |m, _| Ok(Value::Str(profile_table(&front_of(m).run_profiled()?)))),
    ("profile_chrome_trace", |m, _| Ok(Value::Str(chrome_trace(&front_of(m).run_profiled()?)))),
    ("profile_rpc", |m, _| Ok(Value::Str(report_json(&front_of(m).run_profiled()?)))),
    ("debug_get_output", debug_get_output),
    ("run_individual_node", run_individual_node),
    ("execute_node", execute_node),
    ("get_node_output", get_node_output),
];

fn set_input(m: &Module, args: Args<'_>) -> Result<Value> {
    let mut e = front_of(m).lock()?;
    let i = resolve(&e, &args, 0, Executor::input)?;
    e.set_input(i, args.tensor(1)?)?;
    Ok(Value::Null)
}

fn set_input_zero_copy(m: &Module, args: Args<'_>) -> Result<Value> {
    let mut e = front_of(m).lock()?;
    let i = resolve(&e, &args, 0, Executor::input)?;
    // SAFETY: TVM's contract for `set_input_zero_copy`: the caller keeps the memory alive.
    unsafe { e.set_input_zero_copy(i, args.tensor(1)?)? };
    Ok(Value::Null)
}

fn set_output_zero_copy(m: &Module, args: Args<'_>) -> Result<Value> {
    let mut e = front_of(m).lock()?;
    let i = resolve(&e, &args, 0, Executor::output)?;
    // SAFETY: TVM's contract for `set_output_zero_copy`: the caller keeps the memory alive.
    unsafe { e.set_output_zero_copy(i, args.tensor(1)?)? };
    Ok(Value::Null)
}

fn get_output(m: &Module, args: Args<'_>) -> Result<Value> {
    let e = front_of(m).lock()?;
    let i = resolve(&e, &args, 0, Executor::output)?;
    if args.len() >= 2 {
        e.get_output_into(i, args.tensor(1)?)?;
        Ok(Value::Null)
    } else {
        Ok(Value::NDArray(e.get_output(i)?))
    }
}

fn get_input(m: &Module, args: Args<'_>) -> Result<Value> {
    let e = front_of(m).lock()?;
    let i = resolve(&e, &args, 0, Executor::input)?;
    Ok(Value::NDArray(e.get_input(i)?))
}

/// `(dev_type, dev_id, [input, tensor]...)`: set the inputs, run, return copies of the outputs.
fn run_from_inputs(m: &Module, args: Args<'_>) -> Result<Value> {
    let mut e = front_of(m).lock()?;
    let dev = DLDevice { device_type: args.int(0)? as i32, device_id: args.int(1)? as i32 };
    if args.len() % 2 != 0 {
        return Err(Error::value("run_from_inputs expects (dev_type, dev_id, [input, tensor]...)"));
    }
    for k in (2..args.len()).step_by(2) {
        let i = resolve(&e, &args, k, Executor::input)?;
        e.set_input(i, args.tensor(k + 1)?)?;
    }
    e.run()?;
    let outs = (0..e.plan().num_outputs())
        .map(|i| Ok(copy_to_new(&e.get_output(i)?, dev)?.to_object_ref()))
        .collect::<Result<Vec<_>>>()?;
    Ok(Value::Object(array_object(outs)))
}

fn share_params(m: &Module, args: Args<'_>) -> Result<Value> {
    let other = args.module(0)?;
    let other_node = other
        .node()
        .as_any()
        .downcast_ref::<GraphExecutorModule>()
        .ok_or_else(|| Error::type_error("share_params: argument 0 is not a graph executor"))?;
    if Module::ptr_eq(m, &other) {
        return Ok(Value::Null);
    }
    let blob = args.bytes(1)?;
    let src = other_node.front.lock()?;
    front_of(m).lock()?.share_params(&src, blob)?;
    Ok(Value::Null)
}

/// Run up to a node and return (or copy into argument 1) its first output.
fn debug_get_output(m: &Module, args: Args<'_>) -> Result<Value> {
    let mut e = front_of(m).lock()?;
    let nid = resolve(&e, &args, 0, Executor::node)?;
    e.run_until_node(nid)?;
    let eid = e.plan().graph.entry_id(nid as u32, 0);
    let arr = e.get_entry(eid)?;
    if args.len() >= 2 {
        copy_from_to(arr.tensor(), args.tensor(1)?)?;
        Ok(Value::Null)
    } else {
        Ok(Value::NDArray(copy_to_new(&arr, DLDevice::cpu(0))?))
    }
}

/// The op that runs node `nid`, if it is an op node.
fn op_of_node(e: &Executor, nid: usize) -> Option<usize> {
    (0..e.num_ops()).find(|&i| e.op_node_id(i) as usize == nid)
}

/// Argument `i` as a count at least `min` (TVM checks these before timing).
fn count_arg(args: &Args<'_>, i: usize, what: &str, min: i64) -> Result<u64> {
    let v = args.int(i)?;
    if v < min {
        return Err(Error::value(format!("run_individual_node: {what} is {v}, less than {min}")));
    }
    Ok(v as u64)
}

/// `(node, number, repeat, min_repeat_ms, limit_zero_time_iterations, cooldown_interval_ms,
/// repeats_to_cooldown)`: `repeat` seconds-per-run of one node's op alone, as doubles (zeros
/// for a node that runs nothing).
fn run_individual_node(m: &Module, args: Args<'_>) -> Result<Value> {
    let e = front_of(m).lock()?;
    let nid = resolve(&e, &args, 0, Executor::node)?;
    let plan = TimingPlan {
        dev: e.plan().devices[0],
        number: count_arg(&args, 1, "number", 1)?,
        repeat: count_arg(&args, 2, "repeat", 1)?,
        min_repeat_ms: count_arg(&args, 3, "min_repeat_ms", 0)? as f64,
        limit_zero_time_iterations: count_arg(&args, 4, "limit_zero_time_iterations", 0)?,
        cooldown_interval_ms: count_arg(&args, 5, "cooldown_interval_ms", 0)?,
        repeats_to_cooldown: count_arg(&args, 6, "repeats_to_cooldown", 1)?,
    };
    let secs = match op_of_node(&e, nid) {
        Some(op) => measure(&plan, &mut || e.run_op(op), &|| Ok(()), &|| Ok(()))?,
        None => vec![0.0; plan.repeat as usize],
    };
    Ok(Value::Bytes(secs.iter().flat_map(|x| x.to_ne_bytes()).collect()))
}

/// `execute_node(node)`: run the ops after the last executed node up to `node` (from the first
/// op when `node` comes before it), as TVM's debug executor steps through a graph.
fn execute_node(m: &Module, args: Args<'_>) -> Result<Value> {
    let e = front_of(m).lock()?;
    let nid = resolve(&e, &args, 0, Executor::node)?;
    let mut last = module_of(m).last_executed.lock();
    let first = match *last {
        Some(l) if l == nid => return Ok(Value::Null),
        Some(l) if l < nid => l + 1,
        _ => 0,
    };
    for op in (0..e.num_ops()).filter(|&i| (first..=nid).contains(&(e.op_node_id(i) as usize))) {
        e.run_op(op)?;
    }
    *last = Some(nid);
    Ok(Value::Null)
}

/// `get_node_output(node, k)`: a CPU copy of output `k` of the node `execute_node` ran last.
fn get_node_output(m: &Module, args: Args<'_>) -> Result<Value> {
    let e = front_of(m).lock()?;
    let nid = resolve(&e, &args, 0, Executor::node)?;
    let last = *module_of(m).last_executed.lock();
    if last != Some(nid) {
        return Err(Error::value(format!(
            "get_node_output: node {nid} is not the last one execute_node ran ({})",
            last.map_or("none yet".to_string(), |l| l.to_string())
        )));
    }
    let k = args.int(1)?;
    let graph = &e.plan().graph;
    let outputs = graph.num_outputs_of(nid) as usize;
    let k = usize::try_from(k).ok().filter(|&k| k < outputs).ok_or_else(|| {
        Error::index(format!("get_node_output: node {nid} has {}, asked for output {k}", count(outputs, "output")))
    })?;
    let arr = e.get_entry(graph.entry_id(nid as u32, k as u32))?;
    Ok(Value::NDArray(copy_to_new(&arr, DLDevice::cpu(0))?))
}

impl ModuleNode for GraphExecutorModule {
    fn type_key(&self) -> &str {
        "GraphExecutor"
    }

    fn get_function(&self, name: &str, this: &Module) -> Result<Option<PackedFunc>> {
        Ok(METHODS.iter().find(|(n, _)| *n == name).map(|&(_, method)| {
            let m = this.clone();
            PackedFunc::from_typed(move |args| method(&m, args))
        }))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Devices given as int pairs after `from` (TVM's `tvm.graph_executor.create` convention).
fn device_pairs(args: &Args<'_>, from: usize) -> Result<Vec<DLDevice>> {
    if args.len() < from + 2 || (args.len() - from) % 2 != 0 {
        return Err(Error::value("expected devices as (device_type, device_id) int pairs"));
    }
    (from..args.len())
        .step_by(2)
        .map(|i| Ok(DLDevice { device_type: args.int(i)? as i32, device_id: args.int(i + 1)? as i32 }))
        .collect()
}

fn create_from_args(args: Args<'_>) -> Result<Value> {
    if args.len() < 4 {
        return Err(Error::value(format!(
            "tvm.graph_executor.create expects at least 4 arguments, got {}",
            args.len()
        )));
    }
    let json = args.string(0)?;
    let lib = args.module(1)?;
    let from = if args.code(2)? == tc::PACKED_FUNC_HANDLE { 3 } else { 2 };
    let devices = device_pairs(&args, from)?;
    let plan = Plan::new(Graph::parse(&json)?, lib, &devices)?;
    Ok(Value::Module(executor_module(Arc::new(plan))?))
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        ("tvm.graph_executor.create", PackedFunc::from_typed(create_from_args)),
        ("tvm.graph_executor_debug.create", PackedFunc::from_typed(create_from_args)),
    ]
}
