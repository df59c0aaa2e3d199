//! Walks of values that came from outside (JSON object graphs, structural equality and hashing,
//! repr, deep copy, serialization) recurse as deep as the value is nested. [`nested`] runs each
//! level: on a stack grown on the heap when the thread's own runs low (so that depth is never a
//! stack overflow), and up to [`MAX_NESTING`] levels, past which the walk fails with an error (a
//! value that deep is a cycle the walk could not tell, or an attack).
//!
//! Under ThreadSanitizer, which cannot follow a switch to another stack, stacks are not grown
//! ([`grows_stacks`]): a sanitizer build walks as deep as the thread's own stack allows.

use super::error::{Error, Result};
use std::cell::Cell;

/// The deepest a walk may go.
pub const MAX_NESTING: usize = 1 << 17;

/// Stack left below which a level runs on a new segment.
const RED_ZONE: usize = 128 * 1024;
/// The size of each segment grown.
const SEGMENT: usize = 4 * 1024 * 1024;

/// A thread's walk state: how deep it is, and the stack address above which a level runs on
/// the stack it is on (stack left there >= [`RED_ZONE`]; `usize::MAX` until a walk learned it).
#[derive(Clone, Copy)]
struct Walk {
    depth: usize,
    floor: usize,
}

thread_local! {
    static WALK: Cell<Walk> = const { Cell::new(Walk { depth: 0, floor: usize::MAX }) };
}

/// Leaves a level when dropped (also on an error or a panic).
struct Level<'a>(&'a Cell<Walk>);

impl Drop for Level<'_> {
    fn drop(&mut self) {
        let w = self.0.get();
        self.0.set(Walk { depth: w.depth - 1, ..w });
    }
}

/// Puts back the floor of the stack a level left (also on an error or a panic).
struct Floor<'a>(&'a Cell<Walk>, usize);

impl Drop for Floor<'_> {
    fn drop(&mut self) {
        self.0.set(Walk { floor: self.1, ..self.0.get() });
    }
}

/// About where the stack is now.
#[inline(always)]
fn stack_address() -> usize {
    let here = 0u8;
    std::hint::black_box(&here) as *const u8 as usize
}

/// Run `f`, one level of a walk named `what`, one level deeper than the level calling it.
/// A level well above the stack's floor runs at once (one thread-local access); one near it
/// asks `stacker`, which runs it on a new segment when little is left.
#[inline]
pub fn nested<R>(what: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    // SAFETY: this thread's own cell, alive as long as the thread (this call runs on it).
    let walk = unsafe { &*WALK.with(|w| w as *const Cell<Walk>) };
    let w = walk.get();
    walk.set(Walk { depth: w.depth + 1, ..w });
    let _level = Level(walk);
    if w.depth >= MAX_NESTING {
        return Err(Error::value(format!("{what}: the value is nested deeper than {MAX_NESTING} levels")));
    }
    if stack_address() > w.floor {
        return f();
    }
    near_floor(walk, f)
}

#[cold]
fn near_floor<R>(walk: &Cell<Walk>, f: impl FnOnce() -> Result<R>) -> Result<R> {
    if !grows_stacks() {
        return f();
    }
    stacker::maybe_grow(RED_ZONE, SEGMENT, || {
        // On the stack `f` runs on (maybe a new segment): its floor, for the levels below.
        let _put_back = Floor(walk, walk.get().floor);
        if let Some(left) = stacker::remaining_stack() {
            walk.set(Walk { floor: stack_address() - left + RED_ZONE, ..walk.get() });
        }
        f()
    })
}

/// Whether [`nested`] grows stacks: not in a ThreadSanitizer build of this library, nor in a
/// process running ThreadSanitizer (found by its runtime's entry point).
pub fn grows_stacks() -> bool {
    if cfg!(tvm_runtime_tsan) {
        return false;
    }
    static GROWS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // SAFETY: a lookup in the global scope by a NUL-terminated name.
    *GROWS.get_or_init(|| unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__tsan_init".as_ptr()) }.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down(n: usize) -> Result<usize> {
        if n == 0 {
            return Ok(0);
        }
        // A frame of some size, as a walker's is.
        let pad = std::hint::black_box([n as u8; 512]);
        nested("test walk", || down(n - 1)).map(|d| d + 1 + std::hint::black_box(&pad).len() - 512)
    }

    #[test]
    fn deep_walks_grow_the_stack_and_too_deep_ones_fail() {
        if !grows_stacks() {
            // ThreadSanitizer: no growing, so nothing deeper than the thread's stack.
            assert_eq!(down(100).unwrap(), 100);
            return;
        }
        // On a thread with a small stack: far deeper than it holds.
        let deep = std::thread::Builder::new().stack_size(256 * 1024).spawn(|| down(100_000)).unwrap();
        assert_eq!(deep.join().unwrap().unwrap(), 100_000);
        let e = down(MAX_NESTING + 1).unwrap_err();
        assert!(e.message().contains("test walk: the value is nested deeper than 131072 levels"), "{e}");
        WALK.with(|w| assert_eq!((w.get().depth, w.get().floor), (0, usize::MAX), "every level left"));
    }
}
