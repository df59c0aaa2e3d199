//! The graph executor's phases as asynchronous calls (`graph::phases`): copy an input in,
//! run, copy an output out, each queued on a stream of the executor's device
//! (`TVMStreamCreate(dev.device_type, dev.device_id, ...)` for the executor's first device; NULL
//! is the synchronous default stream), and `TVMGraphExecutorSynchronize`.
//!
//! The executor orders its own stages on its buffers across streams, on the device side: a
//! stage waits for the pending stages it conflicts with, so `SetInputAsync(s1); RunAsync(s2);
//! GetOutputAsync(s3)` needs no user events, and a `SetInputAsync` for the next request queued
//! while a run is pending waits on its stream for that run. Users may add their own ordering
//! with `TVMEventRecord` / `TVMStreamWaitEvent`.
//!
//! Every synchronous call on the executor (`TVMGraphExecutorRun`, `...SetInput`, ...) first
//! waits on the host for the stages queued before it. The first error a queued run hits is
//! kept until it is reported, once: by `TVMGraphExecutorSynchronize`, or by the next synchronous
//! call, which then does nothing else. `TVMGraphExecutorFree` waits for the queued stages and
//! drops their errors.

use crate::abi::DLTensor;
use crate::ffi::graph_executor::{handle, TVMGraphExecutor};
use crate::runtime::dlpack::tensor_ref::TensorRef;
use std::ffi::{c_int, c_void};

/// h2d: copy `data` into input `index` on `stream` (NULL: now). Streams here are NULL or made
/// by `TVMStreamCreate` for the executor's (first) device. Dtype and shape are checked here; the copy waits on `stream` for the queued stages that still use the input (a pending
/// run reading it, an earlier copy into it). The first queued copy into a weight shared with
/// other executors of the factory waits on the host for the queued stages, once, to give this
/// executor its own copy.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error); `stream` is checked by
/// the device API. `data` must be NULL (an error) or a valid `DLTensor` during the call, and its
/// data must stay valid, and unwritten by others, until `stream` has run the copy (synchronize
/// the stream, an event recorded on it afterwards, or the executor).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorSetInputAsync(
    g: *mut TVMGraphExecutor,
    index: i32,
    data: *const DLTensor,
    stream: *mut c_void,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorSetInputAsync", {
        // SAFETY: the tensor is valid for the call (caller contract).
        let data = unsafe { TensorRef::from_ptr(data, "data")? };
        // SAFETY: its data stays valid until the stream ran the copy (caller contract).
        unsafe {
            handle(g)?.front.plain("TVMGraphExecutorSetInputAsync")?.set_input_async(index.into(), data, stream)?
        };
        Ok(0)
    })
}

/// compute: run the graph on `stream` (NULL: now, on the caller, returning the run's error), as
/// `TVMGraphExecutorRun` does, after the queued copies into its inputs and the queued stages
/// still using its outputs. The error of a queued run is returned by
/// `TVMGraphExecutorSynchronize` (or the next synchronous call) and names the failing node.
///
/// # Safety
/// None: `g` is only looked up among live executors (a bad handle is an error); `stream` is
/// checked by the device API.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorRunAsync(g: *mut TVMGraphExecutor, stream: *mut c_void) -> c_int {
    ffi_boundary!("TVMGraphExecutorRunAsync", {
        handle(g)?.front.plain("TVMGraphExecutorRunAsync")?.run_async(stream)?;
        Ok(0)
    })
}

/// d2h: copy output `index` into `out` on `stream` (NULL: now), after the queued run that
/// writes it. Dtype and shape are checked here.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error); `stream` is checked by
/// the device API. `out` must be NULL (an error) or a valid `DLTensor` during the call, and its
/// data must stay valid, and unread and unwritten by others, until `stream` has run the copy.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetOutputAsync(
    g: *mut TVMGraphExecutor,
    index: i32,
    out: *mut DLTensor,
    stream: *mut c_void,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetOutputAsync", {
        // SAFETY: the tensor is valid for the call (caller contract).
        let out = unsafe { TensorRef::from_ptr(out, "out")? };
        // SAFETY: its data stays valid until the stream ran the copy (caller contract).
        unsafe {
            handle(g)?.front.plain("TVMGraphExecutorGetOutputAsync")?.get_output_async(index.into(), out, stream)?
        };
        Ok(0)
    })
}

/// Wait for everything queued by the asynchronous calls; returns the first error a queued stage
/// hit (e.g. a failing kernel, naming its node) since it was last reported, then clears it.
/// Every synchronous call on the executor (`TVMGraphExecutorRun`, `...SetInput`, the info calls)
/// also waits for the queued stages first, and reports such an error the same way (once), doing
/// nothing else then. `TVMGraphExecutorFree` waits for them and drops the error.
///
/// # Safety
/// None: `g` is only looked up among live executors (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorSynchronize(g: *mut TVMGraphExecutor) -> c_int {
    ffi_boundary!("TVMGraphExecutorSynchronize", {
        handle(g)?.front.plain("TVMGraphExecutorSynchronize")?.synchronize()?;
        Ok(0)
    })
}
