//! How many tasks the default pool gives a launch that asks for all of them (`num_task = 0`)
//! when the machine is busy.
//!
//! On a machine where another process keeps a core busy, a worker is often descheduled when a
//! launch starts. A kernel whose tasks meet at a barrier then waits for it, and a launch on all
//! threads is slower than the same launch on the caller alone. The pacer watches the launches
//! that ran on all threads: a launch is *late* when a worker claimed its task more than
//! [`LATE_NS`] after the launch was published (or not at all, so the caller ran it). When
//! [`LATE_IN_WINDOW`] of [`WINDOW`] such launches are late, the next [`REDUCED`] launches get
//! half the threads (the caller alone on two cores); then it looks again. On an idle machine
//! workers claim within microseconds and nothing changes.
//!
//! Only the process default pool is paced, and only when its size was not set by the user
//! (`TVM_NUM_THREADS`, `OMP_NUM_THREADS`): a size the user chose is kept.

use once_cell::sync::Lazy;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Instant;

/// A worker claiming its task later than this after the launch was published was not running.
pub const LATE_NS: u64 = 20_000;
/// Launches on all threads looked at before deciding.
pub const WINDOW: u32 = 16;
/// Late launches in a window that halve the next [`REDUCED`] launches.
pub const LATE_IN_WINDOW: u32 = 4;
/// Launches run on half the threads before looking again.
pub const REDUCED: u32 = 512;

static EPOCH: Lazy<Instant> = Lazy::new(Instant::now);

/// Nanoseconds since a fixed instant of this process (a claim time workers can publish in an
/// atomic).
pub fn now_ns() -> u64 {
    EPOCH.elapsed().as_nanos() as u64
}

/// The pacing state of one pool. Launches on a pool are serialized, so the counters change
/// under its launch lock; they are atomics only to be shared with `&self`.
pub struct Pacer {
    enabled: AtomicBool,
    reduced_left: AtomicU32,
    seen: AtomicU32,
    late: AtomicU32,
}

impl Pacer {
    pub fn new(enabled: bool) -> Pacer {
        Pacer {
            enabled: AtomicBool::new(enabled),
            reduced_left: AtomicU32::new(0),
            seen: AtomicU32::new(0),
            late: AtomicU32::new(0),
        }
    }

    /// Tasks for a launch asking for all of the pool's `threads`; only a launch given all of
    /// them is to be [`record`](Pacer::record)ed.
    pub fn tasks(&self, threads: usize) -> usize {
        if !self.watching() || self.reduced_left.load(Ordering::Relaxed) == 0 {
            return threads;
        }
        self.reduced_left.fetch_sub(1, Ordering::Relaxed);
        (threads / 2).max(1)
    }

    /// Whether launches asking for all threads are watched.
    pub fn watching(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    pub fn enable(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// A launch that ran on all threads ended; `late`: a worker did not claim its task in time.
    pub fn record(&self, late: bool) {
        let seen = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        let late = self.late.fetch_add(u32::from(late), Ordering::Relaxed) + u32::from(late);
        if late >= LATE_IN_WINDOW {
            self.reduced_left.store(REDUCED, Ordering::Relaxed);
        }
        if late >= LATE_IN_WINDOW || seen >= WINDOW {
            self.seen.store(0, Ordering::Relaxed);
            self.late.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_launches_halve_the_next_ones_then_it_looks_again() {
        let p = Pacer::new(true);
        for _ in 0..WINDOW {
            p.record(false);
        }
        assert_eq!(p.tasks(2), 2, "no late launch: all threads");
        for i in 0..LATE_IN_WINDOW {
            assert_eq!(p.tasks(2), 2, "late launch {i}: not yet");
            p.record(true);
        }
        for _ in 0..REDUCED / 2 {
            assert_eq!(p.tasks(2), 1);
            assert_eq!(p.tasks(16), 8);
        }
        assert_eq!(p.tasks(2), 2, "after REDUCED launches it looks again");
        let off = Pacer::new(false);
        off.record(true);
        off.record(true);
        off.record(true);
        off.record(true);
        assert_eq!(off.tasks(4), 4, "a pool the user sized is not paced");
    }

    #[test]
    fn a_few_late_launches_per_window_change_nothing() {
        let p = Pacer::new(true);
        for round in 0..10 {
            for i in 0..WINDOW {
                p.record(i < LATE_IN_WINDOW - 1);
            }
            assert_eq!(p.tasks(2), 2, "round {round}");
        }
    }
}
