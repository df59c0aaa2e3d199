//! A request pipeline over one loaded model: requests flow h2d → compute → d2h on streams,
//! stages of different requests overlap, and requests spread over core groups.
//!
//! Each core group has a thread pool of its own (pinned to its CPUs) on which its kernels'
//! `TVMBackendParallelLaunch` calls land, three streams (h2d, compute, d2h) and a few execution
//! contexts: executors over the one shared [`Plan`], so weights exist once and each context
//! adds only a set of activations. A request waits in a queue until a context is free, then:
//!
//! * h2d stream: the request's input tensors are copied into the context's inputs; event A;
//! * compute stream: waits for A, runs the graph on the group's pool; event B;
//! * d2h stream: waits for B, copies the outputs into the request's tensors, then finishes the
//!   request (its result, its callback) and frees the context for the next one.
//!
//! Everything goes through the device API's streams and events, so a device with real streams
//! overlaps the same way; compute is a host task on the compute stream, which on a GPU backend
//! becomes kernel launches on that stream. A failing stage fails its request only.

use super::chrome_trace::{to_json, Complete};
use super::executor::Executor;
use super::options::PipelineOptions;
use super::plan::Plan;
use super::runner::{Runner, Sequential};
use crate::abi::{DLDevice, DLTensor};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::device::{device_api, poll_until, DeviceApi, DeviceHandle, HostTask};
use crate::runtime::dlpack::tensor_ref::TensorRef;
use crate::runtime::threads::pool::{shared_pool, PoolKey, ThreadPool};
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What a request's submitter hears when it is done (instead of waiting for it).
pub type Completion = Box<dyn FnOnce(u64, Result<()>) + Send>;

/// A tensor description owned by the pipeline (its shape with it); the data is the submitter's
/// or an executor's.
struct OwnedTensor {
    raw: DLTensor,
    _shape: Box<[i64]>,
}

// SAFETY: the data pointer is memory whose owner (the submitter, by the submit contract, or a
// context's executor, which outlives its requests) keeps it valid and unshared while requests use
// it; the shape pointer points into `_shape`, owned here.
unsafe impl Send for OwnedTensor {}
// SAFETY: as above; the description is never mutated after construction.
unsafe impl Sync for OwnedTensor {}

impl OwnedTensor {
    fn new(t: &DLTensor, shape: &[i64]) -> OwnedTensor {
        let shape: Box<[i64]> = shape.into();
        let raw = DLTensor { shape: crate::runtime::base::cptr::dims_ptr(&shape), strides: std::ptr::null_mut(), ..*t };
        OwnedTensor { raw, _shape: shape }
    }

    fn tensor(&self) -> TensorRef<'_> {
        // SAFETY: see the `Send` impl: the description is whole (shape owned here, compact) and
        // its data valid while the request using it is alive.
        unsafe { TensorRef::new(&self.raw) }
    }
}

/// One request's worth of state that does not need a core group: an executor over the shared
/// plan, its input and output tensors, and the events between its stages.
struct Context {
    exec: Mutex<Executor>,
    inputs: Vec<OwnedTensor>,
    outputs: Vec<OwnedTensor>,
    h2d_done: DeviceHandle,
    compute_done: DeviceHandle,
}

struct Group {
    /// The pool its kernels' parallel launches use (current while its graphs run).
    pool: Arc<ThreadPool>,
    h2d: DeviceHandle,
    compute: DeviceHandle,
    d2h: DeviceHandle,
    contexts: Vec<Arc<Context>>,
}

/// A submitted request: its tensors until it starts, its result once done.
struct Request {
    inputs: Vec<OwnedTensor>,
    outputs: Vec<OwnedTensor>,
    on_done: Option<Completion>,
    result: Option<Result<()>>,
    /// Set when the request is done (polled by a waiter before it sleeps).
    done: Arc<AtomicBool>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    queue: VecDeque<u64>,
    /// Free contexts as (group, context).
    free: Vec<(usize, usize)>,
    requests: HashMap<u64, Request>,
    running: usize,
    closed: bool,
    /// Threads sleeping on `finished` (a wake-up is a system call: made only when one sleeps).
    sleepers: usize,
}

/// One traced stage.
#[derive(Clone, Debug)]
pub struct Span {
    pub request: u64,
    pub group: usize,
    /// 0: h2d, 1: compute, 2: d2h.
    pub stage: usize,
    pub start_ns: u64,
    pub duration_ns: u64,
}

const STAGES: [&str; 3] = ["h2d", "compute", "d2h"];

struct Inner {
    plan: Arc<Plan>,
    dev: DLDevice,
    api: &'static dyn DeviceApi,
    /// Graph inputs a request feeds (not weights), in input order.
    data_inputs: Vec<usize>,
    groups: Vec<Group>,
    state: Mutex<State>,
    finished: Condvar,
    trace: Option<Arc<Tracer>>,
}

/// The stages traced so far, timed from the pipeline's creation.
struct Tracer {
    t0: Instant,
    spans: Mutex<Vec<Span>>,
}

/// A pipeline of requests over one model. Dropping it finishes what runs and cancels what waits.
pub struct Pipeline {
    inner: Arc<Inner>,
}

impl Pipeline {
    /// A pipeline over `plan` (the executors' device is the plan's first).
    pub fn new(plan: Arc<Plan>, options: &PipelineOptions) -> Result<Pipeline> {
        let dev = plan.devices[0];
        let api = device_api(dev.device_type)?;
        let data_inputs: Vec<usize> = (0..plan.num_inputs()).filter(|&i| !plan.is_param_input(i)).collect();
        let mut groups = Vec::with_capacity(options.core_groups);
        let mut free = Vec::new();
        for g in 0..options.core_groups {
            let per_group =
                options.in_flight / options.core_groups + usize::from(g < options.in_flight % options.core_groups);
            // Pipelines with the same core groups borrow the same pools.
            let cpus = options.cpus.as_ref().map(|c| c[g].clone());
            let pool = shared_pool(PoolKey { threads: options.threads_per_group, cpus, slot: g })?;
            groups.push(make_group(&plan, dev, &data_inputs, pool, per_group)?);
            free.extend((0..per_group).map(|c| (g, c)));
        }
        // Contexts are handed out from the back: put the groups' first contexts there, so light
        // traffic spreads over the groups.
        free.sort_by_key(|&(g, c)| std::cmp::Reverse((c, g)));
        let trace = options.trace.then(|| Arc::new(Tracer { t0: Instant::now(), spans: Mutex::new(Vec::new()) }));
        let state = Mutex::new(State { free, ..State::default() });
        let inner = Arc::new(Inner { plan, dev, api, data_inputs, groups, state, finished: Condvar::new(), trace });
        Ok(Pipeline { inner })
    }

    /// The plan's input indices a request feeds, in order.
    pub fn data_inputs(&self) -> &[usize] {
        &self.inner.data_inputs
    }

    /// The shared plan.
    pub fn plan(&self) -> &Arc<Plan> {
        &self.inner.plan
    }

    /// Queue a request; returns its id at once. `inputs`: one tensor per data input, in order;
    /// `outputs`: one per graph output. With `on_done`, the request reports through it (on a
    /// pipeline thread; it must not block on this pipeline) and cannot be waited for.
    ///
    /// # Safety
    /// The tensors' data must stay valid, and the outputs' unread and unwritten by others, until
    /// the request is done (waited for, or `on_done` called).
    pub unsafe fn submit(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &[TensorRef<'_>],
        on_done: Option<Completion>,
    ) -> Result<u64> {
        let inner = &self.inner;
        let (inputs, outputs) = inner.checked_tensors(inputs, outputs)?;
        let mut st = inner.state.lock();
        if st.closed {
            return Err(Error::value("the pipeline is shutting down"));
        }
        st.next_id += 1;
        let id = st.next_id;
        let done = Arc::new(AtomicBool::new(false));
        st.requests.insert(id, Request { inputs, outputs, on_done, result: None, done });
        st.queue.push_back(id);
        Inner::dispatch(inner, &mut st);
        Ok(id)
    }

    /// Block until request `id` is done; its own result. Each request is waited for once.
    pub fn wait(&self, id: u64) -> Result<()> {
        let inner = &self.inner;
        let done = {
            let st = inner.state.lock();
            match st.requests.get(&id) {
                None => {
                    return Err(Error::value(format!(
                        "request {id} is unknown (never submitted, or already waited for)"
                    )))
                }
                Some(r) if r.on_done.is_some() => {
                    return Err(Error::value(format!(
                        "request {id} reports through its callback; it cannot be waited for"
                    )))
                }
                Some(r) => r.done.clone(),
            }
        };
        poll_until(|| done.load(Ordering::Acquire));
        let mut st = inner.state.lock();
        st.sleepers += 1;
        inner.finished.wait_while(&mut st, |st| st.requests.get(&id).is_some_and(|r| r.result.is_none()));
        st.sleepers -= 1;
        match st.requests.remove(&id) {
            Some(Request { result: Some(r), .. }) => r,
            // Another thread waited for it meanwhile.
            _ => Err(Error::value(format!("request {id} is unknown (never submitted, or already waited for)"))),
        }
    }

    /// The stages traced so far (the pipeline was made with `trace=1`).
    pub fn spans(&self) -> Result<Vec<Span>> {
        match &self.inner.trace {
            Some(t) => Ok(t.spans.lock().clone()),
            None => Err(Error::value("the pipeline does not trace: create it with the option trace=1")),
        }
    }

    /// The traced stages as a Chrome trace: one lane per stream of each core group.
    pub fn chrome_trace(&self) -> Result<String> {
        Ok(chrome_trace(&self.spans()?, self.inner.groups.len()))
    }

    /// Cancel queued requests (they fail with "cancelled"), let running ones finish, and stop
    /// the streams. Later submits fail. Idempotent.
    pub fn shut_down(&self) {
        let inner = &self.inner;
        let callbacks: Vec<(u64, Completion, Result<()>)> = {
            let mut st = inner.state.lock();
            if st.closed {
                return;
            }
            st.closed = true;
            let queued: Vec<u64> = st.queue.drain(..).collect();
            queued
                .into_iter()
                .filter_map(|id| {
                    let err =
                        Error::value(format!("request {id} was cancelled: the pipeline was freed before it started"));
                    inner.complete(&mut st, id, Err(err)).map(|(f, r)| (id, f, r))
                })
                .collect()
        };
        for (id, f, result) in callbacks {
            f(id, result);
        }
        inner.finished.notify_all();
        let mut st = inner.state.lock();
        st.sleepers += 1;
        inner.finished.wait_while(&mut st, |st| st.running > 0);
        st.sleepers -= 1;
        drop(st);
        // The last requests' callbacks run after they count as finished: wait for those too
        // (the streams themselves are freed with the pipeline's last holder).
        for g in &inner.groups {
            for s in [&g.h2d, &g.compute, &g.d2h] {
                let _ = s.synchronize();
            }
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn make_group(
    plan: &Arc<Plan>,
    dev: DLDevice,
    data_inputs: &[usize],
    pool: Arc<ThreadPool>,
    num_contexts: usize,
) -> Result<Group> {
    // Each launch runs task 0 on the stream worker that runs the graph; the pool's workers,
    // pinned to the group's CPUs, take the others.
    let stream = || DeviceHandle::stream(dev);
    let (h2d, compute, d2h) = (stream()?, stream()?, stream()?);
    let contexts =
        (0..num_contexts).map(|_| make_context(plan, dev, data_inputs).map(Arc::new)).collect::<Result<Vec<_>>>()?;
    Ok(Group { pool, h2d, compute, d2h, contexts })
}

fn make_context(plan: &Arc<Plan>, dev: DLDevice, data_inputs: &[usize]) -> Result<Context> {
    let mut exec = Executor::new(plan.clone())?;
    let inputs = data_inputs
        .iter()
        .map(|&i| Ok(OwnedTensor::new(&exec.owned_input_tensor(i)?, plan.entry_shape(plan.input_entry(i)))))
        .collect::<Result<Vec<_>>>()?;
    let outputs = (0..plan.num_outputs())
        .map(|j| Ok(OwnedTensor::new(&exec.output_tensor(j)?, plan.entry_shape(plan.output_entry(j)))))
        .collect::<Result<Vec<_>>>()?;
    let (h2d_done, compute_done) = (DeviceHandle::event(dev)?, DeviceHandle::event(dev)?);
    Ok(Context { exec: Mutex::new(exec), inputs, outputs, h2d_done, compute_done })
}

impl Inner {
    /// Check a request's tensors against the graph and copy their descriptions.
    fn checked_tensors(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &[TensorRef<'_>],
    ) -> Result<(Vec<OwnedTensor>, Vec<OwnedTensor>)> {
        let plan = &self.plan;
        if inputs.len() != self.data_inputs.len() {
            let names: Vec<&str> = self.data_inputs.iter().map(|&i| plan.input_name(i)).collect();
            return Err(Error::value(format!(
                "submit: {} input tensors given, the model takes {} ({})",
                inputs.len(),
                names.len(),
                names.join(", ")
            )));
        }
        if outputs.len() != plan.num_outputs() {
            return Err(Error::value(format!(
                "submit: {} output tensors given, the model has {}",
                outputs.len(),
                plan.num_outputs()
            )));
        }
        let check = |t: TensorRef<'_>, eid: usize, what: &dyn Fn() -> String| -> Result<OwnedTensor> {
            plan.check_caller_tensor(eid, t, what)?;
            Ok(OwnedTensor::new(t.raw(), t.shape()?))
        };
        let ins = self
            .data_inputs
            .iter()
            .zip(inputs)
            .map(|(&i, &t)| check(t, plan.input_entry(i), &|| format!("submit: input `{}`", plan.input_name(i))))
            .collect::<Result<Vec<_>>>()?;
        let outs = outputs
            .iter()
            .enumerate()
            .map(|(j, &t)| check(t, plan.output_entry(j), &|| format!("submit: output `{}`", plan.output_name(j))))
            .collect::<Result<Vec<_>>>()?;
        Ok((ins, outs))
    }

    /// Start queued requests on free contexts.
    fn dispatch(this: &Arc<Inner>, st: &mut State) {
        while !st.queue.is_empty() {
            let Some((g, c)) = st.free.pop() else { return };
            let id = st.queue.pop_front().expect("not empty");
            let req = st.requests.get_mut(&id).expect("queued requests are registered");
            let (inputs, outputs) = (std::mem::take(&mut req.inputs), std::mem::take(&mut req.outputs));
            st.running += 1;
            this.start(id, g, c, inputs, outputs);
        }
    }

    /// Queue request `id`'s three stages on group `g`'s streams, with context `c`.
    fn start(self: &Arc<Self>, id: u64, g: usize, c: usize, inputs: Vec<OwnedTensor>, outputs: Vec<OwnedTensor>) {
        let group = &self.groups[g];
        let ctx = group.contexts[c].clone();
        let failure: Arc<Mutex<Option<Error>>> = Arc::default();
        let (api, dev) = (self.api, self.dev);
        let enqueue_failed = |e: Error| *failure.lock() = Some(e);

        // h2d
        self.trace_mark(id, g, 0, &group.h2d, true);
        for (src, dst) in inputs.iter().zip(&ctx.inputs) {
            // SAFETY: the request's tensors stay valid until it is done (submit contract), and
            // the context's input memory belongs to its executor, which outlives the pipeline's
            // streams; the context serves this request alone until it finishes.
            if let Err(e) = unsafe { api.copy_data_from_to(src.tensor(), dst.tensor(), group.h2d.raw()) } {
                enqueue_failed(e);
            }
        }
        self.trace_mark(id, g, 0, &group.h2d, false);
        self.record(&ctx.h2d_done, &group.h2d).unwrap_or_else(enqueue_failed);

        // compute
        self.wait(&group.compute, &ctx.h2d_done).unwrap_or_else(enqueue_failed);
        self.trace_mark(id, g, 1, &group.compute, true);
        let (run_ctx, run_failure, pool) = (ctx.clone(), failure.clone(), group.pool.clone());
        let run: HostTask = Box::new(move || {
            let mut failure = run_failure.lock();
            if failure.is_none() {
                let mut exec = run_ctx.exec.lock();
                if let Err(e) = (Sequential { pool: Some(pool) }).run(&mut exec, None) {
                    *failure = Some(e);
                }
            }
        });
        api.launch_host_task(dev, group.compute.raw(), run).unwrap_or_else(enqueue_failed);
        self.trace_mark(id, g, 1, &group.compute, false);
        self.record(&ctx.compute_done, &group.compute).unwrap_or_else(enqueue_failed);

        // d2h
        self.wait(&group.d2h, &ctx.compute_done).unwrap_or_else(enqueue_failed);
        self.trace_mark(id, g, 2, &group.d2h, true);
        for (src, dst) in ctx.outputs.iter().zip(&outputs) {
            // SAFETY: as for the inputs above.
            if let Err(e) = unsafe { api.copy_data_from_to(src.tensor(), dst.tensor(), group.d2h.raw()) } {
                enqueue_failed(e);
            }
        }
        self.trace_mark(id, g, 2, &group.d2h, false);
        let me = self.clone();
        let finish: HostTask = Box::new(move || {
            drop((inputs, outputs));
            let result = failure.lock().take().map_or(Ok(()), Err);
            me.finish(id, g, c, result);
        });
        // The d2h stream lives until every request is finished (`shut_down` waits for that), so
        // this fails only with a broken device backend; the request is then finished here.
        if let Err(e) = api.launch_host_task(dev, group.d2h.raw(), finish) {
            self.finish(id, g, c, Err(e));
        }
    }

    fn record(&self, event: &DeviceHandle, stream: &DeviceHandle) -> Result<()> {
        self.api.record_event(self.dev, event.raw(), stream.raw())
    }

    fn wait(&self, stream: &DeviceHandle, event: &DeviceHandle) -> Result<()> {
        self.api.stream_wait_event(self.dev, stream.raw(), event.raw())
    }

    /// Request `id` is done: free its context, start the next request, report.
    fn finish(self: &Arc<Self>, id: u64, g: usize, c: usize, result: Result<()>) {
        let (callback, sleepers) = {
            let mut st = self.state.lock();
            st.running -= 1;
            st.free.push((g, c));
            let cb = self.complete(&mut st, id, result);
            if !st.closed {
                Inner::dispatch(self, &mut st);
            }
            (cb, st.sleepers)
        };
        if sleepers > 0 {
            self.finished.notify_all();
        }
        if let Some((f, result)) = callback {
            f(id, result);
        }
    }

    /// Store a request's result for its waiter; or, for a callback request, forget the request
    /// and hand back the callback with the result, to be called outside the lock.
    fn complete(&self, st: &mut State, id: u64, result: Result<()>) -> Option<(Completion, Result<()>)> {
        let req = st.requests.get_mut(&id)?;
        req.done.store(true, Ordering::Release);
        match req.on_done.take() {
            Some(f) => {
                st.requests.remove(&id);
                Some((f, result))
            }
            None => {
                req.result = Some(result);
                None
            }
        }
    }

    /// Record the start or end of a stage on its stream (tracing only).
    fn trace_mark(&self, request: u64, group: usize, stage: usize, stream: &DeviceHandle, start: bool) {
        let Some(tracer) = self.trace.clone() else { return };
        let mark: HostTask = Box::new(move || {
            let now = tracer.t0.elapsed().as_nanos() as u64;
            let mut spans = tracer.spans.lock();
            if start {
                spans.push(Span { request, group, stage, start_ns: now, duration_ns: 0 });
            } else if let Some(s) = spans.iter_mut().rev().find(|s| (s.request, s.stage) == (request, stage)) {
                s.duration_ns = now - s.start_ns;
            }
        });
        let _ = self.api.launch_host_task(self.dev, stream.raw(), mark);
    }
}

/// Spans as a Chrome trace (`chrome://tracing` / Perfetto): one lane per stream of each group.
pub fn chrome_trace(spans: &[Span], groups: usize) -> String {
    let lane = |g: usize, stage: usize| (g * STAGES.len() + stage) as u64;
    let lanes: Vec<(u64, String)> = (0..groups)
        .flat_map(|g| STAGES.iter().enumerate().map(move |(k, name)| (lane(g, k), format!("group {g} {name}"))))
        .collect();
    let stages: Vec<Complete> = spans
        .iter()
        .map(|s| Complete {
            name: format!("request {} {}", s.request, STAGES[s.stage]),
            cat: STAGES[s.stage],
            tid: lane(s.group, s.stage),
            start_ns: s.start_ns,
            duration_ns: s.duration_ns,
            args: serde_json::json!({"request": s.request, "group": s.group}),
        })
        .collect();
    to_json(&lanes, &stages)
}
