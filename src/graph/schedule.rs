//! Inter-op parallelism: independent ops of one run on several lanes at once.
//!
//! The plan's [`TaskGraph`] groups ops into chains; a chain becomes ready when the ops it waits
//! for are done, and a ready queue is served by `inter_op` lanes: the calling thread plus the
//! workers of a shared lanes pool, each lane with its own intra-op pool (a shared core group)
//! for the kernels' `TVMBackendParallelLaunch`. No runner starts threads of its own. Every pair
//! of ops that touch a common storage id is ordered by the task graph, and each hand-off goes
//! through the queue's mutex or an acquire-release counter, so results are bit-identical to the
//! sequential order.

use super::deps::TaskGraph;
use super::executor::Executor;
use super::plan::Plan;
use super::runner::{OpClock, Runner, Sequential};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::threads::pool::{shared_pool, PoolGuard, PoolKey, ThreadPool};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

/// How many lanes run ops, and how many threads each kernel may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parallelism {
    pub inter_op: usize,
    pub intra_op: usize,
}

/// The slot of the pools whose workers serve as lanes (kernel pools use slots `0..inter_op`).
const LANES_SLOT: usize = usize::MAX;

/// The frame of one run, shared by its lanes.
struct SharedFrame<'a>(&'a Executor);

// SAFETY: lanes call only `Executor::run_op(&self)`, which writes nothing but the storage of the
// op's outputs; `RunState` runs an op only after every op it conflicts with (shared storage, in
// either direction) has finished, per the plan's task graph, so no two lanes touch the same
// bytes at once, and the borrow ends when `InterOp::run` returns (all lanes have returned).
unsafe impl Sync for SharedFrame<'_> {}

/// The chains of one run, shared by its lanes while the run lasts.
struct RunState<'a> {
    frame: SharedFrame<'a>,
    graph: &'a TaskGraph,
    clock: Option<&'a OpClock>,
    remaining: Vec<AtomicU32>,
    queue: Mutex<Vec<u32>>,
    wake: Condvar,
    completed: AtomicUsize,
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
}

impl<'a> RunState<'a> {
    fn new(frame: &'a Executor, graph: &'a TaskGraph, clock: Option<&'a OpClock>) -> Self {
        let ready = (0..graph.tasks.len() as u32).rev().filter(|&t| graph.n_preds[t as usize] == 0).collect();
        RunState {
            frame: SharedFrame(frame),
            graph,
            clock,
            remaining: graph.n_preds.iter().map(|&n| AtomicU32::new(n)).collect(),
            queue: Mutex::new(ready),
            wake: Condvar::new(),
            completed: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }

    fn finished(&self) -> bool {
        self.completed.load(Ordering::Acquire) == self.graph.tasks.len()
    }

    /// Take ready chains and run them until every chain of the run is done.
    fn work(&self, lane: u32) {
        loop {
            let task = {
                let mut q = self.queue.lock();
                loop {
                    if let Some(t) = q.pop() {
                        break Some(t);
                    }
                    if self.finished() {
                        break None;
                    }
                    self.wake.wait(&mut q);
                }
            };
            let Some(t) = task else { return };
            self.run_task(t, lane);
            self.complete();
        }
    }

    /// Run chain `t`'s ops in order; after each, release the chains waiting for that op (so a
    /// branch starts as soon as the op it forks from is done, not when its whole chain is).
    fn run_task(&self, t: u32, lane: u32) {
        for &op in &self.graph.tasks[t as usize] {
            // After a failure the run only finishes its bookkeeping.
            if !self.failed.load(Ordering::Acquire) {
                self.run_op(op as usize, lane);
            }
            self.release(op);
        }
    }

    fn run_op(&self, op: usize, lane: u32) {
        let frame = self.frame.0;
        let run = || match self.clock {
            Some(c) => c.time(op, lane, || frame.run_op(op)),
            None => frame.run_op(op),
        };
        // A panic must not take the lane down with the run unfinished: it fails the run.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
            .unwrap_or_else(|_| Err(Error::internal(format!("panic while running op {op} on an inter-op worker"))));
        if let Err(e) = result {
            self.error.lock().get_or_insert(e);
            self.failed.store(true, Ordering::Release);
        }
    }

    /// Count `op` as done for every chain waiting on it; queue those that became ready.
    fn release(&self, op: u32) {
        let waiting = &self.graph.released_by[op as usize];
        if waiting.is_empty() {
            return;
        }
        let ready: Vec<u32> = waiting
            .iter()
            .copied()
            .filter(|&s| self.remaining[s as usize].fetch_sub(1, Ordering::AcqRel) == 1)
            .collect();
        if ready.is_empty() {
            return;
        }
        let many = ready.len() > 1;
        self.queue.lock().extend(ready);
        if many {
            self.wake.notify_all();
        } else {
            self.wake.notify_one();
        }
    }

    fn complete(&self) {
        let q = self.queue.lock();
        let done = self.completed.fetch_add(1, Ordering::AcqRel) + 1 == self.graph.tasks.len();
        drop(q);
        if done {
            self.wake.notify_all();
        }
    }
}

/// Runs a frame's independent ops on several lanes, drawn from shared pools.
pub struct InterOp {
    graph: Arc<TaskGraph>,
    /// Lane 0 is the caller; the pool's workers are the others.
    lanes: Arc<ThreadPool>,
    /// Per lane, the pool its kernels launch on.
    kernel_pools: Vec<Arc<ThreadPool>>,
}

/// The runner for `plan`'s frames with `parallelism`, drawing on shared pools: lanes only when
/// there are several and some chains can run side by side (they are worth their wake-ups only
/// then), else the plain loop with lane 0's kernel pool. An error if a pool's threads cannot be
/// started.
pub fn runner(plan: &Plan, parallelism: Parallelism) -> Result<Box<dyn Runner>> {
    let key = |threads, slot| PoolKey { threads, cpus: None, slot };
    let kernel_pool = |lane| shared_pool(key(parallelism.intra_op, lane));
    let graph = if parallelism.inter_op > 1 { Some(plan.task_graph()) } else { None };
    let Some(graph) = graph.filter(|g| g.tasks.len() > 1) else {
        return Ok(Box::new(Sequential { pool: Some(kernel_pool(0)?) }));
    };
    Ok(Box::new(InterOp {
        graph,
        lanes: shared_pool(key(parallelism.inter_op, LANES_SLOT))?,
        kernel_pools: (0..parallelism.inter_op).map(kernel_pool).collect::<Result<_>>()?,
    }))
}

impl Runner for InterOp {
    fn run(&self, frame: &mut Executor, clock: Option<&OpClock>) -> Result<()> {
        let state = RunState::new(frame, &self.graph, clock);
        let lane = |l: usize| {
            let _pool = PoolGuard::install(self.kernel_pools[l].clone());
            state.work(l as u32);
        };
        self.lanes.run_lanes(self.kernel_pools.len(), &lane)?;
        match state.error.into_inner() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
