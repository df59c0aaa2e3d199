//! Every thread the runtime starts, in one place: spawned fallibly, counted, and stopped and
//! joined when the process exits or the library is unloaded.
//!
//! The runtime's parallel parts (the intra-op pools of `threads/pool.rs`, the stream workers of
//! `device/cpu_stream.rs`) start their threads with [`spawn`] and register how to stop them
//! with [`on_shut_down`]. At exit (or `dlclose`) [`shut_down`] asks each to stop, then joins
//! every worker that finishes within a short grace period: a worker stuck in a task that never
//! returns is left to the process's end rather than hanging it.

use crate::runtime::base::error::{Error, Result};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long shutting down waits for running workers to see the request and return.
const GRACE: Duration = Duration::from_secs(2);

struct Registry {
    /// Workers not joined yet (finished ones are joined on the next spawn).
    handles: Mutex<Vec<JoinHandle<()>>>,
    /// Workers whose body has not returned yet.
    live: Mutex<usize>,
    /// Signalled when a worker's body returns.
    exited: Condvar,
    stoppers: Mutex<Vec<fn()>>,
    stopping: AtomicBool,
}

static REGISTRY: Registry = Registry {
    handles: Mutex::new(Vec::new()),
    live: Mutex::new(0),
    exited: Condvar::new(),
    stoppers: Mutex::new(Vec::new()),
    stopping: AtomicBool::new(false),
};

/// Counts a worker as live until its body returns, even by a panic.
struct LiveToken;

impl Drop for LiveToken {
    fn drop(&mut self) {
        *REGISTRY.live.lock() -= 1;
        REGISTRY.exited.notify_all();
    }
}

/// Start a runtime worker thread named `name` running `body`. A thread the OS refuses is an
/// error naming the worker (never a panic); so is a spawn after shutdown began.
pub fn spawn(name: String, body: impl FnOnce() + Send + 'static) -> Result<()> {
    if REGISTRY.stopping.load(Ordering::Acquire) {
        return Err(Error::runtime(format!("cannot start worker `{name}`: the runtime is shutting down")));
    }
    let mut handles = REGISTRY.handles.lock();
    reap(&mut handles);
    *REGISTRY.live.lock() += 1;
    let token = LiveToken;
    let spawned = std::thread::Builder::new().name(name.clone()).spawn(move || {
        let _token = token;
        body();
    });
    match spawned {
        Ok(h) => {
            handles.push(h);
            Ok(())
        }
        // The closure (with its token) was dropped, so the count is already back.
        Err(e) => Err(Error::runtime(format!("cannot start worker thread `{name}`: {e}"))),
    }
}

/// Join the workers that have finished.
fn reap(handles: &mut Vec<JoinHandle<()>>) {
    let (done, running): (Vec<_>, Vec<_>) = handles.drain(..).partition(|h| h.is_finished());
    *handles = running;
    for h in done {
        let _ = h.join();
    }
}

/// Register `stop`, called once by [`shut_down`] to make a kind of worker return.
pub fn on_shut_down(stop: fn()) {
    let mut s = REGISTRY.stoppers.lock();
    if !s.contains(&stop) {
        s.push(stop);
    }
}

/// Stop every worker: later spawns fail, each registered stopper runs, and the workers that
/// return within the grace period are joined. Idempotent.
pub fn shut_down() {
    if REGISTRY.stopping.swap(true, Ordering::AcqRel) {
        return;
    }
    let stoppers = std::mem::take(&mut *REGISTRY.stoppers.lock());
    for stop in stoppers {
        stop();
    }
    let deadline = Instant::now() + GRACE;
    let mut live = REGISTRY.live.lock();
    while *live > 0 && !REGISTRY.exited.wait_until(&mut live, deadline).timed_out() {}
    let all_returned = *live == 0;
    drop(live);
    let mut handles = REGISTRY.handles.lock();
    if all_returned {
        // Every body has returned: each thread is past our code or about to be; join them all.
        handles.drain(..).for_each(|h| drop(h.join()));
    } else {
        reap(&mut handles);
    }
}

/// Runs at process exit and at `dlclose` of the library: no worker outlives the code it runs.
extern "C" fn shut_down_at_unload() {
    shut_down();
}

#[used]
#[cfg_attr(target_os = "linux", link_section = ".fini_array")]
static SHUT_DOWN_AT_UNLOAD: extern "C" fn() = shut_down_at_unload;
