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

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Leaves a level when dropped (also on an error or a panic).
struct Level;

impl Drop for Level {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// Run `f`, one level of a walk named `what`, one level deeper than the level calling it.
pub fn nested<R>(what: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let depth = DEPTH.with(|d| {
        d.set(d.get() + 1);
        d.get()
    });
    let _level = Level;
    if depth > MAX_NESTING {
        return Err(Error::value(format!("{what}: the value is nested deeper than {MAX_NESTING} levels")));
    }
    if grows_stacks() {
        stacker::maybe_grow(RED_ZONE, SEGMENT, f)
    } else {
        f()
    }
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
        DEPTH.with(|d| assert_eq!(d.get(), 0, "every level left"));
    }
}
