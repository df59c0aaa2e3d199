//! One model instance's frame over the model's shared session: a graph executor or bucketed
//! context of its own (its activations; the weights are the session's), a request pipeline over
//! the session's plan (parameter `core_groups`), or, for the VM, the VM's frames (one per calling
//! thread, kept by the VM module). A pinned instance's kernels run on its own pinned pool.

use crate::error::{Failure, Result};
use crate::model::{vm_results, Session, TensorSpec};
use crate::threads::InstanceThreads;
use std::sync::Arc;
use tvm_runtime::graph::buckets::BucketContext;
use tvm_runtime::graph::pipeline::Pipeline;
use tvm_runtime::graph::{Front, Key};
use tvm_runtime::runtime::function::packed::{Module, Value};
use tvm_runtime::runtime::tensor::ndarray::NDArray;
use tvm_runtime::runtime::threads::pool::{PoolGuard, ThreadPool};
use tvm_runtime::vm::VmModule;

pub struct Frame {
    kind: Kind,
    /// The pool the kernels run on when the instance is pinned.
    pool: Option<Arc<ThreadPool>>,
}

enum Kind {
    /// The executor and the indices of the model's inputs in it.
    Graph {
        front: Box<Front<dyn tvm_runtime::graph::Frame>>,
        inputs: Vec<usize>,
    },
    Pipeline(Pipeline),
    Vm {
        vm: Module,
        function: String,
    },
}

impl Frame {
    /// A frame over `session` for the model's `inputs` (its data inputs, in order).
    pub fn new(session: &Session, inputs: &[TensorSpec], threads: InstanceThreads) -> Result<Frame> {
        let kind = kind(session, inputs, &threads)?;
        Ok(Frame { kind, pool: threads.pool })
    }

    /// Run once on `inputs` (the model's, in order): every output, with its true shape.
    pub fn run(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let _pinned = self.pool.clone().map(PoolGuard::install);
        match &self.kind {
            Kind::Graph { front, inputs: indices } => run_graph(front, indices, inputs),
            Kind::Pipeline(p) => crate::rows::run_rows(p, inputs),
            Kind::Vm { vm, function } => {
                let args: Vec<Value> = inputs.iter().cloned().map(Value::NDArray).collect();
                vm_results(VmModule::of(vm)?.call(function, &args)?)
            }
        }
    }
}

fn kind(session: &Session, inputs: &[TensorSpec], threads: &InstanceThreads) -> Result<Kind> {
    let front: Front<dyn tvm_runtime::graph::Frame> = match (session, &threads.pipeline) {
        (Session::Graph(plan), Some(options)) => return Ok(Kind::Pipeline(Pipeline::new(plan.clone(), options)?)),
        (_, Some(_)) => return Err(pipeline_needs_a_graph()),
        (Session::Graph(plan), None) => Front::create(plan.clone(), &threads.executor)?.into(),
        (Session::Buckets(set), None) => Front::new(BucketContext::new(set.clone())?).into(),
        (Session::Vm { vm, function }, None) => return Ok(Kind::Vm { vm: vm.clone(), function: function.clone() }),
    };
    let inputs = {
        let frame = front.lock()?;
        inputs.iter().map(|t| frame.input(Key::Name(&t.name))).collect::<std::result::Result<_, _>>()?
    };
    Ok(Kind::Graph { front: Box::new(front), inputs })
}

/// The load error for `core_groups` on a model the pipeline does not run.
pub fn pipeline_needs_a_graph() -> Failure {
    Failure::invalid(
        "parameter `core_groups`: the request pipeline runs plain graph models (an export_library .so or \
         the legacy trio), not bucket manifests or Relax VM libraries",
    )
}

/// Set the inputs (a refusal is the request's fault: a bad argument), run, read the outputs.
fn run_graph(
    front: &Front<dyn tvm_runtime::graph::Frame>,
    indices: &[usize],
    inputs: &[NDArray],
) -> Result<Vec<NDArray>> {
    {
        let mut frame = front.lock()?;
        for (&i, a) in indices.iter().zip(inputs) {
            frame.set_input(i, a.tensor()).map_err(|e| Failure::invalid(e.to_string()))?;
        }
    }
    front.run()?;
    let frame = front.lock()?;
    (0..frame.num_outputs())
        .map(|o| {
            let info = frame.output_info(o)?;
            let out = NDArray::empty(info.shape, info.dtype, crate::model::cpu())?;
            frame.get_output_into(o, out.tensor())?;
            Ok(out)
        })
        .collect()
}
