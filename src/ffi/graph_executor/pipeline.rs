//! The request-pipeline C API (`TVMPipeline*`): requests submitted from any thread flow
//! h2d → compute → d2h over several core groups, sharing one copy of the model's weights.
//!
//! Ownership and threading: a pipeline is created by `TVMPipelineCreate` and owned by the caller
//! until `TVMPipelineFree`. Every call may come from any thread. A submitted request borrows its
//! input and output tensors' data until it is done (waited for, or its callback called); the
//! `DLTensor` structs themselves are copied at submit.

use crate::abi::{DLDevice, DLTensor};
use crate::ffi::graph_executor::device_list;
use crate::ffi::ptr::{out_param, slice, slice_mut, NonNullFn};
use crate::graph::factory::GraphExecutorFactory;
use crate::graph::options::{MemoryPlan, PipelineOptions};
use crate::graph::pipeline::{Completion, Pipeline};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::dlpack::tensor_ref::TensorRef;
use crate::runtime::object::handles::HandleTable;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CString};
use std::mem::MaybeUninit;
use std::sync::Arc;

/// A pipeline handle (opaque to C).
pub struct TVMPipeline {
    pipeline: Pipeline,
}

thread_local! {
    /// The text `TVMPipelineGetTrace` last returned on this thread: per thread, so that no other
    /// thread's call can free it while its caller reads it.
    static TRACE_TEXT: RefCell<CString> = RefCell::default();
}

/// Called once when a request submitted with `TVMPipelineSubmitWithCallback` is done:
/// `status` 0, or -1 with `error` (valid during the call) naming what failed. It runs on a
/// pipeline thread and must not wait on, or free, the pipeline that calls it.
pub type TVMPipelineCallback =
    Option<unsafe extern "C" fn(request: u64, status: c_int, error: *const c_char, user_data: *mut c_void)>;

/// TVM's module handle (`c_runtime_api.h` declares it; named here so the header shows it).
pub type TVMModuleHandle = *mut c_void;

static LIVE: HandleTable<TVMPipeline> = HandleTable::new();

fn handle(p: *const TVMPipeline) -> Result<Arc<TVMPipeline>> {
    if p.is_null() {
        return Err(Error::value("pipeline handle `p` is NULL"));
    }
    LIVE.get(p).ok_or_else(|| {
        Error::value(format!("pipeline {p:p} is not live (freed already, or not created by this runtime)"))
    })
}

/// Create a pipeline over the model in `factory` (what `TVMModLoadFromFile` returns for an
/// `export_library` file). `options`: NULL or `"key=value,..."`: `core_groups` (default: one per
/// core the process may use), `threads_per_group` (threads of each group's pool for kernels'
/// parallel loops; default: the cores divided among the groups), `in_flight` (requests processed
/// at once, each with its own activations; default 2 per group; more are queued), `cpus` (each
/// group's CPUs, groups separated by `;`, e.g. `0-7;8-15` or `0-3+8-11;4-7+12-15`; default: the
/// process's CPUs split evenly when they suffice, else unpinned), `trace` (`1`: record a Chrome
/// trace, see `TVMPipelineGetTrace`). Unknown keys and bad values are errors naming the key.
///
/// # Safety
/// `factory` must be NULL (an error) or a live object handle of this runtime; `devices` must point
/// to `num_devices` devices; `options` must be NULL or a NUL-terminated string; `out` must be
/// NULL (an error) or valid for writing one handle.
#[no_mangle]
pub unsafe extern "C" fn TVMPipelineCreate(
    factory: TVMModuleHandle,
    devices: *const DLDevice,
    num_devices: u32,
    options: *const c_char,
    out: *mut *mut TVMPipeline,
) -> c_int {
    ffi_boundary!("TVMPipelineCreate", {
        // SAFETY: C arguments per the contract above.
        let out = unsafe { out_param(out, "out")? };
        let m = unsafe { crate::ffi::legacy::module::module_arg(factory, "factory")? };
        let devices = unsafe { device_list(devices, num_devices)? };
        let text = unsafe { crate::ffi::options_arg(options)? };
        let options = PipelineOptions::parse(text).map_err(|e| e.context("pipeline options"))?;
        let plan = GraphExecutorFactory::of(&m)?.plan_with(&m, devices, MemoryPlan::Tvm)?;
        let p = Arc::new(TVMPipeline { pipeline: Pipeline::new(plan, &options)? });
        *out = LIVE.insert(p);
        Ok(0)
    })
}

/// The tensors of a submit call as borrowed references.
///
/// # Safety
/// `inputs` / `outputs` must point to `num_inputs` / `num_outputs` valid `DLTensor`s (NULL
/// allowed for 0) that stay valid for `'a`.
unsafe fn request_tensors<'a>(
    inputs: *const DLTensor,
    num_inputs: u32,
    outputs: *const DLTensor,
    num_outputs: u32,
) -> Result<(Vec<TensorRef<'a>>, Vec<TensorRef<'a>>)> {
    // SAFETY: forwarded contract.
    let (ins, outs) =
        unsafe { (slice(inputs, num_inputs as usize, "inputs")?, slice(outputs, num_outputs as usize, "outputs")?) };
    let refs = |ts: &'a [DLTensor], what: &str| -> Result<Vec<TensorRef<'a>>> {
        // SAFETY: each element is a valid DLTensor (forwarded contract).
        ts.iter().enumerate().map(|(i, t)| unsafe { TensorRef::from_ptr(t, &format!("{what}[{i}]")) }).collect()
    };
    Ok((refs(ins, "inputs")?, refs(outs, "outputs")?))
}

/// Queue a request and return at once with its id in `out_request`. `inputs`: one tensor per
/// graph input that is not a weight, in input-index order; `outputs`: caller-owned tensors of the
/// output shapes, one per output. Wait for it with `TVMPipelineWait`.
///
/// # Safety
/// `inputs` / `outputs` must point to `num_inputs` / `num_outputs` valid `DLTensor`s whose data
/// stays valid (the outputs' unread and unwritten by others) until the request is waited for;
/// `out_request` must be NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMPipelineSubmit(
    p: *mut TVMPipeline,
    inputs: *const DLTensor,
    num_inputs: u32,
    outputs: *mut DLTensor,
    num_outputs: u32,
    out_request: *mut u64,
) -> c_int {
    ffi_boundary!("TVMPipelineSubmit", {
        // SAFETY: C arguments per the contract above.
        let out_request = unsafe { out_param(out_request, "out_request")? };
        let p = handle(p)?;
        let (ins, outs) = unsafe { request_tensors(inputs, num_inputs, outputs, num_outputs)? };
        // SAFETY: the data stays valid until the request is done (C contract).
        *out_request = unsafe { p.pipeline.submit(&ins, &outs, None)? };
        Ok(0)
    })
}

/// A request's C completion callback and its user data, called once from a pipeline thread
/// (the C form of [`Completion`]).
struct CompletionCallback {
    f: NonNullFn<TVMPipelineCallback>,
    user_data: *mut c_void,
}

// SAFETY: the submitter hands `user_data` to the callback it registers knowing the callback runs
// on a pipeline thread (documented at `TVMPipelineSubmitWithCallback`).
unsafe impl Send for CompletionCallback {}

impl CompletionCallback {
    fn call(self, id: u64, result: Result<()>) {
        let (status, message) = match result {
            Ok(()) => (0, CString::default()),
            Err(e) => (-1, CString::new(e.message().replace('\0', "")).unwrap_or_default()),
        };
        // SAFETY: the callback follows `TVMPipelineCallback`'s contract; `message` outlives it.
        unsafe { (self.f)(id, status, message.as_ptr(), self.user_data) };
    }
}

/// As `TVMPipelineSubmit`, but the request reports through `callback(request, status, error,
/// user_data)`, called once on a pipeline thread when it is done (then its tensors are free);
/// such a request cannot be waited for.
///
/// # Safety
/// As `TVMPipelineSubmit`, with "until the callback is called"; `callback` must be non-NULL (NULL
/// is an error) and follow `TVMPipelineCallback`'s contract; `user_data` must be usable from the
/// pipeline's threads.
#[no_mangle]
pub unsafe extern "C" fn TVMPipelineSubmitWithCallback(
    p: *mut TVMPipeline,
    inputs: *const DLTensor,
    num_inputs: u32,
    outputs: *mut DLTensor,
    num_outputs: u32,
    callback: TVMPipelineCallback,
    user_data: *mut c_void,
    out_request: *mut u64,
) -> c_int {
    ffi_boundary!("TVMPipelineSubmitWithCallback", {
        // SAFETY: C arguments per the contract above.
        let out_request = unsafe { out_param(out_request, "out_request")? };
        let f = callback.ok_or_else(|| Error::value("`callback` is NULL"))?;
        let p = handle(p)?;
        let (ins, outs) = unsafe { request_tensors(inputs, num_inputs, outputs, num_outputs)? };
        let cb = CompletionCallback { f, user_data };
        let on_done: Completion = Box::new(move |id, result| cb.call(id, result));
        // SAFETY: the data stays valid until the callback is called (C contract).
        *out_request = unsafe { p.pipeline.submit(&ins, &outs, Some(on_done))? };
        Ok(0)
    })
}

/// Block until `request` is done: 0, or -1 with that request's own error (e.g. the failing
/// kernel and its node). Each request is waited for once; an unknown id is an error.
///
/// # Safety
/// None: `p` is only looked up among live pipelines (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMPipelineWait(p: *mut TVMPipeline, request: u64) -> c_int {
    ffi_boundary!("TVMPipelineWait", {
        handle(p)?.pipeline.wait(request)?;
        Ok(0)
    })
}

/// The pipeline's Chrome trace as C text (`p` looked up among live pipelines).
fn trace_text(p: *mut TVMPipeline) -> Result<CString> {
    CString::new(handle(p)?.pipeline.chrome_trace()?).map_err(|_| Error::internal("trace holds a NUL"))
}

/// The Chrome trace (`chrome://tracing`, Perfetto) of the requests so far, one lane per stream
/// of each core group, as JSON in `out_json`. The pipeline must have been created with `trace=1`.
/// The text is owned by the runtime and kept per calling thread: it stays valid until this
/// thread's next `TVMPipelineGetTrace` (on any pipeline); other threads' calls and freeing the
/// pipeline leave it alone. `TVMPipelineGetTraceInto` copies it into the caller's buffer instead.
///
/// # Safety
/// `out_json` must be NULL (an error) or writable; `p` is looked up among live pipelines.
#[no_mangle]
pub unsafe extern "C" fn TVMPipelineGetTrace(p: *mut TVMPipeline, out_json: *mut *const c_char) -> c_int {
    ffi_boundary!("TVMPipelineGetTrace", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out_json = unsafe { out_param(out_json, "out_json")? };
        let json = trace_text(p)?;
        *out_json = TRACE_TEXT.with(|text| {
            *text.borrow_mut() = json;
            text.borrow().as_ptr()
        });
        Ok(0)
    })
}

/// The Chrome trace of `TVMPipelineGetTrace`, copied into the caller's `buf` of `capacity`
/// bytes. `*out_size` is always set to the size the text needs, its terminating NUL included.
/// When `capacity >= *out_size` the whole text and its NUL are copied; otherwise only its first
/// `capacity` bytes are (no NUL: a cut trace is not JSON), and the caller calls again with a
/// buffer of `*out_size` bytes (or more: the trace grows as requests are done). `buf` may be
/// NULL when `capacity` is 0, to ask for the size alone.
///
/// # Safety
/// `buf` must be NULL with `capacity` 0, or valid for writing `capacity` bytes; `out_size` must
/// be NULL (an error) or writable; `p` is looked up among live pipelines.
#[no_mangle]
pub unsafe extern "C" fn TVMPipelineGetTraceInto(
    p: *mut TVMPipeline,
    buf: *mut c_char,
    capacity: usize,
    out_size: *mut usize,
) -> c_int {
    ffi_boundary!("TVMPipelineGetTraceInto", {
        // SAFETY: C arguments per the contract above.
        let out_size = unsafe { out_param(out_size, "out_size")? };
        let buf = unsafe { slice_mut(buf.cast::<MaybeUninit<u8>>(), capacity, "buf")? };
        let json = trace_text(p)?;
        let bytes = json.as_bytes_with_nul();
        buf.iter_mut().zip(bytes).for_each(|(b, &c)| _ = b.write(c));
        *out_size = bytes.len();
        Ok(0)
    })
}

/// Finish the requests being processed, cancel the queued ones (their waits and callbacks
/// report "cancelled"), then free everything. NULL is a no-op.
///
/// # Safety
/// None: `p` is only looked up among live pipelines (a bad handle is an error). It must not be
/// called from a request's callback.
#[no_mangle]
pub unsafe extern "C" fn TVMPipelineFree(p: *mut TVMPipeline) -> c_int {
    ffi_boundary!("TVMPipelineFree", {
        if p.is_null() {
            return Ok(0);
        }
        let removed = LIVE.remove(p);
        let pipeline = removed.ok_or_else(|| Error::value(format!("pipeline {p:p} is not live (freed twice?)")))?;
        // Drains now; waits still blocked on other threads hold their own reference.
        pipeline.pipeline.shut_down();
        Ok(0)
    })
}
