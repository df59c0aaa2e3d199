//! The graph executor as a TVM module (`type_key` "GraphExecutor"): `set_input`, `run`,
//! `get_output` and the rest of TVM's functions, plus the debug executor's profiling functions,
//! and the globals `tvm.graph_executor.create` / `tvm.graph_executor_debug.create` /
//! `tvm.graph_executor_factory.create`.

use super::executor::{Executor, OpTiming};
use super::factory::GraphExecutorFactory;
use super::json::Graph;
use super::plan::Plan;
use crate::abi::{type_code as tc, DLDevice};
use crate::runtime::container::{map_object, shape_object, string_object, ArrayObj};
use crate::runtime::error::{Error, Result};
use crate::runtime::module::{Module, ModuleNode};
use crate::runtime::ndarray::NDArray;
use crate::runtime::object::ObjPtr;
use crate::runtime::packed::{Args, PackedFunc, Value};
use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard};

/// Module node owning one executor.
pub struct GraphExecutorModule {
    exec: Mutex<Executor>,
}

impl GraphExecutorModule {
    /// Exclusive access; a call while another thread uses the executor is an error, not a wait.
    pub fn lock(&self) -> Result<MutexGuard<'_, Executor>> {
        match self.exec.try_lock() {
            Ok(g) => Ok(g),
            Err(std::sync::TryLockError::Poisoned(p)) => Ok(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => {
                Err(Error::runtime("graph executor is in use by another thread (use one executor per thread)"))
            }
        }
    }
}

/// A new executor module over `plan`.
pub fn executor_module(plan: Arc<Plan>) -> Result<Module> {
    Ok(Module::from_node(GraphExecutorModule { exec: Mutex::new(Executor::new(plan)?) }))
}

fn node_of(m: &Module) -> &GraphExecutorModule {
    m.node().as_any().downcast_ref::<GraphExecutorModule>().expect("graph executor module")
}

/// An input given by name (str) or index (int).
fn input_arg(e: &Executor, args: &Args<'_>, i: usize) -> Result<usize> {
    if args.is_string(i) {
        e.input_index(&args.string(i)?)
    } else {
        let k = args.int(i)?;
        usize::try_from(k).map_err(|_| Error::index(format!("input index {k} is negative")))
    }
}

/// An output given by name (str) or index (int).
fn output_arg(e: &Executor, args: &Args<'_>, i: usize) -> Result<usize> {
    if args.is_string(i) {
        let name = args.string(i)?;
        e.plan().output_index(&name).ok_or_else(|| Error::attribute(format!("graph has no output named `{name}`")))
    } else {
        let k = args.int(i)?;
        usize::try_from(k).map_err(|_| Error::index(format!("output index {k} is negative")))
    }
}

/// A node given by name (str) or index (int).
fn node_arg(e: &Executor, args: &Args<'_>, i: usize) -> Result<usize> {
    let nodes = &e.plan().graph.nodes;
    if args.is_string(i) {
        let name = args.string(i)?;
        nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| Error::attribute(format!("graph has no node named `{name}`")))
    } else {
        let k = args.int(i)?;
        usize::try_from(k)
            .ok()
            .filter(|&k| k < nodes.len())
            .ok_or_else(|| Error::index(format!("node index {k} out of range ({} nodes)", nodes.len())))
    }
}

fn info_map(e: &Executor, items: Vec<(String, usize)>) -> Value {
    let plan = e.plan();
    let shapes = items.iter().map(|(n, eid)| (n.clone(), shape_object(plan.entry_shape(*eid)))).collect();
    let dtypes = items.iter().map(|(n, eid)| (n.clone(), string_object(&plan.entry_dtype(*eid).to_string()))).collect();
    Value::Object(map_object(vec![("shape".into(), map_object(shapes)), ("dtype".into(), map_object(dtypes))]))
}

/// Per-op timings as a Chrome trace (`chrome://tracing` / Perfetto JSON).
pub fn chrome_trace(timings: &[OpTiming]) -> String {
    let events: Vec<serde_json::Value> = timings
        .iter()
        .map(|t| {
            serde_json::json!({
                "name": t.name, "cat": "op", "ph": "X", "pid": 1, "tid": 1,
                "ts": t.start_ns as f64 / 1000.0, "dur": t.duration_ns as f64 / 1000.0,
                "args": {"func_name": t.func_name, "node_id": t.node_id},
            })
        })
        .collect();
    // Written by hand so `traceEvents` comes first, as tools and users expect.
    format!("{{\"traceEvents\":{},\"displayTimeUnit\":\"ns\"}}", serde_json::Value::Array(events))
}

/// A per-op table: node, function, time, share of the total.
pub fn profile_table(timings: &[OpTiming]) -> String {
    let total: u64 = timings.iter().map(|t| t.duration_ns).sum::<u64>().max(1);
    let mut s = format!("{:<6} {:<48} {:>12} {:>7}\n", "node", "name", "time (us)", "%");
    for t in timings {
        s += &format!(
            "{:<6} {:<48} {:>12.3} {:>7.2}\n",
            t.node_id,
            t.name,
            t.duration_ns as f64 / 1000.0,
            100.0 * t.duration_ns as f64 / total as f64
        );
    }
    s += &format!("total {:.3} us over {} ops\n", total as f64 / 1000.0, timings.len());
    s
}

/// `run_individual`: for every node, `repeat` mean seconds per run over `number` runs
/// (0 for input nodes), as TVM's debug executor encodes them: i64 node count, then f64s.
fn run_individual(e: &mut Executor, number: usize, repeat: usize, min_repeat_ms: f64) -> Result<Vec<u8>> {
    let n_nodes = e.plan().graph.nodes.len();
    let mut per_node = vec![vec![0.0f64; repeat]; n_nodes];
    #[allow(clippy::needless_range_loop)]
    for r in 0..repeat {
        let mut number = number.max(1);
        loop {
            let mut sums = vec![0u64; n_nodes];
            let t0 = std::time::Instant::now();
            for _ in 0..number {
                for t in e.run_profiled()? {
                    sums[t.node_id as usize] += t.duration_ns;
                }
            }
            let elapsed_ms = t0.elapsed().as_secs_f64() * 1e3;
            if elapsed_ms >= min_repeat_ms || number >= 1 << 20 {
                for (nid, s) in sums.iter().enumerate() {
                    per_node[nid][r] = *s as f64 / 1e9 / number as f64;
                }
                break;
            }
            number = (number * 2).max(((min_repeat_ms / elapsed_ms.max(1e-3)) * number as f64) as usize + 1);
        }
    }
    let mut out = Vec::with_capacity(8 + n_nodes * repeat * 8);
    out.extend_from_slice(&(n_nodes as i64).to_le_bytes());
    for v in per_node.iter().flatten() {
        out.extend_from_slice(&v.to_le_bytes());
    }
    Ok(out)
}

impl ModuleNode for GraphExecutorModule {
    fn type_key(&self) -> &str {
        "GraphExecutor"
    }

    fn get_function(&self, name: &str, this: &Module) -> Result<Option<PackedFunc>> {
        let m = this.clone();
        let f = move |body: fn(&Module, Args<'_>) -> Result<Value>| PackedFunc::from_typed(move |args| body(&m, args));
        Ok(Some(match name {
            "set_input" => f(|m, args| {
                let mut e = node_of(m).lock()?;
                let i = input_arg(&e, &args, 0)?;
                // SAFETY: a DLTensor argument is valid for the call.
                e.set_input(i, unsafe { &*args.dltensor(1)? })?;
                Ok(Value::Null)
            }),
            "set_input_zero_copy" => f(|m, args| {
                let mut e = node_of(m).lock()?;
                let i = input_arg(&e, &args, 0)?;
                // SAFETY: as above.
                e.set_input_zero_copy(i, unsafe { &*args.dltensor(1)? })?;
                Ok(Value::Null)
            }),
            "set_output_zero_copy" => f(|m, args| {
                let mut e = node_of(m).lock()?;
                let i = output_arg(&e, &args, 0)?;
                // SAFETY: as above.
                e.set_output_zero_copy(i, unsafe { &*args.dltensor(1)? })?;
                Ok(Value::Null)
            }),
            "get_output" => f(|m, args| {
                let e = node_of(m).lock()?;
                let i = output_arg(&e, &args, 0)?;
                if args.len() >= 2 {
                    // SAFETY: as above.
                    e.get_output_into(i, unsafe { &*args.dltensor(1)? })?;
                    Ok(Value::Null)
                } else {
                    Ok(Value::NDArray(e.get_output(i)?))
                }
            }),
            "get_input" => f(|m, args| {
                let e = node_of(m).lock()?;
                let i = input_arg(&e, &args, 0)?;
                Ok(Value::NDArray(e.get_input(i)?))
            }),
            "get_num_outputs" => f(|m, _| Ok(Value::Int(node_of(m).lock()?.plan().num_outputs() as i64))),
            "get_num_inputs" => f(|m, _| Ok(Value::Int(node_of(m).lock()?.plan().num_inputs() as i64))),
            "run" => f(|m, _| {
                node_of(m).lock()?.run()?;
                Ok(Value::Null)
            }),
            "run_from_inputs" => f(|m, args| {
                let mut e = node_of(m).lock()?;
                let dev = DLDevice { device_type: args.int(0)? as i32, device_id: args.int(1)? as i32 };
                if args.len() % 2 != 0 {
                    return Err(Error::value("run_from_inputs expects (dev_type, dev_id, [input, tensor]...)"));
                }
                for k in (2..args.len()).step_by(2) {
                    let i = input_arg(&e, &args, k)?;
                    // SAFETY: as above.
                    e.set_input(i, unsafe { &*args.dltensor(k + 1)? })?;
                }
                e.run()?;
                let mut outs = Vec::new();
                for i in 0..e.plan().num_outputs() {
                    let o = e.get_output(i)?;
                    let copy = NDArray::empty(o.shape(), o.dtype(), dev)?;
                    crate::runtime::ndarray::copy_from_to(&o.dl_tensor, &copy.dl_tensor, std::ptr::null_mut())?;
                    outs.push(copy.to_object_ref());
                }
                Ok(Value::Object(ObjPtr::new(ArrayObj(outs)).to_object_ref()))
            }),
            "load_params" => f(|m, args| {
                node_of(m).lock()?.load_params(args.bytes(0)?)?;
                Ok(Value::Null)
            }),
            "share_params" => f(|m, args| {
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
                let src = other_node.lock()?;
                node_of(m).lock()?.share_params(&src, blob)?;
                Ok(Value::Null)
            }),
            "get_input_index" => f(|m, args| {
                let e = node_of(m).lock()?;
                Ok(Value::Int(e.plan().input_index(&args.string(0)?).map_or(-1, |i| i as i64)))
            }),
            "get_output_index" => f(|m, args| {
                let e = node_of(m).lock()?;
                Ok(Value::Int(e.plan().output_index(&args.string(0)?).map_or(-1, |i| i as i64)))
            }),
            "get_input_info" => f(|m, _| {
                let e = node_of(m).lock()?;
                let items = e
                    .data_inputs()
                    .into_iter()
                    .map(|i| (e.plan().input_name(i).to_string(), e.plan().input_entry(i)))
                    .collect();
                Ok(info_map(&e, items))
            }),
            "get_output_info" => f(|m, _| {
                let e = node_of(m).lock()?;
                let items =
                    (0..e.plan().num_outputs()).map(|i| (e.plan().output_name(i), e.plan().output_entry(i))).collect();
                Ok(info_map(&e, items))
            }),
            "run_individual" => f(|m, args| {
                let mut e = node_of(m).lock()?;
                let number = args.int(0)?.max(1) as usize;
                let repeat = args.int(1)?.max(1) as usize;
                let min_ms = if args.len() > 2 { args.int(2)? as f64 } else { 0.0 };
                Ok(Value::Bytes(run_individual(&mut e, number, repeat, min_ms)?))
            }),
            "profile" => f(|m, _| Ok(Value::Str(profile_table(&node_of(m).lock()?.run_profiled()?)))),
            "profile_chrome_trace" => f(|m, _| Ok(Value::Str(chrome_trace(&node_of(m).lock()?.run_profiled()?)))),
            "debug_get_output" => f(|m, args| {
                let mut e = node_of(m).lock()?;
                let nid = node_arg(&e, &args, 0)?;
                e.run_until_node(nid)?;
                let eid = e.plan().graph.entry_id(nid as u32, 0);
                let arr = e.get_entry(eid)?;
                if args.len() >= 2 {
                    // SAFETY: as above.
                    let out = unsafe { &*args.dltensor(1)? };
                    crate::runtime::ndarray::copy_from_to(&arr.dl_tensor, out, std::ptr::null_mut())?;
                    Ok(Value::Null)
                } else {
                    let copy = NDArray::empty(arr.shape(), arr.dtype(), DLDevice::cpu(0))?;
                    crate::runtime::ndarray::copy_from_to(&arr.dl_tensor, &copy.dl_tensor, std::ptr::null_mut())?;
                    Ok(Value::NDArray(copy))
                }
            }),
            _ => return Ok(None),
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
        (
            "tvm.graph_executor_factory.create",
            PackedFunc::from_typed(|args| {
                if args.len() < 3 || (args.len() - 3) % 2 != 0 {
                    return Err(Error::value(
                        "tvm.graph_executor_factory.create expects (graph_json, lib, module_name, [name, array]...)",
                    ));
                }
                let json = args.string(0)?;
                let lib = args.module(1)?;
                let name = args.string(2)?;
                let mut params = Vec::new();
                for k in (3..args.len()).step_by(2) {
                    params.push((args.string(k)?, args.ndarray(k + 1)?));
                }
                let m = Module::from_node(GraphExecutorFactory::new(json, params, name));
                m.import(&lib)?;
                Ok(Value::Module(m))
            }),
        ),
    ]
}
