//! Inter-op parallelism: independent ops of one run on several workers at once.
//!
//! Ops are grouped into *tasks*: an op joins the task of its latest predecessor when all its
//! predecessors are in that task and that predecessor is the task's last op, so a graph without
//! branches (storage hazards included) is one task and runs as the plain sequential loop, and
//! only branch points start new tasks. Tasks become ready when their predecessors
//! are done; a ready queue is served by the calling thread plus `inter_op - 1` persistent
//! workers, each with its own intra-op pool for the kernels' `TVMBackendParallelLaunch`.
//! Every pair of ops that touch a common storage id is ordered by [`OpGraph`], and each hand-off
//! goes through the queue's mutex or an acquire-release counter, so results are bit-identical to
//! the sequential order.

use super::deps::OpGraph;
use super::executor::Executor;
use super::plan::Plan;
use super::profile::OpTiming;
use crate::runtime::error::{Error, Result};
use crate::runtime::threading::{set_current_pool, ThreadPool};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// Ops grouped into chains, and the dependencies between the chains.
#[derive(Debug)]
pub struct TaskGraph {
    /// Op indices of each task, in run order.
    pub tasks: Vec<Vec<u32>>,
    /// Per op: the other tasks that wait for it (each once).
    pub released_by: Vec<Vec<u32>>,
    /// Per task: how many (op, task) releases it waits for.
    pub n_preds: Vec<u32>,
}

impl TaskGraph {
    pub fn new(g: &OpGraph) -> TaskGraph {
        let n = g.len();
        let mut task_of = vec![u32::MAX; n];
        let mut tasks: Vec<Vec<u32>> = Vec::new();
        for i in 0..n {
            // Appending keeps the task in run order and adds no dependency from outside it.
            let latest = g.preds[i].iter().max().copied();
            let joins = latest.map(|p| task_of[p as usize]).filter(|&t| {
                tasks[t as usize].last().copied() == latest && g.preds[i].iter().all(|&q| task_of[q as usize] == t)
            });
            match joins {
                Some(t) => {
                    tasks[t as usize].push(i as u32);
                    task_of[i] = t;
                }
                None => {
                    task_of[i] = tasks.len() as u32;
                    tasks.push(vec![i as u32]);
                }
            }
        }
        let mut released_by: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut n_preds = vec![0u32; tasks.len()];
        for (op, waiting) in released_by.iter_mut().enumerate() {
            for &s in &g.succs[op] {
                let st = task_of[s as usize];
                if st != task_of[op] && !waiting.contains(&st) {
                    waiting.push(st);
                    n_preds[st as usize] += 1;
                }
            }
        }
        TaskGraph { tasks, released_by, n_preds }
    }
}

/// How many workers run ops, and how many threads each kernel may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parallelism {
    pub inter_op: usize,
    pub intra_op: usize,
}

/// When an op ran: (start, end) in ns since the run began, and the lane (worker) it ran on.
type Span = (u64, u64, u32);

/// The ops of one run, shared with the workers while the run lasts.
struct RunState {
    exec: *const Executor,
    graph: Arc<TaskGraph>,
    remaining: Vec<AtomicU32>,
    queue: Mutex<Vec<u32>>,
    wake: Condvar,
    completed: AtomicUsize,
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
    /// Per-op timings when profiling: (start, end, lane) in ns since `t0`.
    timings: Option<Vec<Mutex<Option<Span>>>>,
    t0: Instant,
}

// SAFETY: `exec` is only used to run ops while the caller of `ParallelRunner::run` holds the
// executor exclusively and waits for every task; `Executor::run_op` reads the executor's fields
// only, and ops running at the same time touch no common storage (the `OpGraph` orders them).
unsafe impl Send for RunState {}
// SAFETY: as above; the rest is atomics and mutexes.
unsafe impl Sync for RunState {}

impl RunState {
    fn finished(&self) -> bool {
        self.completed.load(Ordering::Acquire) == self.graph.tasks.len()
    }

    /// Take ready tasks and run them until every task of the run is done.
    fn work(&self, lane: u32) {
        loop {
            let task = {
                let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if let Some(t) = q.pop() {
                        break Some(t);
                    }
                    if self.finished() {
                        break None;
                    }
                    q = self.wake.wait(q).unwrap_or_else(|e| e.into_inner());
                }
            };
            let Some(t) = task else { return };
            self.run_task(t, lane);
            self.complete();
        }
    }

    /// Run task `t`'s ops in order; after each, release the tasks waiting for that op (so a
    /// branch starts as soon as the op it forks from is done, not when its whole task is).
    fn run_task(&self, t: u32, lane: u32) {
        // SAFETY: see `unsafe impl Send for RunState`.
        let exec = unsafe { &*self.exec };
        for &op in &self.graph.tasks[t as usize] {
            // After a failure the run only finishes its bookkeeping.
            if !self.failed.load(Ordering::Acquire) {
                self.run_op(exec, op, lane);
            }
            self.release(op);
        }
    }

    fn run_op(&self, exec: &Executor, op: u32, lane: u32) {
        let start = self.timings.as_ref().map(|_| self.t0.elapsed().as_nanos() as u64);
        // A panic must not take the worker down with the run unfinished: it fails the run.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| exec.run_op(op as usize)))
            .unwrap_or_else(|_| Err(Error::internal(format!("panic while running op {op} on an inter-op worker"))));
        if let Err(e) = result {
            self.error.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
            self.failed.store(true, Ordering::Release);
            return;
        }
        if let (Some(times), Some(start)) = (&self.timings, start) {
            let end = self.t0.elapsed().as_nanos() as u64;
            *times[op as usize].lock().unwrap_or_else(|e| e.into_inner()) = Some((start, end, lane));
        }
    }

    /// Count `op` as done for every task waiting on it; queue those that became ready.
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
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).extend(ready);
        if many {
            self.wake.notify_all();
        } else {
            self.wake.notify_one();
        }
    }

    fn complete(&self) {
        let q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let done = self.completed.fetch_add(1, Ordering::AcqRel) + 1 == self.graph.tasks.len();
        drop(q);
        if done {
            self.wake.notify_all();
        }
    }
}

/// The persistent workers' mailbox: the run they should join, by generation.
struct Mailbox {
    current: Mutex<(u64, Option<Arc<RunState>>)>,
    wake: Condvar,
    shutdown: AtomicBool,
}

/// Runs an executor's ops on several workers; one per executor, used by one run at a time.
pub struct ParallelRunner {
    graph: Arc<TaskGraph>,
    parallelism: Parallelism,
    /// The calling thread's intra-op pool (made current while it works on a run).
    caller_pool: Arc<ThreadPool>,
    mailbox: Arc<Mailbox>,
    workers: Vec<JoinHandle<()>>,
}

impl ParallelRunner {
    pub fn new(plan: &Plan, parallelism: Parallelism) -> ParallelRunner {
        let graph = Arc::new(TaskGraph::new(&OpGraph::new(plan)));
        let mailbox = Arc::new(Mailbox {
            current: Mutex::new((0, None)),
            wake: Condvar::new(),
            shutdown: AtomicBool::new(false),
        });
        // Workers are only worth their wake-ups when some tasks can run side by side.
        let n_workers = if graph.tasks.len() > 1 { parallelism.inter_op.saturating_sub(1) } else { 0 };
        let workers = (0..n_workers)
            .map(|i| {
                let (mb, intra) = (mailbox.clone(), parallelism.intra_op);
                std::thread::Builder::new()
                    .name(format!("tvm-inter-op-{}", i + 1))
                    .spawn(move || worker_loop(mb, (i + 1) as u32, intra))
                    .expect("spawning an inter-op worker")
            })
            .collect();
        ParallelRunner {
            graph,
            parallelism,
            caller_pool: Arc::new(ThreadPool::new(parallelism.intra_op, None)),
            mailbox,
            workers,
        }
    }

    pub fn parallelism(&self) -> Parallelism {
        self.parallelism
    }
    pub fn task_graph(&self) -> &TaskGraph {
        &self.graph
    }

    /// Run every op once.
    pub fn run(&self, exec: &mut Executor) -> Result<()> {
        if self.graph.tasks.len() == 1 {
            // Nothing can overlap: the plain loop, with this runner's intra-op pool.
            return self.on_caller_pool(|| exec.run());
        }
        self.run_inner(exec, false).map(|_| ())
    }

    /// Run every op once, timing each; `OpTiming::lane` is the worker (0: the caller).
    pub fn run_profiled(&self, exec: &mut Executor) -> Result<Vec<OpTiming>> {
        let state = self.run_inner(exec, true)?;
        let times = state.timings.as_ref().expect("profiled run");
        let mut out: Vec<OpTiming> = (0..exec.num_ops())
            .filter_map(|i| {
                let (start, end, lane) = (*times[i].lock().unwrap_or_else(|e| e.into_inner()))?;
                Some(OpTiming::of(exec, i, start, end - start, lane))
            })
            .collect();
        out.sort_by_key(|t| t.start_ns);
        Ok(out)
    }

    /// Run `f` on the calling thread with this runner's intra-op pool as its current pool.
    fn on_caller_pool<R>(&self, f: impl FnOnce() -> R) -> R {
        let previous = set_current_pool(Some(self.caller_pool.clone()));
        let result = f();
        set_current_pool(previous);
        result
    }

    fn run_inner(&self, exec: &mut Executor, profile: bool) -> Result<Arc<RunState>> {
        let graph = &self.graph;
        let state = Arc::new(RunState {
            exec: exec as *const Executor,
            graph: graph.clone(),
            remaining: graph.n_preds.iter().map(|&n| AtomicU32::new(n)).collect(),
            queue: Mutex::new(
                (0..graph.tasks.len() as u32).rev().filter(|&t| graph.n_preds[t as usize] == 0).collect(),
            ),
            wake: Condvar::new(),
            completed: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            timings: profile.then(|| (0..exec.num_ops()).map(|_| Mutex::new(None)).collect()),
            t0: Instant::now(),
        });
        if !self.workers.is_empty() {
            let mut m = self.mailbox.current.lock().unwrap_or_else(|e| e.into_inner());
            *m = (m.0 + 1, Some(state.clone()));
            self.mailbox.wake.notify_all();
        }
        self.on_caller_pool(|| state.work(0));
        // Every task is done: no worker touches the executor any more.
        self.mailbox.current.lock().unwrap_or_else(|e| e.into_inner()).1 = None;
        if let Some(e) = state.error.lock().unwrap_or_else(|e| e.into_inner()).take() {
            return Err(e);
        }
        Ok(state)
    }
}

impl Drop for ParallelRunner {
    fn drop(&mut self) {
        self.mailbox.shutdown.store(true, Ordering::Release);
        {
            let _m = self.mailbox.current.lock().unwrap_or_else(|e| e.into_inner());
            self.mailbox.wake.notify_all();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn worker_loop(mailbox: Arc<Mailbox>, lane: u32, intra_op: usize) {
    set_current_pool(Some(Arc::new(ThreadPool::new(intra_op, None))));
    let mut seen = 0u64;
    loop {
        let state = {
            let mut m = mailbox.current.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if mailbox.shutdown.load(Ordering::Acquire) {
                    return;
                }
                if m.0 != seen {
                    seen = m.0;
                    if let Some(s) = m.1.clone() {
                        break s;
                    }
                }
                m = mailbox.wake.wait(m).unwrap_or_else(|e| e.into_inner());
            }
        };
        state.work(lane);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::deps::EdgeKind;

    fn op_graph(n: usize, edges: &[(u32, u32)]) -> OpGraph {
        let mut g = OpGraph { preds: vec![Vec::new(); n], succs: vec![Vec::new(); n], edges: Vec::new() };
        for &(a, b) in edges {
            g.preds[b as usize].push(a);
            g.succs[a as usize].push(b);
            g.edges.push((a, b, EdgeKind::Data));
        }
        g
    }

    #[test]
    fn a_chain_with_storage_hazards_is_one_task() {
        // Ping-pong buffers: op i waits for i-1 (data) and i-2 (write-after-write).
        let edges: Vec<(u32, u32)> = (1..6).map(|i| (i - 1, i)).chain((2..6).map(|i| (i - 2, i))).collect();
        let t = TaskGraph::new(&op_graph(6, &edges));
        assert_eq!(t.tasks, vec![vec![0, 1, 2, 3, 4, 5]]);
    }

    #[test]
    fn branches_are_separate_tasks_joined_by_a_third() {
        // 0 -> {1, 2}; 1 -> 3; 2 -> 4; {3, 4} -> 5
        let t = TaskGraph::new(&op_graph(6, &[(0, 1), (0, 2), (1, 3), (2, 4), (3, 5), (4, 5)]));
        assert_eq!(t.tasks, vec![vec![0, 1, 3], vec![2, 4], vec![5]]);
        assert_eq!(t.n_preds, vec![0, 1, 2]);
        // The second branch waits for op 0 only, not for the whole first task.
        assert_eq!(t.released_by, vec![vec![1], vec![], vec![], vec![2], vec![2], vec![]]);
    }
}
