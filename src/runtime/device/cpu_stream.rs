//! Asynchronous streams and events on the host.
//!
//! A [`CpuStream`] is an in-order queue of host tasks (copies, graph runs, callbacks) that runs
//! while the queuing thread goes on. Streams are strands over one shared set of worker threads:
//! a stream with work is handed to an idle worker, which runs its tasks in order until the queue
//! is empty or the stream must wait for an event. So one request's stages on three streams
//! usually run back to back on one worker, with no thread hand-over between them, while
//! independent streams run on different workers at once. A worker is added when every worker is
//! busy, up to one per core; past that only when ready streams wait with every worker blocked
//! (a long or blocking task never starves other streams). A worker idle for [`IDLE_EXIT`]
//! returns, so the threads follow the load. They start through `workers::spawn` and stop at
//! exit.
//!
//! A [`CpuEvent`] marks a point in a stream: recording it queues a task that marks the point
//! reached. A stream waits on it with a wait task: when that task is reached before the event,
//! the stream is parked on the event (no thread blocks) and resumes when the event is reached.
//! The host may query or synchronize either.
//!
//! Events count recordings, as CUDA events do: a wait or synchronize refers to the latest
//! recording made before it, and an event never recorded counts as reached.

use crate::runtime::base::workers;
use once_cell::sync::Lazy;
use parking_lot::{Condvar, Mutex};
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Work a stream runs when it reaches it.
pub type HostTask = Box<dyn FnOnce() + Send + 'static>;

/// How long an idle worker or a waiting host polls (yielding the core) before it sleeps. Work
/// arrives microseconds apart while requests flow, so polling a little saves a sleep/wake-up
/// pair; bounded in time, it costs little CPU when tasks are long (kernels running on the other
/// cores need it).
const POLL_BEFORE_SLEEP: Duration = Duration::from_micros(50);

/// Tasks a worker runs from one stream before letting other ready streams go first.
const TASKS_PER_TURN: usize = 64;

/// Most worker threads (more streams can be busy at once only if their tasks block).
const MAX_WORKERS: usize = 512;

/// How long a worker waits for a stream with work before it returns.
const IDLE_EXIT: Duration = Duration::from_secs(2);

/// How often the watch (see [`Scheduler::want_worker`]) looks for ready streams that no worker
/// has taken since its last look.
const WATCH_PERIOD: Duration = Duration::from_millis(5);

/// Workers started as soon as a stream finds none idle: one per core. Beyond that a worker is
/// added only when ready streams wait a whole watch period with every worker busy (their tasks
/// block), so busy workers do not multiply past the cores while blocking ones never starve.
static EAGER_WORKERS: Lazy<usize> = Lazy::new(|| std::thread::available_parallelism().map_or(1, |n| n.get()));

/// Poll `ready` for up to [`POLL_BEFORE_SLEEP`], yielding the core; true once it holds.
pub fn poll_until(ready: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    for i in 0u32.. {
        if ready() {
            return true;
        }
        if i < 64 {
            std::hint::spin_loop();
        } else {
            if i % 16 == 0 && start.elapsed() > POLL_BEFORE_SLEEP {
                return ready();
            }
            std::thread::yield_now();
        }
    }
    ready()
}

enum Task {
    Run(HostTask),
    /// Go on once the event has reached this recording.
    Wait(Arc<CpuEvent>, u64),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    /// Nothing queued, no worker holds it.
    Idle,
    /// In the scheduler's ready queue, or a worker runs its tasks.
    Scheduled,
    /// Its next task waits for an event; the event will make it ready.
    Parked,
}

struct StrandState {
    tasks: VecDeque<Task>,
    status: Status,
    /// Hosts sleeping in [`CpuStream::synchronize`].
    sleeping_syncs: usize,
    /// Freed: later tasks run on the caller (see [`CpuStream::push`]).
    closed: bool,
}

/// A stream's queue and counters, shared with the workers and the events it waits on.
struct Strand {
    state: Mutex<StrandState>,
    done: Condvar,
    /// Tasks queued so far, and tasks finished so far.
    queued: AtomicU64,
    finished: AtomicU64,
}

/// The shared workers and the queue of streams ready to run.
struct Scheduler {
    /// Ready strands, and how many workers sleep waiting for one (a wake-up is a system call:
    /// made only when someone sleeps).
    ready: Mutex<ReadyQueue>,
    ready_len: AtomicUsize,
    work: Condvar,
    /// Workers looking for work (polling or asleep), and all workers.
    idle: AtomicUsize,
    workers: AtomicUsize,
    /// Set at process exit: idle workers return.
    stopping: AtomicBool,
    /// Strands taken from the ready queue so far (the watch's measure of progress).
    taken: AtomicU64,
    watching: AtomicBool,
}

#[derive(Default)]
struct ReadyQueue {
    strands: VecDeque<Arc<Strand>>,
    sleeping: usize,
}

static SCHEDULER: Lazy<Scheduler> = Lazy::new(|| Scheduler {
    ready: Mutex::new(ReadyQueue::default()),
    ready_len: AtomicUsize::new(0),
    work: Condvar::new(),
    idle: AtomicUsize::new(0),
    workers: AtomicUsize::new(0),
    stopping: AtomicBool::new(false),
    taken: AtomicU64::new(0),
    watching: AtomicBool::new(false),
});

/// Make every stream worker return once no stream has work (at process exit or unload).
fn stop_workers() {
    SCHEDULER.stopping.store(true, Ordering::Release);
    let _q = SCHEDULER.ready.lock();
    SCHEDULER.work.notify_all();
}

thread_local! {
    /// The strand whose task this thread runs, if any (a task synchronizing or freeing its own
    /// stream must not wait for itself).
    static RUNNING: Cell<usize> = const { Cell::new(0) };
}

impl Scheduler {
    /// Queue a strand that just became ready; add a worker if none is looking for work.
    fn schedule(&'static self, strand: Arc<Strand>) {
        let mut q = self.ready.lock();
        q.strands.push_back(strand);
        self.ready_len.fetch_add(1, Ordering::AcqRel);
        if q.sleeping > 0 {
            self.work.notify_one();
        }
        drop(q);
        if self.idle.load(Ordering::Acquire) == 0 {
            self.want_worker();
        }
    }

    /// No worker is looking for work and a strand is ready: start one while below
    /// [`EAGER_WORKERS`], else make sure the watch runs.
    fn want_worker(&'static self) {
        let n = self.workers.load(Ordering::Acquire);
        if n < *EAGER_WORKERS {
            self.spawn_worker();
        } else if n < MAX_WORKERS
            && !self.watching.swap(true, Ordering::AcqRel)
            && workers::spawn("tvm-stream-watch".into(), move || self.watch()).is_err()
        {
            self.watching.store(false, Ordering::Release);
        }
    }

    /// Add a worker whenever ready strands waited a whole period with every worker busy and
    /// none taken; return after [`IDLE_EXIT`] with nothing ready, or when stopping.
    fn watch(&'static self) {
        let (mut last, mut quiet) = (self.taken.load(Ordering::Acquire), Duration::ZERO);
        while quiet < IDLE_EXIT && !self.stopping.load(Ordering::Acquire) {
            std::thread::sleep(WATCH_PERIOD);
            let taken = self.taken.load(Ordering::Acquire);
            let ready = self.ready_len.load(Ordering::Acquire) > 0;
            let starved = ready && taken == last && self.idle.load(Ordering::Acquire) == 0;
            if starved && self.workers.load(Ordering::Acquire) < MAX_WORKERS {
                self.spawn_worker();
            }
            quiet = if ready { Duration::ZERO } else { quiet + WATCH_PERIOD };
            last = taken;
        }
        self.watching.store(false, Ordering::Release);
        // A strand that became ready as the watch left must not be missed.
        if self.ready_len.load(Ordering::Acquire) > 0 && self.idle.load(Ordering::Acquire) == 0 {
            self.want_worker();
        }
    }

    fn spawn_worker(&'static self) {
        workers::on_shut_down(stop_workers);
        let n = self.workers.fetch_add(1, Ordering::AcqRel);
        if workers::spawn(format!("tvm-stream-{n}"), move || self.worker()).is_err() {
            // The workers there are still drain the queue, only with less overlap.
            self.workers.fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn take_ready(&self) -> Option<Arc<Strand>> {
        let s = self.ready.lock().strands.pop_front();
        if s.is_some() {
            self.ready_len.fetch_sub(1, Ordering::AcqRel);
            self.taken.fetch_add(1, Ordering::AcqRel);
        }
        s
    }

    /// Wait for a ready strand: poll, then sleep. None: the worker has been idle for
    /// [`IDLE_EXIT`], or the runtime is stopping, and is no longer counted: it must return.
    fn next_strand(&'static self) -> Option<Arc<Strand>> {
        self.idle.fetch_add(1, Ordering::AcqRel);
        let strand = loop {
            poll_until(|| self.ready_len.load(Ordering::Acquire) > 0);
            let mut q = self.ready.lock();
            let mut idle_too_long = false;
            if q.strands.is_empty() {
                q.sleeping += 1;
                let wait = |q: &mut ReadyQueue| q.strands.is_empty() && !self.stopping.load(Ordering::Acquire);
                idle_too_long = self.work.wait_while_for(&mut q, wait, IDLE_EXIT).timed_out();
                q.sleeping -= 1;
            }
            if let Some(s) = q.strands.pop_front() {
                self.ready_len.fetch_sub(1, Ordering::AcqRel);
                self.taken.fetch_add(1, Ordering::AcqRel);
                break s;
            }
            if !idle_too_long && !self.stopping.load(Ordering::Acquire) {
                continue;
            }
            // Idle too long or stopping: leave while holding the queue, so a strand scheduled
            // from now on sees one idle worker less (and starts one if none is left).
            self.idle.fetch_sub(1, Ordering::AcqRel);
            self.workers.fetch_sub(1, Ordering::AcqRel);
            return None;
        };
        // More ready streams and no one else looking: they must not wait for this one's turn.
        if self.idle.fetch_sub(1, Ordering::AcqRel) == 1 && self.ready_len.load(Ordering::Acquire) > 0 {
            self.want_worker();
        }
        Some(strand)
    }

    fn worker(&'static self) {
        loop {
            let Some(mut strand) = self.next_strand() else { return };
            // Run ready strands back to back without going idle in between.
            loop {
                if let Some(again) = strand.run_turn() {
                    self.schedule(again);
                }
                match self.take_ready() {
                    Some(s) => strand = s,
                    None => break,
                }
            }
        }
    }
}

impl Strand {
    /// Run up to [`TASKS_PER_TURN`] tasks; the strand itself if it still has work to do then.
    fn run_turn(self: Arc<Self>) -> Option<Arc<Strand>> {
        for _ in 0..TASKS_PER_TURN {
            let mut st = self.state.lock();
            let Some(task) = st.tasks.pop_front() else {
                st.status = Status::Idle;
                return None;
            };
            match task {
                Task::Wait(event, target) => {
                    if !event.park_unless_reached(&self, target) {
                        st.tasks.push_front(Task::Wait(event, target));
                        st.status = Status::Parked;
                        return None;
                    }
                    drop(st);
                }
                Task::Run(f) => {
                    drop(st);
                    let outer = RUNNING.with(|r| r.replace(Arc::as_ptr(&self) as usize));
                    // A task is runtime code with its own error reporting; a panic in one must
                    // not take the stream down with the tasks queued behind it.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
                    RUNNING.with(|r| r.set(outer));
                }
            }
            self.task_finished();
        }
        Some(self)
    }

    fn task_finished(&self) {
        self.finished.fetch_add(1, Ordering::AcqRel);
        if self.state.lock().sleeping_syncs > 0 {
            self.done.notify_all();
        }
    }

    /// The event this strand was parked on is reached: make it ready again.
    fn resume(self: Arc<Self>) {
        let mut st = self.state.lock();
        if st.status == Status::Parked {
            st.status = Status::Scheduled;
            drop(st);
            SCHEDULER.schedule(self);
        }
    }

    fn is_running_here(&self) -> bool {
        RUNNING.with(|r| r.get()) == self as *const Strand as usize
    }
}

/// A stream: an in-order queue of host tasks, run by the shared workers.
pub struct CpuStream {
    strand: Arc<Strand>,
}

impl CpuStream {
    /// A new stream (no thread of its own: the shared workers run it).
    pub fn new() -> CpuStream {
        let state = StrandState { tasks: VecDeque::new(), status: Status::Idle, sleeping_syncs: 0, closed: false };
        let strand = Strand {
            state: Mutex::new(state),
            done: Condvar::new(),
            queued: AtomicU64::new(0),
            finished: AtomicU64::new(0),
        };
        CpuStream { strand: Arc::new(strand) }
    }

    fn enqueue(&self, task: Task) {
        let s = &self.strand;
        let mut st = s.state.lock();
        if st.closed {
            // Queued while the stream is being freed (a race the caller lost): it runs here,
            // after what was queued before, rather than never.
            drop(st);
            self.synchronize();
            match task {
                Task::Run(f) => f(),
                Task::Wait(event, target) => event.wait_for(target),
            }
            return;
        }
        st.tasks.push_back(task);
        s.queued.fetch_add(1, Ordering::AcqRel);
        if st.status == Status::Idle {
            st.status = Status::Scheduled;
            drop(st);
            SCHEDULER.schedule(s.clone());
        }
    }

    /// Queue `task` behind everything queued before it.
    pub fn push(&self, task: HostTask) {
        self.enqueue(Task::Run(task));
    }

    /// Whether everything queued so far has run.
    pub fn is_idle(&self) -> bool {
        self.strand.finished.load(Ordering::Acquire) >= self.strand.queued.load(Ordering::Acquire)
    }

    /// Block until everything queued before this call has run. From one of the stream's own
    /// tasks it returns at once: the tasks before it are done.
    pub fn synchronize(&self) {
        let s = &*self.strand;
        if s.is_running_here() {
            return;
        }
        let target = s.queued.load(Ordering::Acquire);
        let reached = || s.finished.load(Ordering::Acquire) >= target;
        if poll_until(reached) {
            return;
        }
        let mut st = s.state.lock();
        st.sleeping_syncs += 1;
        s.done.wait_while(&mut st, |_| !reached());
        st.sleeping_syncs -= 1;
    }

    /// Let what is queued run, then close the stream (later tasks run on their caller). From
    /// one of the stream's own tasks it does not wait for the rest of the queue.
    pub fn shut_down(&self) {
        self.synchronize();
        self.strand.state.lock().closed = true;
    }
}

impl Drop for CpuStream {
    fn drop(&mut self) {
        self.shut_down();
    }
}

#[derive(Default)]
struct EventState {
    /// Recordings made, and recordings whose point its stream has passed.
    recorded: u64,
    reached: u64,
    /// Streams parked until a recording is reached.
    parked: Vec<(Arc<Strand>, u64)>,
    /// Hosts sleeping in `wait_for`.
    sleepers: usize,
}

/// A point in a stream that others can wait for.
#[derive(Default)]
pub struct CpuEvent {
    state: Mutex<EventState>,
    reached: Condvar,
}

impl CpuEvent {
    /// Record the event on `stream` (None: the synchronous default stream, so the point is
    /// reached now).
    pub fn record(self: &Arc<Self>, stream: Option<&CpuStream>) {
        let target = {
            let mut st = self.state.lock();
            st.recorded += 1;
            st.recorded
        };
        match stream {
            None => self.mark_reached(target),
            Some(s) => {
                let me = self.clone();
                s.push(Box::new(move || me.mark_reached(target)));
            }
        }
    }

    fn mark_reached(&self, target: u64) {
        let mut st = self.state.lock();
        st.reached = st.reached.max(target);
        let reached = st.reached;
        let (wake, keep): (Vec<_>, Vec<_>) =
            std::mem::take(&mut st.parked).into_iter().partition(|(_, t)| *t <= reached);
        st.parked = keep;
        let sleepers = st.sleepers;
        drop(st);
        if sleepers > 0 {
            self.reached.notify_all();
        }
        for (strand, _) in wake {
            strand.resume();
        }
    }

    /// True if recording `target` is reached; else parks `strand` on it (the caller holds the
    /// strand's lock and marks it parked, so the wake-up cannot come before).
    fn park_unless_reached(&self, strand: &Arc<Strand>, target: u64) -> bool {
        let mut st = self.state.lock();
        if st.reached >= target {
            return true;
        }
        st.parked.push((strand.clone(), target));
        false
    }

    /// The recording a wait made now refers to, or None if it is reached already.
    fn pending_target(&self) -> Option<u64> {
        let st = self.state.lock();
        (st.reached < st.recorded).then_some(st.recorded)
    }

    fn wait_for(&self, target: u64) {
        let reached = || self.state.lock().reached >= target;
        if poll_until(reached) {
            return;
        }
        let mut st = self.state.lock();
        st.sleepers += 1;
        self.reached.wait_while(&mut st, |st| st.reached < target);
        st.sleepers -= 1;
    }

    /// Make `stream` wait for the latest recording (None: the host waits, as the default
    /// stream is synchronous).
    pub fn wait_on(self: &Arc<Self>, stream: Option<&CpuStream>) {
        let Some(target) = self.pending_target() else { return };
        match stream {
            None => self.wait_for(target),
            Some(s) => s.enqueue(Task::Wait(self.clone(), target)),
        }
    }

    /// Block the host until the latest recording is reached.
    pub fn synchronize(&self) {
        if let Some(target) = self.pending_target() {
            self.wait_for(target);
        }
    }

    /// Whether the latest recording is reached.
    pub fn is_reached(&self) -> bool {
        self.pending_target().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    fn stream() -> CpuStream {
        CpuStream::new()
    }

    #[test]
    fn tasks_run_in_order_off_the_host() {
        let s = stream();
        let log = Arc::new(Mutex::new(Vec::new()));
        let host = std::thread::current().id();
        for i in 0..100 {
            let log = log.clone();
            s.push(Box::new(move || {
                assert_ne!(std::thread::current().id(), host);
                log.lock().push(i);
            }));
        }
        s.synchronize();
        assert!(s.is_idle());
        assert_eq!(*log.lock(), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn a_stream_waits_for_an_event_without_blocking_the_host() {
        let (a, b) = (stream(), stream());
        let ev = Arc::new(CpuEvent::default());
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let g = gate.clone();
        a.push(Box::new(move || {
            let mut open = g.0.lock();
            while !*open {
                g.1.wait(&mut open);
            }
        }));
        ev.record(Some(&a));
        let after = Arc::new(AtomicUsize::new(0));
        ev.wait_on(Some(&b));
        let af = after.clone();
        b.push(Box::new(move || {
            af.store(1, Ordering::SeqCst);
        }));
        // The host went on; `b` is held by the event, which `a` has not reached.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(after.load(Ordering::SeqCst), 0);
        assert!(!ev.is_reached() && !b.is_idle());
        *gate.0.lock() = true;
        gate.1.notify_all();
        b.synchronize();
        assert_eq!(after.load(Ordering::SeqCst), 1);
        assert!(ev.is_reached());
    }

    #[test]
    fn an_unrecorded_event_is_reached_and_waits_refer_to_the_latest_recording() {
        let s = stream();
        let ev = Arc::new(CpuEvent::default());
        assert!(ev.is_reached());
        ev.synchronize();
        ev.wait_on(None);
        for _ in 0..50 {
            ev.record(Some(&s));
        }
        ev.synchronize();
        assert!(ev.is_reached());
        ev.record(None);
        assert!(ev.is_reached());
    }

    #[test]
    fn dropping_a_stream_runs_what_is_queued() {
        let n = Arc::new(AtomicUsize::new(0));
        {
            let s = stream();
            for _ in 0..10 {
                let n = n.clone();
                s.push(Box::new(move || {
                    std::thread::sleep(Duration::from_millis(1));
                    n.fetch_add(1, Ordering::SeqCst);
                }));
            }
        }
        assert_eq!(n.load(Ordering::SeqCst), 10);
    }

    #[test]
    fn a_panicking_task_does_not_stop_the_stream() {
        let s = stream();
        s.push(Box::new(|| panic!("task bug")));
        let n = Arc::new(AtomicUsize::new(0));
        let m = n.clone();
        s.push(Box::new(move || {
            m.fetch_add(1, Ordering::SeqCst);
        }));
        s.synchronize();
        assert_eq!(n.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn many_streams_hand_over_through_events() {
        // A chain of 4 streams, each waiting on the previous one's event before adding to a
        // counter: 500 rounds must see every stage in order.
        let streams: Vec<CpuStream> = (0..4).map(|_| stream()).collect();
        let events: Vec<Arc<CpuEvent>> = (0..4).map(|_| Arc::new(CpuEvent::default())).collect();
        let value = Arc::new(Mutex::new(Vec::new()));
        for round in 0..500u64 {
            for (k, s) in streams.iter().enumerate() {
                if k > 0 {
                    events[k - 1].wait_on(Some(s));
                }
                let v = value.clone();
                s.push(Box::new(move || v.lock().push(round * 4 + k as u64)));
                events[k].record(Some(s));
            }
        }
        events[3].synchronize();
        let got = value.lock().clone();
        // Per round the stages are ordered; rounds of one stream are ordered.
        for round in 0..500u64 {
            let pos: Vec<usize> = (0..4).map(|k| got.iter().position(|&x| x == round * 4 + k).unwrap()).collect();
            assert!(pos.windows(2).all(|w| w[0] < w[1]), "round {round}: {pos:?}");
        }
    }

    #[test]
    fn blocking_tasks_do_not_starve_other_streams() {
        // Eight streams whose first tasks all wait for each other: only workers added while the
        // others block let them all start.
        let streams: Vec<CpuStream> = (0..8).map(|_| stream()).collect();
        let all_in = Arc::new(std::sync::Barrier::new(8));
        let after = Arc::new(AtomicUsize::new(0));
        for s in &streams {
            let (b, a) = (all_in.clone(), after.clone());
            s.push(Box::new(move || {
                b.wait();
                a.fetch_add(1, Ordering::SeqCst);
            }));
        }
        streams.iter().for_each(CpuStream::synchronize);
        assert_eq!(after.load(Ordering::SeqCst), 8);
    }

    #[test]
    fn a_task_may_synchronize_and_free_its_own_stream() {
        let s = Arc::new(stream());
        let n = Arc::new(AtomicUsize::new(0));
        let (me, m) = (s.clone(), n.clone());
        s.push(Box::new(move || {
            me.synchronize();
            me.shut_down();
            m.fetch_add(1, Ordering::SeqCst);
        }));
        let m = n.clone();
        s.push(Box::new(move || {
            m.fetch_add(1, Ordering::SeqCst);
        }));
        s.synchronize();
        assert_eq!(n.load(Ordering::SeqCst), 2);
    }
}
