//! Looking inside a run: per-op timings (a table or a Chrome trace) and the op schedule as
//! Graphviz dot. The text each call returns is owned by the executor.

use super::handle::{handle, TVMGraphExecutor};
use crate::ffi::ptr::out_param;
use crate::graph::profile::{chrome_trace, profile_table};
use crate::graph::Executor;
use crate::runtime::base::error::Error;
use std::ffi::{c_char, c_int, CString};

/// Run once timing every op. `format` 0 gives a text table, 1 a Chrome trace (JSON for
/// chrome://tracing or Perfetto). `*out` is owned by the executor until its next profile call.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or writable; the text must not be used after the next profile call on `g` or its free.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorProfile(
    g: *mut TVMGraphExecutor,
    format: c_int,
    out: *mut *const c_char,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorProfile", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        let timings = g.front.run_profiled()?;
        let text = match format {
            0 => profile_table(&timings),
            1 => chrome_trace(&timings),
            f => return Err(Error::value(format!("profile format {f} is unknown (0: table, 1: Chrome trace)"))),
        };
        let mut slot = g.text.lock();
        *slot = CString::new(text).map_err(|_| Error::internal("profile text contains NUL"))?;
        *out = slot.as_ptr();
        Ok(0)
    })
}

/// The executor's op schedule as Graphviz dot (`dot -Tsvg`): ops grouped by level (ops of one
/// level are independent), data edges solid, storage-reuse hazards dashed red, the critical path
/// bold. `*out` is owned by the executor until its next profile or schedule call.
///
/// # Safety
/// `out` must be NULL (an error) or valid for writing one pointer; `g` is only looked up among
/// live executors (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorScheduleDot(g: *mut TVMGraphExecutor, out: *mut *const c_char) -> c_int {
    ffi_boundary!("TVMGraphExecutorScheduleDot", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        let plan = g.front.plain("TVMGraphExecutorScheduleDot")?.lock_as::<Executor>()?.plan().clone();
        let dot = plan.schedule_dot();
        let mut slot = g.text.lock();
        *slot = CString::new(dot).map_err(|_| Error::internal("schedule text contains NUL"))?;
        *out = slot.as_ptr();
        Ok(0)
    })
}
