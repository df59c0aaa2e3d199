//! The executor's phases as asynchronous stages: copy an input in (h2d), run the graph
//! (compute), copy an output out (d2h), each queued on a stream of the executor's device (its
//! first device), so the stages of successive requests overlap across streams while the host
//! goes on.
//!
//! **Ordering.** The executor orders its own stages on its buffers, across streams, without
//! blocking the host. A buffer is the storage of an input, or the activations (every storage id
//! no input uses, outputs included). Per buffer it keeps the event of the last stage that wrote
//! it and those of the stages that read it since; a new stage makes its stream wait
//! (`stream_wait_event`) for the events it conflicts with (read after write, write after read,
//! write after write), queues its work, then records a fresh event on its stream. `set_input`
//! writes its input; `run` reads every input and writes the activations (and any input whose
//! storage the graph reuses for computed entries); `get_output` reads its output's buffer. So a
//! run waits for the copies into its inputs, for the previous run and for the copies out of the
//! previous outputs, and a copy into an input waits for the runs reading it.
//!
//! **Addresses.** The copies take the executor's entry tensors as they are at enqueue time.
//! They move only in synchronous calls, which wait for every queued stage first
//! ([`Front::lock`]); the addresses kept here are forgotten then and read again by the
//! next stage queued. An input still backed by the plan's shared weights is made private before
//! its first queued write, after waiting on the host for the queued stages (once per input).
//!
//! **Errors.** Bad arguments are errors of the enqueuing call. A run that fails on its stream
//! keeps its error (the first one) in the front until a caller is told: [`synchronize`], or the
//! next synchronous call, which had to wait for that run anyway.
//!
//! [`synchronize`]: super::front::Front::synchronize
//! [`Front::lock`]: super::front::Front::lock

use super::executor::Executor;
use super::frame::Frame;
use super::plan::index_in_range;
use super::plan::Plan;
use super::runner::Runner;
use crate::abi::{DLDevice, DLTensor};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::device::{device_api, DeviceApi, DeviceHandle, HostTask, StreamHandle};
use crate::runtime::dlpack::tensor_ref::TensorRef;
use crate::runtime::tensor::ndarray::copy_from_to_on;
use parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// An event recorded on a stage's stream after the stage's work; freed with the last holder.
struct Mark {
    event: DeviceHandle,
    /// The stream's handle as a number: compared, never used as a stream.
    stream: usize,
}

/// The stages that used one buffer and may still be pending.
#[derive(Default)]
struct BufferUse {
    writer: Option<Arc<Mark>>,
    /// At most one per stream: a later mark on a stream implies the earlier ones.
    readers: Vec<Arc<Mark>>,
}

/// The marks of every pending stage, by buffer.
struct Tracker {
    device: DLDevice,
    buffers: Vec<BufferUse>,
    /// Whether any stage was queued since the last wait (so a synchronous call on an executor
    /// never used asynchronously walks no buffers).
    queued: bool,
}

impl Tracker {
    /// The marks a stage on `stream` reading `reads` and writing `writes` must wait for (marks
    /// on `stream` itself are passed in order anyway).
    fn conflicts(&self, stream: StreamHandle, reads: &[usize], writes: &[usize]) -> Vec<Arc<Mark>> {
        let mut waits: Vec<Arc<Mark>> = Vec::new();
        let written = reads.iter().chain(writes).filter_map(|&b| self.buffers[b].writer.as_ref());
        let read = writes.iter().flat_map(|&b| &self.buffers[b].readers);
        for m in written.chain(read) {
            let same_stream = !stream.is_null() && m.stream == stream as usize;
            if !same_stream && !waits.iter().any(|w| Arc::ptr_eq(w, m)) {
                waits.push(m.clone());
            }
        }
        waits
    }

    /// Record that the stage marked by `mark` read `reads` and wrote `writes`.
    fn note(&mut self, mark: &Arc<Mark>, reads: &[usize], writes: &[usize]) {
        for &b in reads {
            let readers = &mut self.buffers[b].readers;
            readers.retain(|m| m.stream != mark.stream);
            readers.push(mark.clone());
        }
        for &b in writes {
            self.buffers[b] = BufferUse { writer: Some(mark.clone()), readers: Vec::new() };
        }
        self.queued = true;
    }

    /// Queue a stage on `stream`: its waits, `work` (which queues the stage's work on `stream`),
    /// then its mark.
    fn enqueue(
        &mut self,
        stream: StreamHandle,
        reads: &[usize],
        writes: &[usize],
        work: impl FnOnce(&'static dyn DeviceApi, DLDevice) -> Result<()>,
    ) -> Result<()> {
        let (dev, api) = (self.device, device_api(self.device.device_type)?);
        let mark = Arc::new(Mark { event: DeviceHandle::event(dev)?, stream: stream as usize });
        for m in self.conflicts(stream, reads, writes) {
            api.stream_wait_event(dev, stream, m.event.raw())?;
        }
        work(api, dev)?;
        if let Err(e) = api.record_event(dev, mark.event.raw(), stream) {
            // The work is queued but cannot be tracked: it must be done before this returns.
            api.stream_sync(dev, stream)?;
            return Err(e);
        }
        self.note(&mark, reads, writes);
        Ok(())
    }

    /// Wait on the host for every stage queued so far, then forget them.
    fn wait_all(&mut self) -> Result<()> {
        if !self.queued {
            return Ok(());
        }
        for b in &self.buffers {
            for m in b.writer.iter().chain(&b.readers) {
                m.event.synchronize()?;
            }
        }
        self.buffers.iter_mut().for_each(|b| *b = BufferUse::default());
        self.queued = false;
        Ok(())
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        // Queued copies use the executor's storage (and the caller's memory): they must be done
        // before it goes.
        let _ = self.wait_all();
    }
}

/// Which buffer each stage uses, from the plan.
struct Layout {
    plan: Arc<Plan>,
    input_buffer: Vec<usize>,
    output_buffer: Vec<usize>,
    run_reads: Vec<usize>,
    run_writes: Vec<usize>,
}

impl Layout {
    /// Buffers `0..k` are the inputs' storage ids (in order of first use), buffer `k` the
    /// activations. Returns the layout and the buffer count.
    fn new(plan: Arc<Plan>) -> (Layout, usize) {
        let sid_of = |eid: usize| plan.graph.attrs.storage_id[eid] as usize;
        let mut input_sids: Vec<usize> = Vec::new();
        let input_buffer: Vec<usize> = (0..plan.num_inputs())
            .map(|i| {
                let sid = sid_of(plan.input_entry(i));
                input_sids.iter().position(|&s| s == sid).unwrap_or_else(|| {
                    input_sids.push(sid);
                    input_sids.len() - 1
                })
            })
            .collect();
        let activations = input_sids.len();
        let output_buffer = (0..plan.num_outputs())
            .map(|j| input_sids.iter().position(|&s| s == sid_of(plan.output_entry(j))).unwrap_or(activations))
            .collect();
        let reused = (0..activations).filter(|&b| !plan.storage[input_sids[b]].inputs_only);
        let run_writes = std::iter::once(activations).chain(reused).collect();
        let layout = Layout { input_buffer, output_buffer, run_reads: (0..activations).collect(), run_writes, plan };
        (layout, activations + 1)
    }
}

/// The executor's entry addresses as last read (forgotten by every synchronous call).
struct Addresses {
    inputs: Vec<usize>,
    outputs: Vec<usize>,
    /// Per input: still backed by the plan's shared weights.
    on_weights: Vec<bool>,
}

impl Addresses {
    fn of(e: &super::Executor) -> Addresses {
        let plan = e.plan();
        let sid_of = |eid: usize| plan.graph.attrs.storage_id[eid] as usize;
        let inputs = (0..plan.num_inputs()).map(|i| plan.input_entry(i));
        Addresses {
            inputs: inputs.clone().map(|eid| e.entry_data(eid) as usize).collect(),
            outputs: (0..plan.num_outputs()).map(|j| e.entry_data(plan.output_entry(j)) as usize).collect(),
            on_weights: inputs.map(|eid| e.is_shared_weight(sid_of(eid))).collect(),
        }
    }
}

/// The asynchronous side of a plain executor's `Front`: its pending stages and what they need.
/// Held under the front's caller lock.
pub(crate) struct Phases {
    layout: Layout,
    tracker: Tracker,
    addresses: Option<Addresses>,
}

/// Where a queued run reports its failure: the front (queued) or the enqueuing call (NULL
/// stream, run at once).
type FailureSlot = Option<Arc<Mutex<Option<Error>>>>;

/// What a front's callers share with the runs it queued on streams: the frame, its runner and
/// the first error a queued run hit.
pub(crate) struct Shared<F: ?Sized> {
    runner: Box<dyn Runner>,
    /// The first error a queued stage hit, kept until a caller is told.
    failure: Mutex<Option<Error>>,
    /// Whether `failure` holds one (so a synchronous call looks without locking).
    failed: AtomicBool,
    /// Last, so an `Arc<Shared<Executor>>` coerces to an `Arc<Shared<dyn Frame>>`.
    frame: Mutex<F>,
}

impl<F> Shared<F> {
    pub(super) fn new(frame: F, runner: Box<dyn Runner>) -> Shared<F> {
        Shared { runner, failure: Mutex::new(None), failed: AtomicBool::new(false), frame: Mutex::new(frame) }
    }
}

impl<F: ?Sized + Frame> Shared<F> {
    /// The frame. Callers hold the front's caller lock and have waited for every queued stage
    /// first, and a queued run takes it only while it runs, so this never waits long.
    pub(super) fn frame(&self) -> MutexGuard<'_, F> {
        // A panic inside a call is reported by that call; the frame's state is still whole
        // (every write is a full tensor copy), so later calls may go on.
        self.frame.lock()
    }

    /// The plain executor the stages are queued for (only a plain executor's front has them).
    fn exec(&self) -> Result<MappedMutexGuard<'_, Executor>> {
        MutexGuard::try_map(self.frame(), |f| f.as_any().downcast_mut::<Executor>())
            .map_err(|_| Error::internal("stages queued on a front that is not a plain executor's"))
    }

    /// The front's runner.
    pub(super) fn runner(&self) -> &dyn Runner {
        &*self.runner
    }

    /// Keep `e` unless an earlier failure is still unreported.
    pub(super) fn keep_failure(&self, e: Error) {
        let mut failure = self.failure.lock();
        failure.get_or_insert(e);
        self.failed.store(true, Ordering::Release);
    }

    /// The kept failure, cleared. Callers have waited for the stages that could keep one, so
    /// the flag they see is current.
    pub(super) fn take_failure(&self) -> Option<Error> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        let mut failure = self.failure.lock();
        self.failed.store(false, Ordering::Release);
        failure.take()
    }
}

impl Phases {
    pub(crate) fn new(plan: Arc<Plan>) -> Phases {
        let device = plan.devices[0];
        let (layout, n_buffers) = Layout::new(plan);
        let buffers = (0..n_buffers).map(|_| BufferUse::default()).collect();
        Phases { layout, tracker: Tracker { device, buffers, queued: false }, addresses: None }
    }

    /// Wait on the host for every stage queued so far.
    pub(super) fn wait_all(&mut self) -> Result<()> {
        self.tracker.wait_all()
    }

    /// Before a synchronous call: wait for every queued stage, and forget the addresses (the
    /// call may move buffers).
    pub(super) fn settle(&mut self) -> Result<()> {
        self.tracker.wait_all()?;
        self.addresses = None;
        Ok(())
    }

    /// The executor's current addresses (read under the executor's lock when not known).
    fn addresses<F: ?Sized + Frame>(&mut self, shared: &Shared<F>) -> Result<&Addresses> {
        if self.addresses.is_none() {
            // Addresses are known whenever a stage is pending; wait all the same, to be sure no
            // queued run holds the executor.
            self.tracker.wait_all()?;
            self.addresses = Some(Addresses::of(&*shared.exec()?));
        }
        Ok(self.addresses.as_ref().expect("just set"))
    }

    /// Input `i`'s storage, made private first if it is still the plan's shared weights.
    fn writable_input<F: ?Sized + Frame>(&mut self, shared: &Shared<F>, i: usize) -> Result<usize> {
        if self.addresses(shared)?.on_weights[i] {
            // Making it private repoints the executor's tensors, which a pending run reads:
            // wait for every queued stage (this happens once per input).
            self.tracker.wait_all()?;
            let mut e = shared.exec()?;
            let sid = self.layout.plan.graph.attrs.storage_id[self.layout.plan.input_entry(i)] as usize;
            e.make_private(sid)?;
            self.addresses = Some(Addresses::of(&e));
        }
        Ok(self.addresses(shared)?.inputs[i])
    }

    fn check_stream(&self, stream: StreamHandle) -> Result<()> {
        let dev = self.tracker.device;
        device_api(dev.device_type)?.stream_query(dev, stream).map(drop).map_err(|e| e.context("stream"))
    }

    /// Entry `eid`'s tensor over `data` (shape and dtype from the plan).
    fn entry_tensor(&self, eid: usize, data: usize) -> DLTensor {
        self.layout.plan.entry_tensor(eid, data as *mut c_void)
    }

    /// h2d: queue a copy of `src` into input `index` on `stream`.
    ///
    /// # Safety
    /// `src`'s data must stay valid, and unwritten by others, until `stream` has run the copy.
    pub(super) unsafe fn set_input<F: ?Sized + Frame>(
        &mut self,
        shared: &Shared<F>,
        index: i64,
        src: TensorRef<'_>,
        stream: StreamHandle,
    ) -> Result<()> {
        let plan = self.layout.plan.clone();
        let i = index_in_range(index, plan.num_inputs(), "input")?;
        // Named only for an error: this is on every request's path.
        let (eid, what) = (plan.input_entry(i), || format!("set_input_async `{}`", plan.input_name(i)));
        plan.check_caller_tensor(eid, src, &what)?;
        self.check_stream(stream).map_err(|e| e.context(what()))?;
        let data = self.writable_input(shared, i)?;
        let dst = self.entry_tensor(eid, data);
        let buffer = self.layout.input_buffer[i];
        self.tracker
            // SAFETY: `dst` is the executor's storage for the entry (sized by the plan, whose
            // shapes it points to), which stays put until a synchronous call or the front's drop,
            // and both wait for this stage first; `src` stays valid by this function's contract.
            .enqueue(stream, &[], &[buffer], |_, _| unsafe { copy_from_to_on(src, TensorRef::new(&dst), stream) })
            .map_err(|e| e.context(what()))
    }

    /// d2h: queue a copy of output `index` into `out` on `stream`.
    ///
    /// # Safety
    /// `out`'s data must stay valid, and untouched by others, until `stream` has run the copy.
    pub(super) unsafe fn get_output<F: ?Sized + Frame>(
        &mut self,
        shared: &Shared<F>,
        index: i64,
        out: TensorRef<'_>,
        stream: StreamHandle,
    ) -> Result<()> {
        let plan = self.layout.plan.clone();
        let j = index_in_range(index, plan.num_outputs(), "output")?;
        let (eid, what) = (plan.output_entry(j), || format!("get_output_async `{}`", plan.output_name(j)));
        plan.check_caller_tensor(eid, out, &what)?;
        self.check_stream(stream).map_err(|e| e.context(what()))?;
        let data = self.addresses(shared)?.outputs[j];
        let src = self.entry_tensor(eid, data);
        let buffer = self.layout.output_buffer[j];
        self.tracker
            // SAFETY: as in `set_input`, with `out` valid by this function's contract.
            .enqueue(stream, &[buffer], &[], |_, _| unsafe { copy_from_to_on(TensorRef::new(&src), out, stream) })
            .map_err(|e| e.context(what()))
    }

    /// compute: queue a run on `stream` (the NULL stream: run now, returning its error).
    pub(super) fn run<F: ?Sized + Frame>(&mut self, shared: &Arc<Shared<F>>, stream: StreamHandle) -> Result<()> {
        self.check_stream(stream).map_err(|e| e.context("run_async"))?;
        let now: FailureSlot = stream.is_null().then(Default::default);
        let task = run_task(shared.clone(), now.clone());
        // On the CPU kernels run on the thread that calls them, so a run is a host task on the
        // stream. A GPU backend would instead make `stream` current (`set_stream`) and launch
        // the kernels from here, queued on the stream like the copies.
        let (reads, writes) = (&self.layout.run_reads, &self.layout.run_writes);
        self.tracker.enqueue(stream, reads, writes, |api, dev| api.launch_host_task(dev, stream, task))?;
        match now.and_then(|slot| slot.lock().take()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// A run of the frame as its front runs it (on the runner's workers if any), reporting a
/// failure to `now`, or else to the front.
fn run_task<F: ?Sized + Frame>(shared: Arc<Shared<F>>, now: FailureSlot) -> HostTask {
    Box::new(move || {
        let run = || shared.frame().run_with(shared.runner());
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
            .unwrap_or_else(|_| Err(Error::internal("panic during a run queued on a stream")));
        let Err(e) = result else { return };
        match now {
            Some(slot) => *slot.lock() = Some(e),
            None => shared.keep_failure(e.context("run_async")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker(n_buffers: usize) -> Tracker {
        Tracker {
            device: DLDevice::cpu(0),
            buffers: (0..n_buffers).map(|_| BufferUse::default()).collect(),
            queued: false,
        }
    }

    /// A mark on the stream with handle `stream` (compared, never used as a stream here).
    fn mark(stream: usize) -> Arc<Mark> {
        Arc::new(Mark { event: DeviceHandle::event(DLDevice::cpu(0)).unwrap(), stream })
    }

    fn waits(t: &Tracker, stream: usize, reads: &[usize], writes: &[usize]) -> Vec<*const Mark> {
        t.conflicts(stream as StreamHandle, reads, writes).iter().map(Arc::as_ptr).collect()
    }

    #[test]
    fn stages_wait_for_what_they_conflict_with_on_other_streams() {
        let mut t = tracker(2);
        let (copy_in, run, copy_out, next_in) = (mark(1), mark(2), mark(3), mark(1));
        // set_input(0) on stream 1, then a run on stream 2 reading buffer 0, writing buffer 1.
        t.note(&copy_in, &[], &[0]);
        assert_eq!(waits(&t, 2, &[0], &[1]), [Arc::as_ptr(&copy_in)], "read after write");
        t.note(&run, &[0], &[1]);
        // get_output on stream 3 reads buffer 1: waits for the run only.
        assert_eq!(waits(&t, 3, &[1], &[]), [Arc::as_ptr(&run)], "read after write");
        t.note(&copy_out, &[1], &[]);
        // The next set_input on stream 1 waits for the run reading its buffer (its own earlier
        // copy is on the same stream); the next run waits for that copy out and the run before.
        assert_eq!(waits(&t, 1, &[], &[0]), [Arc::as_ptr(&run)], "write after read");
        t.note(&next_in, &[], &[0]);
        let mut next_run = waits(&t, 2, &[0], &[1]);
        next_run.sort();
        let mut want = vec![Arc::as_ptr(&next_in), Arc::as_ptr(&copy_out)];
        want.sort();
        assert_eq!(next_run, want, "read after write, write after read (the run before: same stream)");
        // The NULL stream never counts as the same stream.
        let on_null = mark(0);
        t.note(&on_null, &[], &[1]);
        assert_eq!(waits(&t, 0, &[1], &[]), [Arc::as_ptr(&on_null)]);
    }

    #[test]
    fn a_buffer_keeps_one_reader_per_stream() {
        let mut t = tracker(1);
        let (a, b, c) = (mark(1), mark(1), mark(2));
        for m in [&a, &b, &c] {
            t.note(m, &[0], &[]);
        }
        let readers: Vec<_> = t.buffers[0].readers.iter().map(Arc::as_ptr).collect();
        assert_eq!(readers, [Arc::as_ptr(&b), Arc::as_ptr(&c)]);
        t.wait_all().unwrap();
        assert!(t.buffers[0].readers.is_empty() && !t.queued);
    }
}
