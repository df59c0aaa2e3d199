//! Asynchronous streams and events on the host.
//!
//! A [`CpuStream`] is an in-order queue of host tasks run by one worker thread of its own, so
//! work queued on it (copies, graph runs, callbacks) runs while the queuing thread goes on. A
//! [`CpuEvent`] marks a point in a stream: recording it queues a task that marks the point
//! reached; a stream waits on it by queuing a task that blocks *that stream's worker* (never
//! the host) until the point is reached; the host may query or synchronize it.
//!
//! Events count recordings, as CUDA events do: a wait or synchronize refers to the latest
//! recording made before it, and an event never recorded counts as reached.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

/// Work a stream runs when it reaches it.
pub type HostTask = Box<dyn FnOnce() + Send + 'static>;

/// How long an idle stream worker or a waiting host polls (yielding the core) before it sleeps.
/// A request's stages hand over from one stream to the next within microseconds, so polling a
/// little saves a sleep/wake-up pair per hand-over; bounded in time, it costs little CPU when
/// stages are long (kernels running on the other cores need it).
const POLL_BEFORE_SLEEP: Duration = Duration::from_micros(50);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

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

#[derive(Default)]
struct Queue {
    tasks: VecDeque<HostTask>,
    /// Set by [`CpuStream::shut_down`]: the worker drains the queue, then exits.
    closing: bool,
    /// Hosts sleeping in [`CpuStream::synchronize`].
    sleeping_syncs: usize,
    /// Whether the worker sleeps on `work`.
    worker_sleeping: bool,
}

struct StreamShared {
    queue: Mutex<Queue>,
    work: Condvar,
    done: Condvar,
    /// Tasks queued so far, and tasks finished so far.
    queued: AtomicU64,
    finished: AtomicU64,
}

/// A stream: an in-order queue of host tasks and the worker thread running them.
pub struct CpuStream {
    shared: Arc<StreamShared>,
    worker: Mutex<Option<JoinHandle<()>>>,
    worker_id: ThreadId,
}

impl StreamShared {
    fn next_task(&self) -> Option<HostTask> {
        let mut q = lock(&self.queue);
        loop {
            if let Some(t) = q.tasks.pop_front() {
                return Some(t);
            }
            if q.closing {
                return None;
            }
            drop(q);
            let queued = || self.queued.load(Ordering::Acquire) != self.finished.load(Ordering::Acquire);
            poll_until(queued);
            q = lock(&self.queue);
            if q.tasks.is_empty() && !q.closing {
                q.worker_sleeping = true;
                q = self.work.wait_while(q, |q| q.tasks.is_empty() && !q.closing).unwrap_or_else(|e| e.into_inner());
                q.worker_sleeping = false;
            }
        }
    }

    fn run(&self) {
        while let Some(task) = self.next_task() {
            // A task is runtime code with its own error reporting; a panic in one must not
            // take the stream down with the tasks queued behind it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
            self.finished.fetch_add(1, Ordering::AcqRel);
            if lock(&self.queue).sleeping_syncs > 0 {
                self.done.notify_all();
            }
        }
    }
}

impl CpuStream {
    /// A stream with a fresh worker thread named `name`.
    pub fn new(name: String) -> std::io::Result<CpuStream> {
        let shared = Arc::new(StreamShared {
            queue: Mutex::new(Queue::default()),
            work: Condvar::new(),
            done: Condvar::new(),
            queued: AtomicU64::new(0),
            finished: AtomicU64::new(0),
        });
        let s = shared.clone();
        let worker = std::thread::Builder::new().name(name).spawn(move || s.run())?;
        let worker_id = worker.thread().id();
        Ok(CpuStream { shared, worker: Mutex::new(Some(worker)), worker_id })
    }

    /// Queue `task` behind everything queued before it.
    pub fn push(&self, task: HostTask) {
        let s = &*self.shared;
        let mut q = lock(&s.queue);
        if q.closing {
            // Queued while the stream is being freed (a race the caller lost): the worker may
            // be gone, so the task runs here rather than never.
            drop(q);
            task();
            return;
        }
        q.tasks.push_back(task);
        s.queued.fetch_add(1, Ordering::AcqRel);
        if q.worker_sleeping {
            s.work.notify_one();
        }
    }

    /// Whether everything queued so far has run.
    pub fn is_idle(&self) -> bool {
        self.shared.finished.load(Ordering::Acquire) >= self.shared.queued.load(Ordering::Acquire)
    }

    /// Block until everything queued before this call has run. From the stream's own worker
    /// (a task synchronizing its stream) it returns at once: the tasks before it are done.
    pub fn synchronize(&self) {
        if std::thread::current().id() == self.worker_id {
            return;
        }
        let s = &*self.shared;
        let target = s.queued.load(Ordering::Acquire);
        let reached = || s.finished.load(Ordering::Acquire) >= target;
        if poll_until(reached) {
            return;
        }
        let mut q = lock(&s.queue);
        q.sleeping_syncs += 1;
        q = s.done.wait_while(q, |_| !reached()).unwrap_or_else(|e| e.into_inner());
        q.sleeping_syncs -= 1;
    }

    /// Run what is queued, then stop the worker. From the worker itself (a task freeing its
    /// own stream), the worker is left to finish the queue and exit on its own.
    pub fn shut_down(&self) {
        lock(&self.shared.queue).closing = true;
        self.shared.work.notify_all();
        if std::thread::current().id() == self.worker_id {
            return;
        }
        if let Some(w) = lock(&self.worker).take() {
            let _ = w.join();
        }
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
            let mut st = lock(&self.state);
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
        let mut st = lock(&self.state);
        st.reached = st.reached.max(target);
        drop(st);
        self.reached.notify_all();
    }

    /// The recording a wait made now refers to, or None if it is reached already.
    fn pending_target(&self) -> Option<u64> {
        let st = lock(&self.state);
        (st.reached < st.recorded).then_some(st.recorded)
    }

    fn wait_for(&self, target: u64) {
        let reached = || lock(&self.state).reached >= target;
        if poll_until(reached) {
            return;
        }
        let st = lock(&self.state);
        drop(self.reached.wait_while(st, |st| st.reached < target).unwrap_or_else(|e| e.into_inner()));
    }

    /// Make `stream` wait for the latest recording (None: the host waits, as the default
    /// stream is synchronous).
    pub fn wait_on(self: &Arc<Self>, stream: Option<&CpuStream>) {
        let Some(target) = self.pending_target() else { return };
        match stream {
            None => self.wait_for(target),
            Some(s) => {
                let me = self.clone();
                s.push(Box::new(move || me.wait_for(target)));
            }
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
        CpuStream::new("test-stream".into()).unwrap()
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
                log.lock().unwrap().push(i);
            }));
        }
        s.synchronize();
        assert!(s.is_idle());
        assert_eq!(*log.lock().unwrap(), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn a_stream_waits_for_an_event_without_blocking_the_host() {
        let (a, b) = (stream(), stream());
        let ev = Arc::new(CpuEvent::default());
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let g = gate.clone();
        a.push(Box::new(move || {
            let mut open = g.0.lock().unwrap();
            while !*open {
                open = g.1.wait(open).unwrap();
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
        *gate.0.lock().unwrap() = true;
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
                s.push(Box::new(move || v.lock().unwrap().push(round * 4 + k as u64)));
                events[k].record(Some(s));
            }
        }
        events[3].synchronize();
        let got = value.lock().unwrap().clone();
        // Per round the stages are ordered; rounds of one stream are ordered.
        for round in 0..500u64 {
            let pos: Vec<usize> = (0..4).map(|k| got.iter().position(|&x| x == round * 4 + k).unwrap()).collect();
            assert!(pos.windows(2).all(|w| w[0] < w[1]), "round {round}: {pos:?}");
        }
    }
}
