//! One model instance's frame over the model's shared session: a graph executor or bucketed
//! context of its own (its activations; the weights are the session's), or, for the VM, the
//! VM's frames (one per calling thread, kept by the VM module).

use crate::error::{Failure, Result};
use crate::model::{Session, TensorSpec};
use tvm_runtime::graph::buckets::BucketContext;
use tvm_runtime::graph::options::ExecutorOptions;
use tvm_runtime::graph::{Front, Key};
use tvm_runtime::runtime::container::ArrayObj;
use tvm_runtime::runtime::ndarray::NDArray;
use tvm_runtime::runtime::object::LegacyRef;
use tvm_runtime::runtime::packed::{Module, Value};
use tvm_runtime::vm::VmModule;

pub enum Frame {
    /// The executor and the indices of the model's inputs in it.
    Graph {
        front: Box<Front<dyn tvm_runtime::graph::Frame>>,
        inputs: Vec<usize>,
    },
    Vm {
        vm: Module,
        function: String,
    },
}

impl Frame {
    /// A frame over `session` for the model's `inputs` (its data inputs, in order).
    pub fn new(session: &Session, inputs: &[TensorSpec], options: &ExecutorOptions) -> Result<Frame> {
        let front: Front<dyn tvm_runtime::graph::Frame> = match session {
            Session::Graph(plan) => Front::create(plan.clone(), options)?.into(),
            Session::Buckets(set) => Front::new(BucketContext::new(set.clone())?).into(),
            Session::Vm { vm, function } => return Ok(Frame::Vm { vm: vm.clone(), function: function.clone() }),
        };
        let inputs = {
            let frame = front.lock()?;
            inputs.iter().map(|t| frame.input(Key::Name(&t.name))).collect::<std::result::Result<_, _>>()?
        };
        Ok(Frame::Graph { front: Box::new(front), inputs })
    }

    /// Run once on `inputs` (the model's, in order): every output, with its true shape.
    pub fn run(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        match self {
            Frame::Graph { front, inputs: indices } => run_graph(front, indices, inputs),
            Frame::Vm { vm, function } => {
                let args: Vec<Value> = inputs.iter().cloned().map(Value::NDArray).collect();
                vm_results(VmModule::of(vm)?.call(function, &args)?)
            }
        }
    }
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
