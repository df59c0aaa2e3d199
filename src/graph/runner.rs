//! How a frame's ops run: a [`Runner`] is chosen when an executor is created and shared by its
//! runs. [`Sequential`] is TVM's loop; `schedule::InterOp` runs independent ops on several
//! lanes. Profiling is one wrapper, [`run_profiled`], around either: the runner reports each
//! op's span to an [`OpClock`] and the wrapper turns the spans into [`OpTiming`]s.

use super::executor::Executor;
use crate::runtime::base::error::Result;
use crate::runtime::threads::pool::{PoolGuard, ThreadPool};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Instant;

/// Runs every op of a frame once.
pub trait Runner: Send + Sync {
    /// Run `frame`'s ops; with `clock`, report when each op ran.
    fn run(&self, frame: &mut Executor, clock: Option<&OpClock>) -> Result<()>;
}

/// When each op of one run ran: (start, end) in ns since the run began, and the lane that ran
/// it (0: the calling thread). Lanes report concurrently, each op once.
pub struct OpClock {
    t0: Instant,
    spans: Vec<Mutex<Option<(u64, u64, u32)>>>,
}

impl OpClock {
    pub fn new(num_ops: usize) -> OpClock {
        OpClock { t0: Instant::now(), spans: (0..num_ops).map(|_| Mutex::new(None)).collect() }
    }

    /// Run op `op` through `f` on lane `lane`, recording its span when it succeeds.
    pub fn time(&self, op: usize, lane: u32, f: impl FnOnce() -> Result<()>) -> Result<()> {
        let start = self.t0.elapsed().as_nanos() as u64;
        f()?;
        let end = self.t0.elapsed().as_nanos() as u64;
        *self.spans[op].lock() = Some((start, end, lane));
        Ok(())
    }

    /// The recorded spans as timings of `frame`'s ops, in start order.
    fn timings(self, frame: &Executor) -> Vec<OpTiming> {
        let mut out: Vec<OpTiming> = (self.spans.into_iter().enumerate())
            .filter_map(|(i, s)| {
                s.into_inner().map(|(start, end, lane)| OpTiming::of(frame, i, start, end - start, lane))
            })
            .collect();
        out.sort_by_key(|t| t.start_ns);
        out
    }
}

/// Run `frame` once through `runner`, timing every op.
pub fn run_profiled(runner: &dyn Runner, frame: &mut Executor) -> Result<Vec<OpTiming>> {
    let clock = OpClock::new(frame.num_ops());
    runner.run(frame, Some(&clock))?;
    Ok(clock.timings(frame))
}

/// TVM's order, one op after another on the calling thread; kernels launch on `pool` when
/// given, else on the thread's current pool.
#[derive(Default)]
pub struct Sequential {
    pub pool: Option<Arc<ThreadPool>>,
}

impl Runner for Sequential {
    fn run(&self, frame: &mut Executor, clock: Option<&OpClock>) -> Result<()> {
        let _pool = self.pool.clone().map(PoolGuard::install);
        let Some(clock) = clock else { return frame.run() };
        (0..frame.num_ops()).try_for_each(|i| clock.time(i, 0, || frame.run_op(i)))
    }
}

/// Timing of one op from a profiled run.
#[derive(Clone, Debug)]
pub struct OpTiming {
    pub node_id: u32,
    pub name: String,
    pub func_name: String,
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Which worker ran it (0: the calling thread).
    pub lane: u32,
}

impl OpTiming {
    /// The timing of op `i` (in run order) of `e`.
    pub(crate) fn of(e: &Executor, i: usize, start_ns: u64, duration_ns: u64, lane: u32) -> OpTiming {
        let node_id = e.op_node_id(i);
        let node = &e.plan().graph.nodes[node_id as usize];
        OpTiming {
            node_id,
            name: node.name.clone(),
            func_name: node.attrs.as_ref().map(|a| a.func_name.clone()).unwrap_or_default(),
            start_ns,
            duration_ns,
            lane,
        }
    }
}
