//! The one front door to an executor that several callers may reach: exclusive use through
//! [`ExecutorFront::lock`], inputs, outputs and nodes resolved by name or index with the same
//! checks and messages everywhere, and tensor descriptions. TVM's module functions
//! (`module.rs`) and our C API (`ffi::graph_executor`) both stand on it; the pipeline, the
//! inter-op scheduler and the bucket dispatcher will too.

use super::executor::Executor;
use super::options::ExecutorOptions;
use super::plan::Plan;
use super::profile::OpTiming;
use super::schedule::{ParallelRunner, Parallelism};
use crate::abi::DLDataType;
use crate::runtime::error::{Error, Result};
use std::sync::Arc;
use std::sync::{Mutex, MutexGuard, TryLockError};

/// An executor shared between callers, used by one at a time, with the way it runs its ops:
/// one after another, or on several workers ([`ParallelRunner`]).
pub struct ExecutorFront {
    exec: Mutex<Executor>,
    runner: Option<ParallelRunner>,
}

impl ExecutorFront {
    /// A front that runs ops one after another, as TVM does.
    pub fn new(exec: Executor) -> Self {
        ExecutorFront { exec: Mutex::new(exec), runner: None }
    }

    /// A front that runs independent ops in parallel.
    pub fn with_runner(exec: Executor, runner: ParallelRunner) -> Self {
        ExecutorFront { exec: Mutex::new(exec), runner: Some(runner) }
    }

    /// An executor over `plan` that runs as `options` say (their memory plan is the plan's
    /// business: see `GraphExecutorFactory::plan_with` and `memory_plan::parallel_plan`).
    pub fn create(plan: Arc<Plan>, options: &ExecutorOptions) -> Result<ExecutorFront> {
        let exec = Executor::new(plan.clone())?;
        let default_intra = crate::runtime::threading::default_num_threads();
        if options.inter_op_threads == 1 && options.intra_op_threads == default_intra {
            return Ok(ExecutorFront::new(exec));
        }
        let parallelism = Parallelism { inter_op: options.inter_op_threads, intra_op: options.intra_op_threads };
        Ok(ExecutorFront::with_runner(exec, ParallelRunner::new(&plan, parallelism)))
    }

    /// The parallel runner, if this front has one.
    pub fn runner(&self) -> Option<&ParallelRunner> {
        self.runner.as_ref()
    }

    /// Run the graph once, on the workers when there is a runner.
    pub fn run(&self) -> Result<()> {
        let mut e = self.lock()?;
        match &self.runner {
            Some(r) => r.run(&mut e),
            None => e.run(),
        }
    }

    /// Run once timing every op (with the worker that ran it).
    pub fn run_profiled(&self) -> Result<Vec<OpTiming>> {
        let mut e = self.lock()?;
        match &self.runner {
            Some(r) => r.run_profiled(&mut e),
            None => e.run_profiled(),
        }
    }

    /// Exclusive access. A call while another thread uses the executor is an error, not a wait:
    /// an executor serves one thread at a time, and blocking would hide that misuse.
    pub fn lock(&self) -> Result<MutexGuard<'_, Executor>> {
        match self.exec.try_lock() {
            Ok(g) => Ok(g),
            // A panic inside a call is reported by that call; the executor's state is still whole
            // (every write is a full tensor copy), so later calls may go on.
            Err(TryLockError::Poisoned(p)) => Ok(p.into_inner()),
            Err(TryLockError::WouldBlock) => {
                Err(Error::runtime("graph executor is in use by another thread (use one executor per thread)"))
            }
        }
    }
}

/// How a caller names an input, output or node.
#[derive(Clone, Copy, Debug)]
pub enum Key<'a> {
    Name(&'a str),
    Index(i64),
}

/// What a caller may know about an input or output tensor. Borrowed from the plan.
#[derive(Clone, Debug)]
pub struct TensorInfo<'a> {
    /// Input node name, or output name (`node`, or `node:k` for output k > 0 of a node).
    pub name: String,
    pub shape: &'a [i64],
    pub dtype: DLDataType,
    /// Bytes of the tensor's data.
    pub nbytes: usize,
    /// The input is a weight (a param of the plan, or loaded by `load_params`).
    pub is_param: bool,
}

fn index_in_range(index: i64, n: usize, what: &str, plural: &str) -> Result<usize> {
    let i = usize::try_from(index).map_err(|_| Error::index(format!("{what} index {index} is negative")))?;
    if i >= n {
        return Err(Error::index(format!("{what} index {i} out of range (the graph has {n} {plural})")));
    }
    Ok(i)
}

/// Checked access, the same for every front end.
impl Executor {
    /// The input named or numbered by `key`; unknown names list the inputs.
    pub fn input(&self, key: Key<'_>) -> Result<usize> {
        match key {
            Key::Name(name) => self.input_index(name),
            Key::Index(i) => index_in_range(i, self.plan().num_inputs(), "input", "inputs"),
        }
    }

    /// The output named (`node` or `node:k`) or numbered by `key`.
    pub fn output(&self, key: Key<'_>) -> Result<usize> {
        match key {
            Key::Name(name) => self
                .plan()
                .output_index(name)
                .ok_or_else(|| Error::attribute(format!("graph has no output named `{name}`"))),
            Key::Index(i) => index_in_range(i, self.plan().num_outputs(), "output", "outputs"),
        }
    }

    /// The graph node named or numbered by `key` (for debugging a node's output).
    pub fn node(&self, key: Key<'_>) -> Result<usize> {
        let nodes = &self.plan().graph.nodes;
        match key {
            Key::Name(name) => nodes
                .iter()
                .position(|n| n.name == name)
                .ok_or_else(|| Error::attribute(format!("graph has no node named `{name}`"))),
            Key::Index(k) => usize::try_from(k)
                .ok()
                .filter(|&k| k < nodes.len())
                .ok_or_else(|| Error::index(format!("node index {k} out of range ({} nodes)", nodes.len()))),
        }
    }

    /// Name, shape, dtype and size of input `index` (from [`Executor::input`]), and whether it
    /// is a weight.
    pub fn input_info(&self, index: usize) -> Result<TensorInfo<'_>> {
        let i = self.input(Key::Index(index as i64))?;
        let is_param = self.plan().is_param_input(i) || self.is_loaded_param(i);
        Ok(self.entry_info(self.plan().input_name(i).to_string(), self.plan().input_entry(i), is_param))
    }

    /// Name, shape, dtype and size of output `index`.
    pub fn output_info(&self, index: usize) -> Result<TensorInfo<'_>> {
        let i = self.output(Key::Index(index as i64))?;
        Ok(self.entry_info(self.plan().output_name(i), self.plan().output_entry(i), false))
    }

    /// Descriptions of the inputs a user feeds (not weights), in input order.
    pub fn data_input_infos(&self) -> Vec<TensorInfo<'_>> {
        self.data_inputs().into_iter().filter_map(|i| self.input_info(i).ok()).collect()
    }

    /// Descriptions of every output, in output order.
    pub fn output_infos(&self) -> Vec<TensorInfo<'_>> {
        (0..self.plan().num_outputs()).filter_map(|i| self.output_info(i).ok()).collect()
    }

    fn entry_info(&self, name: String, eid: usize, is_param: bool) -> TensorInfo<'_> {
        let plan = self.plan();
        TensorInfo {
            name,
            shape: plan.entry_shape(eid),
            dtype: plan.entry_dtype(eid),
            nbytes: plan.entry_bytes(eid),
            is_param,
        }
    }
}
