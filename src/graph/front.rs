//! The one front door to an executor that several callers may reach: [`Front`], exclusive use
//! through [`Front::lock`] (a [`FrontGuard`]), inputs, outputs and nodes resolved by name or
//! index with the same checks and messages everywhere, and tensor descriptions. TVM's module
//! functions (`module.rs`), our C API (`ffi::graph_executor`) and the bucket dispatcher stand on
//! it.

use super::executor::Executor;
use super::frame::Frame;
use super::options::ExecutorOptions;
use super::phases::{Phases, Shared};
use super::plan::Plan;
use super::plan::{Key, TensorInfo};
use super::runner::{OpTiming, Runner, Sequential};
use super::schedule::{runner, Parallelism};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::device::StreamHandle;
use crate::runtime::dlpack::tensor_ref::TensorRef;
use parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
use std::any::{Any, TypeId};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A [`Frame`] shared between callers, used by one at a time, with the [`Runner`] that runs its
/// ops: one after another, or on several lanes (`schedule::InterOp`). `Front<Executor>` is a
/// plain executor; `Front<dyn Frame>` is either kind, as a C handle holds it. Besides the
/// synchronous calls, a plain executor's stages may be queued on device streams (`phases.rs`);
/// every synchronous call first waits for them.
pub struct Front<F: ?Sized + Frame> {
    /// The frame's kind (its type), known without taking the lock.
    kind: TypeId,
    /// One caller at a time (a try-lock), with the bookkeeping of the stages it queued (a plain
    /// executor's; none for other kinds).
    caller: Mutex<Option<Phases>>,
    /// What queued stages share with the callers.
    shared: Arc<Shared<F>>,
}

/// Exclusive use of a front's frame for one synchronous call (see [`Front::lock`]).
pub struct FrontGuard<'a, F: ?Sized> {
    frame: MappedMutexGuard<'a, F>,
    _caller: MutexGuard<'a, Option<Phases>>,
}

impl<F: ?Sized> Deref for FrontGuard<'_, F> {
    type Target = F;
    fn deref(&self) -> &F {
        &self.frame
    }
}

impl<F: ?Sized> DerefMut for FrontGuard<'_, F> {
    fn deref_mut(&mut self) -> &mut F {
        &mut self.frame
    }
}

impl<F: Frame> Front<F> {
    /// A front that runs ops one after another, as TVM does (a bucketed context's buckets each
    /// keep the runner they were made with).
    pub fn new(frame: F) -> Self {
        Self::with(frame, Box::new(Sequential::default()))
    }

    fn with(frame: F, runner: Box<dyn Runner>) -> Self {
        let plain = (&frame as &dyn Any).downcast_ref::<Executor>();
        let phases = plain.map(|e| Phases::new(e.plan().clone()));
        let shared = Arc::new(Shared::new(frame, runner));
        Front { kind: TypeId::of::<F>(), caller: Mutex::new(phases), shared }
    }
}

impl Front<Executor> {
    /// An executor over `plan` that runs as `options` say (their memory plan is the plan's
    /// business: see `GraphExecutorFactory::plan_with` and `memory_plan::parallel_plan`).
    pub fn create(plan: Arc<Plan>, options: &ExecutorOptions) -> Result<Front<Executor>> {
        Self::create_over(Executor::new(plan)?, options)
    }

    /// A front over `exec` that runs as `options` say.
    pub fn create_over(exec: Executor, options: &ExecutorOptions) -> Result<Front<Executor>> {
        let plan = exec.plan().clone();
        let default_intra = crate::runtime::threads::pool::default_num_threads();
        if options.inter_op_threads == 1 && options.intra_op_threads == default_intra {
            return Ok(Front::new(exec));
        }
        let device = plan.devices[0];
        if options.inter_op_threads > 1 && device.device_type != crate::abi::device_type::CPU {
            return Err(Error::unsupported(format!(
                "option `inter_op_threads`: inter-op workers run models on CPU devices only, not on {device}"
            )));
        }
        let parallelism = Parallelism { inter_op: options.inter_op_threads, intra_op: options.intra_op_threads };
        Ok(Front::with(exec, runner(&plan, parallelism)?))
    }
}

/// A front of either kind, as a C handle holds it.
impl<F: Frame> From<Front<F>> for Front<dyn Frame> {
    fn from(f: Front<F>) -> Front<dyn Frame> {
        Front { kind: f.kind, caller: f.caller, shared: f.shared }
    }
}

impl Front<dyn Frame> {
    /// Whether the frame is a `T` (a plain `Executor`, a `BucketContext`).
    pub fn is<T: Frame>(&self) -> bool {
        self.kind == TypeId::of::<T>()
    }

    /// This front, if it is a plain executor's, for the calls only it has; `call` names the call
    /// in the error a bucketed one gives.
    pub fn plain(&self, call: &str) -> Result<&Front<dyn Frame>> {
        if self.is::<Executor>() {
            return Ok(self);
        }
        Err(plain_only(call))
    }

    /// Exclusive use of the frame as the `T` it is (check with [`Front::is`] first), as
    /// [`Front::lock`] gives it.
    pub fn lock_as<T: Frame>(&self) -> Result<FrontGuard<'_, T>> {
        let FrontGuard { frame, _caller } = self.lock()?;
        match MappedMutexGuard::try_map(frame, |f| f.as_any().downcast_mut::<T>()) {
            Ok(frame) => Ok(FrontGuard { frame, _caller }),
            Err(_) => Err(Error::internal("executor is not of the kind asked for")),
        }
    }
}

impl<F: ?Sized + Frame> Front<F> {
    /// Run the frame once with the front's runner.
    pub fn run(&self) -> Result<()> {
        let mut e = self.lock()?;
        e.run_with(self.shared.runner())
    }

    /// Run once timing every op (with the worker that ran it).
    pub fn run_profiled(&self) -> Result<Vec<OpTiming>> {
        let mut e = self.lock()?;
        e.run_profiled_with(self.shared.runner())
    }

    /// Exclusive access for a synchronous call. A call while another thread uses the executor
    /// is an error, not a wait: an executor serves one thread at a time, and blocking would
    /// hide that misuse. Stages queued on streams are waited for first (so the call never races
    /// them, and may change buffer addresses); if one of them failed, that error is returned
    /// (once) instead of access.
    pub fn lock(&self) -> Result<FrontGuard<'_, F>> {
        let mut caller = self.enter()?;
        if let Some(phases) = caller.as_mut() {
            phases.settle()?;
        }
        if let Some(e) = self.shared.take_failure() {
            return Err(e);
        }
        Ok(FrontGuard { frame: MutexGuard::map(self.shared.frame(), |f| f), _caller: caller })
    }

    /// The caller's turn: the caller lock, or the in-use error.
    fn enter(&self) -> Result<MutexGuard<'_, Option<Phases>>> {
        self.caller.try_lock().ok_or_else(in_use)
    }

    /// The caller's turn with the queued stages' bookkeeping (a plain executor's; `call` names
    /// the call in the error another kind gives).
    fn stages(&self, call: &str) -> Result<MappedMutexGuard<'_, Phases>> {
        let caller = self.enter()?;
        MutexGuard::try_map(caller, Option::as_mut).map_err(|_| plain_only(call))
    }
}

/// The error of a call only a plain executor has, made on another kind; `call` names it.
fn plain_only(call: &str) -> Error {
    Error::unsupported(format!(
        "{call} is not supported on a bucketed executor (its buffers change with each request's bucket)"
    ))
}

/// The error of a call while another thread uses the executor (a call never waits for one).
fn in_use() -> Error {
    Error::runtime("graph executor is in use by another thread (use one executor per thread)")
}

/// The asynchronous calls, which only a plain executor has. Streams are of the executor's first
/// device (NULL: its synchronous default stream). Each call returns once its stage is queued;
/// none blocks on the stages already queued, except the first queued write into an input still
/// shared with the plan's weights, which waits for them once to make the input private.
impl<F: ?Sized + Frame> Front<F> {
    /// h2d: copy `src` into input `index` on `stream` (NULL: now).
    ///
    /// # Safety
    /// `src`'s data must stay valid, and unwritten by others, until `stream` has run the copy
    /// (synchronize the stream, an event recorded on it after this call, or the executor).
    pub unsafe fn set_input_async(&self, index: i64, src: TensorRef<'_>, stream: StreamHandle) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.stages("set_input_async")?.set_input(&self.shared, index, src, stream) }
    }

    /// compute: run the graph on `stream` as [`Front::run`] does (NULL: now, on the caller,
    /// returning the run's error). A queued run's error is kept for [`Self::synchronize`].
    pub fn run_async(&self, stream: StreamHandle) -> Result<()> {
        self.stages("run_async")?.run(&self.shared, stream)
    }

    /// d2h: copy output `index` into `out` on `stream` (NULL: now).
    ///
    /// # Safety
    /// `out`'s data must stay valid, and untouched by others, until `stream` has run the copy.
    pub unsafe fn get_output_async(&self, index: i64, out: TensorRef<'_>, stream: StreamHandle) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.stages("get_output_async")?.get_output(&self.shared, index, out, stream) }
    }

    /// Wait for every stage queued so far; the first error a queued stage hit since it was last
    /// reported (here or by a synchronous call), which is then cleared.
    pub fn synchronize(&self) -> Result<()> {
        self.stages("synchronize")?.wait_all()?;
        self.shared.take_failure().map_or(Ok(()), Err)
    }

    /// Wait for every queued stage, even while another thread is inside a call (for freeing).
    pub fn wait_for_stages(&self) {
        // Only a plain executor queues stages; other kinds take no lock here.
        if self.kind != TypeId::of::<Executor>() {
            return;
        }
        if let Some(phases) = self.caller.lock().as_mut() {
            let _ = phases.wait_all();
        }
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
