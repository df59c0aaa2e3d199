//! Thread pools for `TVMBackendParallelLaunch`, and the process's core groups.
//!
//! A [`ThreadPool`] has its own workers (optionally pinned to a CPU set), so several pools can
//! serve disjoint core groups. Pools are shared: [`shared_pool`] hands every caller asking for
//! the same threads, CPUs and slot the same pool, created on first use, so executors, bucket
//! sets and pipelines borrow pools instead of starting threads of their own. A launching thread
//! uses its *current* pool (installed for a scope with [`PoolGuard`]), else the process default.
//! Task 0 runs on the launching thread; workers spin briefly on a generation counter, then park.
//! A launch from inside a task (or while the pool is busy with another launch) runs inline with
//! `num_task = 1`, which kernels partition for correctly, instead of deadlocking; the lanes of
//! [`ThreadPool::run_lanes`] are not tasks in that sense. Workers start through `workers::spawn` and stop at process exit or unload.

use crate::abi::{FTVMParallelLambda, TVMParallelGroupEnv};
use crate::runtime::base::error::{error_from_callee, last_error_generation, Error, Result};
use crate::runtime::base::workers;
use crate::runtime::threads::pacer::{self, Pacer};
use once_cell::sync::{Lazy, OnceCell};
use parking_lot::{Condvar, Mutex};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

/// Polls (each yielding the core) before an idle worker sleeps on the condition variable.
/// Yielding keeps wake-up latency at a few microseconds without starving busy threads when
/// the machine is oversubscribed.
const SPIN_COUNT: usize = 1 << 14;

/// Busy-wait iterations before a waiting thread starts yielding its core.
const BUSY_SPINS: u32 = 1024;

#[repr(align(64))]
#[derive(Default)]
struct Padded(AtomicUsize);

/// The job of the current launch, published to workers through `generation`.
struct Job {
    f: unsafe extern "C" fn(c_int, *mut TVMParallelGroupEnv, *mut c_void) -> c_int,
    cdata: *mut c_void,
    env: *mut TVMParallelGroupEnv,
}

struct Shared {
    /// Bumped (release) once a job is published; workers wait for a new value.
    generation: AtomicUsize,
    /// Tasks of the current launch not finished yet.
    pending: AtomicUsize,
    /// The published job with its generation and task count.
    job: Mutex<Option<(usize, JobCell, usize)>>,
    /// Barrier counters, one per task, each on its own cache line.
    barrier: Box<[Padded]>,
    /// Per task, the last generation whose task of that index was claimed by some thread.
    claims: Box<[Padded]>,
    /// Per task, when a worker last claimed it ([`pacer::now_ns`]).
    claimed_ns: Box<[Padded]>,
    /// Workers that have started (a launch before all have is not timed: a worker still
    /// starting is not a descheduled one).
    started: AtomicUsize,
    /// First failing task's message.
    failure: Mutex<Option<(usize, String)>>,
    sleepers: Mutex<usize>,
    wake: Condvar,
    shutdown: AtomicBool,
}

#[derive(Clone, Copy)]
struct JobCell(*const Job);
// SAFETY: the job lives on the launcher's stack until every task has finished (`pending` is 0).
unsafe impl Send for JobCell {}

/// A set of worker threads serving parallel launches.
pub struct ThreadPool {
    shared: Arc<Shared>,
    /// Serializes launches: one launch owns the workers at a time.
    launch: Mutex<()>,
    num_threads: usize,
    /// Sizes launches asking for all threads on a busy machine (the default pool only).
    pacer: Pacer,
}

thread_local! {
    /// Set while this thread runs a task: nested launches then run inline.
    static IN_TASK: Cell<bool> = const { Cell::new(false) };
    static CURRENT: RefCell<Option<Arc<ThreadPool>>> = const { RefCell::new(None) };
}

/// Runs `f` with [`IN_TASK`] set to `in_task`, restoring the outer value (also on unwinding).
fn with_in_task<R>(in_task: bool, f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_TASK.with(|t| t.set(self.0));
        }
    }
    let _restore = Restore(IN_TASK.with(|t| t.replace(in_task)));
    f()
}

fn env_threads(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.trim().parse::<usize>().ok().filter(|&n| n > 0)
}

/// Threads of the default pool the user chose: `TVM_NUM_THREADS`, else `OMP_NUM_THREADS`.
fn user_num_threads() -> Option<usize> {
    env_threads("TVM_NUM_THREADS").or_else(|| env_threads("OMP_NUM_THREADS"))
}

/// Threads of the default pool: [`user_num_threads`], else the machine.
pub fn default_num_threads() -> usize {
    user_num_threads().unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// What makes two requests for a pool the same pool: its threads, its CPUs (None: unpinned),
/// and a slot number, so that users needing several distinct pools of one shape (the lanes of
/// an inter-op run, the groups of a pipeline) get distinct ones. Slot 0 unpinned with the
/// default thread count is the process default pool.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PoolKey {
    pub threads: usize,
    pub cpus: Option<Vec<usize>>,
    pub slot: usize,
}

/// Every shared pool, and every pool's state for stopping them at exit.
struct Pools {
    shared: HashMap<PoolKey, Arc<ThreadPool>>,
    all: Vec<Weak<Shared>>,
}

static POOLS: Lazy<Mutex<Pools>> = Lazy::new(|| Mutex::new(Pools { shared: HashMap::new(), all: Vec::new() }));

/// The pool for `key`, started on first use and shared by every later caller.
pub fn shared_pool(key: PoolKey) -> Result<Arc<ThreadPool>> {
    if let Some(p) = POOLS.lock().shared.get(&key) {
        return Ok(p.clone());
    }
    // Started outside the lock (spawning takes time); a racing caller's pool wins.
    let pool = Arc::new(ThreadPool::new(key.threads, key.cpus.clone())?);
    Ok(POOLS.lock().shared.entry(key).or_insert(pool).clone())
}

/// The process default pool: [`default_num_threads`] threads, unpinned (looked up once: every
/// launch outside a scoped pool comes here).
pub fn default_pool() -> Result<Arc<ThreadPool>> {
    static DEFAULT: OnceCell<Arc<ThreadPool>> = OnceCell::new();
    DEFAULT
        .get_or_try_init(|| {
            let pool = shared_pool(PoolKey { threads: default_num_threads(), cpus: None, slot: 0 })?;
            // A size the user chose is kept; the machine's is paced (see `pacer`).
            pool.pacer.enable(user_num_threads().is_none());
            Ok(pool)
        })
        .cloned()
}

/// Ask every pool's workers to return (at process exit or unload).
fn stop_all_pools() {
    let all = std::mem::take(&mut POOLS.lock().all);
    for shared in all.iter().filter_map(Weak::upgrade) {
        shared.stop();
    }
}

/// The pool launches from this thread use: the current one, else the default (if that cannot
/// start its workers, launches run inline on a pool of one thread).
pub fn current_pool() -> Arc<ThreadPool> {
    if let Some(p) = CURRENT.with(|c| c.borrow().clone()) {
        return p;
    }
    default_pool().unwrap_or_else(|_| Arc::new(ThreadPool::inline()))
}

/// Make `pool` this thread's pool for the guard's lifetime; the previous one comes back when
/// the guard drops, also when the scope unwinds.
pub struct PoolGuard {
    previous: Option<Arc<ThreadPool>>,
}

impl PoolGuard {
    pub fn install(pool: Arc<ThreadPool>) -> PoolGuard {
        PoolGuard { previous: CURRENT.with(|c| c.borrow_mut().replace(pool)) }
    }
}

impl Drop for PoolGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Make `pool` this thread's pool until the thread ends or it is set again
/// (`runtime.config_threadpool`, as TVM's is per thread).
pub fn set_thread_pool(pool: Arc<ThreadPool>) {
    CURRENT.with(|c| *c.borrow_mut() = Some(pool));
}

/// The CPUs this process may run on, in order (all of `0..available_parallelism` where the
/// affinity mask cannot be read).
pub fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity writes at most its size.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } == 0 {
            // SAFETY: CPU_ISSET reads within the set for ids < 1024 (CPU_SETSIZE).
            let cpus: Vec<usize> = (0..1024).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect();
            if !cpus.is_empty() {
                return cpus;
            }
        }
    }
    (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
}

pub(crate) fn pin_to(cpus: &[usize]) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a zeroed cpu_set_t is valid; CPU_SET stays within its bounds for ids < 1024.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus.iter().filter(|&&c| c < 1024) {
                libc::CPU_SET(c, &mut set);
            }
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpus;
}

/// Claim task `task` of launch `gen` for the calling thread; false if some thread already did.
fn claim(shared: &Shared, task: usize, gen: usize) -> bool {
    let slot = &shared.claims[task].0;
    let mut cur = slot.load(Ordering::Acquire);
    loop {
        // Generations only grow (wrapping after 2^64 launches is not a concern).
        if cur >= gen {
            return false;
        }
        match slot.compare_exchange_weak(cur, gen, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
}

fn run_task(job: &Job, task: usize, shared: &Shared) {
    let generation = last_error_generation();
    // SAFETY: the job's function and data are valid until all tasks finish (launch contract).
    let rc = with_in_task(true, || unsafe { (job.f)(task as c_int, job.env, job.cdata) });
    if rc != 0 {
        let msg = error_from_callee(generation, || Error::runtime("task returned an error without a message"));
        let mut f = shared.failure.lock();
        if f.as_ref().map_or(true, |(t, _)| task < *t) {
            *f = Some((task, msg.message().to_string()));
        }
    }
}

fn worker_loop(shared: Arc<Shared>, index: usize, cpus: Option<Vec<usize>>) {
    if let Some(c) = &cpus {
        pin_to(&[c[index % c.len()]]);
    }
    let task = index + 1;
    let mut seen = 0usize;
    shared.started.fetch_add(1, Ordering::AcqRel);
    loop {
        // Wait for a new generation: spin, then sleep.
        let mut spins = 0;
        let gen = loop {
            let g = shared.generation.load(Ordering::Acquire);
            if g != seen || shared.shutdown.load(Ordering::Acquire) {
                break g;
            }
            if spins < SPIN_COUNT {
                spins += 1;
                if spins < BUSY_SPINS as usize {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            } else {
                let mut sleepers = shared.sleepers.lock();
                *sleepers += 1;
                while shared.generation.load(Ordering::Acquire) == seen && !shared.shutdown.load(Ordering::Acquire) {
                    shared.wake.wait(&mut sleepers);
                }
                *sleepers -= 1;
                spins = 0;
            }
        };
        if shared.shutdown.load(Ordering::Acquire) {
            return;
        }
        seen = gen;
        // Only the job of the generation observed: a stale wake-up must not run a newer job.
        let job = *shared.job.lock();
        if let Some((job_gen, cell, n)) = job {
            // The launcher may already have run this task itself (see `launch`).
            if job_gen == gen && task < n && claim(&shared, task, gen) {
                shared.claimed_ns[task].0.store(pacer::now_ns() as usize, Ordering::Relaxed);
                // SAFETY: see `JobCell`; the claim succeeded for this generation, so the
                // launcher is still waiting for this task.
                run_task(unsafe { &*cell.0 }, task, &shared);
                shared.pending.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

impl Shared {
    fn new(num_threads: usize) -> Shared {
        Shared {
            generation: AtomicUsize::new(0),
            pending: AtomicUsize::new(0),
            job: Mutex::new(None),
            barrier: (0..num_threads).map(|_| Padded::default()).collect(),
            claims: (0..num_threads).map(|_| Padded::default()).collect(),
            claimed_ns: (0..num_threads).map(|_| Padded::default()).collect(),
            started: AtomicUsize::new(0),
            failure: Mutex::new(None),
            sleepers: Mutex::new(0),
            wake: Condvar::new(),
            shutdown: AtomicBool::new(false),
        }
    }

    /// Make the workers return once they finish what they run now.
    fn stop(&self) {
        self.shutdown.store(true, Ordering::Release);
        let _sleepers = self.sleepers.lock();
        self.wake.notify_all();
    }
}

impl ThreadPool {
    /// A pool running launches on `num_threads` threads (the caller plus `num_threads - 1`
    /// workers), pinned round-robin to `cpus` when given. Most callers want [`shared_pool`].
    pub fn new(num_threads: usize, cpus: Option<Vec<usize>>) -> Result<ThreadPool> {
        let num_threads = num_threads.max(1);
        let cpus = cpus.filter(|c| !c.is_empty());
        let shared = Arc::new(Shared::new(num_threads));
        let pool = ThreadPool { shared: shared.clone(), launch: Mutex::new(()), num_threads, pacer: Pacer::new(false) };
        workers::on_shut_down(stop_all_pools);
        {
            // Forget pools already dropped (a pool that lost a `shared_pool` race, a test's).
            let all = &mut POOLS.lock().all;
            all.retain(|w| w.strong_count() > 0);
            all.push(Arc::downgrade(&shared));
        }
        for i in 0..num_threads - 1 {
            let (s, c) = (shared.clone(), cpus.clone());
            // On failure `pool` drops, which stops the workers already started.
            workers::spawn(format!("tvm-worker-{}", i + 1), move || worker_loop(s, i, c))?;
        }
        Ok(pool)
    }

    /// A pool of one thread (the caller): every launch runs inline.
    pub fn inline() -> ThreadPool {
        ThreadPool {
            shared: Arc::new(Shared::new(1)),
            launch: Mutex::new(()),
            num_threads: 1,
            pacer: Pacer::new(false),
        }
    }

    pub fn num_threads(&self) -> usize {
        self.num_threads
    }

    /// Run `f(task, env, cdata)` for `num_task` tasks (0 = all threads, more than the pool is
    /// clamped) and wait for all. Any failing task fails the launch with its message.
    pub fn launch(&self, f: FTVMParallelLambda, cdata: *mut c_void, num_task: i32) -> Result<()> {
        let f = f.ok_or_else(|| Error::value("TVMBackendParallelLaunch: `flambda` is NULL"))?;
        if num_task < 0 {
            return Err(Error::value(format!("TVMBackendParallelLaunch: negative num_task {num_task}")));
        }
        let shared = &*self.shared;
        let nested = IN_TASK.with(|t| t.get());
        let stopped = shared.shutdown.load(Ordering::Acquire);
        let guard = if nested || stopped { None } else { self.launch.try_lock() };
        if guard.is_none() {
            return run_inline(f, cdata);
        }
        let n =
            if num_task == 0 { self.pacer.tasks(self.num_threads) } else { (num_task as usize).min(self.num_threads) };
        if n == 1 {
            return run_inline(f, cdata);
        }
        for c in shared.barrier.iter().take(n) {
            c.0.store(0, Ordering::Relaxed);
        }
        let mut env = TVMParallelGroupEnv { sync_handle: shared as *const Shared as *mut c_void, num_task: n as i32 };
        let job = Job { f, cdata, env: &mut env };
        *shared.failure.lock() = None;
        shared.pending.store(n - 1, Ordering::Release);
        let gen = shared.generation.load(Ordering::Acquire).wrapping_add(1);
        *shared.job.lock() = Some((gen, JobCell(&job), n));
        let published = (num_task == 0 && n == self.num_threads && self.pacer.watching()).then(pacer::now_ns);
        shared.generation.store(gen, Ordering::Release);
        let asleep = *shared.sleepers.lock() > 0;
        if asleep {
            shared.wake.notify_all();
        }
        // Timed for the pacer only when every worker was awake (a sleeping one is slow to
        // wake, not descheduled).
        let all_started = shared.started.load(Ordering::Acquire) + 1 >= self.num_threads;
        let published = published.filter(|_| !asleep && all_started);
        run_task(&job, 0, shared);
        let mut caller_ran = false;
        // Task 0 is done, so no task waits at a barrier for one that has not started: the
        // caller can run tasks no worker has picked up yet (a descheduled worker on a busy
        // machine, or one that stopped at shutdown, would otherwise stall the launch).
        for task in 1..n {
            if claim(shared, task, gen) {
                caller_ran = true;
                run_task(&job, task, shared);
                shared.pending.fetch_sub(1, Ordering::AcqRel);
            }
        }
        wait_for(|| shared.pending.load(Ordering::Acquire) == 0);
        if let Some(t0) = published {
            let claimed = |t: usize| shared.claimed_ns[t].0.load(Ordering::Relaxed) as u64;
            self.pacer.record(caller_ran || (1..n).any(|t| claimed(t).saturating_sub(t0) > pacer::LATE_NS));
        }
        *shared.job.lock() = None;
        drop(guard);
        match shared.failure.lock().take() {
            Some((task, msg)) => Err(Error::raw(format!("Task {task} error: {msg}"))),
            None => Ok(()),
        }
    }

    /// Run `lane(i)` for `i` in `0..n` (at most the pool's threads), lane 0 on the caller, and
    /// return when all have returned. The lanes are callers in their own right: each may install
    /// another pool and launch on it (a launch on this pool from a lane finds it busy and runs
    /// inline). Lanes that no worker takes in time (the pool is busy, or a worker is
    /// descheduled) run on the caller after lane 0, so `lane` must not wait for another lane to
    /// start.
    pub fn run_lanes<F: Fn(usize) + Sync>(&self, n: usize, lane: &F) -> Result<()> {
        unsafe extern "C" fn trampoline<F: Fn(usize) + Sync>(
            task: c_int,
            _env: *mut TVMParallelGroupEnv,
            cdata: *mut c_void,
        ) -> c_int {
            // SAFETY: `cdata` is the `&F` passed to `launch` below, which returns only after
            // every task has returned, so the borrow outlives each call.
            let f = unsafe { &*(cdata as *const F) };
            // A panic must not unwind through the pool: it fails the lane like an error.
            let run = || with_in_task(false, || f(task as usize));
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
                Ok(()) => 0,
                Err(p) => {
                    crate::runtime::base::error::set_last_error_text(&format!(
                        "panic in lane {task}: {}",
                        crate::runtime::base::error::panic_message(&*p)
                    ));
                    -1
                }
            }
        }
        let n = i32::try_from(n.clamp(1, self.num_threads)).unwrap_or(1);
        self.launch(Some(trampoline::<F>), lane as *const F as *mut c_void, n)
    }
}

/// Spin, then yield, until `done` holds (a launch's tasks take microseconds).
fn wait_for(done: impl Fn() -> bool) {
    let mut spins = 0u32;
    while !done() {
        if spins < BUSY_SPINS {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        // The workers return on their own; the worker registry joins them.
        self.shared.stop();
    }
}

fn run_inline(
    f: unsafe extern "C" fn(c_int, *mut TVMParallelGroupEnv, *mut c_void) -> c_int,
    cdata: *mut c_void,
) -> Result<()> {
    let mut env = TVMParallelGroupEnv { sync_handle: std::ptr::null_mut(), num_task: 1 };
    let generation = last_error_generation();
    // SAFETY: `f` follows the FTVMParallelLambda contract; `env` outlives the call.
    let rc = with_in_task(true, || unsafe { f(0, &mut env, cdata) });
    if rc != 0 {
        let e = error_from_callee(generation, || Error::runtime("task returned an error without a message"));
        return Err(Error::raw(format!("Task 0 error: {e}")));
    }
    Ok(())
}

/// `TVMBackendParallelBarrier`: wait until every task of the launch reaches this point.
///
/// # Safety
/// `penv` must be NULL or the environment that a launch still running passed to the calling
/// task, and `task_id` must be that task's own id. (A wrong id or a task that skips the barrier
/// makes the others wait forever, but is not undefined behaviour.)
pub unsafe fn barrier(task_id: c_int, penv: *mut TVMParallelGroupEnv) -> Result<()> {
    if penv.is_null() {
        return Err(Error::value("TVMBackendParallelBarrier: `penv` is NULL"));
    }
    // SAFETY: non-NULL `penv` is the environment of a running launch (kernel contract).
    let (n, sync) = unsafe { ((*penv).num_task, (*penv).sync_handle) };
    if task_id < 0 || task_id >= n {
        return Err(Error::index(format!("TVMBackendParallelBarrier: task {task_id} of {n}")));
    }
    if n == 1 {
        return Ok(());
    }
    if sync.is_null() {
        return Err(Error::value("TVMBackendParallelBarrier: the environment has no barrier state"));
    }
    // SAFETY: `sync_handle` of a multi-task launch points to the pool's shared state.
    let shared = unsafe { &*(sync as *const Shared) };
    let counters = &shared.barrier[..n as usize];
    let mine = counters[task_id as usize].0.fetch_add(1, Ordering::AcqRel) + 1;
    for c in counters {
        wait_for(|| c.0.load(Ordering::Acquire) >= mine);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI64;

    struct Sum {
        parts: Vec<AtomicI64>,
        after_barrier: Vec<AtomicI64>,
    }

    unsafe extern "C" fn task(id: c_int, env: *mut TVMParallelGroupEnv, cdata: *mut c_void) -> c_int {
        // SAFETY: the test launches this with `cdata` pointing to a `Sum` that outlives the launch.
        let s = unsafe { &*(cdata as *const Sum) };
        // SAFETY: the pool passes each task a valid environment for the launch.
        let n = unsafe { (*env).num_task };
        s.parts[id as usize].store(id as i64 + 1, Ordering::SeqCst);
        // SAFETY: `env` is this launch's environment and `id` this task's id.
        if unsafe { barrier(id, env) }.is_err() {
            return -1;
        }
        // After the barrier every task sees every part.
        let total: i64 = s.parts.iter().take(n as usize).map(|p| p.load(Ordering::SeqCst)).sum();
        s.after_barrier[id as usize].store(total, Ordering::SeqCst);
        0
    }

    #[test]
    fn launch_with_barrier_on_all_threads() {
        let pool = ThreadPool::new(4, None).unwrap();
        for _ in 0..200 {
            let s = Sum {
                parts: (0..4).map(|_| AtomicI64::new(0)).collect(),
                after_barrier: (0..4).map(|_| AtomicI64::new(0)).collect(),
            };
            pool.launch(Some(task), &s as *const Sum as *mut c_void, 0).unwrap();
            for a in &s.after_barrier {
                assert_eq!(a.load(Ordering::SeqCst), 1 + 2 + 3 + 4);
            }
        }
    }

    unsafe extern "C" fn failing(id: c_int, _env: *mut TVMParallelGroupEnv, _c: *mut c_void) -> c_int {
        if id == 2 {
            crate::runtime::base::error::set_last_error_text("boom in task 2");
            return -1;
        }
        0
    }

    #[test]
    fn a_failing_task_fails_the_launch() {
        let pool = ThreadPool::new(3, None).unwrap();
        let e = pool.launch(Some(failing), std::ptr::null_mut(), 0).unwrap_err();
        assert_eq!(e.message(), "TVMError: Task 2 error: TVMError: boom in task 2");
        pool.launch(Some(task_noop), std::ptr::null_mut(), 0).unwrap();
    }

    unsafe extern "C" fn task_noop(_: c_int, _: *mut TVMParallelGroupEnv, _: *mut c_void) -> c_int {
        0
    }

    unsafe extern "C" fn nested(_: c_int, _env: *mut TVMParallelGroupEnv, c: *mut c_void) -> c_int {
        // SAFETY: the test passes a pointer to a pool that outlives the launch.
        let pool = unsafe { &*(c as *const ThreadPool) };
        match pool.launch(Some(task_noop), std::ptr::null_mut(), 0) {
            Ok(()) => 0,
            Err(_) => -1,
        }
    }

    #[test]
    fn a_pool_guard_restores_the_previous_pool_when_its_scope_panics() {
        let outer = Arc::new(ThreadPool::inline());
        let _outer = PoolGuard::install(outer.clone());
        let inner = Arc::new(ThreadPool::new(2, None).unwrap());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = PoolGuard::install(inner.clone());
            assert!(Arc::ptr_eq(&current_pool(), &inner));
            panic!("inside the scope");
        }));
        assert!(r.is_err());
        assert!(Arc::ptr_eq(&current_pool(), &outer), "the scope's pool stayed installed");
    }

    #[test]
    fn shared_pools_are_one_per_key_and_every_lane_runs_once() {
        let key = PoolKey { threads: 3, cpus: None, slot: 77 };
        let (a, b) = (shared_pool(key.clone()).unwrap(), shared_pool(key).unwrap());
        assert!(Arc::ptr_eq(&a, &b));
        let seen: Vec<Mutex<Option<std::thread::ThreadId>>> = (0..3).map(|_| Mutex::new(None)).collect();
        a.run_lanes(3, &|l| assert!(seen[l].lock().replace(std::thread::current().id()).is_none())).unwrap();
        assert!(seen.iter().all(|s| s.lock().is_some()), "every lane ran");
        assert_eq!(*seen[0].lock(), Some(std::thread::current().id()), "lane 0 runs on the caller");
    }

    #[test]
    fn a_panicking_lane_fails_the_run_and_the_pool_goes_on() {
        let pool = ThreadPool::new(2, None).unwrap();
        let e = pool.run_lanes(2, &|l| assert!(l != 1, "lane one gives up")).unwrap_err();
        assert!(e.message().contains("panic in lane 1: lane one gives up"), "{e}");
        pool.run_lanes(2, &|_| {}).unwrap();
    }

    unsafe extern "C" fn count_tasks(_: c_int, env: *mut TVMParallelGroupEnv, c: *mut c_void) -> c_int {
        // SAFETY: the test passes an AtomicI64 that outlives the launch; `env` is the launch's.
        unsafe { (*(c as *const AtomicI64)).store((*env).num_task as i64, Ordering::SeqCst) };
        0
    }

    fn tasks_of_a_launch(pool: &ThreadPool) -> i64 {
        let n = AtomicI64::new(0);
        pool.launch(Some(count_tasks), &n as *const AtomicI64 as *mut c_void, 0).unwrap();
        n.load(Ordering::SeqCst)
    }

    #[test]
    fn a_paced_pool_halves_launches_after_late_workers_and_barriers_still_meet() {
        let pool = ThreadPool::new(4, None).unwrap();
        pool.pacer.enable(true);
        wait_for(|| pool.shared.started.load(Ordering::Acquire) == 3);
        // Late workers, as a busy machine makes them: the pacer hears of them as the launcher does.
        for _ in 0..pacer::LATE_IN_WINDOW {
            pool.pacer.record(true);
        }
        for i in 0..pacer::REDUCED {
            assert_eq!(tasks_of_a_launch(&pool), 2, "launch {i} of the reduced ones");
        }
        // Then every thread again, and a kernel meeting at a barrier gets all of its tasks.
        let s = Sum {
            parts: (0..4).map(|_| AtomicI64::new(0)).collect(),
            after_barrier: (0..4).map(|_| AtomicI64::new(0)).collect(),
        };
        pool.launch(Some(task), &s as *const Sum as *mut c_void, 0).unwrap();
        assert!(s.after_barrier.iter().all(|a| a.load(Ordering::SeqCst) == 1 + 2 + 3 + 4));
        // While reduced, a launch asking for a task count still gets it.
        for _ in 0..pacer::LATE_IN_WINDOW {
            pool.pacer.record(true);
        }
        let n = AtomicI64::new(0);
        pool.launch(Some(count_tasks), &n as *const AtomicI64 as *mut c_void, 3).unwrap();
        assert_eq!(n.load(Ordering::SeqCst), 3);
        assert_eq!(tasks_of_a_launch(&pool), 2);
    }

    #[test]
    fn nested_launch_runs_inline() {
        let pool = ThreadPool::new(2, None).unwrap();
        pool.launch(Some(nested), &pool as *const ThreadPool as *mut c_void, 0).unwrap();
    }
}
