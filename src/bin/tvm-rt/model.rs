//! Loading a model, in either of TVM's deployment forms, into the runtime's shared plan, and
//! the executor options every command that runs it takes.

use crate::fail::{Failure, FileContext};
use clap::ValueEnum;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tvm_runtime::abi::DLDevice;
use tvm_runtime::graph::buckets::manifest::load_manifest;
use tvm_runtime::graph::buckets::BucketSet;
use tvm_runtime::graph::factory::GraphExecutorFactory;
use tvm_runtime::graph::memory_plan::build_plan;
use tvm_runtime::graph::options::{BucketOptions, ExecutorOptions, MemoryPlan};
use tvm_runtime::graph::{Executor, Front, Graph, Plan};
use tvm_runtime::runtime::function::packed::Module;
use tvm_runtime::runtime::tensor::params::load_params_file;

/// Which model: an `export_library` .so, or graph JSON + kernel library + params.
#[derive(clap::Args, Debug)]
pub struct ModelArgs {
    /// An export_library .so (a GraphExecutorFactory module with its kernels); for inspect and run,
    /// also a bucket manifest (`.buckets`: one version's .so per line)
    #[arg(value_name = "MODEL.so", required_unless_present = "graph")]
    pub model: Option<PathBuf>,
    /// Graph JSON, instead of MODEL.so (with --lib, and --params if the model has weights)
    #[arg(long, value_name = "GRAPH.json", requires = "lib", conflicts_with = "model")]
    pub graph: Option<PathBuf>,
    /// Kernel library for --graph
    #[arg(long, value_name = "KERNELS.so", requires = "graph")]
    pub lib: Option<PathBuf>,
    /// Weights for --graph, in TVM's params format
    #[arg(long, value_name = "FILE.params", requires = "graph")]
    pub params: Option<PathBuf>,
    /// The device the model's kernels run on: cpu, or opencl (KIND or KIND:ID; inputs and outputs
    /// stay on the host and are copied)
    #[arg(long, value_name = "KIND[:ID]", default_value = "cpu", value_parser = DLDevice::parse)]
    pub device: DLDevice,
}

/// A loaded model: its plan (graph, kernels, storage, weights) and how to name it.
pub struct Model {
    pub plan: Arc<Plan>,
    pub source: String,
}

impl ModelArgs {
    /// Load the model with the given storage plan.
    pub fn load(&self, memory: MemoryPlan) -> Result<Model, Failure> {
        match (&self.model, &self.graph, &self.lib) {
            (Some(so), _, _) => {
                Ok(Model { plan: load_factory(so, memory, self.device)?, source: so.display().to_string() })
            }
            (None, Some(graph), Some(lib)) => {
                let plan = load_graph(graph, lib, self.params.as_deref(), (memory, self.device))?;
                let mut source = format!("{} + {}", graph.display(), lib.display());
                if let Some(p) = &self.params {
                    source += &format!(" + {}", p.display());
                }
                Ok(Model { plan, source })
            }
            _ => Err(Failure::usage("give MODEL.so, or --graph GRAPH.json --lib KERNELS.so [--params FILE]")),
        }
    }
}

pub fn existing_file(path: &Path) -> Result<&str, Failure> {
    if path.is_dir() {
        return Err(Failure::file(path, "is a directory, not a file"));
    }
    if !path.is_file() {
        return Err(Failure::file(path, "no such file"));
    }
    path.to_str().ok_or_else(|| Failure::file(path, "the path is not valid UTF-8"))
}

/// A path typed on the command line, as the loader must see it: `model.so` becomes
/// `./model.so`, since dlopen looks a name without '/' up in the library search path, not in
/// the current directory (and a manifest's entries are relative to the manifest's folder).
fn as_typed(path: &Path) -> PathBuf {
    if path.is_relative() && path.components().count() == 1 {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    }
}

pub fn load_module(path: &Path) -> Result<Module, Failure> {
    existing_file(path)?;
    // UTF-8: checked by existing_file.
    Module::load_from_file(&as_typed(path).to_string_lossy(), "so").in_file(path)
}

/// A `.json` file given where a library goes: graph JSON gets the arguments that take it;
/// other JSON is not called a graph.
fn json_instead_of_library(path: &Path) -> Failure {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return Failure::file(path, e),
    };
    if let Err(e) = serde_json::from_str::<serde_json::Value>(&text) {
        return Failure::file(path, format!("is not a shared library, and not valid JSON either ({e})"));
    }
    match Graph::parse(&text) {
        Ok(_) => Failure::file(path, "is graph JSON: give --graph GRAPH.json --lib KERNELS.so [--params FILE]"),
        Err(e) => {
            let reason = e.detail().strip_prefix("graph JSON: ").unwrap_or(e.detail());
            Failure::file(
                path,
                format!("is a JSON file, but not a TVM graph ({reason}); MODEL.so is an export_library .so"),
            )
        }
    }
}

/// Whether `path` names a bucket manifest (the versions of one model compiled at several shapes).
pub fn is_manifest(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "buckets")
}

/// The buckets of the versions a manifest lists, as a bucketed executor loads them, running
/// with `executor` options on `device`.
pub fn load_buckets(manifest: &Path, executor: ExecutorOptions, device: DLDevice) -> Result<Arc<BucketSet>, Failure> {
    existing_file(manifest)?;
    let versions = load_manifest(&as_typed(manifest)).in_file(manifest)?;
    let mut options = BucketOptions::parse(None).map_err(Failure::usage)?;
    options.executor = executor;
    BucketSet::from_factories(&versions, &[device], options).in_file(manifest)
}

/// The plan of an `export_library` .so: its factory module builds it.
fn load_factory(so: &Path, memory: MemoryPlan, device: DLDevice) -> Result<Arc<Plan>, Failure> {
    if so.extension().is_some_and(|e| e == "json") {
        existing_file(so)?;
        return Err(json_instead_of_library(so));
    }
    if is_manifest(so) {
        return Err(Failure::file(
            so,
            "is a bucket manifest, which `tvm-rt inspect` and `tvm-rt run` take; this command takes one version's .so",
        ));
    }
    let module = load_module(so)?;
    let factory = GraphExecutorFactory::of(&module).map_err(|_| {
        Failure::file(
            so,
            format!(
                "holds a `{}` module, not a GraphExecutorFactory (an export_library .so); \
                 for a kernel library, give --graph GRAPH.json --lib {} [--params FILE]",
                module.type_key(),
                so.display()
            ),
        )
    })?;
    factory.plan_with(&module, &[device], memory).in_file(so)
}

/// The plan of graph JSON over a kernel library, with weights from a params file.
fn load_graph(
    graph: &Path,
    lib: &Path,
    params: Option<&Path>,
    (memory, device): (MemoryPlan, DLDevice),
) -> Result<Arc<Plan>, Failure> {
    let json = std::fs::read_to_string(graph).in_file(graph)?;
    let parsed = Graph::parse(&json).in_file(graph)?;
    let module = load_module(lib)?;
    let mut plan = build_plan(parsed, module, &[device], memory)
        .map_err(|e| Failure::usage(format!("{} with {}: {e}", graph.display(), lib.display())))?;
    if let Some(path) = params {
        existing_file(path)?;
        let weights = load_params_file(path).in_file(path)?;
        plan.set_params(&weights).in_file(path)?;
    }
    Ok(Arc::new(plan))
}

/// The executor's storage plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MemoryPlanArg {
    /// The plan TVM compiled in (fewest bytes)
    Tvm,
    /// Buffers shared only between ops ordered by data, so branches can overlap
    Parallel,
}

/// How an executor runs: `TVMGraphExecutorCreate*WithOptions`' options.
#[derive(clap::Args, Debug)]
pub struct ExecArgs {
    /// Workers running independent ops at once (1: one op at a time, as TVM does)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub inter_op_threads: usize,
    /// Threads each kernel's parallel loops use [default: the cores divided among the workers]
    #[arg(long, value_name = "N")]
    pub intra_op_threads: Option<usize>,
    /// Storage plan
    #[arg(long, value_enum, default_value_t = MemoryPlanArg::Tvm)]
    pub memory_plan: MemoryPlanArg,
}

impl MemoryPlanArg {
    pub fn plan(self) -> MemoryPlan {
        match self {
            MemoryPlanArg::Tvm => MemoryPlan::Tvm,
            MemoryPlanArg::Parallel => MemoryPlan::Parallel,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            MemoryPlanArg::Tvm => "tvm",
            MemoryPlanArg::Parallel => "parallel",
        }
    }
}

impl ExecArgs {
    pub fn memory_plan(&self) -> MemoryPlan {
        self.memory_plan.plan()
    }

    /// The options, checked by the runtime's own parser (the same messages as the C API's).
    pub fn options(&self) -> Result<ExecutorOptions, Failure> {
        let mut text = format!("inter_op_threads={}", self.inter_op_threads);
        if let Some(n) = self.intra_op_threads {
            text += &format!(",intra_op_threads={n}");
        }
        text += &format!(",memory_plan={}", self.memory_plan.name());
        ExecutorOptions::parse(Some(&text)).map_err(Failure::usage)
    }

    /// An executor over `model` that runs as these options say.
    pub fn executor(&self, model: &Model) -> Result<Front<Executor>, Failure> {
        Ok(Front::create(model.plan.clone(), &self.options()?)?)
    }
}

/// One line saying how an executor runs.
pub fn describe(options: &ExecutorOptions) -> String {
    let memory = match options.memory_plan {
        MemoryPlan::Tvm => "tvm",
        MemoryPlan::Parallel => "parallel",
    };
    format!(
        "cpu; inter-op workers: {}; intra-op threads: {}; memory plan: {memory}",
        options.inter_op_threads, options.intra_op_threads
    )
}
