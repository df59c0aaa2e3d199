//! Per-thread pools of CPU workspaces for `TVMBackendAllocWorkspace` / `TVMBackendFreeWorkspace`.
//!
//! Each thread caches the blocks its kernels free, so the common alloc/free pair of a kernel
//! allocates nothing; the fast paths are `#[inline]` for the C entry points.

use crate::runtime::base::error::{Error, Result};
use std::cell::UnsafeCell;
use std::ffi::c_void;

/// Per-thread cache of CPU workspaces: blocks are reused (no allocation on the hot path) and
/// freed when the thread exits. Frees are LIFO-fast but may come in any order.
struct WorkspacePool {
    free: Vec<(usize, *mut c_void)>,
    used: Vec<(*mut c_void, usize)>,
}

impl Drop for WorkspacePool {
    fn drop(&mut self) {
        for (_, p) in self.free.drain(..) {
            // SAFETY: blocks came from posix_memalign.
            unsafe { libc::free(p) };
        }
        for (p, _) in self.used.drain(..) {
            // SAFETY: as above (never freed by the kernel that took it).
            unsafe { libc::free(p) };
        }
    }
}

thread_local! {
    // UnsafeCell, not RefCell: the pool is only touched inside the functions below, which call
    // no user code, so no second borrow can exist; this keeps the hot path to a few loads.
    static WORKSPACES: UnsafeCell<WorkspacePool> =
        const { UnsafeCell::new(WorkspacePool { free: Vec::new(), used: Vec::new() }) };
}

const PAGE: usize = 4096;

/// Run `f` on this thread's pool; `None` once the thread's locals are being torn down (a kernel
/// called from a thread-exit destructor), where panicking would abort the process.
fn with_pool<R>(f: impl FnOnce(&mut WorkspacePool) -> R) -> Option<R> {
    // SAFETY: thread-local; no reference outlives the call and `f` does not re-enter (see above).
    WORKSPACES.try_with(|w| f(unsafe { &mut *w.get() })).ok()
}

fn thread_exiting() -> Error {
    Error::runtime("workspace: this thread is exiting (its workspace pool is already gone)")
}

/// `nbytes` rounded up to whole pages (at least one); `None` when that overflows.
#[inline]
fn block_size(nbytes: usize) -> Option<usize> {
    nbytes.max(1).checked_next_multiple_of(PAGE)
}

/// The common case, kept inline: the most recently freed block fits and the bookkeeping
/// vectors have room, so nothing is allocated.
#[inline]
pub fn alloc_workspace_fast(nbytes: usize) -> Option<*mut c_void> {
    let size = block_size(nbytes)?;
    with_pool(|w| match w.free.last() {
        Some(&(s, p)) if s >= size && w.used.len() < w.used.capacity() => {
            w.free.pop();
            w.used.push((p, s));
            Some(p)
        }
        _ => None,
    })
    .flatten()
}

/// The common case of a free: the block allocated last, with room to cache it.
#[inline]
pub fn free_workspace_fast(ptr: *mut c_void) -> bool {
    with_pool(|w| match w.used.last() {
        Some(&(p, s)) if p == ptr && w.free.len() < w.free.capacity() => {
            w.used.pop();
            w.free.push((s, p));
            true
        }
        _ => false,
    })
    .unwrap_or(false)
}

/// A 64-byte aligned block of at least `nbytes` from this thread's pool.
pub fn alloc_workspace(nbytes: usize) -> Result<*mut c_void> {
    if let Some(p) = alloc_workspace_fast(nbytes) {
        return Ok(p);
    }
    let size = block_size(nbytes).ok_or_else(|| Error::value(format!("workspace of {nbytes} bytes is too large")))?;
    with_pool(|w| {
        // Smallest cached block that fits.
        let pick =
            w.free.iter().enumerate().filter(|(_, (s, _))| *s >= size).min_by_key(|(_, (s, _))| *s).map(|(i, _)| i);
        let (s, p) = match pick {
            Some(i) => w.free.swap_remove(i),
            None => {
                let mut p: *mut c_void = std::ptr::null_mut();
                // SAFETY: valid out-pointer, power-of-two alignment ≥ sizeof(void*).
                if unsafe { libc::posix_memalign(&mut p, 64, size) } != 0 || p.is_null() {
                    return Err(Error::internal(format!("out of memory: workspace of {nbytes} bytes")));
                }
                (size, p)
            }
        };
        w.used.push((p, s));
        // Room for the fast paths of the next free and alloc.
        w.free.reserve(1);
        Ok(p)
    })
    .unwrap_or_else(|| Err(thread_exiting()))
}

/// Return a block to this thread's pool; a pointer this thread did not allocate is an error.
pub fn free_workspace(ptr: *mut c_void) -> Result<()> {
    if free_workspace_fast(ptr) {
        return Ok(());
    }
    with_pool(|w| {
        let i = w.used.iter().rposition(|&(p, _)| p == ptr).ok_or_else(|| {
            Error::value(format!("TVMBackendFreeWorkspace: {ptr:p} was not allocated as a workspace by this thread"))
        })?;
        let (p, s) = w.used.remove(i);
        w.free.push((s, p));
        w.used.reserve(1);
        Ok(())
    })
    .unwrap_or_else(|| Err(thread_exiting()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspaces_reuse_and_check_owner() {
        let a = alloc_workspace(1 << 20).unwrap();
        assert_eq!(a as usize % 64, 0);
        free_workspace(a).unwrap();
        let b = alloc_workspace(1000).unwrap();
        assert_eq!(a, b, "a cached block is reused");
        let c = alloc_workspace(10).unwrap();
        free_workspace(b).unwrap(); // out of order
        free_workspace(c).unwrap();
        assert!(free_workspace(c).unwrap_err().message().contains("was not allocated"));
        let addr = a as usize;
        let other = std::thread::spawn(move || free_workspace(addr as *mut c_void).is_err());
        assert!(other.join().unwrap());
    }

    #[test]
    fn sizes_near_the_top_of_the_address_space_fail_cleanly() {
        // A cached block exists, so the fast path is tried first; it must not wrap the size
        // around to one page and hand that block out.
        let a = alloc_workspace(4096).unwrap();
        free_workspace(a).unwrap();
        for n in [usize::MAX, usize::MAX - PAGE + 2] {
            assert_eq!(alloc_workspace_fast(n), None);
            assert!(alloc_workspace(n).unwrap_err().message().contains("too large"), "{n}");
        }
        assert_eq!(alloc_workspace(4096).unwrap(), a, "the cached block is still there");
        free_workspace(a).unwrap();
    }
}
