//! The one front door to an executor that several callers may reach: exclusive use through
//! [`ExecutorFront::lock`], inputs, outputs and nodes resolved by name or index with the same
//! checks and messages everywhere, and tensor descriptions. TVM's module functions
//! (`module.rs`) and our C API (`ffi::graph_executor`) both stand on it; the pipeline, the
//! inter-op scheduler and the bucket dispatcher will too.

use super::executor::Executor;
use super::options::ExecutorOptions;
use super::phases::{FrontCore, Phases};
use super::plan::Plan;
use super::plan::{Key, TensorInfo};
use super::runner::{run_profiled, OpTiming, Runner, Sequential};
use super::schedule::{runner, Parallelism};
use crate::runtime::device::StreamHandle;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::TensorRef;
use parking_lot::{Mutex, MutexGuard};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// An executor shared between callers, used by one at a time, with the [`Runner`] that runs its
/// ops: one after another, or on several lanes (`schedule::InterOp`). Besides the synchronous
/// calls, stages may be queued on device streams (`phases.rs`); every synchronous call first
/// waits for them.
pub struct ExecutorFront {
    /// One caller at a time (a try-lock), with the bookkeeping of the stages it queued.
    pub(super) phases: Mutex<Phases>,
    /// What queued stages share with the callers.
    pub(super) core: Arc<FrontCore>,
}

/// Exclusive use of the executor for one synchronous call (see [`ExecutorFront::lock`]).
pub struct FrontGuard<'a> {
    exec: MutexGuard<'a, Executor>,
    _caller: MutexGuard<'a, Phases>,
}

impl Deref for FrontGuard<'_> {
    type Target = Executor;
    fn deref(&self) -> &Executor {
        &self.exec
    }
}

impl DerefMut for FrontGuard<'_> {
    fn deref_mut(&mut self) -> &mut Executor {
        &mut self.exec
    }
}

impl ExecutorFront {
    /// A front that runs ops one after another, as TVM does.
    pub fn new(exec: Executor) -> Self {
        Self::with(exec, Box::new(Sequential::default()))
    }

    fn with(exec: Executor, runner: Box<dyn Runner>) -> Self {
        let phases = Phases::new(exec.plan().clone());
        let core = FrontCore::new(exec, runner);
        ExecutorFront { phases: Mutex::new(phases), core: Arc::new(core) }
    }

    /// An executor over `plan` that runs as `options` say (their memory plan is the plan's
    /// business: see `GraphExecutorFactory::plan_with` and `memory_plan::parallel_plan`).
    pub fn create(plan: Arc<Plan>, options: &ExecutorOptions) -> Result<ExecutorFront> {
        Self::create_over(Executor::new(plan)?, options)
    }

    /// A front over `exec` that runs as `options` say.
    pub fn create_over(exec: Executor, options: &ExecutorOptions) -> Result<ExecutorFront> {
        let plan = exec.plan().clone();
        let default_intra = crate::runtime::threading::default_num_threads();
        if options.inter_op_threads == 1 && options.intra_op_threads == default_intra {
            return Ok(ExecutorFront::new(exec));
        }
        let parallelism = Parallelism { inter_op: options.inter_op_threads, intra_op: options.intra_op_threads };
        Ok(ExecutorFront::with(exec, runner(&plan, parallelism)?))
    }

    /// Run the graph once with the front's runner.
    pub fn run(&self) -> Result<()> {
        let mut e = self.lock()?;
        self.core.run(&mut e)
    }

    /// Run once timing every op (with the worker that ran it).
    pub fn run_profiled(&self) -> Result<Vec<OpTiming>> {
        let mut e = self.lock()?;
        run_profiled(self.core.runner(), &mut e)
    }

    /// Exclusive access for a synchronous call. A call while another thread uses the executor
    /// is an error, not a wait: an executor serves one thread at a time, and blocking would
    /// hide that misuse. Stages queued on streams are waited for first (so the call never races
    /// them, and may change buffer addresses); if one of them failed, that error is returned
    /// (once) instead of access.
    pub fn lock(&self) -> Result<FrontGuard<'_>> {
        let mut caller = self.enter()?;
        caller.settle()?;
        if let Some(e) = self.core.take_failure() {
            return Err(e);
        }
        Ok(FrontGuard { exec: self.core.exec(), _caller: caller })
    }

    /// The caller's turn: the phases lock, or the in-use error.
    pub(super) fn enter(&self) -> Result<MutexGuard<'_, Phases>> {
        self.phases.try_lock().ok_or_else(in_use)
    }
}

/// The error of a call while another thread uses the executor (a call never waits for one).
pub(crate) fn in_use() -> Error {
    Error::runtime("graph executor is in use by another thread (use one executor per thread)")
}

/// The asynchronous calls. Streams are of the executor's first device (NULL: its synchronous
/// default stream). Each call returns once its stage is queued; none blocks on the stages
/// already queued, except the first queued write into an input still shared with the plan's
/// weights, which waits for them once to make the input private.
impl ExecutorFront {
    /// h2d: copy `src` into input `index` on `stream` (NULL: now).
    ///
    /// # Safety
    /// `src`'s data must stay valid, and unwritten by others, until `stream` has run the copy
    /// (synchronize the stream, an event recorded on it after this call, or the executor).
    pub unsafe fn set_input_async(&self, index: i64, src: TensorRef<'_>, stream: StreamHandle) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.enter()?.set_input(&self.core, index, src, stream) }
    }

    /// compute: run the graph on `stream` as [`ExecutorFront::run`] does (NULL: now, on the
    /// caller, returning the run's error). A queued run's error is kept for [`Self::synchronize`].
    pub fn run_async(&self, stream: StreamHandle) -> Result<()> {
        self.enter()?.run(&self.core, stream)
    }

    /// d2h: copy output `index` into `out` on `stream` (NULL: now).
    ///
    /// # Safety
    /// `out`'s data must stay valid, and untouched by others, until `stream` has run the copy.
    pub unsafe fn get_output_async(&self, index: i64, out: TensorRef<'_>, stream: StreamHandle) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.enter()?.get_output(&self.core, index, out, stream) }
    }

    /// Wait for every stage queued so far; the first error a queued stage hit since it was last
    /// reported (here or by a synchronous call), which is then cleared.
    pub fn synchronize(&self) -> Result<()> {
        self.enter()?.wait_all()?;
        self.core.take_failure().map_or(Ok(()), Err)
    }

    /// Wait for every queued stage, even while another thread is inside a call (for freeing).
    pub fn wait_for_stages(&self) {
        let _ = self.phases.lock().wait_all();
    }
}

/// Checked access, the same for every front end.
impl Executor {
    /// The input named or numbered by `key`; unknown names list the inputs.
    pub fn input(&self, key: Key<'_>) -> Result<usize> {
        self.plan().input_key(key)
    }

    /// The output named (`node` or `node:k`) or numbered by `key`.
    pub fn output(&self, key: Key<'_>) -> Result<usize> {
        self.plan().output_key(key)
    }

    /// The graph node named or numbered by `key` (for debugging a node's output).
    pub fn node(&self, key: Key<'_>) -> Result<usize> {
        self.plan().node_key(key)
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
