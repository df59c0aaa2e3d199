//! `GraphExecutorFactory`: the module `export_library` packs with graph JSON, params and a
//! module name. Calling the function named after the module (usually `default`) with devices
//! creates an executor; all executors of one device list share one plan and one copy of weights.

use super::json::Graph;
use super::memory_plan::build_plan;
use super::module::executor_module;
use super::options::MemoryPlan;
use super::plan::Plan;
use crate::abi::DLDevice;
use crate::runtime::base::byteio::{Input, Reader, Writer};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::map_object;
use crate::runtime::function::packed::{Args, Module, ModuleNode, PackedFunc, Value};
use crate::runtime::tensor::ndarray::NDArray;
use crate::runtime::tensor::params::{read_named_records, write_ndarray, MIN_RECORD_BYTES};
use parking_lot::Mutex;
use std::any::Any;
use std::sync::Arc;

/// What makes plans differ: the devices and the storage plan.
type PlanKey = (Vec<DLDevice>, MemoryPlan);

pub struct GraphExecutorFactory {
    pub graph_json: String,
    pub params: Vec<(String, NDArray)>,
    pub module_name: String,
    /// Plans built so far, by device list and storage plan; executors with the same key share
    /// one, and every plan shares the factory's weight arrays.
    plans: Mutex<Vec<(PlanKey, Arc<Plan>)>>,
}

impl GraphExecutorFactory {
    pub fn new(graph_json: String, params: Vec<(String, NDArray)>, module_name: String) -> Self {
        GraphExecutorFactory { graph_json, params, module_name, plans: Mutex::new(Vec::new()) }
    }

    /// The factory that module `m` is; a type error naming `m`'s type for any other module.
    pub fn of(m: &Module) -> Result<&GraphExecutorFactory> {
        m.node().as_any().downcast_ref::<GraphExecutorFactory>().ok_or_else(|| {
            Error::type_error(format!("module of type `{}` is not a GraphExecutorFactory", m.type_key()))
        })
    }

    /// The shared plan for `devices` (built on first use). `this` supplies the kernels: the
    /// factory's first import.
    pub fn plan(&self, this: &Module, devices: &[DLDevice]) -> Result<Arc<Plan>> {
        self.plan_with(this, devices, MemoryPlan::Tvm)
    }

    /// The shared plan for `devices` with the given storage plan (built on first use).
    pub fn plan_with(&self, this: &Module, devices: &[DLDevice], memory: MemoryPlan) -> Result<Arc<Plan>> {
        let key = (devices.to_vec(), memory);
        let mut plans = self.plans.lock();
        if let Some((_, p)) = plans.iter().find(|(k, _)| *k == key) {
            return Ok(p.clone());
        }
        let lib = this
            .imports()
            .into_iter()
            .next()
            .ok_or_else(|| Error::value("GraphExecutorFactory has no imported kernel module"))?;
        let mut plan = build_plan(Graph::parse(&self.graph_json)?, lib, devices, memory)?;
        plan.set_params(&self.params)?;
        let plan = Arc::new(plan);
        plans.push((key, plan.clone()));
        Ok(plan)
    }

    /// Serialize as the blob payload TVM writes.
    pub fn save_binary(&self) -> Result<Vec<u8>> {
        let mut w = Writer::new();
        w.string(&self.graph_json);
        w.u64(self.params.len() as u64);
        let names: Vec<&str> = self.params.iter().map(|(n, _)| n.as_str()).collect();
        w.strings(&names);
        for (name, a) in &self.params {
            write_ndarray(&mut w, a.tensor()).map_err(|e| e.context(format!("param `{name}`")))?;
        }
        w.string(&self.module_name);
        Ok(w.into_bytes())
    }
}

/// Blob loader for `GraphExecutorFactory` (and the legacy `GraphRuntimeFactory`).
pub(crate) fn load_binary(r: &mut Reader<'_>) -> Result<Module> {
    let graph_json = r.string("graph JSON")?;
    let n = r.count("param count", MIN_RECORD_BYTES)?;
    let names = r.strings("param names")?;
    let params = read_named_records(r, names, n, "param")?;
    let module_name = r.string("module name")?;
    Ok(Module::from_node(GraphExecutorFactory::new(graph_json, params, module_name)))
}

fn devices_from_args(args: &Args<'_>, from: usize) -> Result<Vec<DLDevice>> {
    (from..args.len()).map(|i| args.device(i)).collect()
}

impl ModuleNode for GraphExecutorFactory {
    fn type_key(&self) -> &str {
        "GraphExecutorFactory"
    }

    fn get_function(&self, name: &str, this: &Module) -> Result<Option<PackedFunc>> {
        let this2 = this.clone();
        Ok(Some(match name {
            n if n == self.module_name => PackedFunc::from_typed(move |args| {
                let devices = devices_from_args(&args, 0)?;
                let f = GraphExecutorFactory::of(&this2)?;
                let plan = f.plan(&this2, &devices)?;
                Ok(Value::Module(executor_module(plan)?))
            }),
            "get_graph_json" => {
                let json = self.graph_json.clone();
                PackedFunc::from_typed(move |_| Ok(Value::Str(json.clone())))
            }
            "get_graph_params" => {
                let entries: Vec<_> = self.params.iter().map(|(k, a)| (k.clone(), a.to_object_ref())).collect();
                PackedFunc::from_typed(move |_| Ok(Value::Object(map_object(entries.clone()))))
            }
            "remove_params" => PackedFunc::from_typed(move |_| {
                let f = GraphExecutorFactory::of(&this2)?;
                let m = Module::from_node(GraphExecutorFactory::new(
                    f.graph_json.clone(),
                    Vec::new(),
                    f.module_name.clone(),
                ));
                for imp in this2.imports() {
                    m.import(&imp)?;
                }
                Ok(Value::Module(m))
            }),
            "debug_create" => PackedFunc::from_typed(move |args| {
                let f = GraphExecutorFactory::of(&this2)?;
                let name = args.string(0)?;
                if name != f.module_name {
                    return Err(Error::value(format!(
                        "debug_create: module name `{name}` differs from `{}`",
                        f.module_name
                    )));
                }
                let devices = devices_from_args(&args, 1)?;
                Ok(Value::Module(executor_module(f.plan(&this2, &devices)?)?))
            }),
            _ => return Ok(None),
        }))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// TVM's global that makes a factory from its parts (as `export_library` would pack them).
pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![(
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
    )]
}
